"""What a new process imports (issue 21, cold start): catalog statements never import
the data path (PyIceberg, DuckDB, pandas), nor fsspec for a local lakehouse; the first
SELECT over table data imports PyIceberg's table model and DuckDB, but not pandas
(PyArrow's ``pyarrow.dataset`` brings it, through PyIceberg's PyArrow FileIO).

The time these imports take is measured in ``bench/coldstart.py``, never here: these
tests only check which modules a fresh interpreter holds after the statements.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

import trinitylake_dbapi as tl

#: Modules whose presence is checked after the statements run.
WATCHED = ("pyiceberg", "duckdb", "pandas", "pyarrow.dataset", "fsspec", "sqlglot.executor",
           "trinitylake_dbapi.sql.query", "trinitylake_dbapi.iceberg")  # fmt: skip


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A local lakehouse with a namespace, an empty table and a table holding rows."""
    location = str(tmp_path_factory.mktemp("cold") / "lake")
    with tl.connect(location, create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE ns")
        cur.execute("CREATE TABLE ns.empty (a BIGINT, b STRING)")
        cur.execute("CREATE TABLE ns.t AS SELECT range AS id, range % 7 AS k FROM range(100)")
    return location


def loaded_after(location: str, statements: list[str]) -> dict:
    """Run ``statements`` in a new interpreter; which WATCHED modules it then holds,
    and the rows of the last statement."""
    code = (
        "import json, sys\n"
        "import trinitylake_dbapi as tl\n"
        f"conn = tl.connect({location!r})\n"
        "cur = conn.cursor()\n"
        f"for sql in {statements!r}:\n"
        "    rows = cur.execute(sql).fetchall()\n"
        f"print(json.dumps({{'loaded': sorted(m for m in {WATCHED!r} if m in sys.modules),\n"
        "                  'rows': [list(map(str, r)) for r in rows]}))\n"
    )
    return last_json_line(code)


def last_json_line(code: str) -> Any:
    """Run ``code`` in a new interpreter on this one's path; the JSON it printed last."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_catalog_statements_import_no_data_path(lake: str) -> None:
    found = loaded_after(lake, ["SHOW NAMESPACES", "SHOW TABLES IN ns", "SHOW VERSIONS LIMIT 3",
                                "DESCRIBE TABLE ns.t"])  # fmt: skip
    assert found["loaded"] == []
    assert [r[0] for r in found["rows"]] == ["id", "k"]


def test_the_first_select_imports_duckdb_and_pyiceberg_but_not_pandas(lake: str) -> None:
    found = loaded_after(lake, ["SELECT k, count(*) FROM ns.t GROUP BY k ORDER BY k"])
    assert found["rows"] == [[str(k), str(len(range(k, 100, 7)))] for k in range(7)]
    assert found["loaded"] == ["duckdb", "pyiceberg", "trinitylake_dbapi.iceberg", "trinitylake_dbapi.sql.query"]


def test_the_durable_file_io_is_named_where_pyiceberg_looks_for_it() -> None:
    """``locations`` names the FileIO class as text (importing it would bring pandas)."""
    from pyiceberg.io import PY_IO_IMPL, load_file_io

    from trinitylake_dbapi.iceberg.io import DurableFileIO
    from trinitylake_dbapi.iceberg.locations import file_io_properties

    assert type(load_file_io(file_io_properties(None))) is DurableFileIO
    assert file_io_properties(None)[PY_IO_IMPL] == f"{DurableFileIO.__module__}.{DurableFileIO.__qualname__}"


def test_planning_reads_manifests_under_the_root_through_the_lakehouse(lake: str) -> None:
    """M5: planning reads a table's manifest list and manifests with the lakehouse's
    storage, whose cache of immutable files serves them again; planning PC1: once
    decoded, a later plan (another filter value) reads neither."""
    from trinitylake_dbapi.iceberg import planning

    with tl.connect(lake) as conn:
        cur = conn.cursor()
        counters = conn.lakehouse.storage.counters
        assert cur.execute("SELECT count(*) FROM ns.t").fetchall() == [(100,)]
        before = (counters.reads, counters.cache_hits)
        assert cur.execute("SELECT count(*) FROM ns.t WHERE k = 3").fetchall() == [(len(range(3, 100, 7)),)]
        assert (counters.reads, counters.cache_hits) == before  # decoded once per process
        planning.clear_cache()
        hits = counters.cache_hits
        assert cur.execute("SELECT count(*) FROM ns.t WHERE k = 4").fetchall() == [(len(range(4, 100, 7)),)]
        assert counters.cache_hits - hits >= 2  # the manifest list and its manifest


def test_the_spark_data_source_loads_without_the_sql_layer() -> None:
    """PySpark imports ``pyspark_trinitylake`` in every planner process it starts (data
    source lookup, read planning, each write): none of them parses SQL, so none pays for
    sqlglot or the connection, nor for maintenance, verification or table data."""
    pytest.importorskip("pyspark", reason="the spark extra (pyspark) is not installed")
    watched = ("sqlglot", "trinitylake_dbapi.connection", "pyiceberg", "duckdb", "trinitylake_dbapi.verify",
               "trinitylake_dbapi.spark.maintenance", "trinitylake_dbapi.spark.tabledata")
    code = (
        "import json, sys\n"
        "import pyspark_trinitylake\n"
        f"print(json.dumps(sorted(m for m in {watched!r} if m in sys.modules)))\n"
    )
    assert last_json_line(code) == []


def test_importing_the_iceberg_package_imports_no_pyiceberg() -> None:
    """``trinitylake_dbapi.iceberg`` names ``TrinityLakeCatalog`` lazily (issue 32 item 13):
    importing the package stays cheap, and the name imports the catalog when asked."""
    code = (
        "import json, sys\n"
        "import trinitylake_dbapi.iceberg as ice\n"
        "before = 'pyiceberg' in sys.modules\n"
        "from trinitylake_dbapi.iceberg import TrinityLakeCatalog\n"
        "print(json.dumps([before, TrinityLakeCatalog.__module__]))\n"
    )
    assert last_json_line(code) == [False, "trinitylake_dbapi.iceberg.catalog"]
