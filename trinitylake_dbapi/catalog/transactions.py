"""One transaction's view of the catalog (:class:`CatalogTransaction`): namespaces,
tables and columns as they stand at one version plus the transaction's own writes.

Rules:

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
  K8 A MANAGED table's definition never names an Iceberg metadata file outside the
     lakehouse root (InvalidLocationError naming it, before anything is written): its
     files lie inside the root (iceberg.tables M6; readers check it again, since a
     writer of a shared lakehouse may write definitions by other means).
"""

from __future__ import annotations

from itertools import repeat
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from trinitylake_dbapi.catalog.definitions import check_definition_name
from trinitylake_dbapi.catalog.model import (
    COMMENT,
    EXTERNAL,
    LAST_COLUMN_ID,
    LOCATION,
    MANAGED,
    NamespaceInfo,
    RESERVED_PREFIX,
    TableInfo,
    check_name_filter,
    check_new_column_names,
    check_property_keys,
    visible_properties,
)
from trinitylake_dbapi.errors import (
    CorruptFileError,
    InvalidDefinitionError,
    InvalidLocationError,
    ObjectExistsError,
    ObjectNotEmptyError,
    ObjectNotFoundError,
    SerializationError,
)
from trinitylake_dbapi.format import keys as keyfmt, paths
from trinitylake_dbapi.format.definitions import NamespaceDef, TableDef, encode
from trinitylake_dbapi.format.types import ColumnSpec, from_proto_columns, max_column_id, to_proto_columns
from trinitylake_dbapi.storage.locations import location_within
from trinitylake_dbapi.transaction import Isolation, Transaction

if TYPE_CHECKING:
    from trinitylake_dbapi.catalog.definitions import DefinitionCache
    from trinitylake_dbapi.catalog.model import NameFilter


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

    def after_commit(self, work: Callable[[int], None]) -> None:
        """Run ``work(version)`` once this transaction is published as ``version``, never
        if it fails or is rolled back; best effort (transaction C8)."""
        self._txn.after_commit(work)

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
        check_definition_name(path, "namespace", definition.name, name)
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
        check_definition_name(path, "table", definition.name, name, namespace)
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
        check_property_keys(properties, f"namespace {name!r}")
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
        check_property_keys(set_properties or {}, f"namespace {name!r}")
        check_property_keys(unset_properties, f"namespace {name!r}")
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
        check_name_filter(matching)
        lo, hi = self._codec.namespaces_range()
        names = [self._decode(key).namespace for key, _ in self._txn.scan(lo, hi)]
        if matching is not None:
            names = [n for n in names if matching(n)]
        return names

    def describe_namespace(self, name: str) -> NamespaceInfo:
        definition = self._require_namespace(name)
        return NamespaceInfo(
            name=name,
            properties=visible_properties(definition.properties),
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
        check_new_column_names(columns)
        properties = dict(properties or {})
        check_property_keys(properties, f"table {namespace!r}.{name!r}")
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
        check_new_column_names(columns)
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
            check_property_keys([k for k in properties if k != COMMENT], f"table {namespace!r}.{name!r}")
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
        check_new_column_names(columns)
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
        check_property_keys(properties, f"table {namespace!r}.{name!r}")
        definition = self._altered(namespace, name)
        definition.properties.update(properties)
        self._write_table(namespace, definition)

    def unset_table_properties(
        self, namespace: str, name: str, keys: Sequence[str], *, if_exists: bool = False
    ) -> None:
        check_property_keys(keys, f"table {namespace!r}.{name!r}")
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
        check_name_filter(matching)
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
            properties=visible_properties(definition.properties),
            table_type=definition.table_type or MANAGED,
            table_format=definition.table_format,
            location=definition.format_properties.get(LOCATION),
            definition_path=path,
            format_properties=dict(definition.format_properties),
            all_properties=dict(definition.properties),
        )

    def table_exists(self, namespace: str, name: str) -> bool:
        return self._txn.get(self._table_key(namespace, name)) is not None
