"""Table definitions <-> Iceberg schemas (SPEC 5 and 8).

The type of each primitive comes from the one mapping table of
:mod:`trinitylake_dbapi.format.types` (rules I1-I3); this module walks the nesting and
keeps the ids.

Rules:

  S1 The Iceberg schema is the truth about a table's data; the definition's columns are
     its mirror: same field ids (nested fields included), names, order, ``required`` =
     NOT NULL, ``doc`` = comment, and for each type the SPEC 5 type it carries (I3).
  S2 The mirror keeps the definition's own SPEC type for a field whose id it already
     had, or that the statement being run declared by name, whenever the Iceberg type is
     that type's carrier (I1): ``int2`` stays ``int2``.
  S3 A schema built from columns without ids gets ids in the order Iceberg assigns them
     for a new table; the ids that count are those of the metadata written, read back
     with :func:`columns_from_schema`.
  S4 Equal column lists give one shared Schema: :func:`schema_from_columns` keeps the
     last 256 it built (columns and types are frozen values, PyIceberg's schemas are
     immutable), so creating tables of a schema already seen builds no PyIceberg model
     (~40 % of the SQL layer's CPU in a CREATE TABLE of 10 columns, profiled).
"""

from __future__ import annotations

import functools
from typing import Mapping, Sequence

from pydantic import TypeAdapter
from pyiceberg.schema import Schema
from pyiceberg.types import IcebergType, ListType, MapType, NestedField, PrimitiveType, StructType

from ..format.types import (
    NESTED_KINDS,
    ColumnSpec,
    TypeSpec,
    iceberg_type,
    type_from_iceberg,
)

__all__ = ["schema_from_columns", "columns_from_schema", "iceberg_field_type", "mirror_disagreement"]

_PRIMITIVE = TypeAdapter(IcebergType)
#: Primitive Iceberg types by their text ("long", "decimal(10,2)"): immutable (frozen
#: models), so one object serves every field; bounded by the distinct texts seen.
_PRIMITIVES: dict[str, IcebergType] = {}
_PRIMITIVES_MAX = 4096


def _primitive(text: str) -> IcebergType:
    """The Iceberg primitive type ``text`` names, validated once per text (pydantic's
    validation is most of the time of building a schema of primitive columns)."""
    found = _PRIMITIVES.get(text)
    if found is None:
        found = _PRIMITIVE.validate_python(text)
        if len(_PRIMITIVES) >= _PRIMITIVES_MAX:
            _PRIMITIVES.clear()
        _PRIMITIVES[text] = found
    return found


def iceberg_field_type(t: TypeSpec, *, column: str, next_id: list[int]) -> IcebergType:
    """The Iceberg type carrying ``t`` (rules I1/I2). Nested fields without an id take
    ``next_id[0]`` onwards (the counter is advanced)."""
    if t.kind not in NESTED_KINDS:
        return _primitive(iceberg_type(t, column=column))

    def field_id(spec: ColumnSpec) -> int:
        if spec.id is not None:
            return spec.id
        next_id[0] += 1
        return next_id[0] - 1

    if t.kind == "struct":
        return StructType(*(_field(f, f"{column}.{f.name}", field_id(f), next_id) for f in t.fields))
    if t.kind == "list":
        assert t.element is not None
        element_id = field_id(t.element)
        return ListType(
            element_id=element_id,
            element=iceberg_field_type(t.element.type, column=f"{column}.element", next_id=next_id),
            element_required=not t.element.nullable,
        )
    assert t.key is not None and t.value is not None
    key_id, value_id = field_id(t.key), field_id(t.value)
    return MapType(
        key_id=key_id,
        key_type=iceberg_field_type(t.key.type, column=f"{column}.key", next_id=next_id),
        value_id=value_id,
        value_type=iceberg_field_type(t.value.type, column=f"{column}.value", next_id=next_id),
        value_required=not t.value.nullable,
    )


def _field(spec: ColumnSpec, path: str, field_id: int, next_id: list[int]) -> NestedField:
    return NestedField(
        field_id=field_id,
        name=spec.name,
        field_type=iceberg_field_type(spec.type, column=path, next_id=next_id),
        required=not spec.nullable,
        doc=spec.comment,
    )


def schema_from_columns(columns: Sequence[ColumnSpec], *, schema_id: int = 0) -> Schema:
    """The Iceberg schema of a table's columns: their ids where set, else new ones above
    the largest set (S3), shared between equal column lists (S4). InvalidDefinitionError
    naming the column for a type Iceberg cannot carry (I2)."""
    key = tuple(columns)
    try:
        hash(key)
    except TypeError:  # not frozen all the way down: build it afresh
        return _schema_from_columns(key, schema_id)
    return _shared_schema(key, schema_id)


@functools.lru_cache(maxsize=256)
def _shared_schema(columns: tuple[ColumnSpec, ...], schema_id: int) -> Schema:
    return _schema_from_columns(columns, schema_id)


def _schema_from_columns(columns: Sequence[ColumnSpec], schema_id: int) -> Schema:
    from ..format.types import max_column_id

    next_id = [max_column_id(columns) + 1]
    fields = []
    for spec in columns:
        if spec.id is not None:
            field_id = spec.id
        else:
            field_id, next_id[0] = next_id[0], next_id[0] + 1
        fields.append(_field(spec, spec.name, field_id, next_id))
    return Schema(*fields, schema_id=schema_id)


def columns_from_schema(
    schema: Schema | StructType,
    previous: Sequence[ColumnSpec] = (),
    declared: Mapping[str, ColumnSpec] | None = None,
) -> list[ColumnSpec]:
    """The definition's columns mirroring ``schema`` (S1), keeping the SPEC types of
    ``previous`` (matched by id) and ``declared`` (top-level columns matched by name)
    where the Iceberg type carries them (S2)."""
    by_id: dict[int, ColumnSpec] = {}

    def index(specs: Sequence[ColumnSpec]) -> None:
        for spec in specs:
            if spec.id is not None:
                by_id[spec.id] = spec
            t = spec.type
            index(t.fields)
            index([c for c in (t.key, t.value, t.element) if c is not None])

    index(previous)
    declared = declared or {}
    return [
        _column(f, f.name, by_id.get(f.field_id) or declared.get(f.name), by_id)
        for f in schema.fields
    ]


def _column(
    field: NestedField, path: str, hint: ColumnSpec | None, by_id: dict[int, ColumnSpec]
) -> ColumnSpec:
    return ColumnSpec(
        name=field.name,
        type=_type(field.field_type, path, hint.type if hint is not None else None, by_id),
        nullable=not field.required,
        comment=field.doc,
        id=field.field_id,
    )


def _child_hint(
    field_id: int, name: str, declared: TypeSpec | None, by_id: dict[int, ColumnSpec]
) -> ColumnSpec | None:
    known = by_id.get(field_id)
    if known is not None or declared is None:
        return known
    if declared.kind == "struct":
        return next((f for f in declared.fields if f.name == name), None)
    return {"key": declared.key, "value": declared.value, "element": declared.element}.get(name)


def _type(t: IcebergType, path: str, declared: TypeSpec | None, by_id: dict[int, ColumnSpec]) -> TypeSpec:
    if isinstance(t, PrimitiveType):
        return type_from_iceberg(str(t), column=path, declared=declared)
    if isinstance(t, StructType):
        return TypeSpec(
            "struct",
            fields=tuple(
                _column(f, f"{path}.{f.name}", _child_hint(f.field_id, f.name, declared, by_id), by_id)
                for f in t.fields
            ),
        )
    if isinstance(t, ListType):
        element = t.element_field
        return TypeSpec(
            "list",
            element=_column(element, f"{path}.element", _child_hint(element.field_id, "element", declared, by_id), by_id),
        )
    if isinstance(t, MapType):
        key, value = t.key_field, t.value_field
        return TypeSpec(
            "map",
            key=_column(key, f"{path}.key", _child_hint(key.field_id, "key", declared, by_id), by_id),
            value=_column(value, f"{path}.value", _child_hint(value.field_id, "value", declared, by_id), by_id),
        )
    raise TypeError(f"unexpected Iceberg type {t!r} at {path}")


def mirror_disagreement(columns: Sequence[ColumnSpec], schema: Schema) -> str | None:
    """How a definition's ``columns`` fail to mirror the Iceberg ``schema`` (rule S1),
    in words naming the first column that differs; None when they agree."""
    try:
        mirrored = columns_from_schema(schema, previous=columns)
    except Exception as e:  # noqa: BLE001 - an Iceberg type SPEC 5 cannot hold
        return str(e)
    if len(mirrored) != len(columns):
        return (
            f"the definition has {len(columns)} columns, the Iceberg schema {len(mirrored)} "
            f"({', '.join(c.name for c in columns)} vs {', '.join(c.name for c in mirrored)})"
        )
    for mine, theirs in zip(columns, mirrored):
        if mine != theirs:
            return (
                f"column {mine.name!r} (id {mine.id}, {mine.type}, "
                f"{'NULL' if mine.nullable else 'NOT NULL'}) differs from Iceberg field "
                f"{theirs.name!r} (id {theirs.id}, carrying {theirs.type}, "
                f"{'optional' if theirs.nullable else 'required'})"
            )
    return None
