"""SQL cannot reach the host's files or other buckets (issue 31 item 1; rules QX1 and QX2
of trinitylake_dbapi.sql.query; docs/security.md).

Two independent layers, each tested with the other one off:

- QX1, names resolve by scope: a name is a CTE only inside its scope; every other table
  reference is a lakehouse table, a system table or a documented table function, else
  ObjectNotFoundError. Tested through the driver on an engine built *unlocked*
  (``Engine(locked=False)``), which reads any file it is asked to (checked first).
- QX2, the DuckDB engine is locked: the corpus's statements, turned into DuckDB SQL
  *without* QX1's rewriting, go straight to a locked engine, which refuses to read
  anything outside the lakehouse.

The corpus: each shape of statement (CTE scopes in every clause, nested WITH, set
operations, subqueries in SELECT/WHERE/SET/VALUES/ON, CTAS, INSERT ... SELECT, recursive
CTEs) with each forbidden name (a file outside the lakehouse as CSV, TSV, .gz, JSON,
NDJSON or Parquet, quoted with double quotes or backticks; a glob; s3:// and http://
URLs). Every file holds the marker SECRET-, which must never appear in a result or error,
and every error must be a PEP 249 error a user can act on, never InternalError.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlglot

import trinitylake_dbapi as tl
from trinitylake_dbapi import errors
from trinitylake_dbapi.sql.compat import duckdb_dialect
from trinitylake_dbapi.sql.dialect import TrinityLake
from trinitylake_dbapi.sql.query import Engine

#: The errors an escape attempt may end with.
REFUSED = (errors.ObjectNotFoundError, errors.ProgrammingError, errors.NotSupportedError)

#: Statement shapes; {F} is the forbidden name. Each puts a CTE named {F} somewhere the
#: other reference is not in its scope (or has no CTE at all).
SHAPES = {
    "plain": "SELECT * FROM {F}",
    "cte_in_derived_table": "SELECT * FROM default.t, (WITH {F} AS (SELECT 1) SELECT 1) z, {F} f",
    "cte_self_reference": "WITH {F} AS (SELECT * FROM {F}) SELECT * FROM {F}",
    "insert_cte_self_reference": "INSERT INTO default.t WITH {F} AS (SELECT * FROM {F}) SELECT n FROM {F}",
    "insert_select": "INSERT INTO default.t SELECT * FROM {F} WHERE EXISTS (WITH {F} AS (SELECT 1) SELECT 1)",
    "subquery_in_select": "SELECT (SELECT max(n) FROM {F}), (WITH {F} AS (SELECT 1) SELECT 1) FROM default.t",
    "subquery_in_where": (
        "SELECT * FROM default.t WHERE n IN (SELECT n FROM {F}) "
        "AND EXISTS (WITH {F} AS (SELECT 1 AS n) SELECT n FROM {F})"
    ),
    "subquery_in_on": (
        "SELECT * FROM default.t JOIN {F} f ON f.n = t.n "
        "AND EXISTS (WITH {F} AS (SELECT 1) SELECT 1 FROM {F})"
    ),
    "set_operation_branches": (
        "WITH a AS (SELECT 1 AS n) SELECT n FROM a UNION ALL SELECT n FROM {F} "
        "UNION ALL SELECT * FROM (WITH {F} AS (SELECT 2 AS n) SELECT n FROM {F}) s"
    ),
    "cte_of_derived_table_then_union": (
        "SELECT * FROM (WITH {F} AS (SELECT 1 AS n) SELECT n FROM {F}) s UNION ALL SELECT n FROM {F}"
    ),
    "nested_with": "WITH a AS (WITH {F} AS (SELECT 1 AS n) SELECT * FROM {F}) SELECT * FROM a, {F} f",
    "later_cte_not_visible": "WITH a AS (SELECT * FROM {F}), {F} AS (SELECT 1 AS n) SELECT * FROM a",
    "recursive_then_outside": (
        "WITH RECURSIVE r AS (SELECT 1 AS k UNION ALL SELECT k + 1 FROM r WHERE k < 3) SELECT * FROM r, {F} f"
    ),
    "inside_recursive": (
        "WITH RECURSIVE r AS (SELECT 1 AS k UNION ALL SELECT k + 1 FROM r, {F} f WHERE k < 3) SELECT * FROM r"
    ),
    "update_set": (
        "UPDATE default.t SET n = (SELECT max(n) FROM {F}) "
        "WHERE n IN (WITH {F} AS (SELECT 'a' AS n) SELECT n FROM {F})"
    ),
    "delete_where": (
        "DELETE FROM default.t WHERE n IN (SELECT n FROM {F}) "
        "OR n IN (WITH {F} AS (SELECT 'a' AS n) SELECT n FROM {F})"
    ),
    "insert_values": (
        "INSERT INTO default.t VALUES ((WITH {F} AS (SELECT 'x' AS n) SELECT n FROM {F})), "
        "((SELECT max(n) FROM {F}))"
    ),
    "ctas_cte_self_reference": "CREATE TABLE default.c AS WITH {F} AS (SELECT * FROM {F}) SELECT * FROM {F}",
    "ctas_select": "CREATE TABLE default.c AS SELECT * FROM {F} WHERE EXISTS (WITH {F} AS (SELECT 1) SELECT 1)",
    "scalar_subquery_of_derived_table": "SELECT * FROM (SELECT (SELECT max(n) FROM {F}) AS m) s",
}
#: Statements refused whatever the name: UPDATE ... FROM is not supported at all.
REFUSED_SHAPES = {
    "update_from": "UPDATE default.t SET n = f.n FROM {F} f",
}


@dataclass
class Forbidden:
    """Files outside the lakehouse, holding SECRET, and names that reach them."""

    directory: Path

    def names(self) -> dict[str, str]:
        d = self.directory
        return {
            "csv": f'"{d}/secret.csv"',
            "tsv": f'"{d}/secret.tsv"',
            "csv_gz": f'"{d}/secret.csv.gz"',
            "json": f'"{d}/secret.json"',
            "ndjson": f'"{d}/secret.ndjson"',
            "parquet": f'"{d}/secret.parquet"',
            "backticks": f"`{d}/secret.csv`",
            "glob": f'"{d}/*.csv"',
            "s3_url": '"s3://other-bucket/secret.csv"',
            "http_url": '"http://127.0.0.1:1/x.csv"',
        }


def write_secrets(directory: Path) -> Forbidden:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "secret.csv").write_text("n\nSECRET-CSV\n")
    (directory / "secret.tsv").write_text("n\tm\nSECRET-TSV\tx\n")
    with gzip.open(directory / "secret.csv.gz", "wt") as f:
        f.write("n\nSECRET-GZ\n")
    (directory / "secret.json").write_text(json.dumps([{"n": "SECRET-JSON"}]))
    (directory / "secret.ndjson").write_text(json.dumps({"n": "SECRET-NDJSON"}) + "\n")
    pq.write_table(pa.table({"n": ["SECRET-PARQUET"]}), directory / "secret.parquet")
    return Forbidden(directory)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Forbidden]]:
    """A local lakehouse with table default.t (one row 'a'), and secret files beside it."""
    base = tmp_path_factory.mktemp("sandbox")
    root = base / "lake"
    with tl.connect(str(root), create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE default.t (n STRING)")
        cur.execute("INSERT INTO default.t VALUES ('a')")
    yield root, write_secrets(base / "secrets")


def unlocked(conn: tl.Connection) -> tl.Connection:
    """``conn`` with its data engine built unlocked (QX2 off), to test QX1 alone."""
    assert conn._engine is None  # noqa: SLF001 - the test's own switch, before any data statement
    conn._engine = Engine(filesystem=None)  # noqa: SLF001 (unlocked so far)
    return conn


def attempt(cur: Any, sql: str) -> Exception | None:
    """Run ``sql``; the error it raised (None when it ran). Nothing of the marker SECRET- shows."""
    try:
        cur.execute(sql)
        rows = cur.fetchall() if cur.description is not None else []
    except Exception as e:  # noqa: BLE001 - checked by the caller
        assert "SECRET-" not in str(e), str(e)
        return e
    assert "SECRET-" not in repr(rows), rows
    return None


def check_refused(error: Exception | None, sql: str) -> None:
    assert error is not None, f"ran: {sql}"
    assert isinstance(error, REFUSED), f"{type(error).__name__}: {error}"
    assert not isinstance(error, errors.InternalError)


def table_rows(root: Path) -> list[tuple]:
    with tl.connect(str(root), autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("SELECT n FROM default.t ORDER BY n")
        rows = cur.fetchall()
        cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'default'")
        return rows + cur.fetchall()


NAMES = ["csv", "tsv", "csv_gz", "json", "ndjson", "parquet", "backticks", "glob", "s3_url", "http_url"]


def test_an_unlocked_engine_reads_the_files(world: tuple[Path, Forbidden]) -> None:
    """The corpus means something: without QX2, DuckDB reads each kind of file by name."""
    _, forbidden = world
    engine = Engine()
    try:
        cursor = engine.cursor()
        for kind in ["csv", "tsv", "csv_gz", "json", "ndjson", "parquet", "glob"]:
            name = forbidden.names()[kind]
            rows = cursor.execute(f"SELECT * FROM {name}").fetchall()
            assert "SECRET-" in repr(rows), (kind, rows)
    finally:
        engine.close()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_scope_layer_alone_refuses_the_corpus(world: tuple[Path, Forbidden], shape: str, name: str) -> None:
    """QX1 alone (on an unlocked engine): every escape is ObjectNotFoundError (or another
    refusal), nothing of the file shows, nothing is written."""
    root, forbidden = world
    sql = SHAPES[shape].format(F=forbidden.names()[name])
    before = table_rows(root)
    with unlocked(tl.connect(str(root), autocommit=True)) as conn:
        error = attempt(conn.cursor(), sql)
    check_refused(error, sql)
    if "{F} f" in SHAPES[shape] or shape in ("plain", "insert_select", "ctas_select"):
        assert isinstance(error, errors.ObjectNotFoundError), error
        assert "does not exist" in str(error)
    assert table_rows(root) == before


@pytest.mark.parametrize("shape", sorted(REFUSED_SHAPES))
def test_update_from_is_refused(world: tuple[Path, Forbidden], shape: str) -> None:
    root, forbidden = world
    sql = REFUSED_SHAPES[shape].format(F=forbidden.names()["csv"])
    with unlocked(tl.connect(str(root), autocommit=True)) as conn:
        error = attempt(conn.cursor(), sql)
    check_refused(error, sql)


@pytest.mark.parametrize(
    "sql, expected",
    [
        ('WITH "/etc/x.csv" AS (SELECT 1 AS n) SELECT * FROM "/etc/x.csv"', [(1,)]),
        ('WITH "/etc/x.csv" AS (SELECT 1 AS n) SELECT * FROM "/ETC/X.CSV"', [(1,)]),  # DuckDB ignores case
        ("WITH a AS (SELECT 1 AS n), b AS (SELECT n + 1 AS n FROM a) SELECT * FROM b", [(2,)]),
        ("WITH a AS (SELECT 1 AS n) SELECT * FROM (SELECT * FROM a) s WHERE n IN (SELECT n FROM a)", [(1,)]),
        ("WITH a AS (SELECT 1 AS n) SELECT n FROM a UNION ALL SELECT n FROM a", [(1,), (1,)]),
        ("WITH a AS (SELECT 'a' AS n) SELECT t.n FROM default.t JOIN a ON a.n = t.n", [("a",)]),
        ("WITH RECURSIVE r AS (SELECT 1 AS k UNION ALL SELECT k + 1 FROM r WHERE k < 3) SELECT * FROM r", [(1,), (2,), (3,)]),
        ("WITH a AS (WITH b AS (SELECT 5 AS n) SELECT * FROM b) SELECT * FROM a", [(5,)]),
        ("SELECT * FROM range(2)", [(0,), (1,)]),
    ],
)
def test_ctes_in_scope_still_work(world: tuple[Path, Forbidden], sql: str, expected: list[tuple]) -> None:
    """QX1 takes a name for a CTE wherever SQL does (the locked engine too)."""
    root, _ = world
    with tl.connect(str(root), autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute(sql)
        assert cur.fetchall() == expected


@pytest.mark.parametrize("sql", [
    "SELECT current_setting('allowed_directories')",
    "SELECT * FROM (SELECT current_setting('threads')) s",
    "SELECT current_setting('threads') FROM default.t",
    "SELECT n FROM default.t WHERE n <> current_setting('temp_directory')",
    "SELECT getenv('HOME') FROM default.t",
    "SELECT current_query() FROM default.t",
    "SELECT system.main.current_setting('threads') FROM default.t",
    "SELECT * FROM duckdb_settings()",
    "SELECT * FROM default.t, duckdb_secrets() s",
    "SELECT (SELECT count(*) FROM duckdb_settings()) FROM default.t",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM read_csv('/etc/hostname')",
    "SELECT * FROM glob('/*')",
    "SELECT * FROM query('SELECT 1')",
    "SELECT * FROM read_parquet('x.parquet')",
])  # fmt: skip
def test_engine_functions_are_refused(world: tuple[Path, Forbidden], sql: str) -> None:
    """Settings, environment and file functions, in any position (QX1)."""
    root, _ = world
    with unlocked(tl.connect(str(root), autocommit=True)) as conn:
        error = attempt(conn.cursor(), sql)
    check_refused(error, sql)


@pytest.mark.parametrize("sql", [
    "COPY default.t TO '/tmp/out.csv'",
    "COPY (SELECT 1) TO '/tmp/out.csv'",
    "EXPORT DATABASE '/tmp/out'",
    "ATTACH '/tmp/x.db' AS x",
    "INSTALL httpfs",
    "LOAD httpfs",
    "LOAD '/tmp/x.duckdb_extension'",
    "SET enable_external_access = true",
    "SET allowed_directories = ['/']",
    "PRAGMA enable_profiling",
    "PRAGMA version",
    "CALL duckdb_settings()",
    "CREATE SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')",
    "DETACH x",
    "CHECKPOINT",
])  # fmt: skip
def test_engine_statements_are_refused_by_the_parser(world: tuple[Path, Forbidden], sql: str) -> None:
    """Nothing but a data statement reaches DuckDB: these are refused before it."""
    root, _ = world
    with unlocked(tl.connect(str(root), autocommit=True)) as conn:
        error = attempt(conn.cursor(), sql)
    assert error is not None and isinstance(error, errors.Error), (sql, error)
    assert not isinstance(error, errors.InternalError), (sql, error)
    assert not Path("/tmp/out.csv").exists() or Path("/tmp/out.csv").stat().st_size == 0


def test_a_cte_name_like_an_internal_view_is_refused(world: tuple[Path, Forbidden]) -> None:
    root, _ = world
    with tl.connect(str(root), autocommit=True) as conn:
        error = attempt(conn.cursor(), "WITH __tl_1 AS (SELECT 'x' AS n) SELECT * FROM default.t, __tl_1")
    assert isinstance(error, errors.ProgrammingError) and "reserved" in str(error)


@pytest.mark.parametrize("shape", ["plain", "cte_in_derived_table", "insert_cte_self_reference", "subquery_in_where"])
def test_read_only_version_connections_refuse_the_corpus(world: tuple[Path, Forbidden], shape: str) -> None:
    root, forbidden = world
    sql = SHAPES[shape].format(F=forbidden.names()["csv"])
    with tl.connect(str(root), version=2) as conn:
        error = attempt(conn.cursor(), sql)
    assert error is not None and isinstance(error, REFUSED + (errors.ReadOnlyError,)), error


@pytest.mark.parametrize("shape", ["plain", "cte_in_derived_table", "insert_cte_self_reference", "nested_with"])
def test_sqlalchemy_text_refuses_the_corpus(world: tuple[Path, Forbidden], shape: str) -> None:
    sa = pytest.importorskip("sqlalchemy")
    root, forbidden = world
    sql = SHAPES[shape].format(F=forbidden.names()["parquet"])
    before = table_rows(root)
    engine = sa.create_engine(f"trinitylake:///{root}")
    try:
        with engine.connect() as conn, pytest.raises(sa.exc.DBAPIError) as caught:
            conn.execute(sa.text(sql)).fetchall()
    finally:
        engine.dispose()
    assert isinstance(caught.value.orig, REFUSED), caught.value.orig
    assert "SECRET-" not in str(caught.value)
    assert table_rows(root) == before

