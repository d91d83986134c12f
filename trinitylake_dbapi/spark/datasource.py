"""The ``trinitylake`` Spark data source: the catalog of a lakehouse as a DataFrame,
and, with the option ``table``, a table's rows (read and written: see
:mod:`.tabledata`, options ``table``, ``version``, ``filter``, ``create``).

    from trinitylake_dbapi.spark import register
    register(spark)
    tables = (spark.read.format("trinitylake")
              .option("location", "s3://bucket/lake")
              .option("version", 42)            # optional: a version or snapshot name
              .load())

Options:

``location`` (required)
    The lakehouse root URI or local path.
``object``
    ``tables`` (default), ``namespaces``, ``columns`` or ``versions``.
``version``
    A version number or an exported snapshot name; default the latest version when the
    query is planned. Every partition reads that one version, so the result is a
    consistent snapshot even while writers commit. For ``versions``: the history from
    that version back.
``namespace``
    Only the tables (or columns) of this namespace (``tables``, ``columns``).
``storage.<name>``, ``storage_options``
    Storage options for fsspec: one per option (string values), or all of them as a
    JSON object.

Rows (the order of SHOW TABLES / SHOW NAMESPACES: by namespace, then table): the catalog
views of :mod:`trinitylake_dbapi.views`, as ``views.SPARK`` presents them (the same values
and types as SQL's information_schema and system.versions):

``tables``      namespace, table_name, table_type (``BASE TABLE``), table_kind
                (``MANAGED`` | ``EXTERNAL``), table_format, location, comment, columns
                (array of struct id, name, type, nullable, comment; ``type`` in
                canonical text, e.g. ``decimal(10,2)``), primary_key, properties
``namespaces``  namespace, comment, properties
``columns``     namespace, table_name, ordinal_position (1-based), column_name,
                column_id, data_type, is_nullable (``YES`` | ``NO``), comment
``versions``    version, created_at, previous_version, rollback_from_version, changes
                (text, as SHOW VERSIONS; newest first)

Where the work happens. Planning (one Python process next to the driver) reads only
node files: the root of the chosen version and, for more parallelism, its children, and
cuts the key range of the objects at their keys; each partition is a key range of that
one version. Executors scan their range (merge-on-read from the root, as every reader
does) and read the definition files, several at a time. For ``versions``, planning
lists the root directory and partitions the history by version ranges; executors read
the root files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator

from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceWriter, InputPartition

from ..errors import ObjectNotFoundError, ProgrammingError
from ..format import keys as keyfmt
from ..format import paths
from .. import views
from ..catalog import LakehouseCatalog
from ..catalog.model import VersionInfo
from .schema import to_spark_schema
from . import _runtime as rt

__all__ = ["TrinityLakeDataSource", "register", "SCHEMAS", "OBJECTS"]

#: The catalog views as Spark presents them (trinitylake_dbapi.views CV2), typed by the
#: one SPEC 5 -> Spark mapping (spark.schema).
SCHEMAS: dict[str, T.StructType] = {
    name: to_spark_schema(presentation.specs()) for name, presentation in views.SPARK.items()
}
OBJECTS = tuple(SCHEMAS)

#: Planning stops cutting key ranges once it has this many partitions.
_TARGET_PARTITIONS = 64
#: Definition files fetched concurrently per partition.
_PREFETCH = 256


def register(spark: Any) -> None:
    """Make ``spark.read.format("trinitylake")`` available in this session."""
    spark.dataSource.register(TrinityLakeDataSource)


@dataclass(frozen=True)
class _Options:
    location: rt.Location
    object: str
    version: int | str | None
    namespace: str | None
    table: str | None = None
    create: bool = False
    filter: str | None = None
    stage: str | None = None
    target: str | None = None
    dynamic: bool = False  # partitionOverwriteMode dynamic (tabledata SD8)

    @classmethod
    def parse(cls, options: Any) -> "_Options":
        opts = {str(k).lower(): v for k, v in dict(options).items()}
        location = opts.get("location") or opts.get("path")
        if not location:
            raise ProgrammingError(
                'the trinitylake data source needs .option("location", <lakehouse root URI>)'
            )
        table = opts.get("table") or None
        if table is not None and "object" in opts:
            raise ProgrammingError("options table and object exclude each other: table reads a table's rows")
        kind = str(opts.get("object", "tables")).strip().lower()
        if kind not in SCHEMAS:
            raise ProgrammingError(
                f"unknown object {kind!r} for the trinitylake data source; use one of {', '.join(OBJECTS)}"
            )
        storage_options: dict[str, Any] = {}
        if opts.get("storage_options"):
            try:
                storage_options.update(json.loads(opts["storage_options"]))
            except (TypeError, ValueError) as e:
                raise ProgrammingError(f"option storage_options is not a JSON object: {e}") from None
        for key, value in opts.items():
            if key.startswith("storage."):
                storage_options[key[len("storage."):]] = value
        version: int | str | None = opts.get("version")
        if isinstance(version, str):
            text = version.strip()
            version = int(text) if text.isdigit() else (text or None)
        namespace = opts.get("namespace") or None
        if namespace is not None and kind not in ("tables", "columns"):
            raise ProgrammingError(f"option namespace applies to tables and columns, not {kind}")
        if namespace is not None and table is not None:
            raise ProgrammingError("option namespace applies to the catalog views, not to a table's rows")
        return cls(
            rt.Location.of(str(location), storage_options), kind, version, namespace, table,
            create=_flag(opts, "create"), filter=opts.get("filter") or None,
            stage=opts.get("trinitylake.stage"), target=opts.get("trinitylake.target"),
            dynamic=_overwrite_mode(opts),
        )  # fmt: skip


def _overwrite_mode(opts: dict) -> bool:
    """Whether an overwrite replaces only the partitions written (option
    ``partitionOverwriteMode`` ``dynamic``; ``static``, the default, replaces all)."""
    value = str(opts.get("partitionoverwritemode", "static")).strip().lower()
    if value not in ("static", "dynamic"):
        raise ProgrammingError(f"option partitionOverwriteMode is 'static' or 'dynamic', not {value!r}")
    return value == "dynamic"


def _flag(opts: dict, name: str) -> bool:
    value = str(opts.get(name, "false")).strip().lower()
    if value not in ("true", "false"):
        raise ProgrammingError(f"option {name} is 'true' or 'false', not {opts[name]!r}")
    return value == "true"



class TrinityLakeDataSource(DataSource):
    """``spark.read.format("trinitylake")``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return "trinitylake"

    def schema(self) -> T.StructType:
        opts = _Options.parse(self.options)
        if opts.table is not None:
            from .tabledata import read_schema

            return read_schema(opts.location, opts.table, opts.version)
        return SCHEMAS[opts.object]

    def reader(self, schema: T.StructType) -> "DataSourceReader":
        opts = _Options.parse(self.options)
        if opts.table is not None:
            from .tabledata import TableReader

            return TableReader(opts.location, opts.table, opts.version, schema, opts.filter)
        return _Reader(opts)

    def writer(self, schema: T.StructType, overwrite: bool) -> "DataSourceWriter":
        """``df.write.format("trinitylake")``: a table's rows (tabledata SD5, SD6)."""
        from .tabledata import TableWriter, WriteTarget, open_catalog, plan_write

        opts = _Options.parse(self.options)
        if opts.table is None:
            raise ProgrammingError('writing with the trinitylake data source needs .option("table", "namespace.table")')
        if opts.target is not None:
            target = WriteTarget.from_json(opts.target)
        else:
            catalog = open_catalog(opts.location)
            try:
                target = plan_write(catalog, opts.table, schema, opts.create)
            finally:
                catalog.close()
        return TableWriter(opts.location, target, overwrite, opts.stage, dynamic=opts.dynamic)


class _KeyRange(InputPartition):
    def __init__(self, version: int, low: str, high: str) -> None:
        super().__init__((version, low, high))
        self.version, self.low, self.high = version, low, high


class _VersionRange(InputPartition):
    def __init__(self, low: int, high: int, chain_low: int) -> None:
        super().__init__((low, high, chain_low))
        self.low, self.high, self.chain_low = low, high, chain_low


class _Reader(DataSourceReader):
    def __init__(self, options: _Options) -> None:
        self.options = options

    # -- planning: node files only --------------------------------------------------------

    def partitions(self) -> list[InputPartition]:
        opts = self.options
        catalog = LakehouseCatalog(opts.location.uri, storage_options=opts.location.storage_options)
        try:
            if opts.object == "versions":
                return self._version_partitions(catalog)
            version = catalog.resolve_version(opts.version) if opts.version is not None else catalog.latest_version()
            snapshot = catalog.lakehouse.snapshot(version)
            codec = keyfmt.KeyCodec(
                snapshot.settings.namespace_name_max_size_bytes, snapshot.settings.table_name_max_size_bytes
            )
            if opts.object == "namespaces":
                low, high = codec.namespaces_range()
            else:
                if opts.namespace is not None:  # the key is enough: no definition is read here
                    keyfmt.validate_name(opts.namespace, codec.namespace_max_bytes, "namespace")
                    if snapshot.tree.get(codec.namespace_key(opts.namespace)) is None:
                        raise ObjectNotFoundError(f"namespace {opts.namespace!r} does not exist")
                low, high = codec.tables_range(opts.namespace)
            cuts = snapshot.tree.cut_points(low, high, _TARGET_PARTITIONS)  # tree knowledge stays in tree
            bounds = [low, *cuts, high]
            return [_KeyRange(version, a, b) for a, b in zip(bounds, bounds[1:])]
        finally:
            catalog.close()

    def _version_partitions(self, catalog: LakehouseCatalog) -> list[InputPartition]:
        opts = self.options
        start = catalog.resolve_version(opts.version) if opts.version is not None else catalog.latest_version()
        top_level = catalog.storage.list("", recursive=False)
        present = {v for v in map(paths.parse_root_node_path, top_level) if v is not None}
        present.add(start)
        low = start
        while low - 1 in present:
            low -= 1
        ranges = rt.split_ranges([(low, start)], _TARGET_PARTITIONS)
        return [_VersionRange(a, b, low) for a, b in reversed(ranges)]  # newest first

    # -- reading: executors -----------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        catalog = rt.catalog(self.options.location)
        if isinstance(partition, _VersionRange):
            yield from _version_rows(catalog, partition)
            return
        assert isinstance(partition, _KeyRange)
        snapshot = catalog.lakehouse.snapshot(partition.version)
        codec = keyfmt.KeyCodec(
            snapshot.settings.namespace_name_max_size_bytes, snapshot.settings.table_name_max_size_bytes
        )
        items = snapshot.tree.scan(partition.low, partition.high)
        txn = catalog.begin(version=partition.version)
        store = catalog.storage
        kind = self.options.object
        presentation = views.SPARK[kind]
        for chunk in rt.chunks(items, _PREFETCH):
            list(rt.thread_map(store.read_immutable, [value for _, value in chunk]))  # warm the cache
            for key, _ in chunk:
                decoded = codec.decode(key)
                if kind == "namespaces":
                    rows = [views.namespace_row(txn.describe_namespace(decoded.namespace))]
                else:
                    assert decoded.table is not None
                    table = txn.describe_table(decoded.namespace, decoded.table)
                    rows = [views.table_row(table)] if kind == "tables" else views.column_rows(table)
                yield from views.present(presentation, rows)


def _version_rows(catalog: LakehouseCatalog, partition: _VersionRange) -> Iterator[tuple]:
    lakehouse = catalog.lakehouse
    for version in range(partition.high, partition.low - 1, -1):
        snapshot = lakehouse.snapshot(version)
        previous = lakehouse.snapshot(version - 1) if version - 1 >= partition.chain_low else None
        info = VersionInfo(
            snapshot.version, snapshot.created_at_millis, snapshot.previous_version,
            snapshot.rollback_from_version, catalog.changes_of(snapshot, previous),
        )  # fmt: skip
        yield from views.present(views.SPARK["versions"], [views.version_row(info)])
