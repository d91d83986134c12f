"""Column types (SPEC 5) as stored in definition files: ColumnSpec <-> protobuf Column.

Storage (:func:`to_proto_columns`, :func:`from_proto_column`)
    Parameters go to ``Column.properties`` as decimal strings: ``length``,
    ``precision``, ``scale``; the comment to ``properties["comment"]``. Column ids start
    at 1 (0 means "not assigned" and is refused on read), are unique within a table,
    nested fields included, and are kept once assigned.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence, Union

from trinitylake_dbapi.format.trinitylake_pb2 import Column
from trinitylake_dbapi.format.types.spec import (
    DATATYPE_TO_KIND,
    KIND_TO_DATATYPE,
    MAX_COLUMN_ID,
    ColumnSpec,
    TypeSpec,
    check_unique_names,
    column_error,
    nested_fields,
    validate_column,
    validate_level,
    walk_columns,
)


def max_column_id(columns: Iterable[Union[Column, ColumnSpec]]) -> int:
    """The largest column id among ``columns`` and all their nested fields (proto
    Columns or ColumnSpecs; unassigned ids ignored); 0 if there is none."""
    best = 0
    for c in columns:
        if isinstance(c, Column):
            best = max(best, c.id)
            children: list[Union[Column, ColumnSpec]] = list(c.struct_fields)
            for name in ("map_key", "map_value", "list_element"):
                if c.HasField(name):
                    children.append(getattr(c, name))
        else:
            best = max(best, c.id or 0)
            children = list(nested_fields(c.type))
        best = max(best, max_column_id(children))
    return best


def without_ids(column: ColumnSpec) -> ColumnSpec:
    """The same column with every id (nested included) unset: compares definitions
    regardless of ids, e.g. a stored column against the one in a DDL statement."""
    t = column.type
    t = TypeSpec(
        t.kind, t.length, t.precision, t.scale,
        fields=tuple(without_ids(f) for f in t.fields),
        key=None if t.key is None else without_ids(t.key),
        value=None if t.value is None else without_ids(t.value),
        element=None if t.element is None else without_ids(t.element),
    )  # fmt: skip
    return ColumnSpec(column.name, t, column.nullable, column.comment, None)


def to_proto_columns(columns: Sequence[ColumnSpec], next_id: int) -> tuple[list[Column], int]:
    """The proto Columns of a table's columns, ready for ``TableDef.schema.columns``.

    Validates every column (:func:`validate_column`) and the uniqueness of top-level
    names. Keeps the ids already set (they must be unique, nested fields included) and
    assigns new ids to the others, depth-first with parents before their children,
    starting at ``next_id`` or just above the largest id already set, whichever is
    higher, so an id is never given twice. Returns the Columns and the next free id
    (what to pass next time).
    """
    if isinstance(next_id, bool) or not isinstance(next_id, int) or next_id < 1:
        raise ValueError(f"next_id must be an integer >= 1, got {next_id!r}")
    for c in columns:
        validate_column(c)
    check_unique_names(columns, "the table")
    seen: dict[int, str] = {}
    for path, c in walk_columns(columns):
        if c.id is not None:
            if c.id in seen:
                raise column_error(path, f"column id {c.id} is also used by {seen[c.id]!r}")
            seen[c.id] = path
    counter = max([next_id, *(i + 1 for i in seen)])

    def build(c: ColumnSpec) -> Column:
        nonlocal counter
        if c.id is None:
            if counter > MAX_COLUMN_ID:
                raise column_error(c.name, f"no column id left (ids go up to {MAX_COLUMN_ID})")
            cid, counter = counter, counter + 1
        else:
            cid = c.id
        t = c.type
        col = Column(id=cid, name=c.name, type=KIND_TO_DATATYPE[t.kind], nullable=c.nullable)
        for attr in ("length", "precision", "scale"):
            v = getattr(t, attr)
            if v is not None:
                col.properties[attr] = str(v)
        if c.comment is not None:
            col.properties["comment"] = c.comment
        if t.kind == "struct":
            col.struct_fields.extend(build(f) for f in t.fields)
        elif t.kind == "map":
            assert t.key is not None and t.value is not None  # validated above
            col.map_key.CopyFrom(build(t.key))
            col.map_value.CopyFrom(build(t.value))
        elif t.kind == "list":
            assert t.element is not None  # validated above
            col.list_element.CopyFrom(build(t.element))
        return col

    return [build(c) for c in columns], counter


_DIGITS = re.compile(r"[0-9]+")
_NESTED_FIELDS = ("map_key", "map_value", "list_element")
_NESTED_FIELDS_OF = {"struct": {"struct_fields"}, "map": {"map_key", "map_value"}, "list": {"list_element"}}
_NO_FIELDS: set[str] = set()


def from_proto_column(col: Column, path: str | None = None) -> ColumnSpec:
    """The ColumnSpec of a stored Column, nested fields included (inverse of
    :func:`to_proto_columns`).

    Raises InvalidDefinitionError naming the column (``path``, default its name) if the
    Column is broken: a DataType number outside the enum, id 0, an empty name, a
    parameter that is not a decimal number or does not belong to the type, nested
    fields missing or where the type has none, duplicate struct field names.
    """
    path = col.name if path is None else path
    label = path or "<unnamed>"
    kind = DATATYPE_TO_KIND.get(col.type)
    if kind is None:
        raise column_error(label, f"unknown DataType number {col.type}")
    if not col.name:
        raise column_error(label, f"stored {kind} column without a name")
    if col.id == 0:
        raise column_error(label, "stored column without an id (id 0)")
    params: dict[str, int] = {}
    properties = col.properties
    comment = None
    if properties:
        for attr in ("length", "precision", "scale"):
            if attr in properties:
                raw = properties[attr]
                if not _DIGITS.fullmatch(raw):
                    raise column_error(label, f"{kind} {attr} {raw!r} is not a decimal number")
                params[attr] = int(raw)
        if "comment" in properties:
            comment = properties["comment"]
    present = {name for name in _NESTED_FIELDS if col.HasField(name)}
    if col.struct_fields:
        present.add("struct_fields")
    if present != _NESTED_FIELDS_OF.get(kind, _NO_FIELDS):
        expected = _NESTED_FIELDS_OF.get(kind, _NO_FIELDS)
        extra = ", ".join(sorted(present - expected)) or "none"
        missing = ", ".join(sorted(expected - present)) or "none"
        raise column_error(label, f"broken {kind} column: unexpected {extra}; missing {missing}")

    def child(c: Column, expect: str | None = None) -> ColumnSpec:
        if expect is not None and c.name != expect:
            raise column_error(label, f"{kind} field named {c.name!r} instead of {expect!r}")
        return from_proto_column(c, f"{path}.{c.name}")

    if kind == "struct":
        fields = tuple(child(f) for f in col.struct_fields)
        t = TypeSpec(kind, fields=fields, **params)
    elif kind == "map":
        t = TypeSpec(kind, key=child(col.map_key, "key"), value=child(col.map_value, "value"),
                     **params)  # fmt: skip
    elif kind == "list":
        t = TypeSpec(kind, element=child(col.list_element, "element"), **params)
    else:
        t = TypeSpec(kind, **params)
    spec = ColumnSpec(col.name, t, col.nullable, comment, col.id)
    validate_level(spec, label)  # the nested fields were checked as they were built
    return spec


#: Stored columns already converted, by their serialized bytes (many tables share
#: column definitions, and a ColumnSpec is immutable): bounded, cleared when full.
#: What :func:`from_proto_columns` may remember between calls: a stored column's bytes ->
#: its ColumnSpec and ids. The caller owns it (and its size); this module keeps no state.
ColumnCache = dict


def _converted(col: Column, cache: ColumnCache | None) -> tuple[ColumnSpec, tuple[int, ...]]:
    """The ColumnSpec of a stored column and the ids in it (its own, then nested)."""
    data = col.SerializeToString(deterministic=True) if cache is not None else b""
    found = cache.get(data) if cache is not None else None
    if found is None:
        spec = from_proto_column(col)
        found = (spec, tuple(c.id for _, c in walk_columns([spec])))
        if cache is not None:
            cache[data] = found
    return found


def from_proto_columns(columns: Iterable[Column], cache: ColumnCache | None = None) -> list[ColumnSpec]:
    """The ColumnSpecs of a stored schema (``TableDef.schema.columns``); also checks
    that top-level names and all ids (nested included) are unique. With ``cache``, a
    column stored alike in many tables is converted once (ColumnSpecs are immutable)."""
    converted = [_converted(c, cache) for c in columns]
    specs = [spec for spec, _ in converted]
    check_unique_names(specs, "the table")
    ids = [i for _, column_ids in converted for i in column_ids]
    if len(set(ids)) != len(ids):
        seen: dict[int, str] = {}
        for path, c in walk_columns(specs):
            assert c.id is not None
            if c.id in seen:
                raise column_error(path, f"column id {c.id} is also used by {seen[c.id]!r}")
            seen[c.id] = path
    return specs
