"""The catalog: namespaces, tables and history, on top of transactions (SPEC 3, 5, 7).

This is the object API that the SQL layer, the Iceberg layer and Spark call:
:class:`LakehouseCatalog` is a lakehouse location opened for catalog work (versions,
history, rollback, export; expiration, which also reclaims Iceberg files, is
``maintenance.expire_versions`` above it); :class:`CatalogTransaction` is one transaction's
view of the namespaces and tables, begun by ``LakehouseCatalog.begin()``; and
:class:`DefinitionCache` is the one cache of definition files (and of what is derived
from them) by path, which a LakehouseCatalog hands to each of its transactions. The
catalog knows what a namespace and a table are; it never builds a node file (that is
the tree's job) and never parses SQL: listings keep names by a predicate, not by a
pattern language.

Rules kept here:

  K1 Names are validated (SPEC 3) before anything is written; definitions are validated
     (types, unique column names, primary key columns) before anything is written.
  K2 The value of an object key is the path of its definition file; every change writes
     a new definition file (immutable, uniquely named) and points the key at it.
  K3 A table exists only inside an existing namespace. Creating a table guards its
     namespace key and dropping a namespace guards its table range, so a concurrent
     create and drop cannot both commit even under snapshot isolation.
  K4 Column ids are unique within a table and never reused: the highest id ever given
     is kept in the table's reserved property ``trinitylake.last-column-id``.
  K5 Comments live in ``properties["comment"]`` of the namespace, table or column;
     the APIs show them separately and hide reserved ``trinitylake.`` properties.
  K6 A new lakehouse has the namespace ``default`` (DEFAULT_NAMESPACE), written in
     version 0 itself, as Spark's and Hive's catalogs have one: tools that reflect the
     default schema work on a fresh lakehouse. It is an ordinary namespace (it can be
     dropped), and opening an existing lakehouse never creates it: opening never writes.
     A lakehouse whose namespace names are limited to fewer bytes than "default" has
     no such namespace.
  K7 A definition file is read only through the key that points at it, and must agree
     with it: a namespace key points at a namespace definition of that name, a table
     key at a table definition of that name (CorruptFileError naming the file; a file
     of the other kind fails to decode as this kind).
  K8 A MANAGED table's definition never names an Iceberg metadata file outside the
     lakehouse root (InvalidLocationError naming it, before anything is written): its
     files lie inside the root (iceberg.tables M6; readers check it again, since a
     writer of a shared lakehouse may write definitions by other means).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

from .errors import (
    CorruptFileError,
    InvalidDefinitionError,
    InvalidLocationError,
    InvalidNameError,
    MissingFileError,
    ObjectExistsError,
    ObjectNotEmptyError,
    ObjectNotFoundError,
    ProgrammingError,
    SerializationError,
)
from .format import keys as keyfmt
from .format import paths
from .format.definitions import (
    LakehouseDef,
    LakehouseSettings,
    NamespaceDef,
    TableDef,
    decode_namespace_def,
    decode_table_def,
    encode,
    new_lakehouse_def,
)
from .format.types import (
    ColumnCache,
    ColumnSpec,
    TypeSpec,
    from_proto_columns,
    max_column_id,
    nested_fields,
    to_proto_columns,
)
from .storage import Storage
from .storage.locations import location_within
from .lakehouse import Lakehouse, Snapshot
from .transaction import Isolation, Transaction, begin, rollback_to

COMMENT = "comment"
RESERVED_PREFIX = "trinitylake."
LAST_COLUMN_ID = "trinitylake.last-column-id"
LOCATION = "location"
MANAGED = "MANAGED"
EXTERNAL = "EXTERNAL"

_T = TypeVar("_T")


@dataclass(frozen=True)
class NamespaceInfo:
    name: str
    properties: dict[str, str]
    comment: str | None


@dataclass(frozen=True)
class TableInfo:
    namespace: str
    name: str
    columns: tuple[ColumnSpec, ...]
    primary_key: tuple[str, ...]
    comment: str | None
    properties: dict[str, str]
    table_type: str
    table_format: str
    location: str | None
    definition_path: str
    #: The table format's own pointers (SPEC 8: ``metadata_location`` and
    #: ``previous_metadata_location`` of an Iceberg table), reserved keys included.
    format_properties: dict[str, str] = field(default_factory=dict)
    #: Every property, reserved ``trinitylake.`` ones included.
    all_properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class VersionInfo:
    version: int
    created_at_millis: int
    previous_version: int | None
    rollback_from_version: int | None
    changes: tuple[str, ...]


#: What the listings take to keep only some names: a predicate on one name, kept when
#: it returns a true value; a compiled regex's ``fullmatch`` is one. The catalog knows no
#: pattern language: SQL's LIKE is turned into such a predicate by the SQL layer
#: (``trinitylake_dbapi.like_to_regex(pattern).fullmatch``).
NameFilter = Callable[[str], object]


def _check_name_filter(matching: object) -> None:
    """A text where a predicate belongs is refused by name: listings took LIKE patterns
    before the SQL layer became LIKE's one home."""
    if matching is not None and not callable(matching):
        raise ProgrammingError(
            f"a listing keeps the names a predicate accepts, not {matching!r}: for a LIKE "
            "pattern pass trinitylake_dbapi.like_to_regex(pattern).fullmatch"
        )


def _visible(properties: Any) -> dict[str, str]:
    return {k: v for k, v in properties.items() if k != COMMENT and not k.startswith(RESERVED_PREFIX)}


def _check_property_keys(keys: Iterable[str], what: str) -> None:
    for key in keys:
        if not isinstance(key, str) or not key:
            raise InvalidDefinitionError(f"{what} property names must be non-empty strings")
        if key.startswith(RESERVED_PREFIX):
            raise InvalidDefinitionError(f"{what} property {key!r} is reserved")


DEFAULT_NAMESPACE = "default"


def _check_new_column_names(columns: Sequence[ColumnSpec]) -> None:
    """Rule N2 of format/keys.py for new columns and all their struct fields, by path."""
    todo: list[tuple[ColumnSpec, str | None]] = [(c, None) for c in columns]
    while todo:
        column, parent = todo.pop()
        kind = "column" if parent is None else f"struct field (in {parent!r})"
        if isinstance(column.name, str) and column.name:
            keyfmt.validate_new_name(column.name, keyfmt.MAX_COLUMN_NAME_BYTES, kind)
        if isinstance(column.type, TypeSpec):
            path = column.name if parent is None else f"{parent}.{column.name}"
            todo.extend((child, path) for child in nested_fields(column.type))


def _check_definition_name(path: str, kind: str, defined: str, name: str, namespace: str | None = None) -> None:
    """K7: the definition names the key's object; anything else is a tampered or
    foreign lakehouse, never silently another object's definition. (File names are not
    checked: SPEC 2 lets writers name definition files as they like.)"""
    if defined != name:
        owner = name if namespace is None else f"{namespace}.{name}"
        raise CorruptFileError(
            path, f"this {kind} definition names {defined!r}, but the key that points at it is {kind} {owner!r}"
        )


def _create_lakehouse(storage: Storage, options: dict) -> Lakehouse:
    """Open the lakehouse at ``storage``, creating it with the namespace ``default`` (K6)
    when there is none."""
    definition = new_lakehouse_def(**options)
    settings = LakehouseSettings.from_proto(definition)
    codec = keyfmt.KeyCodec(settings.namespace_name_max_size_bytes, settings.table_name_max_size_bytes)
    try:
        key = codec.namespace_key(DEFAULT_NAMESPACE)
    except InvalidNameError:  # name limits too small for it: the lakehouse has none
        return Lakehouse.create(storage, definition)
    path = paths.new_namespace_def_path(DEFAULT_NAMESPACE)
    return Lakehouse.create(
        storage,
        definition,
        files={path: encode(NamespaceDef(name=DEFAULT_NAMESPACE))},
        entries=[(key, path)],
    )


class DefinitionCache:
    """Definition files, decoded, and what is derived from them, each kept once by the
    file's path.

    A definition file is immutable and its path is never reused (K2), so whatever is
    read from it or computed on it alone stays true as long as it is kept: one cache per
    datum, keyed by path, shared by every transaction of one LakehouseCatalog (time
    travel too: old versions point at the same files). Layers above keep no cache of
    their own for such values: they ask :meth:`derived`. Each map is bounded by clearing
    it when full; a value cleared is read or computed again on its next use.
    """

    #: Decoded definitions and converted columns kept (each map), before clearing.
    MAX_DEFINITIONS = 100_000
    #: Stored columns kept converted by their bytes (tables often share columns).
    MAX_COLUMN_SPECS = 8192
    #: Derived values kept (see :meth:`derived`).
    MAX_DERIVED = 4096

    def __init__(self) -> None:
        self._definitions: dict[str, Any] = {}
        self._columns: dict[str, tuple[ColumnSpec, ...]] = {}
        self._column_specs: ColumnCache = {}
        self._derived: dict[tuple[str, str], Any] = {}

    def namespace_def(self, path: str, read: Callable[[str], bytes]) -> NamespaceDef:
        """The namespace definition file at ``path``, decoded; ``read`` gives its bytes
        when it is not cached (a transaction's reader, which sees its staged files)."""
        return self._definition(path, read, decode_namespace_def)

    def table_def(self, path: str, read: Callable[[str], bytes]) -> TableDef:
        """The table definition file at ``path``, decoded (as :meth:`namespace_def`)."""
        return self._definition(path, read, decode_table_def)

    def _definition(self, path: str, read: Callable[[str], bytes], decode: Any) -> Any:
        definition = self._definitions.get(path)
        if definition is None:
            try:
                data = read(path)
            except MissingFileError:
                raise CorruptFileError(path, "definition file referenced by the tree is missing") from None
            definition = decode(data, path)
            self.remember(path, definition)
        return definition

    def remember(self, path: str, definition: NamespaceDef | TableDef) -> None:
        """Keep a decoded definition file, also one this process is writing: its path is
        new and unique, so until it is committed no key refers to it, and if the commit
        fails none ever will."""
        if len(self._definitions) > self.MAX_DEFINITIONS:
            self._definitions.clear()
        self._definitions[path] = definition

    def columns(self, path: str, definition: TableDef) -> tuple[ColumnSpec, ...]:
        """The columns of ``definition``, the table definition file at ``path``."""
        columns = self._columns.get(path)
        if columns is None:
            if len(self._column_specs) > self.MAX_COLUMN_SPECS:
                self._column_specs.clear()
            columns = tuple(from_proto_columns(definition.schema.columns, self._column_specs))
            if len(self._columns) > self.MAX_DEFINITIONS:
                self._columns.clear()
            self._columns[path] = columns
        return columns

    def derived(self, path: str, what: str, compute: Callable[[], _T]) -> _T:
        """``compute()``, a value that depends on the definition file at ``path`` alone
        (``what`` names the kind of value, e.g. ``"DESCRIBE rows"``), computed once per
        path and then kept. The value is shared: the caller must not change it (a tuple
        is the safe kind)."""
        key = (what, path)
        try:
            return self._derived[key]
        except KeyError:
            pass
        value = compute()
        if len(self._derived) >= self.MAX_DERIVED:
            self._derived.clear()
        self._derived[key] = value
        return value

    def clear(self) -> None:
        """Forget everything (the files stay where they are)."""
        self._definitions.clear()
        self._columns.clear()
        self._column_specs.clear()
        self._derived.clear()


class CatalogTransaction:
    """One transaction's view of the catalog: namespaces, tables and columns as they
    stand at one version plus this transaction's own writes, which :meth:`commit`
    publishes as the next version (or :meth:`rollback` drops). Made by
    :meth:`LakehouseCatalog.begin`; it belongs to one thread."""

    def __init__(self, txn: Transaction, definitions: DefinitionCache) -> None:
        """``txn``: the lakehouse transaction it reads and writes through;
        ``definitions``: the cache of definition files it shares with the other
        transactions of its LakehouseCatalog."""
        self._txn = txn
        self._definitions = definitions
        self._codec = txn.codec

    # -- transaction ------------------------------------------------------------------

    @property
    def version(self) -> int:
        return self._txn.version

    @property
    def read_only(self) -> bool:
        return self._txn.read_only

    @property
    def has_writes(self) -> bool:
        return self._txn.has_writes

    @property
    def isolation(self) -> Isolation:
        return self._txn.isolation

    def expect_files(self, files: dict[str, float | None], owner: str) -> None:
        """Files under the root, written before this transaction commits and named by it,
        with the ``time.monotonic()`` their writing began (None: unknown): checked to
        exist right before the commit publishes (transaction C7)."""
        self._txn.expect_files({paths.check_relative_path(p): t for p, t in files.items()}, owner)

    @property
    def changes(self) -> int:
        """How many writes this transaction has made so far (``Transaction.changes``)."""
        return self._txn.changes

    def commit(self) -> int:
        return self._txn.commit()

    def read_file(self, path: str) -> bytes:
        """A file under the root as this transaction sees it: one it staged (not yet
        written), or a stored one (immutable, so possibly from the storage's cache)."""
        return self._txn.read_file(paths.check_relative_path(path))

    def rollback(self) -> None:
        self._txn.rollback()

    def _decode(self, key: str) -> keyfmt.ObjectKey:
        """A key of the tree, decoded with this lakehouse's name limits. A key that does
        not fit them means the lakehouse definition disagrees with the tree (written by
        something else, or tampered with): CorruptFileError naming the definition."""
        try:
            return self._codec.decode(key)
        except ValueError as e:
            raise CorruptFileError(
                self._txn.lakehouse_def_path,
                f"the tree holds a key that the name limits of this lakehouse definition "
                f"(namespace names {self._codec.namespace_max_bytes} bytes, table names "
                f"{self._codec.table_max_bytes} bytes) cannot hold: {e}",
            ) from None

    # -- names and keys -------------------------------------------------------------------

    def _ns_key(self, name: str) -> str:
        keyfmt.validate_name(name, self._codec.namespace_max_bytes, "namespace")
        return self._codec.namespace_key(name)

    def _table_key(self, namespace: str, name: str) -> str:
        keyfmt.validate_name(namespace, self._codec.namespace_max_bytes, "namespace")
        keyfmt.validate_name(name, self._codec.table_max_bytes, "table")
        return self._codec.table_key(namespace, name)

    def _read_namespace(self, name: str, *, guard: bool = False) -> tuple[str, NamespaceDef] | None:
        path = self._txn.get(self._ns_key(name), guard=guard)
        if path is None:
            return None
        definition = self._definitions.namespace_def(path, self._txn.read_file)
        _check_definition_name(path, "namespace", definition.name, name)
        return path, definition

    def _require_namespace(self, name: str, *, guard: bool = False) -> NamespaceDef:
        found = self._read_namespace(name, guard=guard)
        if found is None:
            raise ObjectNotFoundError(f"namespace {name!r} does not exist")
        return found[1]

    def _read_table(self, namespace: str, name: str) -> tuple[str, TableDef] | None:
        path = self._txn.get(self._table_key(namespace, name))
        if path is None:
            return None
        definition = self._definitions.table_def(path, self._txn.read_file)
        _check_definition_name(path, "table", definition.name, name, namespace)
        return path, definition

    def _require_table(self, namespace: str, name: str) -> TableDef:
        found = self._read_table(namespace, name)
        if found is None:
            if self._read_namespace(namespace) is None:
                raise ObjectNotFoundError(f"namespace {namespace!r} does not exist")
            raise ObjectNotFoundError(f"table {namespace!r}.{name!r} does not exist")
        return found[1]

    def _write_namespace(self, definition: NamespaceDef) -> None:
        path = paths.new_namespace_def_path(definition.name)
        self._txn.stage_file(path, encode(definition))
        self._txn.put(self._ns_key(definition.name), path)
        self._definitions.remember(path, definition)

    def _write_table(self, namespace: str, definition: TableDef, files: Mapping[str, bytes] | None = None) -> None:
        pointer = definition.format_properties.get(paths.METADATA_LOCATION)
        root = self._txn.lakehouse.storage.root_uri
        if pointer and definition.table_type != EXTERNAL and location_within(pointer, root) is None:  # K8
            raise InvalidLocationError(
                f"table {namespace!r}.{definition.name!r}: its metadata file {pointer!r} lies outside the "
                f"lakehouse root {root!r}; a managed table's files lie inside the root (an EXTERNAL table's "
                "may lie anywhere)"
            )
        path = paths.new_table_def_path(namespace, definition.name)
        self._txn.stage_file(path, encode(definition))
        for companion, data in (files or {}).items():
            self._txn.stage_file(paths.check_relative_path(companion), data, companion_of=path)
        self._txn.put(self._table_key(namespace, definition.name), path)
        self._definitions.remember(path, definition)

    # -- namespaces -----------------------------------------------------------------------

    def create_namespace(
        self,
        name: str,
        *,
        properties: dict[str, str] | None = None,
        comment: str | None = None,
        if_not_exists: bool = False,
    ) -> bool:
        """Create a namespace; False if it existed and ``if_not_exists``."""
        keyfmt.validate_new_name(name, self._codec.namespace_max_bytes, "namespace")
        properties = dict(properties or {})
        _check_property_keys(properties, f"namespace {name!r}")
        if self._read_namespace(name) is not None:
            if if_not_exists:
                return False
            raise ObjectExistsError(f"namespace {name!r} already exists")
        definition = NamespaceDef(name=name, properties=properties)
        if comment is not None:
            definition.properties[COMMENT] = comment
        self._write_namespace(definition)
        return True

    def alter_namespace(
        self,
        name: str,
        *,
        set_properties: dict[str, str] | None = None,
        unset_properties: Sequence[str] = (),
        comment: Any = ...,
    ) -> None:
        """Set or unset properties (and the comment, when given) of a namespace."""
        definition = NamespaceDef()
        definition.CopyFrom(self._require_namespace(name))
        _check_property_keys(set_properties or {}, f"namespace {name!r}")
        _check_property_keys(unset_properties, f"namespace {name!r}")
        for key in unset_properties:
            definition.properties.pop(key, None)
        definition.properties.update(set_properties or {})
        if comment is not ...:
            if comment is None:
                definition.properties.pop(COMMENT, None)
            else:
                definition.properties[COMMENT] = comment
        self._write_namespace(definition)

    def drop_namespace(self, name: str, *, cascade: bool = False, if_exists: bool = False) -> bool:
        """Drop a namespace; its tables too with ``cascade``, else it must be empty."""
        if self._read_namespace(name) is None:
            if if_exists:
                return False
            raise ObjectNotFoundError(f"namespace {name!r} does not exist")
        lo, hi = self._codec.tables_range(name)
        tables = self._txn.scan(lo, hi, guard=True)
        if tables and not cascade:
            raise ObjectNotEmptyError(
                f"namespace {name!r} holds {len(tables)} table(s); drop them first or use CASCADE"
            )
        for key, _ in tables:
            self._txn.delete(key)
        self._txn.delete(self._ns_key(name))
        return True

    def list_namespaces(self, matching: NameFilter | None = None) -> list[str]:
        """The namespaces, in name order; with ``matching``, only those whose name it
        accepts (see :data:`NameFilter`)."""
        _check_name_filter(matching)
        lo, hi = self._codec.namespaces_range()
        names = [self._decode(key).namespace for key, _ in self._txn.scan(lo, hi)]
        if matching is not None:
            names = [n for n in names if matching(n)]
        return names

    def describe_namespace(self, name: str) -> NamespaceInfo:
        definition = self._require_namespace(name)
        return NamespaceInfo(
            name=name,
            properties=_visible(definition.properties),
            comment=definition.properties.get(COMMENT),
        )

    def namespace_exists(self, name: str) -> bool:
        return self._read_namespace(name) is not None

    # -- tables ---------------------------------------------------------------------------

    def create_table(
        self,
        namespace: str,
        name: str,
        columns: Sequence[ColumnSpec],
        *,
        primary_key: Sequence[str] = (),
        comment: str | None = None,
        properties: dict[str, str] | None = None,
        location: str | None = None,
        table_format: str = "ICEBERG",
        if_not_exists: bool = False,
        format_properties: Mapping[str, str] | None = None,
        table_type: str | None = None,
        files: Mapping[str, bytes] | None = None,
    ) -> bool:
        """Create a table (EXTERNAL when a location is given, or as ``table_type``
        says); False if it existed and ``if_not_exists``. Column ids already set on
        ``columns`` are kept (a table format's own field ids, SPEC 8). ``files`` (paths
        under the root -> bytes) are written with the definition and only with it
        (transaction C1): a table format's metadata file."""
        key = self._table_key(namespace, name)
        keyfmt.validate_new_name(name, self._codec.table_max_bytes, "table")
        _check_new_column_names(columns)
        properties = dict(properties or {})
        _check_property_keys(properties, f"table {namespace!r}.{name!r}")
        self._require_namespace(namespace, guard=True)
        if self._txn.get(key) is not None:
            if if_not_exists:
                return False
            raise ObjectExistsError(f"table {namespace!r}.{name!r} already exists")
        if not columns:
            raise InvalidDefinitionError(f"table {namespace!r}.{name!r} needs at least one column")
        protos, next_id = to_proto_columns(list(columns), 1)
        definition = TableDef(name=name, table_format=table_format.upper())
        definition.schema.columns.extend(protos)
        definition.primary_key.extend(self._primary_key_ids(protos, primary_key, namespace, name))
        definition.properties.update(properties)
        definition.properties[LAST_COLUMN_ID] = str(next_id - 1)
        if comment is not None:
            definition.properties[COMMENT] = comment
        if location is not None:
            definition.table_type = EXTERNAL
            definition.format_properties[LOCATION] = location
        if table_type is not None:
            definition.table_type = table_type
        definition.format_properties.update(format_properties or {})
        self._write_table(namespace, definition, files)
        return True

    def set_table_format(
        self,
        namespace: str,
        name: str,
        *,
        columns: Sequence[ColumnSpec],
        format_properties: Mapping[str, str],
        properties: Mapping[str, str] | None = None,
        expected_definition: str | None = None,
        last_column_id: int | None = None,
        files: Mapping[str, bytes] | None = None,
    ) -> None:
        """Point a table at a new state of its data (SPEC 8: a new Iceberg metadata
        file): its columns (ids kept: they mirror the format's field ids),
        ``format_properties`` and, if given, its visible properties (comment included;
        reserved ones are kept), all in one new definition. With
        ``expected_definition``, the table must still have that definition file
        (SerializationError otherwise): a compare-and-swap inside the transaction.
        ``last_column_id``: the highest column id the format ever gave (K4 keeps the
        larger of it and the table's own). ``files``: as for :meth:`create_table`."""
        found = self._read_table(namespace, name)
        if found is None:
            self._require_table(namespace, name)
        assert found is not None
        path, current = found
        if expected_definition is not None and path != expected_definition:
            raise SerializationError(
                f"table {namespace!r}.{name!r} was changed in this transaction since it was read"
            )
        definition = TableDef()
        definition.CopyFrom(current)
        _check_new_column_names(columns)
        protos, next_id = to_proto_columns(list(columns), 1)
        ids = {column.id for column in protos}
        for key_id in definition.primary_key:
            if key_id not in ids:
                raise InvalidDefinitionError(
                    f"table {namespace!r}.{name!r}: a primary key column (id {key_id}) would be dropped"
                )
        del definition.schema.columns[:]
        definition.schema.columns.extend(protos)
        definition.properties[LAST_COLUMN_ID] = str(
            max(int(current.properties.get(LAST_COLUMN_ID, "0")), next_id - 1, last_column_id or 0)
        )
        if properties is not None:
            _check_property_keys([k for k in properties if k != COMMENT], f"table {namespace!r}.{name!r}")
            reserved = {k: v for k, v in definition.properties.items() if k.startswith(RESERVED_PREFIX)}
            definition.properties.clear()
            definition.properties.update(reserved)
            definition.properties.update(properties)
        definition.format_properties.clear()
        definition.format_properties.update(format_properties)
        self._write_table(namespace, definition, files)

    @staticmethod
    def _primary_key_ids(protos: Sequence[Any], names: Sequence[str], namespace: str, table: str) -> list[int]:
        by_name = {column.name: column for column in protos}
        ids = []
        for column_name in names:
            column = by_name.get(column_name)
            if column is None:
                raise InvalidDefinitionError(
                    f"primary key column {column_name!r} is not a column of table {namespace!r}.{table!r}"
                )
            if column.id in ids:
                raise InvalidDefinitionError(f"primary key names column {column_name!r} twice")
            ids.append(column.id)
        return ids

    def _altered(self, namespace: str, name: str) -> TableDef:
        definition = TableDef()
        definition.CopyFrom(self._require_table(namespace, name))
        return definition

    def _column_index(self, definition: TableDef, column: str, namespace: str, name: str) -> int:
        for index, candidate in enumerate(definition.schema.columns):
            if candidate.name == column:
                return index
        raise ObjectNotFoundError(f"column {column!r} does not exist in table {namespace!r}.{name!r}")

    def add_columns(self, namespace: str, name: str, columns: Sequence[ColumnSpec]) -> None:
        _check_new_column_names(columns)
        definition = self._altered(namespace, name)
        existing = from_proto_columns(definition.schema.columns)
        last_id = max(
            int(definition.properties.get(LAST_COLUMN_ID, "0")),
            max_column_id(definition.schema.columns),
        )
        for column in columns:
            if any(c.name == column.name for c in existing):
                raise ObjectExistsError(
                    f"column {column.name!r} already exists in table {namespace!r}.{name!r}"
                )
        protos, next_id = to_proto_columns([*existing, *columns], last_id + 1)
        del definition.schema.columns[:]
        definition.schema.columns.extend(protos)
        definition.properties[LAST_COLUMN_ID] = str(next_id - 1)
        self._write_table(namespace, definition)

    def drop_column(self, namespace: str, name: str, column: str) -> None:
        definition = self._altered(namespace, name)
        index = self._column_index(definition, column, namespace, name)
        if len(definition.schema.columns) == 1:
            raise InvalidDefinitionError(
                f"cannot drop {column!r}, the only column of table {namespace!r}.{name!r}"
            )
        dropped = definition.schema.columns[index]
        definition.properties[LAST_COLUMN_ID] = str(
            max(int(definition.properties.get(LAST_COLUMN_ID, "0")), max_column_id(definition.schema.columns))
        )
        for keys_field in (definition.primary_key, definition.distribution_keys,
                           definition.sort_keys, definition.unique_columns):
            if dropped.id in keys_field:
                raise InvalidDefinitionError(
                    f"column {column!r} of table {namespace!r}.{name!r} is part of a key"
                )
        del definition.schema.columns[index]
        self._write_table(namespace, definition)

    def rename_column(self, namespace: str, name: str, old: str, new: str) -> None:
        definition = self._altered(namespace, name)
        index = self._column_index(definition, old, namespace, name)
        if any(c.name == new for c in definition.schema.columns):
            raise ObjectExistsError(f"column {new!r} already exists in table {namespace!r}.{name!r}")
        keyfmt.validate_new_name(new, keyfmt.MAX_COLUMN_NAME_BYTES, "column")
        definition.schema.columns[index].name = new
        self._write_table(namespace, definition)

    def alter_column(
        self, namespace: str, name: str, column: str, *, nullable: bool | None = None, comment: Any = ...
    ) -> None:
        """Change a column's nullability and/or comment (``comment=None`` removes it)."""
        definition = self._altered(namespace, name)
        target = definition.schema.columns[self._column_index(definition, column, namespace, name)]
        if nullable is not None:
            if nullable and target.id in definition.primary_key:
                raise InvalidDefinitionError(
                    f"column {column!r} is in the primary key of {namespace!r}.{name!r} and cannot be nullable"
                )
            target.nullable = nullable
        if comment is not ...:
            if comment is None:
                target.properties.pop(COMMENT, None)
            else:
                target.properties[COMMENT] = comment
        self._write_table(namespace, definition)

    def set_table_properties(self, namespace: str, name: str, properties: dict[str, str]) -> None:
        _check_property_keys(properties, f"table {namespace!r}.{name!r}")
        definition = self._altered(namespace, name)
        definition.properties.update(properties)
        self._write_table(namespace, definition)

    def unset_table_properties(
        self, namespace: str, name: str, keys: Sequence[str], *, if_exists: bool = False
    ) -> None:
        _check_property_keys(keys, f"table {namespace!r}.{name!r}")
        definition = self._altered(namespace, name)
        for key in keys:
            if key not in definition.properties and not if_exists:
                raise ObjectNotFoundError(f"table {namespace!r}.{name!r} has no property {key!r}")
            definition.properties.pop(key, None)
        self._write_table(namespace, definition)

    def set_table_comment(self, namespace: str, name: str, comment: str | None) -> None:
        definition = self._altered(namespace, name)
        if comment is None:
            definition.properties.pop(COMMENT, None)
        else:
            definition.properties[COMMENT] = comment
        self._write_table(namespace, definition)

    def rename_table(self, namespace: str, name: str, new_namespace: str, new_name: str) -> None:
        """Rename a table, also into another namespace."""
        keyfmt.validate_new_name(new_name, self._codec.table_max_bytes, "table")
        definition = self._altered(namespace, name)
        new_key = self._table_key(new_namespace, new_name)
        self._require_namespace(new_namespace, guard=True)
        if self._txn.get(new_key) is not None:
            raise ObjectExistsError(f"table {new_namespace!r}.{new_name!r} already exists")
        definition.name = new_name
        self._txn.delete(self._table_key(namespace, name))
        self._write_table(new_namespace, definition)

    def drop_table(self, namespace: str, name: str, *, if_exists: bool = False) -> bool:
        key = self._table_key(namespace, name)
        if self._txn.get(key) is None:
            if if_exists:
                return False
            self._require_table(namespace, name)  # raises the precise not-found error
        self._txn.delete(key)
        return True

    def list_tables(
        self, namespace: str | None = None, matching: NameFilter | None = None
    ) -> list[tuple[str, str]]:
        """(namespace, table) of the tables of ``namespace`` (of every namespace when
        None), in key order; with ``matching``, only the tables whose name it accepts
        (see :data:`NameFilter`)."""
        _check_name_filter(matching)
        if namespace is not None:
            self._require_namespace(namespace)
        lo, hi = self._codec.tables_range(namespace)
        found = []
        if namespace is not None:
            names = self._txn.scan(lo, hi, derive=self._table_names_in(lo))
            if names is not None:
                if matching is None:
                    return list(zip(repeat(namespace), names))
                return [(namespace, t) for t in names if matching(t)]
        for key, _ in self._txn.scan(lo, hi):
            table = None if namespace is None else self._codec.table_name_in(lo, key)
            if table is None:
                decoded = self._decode(key)
                assert decoded.table is not None
                ns, table = decoded.namespace, decoded.table
            else:
                ns = namespace
            if matching is None or matching(table):
                found.append((ns, table))
        return found

    def _table_names_in(self, prefix: str) -> keyfmt.TableNamesOfKeys:
        """A scan ``derive`` giving the table names of keys of one namespace."""
        return keyfmt.TableNamesOfKeys(prefix, len(prefix) + self._codec.table_max_bytes)

    def describe_table(self, namespace: str, name: str) -> TableInfo:
        found = self._read_table(namespace, name)
        if found is None:
            self._require_table(namespace, name)
        assert found is not None
        path, definition = found
        columns = self._definitions.columns(path, definition)
        by_id = {c.id: c.name for c in columns}
        return TableInfo(
            namespace=namespace,
            name=name,
            columns=columns,
            primary_key=tuple(by_id[i] for i in definition.primary_key if i in by_id),
            comment=definition.properties.get(COMMENT),
            properties=_visible(definition.properties),
            table_type=definition.table_type or MANAGED,
            table_format=definition.table_format,
            location=definition.format_properties.get(LOCATION),
            definition_path=path,
            format_properties=dict(definition.format_properties),
            all_properties=dict(definition.properties),
        )

    def table_exists(self, namespace: str, name: str) -> bool:
        return self._txn.get(self._table_key(namespace, name)) is not None


class LakehouseCatalog:
    """A lakehouse location opened for catalog work: transactions and history."""

    def __init__(
        self,
        location: str,
        *,
        create: bool = False,
        lakehouse_options: dict | None = None,
        storage_options: dict | None = None,
        storage: Storage | None = None,
    ) -> None:
        if lakehouse_options is not None and not isinstance(lakehouse_options, Mapping):
            raise InvalidDefinitionError(
                "lakehouse_options must be a mapping of option names to values (e.g. "
                f"{{'order': 16}}), not {type(lakehouse_options).__name__}"
            )
        self.storage = storage if storage is not None else Storage(location, storage_options)
        #: The storage options it was opened with (fsspec's), for the tables' FileIO.
        self.storage_options: dict = dict(storage_options or {})
        if create:
            self.lakehouse = _create_lakehouse(self.storage, dict(lakehouse_options or {}))
        else:
            self.lakehouse = Lakehouse.open(self.storage)
        #: Decoded definition files and what is derived from them, by path: shared by
        #: every transaction begun here (time travel included).
        self.definitions = DefinitionCache()

    # -- transactions ---------------------------------------------------------------------

    def begin(
        self, isolation: Isolation | str | None = Isolation.SNAPSHOT, version: int | str | None = None
    ) -> CatalogTransaction:
        """A catalog transaction at the latest version, or read-only at ``version``."""
        resolved = None if version is None else self.resolve_version(version)
        txn = begin(self.lakehouse, Isolation.parse(isolation), resolved)
        return CatalogTransaction(txn, self.definitions)

    def latest_version(self) -> int:
        return self.lakehouse.latest_version()

    def resolve_version(self, spec: int | str) -> int:
        """A version number that exists, or an exported snapshot's version."""
        if isinstance(spec, bool):
            raise ProgrammingError(f"version {spec!r} is not a version number or snapshot name")
        if isinstance(spec, int):
            return self.lakehouse.snapshot(spec).version
        if isinstance(spec, str):
            return self.lakehouse.snapshot_named(spec).version
        raise ProgrammingError(f"version {spec!r} is not a version number or snapshot name")

    def has_version(self, version: int) -> bool:
        """Whether ``version`` can be read: it was committed and has not expired."""
        try:
            self.lakehouse.snapshot(version)
        except ObjectNotFoundError:
            return False
        return True

    def version_at(self, millis: int) -> int:
        return self.lakehouse.snapshot_at(millis).version

    # -- history ------------------------------------------------------------------------------

    def changes_of(self, snapshot: Snapshot, previous: Snapshot | None) -> tuple[str, ...]:
        """What ``snapshot`` changed, as the history shows it (``VersionInfo.changes``):
        ``namespace NS``, ``table NS.T``, ``lakehouse definition`` (against ``previous``,
        its predecessor, if given) and ``rollback of version V``."""
        codec = keyfmt.KeyCodec(
            snapshot.settings.namespace_name_max_size_bytes, snapshot.settings.table_name_max_size_bytes
        )
        changes = []
        for key in snapshot.changed_keys():
            try:
                decoded = codec.decode(key)
            except ValueError:
                changes.append(key)
                continue
            if decoded.kind == "namespace":
                changes.append(f"namespace {decoded.namespace}")
            else:
                changes.append(f"table {decoded.namespace}.{decoded.table}")
        if previous is not None and previous.lakehouse_def_path != snapshot.lakehouse_def_path:
            changes.append("lakehouse definition")
        if snapshot.rollback_from_version is not None:
            # The format records where a rollback came from, not its target.
            changes.append(f"rollback of version {snapshot.rollback_from_version}")
        return tuple(changes)

    def versions(self) -> list[VersionInfo]:
        """Every version of the history, newest first (see iter_versions)."""
        return list(self.iter_versions())

    def iter_versions(self, newest: int | None = None, oldest: int = 0) -> Iterator[VersionInfo]:
        """The versions from ``newest`` (default the latest) down to ``oldest``, newest
        first, read lazily one root at a time (plus the one below, to tell what changed):
        the history chain, and past an expired gap the exported snapshots below it."""
        chain = self.lakehouse.history(newest, max(0, oldest - 1))
        snapshot = next(chain, None)
        while snapshot is not None and snapshot.version >= oldest:
            previous = next(chain, None)
            before = previous if previous is not None and previous.version == snapshot.previous_version else None
            if before is None and snapshot.previous_version is not None:
                try:
                    before = self.lakehouse.snapshot(snapshot.previous_version)
                except ObjectNotFoundError:
                    before = None
            yield VersionInfo(
                version=snapshot.version,
                created_at_millis=snapshot.created_at_millis,
                previous_version=snapshot.previous_version,
                rollback_from_version=snapshot.rollback_from_version,
                changes=self.changes_of(snapshot, before),
            )
            snapshot = previous

    def rollback_to(self, version: int) -> int:
        return rollback_to(self.lakehouse, version)

    def export_snapshot(self, name: str, version: int | None = None) -> int:
        """Record ``name`` for a version in the lakehouse definition (a new version)."""
        keyfmt.validate_new_name(name, keyfmt.MAX_SNAPSHOT_NAME_BYTES, "snapshot")
        target = self.lakehouse.snapshot(version)
        root_path = paths.root_node_path(target.version)
        if version is not None and not self.storage.exists(root_path):
            # cached before another connection expired it: never name a deleted root
            raise ObjectNotFoundError(f"version {version} does not exist any more (expired)")
        txn = begin(self.lakehouse)

        def record(definition: LakehouseDef) -> LakehouseDef:
            if name in definition.exported_snapshots:
                raise ObjectExistsError(f"an exported snapshot named {name!r} already exists")
            definition.exported_snapshots[name] = root_path
            return definition

        trial = LakehouseDef()
        trial.CopyFrom(txn.base.lakehouse_def)
        record(trial)  # fail early, before writing anything
        txn.update_lakehouse_def(record)
        return txn.commit()

    def snapshots(self) -> dict[str, int]:
        """Exported snapshots of the latest version: name -> version."""
        exported = self.lakehouse.snapshot().settings.exported_snapshots
        return {name: paths.parse_root_node_path(root) for name, root in sorted(exported.items())}

    def close(self) -> None:
        """Drop the cached definitions (the lakehouse's files are untouched)."""
        self.definitions.clear()
