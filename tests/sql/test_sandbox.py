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
from hypothesis import HealthCheck, event, given, settings

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
    assert conn.session._engine is None  # noqa: SLF001 - the test's own switch, before any data statement
    conn.session._engine = Engine(filesystem=None, locked=False)  # noqa: SLF001
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


def table_rows(where: Path | tl.Connection) -> list[tuple]:
    """The rows of default.t and the names of the tables, through a new connection to the
    lakehouse at ``where`` or through the connection ``where`` (autocommit: what it shows
    is what it committed, its own uncommitted writes too)."""
    if isinstance(where, Path):
        with tl.connect(str(where), autocommit=True) as conn:
            return table_rows(conn)
    cur = where.cursor()
    cur.execute("SELECT n FROM default.t ORDER BY n")
    rows = cur.fetchall()
    cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'default'")
    return rows + cur.fetchall()


@pytest.fixture(scope="module")
def unlocked_world(world: tuple[Path, Forbidden]) -> Iterator[tuple[tl.Connection, list[tuple]]]:
    """(a connection to ``world``'s lakehouse with its engine unlocked, what table_rows
    shows there before any test): shared by the ~200 tests of the corpus on QX1 alone,
    each of which opened the lakehouse three times. A refusal leaves it usable; each
    test checks through it that nothing was written."""
    root, _ = world
    conn = unlocked(tl.connect(str(root), autocommit=True))
    yield conn, table_rows(root)
    conn.close()


NAMES = ["csv", "tsv", "csv_gz", "json", "ndjson", "parquet", "backticks", "glob", "s3_url", "http_url"]


def test_an_unlocked_engine_reads_the_files(world: tuple[Path, Forbidden]) -> None:
    """The corpus means something: without QX2, DuckDB reads each kind of file by name."""
    _, forbidden = world
    engine = Engine(locked=False)
    try:
        cursor = engine.cursor()
        for kind in ["csv", "tsv", "csv_gz", "json", "ndjson", "parquet", "glob"]:
            name = forbidden.names()[kind]
            rows = cursor.execute(f"SELECT * FROM {name}").fetchall()
            assert "SECRET-" in repr(rows), (kind, rows)
    finally:
        engine.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_scope_layer_alone_refuses_the_corpus(
    world: tuple[Path, Forbidden], unlocked_world: tuple[tl.Connection, list[tuple]], shape: str, name: str
) -> None:
    """QX1 alone (on an unlocked engine): every escape is ObjectNotFoundError (or another
    refusal), nothing of the file shows, nothing is written."""
    _, forbidden = world
    conn, before = unlocked_world
    sql = SHAPES[shape].format(F=forbidden.names()[name])
    error = attempt(conn.cursor(), sql)
    check_refused(error, sql)
    if "{F} f" in SHAPES[shape] or shape in ("plain", "insert_select", "ctas_select"):
        assert isinstance(error, errors.ObjectNotFoundError), error
        assert "does not exist" in str(error)
    assert table_rows(conn) == before


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


# ---------------------------------------------------------------------------
# QX2: the locked engine alone
# ---------------------------------------------------------------------------


def raw_duckdb_sql(sql: str) -> str:
    """The statement as DuckDB SQL with *no* QX1 rewriting (a CTAS: its query)."""
    statement = sqlglot.parse_one(sql, dialect=TrinityLake)
    if not isinstance(statement, (sqlglot.exp.Query, sqlglot.exp.Insert, sqlglot.exp.Update, sqlglot.exp.Delete)):
        statement = statement.args["query"]
    return statement.sql(dialect=duckdb_dialect())


def engine_with_table(**kwargs: Any) -> tuple[Engine, Any]:
    """An engine and a cursor on it holding DuckDB's own table "default".t (one row)."""
    engine = Engine(**kwargs)
    cursor = engine.cursor()
    cursor.execute('CREATE SCHEMA "default"; CREATE TABLE "default".t (n VARCHAR); INSERT INTO "default".t VALUES (\'a\')')
    return engine, cursor


@pytest.fixture(scope="module")
def locked_engine(world: tuple[Path, Forbidden]) -> Iterator[Engine]:
    """A locked engine allowed ``world``'s lakehouse root, shared by the ~200 tests of the
    corpus on QX2 alone (an engine each was most of their CPU: ~23 ms of ~32 ms). Each
    test starts from its own "default".t (:func:`fresh_table`), so no test sees what
    another's statement did to the engine's tables."""
    root, _ = world
    engine = Engine(allowed=[str(root)])
    yield engine
    engine.close()


def fresh_table(engine: Engine) -> Any:
    """A new cursor on ``engine``, whose schema "default" holds only t (one row 'a'), as
    :func:`engine_with_table` makes it: whatever a previous statement created in the
    schema (a CTAS's "default".c) or changed in t is dropped first."""
    cursor = engine.cursor()
    cursor.execute('DROP SCHEMA IF EXISTS "default" CASCADE; CREATE SCHEMA "default"; '
                   'CREATE TABLE "default".t (n VARCHAR); INSERT INTO "default".t VALUES (\'a\')')  # fmt: skip
    assert cursor.execute("SELECT schema_name, table_name FROM duckdb_tables()").fetchall() == [("default", "t")]
    return cursor


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_locked_engine_alone_refuses_the_corpus(
    world: tuple[Path, Forbidden], locked_engine: Engine, shape: str, name: str
) -> None:
    """QX2 alone: the corpus, not rewritten at all, sent straight to a locked engine
    allowed the lakehouse root: nothing of the files is read, nothing is written."""
    _, forbidden = world
    sql = raw_duckdb_sql(SHAPES[shape].format(F=forbidden.names()[name]))
    cursor = fresh_table(locked_engine)
    duckdb = locked_engine.errors
    try:
        try:
            rows = cursor.execute(sql).fetchall()
        except duckdb.Error as e:
            assert "SECRET-" not in str(e)
        else:
            assert "SECRET-" not in repr(rows), rows
        assert cursor.execute('SELECT * FROM "default".t').fetchall() == [("a",)] or shape in ("update_set",)
        assert "SECRET-" not in repr(cursor.execute('SELECT * FROM "default".t').fetchall())
    finally:
        cursor.close()


def test_locked_engine_reads_under_its_directories_only(world: tuple[Path, Forbidden], tmp_path: Path) -> None:
    root, forbidden = world
    inside = root / "stray.csv"
    inside.write_text("n\nin-the-lake\n")
    engine = Engine(allowed=[str(root)])
    try:
        cursor = engine.cursor()
        assert cursor.execute(f"SELECT * FROM '{inside}'").fetchall() == [("in-the-lake",)]
        duckdb = engine.errors
        for path in [f"{forbidden.directory}/secret.csv", f"{root}/../secrets/secret.csv", f"{forbidden.directory}/*.csv",
                     "http://127.0.0.1:1/x.csv", "s3://other-bucket/x.csv"]:  # fmt: skip
            with pytest.raises(duckdb.PermissionException):
                cursor.execute(f"SELECT * FROM '{path}'").fetchall()
        for sql in [f"COPY (SELECT 1) TO '{tmp_path}/out.csv'", f"ATTACH '{tmp_path}/x.db' AS x",
                    f"EXPORT DATABASE '{tmp_path}/export'", "INSTALL httpfs", "LOAD httpfs",
                    f"SELECT * FROM read_text('{forbidden.directory}/secret.csv')",
                    f"SELECT * FROM glob('{forbidden.directory}/*')", "SELECT * FROM read_csv('/etc/hostname')"]:  # fmt: skip
            with pytest.raises(duckdb.Error):
                cursor.execute(sql).fetchall()
        assert not list(tmp_path.iterdir())
    finally:
        engine.close()


@pytest.mark.parametrize("sql", [
    "SET enable_external_access = true",
    "SET allowed_directories = ['/']",
    "SET lock_configuration = false",
    "SET memory_limit = '100GB'",
    "SET autoload_known_extensions = true",
    "SELECT current_setting('allowed_directories')",
    "SELECT * FROM (SELECT current_setting('threads'))",
    "SELECT current_query()",
    "SELECT getvariable('x')",
])  # fmt: skip
def test_locked_engine_keeps_its_settings(sql: str) -> None:
    engine = Engine(allowed=["/nonexistent/lake"])
    try:
        with pytest.raises(engine.errors.Error):
            engine.cursor().execute(sql).fetchall()
    finally:
        engine.close()


def test_locked_engine_does_not_read_python_variables() -> None:
    """DuckDB's Python client reads a variable of the calling frame named like a table;
    the locked engine does not (QX2)."""
    secret_variable = pa.table({"n": ["SECRET-VARIABLE"]})  # noqa: F841 - read by name, or not
    unlocked_engine, locked_engine = Engine(locked=False), Engine()
    try:
        assert "SECRET-" in repr(unlocked_engine.cursor().execute("SELECT * FROM secret_variable").fetchall())
        with pytest.raises(locked_engine.errors.CatalogException):
            locked_engine.cursor().execute("SELECT * FROM secret_variable").fetchall()
    finally:
        unlocked_engine.close()
        locked_engine.close()


def test_locked_engine_refuses_other_paths_of_a_registered_filesystem() -> None:
    """memory:// (an fsspec filesystem registered in DuckDB, as S3 is): the root's files
    are readable in both spellings, another root's are not."""
    import fsspec

    fs = fsspec.filesystem("memory")
    base = f"sandbox-{os.getpid()}-{id(fs)}"
    fs.pipe(f"/{base}/lake/t/a.csv", b"n\nin-the-lake\n")
    fs.pipe(f"/{base}/other/secret.csv", b"n\nSECRET-MEMORY\n")
    engine = Engine(filesystem=fs, allowed=[f"memory://{base}/lake/"])
    try:
        cursor = engine.cursor()
        for spelling in (f"memory://{base}/lake/t/a.csv", f"memory:///{base}/lake/t/a.csv"):
            assert cursor.execute(f"SELECT * FROM '{spelling}'").fetchall() == [("in-the-lake",)]
        for path in (f"memory://{base}/other/secret.csv", f"memory:///{base}/other/secret.csv",
                     f"memory://{base}/lake/../other/secret.csv", f"memory://{base}/*/secret.csv"):  # fmt: skip
            with pytest.raises(engine.errors.PermissionException):
                cursor.execute(f"SELECT * FROM '{path}'").fetchall()
    finally:
        engine.close()
        fs.rm(f"/{base}", recursive=True)


def test_external_tables_outside_the_root_are_still_read(tmp_path: Path) -> None:
    """An external (registered) table whose files lie outside the lakehouse: the engine
    admits their directory (a new locked database), and a statement that read other
    tables before it keeps its views."""
    from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

    other = TrinityLakeCatalog("other", uri=str(tmp_path / "other"), create="true")
    source = other.create_table("default.src", pa.schema([("n", pa.string())]))
    source.append(pa.table({"n": ["external"]}))
    with tl.connect(str(tmp_path / "lake"), create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE default.t (n STRING)")
        cur.execute("INSERT INTO default.t VALUES ('managed')")
        conn.iceberg_catalog().register_table("default.ext", other.load_table("default.src").metadata_location)
        cur.execute(
            "SELECT t.n, e.n, s.table_name FROM default.t t, information_schema.tables s, default.ext e "
            "WHERE s.table_name = 'ext'"
        )
        assert cur.fetchall() == [("managed", "external", "ext")]
        cur.execute("INSERT INTO default.t SELECT n FROM default.ext")
        cur.execute("SELECT n FROM default.t ORDER BY n")
        assert cur.fetchall() == [("external",), ("managed",)]
        with pytest.raises(errors.ObjectNotFoundError):
            cur.execute(f"SELECT * FROM \"{tmp_path}/other/x.csv\"")  # a table name, never a file


# ---------------------------------------------------------------------------
# On S3: a second bucket holds a secret the lakehouse's credentials could read
# ---------------------------------------------------------------------------

S3_SHAPES = sorted(SHAPES)


@pytest.fixture(scope="module")
def s3_world(s3_server: Any) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(lakehouse root, storage options, forbidden name): a lakehouse on one bucket with
    default.t, and secret.csv in another bucket of the same server and credentials."""
    lake_bucket, secret_bucket = s3_server.create_bucket(), s3_server.create_bucket()
    s3_server.boto3_client().put_object(Bucket=secret_bucket, Key="secret.csv", Body=b"n\nSECRET-S3\n")
    for key, body in secret_objects().items():
        s3_server.boto3_client().put_object(Bucket=secret_bucket, Key=key, Body=body)
    options = dict(s3_server.storage_options)
    root = f"s3://{lake_bucket}/lake"
    with tl.connect(root, create=True, autocommit=True, storage_options=dict(options)) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE default.t (n STRING)")
        cur.execute("INSERT INTO default.t VALUES ('a')")
    yield root, options, f'"s3://{secret_bucket}/secret.csv"'


@pytest.fixture(scope="module")
def s3_connections(s3_world: tuple[str, dict[str, Any], str]) -> Iterator[dict[str, tl.Connection]]:
    """Connections to the S3 lakehouse, one per set of layers ("both"; "scope_only": QX1
    alone, its engine unlocked with the S3 filesystem registered), shared by the S3 tests
    of the corpus: a refusal leaves the connection usable (each test checks it still
    reads default.t), and opening an S3 lakehouse per test was most of their CPU."""
    root, options, _ = s3_world
    both = tl.connect(root, autocommit=True, storage_options=dict(options))
    scope_only = tl.connect(root, autocommit=True, storage_options=dict(options))
    scope_only.session._engine = Engine(filesystem=s3_filesystem(options), locked=False)  # noqa: SLF001
    yield {"both": both, "scope_only": scope_only}
    both.close()
    scope_only.close()


def secret_objects() -> dict[str, bytes]:
    """The other file kinds, as objects of the secret bucket."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"n": ["SECRET-S3-PARQUET"]}), sink)
    return {
        "secret.tsv": b"n\tm\nSECRET-S3-TSV\tx\n",
        "secret.csv.gz": gzip.compress(b"n\nSECRET-S3-GZ\n"),
        "secret.json": json.dumps([{"n": "SECRET-S3-JSON"}]).encode(),
        "secret.ndjson": (json.dumps({"n": "SECRET-S3-NDJSON"}) + "\n").encode(),
        "secret.parquet": sink.getvalue().to_pybytes(),
    }


def s3_filesystem(options: dict[str, Any]) -> Any:
    import fsspec

    return fsspec.filesystem("s3", **options)


@pytest.mark.s3
def test_s3_an_unlocked_engine_reads_the_other_bucket(s3_world: tuple[str, dict[str, Any], str]) -> None:
    _, options, name = s3_world
    engine = Engine(filesystem=s3_filesystem(options), locked=False)
    try:
        assert "SECRET-" in repr(engine.cursor().execute(f"SELECT * FROM {name}").fetchall())
    finally:
        engine.close()


@pytest.mark.s3
@pytest.mark.parametrize("layers", ["both", "scope_only"])
@pytest.mark.parametrize("shape", S3_SHAPES)
def test_s3_the_corpus_is_refused(
    s3_world: tuple[str, dict[str, Any], str], s3_connections: dict[str, tl.Connection], shape: str, layers: str
) -> None:
    """Through the driver on an S3 lakehouse: with both layers, and with QX1 alone (its
    engine unlocked, with the S3 filesystem registered)."""
    _, _, name = s3_world
    sql = SHAPES[shape].format(F=name)
    conn = s3_connections[layers]
    error = attempt(conn.cursor(), sql)
    check_refused(error, sql)
    cur = conn.cursor()
    cur.execute("SELECT n FROM default.t")
    assert cur.fetchall() == [("a",)]


@pytest.mark.s3
@pytest.mark.parametrize("shape", S3_SHAPES)
def test_s3_locked_engine_alone_refuses_the_corpus(s3_world: tuple[str, dict[str, Any], str], shape: str) -> None:
    """QX2 alone on S3: the raw corpus on a locked engine allowed the lakehouse root."""
    root, options, name = s3_world
    sql = raw_duckdb_sql(SHAPES[shape].format(F=name))
    engine, cursor = engine_with_table(filesystem=s3_filesystem(options), allowed=[root])
    try:
        try:
            rows = cursor.execute(sql).fetchall()
        except engine.errors.Error as e:
            assert "SECRET-" not in str(e)
        else:
            assert "SECRET-" not in repr(rows), rows
        assert "SECRET-" not in repr(cursor.execute('SELECT * FROM "default".t').fetchall())
        with pytest.raises(engine.errors.PermissionException):
            cursor.execute(f"SELECT * FROM {name}").fetchall()
    finally:
        engine.close()


# ---------------------------------------------------------------------------
# QX1 against DuckDB's own binder, on random nestings
# ---------------------------------------------------------------------------

#: A name no file has: DuckDB binds it to a CTE in scope, or fails to find it as a file.
NOWHERE = '"/nonexistent-sandbox/f.csv"'


def nestings(depth: int) -> Any:
    """Random queries of one column ``n``: subqueries, set operations, WITH (plain,
    several CTEs, RECURSIVE), scalar subqueries and IN, over ``NOWHERE``, default.t
    and literals."""
    from hypothesis import strategies as st

    leaf = st.sampled_from([f"SELECT n FROM {NOWHERE}", "SELECT n FROM default.t", "SELECT 'lit' AS n"])
    if depth == 0:
        return leaf
    sub = nestings(depth - 1)
    # A body that starts with WITH is wrapped: sqlglot would merge two WITH clauses into
    # one (then RECURSIVE would cover a body that recurses for ever).
    body = sub.map(lambda q: f"SELECT n FROM ({q}) b" if q.startswith("WITH") else q)
    recursive = f"SELECT 'rec' AS n UNION ALL SELECT n FROM {NOWHERE} WHERE false"
    return st.one_of(
        leaf,
        sub.map(lambda q: f"SELECT n FROM ({q}) s"),
        st.tuples(sub, sub).map(lambda p: f"SELECT n FROM ({p[0]}) s WHERE n IN ({p[1]})"),
        st.tuples(sub, sub).map(lambda p: f"({p[0]}) UNION ALL ({p[1]})"),
        st.tuples(sub, body).map(lambda p: f"WITH {NOWHERE} AS ({p[0]}) {p[1]}"),
        st.tuples(sub, sub, body).map(lambda p: f"WITH a AS ({p[0]}), {NOWHERE} AS ({p[1]}) {p[2]}"),
        body.map(lambda q: f"WITH RECURSIVE {NOWHERE} AS ({recursive}) {q}"),
        sub.map(lambda q: f"SELECT (SELECT max(n) FROM ({q}) s) AS n"),
    )


@pytest.fixture(scope="module")
def binder_oracle(world: tuple[Path, Forbidden]) -> Iterator[tuple[Any, Any]]:
    """(driver cursor on an unlocked engine, raw DuckDB cursor with "default".t): both
    with the same table default.t."""
    root, _ = world
    conn = unlocked(tl.connect(str(root), autocommit=True))
    engine, raw = engine_with_table(locked=False)
    yield conn.cursor(), raw
    engine.close()
    conn.close()


@pytest.mark.slow  # a property test against DuckDB's binder (~5.8 s of CPU): the full run only
@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(query=nestings(3))
def test_scope_resolution_agrees_with_duckdbs_binder(binder_oracle: tuple[Any, Any], query: str) -> None:
    """Whatever the nesting: where DuckDB binds every ``NOWHERE`` to a CTE, the driver
    gives the same rows; where DuckDB would look for a file, the driver says
    ObjectNotFoundError (QX1 leaves nothing for a replacement scan); never
    InternalError or OperationalError. (The @given is the test's own, not an inner
    function's, so that tests/conftest.py's examples share reaches it: scripts/test's
    sqlglot 28 run repeats it on a third of its examples.)"""
    from sqlglot.optimizer.eliminate_ctes import eliminate_ctes

    cur, raw = binder_oracle
    # EXISTS over default.t: a data query even without another table (DuckDB runs it).
    sql = f"SELECT n FROM ({query}) q WHERE EXISTS (SELECT 1 FROM default.t)"
    # DuckDB never binds the body of a CTE nothing uses, where the driver resolves
    # every name: compare on the statement without them.
    # Written back in DuckDB's dialect: sqlglot 28's Spark-based generator hoists nested
    # CTEs to the top and drops RECURSIVE, which would change the scopes under test.
    sql = eliminate_ctes(sqlglot.parse_one(sql, dialect=TrinityLake)).sql(dialect=duckdb_dialect())
    try:
        expected: list[tuple] | None = sorted(raw.execute(raw_duckdb_sql(sql)).fetchall(), key=repr)
        raw_error = ""
    except Exception as e:  # noqa: BLE001 - DuckDB's verdict
        expected, raw_error = None, str(e)
    try:
        cur.execute(sql)
        got: list[tuple] | None = sorted(cur.fetchall(), key=repr)
        error: Exception | None = None
    except errors.Error as e:
        got, error = None, e
    assert not isinstance(error, (errors.InternalError, errors.OperationalError)), (sql, error)
    event("DuckDB: every name a CTE" if expected is not None else
          "DuckDB: a file" if "does not exist" in raw_error or "No files found" in raw_error else
          "DuckDB: another error")  # fmt: skip
    if expected is not None:
        assert got == expected, (sql, error)
    elif "nonexistent-sandbox" in raw_error and ("does not exist" in raw_error or "No files found" in raw_error):
        assert isinstance(error, errors.ObjectNotFoundError), (sql, raw_error, got, error)


@pytest.mark.parametrize("sql, data", [
    # a name equal to a CTE of a subquery is no CTE: DuckDB (where QX1 resolves it)
    ("SELECT * FROM information_schema.tables, (WITH x AS (SELECT 1) SELECT 1) z, x", True),
    ("SELECT * FROM information_schema.tables WHERE table_name IN (WITH x AS (SELECT 'a') SELECT * FROM x) "
     "AND table_name IN (SELECT * FROM x)", True),
    ("WITH a AS (SELECT * FROM x), x AS (SELECT 1) SELECT * FROM a", True),
    # CTEs in scope over system tables: the catalog's own executor
    ("WITH x AS (SELECT * FROM information_schema.tables) SELECT * FROM x", False),
    ("WITH x AS (SELECT 1 AS n), y AS (SELECT * FROM x) SELECT * FROM y, information_schema.schemata", False),
    ("SELECT * FROM (WITH x AS (SELECT 1 AS n) SELECT * FROM x) s", False),
])  # fmt: skip
def test_where_a_query_runs_follows_scopes(sql: str, data: bool) -> None:
    """reads_table_data and QueryShape decide by scope too (QX1): an out-of-scope CTE
    name is a table reference, so the query goes where names are resolved."""
    from trinitylake_dbapi.sql.query import reads_table_data

    assert reads_table_data(sqlglot.parse_one(sql, dialect=TrinityLake)) is data


@pytest.mark.s3
@pytest.mark.parametrize("key", sorted(secret_objects()))
def test_s3_an_unlocked_engine_reads_every_file_kind(s3_world: tuple[str, dict[str, Any], str], key: str) -> None:
    """The control of the test below: an unlocked engine reads each object (once per
    object: it was read again for each of the four shapes)."""
    _, options, csv_name = s3_world
    engine = Engine(filesystem=s3_filesystem(options), locked=False)
    try:
        name = csv_name.replace("secret.csv", key)
        assert "SECRET-" in repr(engine.cursor().execute(f"SELECT * FROM {name}").fetchall())
    finally:
        engine.close()


@pytest.mark.s3
@pytest.mark.parametrize("shape", ["plain", "cte_in_derived_table", "insert_cte_self_reference", "ctas_select"])
@pytest.mark.parametrize("key", sorted(secret_objects()))
def test_s3_every_file_kind_is_refused(
    s3_world: tuple[str, dict[str, Any], str], s3_connections: dict[str, tl.Connection], key: str, shape: str
) -> None:
    """TSV, .gz, JSON, NDJSON and Parquet objects of the other bucket, which an unlocked
    engine reads (the test above); through the driver, and on the locked engine alone."""
    root, options, csv_name = s3_world
    name = csv_name.replace("secret.csv", key)
    fs = s3_filesystem(options)
    sql = SHAPES[shape].format(F=name)
    check_refused(attempt(s3_connections["both"].cursor(), sql), sql)
    engine, cursor = engine_with_table(filesystem=fs, allowed=[root])
    try:
        with pytest.raises(engine.errors.PermissionException):
            cursor.execute(raw_duckdb_sql(sql)).fetchall()
    finally:
        engine.close()
