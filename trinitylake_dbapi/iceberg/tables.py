"""The Iceberg state of the lakehouse's tables, as a catalog transaction sees it.

Shared by the PyIceberg catalog (:mod:`.catalog`) and SQL DDL, and kept light: it loads
PyIceberg's table model but neither its catalog nor its PyArrow FileIO (about 1.4 s of
imports), so a process that only runs DDL does not pay for the data path.

Rules (the P rules are :mod:`.catalog`'s):

  M1 A table's metadata is the file its definition names (P1), read through the
     transaction when it lies under the lakehouse root (a file staged by the same
     transaction included), else through the catalog's FileIO. Metadata files are
     immutable: each is parsed once per instance. One that does not parse is a
     CorruptFileError naming it (files IF1); so is a damaged Avro file (IF2).
  M2 A new metadata file under the root is staged with the definition that names it
     (transaction C1: written at commit, with the definition, and never by a
     transaction that fails or is rolled back); one elsewhere is written at once.
  M3 A managed table whose definition names no metadata reads as the empty Iceberg
     table of its declared columns (field ids = column ids), with a uuid and location
     derived from its definition file, so every reader sees the same (P1).
  M4 After DDL through the catalog API, the metadata follows the definition (P7): the
     same schema and identifier fields, the same properties and comment, in a new
     metadata file named in the same transaction; Iceberg's rules still hold.
  M5 Planning a read (manifest lists and manifests) reads the files under the root
     through the transaction too (:meth:`TableStates.reader_io`): Iceberg never rewrites
     a file, so they come from the storage's cache of immutable files, and a query
     never imports PyArrow's FileIO (whose ``pyarrow.dataset`` imports pandas, ~0.5 s
     of a first query). Files elsewhere, and every write, go to the catalog's FileIO.
     A location is "under the root" by its canonical form (storage U1-U4): metadata
     written by Spark as ``file:/...`` is read through the transaction too.
  M6 (issue 31 item 2) A MANAGED table's files lie under its location, and its location
     inside the lakehouse root: its data, delete and statistics files, and its
     *metadata files* (the metadata file, manifest lists, manifests), which may also lie
     under its ``write.metadata.path`` (issue 35: PyIceberg writes them there) when that
     lies inside the root and outside the lakehouse's reserved area (paths FP2: not the
     root itself, no ``_``/``.``/binary-digit first directory). Locations are compared in
     canonical form (``..`` and ``.`` resolved first, storage U4), so ``<table>/../x`` is
     outside. Commits refuse anything else (:func:`check_commit`, InvalidLocationError
     naming the file or the ``write.metadata.path``; before anything is published or
     written there). Readers refuse, with CorruptFileError naming the file and before
     reading it, a data or delete file outside the table's location, and a metadata file
     outside the root or in its reserved area (an earlier ``write.metadata.path`` may
     still hold manifests the table lists, so any directory inside the root is
     accepted): the metadata file when the table's state is read
     (:meth:`TableStates.state`), manifest lists, manifests, data and delete files when
     a scan is planned (:class:`ConfinedScan`, used by SQL and by the PyIceberg tables
     of this package's catalog). A writer of a shared lakehouse may write such metadata
     by hand, past every commit check: this is the defence that holds, and no reader
     ever touches a file outside the root through a managed table. EXTERNAL tables
     (LOCATION, ``register_table``) name their files wherever they are, as documented.
  M7 On a local lakehouse, no file of a managed table is read through a symbolic link
     under the root: where M6 checks a file's location (the metadata file before it is
     read, and every manifest list, manifest, data and delete file a scan plans), it
     also walks the path from the root down to the file, the file included, with
     ``lstat`` (storage's :func:`~..storage.local.symlink_within`, the walk writes do,
     storage LF1) and refuses any link with CorruptFileError naming the file and the
     link, whether it leads outside the root or not (as writes refuse every link). A
     writer of the lakehouse's disk could otherwise make readers read any file of the
     host. Planned files are cached per snapshot, so each is walked once per planning.
     A file swapped for a link between the check and the read is not caught here
     (docs/security.md).
  M9 (iceberg.oldmetadata OM4) The metadata file a MANAGED table's definition names at
     a version, when missing (deleted after a later commit by
     ``write.metadata.delete-after-commit.enabled``, or lost), is MissingFileError
     naming the table, the version and the file, never a raw FileNotFoundError: time
     travel, a catalog or connection at that version and an exported snapshot cannot
     read that table there. :meth:`TableStates.publish` registers the deletions OM1
     asks for, to run once the commit is published.
  M8 Table metadata models are shared, never copied: :func:`apply_updates` is
     PyIceberg's ``update_table_metadata`` without its final deep copy of the whole
     metadata (every snapshot, log entry and schema: O(history) per call, called at
     least twice per commit, ~20 ms of a one-row INSERT after 200 commits). PyIceberg's
     models are frozen and each update builds new lists and dicts (``model_copy`` with
     ``update``), so a result shares unchanged parts with its base and no reader sees
     a change it did not make.
"""

from __future__ import annotations

import functools
import threading
import time
import uuid
from io import BytesIO
from typing import Any, Callable

from pyiceberg.io import FileIO, InputFile, InputStream, OutputFile
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema, index_by_id
from pyiceberg.serializers import Compressor, ToOutputFile
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import TableMetadata, TableMetadataV2
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.table import DataScan
from pyiceberg.table.update import (
    AddSchemaUpdate,
    AddSnapshotUpdate,
    RemovePropertiesUpdate,
    SetCurrentSchemaUpdate,
    SetPartitionStatisticsUpdate,
    SetPropertiesUpdate,
    SetStatisticsUpdate,
    TableUpdate,
    _apply_table_update,
    _TableMetadataUpdateContext,
    _update_table_metadata_log,
)
from pyiceberg.utils.config import Config

from ..catalog import LAST_COLUMN_ID, MANAGED, CatalogTransaction, TableInfo
from ..errors import CorruptFileError, InvalidDefinitionError, InvalidLocationError, MissingFileError
from ..format import paths
from ..format.paths import METADATA_LOCATION, PREVIOUS_METADATA_LOCATION
from ..storage.local import symlink_within
from ..storage.locations import canonical_location, location_within
from .files import check_avro, parse_metadata
from .manifests import entry_paths, snapshot_manifests
from .oldmetadata import METADATA_PATH, delete_metadata_files, deletes_old_metadata, doomed_metadata
from .schema import schema_from_columns

__all__ = [
    "ICEBERG", "METADATA_KINDS", "Confinement", "ConfinedScan", "TableStates", "apply_updates", "check_commit",
    "in_metadata_area", "metadata_bytes", "metadata_path_problem", "metadata_version", "refuse_links",
]

ICEBERG = "ICEBERG"
_CACHE_ENTRIES = 1024


class TableStates:
    """Reads and stages tables' Iceberg metadata for one lakehouse (rules M1-M4).

    ``root_uri``: the lakehouse root; ``warehouse``: where new tables go (default the
    root); ``file_io``: makes the FileIO for metadata outside the root (asked only then).
    """

    def __init__(self, root_uri: str, warehouse: str | None, file_io: Callable[[], Any]) -> None:
        self.root_uri = root_uri
        self.warehouse = warehouse or root_uri
        self._file_io = file_io
        self._lock = threading.Lock()
        self._cache: dict[str, TableMetadata] = {}

    def file_io(self) -> Any:
        """The FileIO for the tables' files (manifests and data), made when first asked."""
        return self._file_io()

    def reader_io(self, txn: CatalogTransaction) -> FileIO:
        """A FileIO for planning reads at ``txn`` (M5): files under the root are read
        through ``txn``; anything else goes to :meth:`file_io`."""
        return _ReaderIO(self, txn)

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()

    def relative(self, location: str) -> str | None:
        """``location`` as a path under the lakehouse root (canonical forms compared,
        M5), or None if it is elsewhere."""
        return location_within(location, self.root_uri)

    def confinement(self, info: TableInfo, metadata: TableMetadata) -> "Confinement | None":
        """M6: where the files of the table ``info`` (whose Iceberg state is
        ``metadata``) may lie; None for an EXTERNAL table (anywhere)."""
        if info.table_type != MANAGED:
            return None
        return Confinement(f"{info.namespace}.{info.name}", metadata.location, self.root_uri)

    def remember(self, location: str, metadata: TableMetadata) -> None:
        with self._lock:
            if len(self._cache) > _CACHE_ENTRIES:
                self._cache.clear()
            self._cache[location] = metadata

    def forget(self, locations: list[str]) -> None:
        """Drop the parsed metadata files at ``locations`` from the cache (deleted: M9)."""
        with self._lock:
            for location in locations:
                self._cache.pop(location, None)

    def metadata(self, txn: CatalogTransaction, location: str) -> TableMetadata:
        """The metadata file at ``location`` as ``txn`` sees it (M1)."""
        with self._lock:
            found = self._cache.get(location)
        if found is None:
            relative = self.relative(location)
            if relative is None:
                with self._file_io().new_input(location).open() as stream:
                    data = stream.read()
            else:
                data = txn.read_file(relative)
            found = parse_metadata(location, data)  # IF1: CorruptFileError naming it
            self.remember(location, found)
        return found

    def stage(self, metadata: TableMetadata, location: str) -> dict[str, bytes]:
        """M2: the files to stage with the definition naming ``location`` (empty when
        it lies outside the root: then it is written now)."""
        self.remember(location, metadata)
        relative = self.relative(location)
        if relative is None:
            io = self._file_io()
            ToOutputFile.table_metadata(metadata, io.new_output(location))
            sync = getattr(io, "sync_written", None)
            if sync is not None:
                sync()
            return {}
        return {relative: metadata_bytes(metadata, location)}

    def state(
        self, txn: CatalogTransaction, namespace: str, name: str
    ) -> tuple[TableInfo, TableMetadata, str | None]:
        """The table's definition, Iceberg metadata and its location (None: M3's
        implicit empty table) as ``txn`` reads them."""
        info = txn.describe_table(namespace, name)
        location = info.format_properties.get(METADATA_LOCATION)
        if location is None:
            return info, self.implicit(info), None
        if info.table_type != MANAGED:
            return info, self.metadata(txn, location), location
        table = f"{info.namespace}.{info.name}"
        if self.relative(location) is None:  # M6, before reading it
            raise CorruptFileError(
                location,
                f"the metadata file of managed table {table} (named by {info.definition_path}) lies outside "
                f"the lakehouse root {self.root_uri!r}; a managed table's files lie under its location "
                "inside the root",
            )
        refuse_links(table, location, self.root_uri, "metadata file")  # M7, before reading it
        try:
            metadata = self.metadata(txn, location)
        except MissingFileError:  # M9
            raise MissingFileError(
                location,
                f"the metadata file of table {table} that lakehouse version {txn.version} names does not "
                "exist: the table cannot be read at that version. A later commit deletes such a file when "
                "the table sets write.metadata.delete-after-commit.enabled and the file has left its "
                "metadata log (write.metadata.previous-versions-max); the versions from that commit on "
                "read the table. Otherwise the file was lost",
            ) from None
        if self.relative(metadata.location) is None:
            raise CorruptFileError(
                location,
                f"managed table {table} is located at {metadata.location!r}, outside the lakehouse root "
                f"{self.root_uri!r}; a managed table's files lie under its location inside the root",
            )
        Confinement(table, metadata.location, self.root_uri).check(location, "metadata file", links=False)
        return info, metadata, location

    def implicit(self, info: TableInfo) -> TableMetadata:
        """M3: the empty Iceberg table of a definition that names no metadata."""
        table_uuid = uuid.uuid5(uuid.NAMESPACE_URL, info.definition_path)
        location = info.location
        if location is None:
            location = paths.new_table_location(self.warehouse, info.namespace, info.name)
            location = f"{location.rsplit('-', 1)[0]}-{table_uuid.hex}"
        schema = target_schema(info, 0)
        return TableMetadataV2(
            location=location,
            table_uuid=table_uuid,
            last_updated_ms=0,
            last_column_id=max(schema.highest_field_id, int(info.all_properties.get(LAST_COLUMN_ID, "0"))),
            schemas=[schema],
            current_schema_id=schema.schema_id,
            partition_specs=[UNPARTITIONED_PARTITION_SPEC],
            default_spec_id=UNPARTITIONED_PARTITION_SPEC.spec_id,
            last_partition_id=UNPARTITIONED_PARTITION_SPEC.last_assigned_field_id,
            properties=_properties_of(info),
            sort_orders=[UNSORTED_SORT_ORDER],
            default_sort_order_id=UNSORTED_SORT_ORDER.order_id,
        )

    def follow_definition(
        self,
        txn: CatalogTransaction,
        namespace: str,
        name: str,
        *,
        partitioning: Callable[[TableMetadata], tuple[TableUpdate, ...] | Any] | None = None,
    ) -> None:
        """M4: make a managed Iceberg table's metadata agree with its definition after a
        change made through the catalog API in ``txn``: a new metadata file (the first,
        for a table that had none), named by a new definition in ``txn``.

        ``partitioning`` (SQL's PARTITIONED BY and PARTITION FIELD, partitioning PT3),
        given the metadata the definition says, returns either the updates that evolve
        its partition spec or, for a table that has no metadata file yet, the
        ``PartitionSpec`` it is created with; either lands in the same new file."""
        info = txn.describe_table(namespace, name)
        if info.table_format.upper() != ICEBERG or info.table_type != MANAGED:
            if partitioning is not None:
                raise InvalidDefinitionError(
                    f"table {namespace}.{name} is not a managed Iceberg table: partitioning is set "
                    "on managed Iceberg tables only"
                )
            return
        location = info.format_properties.get(METADATA_LOCATION)
        if location is None:
            updated = self.implicit(info).model_copy(update={"last_updated_ms": int(time.time() * 1000)})
            spec = None
            if partitioning is not None:
                spec = partitioning(updated)
            if isinstance(spec, tuple):  # evolution of the implicit table's spec
                updated = apply_updates(updated, spec)
            elif partitioning is not None:
                updated = updated.model_copy(update={
                    "partition_specs": [spec], "default_spec_id": spec.spec_id,
                    "last_partition_id": max(spec.last_assigned_field_id, updated.last_partition_id or 0),
                })  # fmt: skip
                updated.spec().check_compatible(updated.schema())
        else:
            _, current, _ = self.state(txn, namespace, name)  # M6: checked before it is read
            updates = updates_towards(current, info)
            if partitioning is not None:
                base = apply_updates(current, updates) if updates else current
                updates = (*updates, *partitioning(base))
            if not updates:
                return
            updated = apply_updates(current, updates, metadata_location=location)
        self.publish(txn, info, updated, location, columns=info.columns)

    def prepare_publish(
        self,
        info: TableInfo,
        updated: TableMetadata,
        previous_location: str | None,
        *,
        updates: tuple[TableUpdate, ...] = (),
        io: FileIO | None = None,
    ) -> tuple[str, dict[str, bytes]]:
        """The part of :meth:`publish` that changes no transaction: the next metadata
        location, M6's check of what ``updates`` add (a managed table) and the files to
        stage (M2). It needs no file durable yet, so a commit runs it while the fsyncs of
        the files the metadata reaches are still running (iceberg.io F1)."""
        version = 0 if previous_location is None else metadata_version(previous_location) + 1
        provider = load_location_provider(updated.location, updated.properties)
        new_location = provider.new_table_metadata_file_location(version)
        if info.table_type == MANAGED:
            check_commit(f"{info.namespace}.{info.name}", self.root_uri, updated, new_location, updates, io)
        return new_location, self.stage(updated, new_location)

    def publish(
        self,
        txn: CatalogTransaction,
        info: TableInfo,
        updated: TableMetadata,
        previous_location: str | None,
        *,
        columns: Any,
        properties: dict[str, str] | None = None,
        updates: tuple[TableUpdate, ...] = (),
        io: FileIO | None = None,
        prepared: tuple[str, dict[str, bytes]] | None = None,
    ) -> str:
        """Stage ``updated`` as the table's next metadata file (M2) and point a new
        definition at it in ``txn``, with ``columns`` (and ``properties``, if given), as
        a compare-and-swap on the definition ``info`` was read from; returns the new
        metadata location. Every file the metadata reaches must already be durable.
        For a managed table, what ``updates`` add is checked first (M6, through ``io``).
        ``prepared``: what :meth:`prepare_publish` returned for the same arguments."""
        if prepared is None:
            prepared = self.prepare_publish(info, updated, previous_location, updates=updates, io=io)
        new_location, files = prepared
        if info.table_type == MANAGED and previous_location is not None and deletes_old_metadata(updated.properties):
            doomed = doomed_metadata(self.root_uri, self.metadata(txn, previous_location), updated)
            if doomed:  # OM1, OM2: once the version that drops them from the log is published
                table, root_uri, io = f"{info.namespace}.{info.name}", self.root_uri, self._file_io()

                def delete(version: int) -> None:
                    self.forget(doomed)  # M9: this process reads them no more either
                    delete_metadata_files(io, root_uri, doomed, table, version)

                txn.after_commit(delete)
        pointers = {METADATA_LOCATION: new_location}
        if previous_location is not None:
            pointers[PREVIOUS_METADATA_LOCATION] = previous_location
        txn.set_table_format(
            info.namespace,
            info.name,
            columns=columns,
            format_properties=pointers,
            properties=properties,
            expected_definition=info.definition_path,
            last_column_id=updated.last_column_id,
            files=files,
        )
        return new_location


def _properties_of(info: TableInfo) -> dict[str, str]:
    """The Iceberg table properties a definition says: its properties and its comment."""
    return dict(info.properties, **({"comment": info.comment} if info.comment is not None else {}))


def apply_updates(
    base: TableMetadata, updates: tuple[TableUpdate, ...], metadata_location: str | None = None
) -> TableMetadata:
    """``base`` with ``updates`` applied, as PyIceberg 0.12's ``update_table_metadata``
    computes it (the same checks, the same metadata log and timestamps), sharing what
    did not change with ``base`` instead of deep-copying the result (M8)."""
    context = _TableMetadataUpdateContext()
    new_metadata = base
    for update in updates:
        new_metadata = _apply_table_update(update, new_metadata, context)
    if context.has_changes():
        if metadata_location:
            new_metadata = _update_table_metadata_log(new_metadata, metadata_location, base.last_updated_ms)
        if base.last_updated_ms == new_metadata.last_updated_ms:
            now = int(time.time() * 1000)
            new_metadata = new_metadata.model_copy(update={"last_updated_ms": now})
    new_metadata.spec().check_compatible(new_metadata.schema())
    new_metadata.sort_order().check_compatible(new_metadata.schema())
    return new_metadata


def metadata_version(location: str) -> int:
    """The version number a metadata file's name starts with (``00003-<uuid>...``), -1
    when it has none: the next file is numbered one higher."""
    name = location.rsplit("/", 1)[-1]
    head = name.split("-", 1)[0]
    return int(head) if head.isdigit() else -1


def target_schema(info: TableInfo, schema_id: int) -> Schema:
    """The Iceberg schema a definition says (M4): its columns, and its primary key as
    identifier fields when Iceberg can take them (required primitives)."""
    schema = schema_from_columns(info.columns, schema_id=schema_id)
    by_name = {c.name: c for c in info.columns}
    key = [by_name[n] for n in info.primary_key if n in by_name]
    if key and all(not c.nullable and c.type.kind not in ("struct", "map", "list") for c in key):
        schema = Schema(*schema.fields, schema_id=schema_id, identifier_field_ids=[c.id for c in key])
    return schema


def updates_towards(current: TableMetadata, info: TableInfo) -> tuple[TableUpdate, ...]:
    """The Iceberg updates that bring ``current`` to what the definition ``info`` says;
    InvalidDefinitionError naming the table and column where Iceberg's data would not
    agree: a new NOT NULL column, or a column made NOT NULL, on a table with data;
    dropping a column the partition spec or sort order uses."""
    table = f"{info.namespace!r}.{info.name!r}"
    updates: list[TableUpdate] = []
    old = current.schema()
    target = target_schema(info, old.schema_id)
    if target.fields != old.fields or target.identifier_field_ids != old.identifier_field_ids:
        has_data = current.current_snapshot() is not None
        old_by_id = index_by_id(old)
        new_by_id = index_by_id(target)
        for field_id, field in new_by_id.items():
            before = old_by_id.get(field_id)
            if has_data and field.required and (before is None or not before.required):
                raise InvalidDefinitionError(
                    f"table {table} holds data: column {field.name!r} cannot be NOT NULL there "
                    "(rows without a value may exist)"
                )
        used = {f.source_id for spec in current.partition_specs for f in spec.fields}
        used |= {f.source_id for f in current.sort_order().fields}
        for field_id in sorted(used):
            if field_id in old_by_id and field_id not in new_by_id:
                raise InvalidDefinitionError(
                    f"column {old_by_id[field_id].name!r} of table {table} is used by its "
                    "partitioning or sort order and cannot be dropped"
                )
        schema_id = max(s.schema_id for s in current.schemas) + 1
        updates += [AddSchemaUpdate(schema=target_schema(info, schema_id)), SetCurrentSchemaUpdate(schema_id=-1)]
    properties = _properties_of(info)
    removed = [k for k in current.properties if k not in properties]
    changed = {k: v for k, v in properties.items() if current.properties.get(k) != v}
    if changed:
        updates.append(SetPropertiesUpdate(updates=changed))
    if removed:
        updates.append(RemovePropertiesUpdate(removals=removed))
    return tuple(updates)


#: M6: what a managed table's metadata files are called in its checks and errors.
METADATA_KINDS = frozenset({"metadata file", "manifest list", "manifest"})


def metadata_path_problem(path: str, root_uri: str) -> str | None:
    """M6: why ``path`` (a table's ``write.metadata.path``) cannot hold a managed table's
    metadata files in the lakehouse at ``root_uri``, or None when it can."""
    if canonical_location(path).rstrip("/") == canonical_location(root_uri).rstrip("/"):
        return "it is the lakehouse root itself"
    relative = location_within(path, root_uri)
    if relative is None:
        return f"it lies outside the lakehouse root {root_uri!r}"
    if paths.in_reserved_area(relative.strip("/")):
        return "it is the lakehouse root or lies in the lakehouse's reserved area (paths FP2)"
    return None


def in_metadata_area(location: str, root_uri: str) -> bool:
    """M6, readers: ``location`` (a managed table's metadata file, manifest list or
    manifest outside its location) lies inside the root, outside its reserved area."""
    relative = location_within(location, root_uri)
    return relative is not None and not paths.in_reserved_area(relative)


class Confinement:
    """M6: the files of one managed table lie under its location, inside the root (its
    metadata files: anywhere inside the root outside the reserved area)."""

    def __init__(self, table: str, table_location: str, root_uri: str) -> None:
        self.table = table
        self.table_location = table_location
        self.root_uri = root_uri
        #: M7: directories found not to be links by this confinement's checks (one
        #: scan's planning: the table's data directory is walked once, not per file).
        self._clean_dirs: set[str] = set()

    def check(self, location: str, what: str, *, links: bool = True) -> None:
        """CorruptFileError naming ``location`` (a ``what`` of the table) unless it lies
        under the table's location, which lies inside the root, and (``links``, M7) is
        reached through no symbolic link under the root."""
        if location_within(self.table_location, self.root_uri) is None:
            raise CorruptFileError(
                location,
                f"managed table {self.table} is located at {self.table_location!r}, outside the lakehouse "
                f"root {self.root_uri!r}; a managed table's files lie under its location inside the root",
            )
        if location_within(location, self.table_location) is None:
            if what in METADATA_KINDS:
                if not in_metadata_area(location, self.root_uri):
                    raise CorruptFileError(
                        location,
                        f"the {what} it names lies outside the location {self.table_location!r} of managed "
                        f"table {self.table} and outside the lakehouse root {self.root_uri!r} (or in its "
                        "reserved area); a managed table's metadata files lie under its location or its "
                        "write.metadata.path inside the root",
                    )
            else:
                raise CorruptFileError(
                    location,
                    f"the {what} it names lies outside the location {self.table_location!r} of managed table "
                    f"{self.table}; a managed table's files lie under its location inside the lakehouse root",
                )
        if links:
            refuse_links(self.table, location, self.root_uri, what, self._clean_dirs)

    def check_snapshot(self, snapshot: Any, io: FileIO) -> None:
        """Check a snapshot's manifest list, then (reading it) its manifests' locations."""
        self.check(snapshot.manifest_list, "manifest list")
        for manifest in snapshot.manifests(io):
            self.check(manifest.manifest_path, "manifest")

    def check_task(self, task: Any) -> None:
        """Check a planned scan task's data file and delete files."""
        self.check(task.file.file_path, "data file")
        for delete in task.delete_files:
            self.check(delete.file_path, "delete file")


def refuse_links(table: str, location: str, root_uri: str, what: str, checked: set[str] | None = None) -> None:
    """M7: CorruptFileError naming ``location`` (a ``what`` of the managed ``table``) if
    a symbolic link lies on its path under the local root ``root_uri`` (the file itself
    included); nothing to check on an object store. ``checked``: directories already
    found not to be links by this reader (one planning), skipped."""
    link = symlink_within(location, root_uri, checked)
    if link is not None:
        where = "it is" if link == canonical_location(location) else f"{link!r} on its path is"
        raise CorruptFileError(
            location,
            f"the {what} of managed table {table} is reached through a symbolic link: {where} a link "
            f"under the lakehouse root {root_uri!r}; readers never follow links there (they could lead "
            "to any file of the host): replace the link with the file or directory itself",
        )


class ConfinedScan(DataScan):
    """PyIceberg's DataScan whose planning refuses, with CorruptFileError, a managed
    table's manifest list, manifest, data or delete file outside its location (M6),
    before reading it. ``confinement`` None: no check (an EXTERNAL table)."""

    def __init__(
        self,
        table_metadata: TableMetadata,
        io: FileIO,
        row_filter: Any = None,
        selected_fields: tuple[str, ...] = ("*",),
        case_sensitive: bool = True,
        snapshot_id: int | None = None,
        options: Any = None,
        limit: int | None = None,
        catalog: Any = None,
        table_identifier: Any = None,
        confinement: Confinement | None = None,
    ) -> None:
        from pyiceberg.expressions import AlwaysTrue

        super().__init__(
            table_metadata=table_metadata, io=io,
            row_filter=AlwaysTrue() if row_filter is None else row_filter,
            selected_fields=selected_fields, case_sensitive=case_sensitive, snapshot_id=snapshot_id,
            options={} if options is None else options, limit=limit, catalog=catalog,
            table_identifier=table_identifier,
        )  # fmt: skip
        self.confinement = confinement

    def plan_files(self) -> Any:
        if self.confinement is None:
            return super().plan_files()
        snapshot = self.snapshot()
        if snapshot is not None:
            self.confinement.check_snapshot(snapshot, self.io)
        tasks = list(super().plan_files())
        for task in tasks:
            self.confinement.check_task(task)
        return tasks


def check_commit(
    table: str,
    root_uri: str,
    metadata: TableMetadata,
    metadata_location: str,
    updates: tuple[TableUpdate, ...],
    io: FileIO | None,
) -> None:
    """M6 at a commit of the managed ``table``: its location lies inside the root, and
    the new metadata file, the manifest lists of the snapshots ``updates`` add, the
    manifests those snapshots added with their data and delete files, and statistics
    files lie under it; else InvalidLocationError naming the file. (Manifests an
    earlier commit added were checked then; readers check everything again.)"""

    def refuse(location: str, what: str, where: str) -> None:
        raise InvalidLocationError(
            f"table {table}: the {what} {location!r} lies outside {where}; a managed table's files lie "
            "under its location inside the lakehouse root (register the table, or create it with "
            "LOCATION, to keep its files elsewhere)"
        )

    if location_within(metadata.location, root_uri) is None:
        refuse(metadata.location, "table location", f"the lakehouse root {root_uri!r}")
    where = f"the table's location {metadata.location!r}"
    custom = metadata.properties.get(METADATA_PATH)
    if custom:
        problem = metadata_path_problem(custom, root_uri)
        if problem is not None:
            raise InvalidLocationError(
                f"table {table}: write.metadata.path {custom!r} cannot hold its metadata files: {problem}; "
                "a managed table's metadata files lie under its location or a write.metadata.path inside "
                "the lakehouse root (register the table, or create it with LOCATION, to keep its files elsewhere)"
            )
        where += f" and its write.metadata.path {custom!r}"

    def check(location: str, what: str) -> None:
        if location_within(location, metadata.location) is None and not (
            custom and what in METADATA_KINDS and location_within(location, custom) is not None
        ):
            refuse(location, what, where)

    check(metadata_location, "metadata file")
    for update in updates:
        if isinstance(update, (SetStatisticsUpdate, SetPartitionStatisticsUpdate)):
            check(update.statistics.statistics_path, "statistics file")
        if not isinstance(update, AddSnapshotUpdate) or io is None:
            continue
        snapshot = update.snapshot
        check(snapshot.manifest_list, "manifest list")
        for manifest in snapshot_manifests(io, snapshot):  # manifests MF2: decoded once
            if manifest.added_snapshot_id != snapshot.snapshot_id:
                continue  # listed by an earlier commit, checked there (readers check again)
            check(manifest.manifest_path, "manifest")
            for _, path in entry_paths(io, manifest):  # manifests MF6
                check(path, "data file")


class _ReaderIO(FileIO):
    """M5: reads of immutable files under the lakehouse root through a transaction;
    other locations, writes and deletes through the tables' FileIO."""

    def __init__(self, states: TableStates, txn: CatalogTransaction) -> None:
        super().__init__()
        self._states = states
        self._txn = txn

    def new_input(self, location: str) -> InputFile:
        relative = self._states.relative(location)
        if relative is None:
            return self._states.file_io().new_input(location)
        return _StoredInput(location, relative, self._txn)

    def new_output(self, location: str) -> OutputFile:
        return self._states.file_io().new_output(location)

    def delete(self, location: str | InputFile | OutputFile) -> None:
        self._states.file_io().delete(location)


class _StoredInput(InputFile):
    """An immutable file under the root, read whole through a transaction when opened."""

    def __init__(self, location: str, relative: str, txn: CatalogTransaction) -> None:
        super().__init__(location)
        self._relative = relative
        self._txn = txn
        self._bytes: bytes | None = None

    def _data(self) -> bytes:
        """The file's bytes, read once per input (``len`` and ``open`` both need them)."""
        if self._bytes is None:
            self._bytes = self._txn.read_file(self._relative)
        return self._bytes

    def __len__(self) -> int:
        return len(self._data())

    def exists(self) -> bool:
        try:
            self._data()
        except MissingFileError:
            return False
        return True

    def open(self, seekable: bool = True) -> InputStream:
        data = self._data()
        if self.location.endswith(".avro"):
            check_avro(self.location, data)  # IF2: a damaged file is named, never half-read
        return BytesIO(data)


def metadata_bytes(metadata: TableMetadata, location: str) -> bytes:
    """The bytes of a metadata file as PyIceberg's ``ToOutputFile.table_metadata`` writes
    it at ``location`` (its name chooses the compression), for the lakehouse's own
    storage to write. PyIceberg's setting ``legacy-current-snapshot-id`` is read once per
    process: PyIceberg reads its configuration file and the environment again at every
    write, four fifths of the time it takes to write a new table's metadata."""
    json_bytes = metadata.model_dump_json(exclude_none=not _legacy_current_snapshot_id()).encode("utf-8")
    return Compressor.get_compressor(location).bytes_compressor()(json_bytes)


@functools.lru_cache(maxsize=None)
def _legacy_current_snapshot_id() -> bool:
    """PyIceberg's ``legacy-current-snapshot-id`` (config file or environment), read once:
    when set, metadata keeps its None fields (``current-snapshot-id`` written as -1)."""
    return bool(Config().get_bool("legacy-current-snapshot-id"))
