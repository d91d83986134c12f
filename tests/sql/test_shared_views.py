"""The views an engine keeps across statements (sql.query.engine QX3): a statement reads
exactly its version's files whatever views earlier statements left, and the views held
stay within their bounds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import trinitylake_dbapi as tl
from trinitylake_dbapi.sql.query import engine as engine_module
from tests.lakes import Lake


def q(cur: Any, sql: str, params: Any = None) -> Any:
    cur.execute(sql, params)
    return cur.fetchall() if cur.description is not None else None


def shared_names(conn: Any) -> set[str]:
    """The shared views the connection's DuckDB database holds (its catalog, not the
    engine's bookkeeping)."""
    cursor = conn.session.data_engine().cursor()
    try:
        rows = cursor.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal AND NOT temporary").fetchall()
    finally:
        cursor.close()
    return {r[0] for r in rows if r[0].startswith("__tl_shared_")}


@pytest.fixture
def lake_conn(memory_lake: Lake) -> Any:
    conn = memory_lake.connect(autocommit=True)
    q(conn.cursor(), "CREATE NAMESPACE ns")
    yield conn
    if not conn.closed:
        conn.close()


def test_a_repeated_statement_reuses_its_view_until_the_table_changes(lake_conn: Any) -> None:
    cur = lake_conn.cursor()
    q(cur, "CREATE TABLE ns.t (id BIGINT, s STRING)")
    q(cur, "INSERT INTO ns.t VALUES (1, 'a')")
    engine = lake_conn.session.data_engine()
    assert q(cur, "SELECT count(*) FROM ns.t") == [(1,)]  # reads the file (smallfiles SF6)
    before = shared_names(lake_conn)
    assert q(cur, "SELECT count(*) FROM ns.t") == [(1,)]  # keeps its rows: a view of them
    made = shared_names(lake_conn) - before
    assert len(made) == 1
    for _ in range(3):
        assert q(cur, "SELECT count(*) FROM ns.t") == [(1,)]
        assert q(cur, "SELECT s FROM ns.t") == [("a",)]
    assert shared_names(lake_conn) - before == made  # same files, same view
    q(cur, "INSERT INTO ns.t VALUES (2, 'b')")
    assert q(cur, "SELECT count(*) FROM ns.t") == [(2,)]
    assert len(shared_names(lake_conn) - before - made) == 1  # the new snapshot: a new view
    q(cur, "DELETE FROM ns.t WHERE id = 1")
    assert q(cur, "SELECT id, s FROM ns.t") == [(2, "b")]
    q(cur, "UPDATE ns.t SET s = 'c'")
    assert q(cur, "SELECT id, s FROM ns.t") == [(2, "c")]
    assert engine.shared_view_info()["views"] == len(shared_names(lake_conn))


def test_rollback_and_a_transactions_own_writes(memory_lake: Lake) -> None:
    conn = memory_lake.connect(autocommit=True)
    cur = conn.cursor()
    q(cur, "CREATE NAMESPACE ns")
    q(cur, "CREATE TABLE ns.t (id BIGINT)")
    q(cur, "INSERT INTO ns.t VALUES (1)")
    assert q(cur, "SELECT id FROM ns.t") == [(1,)]
    conn.autocommit = False
    q(cur, "INSERT INTO ns.t VALUES (2)")
    assert sorted(q(cur, "SELECT id FROM ns.t")) == [(1,), (2,)]  # its own uncommitted write
    conn.rollback()
    assert q(cur, "SELECT id FROM ns.t") == [(1,)]
    q(cur, "INSERT INTO ns.t VALUES (3)")
    assert sorted(q(cur, "SELECT id FROM ns.t")) == [(1,), (3,)]
    conn.commit()
    assert sorted(q(cur, "SELECT id FROM ns.t")) == [(1,), (3,)]
    conn.close()


def test_time_travel_reads_each_version_between_current_reads(lake_conn: Any) -> None:
    cur = lake_conn.cursor()
    q(cur, "CREATE TABLE ns.t (id BIGINT)")
    versions = {}
    for i in range(4):
        q(cur, "INSERT INTO ns.t VALUES (?)", (i,))
        versions[q(cur, "SELECT max(version) FROM system.versions")[0][0]] = [(j,) for j in range(i + 1)]
    for _ in range(2):
        for version, expected in versions.items():
            assert sorted(q(cur, f"SELECT id FROM ns.t FOR SYSTEM_VERSION AS OF {version}")) == expected
            assert sorted(q(cur, "SELECT id FROM ns.t")) == [(j,) for j in range(4)]
    first, last = min(versions), max(versions)
    rows = q(cur, f"SELECT count(*) FROM ns.t FOR SYSTEM_VERSION AS OF {first} UNION ALL "
                  f"SELECT count(*) FROM ns.t FOR SYSTEM_VERSION AS OF {last}")  # fmt: skip
    assert rows == [(1,), (4,)]


def test_other_connections_commits(memory_lake: Lake) -> None:
    reader = memory_lake.connect(autocommit=True)
    writer = memory_lake.connect(autocommit=True)
    r, w = reader.cursor(), writer.cursor()
    q(w, "CREATE NAMESPACE ns")
    q(w, "CREATE TABLE ns.t (id BIGINT)")
    q(w, "INSERT INTO ns.t VALUES (1)")
    assert q(r, "SELECT count(*) FROM ns.t") == [(1,)]
    q(w, "INSERT INTO ns.t VALUES (2)")
    assert q(r, "SELECT count(*) FROM ns.t") == [(2,)]  # autocommit: the latest version
    reader.autocommit = False
    assert q(r, "SELECT count(*) FROM ns.t") == [(2,)]
    q(w, "INSERT INTO ns.t VALUES (3)")
    assert q(r, "SELECT count(*) FROM ns.t") == [(2,)]  # its transaction's version
    reader.commit()
    assert q(r, "SELECT count(*) FROM ns.t") == [(3,)]
    q(w, "DROP TABLE ns.t")
    q(w, "CREATE TABLE ns.t (id BIGINT, s STRING)")
    q(w, "INSERT INTO ns.t VALUES (9, 'x')")
    reader.commit()
    assert q(r, "SELECT * FROM ns.t") == [(9, "x")]
    reader.close()
    writer.close()


def test_the_views_held_stay_within_their_bounds(lake_conn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "_SHARED_VIEWS", 3)
    cur = lake_conn.cursor()
    for i in range(6):
        q(cur, f"CREATE TABLE ns.t{i} (id BIGINT)")
        q(cur, f"INSERT INTO ns.t{i} VALUES ({i})")
    for i in range(6):
        assert q(cur, f"SELECT id FROM ns.t{i}") == [(i,)]
        assert len(shared_names(lake_conn)) <= 3
    info = lake_conn.session.data_engine().shared_view_info()
    assert info["views"] == len(shared_names(lake_conn)) == 3 and info["limit_views"] == 3
    # A statement reading more tables than the bound keeps every view it uses.
    union = " UNION ALL ".join(f"SELECT id FROM ns.t{i}" for i in range(6))
    assert sorted(q(cur, union)) == [(i,) for i in range(6)]
    joined = q(cur, "SELECT count(*) FROM " + ", ".join(f"ns.t{i}" for i in range(6)))
    assert joined == [(1,)]
    assert sorted(q(cur, union)) == [(i,) for i in range(6)]
    # The text bound: each view's text is longer than the bound; one is kept, the one in use.
    monkeypatch.setattr(engine_module, "_SHARED_VIEW_CHARS", 10)
    for i in range(6):
        assert q(cur, f"SELECT id + 0 FROM ns.t{i} WHERE id >= 0") == [(i,)]
        assert len(shared_names(lake_conn)) <= 3
    assert lake_conn.session.data_engine().shared_view_info()["views"] == 1
    assert len(shared_names(lake_conn)) == 1


def test_a_result_still_streaming_survives_its_view_being_dropped(
    lake_conn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "_SHARED_VIEWS", 1)
    cur, other = lake_conn.cursor(), lake_conn.cursor()
    q(cur, "CREATE TABLE ns.big AS SELECT range AS i FROM range(50000)")
    q(cur, "CREATE TABLE ns.small (i BIGINT)")
    q(cur, "INSERT INTO ns.small VALUES (1)")
    cur.execute("SELECT i FROM ns.big ORDER BY i")
    first = cur.fetchmany(10)
    assert q(other, "SELECT i FROM ns.small") == [(1,)]  # the big table's view is dropped
    rest = cur.fetchall()
    assert [r[0] for r in first + rest] == list(range(50000))


def test_views_after_an_admission_of_an_external_table(tmp_path: Path) -> None:
    """An external table outside the root opens a new database (QX2): the views of the
    old one are not the new one's, and later statements read correctly."""
    import pyarrow as pa

    from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

    other = TrinityLakeCatalog("other", uri=str(tmp_path / "other"), create="true")
    source = other.create_table("default.src", pa.schema([("n", pa.string())]))
    source.append(pa.table({"n": ["external"]}))
    with tl.connect(str(tmp_path / "lake"), create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE default.t (n STRING)")
        cur.execute("INSERT INTO default.t VALUES ('managed')")
        assert q(cur, "SELECT n FROM default.t") == [("managed",)]
        conn.iceberg_catalog().register_table("default.ext", other.load_table("default.src").metadata_location)
        assert q(cur, "SELECT t.n, e.n FROM default.t t, default.ext e") == [("managed", "external")]
        assert q(cur, "SELECT n FROM default.t") == [("managed",)]
        cur.execute("INSERT INTO default.t VALUES ('second')")
        assert q(cur, "SELECT n FROM default.t ORDER BY n") == [("managed",), ("second",)]
        assert q(cur, "SELECT n FROM default.ext") == [("external",)]
        assert conn.session.data_engine().shared_view_info()["views"] == len(shared_names(conn))


def test_two_statements_making_the_same_view_at_once_both_read_through_it(tmp_path: Path) -> None:
    """QX3 under threadsafety 2: while one statement makes the view of a text, another
    statement (another thread's cursor of the same connection) makes and starts using
    one of the same text; the first then uses that one, and nothing drops it."""
    engine = engine_module.Engine(allowed=[str(tmp_path)])
    first, generation = engine.cursor_of_database()
    second, _ = engine.cursor_of_database()
    text = "SELECT 42 AS x"
    meanwhile: dict[str, str | None] = {}

    def run_first(sql: str) -> None:
        first.execute(sql)
        if sql.startswith("CREATE VIEW") and "name" not in meanwhile:
            meanwhile["name"] = engine.shared_view(text, generation, second.execute)

    name = engine.shared_view(text, generation, run_first)
    assert name == meanwhile["name"]
    assert second.execute(f"SELECT x FROM {meanwhile['name']}").fetchall() == [(42,)]
    assert first.execute(f"SELECT x FROM {name}").fetchall() == [(42,)]
    assert engine.shared_view_info()["views"] == 1
    engine.close()


def key_tables(conn: Any) -> set[str]:
    """The tables of deleted rows' keys the connection's DuckDB database holds (QX5)."""
    cursor = conn.session.data_engine().cursor()
    try:
        rows = cursor.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()
    finally:
        cursor.close()
    return {r[0] for r in rows if r[0].startswith("__tl_keys_")}


def test_a_scan_with_deletes_shares_its_view_and_its_keys(lake_conn: Any) -> None:
    """QX5: repeated reads of a table with position deletes reuse one view and one table
    of keys until the table changes; every read sees exactly the live rows."""
    cur = lake_conn.cursor()
    q(cur, "CREATE TABLE ns.t AS SELECT range AS id FROM range(3000)")
    q(cur, "DELETE FROM ns.t WHERE id % 10 = 3")
    live = [i for i in range(3000) if i % 10 != 3]
    q(cur, "SELECT count(*) FROM ns.t")  # reads the file once; later reads keep its rows (smallfiles SF6)
    before = shared_names(lake_conn)
    for a in (0, 1000, 2000, 0):
        assert [r[0] for r in q(cur, "SELECT id FROM ns.t WHERE id >= ? AND id < ? + 50 ORDER BY id", (a, a))] == [
            i for i in live if a <= i < a + 50
        ]
    made = shared_names(lake_conn) - before
    assert len(made) == 1 and len(key_tables(lake_conn)) == 1
    q(cur, "UPDATE ns.t SET id = id + 10000 WHERE id % 10 = 4")
    live = sorted([i for i in live if i % 10 != 4] + [i + 10000 for i in live if i % 10 == 4])
    assert [r[0] for r in q(cur, "SELECT id FROM ns.t ORDER BY id")] == live
    assert [r[0] for r in q(cur, "SELECT id FROM ns.t ORDER BY id")] == live
    assert len(key_tables(lake_conn)) == 2  # the new scan's; the old one's stays within the bound
    assert len(shared_names(lake_conn) - before) == 2


def test_the_key_tables_held_stay_within_their_bound(lake_conn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "_SHARED_KEY_TABLES", 2)
    cur = lake_conn.cursor()
    for i in range(4):
        q(cur, f"CREATE TABLE ns.t{i} AS SELECT range AS id FROM range(100)")
        q(cur, f"DELETE FROM ns.t{i} WHERE id >= ?", (10 + i,))
    for _ in range(2):
        for i in range(4):
            assert q(cur, f"SELECT count(*) FROM ns.t{i}") == [(10 + i,)]
            assert len(key_tables(lake_conn)) <= 2
    info = lake_conn.session.data_engine().shared_view_info()
    assert info["key_tables"] == len(key_tables(lake_conn)) == 2 and info["limit_key_tables"] == 2
    # One statement reading more tables than the bound keeps every table it uses.
    union = " UNION ALL ".join(f"SELECT count(*) FROM ns.t{i}" for i in range(4))
    assert sorted(q(cur, union)) == [(10 + i,) for i in range(4)]
    assert sorted(q(cur, union)) == [(10 + i,) for i in range(4)]
    # Keys (and bitmaps, positions DP4) beyond the row bound (bitmaps: the bytes of as
    # many keys) are registered on the statement's cursor, as before.
    monkeypatch.setattr(engine_module, "_SHARED_KEY_ROWS", 1)
    q(cur, "DELETE FROM ns.t0 WHERE id = 0")
    held = key_tables(lake_conn)
    assert q(cur, "SELECT count(*), min(id) FROM ns.t0") == [(9, 1)]
    assert q(cur, "SELECT count(*), min(id) FROM ns.t0") == [(9, 1)]
    assert key_tables(lake_conn) == held


def test_a_scan_with_deletes_on_a_new_database(tmp_path: Path) -> None:
    """QX5 with an admission (QX2) inside a statement: the keys made a table of the old
    database are registered under the same name on the new one's cursor."""
    import pyarrow as pa

    from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

    other = TrinityLakeCatalog("other", uri=str(tmp_path / "other"), create="true")
    source = other.create_table("default.src", pa.schema([("n", pa.int64())]))
    source.append(pa.table({"n": [1, 2, 3]}))
    with tl.connect(str(tmp_path / "lake"), create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE default.t AS SELECT range AS n FROM range(10)")
        cur.execute("DELETE FROM default.t WHERE n % 2 = 0")
        assert q(cur, "SELECT count(*) FROM default.t") == [(5,)]
        conn.iceberg_catalog().register_table("default.ext", other.load_table("default.src").metadata_location)
        assert q(cur, "SELECT t.n FROM default.t t JOIN default.ext e ON t.n = e.n ORDER BY 1") == [(1,), (3,)]
        assert q(cur, "SELECT count(*) FROM default.t") == [(5,)]
        cur.execute("DELETE FROM default.t WHERE n = 1")
        assert q(cur, "SELECT t.n FROM default.t t JOIN default.ext e ON t.n = e.n ORDER BY 1") == [(3,)]


def test_a_key_table_that_cannot_be_made_falls_back_to_the_cursor(tmp_path: Path) -> None:
    """QX5: when DuckDB refuses the table (the memory limit, say), the caller is told to
    register the keys itself (None), and nothing is left registered or recorded."""
    import pyarrow as pa

    engine = engine_module.Engine(allowed=[str(tmp_path)])
    cursor, generation = engine.cursor_of_database()
    keys = pa.table({"row_key": pa.array([1, 2, 3], pa.int64())})

    def refusing(sql: str) -> Any:
        if sql.startswith("CREATE TABLE"):
            return cursor.execute("SELECT error('no memory for it')").fetchall()
        return cursor.execute(sql).fetchall()

    scan = (("/d/a.parquet",), ("/d/del.parquet",))
    assert engine.shared_deleted_rows(scan, keys, generation, refusing, cursor.register, cursor.unregister) is None
    assert cursor.execute("SELECT count(*) FROM duckdb_views() WHERE view_name LIKE '__tl_keys%'").fetchall() == [(0,)]
    name = engine.shared_deleted_rows(scan, keys, generation, cursor.execute, cursor.register, cursor.unregister)
    assert name is not None and cursor.execute(f"SELECT sum(row_key) FROM {name}").fetchall() == [(6,)]
    engine.close()


def test_a_result_still_streaming_survives_its_key_table_being_dropped(
    lake_conn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """QX5: a result read in pieces keeps reading its deleted rows' keys after another
    statement's key table pushed them out of the bound (DROP TABLE)."""
    monkeypatch.setattr(engine_module, "_SHARED_KEY_TABLES", 1)
    monkeypatch.setattr(engine_module, "_SHARED_VIEWS", 1)
    cur, other = lake_conn.cursor(), lake_conn.cursor()
    q(cur, "CREATE TABLE ns.big AS SELECT range AS i FROM range(200000)")
    q(cur, "DELETE FROM ns.big WHERE i % 3 = 0")
    q(cur, "CREATE TABLE ns.small AS SELECT range AS i FROM range(10)")
    q(cur, "DELETE FROM ns.small WHERE i = 0")
    cur.execute("SELECT i FROM ns.big")  # no ORDER BY: the scan streams as it is fetched
    first = cur.fetchmany(10)
    held = key_tables(lake_conn)
    assert q(other, "SELECT count(*) FROM ns.small") == [(9,)]  # the big table's keys are dropped
    assert key_tables(lake_conn) != held
    rest = cur.fetchall()
    assert sorted(r[0] for r in first + rest) == [i for i in range(200000) if i % 3]
