"""Position deletes as our reads and UPDATE/DELETE apply them (sql.query.positions
DP1-DP2, views Q2): delete files decoded once per engine, the deleted rows of each scan
matched by data file and row, whatever the scan (pruned, time travel, on a new cursor)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trinitylake_dbapi as tl
from trinitylake_dbapi.sql.query.positions import ROW_KEY_SHIFT, DeletedRows


def _lake(tmp_path: Path, files: int = 2, rows: int = 1000) -> tuple[Any, Any]:
    conn = tl.connect(str(tmp_path / "lake"), create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (id BIGINT, name VARCHAR)")
    per = rows // files
    for f in range(files):
        cur.execute(f"INSERT INTO t SELECT range, 'n' || range FROM range({f * per}, {(f + 1) * per})")
    return conn, cur


def _ids(cur: Any, sql: str = "SELECT id FROM t") -> list[int]:
    cur.execute(sql)
    return sorted(r[0] for r in cur.fetchall())


def _info(conn: Any) -> dict[str, int]:
    return conn.session.data_engine().deleted_rows.info()


def test_each_delete_file_is_decoded_once_per_engine(tmp_path: Path) -> None:
    writer, wcur = _lake(tmp_path)
    conn = tl.connect(str(tmp_path / "lake"), autocommit=True)  # reads what the writer wrote
    cur = conn.cursor()
    wcur.execute("DELETE FROM t WHERE id % 100 = 7")  # the first delete file
    expected = [i for i in range(1000) if i % 100 != 7]
    assert _ids(cur) == expected
    decoded = _info(conn)["decoded"]
    assert decoded == 1
    for _ in range(3):  # SELECTs and a statement reading the same snapshot decode nothing
        assert _ids(cur) == expected
    assert _ids(cur, "SELECT id FROM t WHERE name LIKE 'n%'") == expected
    assert _info(conn)["decoded"] == decoded
    wcur.execute("UPDATE t SET name = 'x' WHERE id % 100 = 8")
    assert _ids(cur) == expected
    assert _info(conn)["decoded"] == decoded + 1  # only the UPDATE's new delete file
    wcur.execute("DELETE FROM t WHERE id % 100 = 9")
    expected = [i for i in expected if i % 100 != 9]
    assert _ids(cur) == expected
    cur.execute("SELECT count(*) FROM t WHERE name = 'x'")
    assert cur.fetchall() == [(10,)]
    assert _info(conn)["decoded"] == decoded + 2
    assert _info(conn)["files"] == 3
    conn.close()
    writer.close()


@pytest.mark.parametrize("statements", [
    ["DELETE FROM t WHERE id % 100 = 7"],
    ["UPDATE t SET name = 'x' WHERE id % 100 = 8", "DELETE FROM t WHERE id % 3 = 0"],
    ["DELETE FROM t WHERE id < 10 OR id >= 990", "UPDATE t SET id = id + 1000 WHERE id % 7 = 0",
     "DELETE FROM t WHERE id >= 1000 AND id % 2 = 0"],
])  # fmt: skip
def test_a_delete_file_this_engine_wrote_is_not_read_back(tmp_path: Path, statements: list[str]) -> None:
    """DP3: the statements after a merge-on-read UPDATE or DELETE find its delete file
    remembered from what was written (nothing decoded), and read the same rows as a
    new connection that decodes every delete file."""
    conn, cur = _lake(tmp_path, files=3, rows=999)
    for sql in statements:
        cur.execute(sql)
        assert _info(conn)["decoded"] == 0
    cur.execute("SELECT id, name FROM t")
    ours = sorted(cur.fetchall())
    assert _info(conn)["decoded"] == 0
    assert _info(conn)["files"] == len(statements)
    with tl.connect(str(tmp_path / "lake"), autocommit=True) as other:
        c = other.cursor()
        c.execute("SELECT id, name FROM t")
        assert sorted(c.fetchall()) == ours
        assert _info(other)["decoded"] == len(statements)
    conn.close()


def test_remembered_delete_files_keep_the_bound() -> None:
    """DP3 under DP1's bound: a file larger than the bound is not kept, older ones go first."""
    rows = DeletedRows(kept_positions=10)
    rows.remember("/d/1.parquet", [("/data/a.parquet", pa.array([1, 2, 3], pa.int64()))])
    rows.remember("/d/2.parquet", [("/data/a.parquet", [4, 5]), ("/data/b.parquet", pa.array([0, 9]))])
    assert rows.info()["files"] == 2 and rows.info()["positions"] == 7
    rows.remember("/d/big.parquet", [("/data/a.parquet", list(range(11)))])
    assert rows.info()["files"] == 2
    rows.remember("/d/3.parquet", [("/data/c.parquet", [1, 2, 3, 4])])
    assert rows.info()["files"] == 2 and rows.info()["positions"] == 8
    table = rows.of_scan(["/data/a.parquet", "/data/b.parquet", "/data/c.parquet"], ["/d/2.parquet", "/d/3.parquet"],
                         lambda files: pytest.fail(f"read {files}"))  # fmt: skip
    assert sorted(table.column("row_key").to_pylist()) == [
        4, 5, ROW_KEY_SHIFT, ROW_KEY_SHIFT + 9, *(2 * ROW_KEY_SHIFT + i for i in (1, 2, 3, 4))
    ]


def test_a_new_connection_reads_the_same_rows(tmp_path: Path) -> None:
    conn, cur = _lake(tmp_path)
    cur.execute("DELETE FROM t WHERE id < 10 OR id >= 990")
    conn.close()
    with tl.connect(str(tmp_path / "lake"), autocommit=True) as other:
        assert _ids(other.cursor()) == list(range(10, 990))
        assert _info(other)["decoded"] == 1


def test_time_travel_reads_each_versions_deletes(tmp_path: Path) -> None:
    conn, cur = _lake(tmp_path)
    before = conn.lakehouse.latest_version()
    cur.execute("DELETE FROM t WHERE id % 2 = 0")
    middle = conn.lakehouse.latest_version()
    cur.execute("DELETE FROM t WHERE id % 3 = 0")
    odd = [i for i in range(1000) if i % 2]
    assert _ids(cur) == [i for i in odd if i % 3]
    assert _ids(cur, f"SELECT id FROM t FOR SYSTEM_VERSION AS OF {middle}") == odd
    assert _ids(cur, f"SELECT id FROM t FOR SYSTEM_VERSION AS OF {before}") == list(range(1000))
    # The three versions in one statement: each reference with its own deleted rows.
    cur.execute(
        f"SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM t FOR SYSTEM_VERSION AS OF {middle}), "
        f"(SELECT count(*) FROM t FOR SYSTEM_VERSION AS OF {before})"
    )
    assert cur.fetchall() == [(len([i for i in odd if i % 3]), 500, 1000)]
    conn.close()


def test_a_pruned_scan_applies_the_deletes_of_its_files_only(tmp_path: Path) -> None:
    """A delete file names rows of both data files; a WHERE that prunes one of them
    (planning by statistics) leaves the scan with the other, whose rows still go."""
    conn, cur = _lake(tmp_path, files=2)
    cur.execute("DELETE FROM t WHERE id % 10 = 3")
    assert _ids(cur, "SELECT id FROM t WHERE id < 500") == [i for i in range(500) if i % 10 != 3]
    assert _ids(cur, "SELECT id FROM t WHERE id >= 500") == [i for i in range(500, 1000) if i % 10 != 3]
    cur.execute("UPDATE t SET name = 'u' WHERE id >= 500 AND id % 10 = 4")
    assert cur.rowcount == 50
    cur.execute("SELECT count(*) FROM t WHERE name = 'u'")
    assert cur.fetchall() == [(50,)]
    assert _ids(cur) == [i for i in range(1000) if i % 10 != 3]
    conn.close()


def test_deletes_survive_the_statement_moving_to_a_new_database(tmp_path: Path) -> None:
    """A statement that reads a table with deletes and then an external table outside
    the lakehouse continues on a new locked database (QX2): the deleted rows go with it."""
    from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

    other = TrinityLakeCatalog("other", uri=str(tmp_path / "other"), create="true")
    source = other.create_table("default.src", pa.schema([("n", pa.int64())]))
    source.append(pa.table({"n": pa.array([1, 2, 3], pa.int64())}))
    conn, cur = _lake(tmp_path)
    cur.execute("DELETE FROM t WHERE id >= 3")
    conn.iceberg_catalog().register_table("default.ext", other.load_table("default.src").metadata_location)
    cur.execute("SELECT t.id, e.n FROM t, default.ext e WHERE t.id + 1 = e.n ORDER BY 1")
    assert cur.fetchall() == [(0, 1), (1, 2), (2, 3)]
    conn.close()


# -- DeletedRows alone (DP1, DP2), over Arrow tables shaped as DuckDB reads delete files --


def _reader(contents: dict[str, list[tuple[str | None, int | None]]], calls: list[list[str]]) -> Any:
    """read(files) as the engine's: (file_index, file_path, pos) of ``files`` in order."""

    def read(files: Sequence[str]) -> Any:
        calls.append(list(files))
        index, paths, positions = [], [], []
        for i, f in enumerate(files):
            for path, pos in contents[f]:
                index.append(i)
                paths.append(path)
                positions.append(pos)
        return pa.table({
            "file_index": pa.array(index, pa.uint64()), "file_path": pa.array(paths, pa.string()),
            "pos": pa.array(positions, pa.int64()),
        })  # fmt: skip

    return read


def _expected(data_files: Sequence[str], deletes: Sequence[str], contents: dict) -> list[int]:
    where = {f.removeprefix("file://"): i for i, f in enumerate(data_files)}
    return sorted(
        where[p.removeprefix("file://")] * ROW_KEY_SHIFT + pos
        for d in deletes for p, pos in contents[d]
        if p is not None and pos is not None and p.removeprefix("file://") in where
    )  # fmt: skip


def test_paths_match_by_their_canonical_key_and_other_rows_delete_nothing() -> None:
    contents = {
        "/l/d1.parquet": [("file:///l/a.parquet", 3), ("/l/b.parquet", 0), ("/l/gone.parquet", 5),
                          (None, 1), ("/l/a.parquet", None), ("file:/l/./a.parquet", 4)],
    }  # fmt: skip
    calls: list[list[str]] = []
    rows = DeletedRows()
    table = rows.of_scan(["/l/a.parquet", "/l/b.parquet"], ["/l/d1.parquet"], _reader(contents, calls))
    assert table.column_names == ["row_key"] and table.schema.field(0).type == pa.int64()
    assert sorted(table.column(0).to_pylist()) == [3, 4, ROW_KEY_SHIFT]
    # Another scan of the same delete file (the data files in another order): no read.
    table = rows.of_scan(["/l/b.parquet", "/l/a.parquet"], ["/l/d1.parquet"], _reader(contents, calls))
    assert sorted(table.column(0).to_pylist()) == [0, ROW_KEY_SHIFT + 3, ROW_KEY_SHIFT + 4]
    assert calls == [["/l/d1.parquet"]]


_PATHS = [f"/lake/data/{n}.parquet" for n in "abcd"]


@st.composite
def _histories(draw: Any) -> tuple[dict, list[tuple[list[str], list[str]]]]:
    """Delete files (rows of (path in any spelling, pos)) and scans over them."""
    files = {
        f"/lake/data/del-{i}.parquet": draw(st.lists(st.tuples(
            st.sampled_from(_PATHS + ["file://" + p for p in _PATHS] + ["/lake/data/z.parquet"]),
            st.integers(0, 50)), max_size=30))
        for i in range(draw(st.integers(1, 6)))
    }  # fmt: skip
    scans = draw(st.lists(st.tuples(
        st.lists(st.sampled_from(_PATHS), min_size=1, max_size=4, unique=True),
        st.lists(st.sampled_from(sorted(files)), min_size=1, unique=True)), min_size=1, max_size=8))  # fmt: skip
    return files, scans


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_histories(), st.integers(0, 60))
def test_any_sequence_of_scans_gets_exactly_its_deleted_rows(history: tuple, kept: int) -> None:
    """Whatever is kept or evicted (a bound of ``kept`` positions), every scan gets the
    keys of exactly its delete files' rows naming its data files; what is kept never
    exceeds the bound, and a file is read again only after it was evicted."""
    contents, scans = history
    calls: list[list[str]] = []
    rows = DeletedRows(kept_positions=kept, kept_scans=2)
    for data_files, deletes in scans:
        got = rows.of_scan(data_files, deletes, _reader(contents, calls))
        assert sorted(got.column(0).to_pylist()) == _expected(data_files, deletes, contents)
        info = rows.info()
        assert info["positions"] <= kept
        assert info["decoded"] == sum(len(c) for c in calls)
    if kept >= sum(len(c) for c in contents.values()):  # everything fits: each file read once
        read = [f for c in calls for f in c]
        assert len(read) == len(set(read))


# -- Bitmaps (DP4): reads test a row's bit in its file's bitmap instead of anti-joining --


def _counts(sizes: dict[str, int | None], calls: list[list[str]] | None = None) -> Any:
    def rows(files: Sequence[str]) -> dict[str, int | None]:
        if calls is not None:
            calls.append(list(files))
        return {f: sizes.get(f.removeprefix("file://"), 40) for f in files}

    return rows


def _bits_of(bitmaps: Any, files: int, rows: int = 0) -> list[int]:
    """The keys a scan's bitmaps (DP4) of ``files`` data files delete, checking each has
    a bit per row and each file with deleted rows a slot."""
    import numpy as np

    keys: list[int] = []
    if not bitmaps.files:
        assert bitmaps.size == 0
        return keys
    assert bitmaps.table.num_rows == 1
    maps, slots = bitmaps.table.column("bits")[0].as_py(), bitmaps.table.column("slots")[0].as_py()
    assert len(maps) == len(bitmaps.files) and len(slots) == files
    assert [i for i, slot in enumerate(slots) if slot is not None] == list(bitmaps.files)
    for f in bitmaps.files:
        bits = np.unpackbits(np.frombuffer(maps[slots[f] - 1], dtype=np.uint8))
        assert len(bits) >= rows
        keys += [f * ROW_KEY_SHIFT + int(p) for p in np.flatnonzero(bits)]
    return sorted(keys)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_histories(), st.integers(0, 4))
def test_a_scans_bitmaps_delete_exactly_its_keys(history: tuple, files: int) -> None:
    """DP4: the bitmaps of a scan hold exactly its keys (DP2: duplicates once, NULLs and
    other files' rows nowhere), or are None beyond ``bitmap_files``; what is kept is
    reported and bounded."""
    contents, scans = history
    rows = DeletedRows(kept_scans=2, bitmap_files=files)
    sizes = {"/lake/data/d.parquet": None}  # a row count unknown: no bitmaps for its scans
    counted: list[list[str]] = []
    for data_files, deletes in scans:
        expected = sorted(set(_expected(data_files, deletes, contents)))
        got = rows.bitmaps_of_scan(data_files, deletes, _reader(contents, []), _counts(sizes, counted))
        with_deletes = {data_files[k // ROW_KEY_SHIFT] for k in expected}
        if len(with_deletes) > files or "/lake/data/d.parquet" in with_deletes:
            assert got is None
        else:
            assert got is not None and _bits_of(got, len(data_files), 40) == expected
        assert rows.bitmaps_of_scan(data_files, deletes, _reader(contents, []), _counts({})) is got  # kept
        info = rows.info()
        assert 1 <= info["bitmap_scans"] and info["bitmap_bytes"] <= info["kept_bitmap_bytes"]
    counted_files = [f for c in counted for f in c if f != "/lake/data/d.parquet"]
    assert len(counted_files) == len(set(counted_files))  # each count asked once


def test_bitmaps_over_the_byte_bound_are_not_made() -> None:
    """DP4: a file's bitmap has a bit per row (its count) or up to its last position."""
    contents = {"/l/d.parquet": [("/l/a.parquet", 8 * 1024 - 1), ("/l/b.parquet", 3)]}
    files, deletes, read = ["/l/a.parquet", "/l/b.parquet"], ["/l/d.parquet"], _reader(contents, [])
    sizes = {"/l/a.parquet": 5, "/l/b.parquet": 8 * 1024}
    assert DeletedRows(bitmap_bytes=2047).bitmaps_of_scan(files, deletes, read, _counts(sizes)) is None
    made = DeletedRows(bitmap_bytes=2048).bitmaps_of_scan(files, deletes, read, _counts(sizes))
    assert made is not None and _bits_of(made, 2, 8 * 1024) == [8 * 1024 - 1, ROW_KEY_SHIFT + 3]


@pytest.mark.parametrize("bitmaps", [True, False])
def test_reads_by_bitmap_and_by_anti_join_agree(tmp_path: Path, bitmaps: bool) -> None:
    """Q2 with DP4's bitmaps and with the anti-join (bitmaps turned off): the same rows
    after deletes of the first and last rows of files, rows past a file's last deleted
    one, a range filter, time travel, an UPDATE and a DELETE reading their own scan."""
    conn, cur = _lake(tmp_path, files=3, rows=3000)
    if not bitmaps:
        conn.session.data_engine().deleted_rows.bitmap_files = 0
    live = set(range(3000))
    cur.execute("DELETE FROM t WHERE id IN (0, 999, 1000, 1998, 1999, 2000)")
    live -= {0, 999, 1000, 1998, 1999, 2000}
    version = conn.lakehouse.latest_version()
    cur.execute("UPDATE t SET name = 'u' WHERE id % 97 = 3")
    cur.execute("DELETE FROM t WHERE id % 89 = 5 AND id < 1500")
    live -= {i for i in range(1500) if i % 89 == 5}
    assert _ids(cur) == sorted(live)
    assert _ids(cur, "SELECT id FROM t WHERE id >= 990 AND id < 1010") == sorted(i for i in live if 990 <= i < 1010)
    cur.execute("SELECT count(*) FROM t WHERE name = 'u'")
    assert cur.fetchall() == [(len([i for i in live if i % 97 == 3]),)]
    cur.execute("DELETE FROM t WHERE id % 2 = 0")
    assert cur.rowcount == len([i for i in live if i % 2 == 0])
    live = {i for i in live if i % 2}
    assert _ids(cur) == sorted(live)
    assert _ids(cur, f"SELECT id FROM t FOR SYSTEM_VERSION AS OF {version}") == sorted(
        set(range(3000)) - {0, 999, 1000, 1998, 1999, 2000}
    )
    info = _info(conn)
    assert (info["bitmap_bytes"] > 0) == bitmaps and info["bitmap_scans"] >= 1



def test_an_s3_lakehouse_reads_by_bitmaps(s3_server: Any) -> None:
    """DP4 on object storage: the data files' row counts are found (their footers, named
    by DuckDB in its own spelling of the URI), so reads use bitmaps, with the same rows."""
    root = f"s3://{s3_server.create_bucket()}/lake"
    with tl.connect(root, create=True, autocommit=True, storage_options=dict(s3_server.storage_options)) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE t (id BIGINT)")
        cur.execute("INSERT INTO t SELECT range FROM range(500)")
        cur.execute("DELETE FROM t WHERE id % 7 = 3")
        assert _ids(cur) == [i for i in range(500) if i % 7 != 3]
        info = _info(conn)
        assert info["bitmap_bytes"] > 0 and info["row_counts"] == 1
