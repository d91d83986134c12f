"""A PyIceberg catalog whose state is the lakehouse (SPEC 8).

Every table is an Iceberg table whose definition names its current metadata file; a
lakehouse version is therefore one consistent state of every table's data.

Rules:

  P1 A table's Iceberg state at lakehouse version v is the metadata file its definition
     names at v. A table whose definition names none (created before its data, by the
     catalog API or an older version of this library) reads as an empty Iceberg table of
     its declared columns, same field ids; its first commit writes its first metadata.
  P2 ``commit_table`` validates PyIceberg's requirements against the table as the
     lakehouse transaction reads it, writes the new metadata file, makes every file the
     commit wrote durable (io F1; what changes nothing in the transaction, the checks and
     the new metadata's bytes, runs while those fsyncs do), and only then points the
     definition at it, with the columns and properties mirrored (schema S1), in one
     definition write.
  P3 Outside a lakehouse transaction each commit is its own lakehouse version. When it
     loses to another writer of the same table (SerializationError), it is tried again
     on the latest version: the requirements are checked again there; an append whose
     only failed requirement is the branch head is rebased (its new manifests listed on
     top of the new head, with the next sequence number; a manifest its merge-append
     wrote, which also lists the old head's files, is replaced by one holding only the
     files it added, writing W5); anything else fails with
     CommitFailedException naming the table. Commits to different tables never fail
     each other (the lakehouse rebases them, transaction C4). Inside a SQL statement
     under autocommit (the scope ``reruns_statement``), a commit that is not a plain
     append is not tried again here: it raises the PEP 249 SerializationError (naming
     the table and the version that won), after deleting the files it wrote, and the
     connection runs the whole statement again on the latest version (connection CN6).
     PyIceberg's own retry loop is therefore never entered from SQL (it logs "Commit
     failed ... retrying", and validates an overwrite by a rule SQL does not need).
  P4 Inside ``lakehouse_transaction()`` (per thread), or on a catalog bound to a DB-API
     connection, commits are staged in one lakehouse transaction and published
     together at its end, or not at all. When another writer commits to one of the
     transaction's tables first, a transaction whose writes all came from plain table
     appends (PyIceberg's ``append``, SQL's INSERT), in SNAPSHOT isolation, runs them
     again, in order, on the latest version (as P3: requirements checked again, appends
     rebased; a table appended to twice gets both, the second on top of the first),
     bounded with jittered backoff (:func:`commit_replaying`). Any other transaction, or
     a write that no longer holds, fails as a whole and no table changes: a block with
     CommitFailedException, a bound catalog's connection with SerializationError at
     ``commit()`` naming the table and the version.
  P5 A catalog opened at a version (number, exported snapshot name or timestamp) reads
     every table as of that version and refuses every change (ReadOnlyError).
  P6 Multi-level namespaces (PyIceberg's and REST clients' ``com.example.sales``) map
     to one TrinityLake namespace whose name joins the levels with dots, as PyIceberg's
     SqlCatalog stores them; the format's name rules (SPEC 3) and byte limit apply to the
     joined name, and SQL reaches it quoted (``"com.example.sales".t``). A namespace
     also exists, for PyIceberg, while a namespace below it does (``com`` while
     ``com.example`` exists): ``namespace_exists``, ``list_tables`` (none) and
     ``load_namespace_properties`` (none) answer for it, ``list_namespaces(parent)``
     lists the next level of every namespace under ``parent`` (by the dotted prefix,
     never by a partial level), ``create_namespace`` makes it a namespace of its own, and
     ``drop_namespace`` refuses it while it has namespaces below it. An empty
     identifier, or one with an empty level, is NoSuchNamespaceError. The format has no
     views: none are listed, and the rest raise NotImplementedError.
  P7 SQL DDL changes the definition through the catalog API first (its checks, its
     column ids); ``follow_definition`` then brings the Iceberg metadata to agree, in the
     same lakehouse transaction. Iceberg's own rules still hold: no NOT NULL column
     appears on a table that holds data, no partition or sort column is dropped.
  P9 A commit names the files its new snapshots add (``expect_files``: manifest lists,
     their manifests, data and delete files), with when this process began writing
     each (io F4): the lakehouse transaction checks, right before it publishes, that
     those old enough for version expiration to have reclaimed them still exist
     (transaction C7; MissingFileError naming the file otherwise, nothing published).
  P8 Files belong to lakehouse versions: nothing here deletes an Iceberg file a version
     may name (``purge_table`` drops; expiration reclaims, maintenance E8), but for the
     owner's opt-in ``write.metadata.delete-after-commit.enabled``: a commit's dropped
     metadata log entries go once its version is published (iceberg.oldmetadata OM1-OM5).
  P10 The namespace ``default`` that a new lakehouse holds from version 0 (catalog K6,
     for SQL users and tools that reflect a default schema) is *unclaimed* while it has
     no property, no comment and no table: ``create_namespace("default")`` then
     succeeds, once, and claims it (its properties, or PyIceberg's minimal
     ``{"exists": "true"}``, are written), as on a catalog that starts empty. Any other
     existing namespace, or a claimed or used ``default``, is NamespaceAlreadyExistsError.
  P11 Errors read as PyIceberg's own catalogs word them, so code and tests written for
     those work unchanged: ``Table does not exist: ns.t`` (NoSuchTableError),
     ``Namespace ns does not exists`` (NoSuchNamespaceError), ``Namespace ns is not
     empty`` (NamespaceNotEmptyError), ``Namespace ns already exists``,
     ``Table ns.t already exists``; the lakehouse's own detail follows where it adds any.
     A namespace created without properties gets PyIceberg's minimal properties
     ``{"exists": "true"}``, stored, as SqlCatalog does.
  P12 A change of namespaces or table definitions (create, drop, rename, register,
     namespace properties) that loses its commit race is run again on the latest
     version when each call is its own version, so the loser sees the winner's result
     (NamespaceAlreadyExistsError, TableAlreadyExistsError, NoSuchTableError, ...)
     instead of a bare CommitFailedException.
  P13 (tables M6) A managed table's files lie under its location inside the lakehouse
     root, its metadata files also under a ``write.metadata.path`` inside the root
     (outside its reserved area, paths FP2; reclaimed by maintenance E12): a commit or
     create naming anything else (a ``location``, ``warehouse`` or ``write.metadata.path``
     outside the root, ``add_files`` of a file elsewhere or with ``..`` leaving the
     table) is InvalidLocationError naming the file or path, nothing published; tables
     loaded here plan with ConfinedScan. ``register_table`` makes an EXTERNAL table,
     whose files may lie anywhere.
  P14 A namespace property whose name or value is None (PyIceberg types properties as
     ``dict[str, Any]``), given to ``create_namespace`` or ``update_namespace_properties``,
     is refused before anything is written with NullPropertyError: the PEP 249
     IntegrityError that is also SQLAlchemy's IntegrityError, as PyIceberg's SqlCatalog
     raises from its NOT NULL columns (sqlcompat SQ1). Any other value that is not a
     string is ValueError.
"""

from __future__ import annotations

import contextlib
import copy
import random
from concurrent.futures import wait
import time
from typing import Any, Callable, TypeVar

from pyiceberg.catalog import MetastoreCatalog, PropertiesUpdateSummary
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
)
from pyiceberg.io import FileIO
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import CommitTableResponse, Table
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder
from pyiceberg.table.update import (
    AddSnapshotUpdate,
    TableRequirement,
    TableUpdate,
    update_table_metadata,
)
from pyiceberg.typedef import EMPTY_DICT, Identifier, Properties
from pyiceberg.view import View

from ..catalog import DEFAULT_NAMESPACE, MANAGED, CatalogTransaction, LakehouseCatalog
from ..errors import (
    IntegrityError,
    InvalidNameError,
    MissingFileError,
    ObjectExistsError,
    ObjectNotEmptyError,
    ObjectNotFoundError,
    ReadOnlyError,
    SerializationError,
)
from ..format import paths
from ..format.paths import METADATA_LOCATION, PREVIOUS_METADATA_LOCATION
from ..storage.locations import location_within
from .keys import check_commit as check_keys
from .rebase import is_plain_append, own_file, rebased_append
from .retention import check_removals, expire_table_snapshots
from .scope import MAX_COMMIT_ATTEMPTS, CatalogScope, OwnScope
from .io import DurableFileIO, file_io_properties, storage_options_from_properties
from .schema import columns_from_schema
from .compaction import is_replace, rebased_replace
from .manifests import entry_paths, snapshot_manifests
from .tables import ICEBERG, TableStates, apply_updates, check_commit
from .writing import LakehouseTable

__all__ = [
    "TrinityLakeCatalog",
    "CatalogScope",
    "METADATA_LOCATION",
    "PREVIOUS_METADATA_LOCATION",
]

_T = TypeVar("_T")


def _namespace_name(namespace: str | Identifier, *, creating: bool = False) -> str:
    """P6: the TrinityLake namespace of a PyIceberg namespace identifier, its levels joined
    with dots. An empty identifier, or one whose levels are all blank, is
    NoSuchNamespaceError, as PyIceberg's own catalogs answer; so is an empty or blank
    level when ``creating``. Otherwise the levels are joined as they are, so that a name
    made in SQL with an empty level (``"x."``, listed as ``("x", "")``) is reached again."""
    parts = MetastoreCatalog.identifier_to_tuple(namespace)
    if creating or not parts or all(not part.strip() for part in parts):
        MetastoreCatalog.namespace_to_string(parts, NoSuchNamespaceError)
    return ".".join(parts)


def _levels(name: str) -> Identifier:
    """P6: the PyIceberg namespace identifier of a TrinityLake namespace."""
    return tuple(name.split("."))


def _has_below(names: list[str], name: str) -> bool:
    """P6: some namespace of ``names`` lies below ``name`` (``name.x...``)."""
    prefix = name + "."
    return any(other.startswith(prefix) for other in names)


def _no_such_namespace(name: str, detail: str = "") -> NoSuchNamespaceError:
    return NoSuchNamespaceError(f"Namespace {name} does not exists" + (f" ({detail})" if detail else ""))


def _no_such_table(namespace: str, name: str) -> NoSuchTableError:
    return NoSuchTableError(f"Table does not exist: {namespace}.{name}")


def _checked_properties(name: str, properties: Properties) -> dict[str, str]:
    """P14: namespace ``name``'s ``properties``, every name and value a string. A None
    name or value is NullPropertyError (SQLAlchemy is imported only then); any other
    value that is not a string is ValueError."""
    for key, value in properties.items():
        if key is None or value is None:
            from .sqlcompat import NullPropertyError

            raise NullPropertyError(
                f"namespace {name!r}: property {key!r} = {value!r}: a namespace property's name "
                "and value must not be null"
            )
        if not isinstance(value, str):
            raise ValueError(f"namespace {name!r}: property {key!r} has the value {value!r}, not a string")
    return dict(properties)


#: P11: the properties PyIceberg's SqlCatalog gives a namespace created without any.
MINIMAL_NAMESPACE_PROPERTIES = {"exists": "true"}


class TrinityLakeCatalog(MetastoreCatalog):
    """PyIceberg's Catalog over a TrinityLake lakehouse (see the module docstring).

    Properties: ``uri`` (the lakehouse location, required), ``create`` ("true": create
    the lakehouse if missing), ``warehouse`` (where new tables go; default the lakehouse
    root), ``version`` (open read-only at a version
    number, exported snapshot name or ISO timestamp) and PyIceberg's FileIO properties
    (``s3.endpoint``, ``s3.access-key-id``, ...), which also reach the lakehouse's files.
    """

    def __init__(self, name: str, **properties: str) -> None:
        lakehouse: LakehouseCatalog | None = properties.pop("lakehouse", None)  # type: ignore[assignment]
        scope: CatalogScope | None = properties.pop("scope", None)  # type: ignore[assignment]
        bound_read_only = bool(properties.pop("read_only", False))
        tables: TableStates | None = properties.pop("tables", None)  # type: ignore[assignment]
        super().__init__(name, **properties)
        if lakehouse is None:
            uri = properties.get("uri")
            if not uri:
                raise ValueError("TrinityLakeCatalog needs the property 'uri': the lakehouse location")
            lakehouse = LakehouseCatalog(
                uri,
                create=str(properties.get("create", "false")).lower() == "true",
                storage_options=storage_options_from_properties(properties) or None,
            )
        self.lakehouse = lakehouse
        version = properties.get("version")
        pinned = None if version is None else lakehouse.resolve_version_text(version)  # P5
        self._own = OwnScope(lakehouse, pinned)
        self._scope: CatalogScope = scope if scope is not None else self._own
        self.read_only = pinned is not None or bound_read_only
        io_properties = {**file_io_properties(lakehouse.storage_options, lakehouse.storage.root_uri), **self.properties}
        io_properties.pop("py-catalog-impl", None)
        self._io = DurableFileIO(io_properties)
        #: The tables' Iceberg states (shared with the SQL layer of a bound connection).
        self.tables = tables if tables is not None else TableStates(
            lakehouse.storage.root_uri, self.properties.get("warehouse"), lambda: self._io
        )

    @classmethod
    def bound(
        cls,
        name: str,
        lakehouse: LakehouseCatalog,
        scope: CatalogScope,
        *,
        read_only: bool = False,
        tables: TableStates | None = None,
        **properties: str,
    ) -> "TrinityLakeCatalog":
        """A catalog over an open lakehouse whose reads and writes run in ``scope``
        (a DB-API connection's transaction: P4); ``read_only`` for a connection at a
        fixed version; ``tables``: the connection's table states, shared with SQL."""
        return cls(name, lakehouse=lakehouse, scope=scope, read_only=read_only, tables=tables, **properties)  # type: ignore[arg-type]

    # -- transactions (P3-P5) ---------------------------------------------------------------

    def lakehouse_transaction(self) -> contextlib.AbstractContextManager[None]:
        """A block whose commits, to any number of tables, are one lakehouse version, or
        none (P4). Per thread; not on a catalog bound to a connection (its transaction
        is the connection's: commit there)."""
        if self._scope is not self._own:
            raise ValueError("this catalog is bound to a DB-API connection: use its transaction")
        return self._own.block()

    def at_version(self, version: int | str) -> "TrinityLakeCatalog":
        """This lakehouse read-only as of ``version`` (P5): a version number, an exported
        snapshot name, or an ISO timestamp."""
        properties = {k: v for k, v in self.properties.items() if k not in ("create", "version")}
        return TrinityLakeCatalog(self.name, lakehouse=self.lakehouse, version=str(version), **properties)  # type: ignore[arg-type]

    def _read(self, work: Callable[[CatalogTransaction], _T]) -> _T:
        return self._translated(lambda: self._scope.run(work, writes=False))

    def _write(self, work: Callable[[CatalogTransaction], _T]) -> _T:
        if self.read_only:
            raise ReadOnlyError(f"catalog {self.name!r} is open at a fixed lakehouse version: read-only")
        return self._translated(lambda: self._scope.run(work, writes=True))

    def _write_object(self, work: Callable[[CatalogTransaction], _T]) -> _T:
        """P12: a change of namespaces or table definitions that lost its commit race to
        another writer is run again on the latest version (when each call is its own
        version), so it sees the winner's result: the loser of two creates gets
        NamespaceAlreadyExistsError or TableAlreadyExistsError, of two drops
        NoSuchTableError, never a bare CommitFailedException."""
        for attempt in range(MAX_COMMIT_ATTEMPTS):
            try:
                return self._write(work)
            except CommitFailedException as e:
                if (not isinstance(e.__cause__, SerializationError) or not self._scope.commits_each_call()
                        or attempt == MAX_COMMIT_ATTEMPTS - 1):
                    raise
            time.sleep(min(0.2, 0.002 * 2**attempt) * random.random())
        raise AssertionError("unreachable")  # pragma: no cover - the last attempt raised

    @staticmethod
    def _translated(call: Callable[[], _T]) -> _T:
        try:
            return call()
        except SerializationError as e:
            raise CommitFailedException(str(e)) from e

    # -- namespaces -------------------------------------------------------------------------

    def create_namespace(self, namespace: str | Identifier, properties: Properties = EMPTY_DICT) -> None:
        """Create a namespace (P6: one TrinityLake namespace, levels joined with dots);
        without properties it gets PyIceberg's minimal ``{"exists": "true"}`` (P11). The
        lakehouse's unclaimed ``default`` is claimed instead (P10)."""
        name = _namespace_name(namespace, creating=True)
        props = _checked_properties(name, properties)
        comment = props.pop("comment", None)
        if not props and comment is None:
            props = dict(MINIMAL_NAMESPACE_PROPERTIES)

        def create(txn: CatalogTransaction) -> None:
            if name == DEFAULT_NAMESPACE and txn.namespace_exists(name) and _unclaimed(txn, name):
                txn.alter_namespace(name, set_properties=props, comment=comment if comment is not None else ...)
                return
            txn.create_namespace(name, properties=props, comment=comment)

        try:
            self._write_object(create)
        except ObjectExistsError:
            raise NamespaceAlreadyExistsError(f"Namespace {name} already exists") from None

    def drop_namespace(self, namespace: str | Identifier) -> None:
        name = _namespace_name(namespace)

        def drop(txn: CatalogTransaction) -> None:
            kind = self._namespace_kind(txn, name)
            if kind is None:
                raise ObjectNotFoundError(f"namespace {name!r} does not exist")
            if kind == "implicit":
                raise ObjectNotEmptyError(f"namespaces below {name!r} exist: drop them first")
            txn.drop_namespace(name)

        try:
            self._write_object(drop)
        except ObjectNotFoundError:
            raise _no_such_namespace(name) from None
        except ObjectNotEmptyError as e:
            raise NamespaceNotEmptyError(f"Namespace {name} is not empty: {e}") from None

    def _namespace_kind(self, txn: CatalogTransaction, name: str) -> str | None:
        """P6: "own" (a TrinityLake namespace), "implicit" (only namespaces below it
        exist) or None (also for a name no namespace can have: too long, ...)."""
        try:
            if txn.namespace_exists(name):
                return "own"
        except InvalidNameError:
            return None
        return "implicit" if _has_below(txn.list_namespaces(), name) else None

    def namespace_exists(self, namespace: str | Identifier) -> bool:
        name = _namespace_name(namespace)
        return self._read(lambda txn: self._namespace_kind(txn, name)) is not None

    def list_namespaces(self, namespace: str | Identifier = ()) -> list[Identifier]:
        """The next level of the namespaces under ``namespace`` (the first level of all
        without it), in name order (P6)."""
        parent = _levels(_namespace_name(namespace)) if namespace else ()

        def listing(txn: CatalogTransaction) -> list[Identifier]:
            names = txn.list_namespaces()
            if parent and self._namespace_kind(txn, ".".join(parent)) is None:
                raise _no_such_namespace(".".join(parent))
            depth = len(parent)
            below = {levels[: depth + 1] for levels in map(_levels, names)
                     if len(levels) > depth and levels[:depth] == parent}
            return sorted(below)

        return self._read(listing)

    def load_namespace_properties(self, namespace: str | Identifier) -> Properties:
        name = _namespace_name(namespace)

        def load(txn: CatalogTransaction) -> Properties:
            kind = self._namespace_kind(txn, name)
            if kind is None:
                raise _no_such_namespace(name)
            if kind == "implicit":
                return {}
            info = txn.describe_namespace(name)
            props = dict(info.properties)
            if info.comment is not None:
                props["comment"] = info.comment
            return props

        return self._read(load)

    def update_namespace_properties(
        self, namespace: str | Identifier, removals: set[str] | None = None, updates: Properties = EMPTY_DICT
    ) -> PropertiesUpdateSummary:
        name = _namespace_name(namespace)
        updates = _checked_properties(name, updates)

        def update(txn: CatalogTransaction) -> PropertiesUpdateSummary:
            kind = self._namespace_kind(txn, name)
            if kind != "own":
                detail = "only namespaces below it exist: create it first" if kind == "implicit" else ""
                raise _no_such_namespace(name, detail)
            info = txn.describe_namespace(name)
            current = dict(info.properties)
            if info.comment is not None:
                current["comment"] = info.comment
            summary, new = self._get_updated_props_and_update_summary(current, removals, updates)
            comment = new.pop("comment", None)
            unset = [key for key in current if key not in new and key != "comment"]
            txn.alter_namespace(name, set_properties=new, unset_properties=unset, comment=comment)
            return summary

        return self._write_object(update)

    # -- tables ----------------------------------------------------------------------------

    def _names(self, identifier: str | Identifier, *, creating: bool = False) -> tuple[str, str]:
        """(TrinityLake namespace, table name) of a table identifier (P6: every level
        but the last is the namespace). Without a namespace: NoSuchNamespaceError when
        ``creating``, else NoSuchTableError."""
        parts = self.identifier_to_tuple(identifier)
        if len(parts) < 2 or not parts[-1]:
            text = ".".join(parts)
            if creating:
                raise NoSuchNamespaceError(f"table {text!r}: a table identifier is <namespace>.<table>")
            raise NoSuchTableError(f"Table does not exist: {text}")
        return _namespace_name(parts[:-1], creating=creating), parts[-1]

    @staticmethod
    def identifier_to_database_and_table(
        identifier: str | Identifier,
        err: type[ValueError] | type[NoSuchTableError] | type[NoSuchNamespaceError] = ValueError,
    ) -> tuple[str, str]:
        """(namespace, table) with a multi-level namespace's levels joined by dots (P6);
        PyIceberg's own refuses more than two levels."""
        parts = MetastoreCatalog.identifier_to_tuple(identifier)
        if len(parts) < 2:
            raise err(f"Invalid path: {'.'.join(parts)!r} is not <namespace>.<table>")
        return ".".join(parts[:-1]), parts[-1]

    def _stage_metadata(self, metadata: TableMetadata, location: str) -> dict[str, bytes]:
        """Make every file this catalog's FileIO wrote durable (io F1), then stage the
        new metadata file (tables.TableStates.stage)."""
        self._io.sync_written()
        return self.tables.stage(metadata, location)

    def _table(
        self, namespace: str, name: str, metadata: TableMetadata, location: str | None, *, managed: bool = True
    ) -> Table:
        table = LakehouseTable(
            identifier=_levels(namespace) + (name,),
            metadata=metadata,
            metadata_location=location or "",
            io=self._io,
            catalog=self,
        )
        if managed:  # P13: its scans refuse files outside its location
            table.lakehouse_root = self.tables.root_uri
        return table

    def load_table(self, identifier: str | Identifier) -> Table:
        namespace, name = self._names(identifier)
        try:
            info, metadata, location = self._read(lambda txn: self.tables.state(txn, namespace, name))
        except ObjectNotFoundError:
            raise _no_such_table(namespace, name) from None
        return self._table(namespace, name, metadata, location, managed=info.table_type == MANAGED)

    def _load_file_io(self, properties: Properties = EMPTY_DICT, location: str | None = None) -> FileIO:
        return self._io

    def create_table(
        self,
        identifier: str | Identifier,
        schema: Schema | Any,
        location: str | None = None,
        partition_spec: PartitionSpec = UNPARTITIONED_PARTITION_SPEC,
        sort_order: SortOrder = UNSORTED_SORT_ORDER,
        properties: Properties = EMPTY_DICT,
    ) -> Table:
        namespace, name = self._names(identifier, creating=True)
        staged = self._create_staged_table(identifier, schema, location, partition_spec, sort_order, properties)
        metadata = staged.metadata
        metadata_location = staged.metadata_location

        def create(txn: CatalogTransaction) -> None:
            if txn.table_exists(namespace, name):
                raise TableAlreadyExistsError(f"Table {namespace}.{name} already exists")
            if not txn.namespace_exists(namespace):
                raise _no_such_namespace(namespace)
            check_commit(f"{namespace}.{name}", self.tables.root_uri, metadata, metadata_location, (), None)  # M6
            files = self._stage_metadata(metadata, metadata_location)
            self._create_definition(txn, namespace, name, metadata, metadata_location, external=False, files=files)

        self._write_object(create)
        return self._table(namespace, name, metadata, metadata_location)

    def _get_default_warehouse_location(self, database_name: str, table_name: str) -> str:
        return paths.new_table_location(self.tables.warehouse, database_name, table_name)

    @staticmethod
    def _create_definition(
        txn: CatalogTransaction,
        namespace: str,
        name: str,
        metadata: TableMetadata,
        metadata_location: str,
        *,
        external: bool,
        files: dict[str, bytes],
    ) -> None:
        props = dict(metadata.properties)
        comment = props.pop("comment", None)
        txn.create_table(
            namespace,
            name,
            columns_from_schema(metadata.schema()),
            comment=comment,
            properties=props,
            table_format=ICEBERG,
            table_type="EXTERNAL" if external else None,
            format_properties={METADATA_LOCATION: metadata_location},
            files=files,
        )

    def register_table(self, identifier: str | Identifier, metadata_location: str) -> Table:
        """Add an existing Iceberg table by its metadata file, without copying: EXTERNAL,
        so expiration never deletes its files (SPEC 8)."""
        namespace, name = self._names(identifier, creating=True)

        def register(txn: CatalogTransaction) -> Table:
            metadata = self.tables.metadata(txn, metadata_location)
            if txn.table_exists(namespace, name):
                raise TableAlreadyExistsError(f"Table {namespace}.{name} already exists")
            if not txn.namespace_exists(namespace):
                raise _no_such_namespace(namespace)
            self._create_definition(txn, namespace, name, metadata, metadata_location, external=True, files={})
            return self._table(namespace, name, metadata, metadata_location, managed=False)

        return self._write_object(register)

    def drop_table(self, identifier: str | Identifier) -> None:
        namespace, name = self._names(identifier)
        try:
            self._write_object(lambda txn: txn.drop_table(namespace, name))
        except ObjectNotFoundError:
            raise _no_such_table(namespace, name) from None

    def rename_table(self, from_identifier: str | Identifier, to_identifier: str | Identifier) -> Table:
        namespace, name = self._names(from_identifier)
        new_namespace, new_name = self._names(to_identifier, creating=True)

        def rename(txn: CatalogTransaction) -> None:
            if not txn.table_exists(namespace, name):
                raise _no_such_table(namespace, name)
            if not txn.namespace_exists(new_namespace):
                raise _no_such_namespace(new_namespace)
            txn.rename_table(namespace, name, new_namespace, new_name)

        try:
            self._write_object(rename)
        except ObjectExistsError:
            raise TableAlreadyExistsError(f"Table {new_namespace}.{new_name} already exists") from None
        return self.load_table(to_identifier)

    def list_tables(self, namespace: str | Identifier) -> list[Identifier]:
        name = _namespace_name(namespace)

        def listing(txn: CatalogTransaction) -> list[tuple[str, str]]:
            kind = self._namespace_kind(txn, name)
            if kind is None:
                raise _no_such_namespace(name)
            return txn.list_tables(name) if kind == "own" else []

        return [_levels(ns) + (t,) for ns, t in self._read(listing)]

    # -- commits (P2, P3) ----------------------------------------------------------------------

    def commit_table(
        self, table: Table, requirements: tuple[TableRequirement, ...], updates: tuple[TableUpdate, ...]
    ) -> CommitTableResponse:
        namespace, name = self._names(table.name())
        io = table.io if isinstance(table.io, DurableFileIO) else self._io
        plain_append = is_plain_append(updates)
        rebaseable = plain_append or is_replace(updates)  # compaction CP5
        self._scope.note_commit((namespace, name), rebaseable)
        for attempt in range(MAX_COMMIT_ATTEMPTS):
            try:
                return self._write(lambda txn: self._commit_once(txn, namespace, name, requirements, updates, io))
            except IntegrityError:
                if self._scope.commits_each_call():
                    _discard_written(updates, io)  # keys PK4: never tried again
                raise
            except CommitFailedException as e:
                if not isinstance(e.__cause__, SerializationError) or not self._scope.commits_each_call():
                    raise  # in a transaction, its conflicts are decided at its end (P4)
                if not rebaseable and self._scope.reruns_statement():
                    _discard_uncommitted(updates, io)  # P3: the statement runs again
                    raise e.__cause__ from None
                time.sleep(min(0.2, 0.002 * 2**attempt) * random.random())
        raise CommitFailedException(
            f"table {namespace}.{name}: gave up after {MAX_COMMIT_ATTEMPTS} attempts, other writers kept committing first"
        )

    def _commit_once(
        self,
        txn: CatalogTransaction,
        namespace: str,
        name: str,
        requirements: tuple[TableRequirement, ...],
        updates: tuple[TableUpdate, ...],
        io: DurableFileIO,
    ) -> CommitTableResponse:
        try:
            info, current, current_location = self.tables.state(txn, namespace, name)
        except ObjectNotFoundError:
            return self._commit_create(txn, namespace, name, requirements, updates)
        syncing = io.sync_written_soon()  # io F1, overlapping the work below
        try:
            try:
                for requirement in requirements:
                    requirement.validate(current)
                _check_fresh(current, updates)
            except CommitFailedException as e:
                rebased = rebased_append(current, requirements, updates, io)
                if rebased is None:
                    try:
                        rebased = rebased_replace(current, requirements, updates, io)  # compaction CP5
                    except CommitFailedException as conflict:
                        raise CommitFailedException(f"table {namespace}.{name}: {conflict}") from None
                if rebased is None:
                    raise CommitFailedException(f"table {namespace}.{name}: {e}") from None
                updates = rebased
            check_removals(f"{namespace}.{name}", current, updates)  # retention RT4
            updated = apply_updates(current, updates, metadata_location=current_location)
            if current_location is not None and updated == current:
                return CommitTableResponse(metadata=current, metadata_location=current_location)
            check_keys(f"{namespace}.{name}", current, updated, io, declared=info.primary_key,
                       confinement=self.tables.confinement(info, updated))  # keys PK2
            owner = f"table '{namespace}'.'{name}'"
            new_files = self._new_files(updates, io, owner)
            # io F1: the work that changes nothing in txn overlaps the fsyncs too
            prepared = self.tables.prepare_publish(info, updated, current_location, updates=updates, io=io)
            syncing.result()
            io.sync_written()  # what was written since (a rebased manifest list)
            txn.expect_files(new_files, owner)  # P9
        finally:
            wait([syncing])  # never leave a sync running behind an error
        new_location = self.tables.publish(  # only now: every file it reaches is durable
            txn,
            info,
            updated,
            current_location,
            columns=columns_from_schema(updated.schema(), info.columns),
            properties=dict(updated.properties),
            prepared=prepared,
        )
        return CommitTableResponse(metadata=updated, metadata_location=new_location)

    def _new_files(self, updates: tuple[TableUpdate, ...], io: DurableFileIO, owner: str) -> dict[str, float | None]:
        """P9: the files under the lakehouse root that the new snapshots of ``updates``
        add (manifest lists, their own manifests, the data and delete files those add),
        with the moment this process began writing each (io F4; None: unknown)."""
        root = self.lakehouse.storage.root_uri
        found: dict[str, float | None] = {}

        def note(location: str) -> None:
            relative = location_within(location, root)  # storage U4: one canonical form
            if relative is not None:
                found[relative] = io.created_at(location)

        for location in _added_files(updates, io, owner):
            note(location)
        return found

    def _commit_create(
        self,
        txn: CatalogTransaction,
        namespace: str,
        name: str,
        requirements: tuple[TableRequirement, ...],
        updates: tuple[TableUpdate, ...],
    ) -> CommitTableResponse:
        """The commit of a create-table transaction (the table does not exist yet)."""
        for requirement in requirements:
            requirement.validate(None)
        metadata = update_table_metadata(self._empty_table_metadata(), updates, enforce_validation=True)
        provider = load_location_provider(metadata.location, metadata.properties)
        location = provider.new_table_metadata_file_location(0)
        if not txn.namespace_exists(namespace):
            raise _no_such_namespace(namespace)
        check_commit(f"{namespace}.{name}", self.tables.root_uri, metadata, location, updates, self._io)  # M6
        check_keys(f"{namespace}.{name}", None, metadata, self._io)  # keys PK2
        files = self._stage_metadata(metadata, location)
        self._create_definition(txn, namespace, name, metadata, location, external=False, files=files)
        return CommitTableResponse(metadata=metadata, metadata_location=location)

    # -- compaction (iceberg.compaction) ---------------------------------------------------------

    def commits_each_call(self) -> bool:
        """Whether each commit through this catalog is its own lakehouse version (not
        staged in a transaction: P4); compaction CP6 compacts at once only then."""
        return self._scope.commits_each_call()

    def defer_compaction(self, identifier: str | Identifier) -> bool:
        """Compaction CP6 in a transaction: note the table, due for an automatic
        compaction, to be compacted after the transaction commits, as its own version
        (session_scope SS4). False when this catalog's scope cannot defer (a catalog
        not bound to a connection): the compaction is then skipped."""
        defer = getattr(self._scope, "defer_compaction", None)
        if defer is None:
            return False
        defer(self._names(identifier))
        return True

    def optimize_table(self, identifier: str | Identifier, target_file_size_bytes: int | None = None) -> Any:
        """Compact a table (SQL's OPTIMIZE): its small data files and their position
        deletes rewritten into files of its target size (``write.target-file-size-bytes``,
        or ``target_file_size_bytes``) and its manifests rewritten, as one replace
        snapshot and one lakehouse version (compaction CP1-CP5). Returns the
        CompactionResult (all zero when the table was already compact)."""
        from .compaction import compact

        return compact(self.load_table(identifier), target_size=target_file_size_bytes)

    # -- snapshot retention (iceberg.retention RT1-RT6) ------------------------------------------

    def expire_snapshots(
        self,
        identifier: str | Identifier,
        older_than_ms: int | None = None,
        retain_last: int | None = None,
    ) -> list[int]:
        """Drop the table's snapshots that its retention no longer keeps (Iceberg's
        ``expire_snapshots``; retention RT1-RT5): older than ``older_than_ms`` (epoch
        ms; default now minus ``history.expire.max-snapshot-age-ms``, 5 days), except
        the newest ``retain_last`` of each branch (default
        ``history.expire.min-snapshots-to-keep``, 1) and every ref's head. One new
        metadata file, one lakehouse version (none when nothing is dropped); the
        files the dropped snapshots alone reach are reclaimed by version expiration
        once no kept lakehouse version names an older metadata file. Returns the
        dropped snapshot ids, oldest first."""
        namespace, name = self._names(identifier)
        self._scope.note_commit((namespace, name), False)

        def expire(txn: CatalogTransaction) -> list[int]:
            try:
                return expire_table_snapshots(
                    self.tables, txn, namespace, name, int(time.time() * 1000), older_than_ms, retain_last
                )
            except ObjectNotFoundError:
                raise _no_such_table(namespace, name) from None

        return self._write_object(expire)

    # -- SQL DDL: the Iceberg metadata follows the definition (P7) -------------------------------

    # -- files belong to versions (P8) ------------------------------------------------------------

    def purge_table(self, identifier: str | Identifier) -> None:
        """Drop the table. Its files are not deleted here: older lakehouse versions
        still read them (time travel, rollback); version expiration deletes them once
        no kept version reaches them (P8)."""
        self.drop_table(identifier)

    def _delete_old_metadata(self, io: FileIO, base: TableMetadata, metadata: TableMetadata) -> None:
        """Nothing: PyIceberg's Table calls it before a lakehouse transaction publishes;
        the commit deletes them once its version is (P8, iceberg.oldmetadata OM2)."""

    # -- views (P6) ------------------------------------------------------------------------------

    def list_views(self, namespace: str | Identifier) -> list[Identifier]:
        return []

    def view_exists(self, identifier: str | Identifier) -> bool:
        return False

    def load_view(self, identifier: str | Identifier) -> View:
        raise NoSuchViewError(f"view {identifier!r}: a TrinityLake lakehouse has no views")

    def drop_view(self, identifier: str | Identifier) -> None:
        raise NoSuchViewError(f"view {identifier!r}: a TrinityLake lakehouse has no views")

    def register_view(self, identifier: str | Identifier, metadata_location: str) -> View:
        raise NotImplementedError("a TrinityLake lakehouse has no views")

    def close(self) -> None:
        self.tables.clear()


def _unclaimed(txn: CatalogTransaction, name: str) -> bool:
    """P10: the namespace has no property, no comment and no table."""
    info = txn.describe_namespace(name)
    return not info.properties and info.comment is None and not txn.list_tables(name)


def _check_fresh(current: TableMetadata, updates: tuple[TableUpdate, ...]) -> None:
    """CommitFailedException when a new snapshot was made on an older state of the table
    than ``current`` although its branch head has the same id (an append rebased by P3
    keeps its snapshot id, as Iceberg's own retries do, so a table object that read the
    table before the rebase passes PyIceberg's requirements with a stale base)."""
    if current.format_version < 2:
        return  # format version 1 has no sequence numbers
    last = current.last_sequence_number
    for update in updates:
        if isinstance(update, AddSnapshotUpdate):
            sequence_number = update.snapshot.sequence_number
            if sequence_number is not None and sequence_number <= last:
                raise CommitFailedException(
                    f"snapshot {update.snapshot.snapshot_id} was made on an older state of the table "
                    f"(sequence number {sequence_number}, the table is at {last}): "
                    "refresh the table and retry"
                )


def _added_files(updates: tuple[TableUpdate, ...], io: FileIO, owner: str = "the commit") -> list[str]:
    """The locations the new snapshots of ``updates`` add: each one's manifest list, the
    manifests it wrote, and the data and delete files those add (MissingFileError when
    one of those lists is gone)."""
    from pyiceberg.manifest import ManifestEntryStatus

    added: list[str] = []
    for update in updates:
        if not isinstance(update, AddSnapshotUpdate):
            continue
        snapshot = update.snapshot
        with own_file(snapshot.manifest_list, owner):
            manifests = snapshot_manifests(io, snapshot)  # manifests MF2: check_commit read it
        for manifest in manifests:
            if manifest.added_snapshot_id != snapshot.snapshot_id:
                continue
            with own_file(manifest.manifest_path, owner):
                entries = entry_paths(io, manifest)  # manifests MF6: what its writer wrote
            for status, path in entries:
                if status == ManifestEntryStatus.ADDED:
                    added.append(path)
            added.append(manifest.manifest_path)
        added.append(snapshot.manifest_list)
    return added


def _discard_written(updates: tuple[TableUpdate, ...], io: FileIO) -> None:
    """keys PK4: delete, best effort, the files of a refused commit that this process
    wrote through ``io`` (io F4 remembers them): never a file the commit only names, as
    ``add_files`` names the user's own data files."""
    created_at = getattr(io, "created_at", None)
    if created_at is None:
        return
    try:
        doomed = [location for location in _added_files(updates, io) if created_at(location) is not None]
    except Exception:  # noqa: BLE001 - best effort: expiration removes what stays (E8)
        return
    for location in doomed:
        try:
            io.delete(location)
        except Exception:  # noqa: BLE001 - as above
            pass


def _discard_uncommitted(updates: tuple[TableUpdate, ...], io: FileIO) -> None:
    """Delete, best effort, the files the new snapshots of ``updates`` added: a commit
    that failed and will never be tried again with them (P3). Nothing else names them."""
    try:
        doomed = _added_files(updates, io)
    except Exception:  # noqa: BLE001 - best effort: expiration removes what stays (E8)
        return
    for location in doomed:
        try:
            io.delete(location)
        except Exception:  # noqa: BLE001 - as above
            pass
