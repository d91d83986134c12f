"""Small data files' rows kept in the engine's database (sql.query.smallfiles SF1-SF4):
a read gives exactly what reading the files gives, at every version, over random
histories of inserts, schema changes, deletes, updates and compactions; the rows kept
stay within their bounds, dropped least recently used first."""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import itertools
import os
from typing import Any, Iterator

import pytest
from deadlines import HANG_S
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trinitylake_dbapi as tl
from trinitylake_dbapi import errors
from trinitylake_dbapi.sql.query import smallfiles
from tests.lakes import Lake

UTC = dt.timezone.utc
_NAMES = itertools.count(1)


def q(cur: Any, sql: str, params: Any = None) -> Any:
    cur.execute(sql, params)
    return cur.fetchall() if cur.description is not None else None


@contextlib.contextmanager
def direct() -> Iterator[None]:
    """Every file read directly (no file is small): the path without SF1."""
    saved = smallfiles.SMALL_FILE_ROWS
    smallfiles.SMALL_FILE_ROWS = -1
    try:
        yield
    finally:
        smallfiles.SMALL_FILE_ROWS = saved


@contextlib.contextmanager
def bounded(rows: int) -> Iterator[None]:
    saved = smallfiles.CACHE_ROWS
    smallfiles.CACHE_ROWS = rows
    try:
        yield
    finally:
        smallfiles.CACHE_ROWS = saved


def kept_tables(conn: Any) -> set[str]:
    """The segments the connection's DuckDB database holds (its catalog)."""
    cursor = conn.session.data_engine().cursor()
    try:
        rows = cursor.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()
    finally:
        cursor.close()
    return {r[0] for r in rows if r[0].startswith("__tl_small_")}


def both(cur: Any, sql: str) -> list:
    """``sql``'s rows with kept rows and read directly: identical (sorted by repr)."""
    kept = sorted(q(cur, sql), key=repr)
    with direct():
        read = sorted(q(cur, sql), key=repr)
    assert kept == read, sql
    return kept


ALL_TYPES = ("b BOOLEAN, i2 SMALLINT, i4 INT, i8 BIGINT, f4 REAL, f8 DOUBLE, d DECIMAL(12,3), c CHAR(3), "
             "s STRING, dt DATE, tm TIME, ts TIMESTAMP, tz TIMESTAMPTZ, bin BINARY, l LIST<INT>, "
             "m MAP<STRING, BIGINT>, st STRUCT<x: INT, y: STRING>")  # fmt: skip

NAMES = "id, b, i2, i4, i8, f4, f8, d, c, s, dt, tm, ts, tz, bin, l, m, st"


def a_row(k: int) -> tuple:
    return (k % 2 == 0, k % 100, k, k * 2**33, k / 4, k * 1.25, decimal.Decimal(k) / 8, "abc",
            f"ü{k}", dt.date(2024, 1, 1) + dt.timedelta(days=k), dt.time(k % 24, 30, 1),
            dt.datetime(2024, 1, 2, 3, 4, 5, k), dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), bytes([k % 256, 0]),
            [k, None], {"a": k, "b": None}, {"x": k, "y": None})  # fmt: skip


OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), st.integers(1, 3), st.booleans()),
        st.tuples(st.just("add"), st.sampled_from(["BIGINT", "STRING", "DOUBLE"])),
        st.tuples(st.just("rename")),
        st.tuples(st.just("drop")),
        st.tuples(st.just("delete"), st.integers(2, 5), st.booleans()),
        st.tuples(st.just("update"), st.integers(2, 5)),
        st.tuples(st.just("optimize")),
    ),
    min_size=3,
    max_size=9,
)


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(operations=OPERATIONS)
@pytest.mark.parametrize("bitmaps", [True, False])
def test_kept_rows_read_as_the_files_at_every_version(memory_lake: Lake, operations: list[tuple], bitmaps: bool) -> None:
    """SF1 over random histories: every column type, typed NULLs, columns added,
    renamed and dropped, copy-on-write and merge-on-read deletes (SF5: applied by
    bitmaps, positions DP4, or by the anti-join of DP2), compactions; each version read
    again (time travel) after the history."""
    conn = memory_lake.connect(autocommit=True)
    if not bitmaps:  # DP4's bound: every scan with deletes anti-joins their keys instead
        conn.session.data_engine().deleted_rows.bitmap_files = 0
    cur = conn.cursor()
    name = f"t{next(_NAMES)}"
    q(cur, "CREATE NAMESPACE IF NOT EXISTS ns")
    q(cur, f"CREATE TABLE ns.{name} (id BIGINT, {ALL_TYPES})")
    table = f"ns.{name}"
    placeholders = ", ".join("?" * 18)
    next_id, extra, versions = 0, [], []
    for op in operations:
        if op[0] == "insert":
            rows = [(next_id + i, *a_row(next_id + i)) for i in range(op[1])]
            if op[2]:  # NULLs everywhere but the key
                rows = [(r[0],) + (None,) * 17 for r in rows]
            cur.executemany(f"INSERT INTO {table} ({NAMES}) VALUES ({placeholders})", rows)
            next_id += op[1]
        elif op[0] == "add":
            column = f"x{len(extra)}"
            q(cur, f"ALTER TABLE {table} ADD COLUMN {column} {op[1]}")
            extra.append(column)
            q(cur, f"UPDATE {table} SET {column} = id WHERE id % 2 = 0" if op[1] != "STRING"
                   else f"UPDATE {table} SET {column} = CAST(id AS VARCHAR) WHERE id % 2 = 0")  # fmt: skip
        elif op[0] == "rename" and extra:
            q(cur, f"ALTER TABLE {table} RENAME COLUMN {extra[-1]} TO {extra[-1]}r")
            extra[-1] += "r"
        elif op[0] == "drop" and extra:
            q(cur, f"ALTER TABLE {table} DROP COLUMN {extra.pop()}")
        elif op[0] == "delete":
            mode = "merge-on-read" if op[2] else "copy-on-write"
            q(cur, f"ALTER TABLE {table} SET TBLPROPERTIES ('write.delete.mode' = '{mode}')")
            q(cur, f"DELETE FROM {table} WHERE id % {op[1]} = 1")
        elif op[0] == "update":
            q(cur, f"UPDATE {table} SET s = 'u' WHERE id % {op[1]} = 0")
        elif op[0] == "optimize":
            q(cur, f"OPTIMIZE TABLE {table}")
        versions.append(q(cur, "SELECT max(version) FROM system.versions")[0][0])
        both(cur, f"SELECT * FROM {table}")
        both(cur, f"SELECT count(*), sum(id), max(s) FROM {table}")
        both(cur, f"SELECT id, st, m FROM {table} WHERE id = 1")
    for version in versions:
        both(cur, f"SELECT * FROM {table} FOR SYSTEM_VERSION AS OF {version}")
    assert conn.session.data_engine().small_files_info()["rows"] <= smallfiles.CACHE_ROWS
    conn.close()


@pytest.fixture
def auto(memory_lake: Lake) -> Iterator[Any]:
    conn = memory_lake.connect(autocommit=True)
    cur = conn.cursor()
    q(cur, "CREATE NAMESPACE ns")
    yield cur
    conn.close()


def test_small_files_are_read_once_then_from_the_kept_rows(auto: Any) -> None:
    q(auto, "CREATE TABLE ns.t (id BIGINT, s STRING)")
    for i in range(5):
        q(auto, "INSERT INTO ns.t VALUES (?, ?)", (i, f"s{i}"))
    engine = auto.connection.session.data_engine()
    assert engine.small_files_info()["files"] == 0
    assert q(auto, "SELECT count(*), max(s) FROM ns.t") == [(5, "s4")]
    assert engine.small_files_info()["files"] == 0  # SF6: the first read reads the files
    assert q(auto, "SELECT count(*), max(s) FROM ns.t") == [(5, "s4")]
    info = engine.small_files_info()
    assert (info["segments"], info["files"], info["rows"]) == (1, 5, 5)
    assert kept_tables(auto.connection) == {next(iter(kept_tables(auto.connection)))}
    assert q(auto, "SELECT s FROM ns.t WHERE id = 3") == [("s3",)]  # pruned to one file: kept already
    assert engine.small_files_info()["files"] == 5
    q(auto, "INSERT INTO ns.t VALUES (5, 's5')")
    assert q(auto, "SELECT count(*) FROM ns.t") == [(6,)]
    assert engine.small_files_info()["files"] == 6  # the segment exists: the new file kept at once
    # Another table (another schema) is read directly the first time again (SF6).
    q(auto, "CREATE TABLE ns.u (id INT, u STRING)")  # another schema argument: another segment
    q(auto, "INSERT INTO ns.u VALUES (1, 'u')")
    assert q(auto, "SELECT u FROM ns.u") == [("u",)]
    assert engine.small_files_info()["files"] == 6
    assert q(auto, "SELECT u FROM ns.u") == [("u",)]
    assert engine.small_files_info()["files"] == 7
    # A user cannot name the kept rows: table names are the lakehouse's (QX1).
    for table in kept_tables(auto.connection):
        with pytest.raises(errors.ObjectNotFoundError):
            q(auto, f"SELECT * FROM {table}")


def test_a_file_damaged_after_it_was_kept_reads_as_kept_and_a_new_connection_names_it(memory_lake: Lake) -> None:
    """SF4: kept rows are what the metadata promised; a new connection reads the file
    itself and fails naming it (Q8)."""
    conn = memory_lake.connect(autocommit=True)
    cur = conn.cursor()
    q(cur, "CREATE NAMESPACE ns")
    q(cur, "CREATE TABLE ns.t (id BIGINT)")
    q(cur, "INSERT INTO ns.t VALUES (1)")
    q(cur, "INSERT INTO ns.t VALUES (2)")
    for _ in range(2):  # kept from the second read on (SF6)
        assert q(cur, "SELECT sum(id) FROM ns.t") == [(3,)]
    assert conn.session.data_engine().small_files_info()["files"] == 2
    import fsspec

    fs = fsspec.filesystem("memory")
    files = [f for f in fs.find(memory_lake.location.removeprefix("memory://")) if f.endswith(".parquet")]
    assert len(files) == 2
    for f in files:
        fs.pipe(f, b"not parquet")
    assert q(cur, "SELECT sum(id) FROM ns.t") == [(3,)]
    conn.close()
    other = memory_lake.connect(autocommit=True)
    with pytest.raises(errors.CorruptFileError) as info:
        q(other.cursor(), "SELECT sum(id) FROM ns.t")
    assert any(os.path.basename(f) in str(info.value) for f in files)
    other.close()


def test_a_damaged_file_not_yet_kept_fails_naming_it(auto: Any, memory_lake: Lake) -> None:
    """SF3: a failed append reads the files directly, which names the damaged file."""
    import fsspec

    q(auto, "CREATE TABLE ns.t (id BIGINT)")
    q(auto, "INSERT INTO ns.t VALUES (1)")
    fs = fsspec.filesystem("memory")
    [path] = [f for f in fs.find(memory_lake.location.removeprefix("memory://")) if f.endswith(".parquet")]
    fs.pipe(path, b"PAR1 damaged PAR1")
    with pytest.raises(errors.CorruptFileError, match=os.path.basename(path)):
        q(auto, "SELECT * FROM ns.t")
    assert auto.connection.session.data_engine().small_files_info()["files"] == 0


def test_kept_rows_stay_within_their_bound_least_recently_used_dropped_first(auto: Any) -> None:
    """SF2: two tables of 4 one-row files each, a bound of 6 rows: reading one drops
    the other's segment (and the shared views reading it); results stay right."""
    for t in ("a", "b"):
        q(auto, f"CREATE TABLE ns.{t} (id BIGINT, {t} STRING)")  # two schemas: two segments
        for i in range(4):
            q(auto, f"INSERT INTO ns.{t} VALUES (?, ?)", (i, t))
    engine = auto.connection.session.data_engine()
    for t in ("a", "b"):  # read once: kept from the next read on (SF6)
        q(auto, f"SELECT count(*) FROM ns.{t}")
    with bounded(6):
        for _ in range(3):
            for t in ("a", "b"):
                assert q(auto, f"SELECT count(*), min({t}) FROM ns.{t}") == [(4, t)]
                info = engine.small_files_info()
                assert (info["segments"], info["rows"]) == (1, 4)
                assert len(kept_tables(auto.connection)) == 1
        # One statement reading both: the second table's files do not fit beside the
        # first's, which its view holds: they are read directly.
        assert q(auto, "SELECT count(*) FROM ns.a, ns.b WHERE a.id = b.id") == [(4,)]
        assert engine.small_files_info()["rows"] <= 6
    q(auto, "CREATE TABLE ns.c (id BIGINT, c STRING)")
    for i in range(4):
        q(auto, "INSERT INTO ns.c VALUES (?, ?)", (i, "c"))
    with bounded(3):  # a scan whose small files alone exceed the bound reads them directly
        before = engine.small_files_info()
        assert q(auto, "SELECT count(*), min(c) FROM ns.c") == [(4, "c")]
        assert engine.small_files_info() == {**before, "limit_rows": 3}


def test_a_scan_of_large_files_keeps_its_small_ones_only_when_they_are_many(auto: Any) -> None:
    """SF1: a scan with larger files keeps its small ones from MIN_SMALL_FILES on."""
    q(auto, f"CREATE TABLE ns.t AS SELECT range AS id FROM range({smallfiles.SMALL_FILE_ROWS + 1})")
    engine = auto.connection.session.data_engine()
    for i in range(smallfiles.MIN_SMALL_FILES):
        q(auto, "INSERT INTO ns.t VALUES (?)", (-1 - i,))
        q(auto, "SELECT count(*), sum(id) FROM ns.t")  # the new file read once (SF6)
        both(auto, "SELECT count(*), sum(id) FROM ns.t")
        kept = engine.small_files_info()["files"]
        assert kept == (0 if i + 1 < smallfiles.MIN_SMALL_FILES else smallfiles.MIN_SMALL_FILES)
    # SF5: deletes in the large file (read directly) and in kept ones, in one scan.
    q(auto, "ALTER TABLE ns.t SET TBLPROPERTIES ('write.delete.mode' = 'merge-on-read')")
    q(auto, "DELETE FROM ns.t WHERE id IN (-2, 0, 7, 9999)")
    assert both(auto, "SELECT count(*), sum(id) FROM ns.t")[0][0] == smallfiles.SMALL_FILE_ROWS + 1 + 4 - 4
    assert both(auto, "SELECT id FROM ns.t WHERE id < 10") == sorted([(i,) for i in (-4, -3, -1, 1, 2, 3, 4, 5, 6, 8, 9)], key=repr)


def test_position_deletes_apply_to_kept_rows_and_writes_read_the_files(auto: Any) -> None:
    """SF5: a scan with position delete files reads kept rows, keyed by their file's
    position in the scan and their row number; UPDATE and DELETE keep nothing (SF1)."""
    q(auto, "CREATE TABLE ns.t (id BIGINT, s STRING) TBLPROPERTIES ('write.delete.mode' = 'merge-on-read', "
            "'write.update.mode' = 'merge-on-read')")  # fmt: skip
    engine = auto.connection.session.data_engine()
    q(auto, "INSERT INTO ns.t SELECT range, 'a' FROM range(5)")
    for i in range(5, 8):
        q(auto, "INSERT INTO ns.t VALUES (?, 'b')", (i,))
    q(auto, "DELETE FROM ns.t WHERE id IN (1, 3, 6)")
    q(auto, "UPDATE ns.t SET s = 'c' WHERE id IN (0, 7)")
    assert engine.small_files_info()["files"] == 0  # the writes read the files
    expected = [(0, "c"), (2, "a"), (4, "a"), (5, "b"), (7, "c")]
    assert both(auto, "SELECT id, s FROM ns.t") == expected  # read once (SF6)
    assert both(auto, "SELECT id, s FROM ns.t") == expected
    assert engine.small_files_info()["files"] == 5  # 4 inserted, 1 of the UPDATE's new rows
    assert both(auto, "SELECT count(*), sum(id) FROM ns.t") == [(5, 18)]
    assert both(auto, "SELECT s FROM ns.t WHERE id = 3") == []
    # Kept before the delete, then read with it: the same rows as the files give.
    q(auto, "DELETE FROM ns.t WHERE id = 4")
    assert both(auto, "SELECT id, s FROM ns.t") == [r for r in expected if r[0] != 4]


def test_a_result_still_being_read_keeps_its_rows_when_its_segment_is_dropped(auto: Any) -> None:
    """SF2: a statement's result not read to its end reads on to its end after another
    statement dropped the segment it reads (DuckDB's transaction of that result holds
    the table), with the right rows."""
    for t in ("a", "b"):
        q(auto, f"CREATE TABLE ns.{t} (id BIGINT, {t} STRING)")
        for i in range(4):
            q(auto, f"INSERT INTO ns.{t} VALUES (?, ?)", (i, t))
    for t in ("a", "b"):  # read once: kept from the next read on (SF6)
        q(auto, f"SELECT count(*) FROM ns.{t}")
    with bounded(6):
        reader = auto.connection.cursor()
        reader.execute("SELECT id, r FROM ns.a, range(5000) AS x(r)")  # streams: 4 batches
        first = reader.fetchone()
        kept = kept_tables(auto.connection)
        assert len(kept) == 1
        assert q(auto, "SELECT count(*) FROM ns.b") == [(4,)]
        assert kept_tables(auto.connection).isdisjoint(kept)  # ns.a's was dropped for ns.b's
        rest = reader.fetchall()
        assert sorted([first, *rest]) == [(i, r) for i in range(4) for r in range(5000)]


def test_threads_of_one_connection_never_lose_the_rows_they_read(memory_lake: Lake) -> None:
    """SF2 under threads (threadsafety 2): statements of one connection run one at a
    time (connection CN1), so a segment dropped for one thread's read is never one
    another thread's statement is about to read."""
    import threading

    conn = memory_lake.connect(autocommit=True)
    cur = conn.cursor()
    q(cur, "CREATE NAMESPACE ns")
    tables = ("a", "b", "c")
    for t in tables:
        q(cur, f"CREATE TABLE ns.{t} (id BIGINT, {t} STRING)")
        for i in range(4):
            q(cur, f"INSERT INTO ns.{t} VALUES (?, ?)", (i, t))
    failures: list[BaseException] = []

    def work(k: int) -> None:
        own = conn.cursor()
        try:
            for i in range(15):
                t = tables[(k + i) % len(tables)]
                assert q(own, f"SELECT count(*), sum(id), min({t}) FROM ns.{t}") == [(4, 6, t)]
        except BaseException as e:  # noqa: BLE001 - reported below
            failures.append(e)

    with bounded(9):  # two tables' rows at most: every few reads drop one
        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=HANG_S)
        assert not failures, failures[0]
        assert conn.session.data_engine().small_files_info()["rows"] <= 9
    conn.close()


def test_rows_larger_in_memory_than_their_bound_are_dropped_and_their_schema_read_directly(auto: Any) -> None:
    """SF7: 4 files of 1,000 rows of a 2,000-character string are a few KB of Parquet
    each (SF2 counts those bytes) and ~8 MB in DuckDB's memory: over a 4 MB bound the
    other table's segment goes first, then theirs, and their schema is read directly
    from then on; every result is right throughout."""
    q(auto, "CREATE TABLE ns.narrow (id BIGINT)")
    for i in range(4):
        q(auto, "INSERT INTO ns.narrow VALUES (?)", (i,))
    q(auto, "CREATE TABLE ns.wide (id BIGINT, s STRING)")
    for i in range(4):
        q(auto, f"INSERT INTO ns.wide SELECT range + {i * 1000}, repeat('x', 2000) FROM range(1000)")
    engine = auto.connection.session.data_engine()
    for _ in range(2):  # kept from the second read on (SF6)
        assert q(auto, "SELECT count(*), sum(id) FROM ns.narrow") == [(4, 6)]
    assert engine.small_files_info()["segments"] == 1
    saved = smallfiles.CACHE_MEMORY
    smallfiles.CACHE_MEMORY = 4 << 20
    try:
        for _ in range(3):
            assert q(auto, "SELECT count(*), sum(id), min(length(s)) FROM ns.wide") == [(4000, 7998000, 2000)]
        info = engine.small_files_info()
        assert (info["segments"], info["files"], info["wide_schemas"]) == (0, 0, 1), info
        assert info["memory"] <= smallfiles.CACHE_MEMORY and kept_tables(auto.connection) == set()
        assert q(auto, "SELECT count(*), sum(id) FROM ns.narrow") == [(4, 6)]  # kept again: it fits
        assert engine.small_files_info()["segments"] == 1
    finally:
        smallfiles.CACHE_MEMORY = saved
