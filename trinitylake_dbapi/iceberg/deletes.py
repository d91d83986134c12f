"""Merge-on-read row deletes (issue 34): rows of a table's data files deleted by Iceberg
v2 position delete files instead of rewriting the files that hold them. SQL's UPDATE
and DELETE (sql.query.rewrite Q4) call :func:`delete_rows`.

Rules:

  RD1 The mode of a row-level statement is Iceberg's own table property:
      ``write.delete.mode`` for DELETE, ``write.update.mode`` for UPDATE, each
      ``merge-on-read`` or ``copy-on-write`` (any case, surrounding blanks ignored;
      another value is ProgrammingError naming the table and the property). A table
      that sets neither is merge-on-read here (``MODE_DEFAULT``): a spread-out 1 %
      UPDATE then writes a delete file and the changed rows instead of every data
      file. (Iceberg's own default is copy-on-write; engines that follow it, Spark for
      one, keep copy-on-write on such a table, and a table that sets the property keeps
      its choice everywhere.) A table of format version 1 (no delete files) or 3 (the
      spec forbids new position delete files there; deletion vectors are not written
      by this package) is always copy-on-write.
  RD2 A statement's deleted rows are written as position delete files (Parquet, the
      spec's ``file_path`` (field id 2147483546) and ``pos`` (2147483545), sorted by
      path then position): one file per partition (spec id and partition value of the
      data files it names) per statement. ``file_path`` is the data file's location
      exactly as its manifest names it; ``pos`` the row's 0-based position in the file.
      Its metadata carries the row count, the file size and full lower and upper bounds
      of both columns, so that readers (PyIceberg's DeleteFileIndex) apply it only to
      the data files in its path range. Files are written through the table's FileIO:
      durable before the commit publishes them (io F1).
  RD3 One snapshot per statement, on the parent the statement read: a new delete
      manifest per partition spec (its entries ADDED, inheriting the snapshot's
      sequence number, so they apply to every data file of an older sequence number
      they name), a new data manifest for an UPDATE's rows, and every live manifest of
      the parent carried over unchanged (nothing is rewritten). The operation is
      ``delete`` when only delete files are added, ``overwrite`` when rows are added
      too; the summary carries Iceberg's counts (added delete files and position
      deletes, added data files and records) and the totals. Its data manifest and
      manifest list are written by :mod:`.manifest_writers` (MW1, MW3: PyIceberg's
      bytes, the Avro writer set up once per process; PyIceberg's own set-up was
      ~40 % of writing them), as its delete manifests already were.
  RD4 The commit requires that the parent is still the head of ``main``; the catalog
      never rebases such a commit (iceberg.catalog P3: it is not a plain append), so a
      statement that lost to another writer of the table is a conflict: under SQL's
      autocommit the statement runs again on the latest version (finding its rows'
      positions again), elsewhere CommitFailedException. The caller names data files
      live in the parent (SQL finds them through planning PC6).
  RD5 :func:`delete_rows` reports what each delete file it committed holds (the
      positions per data file it was given), so that a reader in the same process can
      remember the file without reading it back (sql.query.positions DP3).
"""

from __future__ import annotations

import io as _bytes_io
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Sequence

from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from pyiceberg.table import TableProperties
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.snapshots import Operation, Snapshot, SnapshotSummaryCollector, Summary, update_snapshot_summaries
from pyiceberg.table.update import (
    AddSnapshotUpdate,
    AssertRefSnapshotId,
    AssertTableUUID,
    SetSnapshotRefUpdate,
    TableRequirement,
    TableUpdate,
)

from ..errors import ProgrammingError
from .compaction import DeleteManifestWriter
from .manifest_writers import write_manifest, write_manifest_list
from .manifests import snapshot_manifests

__all__ = [
    "COPY_ON_WRITE", "DELETE_MODE", "MERGE_ON_READ", "MODE_DEFAULT", "UPDATE_MODE", "DeleteResult",
    "delete_rows", "position_delete_file", "row_delete_updates", "write_mode",
]

MERGE_ON_READ = "merge-on-read"
COPY_ON_WRITE = "copy-on-write"
#: RD1: Iceberg's table properties of the modes.
DELETE_MODE = "write.delete.mode"
UPDATE_MODE = "write.update.mode"
#: RD1: the mode of a table that sets no property.
MODE_DEFAULT = MERGE_ON_READ
#: RD2: the reserved field ids of a position delete file's columns (Iceberg spec).
PATH_FIELD_ID = 2147483546
POS_FIELD_ID = 2147483545


def write_mode(metadata: TableMetadata, statement: str, table: str = "") -> str:
    """RD1: ``MERGE_ON_READ`` or ``COPY_ON_WRITE`` for a ``statement`` ("delete" or
    "update") on the table of ``metadata`` (``table``: its name, for errors)."""
    key = UPDATE_MODE if statement == "update" else DELETE_MODE
    raw = metadata.properties.get(key)
    mode = MODE_DEFAULT if raw is None else raw.strip().lower()
    if mode not in (MERGE_ON_READ, COPY_ON_WRITE):
        raise ProgrammingError(
            f"table {table or metadata.location}: {key} is {raw!r}; it must be {MERGE_ON_READ!r} or {COPY_ON_WRITE!r}"
        )
    if metadata.format_version != 2:
        return COPY_ON_WRITE  # v1: no delete files; v3: deletion vectors only (not written here)
    return mode


@dataclass
class DeleteResult:
    """What one merge-on-read statement committed."""

    deleted_rows: int = 0
    delete_files: list[str] = field(default_factory=list)
    added_files: list[str] = field(default_factory=list)
    #: RD5: what each written delete file holds: (its location, [(data file path as its
    #: manifest names it, the positions deleted there: an Arrow array)]).
    written: list[tuple[str, list[tuple[str, Any]]]] = field(default_factory=list)
    snapshot_id: int | None = None
    metadata_location: str | None = None


def _position_schema() -> Any:
    import pyarrow as pa

    return pa.schema([
        pa.field("file_path", pa.string(), nullable=False, metadata={"PARQUET:field_id": str(PATH_FIELD_ID)}),
        pa.field("pos", pa.int64(), nullable=False, metadata={"PARQUET:field_id": str(POS_FIELD_ID)}),
    ])  # fmt: skip


def position_delete_file(
    io: FileIO,
    metadata: TableMetadata,
    deleted: Sequence[tuple[DataFile, Any]],
    location: str,
) -> DataFile:
    """RD2: write the position delete file at ``location`` deleting, for each
    (data file, positions) of ``deleted`` (data files of one spec id and partition;
    positions: a sequence or Arrow array of 0-based row numbers), those rows; its
    DataFile (content position deletes, with the data files' spec id and partition)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ordered = sorted(deleted, key=lambda pair: pair[0].file_path)
    paths: list[Any] = []
    positions: list[Any] = []
    for data_file, rows in ordered:
        if isinstance(rows, pa.ChunkedArray):
            rows = rows.combine_chunks()
        rows = pa.array(rows, pa.int64()) if not isinstance(rows, pa.Array) else rows.cast(pa.int64())
        positions.append(rows.sort())
        paths.append(pa.repeat(pa.scalar(data_file.file_path, pa.string()), len(rows)))
    count = sum(len(p) for p in positions)
    if not count:
        raise ValueError("a position delete file needs at least one row")
    table = pa.Table.from_arrays(
        [pa.concat_arrays(paths), pa.concat_arrays(positions)], schema=_position_schema()
    )  # fmt: skip
    codec = metadata.properties.get(TableProperties.PARQUET_COMPRESSION, TableProperties.PARQUET_COMPRESSION_DEFAULT)
    sink = _bytes_io.BytesIO()
    # The paths repeat (a dictionary); the sorted positions are small deltas: for 10,000
    # positions 1.5 KB instead of 33 KB, written in half the CPU.
    pq.write_table(
        table, sink, compression=None if codec == "uncompressed" else codec,
        use_dictionary=["file_path"], column_encoding={"pos": "DELTA_BINARY_PACKED"},
    )  # fmt: skip
    data = sink.getvalue()
    with io.new_output(location).create() as out:
        out.write(data)
    first, last = ordered[0][0], ordered[-1][0]
    low = min(int(p[0].as_py()) for p in positions if len(p))
    high = max(int(p[-1].as_py()) for p in positions if len(p))
    delete_file = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=location,
        file_format=FileFormat.PARQUET,
        partition=first.partition,
        record_count=count,
        file_size_in_bytes=len(data),
        value_counts={PATH_FIELD_ID: count, POS_FIELD_ID: count},
        null_value_counts={PATH_FIELD_ID: 0, POS_FIELD_ID: 0},
        lower_bounds={PATH_FIELD_ID: first.file_path.encode("utf-8"), POS_FIELD_ID: low.to_bytes(8, "little", signed=True)},
        upper_bounds={PATH_FIELD_ID: last.file_path.encode("utf-8"), POS_FIELD_ID: high.to_bytes(8, "little", signed=True)},
    )  # fmt: skip
    delete_file.spec_id = first.spec_id or 0
    return delete_file


def _partition_key(data_file: DataFile) -> tuple:
    partition = data_file.partition
    return (data_file.spec_id or 0, tuple(partition) if partition is not None else ())


def row_delete_updates(
    metadata: TableMetadata,
    io: FileIO,
    parent: Snapshot,
    snapshot_id: int,
    delete_files: Sequence[DataFile],
    added: Sequence[DataFile],
) -> tuple[TableUpdate, ...]:
    """RD3: the updates of the snapshot on ``parent`` (the head of main in ``metadata``)
    that adds the position delete files ``delete_files`` and the data files ``added``
    (written in the table's current spec)."""
    provider = load_location_provider(metadata.location, metadata.properties)
    commit_uuid = uuid.uuid4()
    schema = metadata.schema()
    specs = metadata.specs()
    collector = SnapshotSummaryCollector()
    written: list[ManifestFile] = []
    by_spec: dict[int, list[DataFile]] = {}
    for delete_file in delete_files:
        by_spec.setdefault(delete_file.spec_id or 0, []).append(delete_file)
    count = 0

    def entry(data_file: DataFile) -> ManifestEntry:
        return ManifestEntry.from_args(
            status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id, sequence_number=None,
            file_sequence_number=None, data_file=data_file,
        )  # fmt: skip

    for spec_id, files in by_spec.items():
        output = io.new_output(provider.new_metadata_location(f"{commit_uuid}-m{count}.avro"))
        count += 1
        with DeleteManifestWriter(specs[spec_id], schema, output, snapshot_id, "deflate") as writer:
            for delete_file in files:
                collector.add_file(delete_file, schema, specs[spec_id])
                writer.add(entry(delete_file))
        written.append(writer.to_manifest_file())
    if added:
        spec = metadata.spec()
        output = io.new_output(provider.new_metadata_location(f"{commit_uuid}-m{count}.avro"))
        with write_manifest(metadata.format_version, spec, schema, output, snapshot_id, "deflate") as data_writer:
            for data_file in added:
                collector.add_file(data_file, schema, spec)
                data_writer.add(entry(data_file))
        written.append(data_writer.to_manifest_file())
    existing = [m for m in snapshot_manifests(io, parent) if m.has_added_files() or m.has_existing_files()]
    sequence_number = metadata.next_sequence_number()
    manifest_list = provider.new_metadata_location(f"snap-{snapshot_id}-0-{commit_uuid}.avro")
    with write_manifest_list(
        format_version=metadata.format_version,
        output_file=io.new_output(manifest_list),
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent.snapshot_id,
        sequence_number=sequence_number,
        avro_compression="deflate",
    ) as list_writer:
        list_writer.add_manifests(written + existing)
    operation = Operation.OVERWRITE if added else Operation.DELETE
    summary = update_snapshot_summaries(
        Summary(operation, **collector.build()),
        previous_summary=parent.summary.additional_properties if parent.summary else None,
    )
    snapshot = Snapshot(
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent.snapshot_id,
        sequence_number=sequence_number,
        timestamp_ms=max(int(time.time() * 1000), metadata.last_updated_ms + 1),
        manifest_list=manifest_list,
        summary=summary,
        schema_id=metadata.current_schema_id,
    )
    return (
        AddSnapshotUpdate(snapshot=snapshot),
        SetSnapshotRefUpdate(ref_name=MAIN_BRANCH, type=SnapshotRefType.BRANCH, snapshot_id=snapshot_id),
    )


def _write_rows(table: Any, rows: Any, write_uuid: uuid.UUID) -> list[DataFile]:
    """An UPDATE's new rows (an Arrow table in the table's schema) as data files of the
    table's current spec (writing W8: split by partition where it has one)."""
    from .writing import write_data_files

    if rows is None or not rows.num_rows:
        return []
    return list(write_data_files(table, rows, write_uuid))


def delete_rows(table: Any, deleted: Sequence[tuple[DataFile, Any]], rows: Any = None) -> DeleteResult:
    """Delete the rows at the given positions of ``table``'s data files (each a live
    DataFile of its current snapshot, with its 0-based row numbers) and add ``rows``
    (an Arrow table in the table's schema, or None), as one snapshot committed through
    the table's catalog (RD2-RD4); the table object is refreshed with the committed
    metadata. Nothing is committed when there is nothing to delete or add."""
    metadata: TableMetadata = table.metadata
    parent = metadata.current_snapshot()
    deleted = [(f, p) for f, p in deleted if len(p)]
    if parent is None or (not deleted and (rows is None or not rows.num_rows)):
        if deleted:
            raise ProgrammingError(f"table {'.'.join(table.name())}: it has no snapshot to delete rows from")
        return DeleteResult()
    io: FileIO = table.io
    write_uuid = uuid.uuid4()
    provider = load_location_provider(metadata.location, metadata.properties)
    groups: dict[tuple, list[tuple[DataFile, Any]]] = {}
    for pair in deleted:
        groups.setdefault(_partition_key(pair[0]), []).append(pair)
    delete_files = [
        position_delete_file(io, metadata, group, provider.new_data_location(f"{write_uuid}-deletes-{n}.parquet"))
        for n, group in enumerate(groups.values())
    ]  # fmt: skip
    added = _write_rows(table, rows, write_uuid)
    snapshot_id = metadata.new_snapshot_id()
    updates = row_delete_updates(metadata, io, parent, snapshot_id, delete_files, added)
    requirements: tuple[TableRequirement, ...] = (
        AssertTableUUID(uuid=metadata.table_uuid),
        AssertRefSnapshotId(ref=MAIN_BRANCH, snapshot_id=parent.snapshot_id),
    )
    response = table.catalog.commit_table(table, requirements, updates)
    table.metadata = response.metadata
    table.metadata_location = response.metadata_location
    return DeleteResult(
        deleted_rows=sum(len(p) for _, p in deleted),
        delete_files=[f.file_path for f in delete_files],
        added_files=[f.file_path for f in added],
        written=[
            (f.file_path, [(data_file.file_path, rows) for data_file, rows in group])
            for f, group in zip(delete_files, groups.values())
        ],
        snapshot_id=snapshot_id,
        metadata_location=response.metadata_location,
    )
