"""How this package writes a table's data files (SQL and Spark alike).

Rules:

  W1 Row groups: a data file's Parquet row groups hold at most ``ROW_GROUP_ROWS`` rows,
     unless the table sets ``write.parquet.row-group-limit`` itself (then that). DuckDB
     scans a file's row groups in parallel, one per thread, and so do Spark and PyArrow's
     dataset reader; PyIceberg's default limit (1,048,576 rows) makes a file of a million
     rows one row group, which one thread reads. 122,880 is DuckDB's own row group size.
  W2 Only the files change: the table's stored metadata keeps its own properties (the
     lakehouse definition's, SPEC 8); W1's limit is applied when files are written.
  W3 A file's rows come in the order given; files are cut at the table's target file
     size (``write.target-file-size-bytes``), as PyIceberg's own append cuts them.
  W4 A PyIceberg transaction on a table of this package's catalog (a
     :class:`LakehouseTable`: SQL's writes, and PyIceberg users' ``append``,
     ``overwrite``, ``delete``) computes its metadata once per staged state. PyIceberg
     0.12's ``Transaction.table_metadata`` replays the staged updates and deep-copies
     the whole metadata, snapshot list included, at every read, and one append reads it
     14 times: an INSERT's cost grew with the table's history (apache/iceberg-python
     #3302 and #3784 propose this same cache).
     The cache is keyed on the identity of the table's metadata and of the tuple of
     staged updates, both replaced (never mutated) by PyIceberg when they change, so a
     stale state is never returned; the metadata models are immutable, so sharing one
     copy between reads changes nothing but the time. The state is computed by
     :func:`~.tables.apply_updates`, without PyIceberg's deep copy of the whole metadata
     (tables M8): with no staged update it is the table's own metadata.
  W5 Appends merge manifests (Iceberg's merge-append): a table's appends (SQL INSERT,
     PyIceberg's ``append``, and :func:`new_append`) list the new manifest beside the
     parent's until a bin of manifests (``commit.manifest.target-size-bytes``, 8 MiB)
     counts ``commit.manifest.min-count-to-merge`` (default 100) of them, then write
     them as one manifest, so after N one-row commits a snapshot lists at most about
     100 manifests instead of N. ``commit.manifest-merge.enabled`` defaults to true on
     this catalog's tables, as in Iceberg's Java library (PyIceberg's own default is
     false); a table that sets it keeps its choice. An explicit ``fast_append()`` never
     merges. The merged manifest lists the parent's files as EXISTING entries: time
     travel reads older snapshots through their own manifest lists, unchanged.
  W6 Snapshot producers of these transactions read the parent's manifest list and the
     manifests they merge through :mod:`.manifests` (decoded once per process, MF1,
     MF2) instead of PyIceberg's readers, which resolve each file's Avro schema again,
     and write their manifests and manifest list with :mod:`.manifest_writers` (MW1,
     MW3: the same bytes, the Avro writer set-up built once per table schema and spec).
  W7 An overwrite that names the data files it deletes (``delete_data_file``: SQL's
     UPDATE and DELETE) reads only the manifests that list one of them (manifests MF5):
     every other manifest is carried over as it is, as PyIceberg carries over a
     manifest that holds none of them. PyIceberg's own overwrite decoded every manifest
     of the snapshot twice (once for what it keeps, once for what it deletes). An
     overwrite by filter (PyIceberg's ``overwrite(df, filter)``, ``delete``) is
     PyIceberg's own.
  W8 (issue 36) Rows written to a partitioned table (:func:`write_data_files`: SQL's
     INSERT, CTAS, UPDATE and DELETE) are split by the table's current partition spec
     (PyIceberg's transforms, the same split PyIceberg's own append makes): every data
     file holds the rows of one partition and carries its partition value, and each
     partition's rows are cut into files as W3 cuts them. A file written earlier keeps
     the spec it was written with (its ``spec_id``); a position delete file refers to a
     data file of its own spec and partition (the data file's ``spec_id`` and
     ``partition``).
  W9 (issue 34) Data files are written by :func:`write_files`: PyIceberg 0.12's
     ``write_file`` with what depends only on the table's schema and properties built
     once per (schema, properties) and reused (at most ``SETUPS`` kept): the file
     schema (``sanitize_column_names``), the statistics plan
     (``compute_statistics_plan``) and the Parquet-path-to-field-id mapping
     (``parquet_path_to_id_mapping``) that PyIceberg's ``ParquetFormatWriter.close``
     computes again for every file, and PyIceberg's configuration flag
     ``downcast-ns-timestamp-to-us-on-write`` (PyIceberg reads its configuration file
     and environment again for every file; here when the set-up is built). A single
     file is written on the calling thread (PyIceberg hands even one to its thread
     pool). Everything else is PyIceberg's, called as its ``write_file`` calls it: the
     projection to the file schema with field ids, the file name and location, pyarrow's
     ``ParquetWriter`` with the table's codec and writer options, the statistics from
     the footer (``data_file_statistics_from_parquet_metadata``), the DataFile. The same
     DataFile and the same file (tests/iceberg/test_write_files.py compares them with
     ``write_file``'s on random schemas, properties and rows, and fails when PyIceberg's
     copied functions change), but for W10's encoding. A table whose
     ``write.format.default`` is not Parquet is written by PyIceberg's ``write_file``
     itself.
  W10 (issue 34) A data file's column keeps its Parquet dictionary only where the
     dictionary pays on the file's first page of values, as Iceberg's reference writer
     (parquet-mr) decides (iceberg.encodings PE1, PE2): the same rows, schema and
     statistics; only the encoding-dependent sizes and offsets differ from
     ``write_file``'s, and nothing at all when every column's dictionary pays and the
     file is one page. A file of more than one page carries Parquet's page index
     (PE4). A table that sets ``write.parquet.integer-encoding = delta`` gets its
     integer columns without a dictionary DELTA_BINARY_PACKED (PE3).
  W11 (issue 34) A set-up (W9) also keeps, for up to ``PROJECTIONS`` Arrow schemas of
     the batches given (metadata included), the Arrow schema PyIceberg's projection to
     the file schema (``_to_requested_schema``) gave a batch of that schema, when that
     projection only relabeled it: every column of a primitive type (no struct, list,
     map or dictionary), its array the batch's own (the same buffers, offset and
     length), the task's schema the set-up's. PyIceberg's projection of a primitive
     column depends on the types alone (a cast, or the array as it is), so a later
     batch of the same schema is relabeled with the kept schema (the same record batch
     the projection makes) instead of projected again (~0.2 ms a file of four columns).
     Anything else is projected by PyIceberg at every batch.
  W12 (issue 34) An append producer's manifests (W6's producers) are PyIceberg 0.12's
     ``_SnapshotProducer._manifests``, whose three parts (the new manifest, the delete
     manifest, the parent's manifests) PyIceberg hands to its thread pool, with one
     change: when nothing is deleted and the parent's manifest list is already decoded
     (manifests MF2, MF6: no file to read), the parts run on the calling thread, in
     PyIceberg's order, with PyIceberg's result: there is then at most one file to
     write and nothing to overlap it with, and the hand-offs cost more than the work
     (~0.4 ms of process CPU of a one-row INSERT). Otherwise the pool runs them.
  W13 (issue 34) The rows of a small data file :func:`write_files` wrote (at most
     ``KEPT_FILE_ROWS`` rows and ``KEPT_FILE_BYTES`` bytes of Arrow buffers, columns of
     primitive types only: a read names a map's entries as Arrow does) are kept
     per process, as written (the Arrow table handed to the Parquet writer: the same
     values, types and field ids a read of the file gives), under the file's canonical
     location and its size, once the file is completely written; at most
     ``KEPT_ROWS_BYTES`` in all, the least recently kept or used first out.
     :func:`kept_rows` gives them to compaction CP9, which then reads no file for them
     (a data file is never rewritten under its location: the rows are the file's).
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from typing import Any, Callable, Iterator

from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.manifest import DataFileContent, ManifestEntry, ManifestEntryStatus, ManifestFile
from pyiceberg.table import DataScan, Table, TableProperties, Transaction
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import UpdateSnapshot, _FastAppendFiles, _MergeAppendFiles, _OverwriteFiles
from pyiceberg.typedef import EMPTY_DICT, Properties
from pyiceberg.utils.properties import property_as_bool

from .encodings import column_options, delta_integers
from .manifests import live_data_paths, manifest_entries, manifests_kept, snapshot_manifests
from .manifest_writers import write_manifest, write_manifest_list
from ..storage.locations import canonical_location
from .tables import Confinement, ConfinedScan, apply_updates

__all__ = ["KEPT_FILE_BYTES", "KEPT_FILE_ROWS", "KEPT_ROWS_BYTES", "LakehouseTable",
           "MANIFEST_MERGE_DEFAULT", "PROJECTIONS", "ROW_GROUP_ROWS", "SETUPS", "for_writing", "kept_rows",
           "kept_rows_bytes", "merges_manifests", "new_append", "write_data_files", "write_files",
           "write_partitioned", "write_unpartitioned"]

#: W1: the most rows in one row group of a data file written here.
ROW_GROUP_ROWS = 122_880
#: W5: ``commit.manifest-merge.enabled`` of a table that does not set it (Iceberg Java's default).
MANIFEST_MERGE_DEFAULT = True


def merges_manifests(properties: Properties) -> bool:
    """W5: whether appends to a table with these properties merge manifests."""
    return property_as_bool(properties, TableProperties.MANIFEST_MERGE_ENABLED, MANIFEST_MERGE_DEFAULT)


def new_append(transaction: Transaction) -> Any:
    """The snapshot producer of an append in ``transaction``: a merge-append where the
    table merges manifests (W5), else a fast append; with W6's reads on a table of this
    package's catalog."""
    update = transaction.update_snapshot()
    return update.merge_append() if merges_manifests(transaction.table_metadata.properties) else update.fast_append()


def for_writing(metadata: TableMetadata) -> TableMetadata:
    """``metadata`` as data files are to be written by it (W1, W2): the table's own
    properties, with ``ROW_GROUP_ROWS`` as the row-group limit where the table sets none.
    Pass it to PyIceberg's ``write_file``; never commit it."""
    if TableProperties.PARQUET_ROW_GROUP_LIMIT in metadata.properties:
        return metadata
    properties = {**metadata.properties, TableProperties.PARQUET_ROW_GROUP_LIMIT: str(ROW_GROUP_ROWS)}
    return metadata.model_copy(update={"properties": properties})


def write_unpartitioned(table: Any, rows: Any, write_uuid: uuid.UUID) -> Iterator[Any]:
    """Write ``rows`` (a PyArrow table in ``table``'s Iceberg schema) as data files of
    the unpartitioned PyIceberg ``table`` (W1, W3); the DataFiles to add to a snapshot."""
    from pyiceberg.io.pyarrow import bin_pack_arrow_table
    from pyiceberg.table import WriteTask

    if not rows.num_rows:
        return iter(())
    target_size = int(table.properties.get(
        TableProperties.WRITE_TARGET_FILE_SIZE_BYTES, TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT
    ))  # fmt: skip
    tasks = (
        WriteTask(write_uuid=write_uuid, task_id=i, schema=table.schema(), record_batches=batches)
        for i, batches in enumerate(bin_pack_arrow_table(rows, target_size))
    )
    return write_files(table.io, for_writing(table.metadata), tasks)


def write_data_files(table: Any, rows: Any, write_uuid: uuid.UUID) -> Iterator[Any]:
    """Write ``rows`` (a PyArrow table in ``table``'s Iceberg schema) as data files of
    the PyIceberg ``table`` in its current partition spec (W8; W1, W3 per partition);
    the DataFiles to add to a snapshot."""
    if table.spec().is_unpartitioned():
        return write_unpartitioned(table, rows, write_uuid)
    return write_partitioned(table.io, table.metadata, rows, write_uuid)


def write_partitioned(io: Any, metadata: TableMetadata, rows: Any, write_uuid: uuid.UUID, first_task: int = 0) -> Iterator[Any]:
    """W8 for a table of ``metadata`` (its current spec) written through ``io``: ``rows``
    split by partition, each partition's rows cut into files of the target size; tasks
    numbered from ``first_task`` (unique per ``write_uuid``: a file's name holds it)."""
    from pyiceberg.io.pyarrow import _determine_partitions, bin_pack_arrow_table
    from pyiceberg.table import WriteTask

    if not rows.num_rows:
        return iter(())
    target_size = int(metadata.properties.get(
        TableProperties.WRITE_TARGET_FILE_SIZE_BYTES, TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT
    ))  # fmt: skip
    schema = metadata.schema()
    spec = metadata.spec()
    tasks = []
    for part in _determine_partitions(spec, schema, rows):
        for batches in bin_pack_arrow_table(part.arrow_table_partition, target_size):
            tasks.append(WriteTask(
                write_uuid=write_uuid, task_id=first_task + len(tasks), schema=schema, record_batches=batches,
                partition_key=part.partition_key,
            ))  # fmt: skip
    return write_files(io, for_writing(metadata), iter(tasks))


#: W9: how many (schema, properties) set-ups are kept.
SETUPS = 32


class _Setup:
    """W9: what writing a data file of one table schema and properties needs, built once."""

    __slots__ = ("schema", "file_schema", "file_format", "format_model", "downcast", "plan", "mapping", "projections")

    def __init__(self, schema: Any, properties: Properties) -> None:
        from pyiceberg.io.fileformat import FileFormatFactory
        from pyiceberg.io.pyarrow import compute_statistics_plan, parquet_path_to_id_mapping
        from pyiceberg.manifest import FileFormat
        from pyiceberg.schema import sanitize_column_names
        from pyiceberg.table import DOWNCAST_NS_TIMESTAMP_TO_US_ON_WRITE
        from pyiceberg.utils.config import Config

        self.schema = schema
        self.file_format = FileFormat(
            properties.get(TableProperties.WRITE_FILE_FORMAT, TableProperties.WRITE_FILE_FORMAT_DEFAULT)
        )
        self.format_model = FileFormatFactory.get(self.file_format)
        sanitized = sanitize_column_names(schema)
        self.file_schema = sanitized if sanitized != schema else schema
        self.downcast = Config().get_bool(DOWNCAST_NS_TIMESTAMP_TO_US_ON_WRITE) or False
        self.plan = compute_statistics_plan(self.file_schema, properties)
        self.mapping = parquet_path_to_id_mapping(self.file_schema)
        #: W11: (batch Arrow schema, projected Arrow schema) of projections that only relabel.
        self.projections: list[tuple[Any, Any]] = []


_setups: OrderedDict[tuple, _Setup] = OrderedDict()
_setups_lock = threading.Lock()


def _setup(metadata: TableMetadata) -> _Setup:
    """W9: the set-up of ``metadata``'s current schema and properties (built once, kept
    while it is among the ``SETUPS`` most recently used)."""
    schema = metadata.schema()
    key = (schema.schema_id, tuple(sorted(metadata.properties.items())))
    with _setups_lock:
        found = _setups.get(key)
        if found is not None:
            _setups.move_to_end(key)
    if found is not None and found.schema == schema:
        return found
    found = _Setup(schema, metadata.properties)
    with _setups_lock:
        _setups[key] = found
        _setups.move_to_end(key)
        while len(_setups) > SETUPS:
            _setups.popitem(last=False)
    return found


#: W11: how many batch schemas' projections a set-up keeps.
PROJECTIONS = 8


def _projected(setup: _Setup, task_schema: Any, batch: Any) -> Any:
    """PyIceberg's ``_to_requested_schema`` of ``batch`` (rows of ``task_schema``) to the
    file schema of ``setup``, as ``write_file`` calls it; W11's relabeling when kept."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import _to_requested_schema

    own = task_schema is setup.schema or task_schema == setup.schema
    if own:
        for given, projected in setup.projections:
            if batch.schema.equals(given, check_metadata=True):
                return pa.RecordBatch.from_arrays(batch.columns, schema=projected)
    result = _to_requested_schema(
        requested_schema=setup.file_schema,
        file_schema=task_schema,
        batch=batch,
        downcast_ns_timestamp_to_us=setup.downcast,
        include_field_ids=True,
        format_model=setup.format_model,
    )
    if own and len(setup.projections) < PROJECTIONS and _relabeled(batch, result):
        with _setups_lock:
            if len(setup.projections) < PROJECTIONS:
                setup.projections.append((batch.schema, result.schema))
    return result


def _relabeled(batch: Any, result: Any) -> bool:
    """W11: whether ``result`` holds ``batch``'s own arrays, each of a primitive type."""
    import pyarrow as pa

    if result.num_columns != batch.num_columns or result.num_rows != batch.num_rows:
        return False
    for i in range(batch.num_columns):
        given, made = batch.column(i), result.column(i)
        kind = given.type
        if kind.num_fields or pa.types.is_dictionary(kind) or isinstance(kind, pa.ExtensionType) or made.type != kind:
            return False
        if (made.offset, len(made), made.null_count) != (given.offset, len(given), given.null_count):
            return False
        if [b.address if b is not None else None for b in made.buffers()] != [
                b.address if b is not None else None for b in given.buffers()]:  # fmt: skip
            return False
    return True


#: W13: the rows of a data file are kept when it has at most this many rows...
KEPT_FILE_ROWS = 10_000
#: ... and its Arrow buffers at most this many bytes;
KEPT_FILE_BYTES = 1 << 20
#: ... and all kept rows together at most this many bytes.
KEPT_ROWS_BYTES = 16 << 20

_kept: OrderedDict[tuple[str, int], Any] = OrderedDict()
_kept_lock = threading.Lock()
_kept_bytes = 0


def _keep_rows(location: str, size: int, rows: Any) -> None:
    """W13: keep ``rows``, the whole content of the data file at ``location`` of
    ``size`` bytes just written, if it is small."""
    global _kept_bytes
    import pyarrow as pa
    if rows.num_rows > KEPT_FILE_ROWS or any(
            field.type.num_fields or pa.types.is_dictionary(field.type) for field in rows.schema):  # fmt: skip
        return  # large, or a nested column (a read names a map's entries as Arrow does, not as written)
    nbytes = rows.get_total_buffer_size()  # what it holds alive, a slice's whole buffers included
    if nbytes > KEPT_FILE_BYTES:
        return
    key = (canonical_location(location), size)
    with _kept_lock:
        old = _kept.pop(key, None)
        if old is not None:
            _kept_bytes -= old[0]
        _kept[key] = (nbytes, rows)
        _kept_bytes += nbytes
        while _kept_bytes > KEPT_ROWS_BYTES and _kept:
            _, (evicted, _) = _kept.popitem(last=False)
            _kept_bytes -= evicted


def kept_rows(location: str, size: int) -> Any | None:
    """W13: the rows of the data file at ``location`` of ``size`` bytes, as a read of it
    gives them, when this process wrote it and kept them; None otherwise."""
    key = (canonical_location(location), size)
    with _kept_lock:
        found = _kept.get(key)
        if found is None:
            return None
        _kept.move_to_end(key)
        return found[1]


def kept_rows_bytes() -> int:
    """W13: the bytes of Arrow buffers the kept rows hold."""
    return _kept_bytes


def _planned_writer_class() -> Any:
    from pyiceberg.io.pyarrow import ParquetFormatWriter, data_file_statistics_from_parquet_metadata

    class PlannedParquetWriter(ParquetFormatWriter):
        """PyIceberg's ParquetFormatWriter whose ``close`` takes W9's plan and mapping."""

        def __init__(self, output_file: Any, setup: _Setup, properties: Properties) -> None:
            super().__init__(output_file, setup.file_schema, properties)
            self._setup = setup

        def write(self, table: Any) -> None:
            """PyIceberg's ``write``, with W10's encodings decided on the first table."""
            if self._writer is None:
                kwargs = self._parquet_writer_kwargs
                options = column_options(table, kwargs["write_batch_size"], delta_integers(self._properties),
                                         kwargs["data_page_size"])  # fmt: skip
                if options:
                    self._parquet_writer_kwargs = {**self._parquet_writer_kwargs, **options}
            super().write(table)

        def close(self) -> Any:
            """PyIceberg 0.12.0's ``ParquetFormatWriter.close``, line for line, with the
            statistics plan and path mapping of W9's set-up (tied to PyIceberg's source by
            tests/iceberg/test_write_files.py)."""
            if self._result is not None:
                return self._result
            if self._writer is None or self._fos is None:
                raise ValueError("Cannot close a writer that was never written to")
            with self._fos:
                self._writer.close()
                self._result = data_file_statistics_from_parquet_metadata(
                    parquet_metadata=self._writer.writer.metadata,
                    stats_columns=self._setup.plan,
                    parquet_column_mapping=self._setup.mapping,
                )
            return self._result

    return PlannedParquetWriter


_planned_writer: Any = None


def write_files(io: Any, metadata: TableMetadata, tasks: Iterator[Any]) -> Iterator[Any]:
    """W9: PyIceberg's ``write_file(io, metadata, tasks)``: the DataFiles of ``tasks``
    (PyIceberg WriteTasks) written as data files of the table of ``metadata``."""
    global _planned_writer
    import pyarrow as pa
    from pyiceberg.io.pyarrow import write_file
    from pyiceberg.manifest import DataFile, FileFormat
    from pyiceberg.table.locations import load_location_provider
    from pyiceberg.typedef import Record
    from pyiceberg.utils.concurrent import ExecutorFactory

    setup = _setup(metadata)
    if setup.file_format != FileFormat.PARQUET:
        return write_file(io, metadata, tasks)
    if _planned_writer is None:
        _planned_writer = _planned_writer_class()
    writer_class = _planned_writer
    location_provider = load_location_provider(table_location=metadata.location, table_properties=metadata.properties)

    def write_data_file(task: Any) -> DataFile:
        # PyIceberg 0.12.0's write_file.write_data_file with W9's set-up
        batches = [_projected(setup, task.schema, batch) for batch in task.record_batches]  # W11
        arrow_table = pa.Table.from_batches(batches)
        file_path = location_provider.new_data_location(
            data_file_name=task.generate_data_file_filename(setup.format_model.file_extension()),
            partition_key=task.partition_key,
        )
        fo = io.new_output(file_path)
        writer = writer_class(fo, setup, metadata.properties)
        with writer:
            writer.write(arrow_table)
        statistics = writer.result()
        _keep_rows(file_path, len(fo), arrow_table)  # W13: the file is complete
        return DataFile.from_args(
            content=DataFileContent.DATA,
            file_path=file_path,
            file_format=setup.file_format,
            partition=task.partition_key.partition if task.partition_key else Record(),
            file_size_in_bytes=len(fo),
            sort_order_id=None,
            spec_id=metadata.default_spec_id,
            equality_ids=None,
            key_metadata=None,
            **statistics.to_serialized_dict(),
        )

    tasks = list(tasks)
    if len(tasks) == 1:  # W9: on this thread
        return iter([write_data_file(tasks[0])])
    return iter(ExecutorFactory.get_or_create().map(write_data_file, tasks))


class _CachedReads:
    """W6 for PyIceberg's append producers: the parent's manifest list and the manifests
    a merge rewrites are read through :mod:`.manifests` (mixed in before PyIceberg's class)."""

    def _existing_manifests(self: Any) -> list[ManifestFile]:
        """PyIceberg's ``_FastAppendFiles._existing_manifests``, reading through W6."""
        parent_id = self._parent_snapshot_id
        if parent_id is None:
            return []
        parent = self._transaction.table_metadata.snapshot_by_id(parent_id)
        if parent is None:
            raise ValueError(f"Snapshot could not be found: {parent_id}")
        return [
            m for m in snapshot_manifests(self._io, parent)
            if m.has_added_files() or m.has_existing_files() or m.added_snapshot_id == self.snapshot_id
        ]  # fmt: skip

    def fetch_manifest_entry(self: Any, manifest: ManifestFile, discard_deleted: bool = True) -> list[ManifestEntry]:
        return manifest_entries(self._io, manifest, discard_deleted)

    def _manifests(self: Any) -> list[ManifestFile]:
        """PyIceberg 0.12.0's ``_SnapshotProducer._manifests``, line for line, but for
        W12's parts on this thread (tests/iceberg/test_manifest_writers.py fails when
        PyIceberg's method changes, so this copy is reviewed with it)."""
        from collections import defaultdict

        from pyiceberg.utils.concurrent import ExecutorFactory

        def _write_added_manifest() -> list[ManifestFile]:
            if self._added_data_files:
                with self.new_manifest_writer(
                    spec=self._transaction.table_metadata.spec(),
                ) as writer:
                    for data_file in self._added_data_files:
                        writer.add(
                            ManifestEntry.from_args(
                                status=ManifestEntryStatus.ADDED,
                                snapshot_id=self._snapshot_id,
                                sequence_number=None,
                                file_sequence_number=None,
                                data_file=data_file,
                            )
                        )
                return [writer.to_manifest_file()]
            else:
                return []

        def _write_delete_manifest() -> list[ManifestFile]:
            if len(deleted_entries) > 0:
                deleted_manifests = []
                partition_groups: dict[int, list[ManifestEntry]] = defaultdict(list)
                for deleted_entry in deleted_entries:
                    partition_groups[deleted_entry.data_file.spec_id].append(deleted_entry)
                for spec_id, entries in partition_groups.items():
                    with self.new_manifest_writer(self.spec(spec_id)) as writer:
                        for entry in entries:
                            writer.add_entry(entry)
                    deleted_manifests.append(writer.to_manifest_file())
                return deleted_manifests
            else:
                return []

        # Updates self._predicate with computed partition predicate for manifest pruning
        self._build_delete_files_partition_predicate()
        # Plan deletes before starting manifest writers so validation failures do not leave orphaned manifests
        deleted_entries = self._deleted_entries()

        if not deleted_entries and self._parent_read():  # W12: nothing to overlap
            return self._process_manifests(_write_added_manifest() + self._existing_manifests())  # W12

        executor = ExecutorFactory.get_or_create()

        added_manifests = executor.submit(_write_added_manifest)
        delete_manifests = executor.submit(_write_delete_manifest)
        existing_manifests = executor.submit(self._existing_manifests)

        return self._process_manifests(added_manifests.result() + delete_manifests.result() + existing_manifests.result())

    def _parent_read(self: Any) -> bool:
        """W12: whether the parent's manifest list is decoded already (or there is none)."""
        parent_id = self._parent_snapshot_id
        if parent_id is None:
            return True
        parent = self._transaction.table_metadata.snapshot_by_id(parent_id)
        return parent is None or manifests_kept(parent)

    def _commit(self: Any) -> Any:
        """PyIceberg 0.12.0's ``_SnapshotProducer._commit``, line for line, with the
        manifest list written by :mod:`.manifest_writers` (MW3: the same bytes, its Avro
        set-up built once). tests/iceberg/test_manifest_writers.py fails when PyIceberg's
        method changes, so this copy is reviewed with it."""
        from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate
        from pyiceberg.table.refs import SnapshotRefType
        from pyiceberg.table.snapshots import Snapshot
        from pyiceberg.table.update.snapshot import _new_manifest_list_file_name

        new_manifests = self._manifests()
        next_sequence_number = self._transaction.table_metadata.next_sequence_number()

        summary = self._summary(self.snapshot_properties)
        file_name = _new_manifest_list_file_name(
            snapshot_id=self._snapshot_id,
            attempt=0,
            commit_uuid=self.commit_uuid,
        )
        location_provider = self._transaction.table_location_provider()
        manifest_list_file_path = location_provider.new_metadata_location(file_name)
        self._written_manifest_lists.append(manifest_list_file_path)

        with write_manifest_list(
            format_version=self._transaction.table_metadata.format_version,
            output_file=self._io.new_output(manifest_list_file_path),
            snapshot_id=self._snapshot_id,
            parent_snapshot_id=self._parent_snapshot_id,
            sequence_number=next_sequence_number,
            avro_compression=self._compression,
        ) as writer:
            writer.add_manifests(new_manifests)

        first_row_id: int | None = None

        if self._transaction.table_metadata.format_version >= 3:
            first_row_id = self._transaction.table_metadata.next_row_id

        snapshot = Snapshot(
            snapshot_id=self._snapshot_id,
            parent_snapshot_id=self._parent_snapshot_id,
            manifest_list=manifest_list_file_path,
            sequence_number=next_sequence_number,
            summary=summary,
            schema_id=self._transaction.table_metadata.current_schema_id,
            first_row_id=first_row_id,
        )

        add_snapshot_update = AddSnapshotUpdate(snapshot=snapshot)

        if self._target_branch is None:
            return (
                (add_snapshot_update,),
                (),
            )
        else:
            return (
                (
                    add_snapshot_update,
                    SetSnapshotRefUpdate(
                        snapshot_id=self._snapshot_id,
                        parent_snapshot_id=self._parent_snapshot_id,
                        ref_name=self._target_branch,
                        type=SnapshotRefType.BRANCH,
                    ),
                ),
                (
                    AssertRefSnapshotId(
                        snapshot_id=self._transaction.table_metadata.refs[self._target_branch].snapshot_id
                        if self._target_branch in self._transaction.table_metadata.refs
                        else None,
                        ref=self._target_branch,
                    ),
                ),
            )

    def new_manifest_writer(self: Any, spec: Any) -> Any:
        """PyIceberg's ``_SnapshotProducer.new_manifest_writer`` with the Avro set-up
        built once per table schema and spec (manifest_writers MW1)."""
        return write_manifest(
            format_version=self._transaction.table_metadata.format_version, spec=spec, schema=self.schema(),
            output_file=self.new_manifest_output(), snapshot_id=self._snapshot_id, avro_compression=self._compression,
        )  # fmt: skip


class _FastAppend(_CachedReads, _FastAppendFiles):
    """PyIceberg's fast append with W6's reads."""


class _MergeAppend(_CachedReads, _MergeAppendFiles):
    """PyIceberg's merge-append with W5's default and W6's reads."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._merge_enabled = merges_manifests(self._transaction.table_metadata.properties)


class _Overwrite(_CachedReads, _OverwriteFiles):
    """PyIceberg's overwrite with W6's reads, reading only the manifests that hold a
    file it deletes (W7)."""

    def _touches(self, manifest: ManifestFile, evaluators: dict[int, Any], deleted: set[str]) -> bool:
        """Whether ``manifest`` may list a file this overwrite deletes (PyIceberg's
        partition evaluator first, then MF5's paths)."""
        if not evaluators.setdefault(manifest.partition_spec_id, self._build_manifest_evaluator(
                manifest.partition_spec_id))(manifest):  # fmt: skip
            return False
        return bool(deleted) and not deleted.isdisjoint(live_data_paths(self._io, manifest))

    def _existing_manifests(self) -> list[ManifestFile]:
        existing: list[ManifestFile] = []
        snapshot = self._transaction.table_metadata.snapshot_by_name(name=self._target_branch)
        if snapshot is None:
            return existing
        evaluators: dict[int, Any] = {}
        deleted = {f.file_path for f in self._deleted_data_files}
        for manifest in snapshot_manifests(self._io, snapshot):
            if not self._touches(manifest, evaluators, deleted):
                existing.append(manifest)
                continue
            entries = manifest_entries(self._io, manifest, discard_deleted=True)
            kept = [e for e in entries if e.data_file.file_path not in deleted]
            if len(kept) == len(entries):
                existing.append(manifest)
            elif kept:  # rewrite the manifest without the deleted files
                with self.new_manifest_writer(self.spec(manifest.partition_spec_id)) as writer:
                    for entry in kept:
                        writer.add_entry(ManifestEntry.from_args(
                            status=ManifestEntryStatus.EXISTING, snapshot_id=entry.snapshot_id,
                            sequence_number=entry.sequence_number, file_sequence_number=entry.file_sequence_number,
                            data_file=entry.data_file,
                        ))  # fmt: skip
                existing.append(writer.to_manifest_file())
        return existing

    def _deleted_entries(self) -> list[ManifestEntry]:
        found: list[ManifestEntry] = []
        parent = self._parent_snapshot_id
        if parent is not None:
            previous = self._transaction.table_metadata.snapshot_by_id(parent)
            if previous is None:
                raise ValueError(f"Could not find the previous snapshot: {parent}")
            evaluators: dict[int, Any] = {}
            deleted = {f.file_path for f in self._deleted_data_files}
            for manifest in snapshot_manifests(self._io, previous):
                if not self._touches(manifest, evaluators, deleted):
                    continue
                found += [
                    ManifestEntry.from_args(
                        status=ManifestEntryStatus.DELETED, snapshot_id=self.snapshot_id,
                        sequence_number=entry.sequence_number, file_sequence_number=entry.file_sequence_number,
                        data_file=entry.data_file,
                    )
                    for entry in manifest_entries(self._io, manifest, discard_deleted=True)
                    if entry.data_file.content == DataFileContent.DATA and entry.data_file.file_path in deleted
                ]  # fmt: skip
        self._validate_required_deletes(found)
        return found


class _UpdateSnapshot(UpdateSnapshot):
    """PyIceberg's UpdateSnapshot whose appends are W5's and W6's."""

    def fast_append(self) -> _FastAppendFiles:
        return _FastAppend(operation=Operation.APPEND, transaction=self._transaction, io=self._io,
                           branch=self._branch, snapshot_properties=self._snapshot_properties)  # fmt: skip

    def merge_append(self) -> _MergeAppendFiles:
        return _MergeAppend(operation=Operation.APPEND, transaction=self._transaction, io=self._io,
                            branch=self._branch, snapshot_properties=self._snapshot_properties)  # fmt: skip

    def overwrite(self, commit_uuid: Any = None) -> _OverwriteFiles:
        has_head = self._transaction.table_metadata.snapshot_by_name(name=self._branch) is not None
        return _Overwrite(commit_uuid=commit_uuid, operation=Operation.OVERWRITE if has_head else Operation.APPEND,
                          transaction=self._transaction, io=self._io, branch=self._branch,
                          snapshot_properties=self._snapshot_properties)  # fmt: skip


class _OneCopyTransaction(Transaction):
    """PyIceberg's Transaction with W4's cache of ``table_metadata``; the scans of its
    deletes and overwrites refuse a managed table's files outside its location (tables
    M6), so they never copy such a file's rows into the table."""

    def _scan(self, row_filter: str | BooleanExpression = AlwaysTrue(), case_sensitive: bool = True) -> DataScan:
        table = self._table
        metadata = self.table_metadata
        root = getattr(table, "lakehouse_root", None)
        confinement = None if root is None else Confinement(".".join(table.name()), metadata.location, root)
        return ConfinedScan(
            table_metadata=metadata, io=table.io, row_filter=row_filter, case_sensitive=case_sensitive,
            confinement=confinement,
        )  # fmt: skip

    _state: tuple[Any, Any, TableMetadata] | None = None

    def table_location_provider(self) -> Any:
        """The location provider of the table this transaction changes (PyIceberg's
        ``Table.location_provider()``, as its snapshot producers call it; W6's commit)."""
        return self._table.location_provider()

    def update_snapshot(
        self, snapshot_properties: dict[str, str] = EMPTY_DICT, branch: str | None = MAIN_BRANCH
    ) -> UpdateSnapshot:
        return _UpdateSnapshot(self, io=self._table.io, branch=branch, snapshot_properties=snapshot_properties)

    def _append_snapshot_producer(
        self, snapshot_properties: dict[str, str], branch: str | None = MAIN_BRANCH
    ) -> _FastAppendFiles:
        """PyIceberg's choice between merge-append and fast append, with W5's default."""
        update = self.update_snapshot(snapshot_properties=snapshot_properties, branch=branch)
        return update.merge_append() if merges_manifests(self.table_metadata.properties) else update.fast_append()

    @property
    def table_metadata(self) -> TableMetadata:
        base, updates, state = self._table.metadata, self._updates, self._state
        if state is None or state[0] is not base or state[1] is not updates:
            state = self._state = (base, updates, apply_updates(base, updates))
        return state[2]


class LakehouseTable(Table):
    """The PyIceberg Table this package's catalog returns: PyIceberg's own, except that
    its transactions (``transaction()``, and so ``append``, ``overwrite``, ``delete``)
    compute their metadata once per staged state (W4), and its scans refuse a managed
    table's files outside its location (tables M6): ``lakehouse_root`` is the root a
    managed table lies in; None for an EXTERNAL table (no check)."""

    lakehouse_root: str | None = None

    @property
    def maintenance(self) -> Any:
        """PyIceberg's maintenance API, with ``compact()`` (the name
        apache/iceberg-python#3124 proposes) and its alias ``rewrite_data_files()``
        (Iceberg's Spark procedure): the catalog's ``optimize_table`` (compaction
        CP1-CP5) on this table, which is then refreshed."""
        from pyiceberg.table.maintenance import MaintenanceTable

        class _Maintenance(MaintenanceTable):
            def compact(self, target_file_size_bytes: int | None = None) -> Any:
                """Compact the table (one replace commit); what it did."""
                done = self.tbl.catalog.optimize_table(self.tbl.name(), target_file_size_bytes)
                self.tbl.refresh()
                return done

            rewrite_data_files = compact

        return _Maintenance(self)

    def data_files(self, select: Callable[[str], bool]) -> list[Any]:
        """The DataFile objects of the current snapshot's live data files whose paths
        ``select`` accepts (planning PC6: from the process's cache of decoded manifests,
        with the confinement checks of the table's scans)."""
        from .planning import snapshot_data_files

        snapshot = self.current_snapshot()
        if snapshot is None:
            return []
        root = self.lakehouse_root
        confinement = None if root is None else Confinement(".".join(self.name()), self.metadata.location, root)
        return snapshot_data_files(snapshot, self.io, confinement, select)

    def transaction(self) -> Transaction:
        return _OneCopyTransaction(self)

    def scan(
        self,
        row_filter: str | BooleanExpression = AlwaysTrue(),
        selected_fields: tuple[str, ...] = ("*",),
        case_sensitive: bool = True,
        snapshot_id: int | None = None,
        options: Properties = EMPTY_DICT,
        limit: int | None = None,
    ) -> DataScan:
        root = self.lakehouse_root
        confinement = None if root is None else Confinement(".".join(self.name()), self.metadata.location, root)
        return ConfinedScan(
            table_metadata=self.metadata, io=self.io, row_filter=row_filter, selected_fields=selected_fields,
            case_sensitive=case_sensitive, snapshot_id=snapshot_id, options=options, limit=limit,
            catalog=self.catalog, table_identifier=self.name(), confinement=confinement,
        )  # fmt: skip
