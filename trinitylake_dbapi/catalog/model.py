"""What the catalog shows: namespaces, tables and versions as info records, the
reserved property names, and the checks of names and properties made before anything
is written (K1, K5 of catalog.transactions).

No rules of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from trinitylake_dbapi.errors import InvalidDefinitionError, ProgrammingError
from trinitylake_dbapi.format import keys as keyfmt
from trinitylake_dbapi.format.types import ColumnSpec, TypeSpec, nested_fields


COMMENT = "comment"
RESERVED_PREFIX = "trinitylake."
LAST_COLUMN_ID = "trinitylake.last-column-id"
LOCATION = "location"
MANAGED = "MANAGED"
EXTERNAL = "EXTERNAL"


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


def check_name_filter(matching: object) -> None:
    """A text where a predicate belongs is refused by name: listings took LIKE patterns
    before the SQL layer became LIKE's one home."""
    if matching is not None and not callable(matching):
        raise ProgrammingError(
            f"a listing keeps the names a predicate accepts, not {matching!r}: for a LIKE "
            "pattern pass trinitylake_dbapi.like_to_regex(pattern).fullmatch"
        )


def visible_properties(properties: Any) -> dict[str, str]:
    return {k: v for k, v in properties.items() if k != COMMENT and not k.startswith(RESERVED_PREFIX)}


def check_property_keys(keys: Iterable[str], what: str) -> None:
    for key in keys:
        if not isinstance(key, str) or not key:
            raise InvalidDefinitionError(f"{what} property names must be non-empty strings")
        if key.startswith(RESERVED_PREFIX):
            raise InvalidDefinitionError(f"{what} property {key!r} is reserved")


DEFAULT_NAMESPACE = "default"


def check_new_column_names(columns: Sequence[ColumnSpec]) -> None:
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
