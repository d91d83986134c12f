"""Definition files: the one cache of them (and of what is derived from them) by path,
and the check that a definition names the object of the key that points at it.

Rules:

  K7 A definition file is read only through the key that points at it, and must agree
     with it: a namespace key points at a namespace definition of that name, a table
     key at a table definition of that name (CorruptFileError naming the file; a file
     of the other kind fails to decode as this kind).
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from trinitylake_dbapi.errors import CorruptFileError, MissingFileError
from trinitylake_dbapi.format.definitions import (
    NamespaceDef,
    TableDef,
    decode_namespace_def,
    decode_table_def,
)
from trinitylake_dbapi.format.types import ColumnCache, ColumnSpec, from_proto_columns


_T = TypeVar("_T")


def check_definition_name(path: str, kind: str, defined: str, name: str, namespace: str | None = None) -> None:
    """K7: the definition names the key's object; anything else is a tampered or
    foreign lakehouse, never silently another object's definition. (File names are not
    checked: SPEC 2 lets writers name definition files as they like.)"""
    if defined != name:
        owner = name if namespace is None else f"{namespace}.{name}"
        raise CorruptFileError(
            path, f"this {kind} definition names {defined!r}, but the key that points at it is {kind} {owner!r}"
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
