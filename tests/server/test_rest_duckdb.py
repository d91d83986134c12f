"""DuckDB's iceberg extension ATTACHes ``trinitylake serve`` as an Iceberg REST catalog.

The project's DuckDB is 2.x, and the extension wheels on the package registry load only
into duckdb 1.5.5 (NOTES.md, "DuckDB offline"). So DuckDB 1.5.5 with the ``iceberg``,
``avro`` and ``httpfs`` extension wheels lives in ``.venv-duckdb-iceberg`` (installed by
scripts/test), and the client runs in a subprocess with that directory first on its
path, loading the extensions from the wheels' files, offline.

Round trip: DuckDB creates a table and inserts through the server, our SQL sees its rows,
we insert, DuckDB sees ours; DuckDB reads an older version through the warehouse name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import trinitylake_dbapi
from tests.deadlines import HANG_S
from tests.server.conftest import REPO, RestServer

#: A DuckDB client process per test: left to the full run (scripts/test --quick leaves it out).
pytestmark = pytest.mark.slow

OVERLAY = Path(os.environ.get("TL_DUCKDB_ICEBERG", REPO / ".venv-duckdb-iceberg"))

#: The client: argv[1] = URL, argv[2] = token, argv[3] = JSON list of statements; prints
#: a JSON list of each statement's rows (or {"error": message}).
CLIENT = r"""
import glob, json, os, sys
import duckdb
overlay, url, token, statements = sys.argv[1:5]
con = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false",
                             "extension_directory": os.path.join(os.getcwd(), "duckdb-ext")})
for name in ("avro", "httpfs", "iceberg"):
    path = glob.glob(os.path.join(overlay, f"duckdb_extension_{name}", "extensions", "*", f"{name}.duckdb_extension"))[0]
    con.execute(f"INSTALL '{path}'")
    con.execute(f"LOAD {name}")
con.execute("SET enable_progress_bar = false")
con.execute(f"CREATE SECRET lake_token (TYPE iceberg, TOKEN '{token}')")
out = []
for sql in json.loads(statements):
    sql = sql.replace("{url}", url)
    try:
        out.append([list(r) for r in con.execute(sql).fetchall()])
    except Exception as e:
        out.append({"error": f"{type(e).__name__}: {e}"})
print(json.dumps(out, default=str))
"""


def duckdb_client(server: RestServer, cwd: Path, *statements: str) -> list:
    if not (OVERLAY / "duckdb").is_dir():
        pytest.skip(f"DuckDB 1.5.5 with the iceberg extension is not installed in {OVERLAY} (scripts/test installs it)")
    env = dict(os.environ, PYTHONPATH=str(OVERLAY))
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, str(OVERLAY), server.url, server.token or "", json.dumps(statements)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=HANG_S,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_duckdb_attaches_the_server_and_round_trips_rows(rest: RestServer, tmp_path: Path) -> None:
    rest.catalog().create_namespace("duck")
    attach = "ATTACH '' AS lake (TYPE iceberg, ENDPOINT '{url}', SECRET lake_token)"
    created = duckdb_client(
        rest, tmp_path, attach,
        "CREATE TABLE lake.duck.t (id INTEGER, s VARCHAR)",
        "INSERT INTO lake.duck.t VALUES (1, 'duckdb'), (2, 'duckdb')",
        "SELECT id, s FROM lake.duck.t ORDER BY id",
    )
    assert created[-1] == [[1, "duckdb"], [2, "duckdb"]], created
    with trinitylake_dbapi.connect(rest.lake) as conn:
        cur = conn.cursor()
        cur.execute("SELECT id, s FROM duck.t ORDER BY id")
        assert cur.fetchall() == [(1, "duckdb"), (2, "duckdb")]
        cur.execute("INSERT INTO duck.t VALUES (3, 'ours')")
        conn.commit()
    seen = duckdb_client(rest, tmp_path, attach, "SELECT id, s FROM lake.duck.t ORDER BY id")
    assert seen[-1] == [[1, "duckdb"], [2, "duckdb"], [3, "ours"]], seen


def test_duckdb_reads_an_older_version_read_only(rest: RestServer, tmp_path: Path) -> None:
    cat = rest.catalog()
    cat.create_namespace("duckold")
    import pyarrow as pa

    t = cat.create_table("duckold.t", schema=pa.schema([("a", pa.int64())]))
    t.append(pa.table({"a": [1]}))
    before = int(rest.request("GET", "/v1/namespaces/duckold").headers["TrinityLake-Version"])
    t.append(pa.table({"a": [2]}))
    out = duckdb_client(
        rest, tmp_path,
        f"ATTACH '{before}' AS old (TYPE iceberg, ENDPOINT '{{url}}', SECRET lake_token)",
        "SELECT a FROM old.duckold.t ORDER BY a",
        "INSERT INTO old.duckold.t VALUES (9)",
    )
    assert out[1] == [[1]], out
    assert "error" in out[2] and "read-only" in out[2]["error"], out
    assert sorted(cat.load_table("duckold.t").scan().to_arrow().column("a").to_pylist()) == [1, 2]
