"""Table data through Spark: the ``trinitylake`` data source with ``.option("table", ...)``,
and :func:`transaction` for several tables in one lakehouse version.

    df = (spark.read.format("trinitylake")
          .option("location", "s3://bucket/lake").option("table", "sales.orders")
          .option("version", 42)                        # optional
          .load())
    df.write.format("trinitylake").option("location", uri).option("table", "sales.daily") \\
        .option("create", "true").mode("append").save()  # or "overwrite"

    with transaction(spark, uri) as tx:                  # one lakehouse version
        tx.write(daily, "sales.daily", mode="overwrite")
        tx.write(totals, "sales.totals", create=True)

Rules:

  SD1 A read is planned on the driver (PyIceberg, ``TrinityLakeCatalog``) at one lakehouse
     version: the ``version`` option (a number, an exported snapshot name or a timestamp),
     else the latest when the query is planned. Each partition carries one file scan task
     of that version's table metadata, so every executor reads the same state while
     writers commit newer versions.
  SD2 One partition per data file (a table without data files reads as one empty
     partition). Files are not split below a data file: PyIceberg reads a whole file,
     delete files applied.
  SD3 ``.option("filter", "<PyIceberg expression>")`` (e.g. ``day >= '2024-01-03'``)
     restricts the read to the rows it matches: planning prunes data files by partition
     values and column statistics, and executors drop the other rows of a file. Spark's
     own filter pushdown (``pushFilters``) is not used: PySpark 4.3 reuses a DataFrame's
     reader, pushed filters included, for a later query on it without filters (measured:
     ``r.where("id = 1").count()`` then ``r.count()`` counted only the pruned files), so
     pruning by pushed filters would change results.
  SD4 Executors read with PyIceberg's ``ArrowScan`` (field-id projection, schema
     evolution, delete files) and cast every batch to the table's Spark schema by column
     name; a column the data file does not have reads as nulls of its Spark type.
  SD5 A write is planned on the driver: the table's metadata at the latest version (or,
     with ``create``, the metadata a new table made from the DataFrame's schema will
     have). Executors cast each batch to the table's Iceberg schema by column name
     (columns the DataFrame lacks are nulls; a null in a NOT NULL column fails the task),
     write Parquet data files with field ids and column statistics (PyIceberg's public
     ``write_file``), make them durable (io F1) and report them.
  SD6 The driver commits once: in one lakehouse transaction it creates the table if
     planned, then a fast append (``append``) or an overwrite of every current data file
     (``overwrite``) with the reported files: exactly one lakehouse version. A table
     dropped and created again since planning fails the commit. An aborted job commits
     nothing and deletes the files its successful tasks reported; files of a task that
     died are reclaimed by version expiration (maintenance E8).
  SD8 (issue 36) A partitioned table is written by its current partition spec: each
     writer task splits its rows by partition (iceberg.writing W8), so every data file
     holds one partition's rows. ``.option("partitionOverwriteMode", "dynamic")`` with
     mode ``overwrite`` replaces only the partitions written: the current files of the
     table's current spec whose partition value one of the new files has (Iceberg's
     dynamic overwrite, ``ReplacePartitions``); other partitions, and files of earlier
     specs, stay. On an unpartitioned table it replaces everything, as a static one.
  SD7 In :func:`transaction`, DDL through ``tx.catalog`` and each ``tx.write`` are staged
     in one lakehouse transaction (TrinityLakeCatalog P4), published together when the
     block ends without an error, or not at all. The driver plans each write on the
     block's own view (a table created in the block is written to), and each job's
     files are committed into the block when the job ends.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import pickle
import shutil
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterator

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

from ..errors import ObjectNotFoundError, ProgrammingError
from ..format import paths
from ..iceberg.catalog import TrinityLakeCatalog
from ..iceberg.io import DurableFileIO, file_io_properties
from ..iceberg.schema import schema_from_columns
from ..iceberg.writing import for_writing, write_partitioned
from .schema import from_spark_schema, split_table_name, table_schema
from . import _runtime as rt

__all__ = [
    "TableReader",
    "TableWriter",
    "WriteTarget",
    "SparkTransaction",
    "transaction",
    "open_catalog",
    "STAGE_OPTION",
    "TARGET_OPTION",
]

#: Options a :class:`SparkTransaction` hands its write jobs (SD7): where the job leaves
#: its files for the driver, and the write target it planned.
STAGE_OPTION = "trinitylake.stage"
TARGET_OPTION = "trinitylake.target"

#: Rows a writer task holds before it writes a data file (about 128 MiB of Arrow).
_FILE_BYTES = 128 * 2**20


def open_catalog(location: rt.Location) -> TrinityLakeCatalog:
    """A PyIceberg catalog over the lakehouse at ``location`` (the caller closes it)."""
    return TrinityLakeCatalog(
        "spark", uri=location.uri, **file_io_properties(location.storage_options)
    )


_IO_LOCK = threading.Lock()
_IOS: dict[tuple[str, str], DurableFileIO] = {}
_METADATA: dict[str, Any] = {}


def _file_io(location: rt.Location) -> DurableFileIO:
    """This process's FileIO for the tables of ``location`` (cached)."""
    rt.settle()  # rt WK1: a task starts here
    with _IO_LOCK:
        io = _IOS.get(location.key)
        if io is None:
            io = _IOS[location.key] = DurableFileIO(file_io_properties(location.storage_options))
        return io


def _table_metadata(io: Any, metadata_location: str) -> Any:
    """A metadata file, read once per process (metadata files are immutable)."""
    from pyiceberg.serializers import FromInputFile

    with _IO_LOCK:
        found = _METADATA.get(metadata_location)
    if found is None:
        found = FromInputFile.table_metadata(io.new_input(metadata_location))
        with _IO_LOCK:
            if len(_METADATA) > 64:
                _METADATA.clear()
            _METADATA[metadata_location] = found
    return found


# ---------------------------------------------------------------------------
# Reading (SD1-SD4)
# ---------------------------------------------------------------------------


class FileTask(InputPartition):
    """One data file of the planned version (SD2); ``task`` None: an empty table."""

    def __init__(self, metadata_location: str | None, task: Any) -> None:
        super().__init__(task.file.file_path if task is not None else None)
        self.metadata_location, self.task = metadata_location, task


class TableReader(DataSourceReader):
    """Reads one table at one lakehouse version (SD1-SD4)."""

    def __init__(
        self, location: rt.Location, table: str, version: int | str | None, schema: T.StructType, row_filter: str | None
    ) -> None:
        self.location, self.table, self.version, self.schema = location, table, version, schema
        self.row_filter = row_filter
        if row_filter is not None:
            parse_filter(row_filter)  # a bad expression fails when the query is planned

    def partitions(self) -> list[InputPartition]:
        catalog = open_catalog(self.location)
        try:
            version = self.version if self.version is not None else catalog.lakehouse.latest_version()
            table = catalog.at_version(version).load_table(split_table_name(self.table))
        finally:
            catalog.close()
        if not table.metadata_location:
            return [FileTask(None, None)]  # no metadata yet: an empty table (P1)
        tasks = list(table.scan(row_filter=parse_filter(self.row_filter)).plan_files())
        if not tasks:
            return [FileTask(None, None)]
        return [FileTask(table.metadata_location, task) for task in tasks]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyiceberg.io.pyarrow import ArrowScan
        from pyspark.sql.pandas.types import to_arrow_schema

        assert isinstance(partition, FileTask)
        if partition.task is None or partition.metadata_location is None:
            return
        io = _file_io(self.location)
        metadata = _table_metadata(io, partition.metadata_location)
        target = to_arrow_schema(self.schema, timezone="UTC")
        scan = ArrowScan(metadata, io, metadata.schema(), parse_filter(self.row_filter))
        for batch in scan.to_record_batches([partition.task]):
            yield conform(batch, target, f"table {self.table}")


def parse_filter(text: str | None) -> Any:
    """The PyIceberg expression of the ``filter`` option (SD3); AlwaysTrue for none."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.expressions.parser import parse

    if text is None or not text.strip():
        return AlwaysTrue()
    try:
        return parse(text)
    except Exception as e:  # noqa: BLE001 - pyparsing's errors
        raise ProgrammingError(f"option filter {text!r} is not a PyIceberg row filter: {e}") from None


def conform(batch: pa.RecordBatch, target: pa.Schema, what: str) -> pa.RecordBatch:
    """``batch`` with exactly ``target``'s columns, by name, each cast to its type; a
    column ``batch`` lacks is nulls; a null in a non-nullable column is an error naming
    the column."""
    arrays = []
    names = {name.lower(): i for i, name in enumerate(batch.schema.names)}
    for target_field in target:
        index = batch.schema.get_field_index(target_field.name)
        if index < 0:
            index = names.get(target_field.name.lower(), -1)
        if index < 0:
            array = pa.nulls(batch.num_rows, target_field.type)
        else:
            array = cast(batch.column(index), target_field.type, f"{what}, column {target_field.name}")
        if not target_field.nullable and array.null_count:
            raise ValueError(
                f"{what}: column {target_field.name} is NOT NULL, but {array.null_count} of "
                f"{len(array)} rows have no value"
            )
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def cast(array: pa.Array, to: pa.DataType, what: str) -> pa.Array:
    """``array`` as type ``to``; nested types are cast child by child, struct fields by
    name (a field the data lacks is nulls)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if isinstance(array.type, pa.ExtensionType):
        array = array.storage
    if array.type.equals(to):
        return array
    try:
        nested = pa.types.is_nested(to) and pa.types.is_nested(array.type)
        if nested and array.offset:
            array = array.take(pa.array(range(len(array)), pa.int64()))  # offset 0 from here
        mask = array.is_null() if array.null_count else None
        if pa.types.is_struct(to) and pa.types.is_struct(array.type):
            children = []
            for child in to:
                index = array.type.get_field_index(child.name)
                values = array.field(index) if index >= 0 else pa.nulls(len(array), child.type)
                children.append(cast(values, child.type, f"{what}.{child.name}"))
            return pa.StructArray.from_arrays(children, fields=list(to), mask=mask)
        if pa.types.is_map(to) and pa.types.is_map(array.type):
            keys = cast(array.keys, to.key_type, f"{what} (key)")
            items = cast(array.items, to.item_type, f"{what} (value)")
            offsets = array.offsets if mask is None else pa.array(_masked(array.offsets, mask), pa.int32())
            return pa.MapArray.from_arrays(offsets, keys, items, type=to)
        list_types = (pa.types.is_list, pa.types.is_large_list)
        if any(t(to) for t in list_types) and any(t(array.type) for t in list_types):
            values = cast(array.values, to.value_type, f"{what} (element)")
            offsets = array.offsets.cast(pa.int64() if pa.types.is_large_list(to) else pa.int32())
            kind = pa.LargeListArray if pa.types.is_large_list(to) else pa.ListArray
            return kind.from_arrays(offsets, values, type=to, mask=mask)
        if pa.types.is_time(to) and (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
            # timetz is stored as ISO text with its offset (iceberg schema); Spark's time has none
            return pa.array(
                [None if v is None else _dt.time.fromisoformat(_without_offset(v)) for v in array.to_pylist()], to
            )
        if (pa.types.is_string(to) or pa.types.is_large_string(to)) and pa.types.is_time(array.type):
            return pa.array([None if v is None else v.isoformat() for v in array.to_pylist()], to)
        if pa.types.is_time(to) and pa.types.is_time(array.type):
            return array.cast(to, safe=False)  # Spark's nanoseconds to Iceberg's microseconds
        return array.cast(to)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError, TypeError) as e:
        raise ValueError(f"{what}: cannot convert {array.type} to {to}: {e}") from None


def _masked(offsets: pa.Array, mask: pa.Array) -> list:
    """Map offsets with a null entry where ``mask`` is set (MapArray.from_arrays takes
    nulls from its offsets)."""
    values = offsets.to_pylist()
    return [None if m else o for o, m in zip(values, mask.to_pylist())] + [values[-1]]


def _without_offset(text: str) -> str:
    for sign in ("+", "-", "Z"):
        position = text.find(sign, 1)
        if position > 0:
            return text[:position]
    return text


def read_schema(location: rt.Location, table: str, version: int | str | None) -> T.StructType:
    """The Spark schema a read of ``table`` returns (its columns at ``version``)."""
    return table_schema(location.uri, table, version, storage_options=location.storage_options)


# ---------------------------------------------------------------------------
# Writing (SD5-SD7)
# ---------------------------------------------------------------------------


@dataclass
class WriteTarget:
    """What a write job writes to (SD5): the table's metadata as planned, and whether the
    commit creates the table."""

    table: str
    metadata: Any
    create: bool

    def to_json(self) -> str:
        import json

        return json.dumps({"table": self.table, "create": self.create, "metadata": self.metadata.model_dump_json()})

    @classmethod
    def from_json(cls, text: str) -> "WriteTarget":
        import json

        from pyiceberg.table.metadata import TableMetadataUtil

        data = json.loads(text)
        return cls(data["table"], TableMetadataUtil.parse_raw(data["metadata"]), bool(data["create"]))


def plan_write(catalog: TrinityLakeCatalog, table: str, schema: T.StructType, create: bool) -> WriteTarget:
    """SD5: the target of a write of a DataFrame of ``schema`` into ``table``, on the
    catalog's view (the latest version, or an open block's)."""
    from pyiceberg.exceptions import NoSuchTableError
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
    from pyiceberg.table.metadata import new_table_metadata
    from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

    namespace, name = split_table_name(table)
    try:
        metadata = catalog.load_table((namespace, name)).metadata
    except NoSuchTableError:
        if not create:
            raise ObjectNotFoundError(
                f"table {namespace}.{name} does not exist; .option(\"create\", \"true\") creates it "
                "from the DataFrame's schema"
            ) from None
        iceberg_schema = schema_from_columns(from_spark_schema(schema))
        location = paths.new_table_location(catalog.tables.warehouse, namespace, name)
        metadata = new_table_metadata(iceberg_schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, location)
        return WriteTarget(f"{namespace}.{name}", metadata, True)
    known = {f.name.lower() for f in metadata.schema().fields}
    extra = [f.name for f in schema.fields if f.name.lower() not in known]
    if extra:
        raise ProgrammingError(
            f"table {namespace}.{name} has no column {', '.join(map(repr, extra))}; its columns are "
            f"{', '.join(f.name for f in metadata.schema().fields)}"
        )
    return WriteTarget(f"{namespace}.{name}", metadata, False)


@dataclass
class WrittenFiles(WriterCommitMessage):
    """What one writer task reports: its data files."""

    data_files: list = field(default_factory=list)


class TableWriter(DataSourceArrowWriter):
    """Executors write data files; the driver commits them (SD5, SD6), or hands them to the
    transaction that started the job (SD7: ``stage``)."""

    def __init__(
        self, location: rt.Location, target: WriteTarget, overwrite: bool, stage: str | None, *, dynamic: bool = False
    ) -> None:
        self.location, self.target, self.overwrite, self.stage = location, target, overwrite, stage
        self.dynamic = dynamic

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WrittenFiles:
        from pyiceberg.io.pyarrow import schema_to_pyarrow, write_file
        from pyiceberg.table import WriteTask

        io = _file_io(self.location)
        metadata = for_writing(self.target.metadata)
        schema = metadata.schema()
        arrow_schema = schema_to_pyarrow(schema, include_field_ids=False)
        write_uuid = uuid.uuid4()
        tasks: list[Any] = []
        pending: list[pa.RecordBatch] = []
        size = 0

        partitioned = not metadata.spec().is_unpartitioned()
        files: list[Any] = []

        def flush() -> None:
            nonlocal pending, size
            if pending and partitioned:  # SD8: this chunk's rows, by partition
                first = len(tasks) + len(files)
                files.extend(write_partitioned(io, metadata, pa.Table.from_batches(pending), write_uuid, first))
            elif pending:
                tasks.append(WriteTask(write_uuid=write_uuid, task_id=len(tasks), schema=schema, record_batches=pending))
            pending, size = [], 0

        for batch in iterator:
            if batch.num_rows == 0:
                continue
            batch = conform(batch, arrow_schema, f"table {self.target.table}")
            pending.append(batch)
            size += batch.nbytes
            if size >= _FILE_BYTES:
                flush()
        flush()
        files += list(write_file(io, metadata, iter(tasks))) if tasks else []
        io.sync_written()  # io F1: durable before the driver names them
        return WrittenFiles(files)

    def commit(self, messages: list[Any]) -> None:
        files = [f for m in messages if isinstance(m, WrittenFiles) for f in m.data_files]
        if self.stage is not None:
            with open(self.stage, "wb") as out:
                pickle.dump(files, out)
            return
        catalog = open_catalog(self.location)
        try:
            with catalog.lakehouse_transaction():
                commit_write(catalog, self.target, files, self.overwrite, dynamic=self.dynamic)
        finally:
            catalog.close()

    def abort(self, messages: list[Any]) -> None:
        io = _file_io(self.location)
        for message in messages:
            for data_file in getattr(message, "data_files", None) or []:
                with contextlib.suppress(Exception):
                    io.delete(data_file.file_path)


def commit_write(
    catalog: TrinityLakeCatalog, target: WriteTarget, files: list, overwrite: bool, *, dynamic: bool = False
) -> None:
    """SD6: create the table if planned, then append ``files`` (or replace every current
    data file with them; with ``dynamic``, those of the partitions written, SD8), as one
    table commit in the catalog's open block."""
    from pyiceberg.exceptions import CommitFailedException

    namespace, name = split_table_name(target.table)
    planned = target.metadata
    if target.create:
        table = catalog.create_table(
            (namespace, name), planned.schema(), location=planned.location, properties=dict(planned.properties)
        )
        if table.schema() != planned.schema():
            raise CommitFailedException(
                f"table {target.table}: created with other field ids than its data files were written with"
            )
    else:
        table = catalog.load_table((namespace, name))
        if table.metadata.table_uuid != planned.table_uuid:
            raise CommitFailedException(
                f"table {target.table} was dropped and created again since the write was planned"
            )
    if not files and not overwrite:
        return
    if files and table.metadata.spec() != planned.spec():
        raise CommitFailedException(
            f"table {target.table}: its partitioning changed since the write was planned; write again"
        )
    with table.transaction() as txn:
        if overwrite:
            current = [task.file for task in table.scan().plan_files()] if table.metadata.current_snapshot_id else []
            spec = table.metadata.spec()
            if dynamic and not spec.is_unpartitioned():  # SD8: only the partitions written (new files: this spec)
                written = {tuple(f.partition) for f in files}
                current = [f for f in current if f.spec_id == spec.spec_id and tuple(f.partition) in written]
            with txn.update_snapshot().overwrite() as change:
                for data_file in current:
                    change.delete_data_file(data_file)
                for data_file in files:
                    change.append_data_file(data_file)
        else:
            with txn.update_snapshot().fast_append() as change:
                for data_file in files:
                    change.append_data_file(data_file)


# ---------------------------------------------------------------------------
# Several tables, one version (SD7)
# ---------------------------------------------------------------------------


class SparkTransaction:
    """The open block of :func:`transaction`: ``catalog`` for DDL and PyIceberg calls,
    :meth:`write` for DataFrames, :meth:`read` for the block's start state."""

    def __init__(self, spark: Any, location: rt.Location, catalog: TrinityLakeCatalog, version: int) -> None:
        self.spark, self.location, self.catalog = spark, location, catalog
        #: The lakehouse version the block started from.
        self.version = version
        self._stage_dir = tempfile.mkdtemp(prefix="trinitylake-tx-")

    def write(
        self, df: Any, table: str, mode: str = "append", *, create: bool = False,
        partition_overwrite_mode: str = "static",
    ) -> None:
        """Write ``df`` into ``table`` (``mode`` append or overwrite; ``create``: make the
        table from ``df``'s schema if it does not exist; ``partition_overwrite_mode``
        ``"dynamic"``: an overwrite replaces only the partitions written, SD8); published
        at the block's end."""
        if mode not in ("append", "overwrite"):
            raise ProgrammingError(f"mode {mode!r}: use 'append' or 'overwrite'")
        if partition_overwrite_mode not in ("static", "dynamic"):
            raise ProgrammingError(
                f"partition_overwrite_mode {partition_overwrite_mode!r}: use 'static' or 'dynamic'"
            )
        target = plan_write(self.catalog, table, df.schema, create)
        stage = os.path.join(self._stage_dir, f"{uuid.uuid4().hex}.pkl")
        writer = df.write.format("trinitylake").option("location", self.location.uri)
        if self.location.storage_options:
            import json

            writer = writer.option("storage_options", json.dumps(self.location.storage_options))
        writer = writer.option("table", target.table).option(TARGET_OPTION, target.to_json())
        writer.option(STAGE_OPTION, stage).mode(mode).save()
        with open(stage, "rb") as staged:
            files = pickle.load(staged)
        os.unlink(stage)
        commit_write(self.catalog, target, files, mode == "overwrite", dynamic=partition_overwrite_mode == "dynamic")

    def read(self, table: str) -> Any:
        """``table`` as the block started (its committed state at :attr:`version`)."""
        reader = self.spark.read.format("trinitylake").option("location", self.location.uri)
        if self.location.storage_options:
            import json

            reader = reader.option("storage_options", json.dumps(self.location.storage_options))
        return reader.option("table", table).option("version", self.version).load()

    def close(self) -> None:
        shutil.rmtree(self._stage_dir, ignore_errors=True)


@contextlib.contextmanager
def transaction(spark: Any, location: str, *, storage_options: dict | None = None) -> Iterator[SparkTransaction]:
    """A block whose table writes and DDL are one lakehouse version, published when the
    block ends without an error, or none (SD7). When another writer commits to one of the
    block's tables first, a block of single appends (one per table) is applied again on
    the latest version; anything else fails with ``CommitFailedException`` and no table
    changes. Per thread."""
    where = rt.Location.of(location, storage_options)
    catalog = open_catalog(where)
    tx = SparkTransaction(spark, where, catalog, catalog.lakehouse.latest_version())
    try:
        with catalog.lakehouse_transaction():
            yield tx
    finally:
        tx.close()
        catalog.close()
