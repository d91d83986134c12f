"""SPEC 5 types <-> Iceberg types (format.types I1-I3) and definitions <-> Iceberg
schemas (iceberg.schema S1-S3)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trinitylake_dbapi.errors import InvalidDefinitionError
from trinitylake_dbapi.format.types import (
    ICEBERG_CARRIERS,
    KINDS,
    NESTED_KINDS,
    ColumnSpec,
    TypeSpec,
    iceberg_type,
    list_type,
    map_type,
    parse_type,
    struct_type,
    to_proto_columns,
    from_proto_columns,
    type_from_iceberg,
)
from trinitylake_dbapi.iceberg.schema import columns_from_schema, schema_from_columns
from pyiceberg.schema import index_by_id


def _all_fields(columns: list[ColumnSpec]) -> list[ColumnSpec]:
    out = []
    for c in columns:
        out.append(c)
        t = c.type
        out += _all_fields([*t.fields, *(f for f in (t.key, t.value, t.element) if f is not None)])
    return out


def test_every_primitive_kind_has_a_row_in_the_table() -> None:
    assert set(ICEBERG_CARRIERS) == set(KINDS) - NESTED_KINDS


@pytest.mark.parametrize(
    "sql, iceberg, back",
    [
        ("boolean", "boolean", "boolean"),
        ("int2", "int", "int4"),
        ("int4", "int", "int4"),
        ("int8", "long", "int8"),
        ("decimal(38,9)", "decimal(38, 9)", "decimal(38,9)"),
        ("float4", "float", "float4"),
        ("float8", "double", "float8"),
        ("char(3)", "string", "varchar"),
        ("varchar(10)", "string", "varchar"),
        ("varchar", "string", "varchar"),
        ("date", "date", "date"),
        ("time", "time", "time"),
        ("time(3)", "time", "time"),
        ("timetz", "string", "varchar"),
        ("timetz(6)", "string", "varchar"),
        ("timestamp(6)", "timestamp", "timestamp"),
        ("timestamptz", "timestamptz", "timestamptz"),
        ("fixed(16)", "fixed[16]", "fixed(16)"),
        ("binary", "binary", "binary"),
        ("binary(4)", "binary", "binary"),
    ],
)
def test_carriers_and_what_they_read_back_as(sql: str, iceberg: str, back: str) -> None:
    t = parse_type(sql, column="c")
    assert iceberg_type(t, column="c") == iceberg
    assert str(type_from_iceberg(iceberg, column="c")) == back
    assert type_from_iceberg(iceberg, column="c", declared=t) == t  # I3: the declared type stays


@pytest.mark.parametrize("sql, message", [("time(9)", "microseconds"), ("timestamp(9)", "microseconds"), ("timestamptz(7)", "microseconds")])
def test_types_iceberg_cannot_carry_are_refused_naming_the_column(sql: str, message: str) -> None:
    with pytest.raises(InvalidDefinitionError, match=f"column 'when'.*{message}|{message}.*when"):
        iceberg_type(parse_type(sql, column="when"), column="when")
    with pytest.raises(InvalidDefinitionError, match="when"):
        schema_from_columns([ColumnSpec("when", parse_type(sql, column="when"))])


def test_iceberg_only_types_read_back_as_their_carriers_or_are_refused() -> None:
    assert type_from_iceberg("uuid", column="u") == TypeSpec("fixed", length=16)
    assert type_from_iceberg("timestamp_ns", column="t") == TypeSpec("timestamp", precision=9)
    with pytest.raises(InvalidDefinitionError, match="'v'.*variant|variant.*'v'"):
        type_from_iceberg("variant", column="v")


_PRIMITIVES = st.sampled_from(
    ["boolean", "int2", "int4", "int8", "decimal(12,2)", "float4", "float8", "char(2)", "varchar(5)",
     "varchar", "date", "time", "timestamp", "timestamptz(3)", "fixed(8)", "binary"]
)  # fmt: skip
_NAMES = st.text("abcdefgh_", min_size=1, max_size=6)


def _types(depth: int = 2) -> st.SearchStrategy[TypeSpec]:
    primitive = _PRIMITIVES.map(lambda text: parse_type(text, column="c"))
    if depth == 0:
        return primitive
    inner = _types(depth - 1)
    return st.one_of(
        primitive,
        st.builds(lambda t, n: list_type(t, element_nullable=n), inner, st.booleans()),
        st.builds(lambda k, v: map_type(k, v), primitive, inner),
        st.lists(st.tuples(_NAMES, inner, st.booleans()), min_size=1, max_size=3, unique_by=lambda f: f[0]).map(
            lambda fields: struct_type(*(ColumnSpec(n, t, nullable=b) for n, t, b in fields))
        ),
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_NAMES, _types(), st.booleans(), st.none() | st.text(max_size=5)), min_size=1, max_size=4, unique_by=lambda c: c[0]))
def test_columns_survive_the_round_trip_through_an_iceberg_schema(spec: list) -> None:
    columns = [ColumnSpec(name, t, nullable, comment) for name, t, nullable, comment in spec]
    stored = from_proto_columns(to_proto_columns(columns, 1)[0])  # ids as the catalog gives them
    schema = schema_from_columns(stored)
    assert set(index_by_id(schema)) == {c.id for c in _all_fields(stored)}  # one id per field
    back = columns_from_schema(schema, previous=stored)
    assert back == stored  # S1 and S2: ids, names, nullability, comments and SPEC types
    plain = columns_from_schema(schema)
    assert [c.id for c in plain] == [c.id for c in stored]


def test_equal_column_lists_share_one_schema() -> None:
    """S4: a schema built again from equal columns is the same object, equal to one
    built afresh; other columns or another schema id give another schema."""
    from trinitylake_dbapi.format.types import ColumnSpec, TypeSpec
    from trinitylake_dbapi.iceberg.schema import schema_from_columns

    def columns() -> list[ColumnSpec]:
        return [ColumnSpec("id", TypeSpec("int8"), nullable=False), ColumnSpec("name", TypeSpec("varchar"))]

    first = schema_from_columns(columns())
    assert schema_from_columns(columns()) is first
    assert [f.name for f in first.fields] == ["id", "name"] and first.fields[0].required
    assert schema_from_columns(columns(), schema_id=1) is not first
    assert schema_from_columns(columns(), schema_id=1).schema_id == 1
    other = schema_from_columns([*columns(), ColumnSpec("x", TypeSpec("float8"))])
    assert other is not first and len(other.fields) == 3
