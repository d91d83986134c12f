"""manifest_writers MW1, MW2: a manifest written with the prepared Avro set-up has the
bytes PyIceberg's own writer gives (sync marker aside), for data and delete manifests,
partitioned and not, across schemas; and its entries read back as written."""

from __future__ import annotations

import io
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg.io import OutputFile
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
)
from pyiceberg.manifest import ManifestWriterV2 as PyIcebergWriter
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform, IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import DateType, DoubleType, LongType, NestedField, StringType

from trinitylake_dbapi.iceberg import manifest_writers
from trinitylake_dbapi.iceberg.compaction import DeleteManifestWriter


class Memory(OutputFile):
    """An in-memory output file (the bytes are compared, not stored)."""

    def __init__(self) -> None:
        super().__init__("memory://manifest.avro")
        self.buffer = io.BytesIO()

    def __len__(self) -> int:
        return len(self.buffer.getvalue())

    def exists(self) -> bool:
        return False

    def to_input_file(self) -> Any:
        raise NotImplementedError

    def create(self, overwrite: bool = False) -> Any:
        self.buffer = io.BytesIO()
        self.buffer.close = lambda: None  # type: ignore[method-assign]
        return self.buffer


SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False),
    NestedField(3, "amount", DoubleType(), required=False), NestedField(4, "day", DateType(), required=False),
)  # fmt: skip
SPECS = {
    "unpartitioned": UNPARTITIONED_PARTITION_SPEC,
    "identity": PartitionSpec(PartitionField(4, 1000, IdentityTransform(), "day"), spec_id=1),
    "bucket": PartitionSpec(PartitionField(1, 1000, BucketTransform(8), "id_bucket"),
                            PartitionField(2, 1001, IdentityTransform(), "name"), spec_id=2),  # fmt: skip
}
PARTITIONS = {"unpartitioned": lambda i: Record(), "identity": lambda i: Record(19000 + i),
              "bucket": lambda i: Record(i % 8, f"n{i}")}  # fmt: skip


def _entry(i: int, spec: str, content: DataFileContent, status: ManifestEntryStatus) -> ManifestEntry:
    data_file = DataFile.from_args(
        content=content, file_path=f"/lake/t/data/{i}.parquet", file_format=FileFormat.PARQUET,
        partition=PARTITIONS[spec](i), record_count=i + 1, file_size_in_bytes=1000 + i,
        column_sizes={1: 10 + i, 2: 12}, value_counts={1: i + 1, 2: i + 1}, null_value_counts={1: 0, 2: i % 2},
        nan_value_counts={3: 0}, lower_bounds={1: i.to_bytes(8, "little"), 2: b"a"},
        upper_bounds={1: (i + 5).to_bytes(8, "little"), 2: f"z{i}".encode()}, split_offsets=[4],
        sort_order_id=0 if content == DataFileContent.DATA else None,
    )  # fmt: skip
    data_file.spec_id = SPECS[spec].spec_id
    return ManifestEntry.from_args(status=status, snapshot_id=7 + i, sequence_number=3 if status != ManifestEntryStatus.ADDED else None,
                                   file_sequence_number=3 if status != ManifestEntryStatus.ADDED else None,
                                   data_file=data_file)  # fmt: skip


def _write(writer_class: type, spec: str, entries: list[ManifestEntry], sync: bytes) -> tuple[bytes, Any]:
    output = Memory()
    writer = writer_class(SPECS[spec], SCHEMA, output, 42, "deflate")
    original = os.urandom  # both writers draw the sync marker from os.urandom
    os.urandom = lambda n: sync  # type: ignore[assignment]
    try:
        with writer:
            for entry in entries:
                if entry.status == ManifestEntryStatus.ADDED:
                    writer.add(entry)
                elif entry.status == ManifestEntryStatus.EXISTING:
                    writer.existing(entry)
                else:
                    writer.delete(entry)
    finally:
        os.urandom = original  # type: ignore[assignment]
    return output.buffer.getvalue(), writer.to_manifest_file()


class PyIcebergDeleteWriter(PyIcebergWriter):
    """What DeleteManifestWriter was before MW1: PyIceberg's writer, content deletes."""

    def content(self) -> Any:
        return DeleteManifestWriter.content(self)  # type: ignore[arg-type]

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


@settings(max_examples=40, deadline=None)
@given(
    spec=st.sampled_from(sorted(SPECS)),
    statuses=st.lists(st.sampled_from(list(ManifestEntryStatus)), min_size=1, max_size=6),
    deletes=st.booleans(),
    sync=st.binary(min_size=16, max_size=16),
)
def test_a_prepared_writer_writes_pyicebergs_bytes(spec: str, statuses: list, deletes: bool, sync: bytes) -> None:
    content = DataFileContent.POSITION_DELETES if deletes else DataFileContent.DATA
    entries = [_entry(i, spec, content, status) for i, status in enumerate(statuses)]
    ours_class, theirs_class = (DeleteManifestWriter, PyIcebergDeleteWriter) if deletes else (
        manifest_writers.ManifestWriterV2, PyIcebergWriter)  # fmt: skip
    for _ in range(2):  # the second time from the kept set-up
        ours, our_file = _write(ours_class, spec, entries, sync)
        theirs, their_file = _write(theirs_class, spec, entries, sync)
        assert ours == theirs
        assert our_file.partitions == their_file.partitions
        assert (our_file.added_files_count, our_file.existing_files_count, our_file.deleted_files_count) == (
            their_file.added_files_count, their_file.existing_files_count, their_file.deleted_files_count)  # fmt: skip
    assert 0 < manifest_writers.cache_size() <= manifest_writers.KEPT


def test_each_file_has_its_own_sync_marker() -> None:
    entries = [_entry(0, "unpartitioned", DataFileContent.DATA, ManifestEntryStatus.ADDED)]
    first, second = Memory(), Memory()
    for output in (first, second):
        with manifest_writers.ManifestWriterV2(UNPARTITIONED_PARTITION_SPEC, SCHEMA, output, 42, "deflate") as writer:
            writer.add(entries[0])
    assert first.buffer.getvalue()[-16:] != second.buffer.getvalue()[-16:]


@pytest.mark.parametrize("version", [1, 2])
def test_write_manifest_keeps_pyicebergs_writer_for_other_versions(version: int) -> None:
    writer = manifest_writers.write_manifest(version, UNPARTITIONED_PARTITION_SPEC, SCHEMA, Memory(), 1, "deflate")
    assert isinstance(writer, manifest_writers.ManifestWriterV2) == (version == 2)


def _list_bytes(writer_factory: Any, manifests: list[Any], sync: bytes, parent: int | None) -> bytes:
    output = Memory()
    original = os.urandom
    os.urandom = lambda n: sync  # type: ignore[assignment]
    try:
        with writer_factory(2, output, 42, parent, 5, "deflate") as writer:  # the manifests' snapshot
            writer.add_manifests(manifests)
    finally:
        os.urandom = original  # type: ignore[assignment]
    return output.buffer.getvalue()


@settings(max_examples=25, deadline=None)
@given(
    count=st.integers(min_value=1, max_value=5), parent=st.one_of(st.none(), st.integers(1, 2**40)),
    sync=st.binary(min_size=16, max_size=16),
)  # fmt: skip
def test_a_prepared_manifest_list_writer_writes_pyicebergs_bytes(count: int, parent: int | None, sync: bytes) -> None:
    """MW3: the same bytes as PyIceberg's v2 manifest list writer, the first time and from
    the kept set-up, manifests with assigned and unassigned sequence numbers."""
    from pyiceberg.manifest import write_manifest_list as pyiceberg_write_manifest_list

    manifests = []
    for i in range(count):
        entries = [_entry(i, "identity", DataFileContent.DATA, ManifestEntryStatus.ADDED)]
        manifests.append(_write(manifest_writers.ManifestWriterV2, "identity", entries, sync)[1])
    for _ in range(2):
        assert _list_bytes(manifest_writers.write_manifest_list, manifests, sync, parent) == _list_bytes(
            pyiceberg_write_manifest_list, manifests, sync, parent)  # fmt: skip


#: PyIceberg 0.12.0's _SnapshotProducer._commit, which iceberg.writing copies (MW3).
COPIED_COMMIT_SHA256 = "c6fc9654eaee932c2a8f7375a196f07bac3cfaf41b7076b322d3a11da4faf586"


def test_the_copied_snapshot_commit_is_pyicebergs() -> None:
    """The append producers' ``_commit`` is PyIceberg's with only the manifest list writer
    changed: when PyIceberg's method changes, review the copy in iceberg.writing."""
    import hashlib
    import inspect

    from pyiceberg.table.update.snapshot import _SnapshotProducer

    from trinitylake_dbapi.iceberg import writing

    source = inspect.getsource(_SnapshotProducer._commit)
    assert hashlib.sha256(source.encode()).hexdigest() == COPIED_COMMIT_SHA256, "PyIceberg's _commit changed"
    ours = inspect.getsource(writing._CachedReads._commit)
    body = lambda text: [  # noqa: E731 - the statements, without the docstring and imports
        line.strip() for line in text.splitlines()
        if line.strip() and not line.strip().startswith(("from ", "def ", '"""', "#")) and "MW3" not in line
    ]  # fmt: skip
    theirs_body = body(source)
    ours_body = [line for line in body(ours) if not any(w in line for w in ("manifest list written", "set-up built",
                                                                               "method changes", "PyIceberg 0.12.0"))]  # fmt: skip
    provider = "location_provider = self._transaction._table.location_provider()"  # the same, through a public method
    assert ours_body == [
        "location_provider = self._transaction.table_location_provider()" if line == provider else line
        for line in theirs_body
    ]


#: PyIceberg 0.12.0's _SnapshotProducer._manifests, which iceberg.writing copies (W12).
COPIED_MANIFESTS_SHA256 = "f57f3aac3c95f9f3695d9ef0bd51f2aab20da0b0052d5d04b3c4df0b98211895"


def test_the_copied_snapshot_manifests_is_pyicebergs() -> None:
    """The append producers' ``_manifests`` is PyIceberg's with only W12's branch added
    (the parts on the calling thread): when PyIceberg's method changes, review the copy."""
    import hashlib
    import inspect

    from pyiceberg.table.update.snapshot import _SnapshotProducer

    from trinitylake_dbapi.iceberg import writing

    source = inspect.getsource(_SnapshotProducer._manifests)
    assert hashlib.sha256(source.encode()).hexdigest() == COPIED_MANIFESTS_SHA256, "PyIceberg's _manifests changed"
    body = lambda text: [  # noqa: E731 - the statements, without the docstring and imports
        line.strip() for line in text.splitlines()
        if line.strip() and not line.strip().startswith(("from ", "def _manifests", '"""'))
    ]  # fmt: skip
    ours = [line for line in body(inspect.getsource(writing._CachedReads._manifests))
            if not any(w in line for w in ("W12", "PyIceberg 0.12.0", "PyIceberg's method changes"))]  # fmt: skip
    assert ours == body(source)
