"""manifests MF6, manifest_writers MW4: the manifest lists and manifests this process
writes are kept as they were encoded, so a commit reads back none of the files it adds;
what is kept is what decoding the files gives, for every kind of commit (appends,
partitioned tables, copy-on-write and merge-on-read UPDATE and DELETE, compaction); a
file whose writing failed is never kept."""

from __future__ import annotations

import datetime
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.manifest import ManifestEntryStatus

import trinitylake_dbapi
from trinitylake_dbapi.iceberg import manifests as mf
from trinitylake_dbapi.iceberg.manifest_writers import ManifestListWriterV2, write_manifest

COLUMNS = "(id BIGINT, name STRING, amount DOUBLE, day DATE)"


def _row(i: int) -> tuple:
    return (i, f"name {i}", i * 1.5, datetime.date(2026, 1, 1) + datetime.timedelta(days=i % 3))


def _typed(value: Any) -> Any:
    """A Record (ManifestFile, PartitionFieldSummary), list or value with each value's
    type: equal only when the kept and decoded values are equal and of the same type."""
    from pyiceberg.typedef import Record

    if isinstance(value, Record):
        return (type(value).__name__, tuple(_typed(value[i]) for i in range(len(value))))
    if isinstance(value, list):
        return ("list", tuple(_typed(v) for v in value))
    return (type(value).__name__, value)


def _decoded_equal_kept(table: Any) -> int:
    """Every snapshot's manifest list and every manifest of the table, as this process
    keeps them (MF6), equal to a fresh decode of the file; how many lists were kept."""
    io = table.io
    kept = 0
    for snapshot in table.metadata.snapshots:
        cached = mf.CACHE.get(mf.list_key(snapshot, False))
        decoded = mf.read_list(io, snapshot.manifest_list).manifests
        if cached is not None:
            kept += 1
            assert cached.manifests == decoded
            for a, b in zip(cached.manifests, decoded):
                assert _typed(a) == _typed(b)
        for manifest in decoded:
            fresh = tuple((e.status, e.data_file.file_path)
                          for e in mf.manifest_entries(io, manifest, discard_deleted=False))  # fmt: skip
            assert mf.entry_paths(io, manifest) == fresh
    return kept


@pytest.fixture
def cursor(tmp_path: Any) -> Any:
    conn = trinitylake_dbapi.connect(str(tmp_path / "lh"), create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    yield cur
    conn.close()


def test_a_one_row_insert_decodes_none_of_the_files_it_adds(cursor: Any) -> None:
    cursor.execute(f"CREATE TABLE ns.t {COLUMNS}")
    for i in range(3):
        cursor.execute("INSERT INTO ns.t VALUES (?, ?, ?, ?)", _row(i))
    for i in range(3, 40):  # automatic compactions (CP6) among them
        before = mf.CACHE.info()["misses"]
        cursor.execute("INSERT INTO ns.t VALUES (?, ?, ?, ?)", _row(i))
        assert mf.CACHE.info()["misses"] == before, f"INSERT {i} decoded a manifest list or manifest"
    cursor.execute("SELECT count(*) FROM ns.t")
    assert cursor.fetchone() == (40,)
    table = cursor.connection.iceberg_catalog().load_table("ns.t")
    assert _decoded_equal_kept(table) >= 1


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    partitioned=st.sampled_from(["", " PARTITIONED BY (day)", " PARTITIONED BY (bucket(4, id), name)"]),
    mode=st.sampled_from(["copy-on-write", "merge-on-read"]),
    steps=st.lists(st.sampled_from(["insert", "insert many", "update", "delete", "optimize"]), min_size=1, max_size=8),
)
def test_what_is_kept_is_what_the_files_hold(tmp_path_factory: Any, partitioned: str, mode: str, steps: list[str]) -> None:
    path = tmp_path_factory.mktemp("seeding")
    conn = trinitylake_dbapi.connect(os.path.join(str(path), "lh"), create=True, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE ns")
        cur.execute(f"CREATE TABLE ns.t {COLUMNS}{partitioned} TBLPROPERTIES ('write.update.mode'='{mode}', "
                    f"'write.delete.mode'='{mode}', 'compaction.auto.min-small-files'='3')")  # fmt: skip
        n = 0
        for step in steps:
            if step == "insert":
                cur.execute("INSERT INTO ns.t VALUES (?, ?, ?, ?)", _row(n))
                n += 1
            elif step == "insert many":
                cur.executemany("INSERT INTO ns.t VALUES (?, ?, ?, ?)", [_row(n + j) for j in range(5)])
                n += 5
            elif step == "update":
                cur.execute("UPDATE ns.t SET amount = amount + 1 WHERE id % 2 = 0")
            elif step == "delete":
                cur.execute("DELETE FROM ns.t WHERE id % 3 = 1")
            else:
                cur.execute("OPTIMIZE ns.t")
            _decoded_equal_kept(conn.iceberg_catalog().load_table("ns.t"))
    finally:
        conn.close()


class _Failing:
    """An output file whose stream fails at close: the file is never written whole."""

    def __init__(self, location: str) -> None:
        self.location = location

    def create(self, overwrite: bool = False) -> Any:
        class Stream:
            def write(self, data: bytes) -> int:
                return len(data)

            def close(self) -> None:
                raise OSError("disk full")

            def __enter__(self) -> "Stream":
                return self

            def __exit__(self, *args: Any) -> None:
                self.close()

        return Stream()

    def __len__(self) -> int:
        return 0


def test_a_file_whose_writing_failed_is_never_kept() -> None:
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestEntry
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
    from pyiceberg.schema import Schema
    from pyiceberg.typedef import Record
    from pyiceberg.types import LongType, NestedField

    schema = Schema(NestedField(1, "id", LongType(), required=False))
    data_file = DataFile.from_args(content=DataFileContent.DATA, file_path="/nowhere/d.parquet",
                                   file_format=FileFormat.PARQUET, partition=Record(), record_count=1,
                                   file_size_in_bytes=10)  # fmt: skip
    writer = write_manifest(2, UNPARTITIONED_PARTITION_SPEC, schema, _Failing("/nowhere/m.avro"), 42, "deflate")
    with pytest.raises(OSError):
        with writer:
            writer.add_entry(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=42,
                                                     data_file=data_file))  # fmt: skip
    before = mf.CACHE.info()["entries"]
    writer.to_manifest_file()
    assert mf.CACHE.info()["entries"] == before
    with pytest.raises(OSError):
        with ManifestListWriterV2(_Failing("/nowhere/snap-43.avro"), 43, None, 1, "deflate") as lists:
            lists.add_manifests([])
    assert mf.CACHE.info()["entries"] == before
