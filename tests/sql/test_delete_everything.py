"""A merge-on-read DELETE without WHERE (rule Q4c of trinitylake_dbapi.sql.query.rewrite):
the positions of every row come from the manifests' row counts, so the statement reads
no data file, and it writes the same delete files, snapshot and rowcount as the WHERE's
evaluation (Q4) does; a table with delete files takes Q4's way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import trinitylake_dbapi as tl

#: Tables of one or more data files, unpartitioned and partitioned (a delete file per
#: partition, RD2).
SHAPES = {
    "one-file": ("", [[(1, "a"), (2, "b"), (3, "a")]]),
    "three-files": ("", [[(1, "a")], [(2, "b"), (3, "c"), (4, "d")], [(5, "a"), (6, "a")]]),
    "partitioned": (" PARTITIONED BY (p)", [[(1, "a"), (2, "b"), (3, "a")], [(4, "b")], [(5, "c")]]),
}


def _table(cur: Any, name: str, shape: str) -> int:
    partitioning, inserts = SHAPES[shape]
    cur.execute(f"CREATE TABLE {name} (id INT, p VARCHAR){partitioning}")
    for rows in inserts:
        cur.execute(f"INSERT INTO {name} VALUES " + ", ".join(f"({i}, '{p}')" for i, p in rows))
    return sum(len(rows) for rows in inserts)


def _table_dir(lake: Path, name: str) -> Path:
    (found,) = (lake / "tables" / "default").glob(f"{name}-*")
    return found


def _deleted(lake: Path, name: str) -> dict[str, list[int]]:
    """Each data file's name (without its directory's uuid-free part) -> the positions
    the table's delete files delete in it."""
    found: dict[str, list[int]] = {}
    for path in (_table_dir(lake, name) / "data").glob("*-deletes-*.parquet"):
        for row in pq.read_table(path).to_pylist():
            found.setdefault(row["file_path"].rsplit("/data/", 1)[1], []).append(row["pos"])
    return {f: sorted(p) for f, p in found.items()}


def _data_files(lake: Path, name: str) -> list[Path]:
    return [p for p in (_table_dir(lake, name) / "data").rglob("*.parquet") if "-deletes-" not in p.name]


def _last_summary(lake: Path, name: str) -> dict[str, str]:
    """The summary of the table's current snapshot (from its newest metadata file),
    without the sizes (the files' names differ)."""
    newest = max((_table_dir(lake, name) / "metadata").glob("*.metadata.json"))
    metadata = json.loads(newest.read_text())
    (current,) = [s for s in metadata["snapshots"] if s["snapshot-id"] == metadata["current-snapshot-id"]]
    return {k: v for k, v in current["summary"].items() if "size" not in k}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_delete_without_where_reads_no_data_file(tmp_path: Path, shape: str) -> None:
    """Q4c: every data file made unreadable, the DELETE still deletes every row (it was
    a DuckDB error reading the first file) and its delete files name every position."""
    lake = tmp_path / "lake"
    cur = tl.connect(str(lake), create=True, autocommit=True).cursor()
    rows = _table(cur, "t", shape)
    files = _data_files(lake, "t")
    counts = {str(f).rsplit("/data/", 1)[1]: len(pq.read_table(f)) for f in files}
    for f in files:
        f.write_bytes(b"not a parquet file")
    cur.execute("DELETE FROM t")
    assert cur.rowcount == rows
    assert _deleted(lake, "t") == {f: list(range(n)) for f, n in counts.items()}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_delete_without_where_writes_what_the_where_would(tmp_path: Path, shape: str) -> None:
    """The same rowcount, delete file contents and snapshot summary as ``WHERE true``
    (evaluated per row, Q4), and nothing left to read."""
    lake = tmp_path / "lake"
    cur = tl.connect(str(lake), create=True, autocommit=True).cursor()
    rows = _table(cur, "a", shape)
    _table(cur, "b", shape)
    cur.execute("DELETE FROM a")
    assert cur.rowcount == rows
    cur.execute("DELETE FROM b WHERE true")
    assert cur.rowcount == rows

    def by_partition(deleted: dict[str, list[int]]) -> list[tuple[str, list[int]]]:
        return sorted((f.rsplit("/", 1)[0] if "/" in f else "", p) for f, p in deleted.items())

    assert by_partition(_deleted(lake, "a")) == by_partition(_deleted(lake, "b"))
    assert len(list((_table_dir(lake, "a") / "data").glob("*-deletes-*"))) == len(
        list((_table_dir(lake, "b") / "data").glob("*-deletes-*"))
    )
    assert _last_summary(lake, "a") == _last_summary(lake, "b")
    for name in "ab":
        cur.execute(f"SELECT * FROM {name}")
        assert cur.fetchall() == []
        cur.execute(f"DELETE FROM {name}")  # nothing left: nothing written
        assert cur.rowcount == 0


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_table_with_delete_files_deletes_its_live_rows_without_reading_them(tmp_path: Path, shape: str) -> None:
    """Q4c over delete files: only the live rows are deleted and counted (a manifest's
    row count includes the deleted ones), with every data file unreadable, and the
    positions deleted in all are those of ``WHERE true`` on a twin table."""
    lake = tmp_path / "lake"
    cur = tl.connect(str(lake), create=True, autocommit=True).cursor()
    for name in "ab":
        rows = _table(cur, name, shape)
        cur.execute(f"DELETE FROM {name} WHERE id IN (2, 5)")
        cur.execute(f"UPDATE {name} SET p = 'z' WHERE id = 3")  # a delete file and a new data file
    live = rows - 1 - (shape != "one-file")  # id 5 exists in the tables of three files only
    for f in _data_files(lake, "a"):
        f.write_bytes(b"not a parquet file")
    cur.execute("DELETE FROM a")
    assert cur.rowcount == live
    cur.execute("DELETE FROM b WHERE true")
    assert cur.rowcount == live

    def every_position(name: str) -> list[tuple[int, ...]]:
        return sorted(tuple(p) for p in _deleted(lake, name).values())

    assert every_position("a") == every_position("b")
    cur.execute("DELETE FROM a")  # every row deleted already: nothing written
    assert cur.rowcount == 0
    cur.execute("SELECT * FROM b")
    assert cur.fetchall() == []


def test_a_copy_on_write_delete_without_where_rewrites_the_table(tmp_path: Path) -> None:
    """Q4c is merge-on-read only: copy-on-write removes the files (no delete file)."""
    lake = tmp_path / "lake"
    cur = tl.connect(str(lake), create=True, autocommit=True).cursor()
    rows = _table(cur, "t", "three-files")
    cur.execute("ALTER TABLE t SET TBLPROPERTIES ('write.delete.mode' = 'copy-on-write')")
    cur.execute("DELETE FROM t")
    assert cur.rowcount == rows
    assert _deleted(lake, "t") == {}
    cur.execute("SELECT * FROM t")
    assert cur.fetchall() == []
