"""SPEC 5 types <-> Spark types: every type, nested types, nullability, comments."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

import trinitylake_dbapi
from lakehouses import cols
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.errors import InvalidDefinitionError, ObjectNotFoundError, ProgrammingError
from trinitylake_dbapi.format.types import KINDS, ColumnSpec, TypeSpec, parse_type, without_ids
from trinitylake_dbapi.spark import (
    from_spark_field,
    from_spark_schema,
    from_spark_type,
    table_schema,
    to_spark_field,
    to_spark_schema,
    to_spark_type,
)
from trinitylake_dbapi.spark.schema import (
    CHAR_VARCHAR_METADATA_KEY,
    TYPE_METADATA_KEY,
    split_table_name,
)

#: Every SPEC 5 type with each parameter form, then nested types of all of them.
SCALARS = [
    "boolean", "int2", "int4", "int8", "decimal(10,0)", "decimal(38,10)", "decimal(1,1)",
    "float4", "float8", "char(1)", "char(20)", "varchar", "varchar(1)", "varchar(300)",
    "date", "time", "time(0)", "time(3)", "time(6)", "time(9)", "timetz", "timetz(3)",
    "timestamp", "timestamp(0)", "timestamp(6)", "timestamp(9)", "timestamptz",
    "timestamptz(3)", "fixed(1)", "fixed(16)", "binary", "binary(8)",
]  # fmt: skip
NESTED = [
    "list<int8>",
    "list<int8 NOT NULL>",
    "list<fixed(16) COMMENT 'uuid bytes'>",
    "map<varchar, int4>",
    "map<char(3), decimal(5,2) NOT NULL COMMENT 'amount'>",
    "map<int8, list<timestamp(3)>>",
    "struct<a: int4>",
    "struct<a: int4 NOT NULL COMMENT 'x', `b c`: list<varchar(5)>, d: map<varchar, timetz>>",
    "list<struct<id: int8 NOT NULL, tags: map<varchar, varchar COMMENT 'v'>>>",
    "struct<inner: struct<deep: binary(4) NOT NULL COMMENT 'it''s deep'>>",
    "map<struct<k: int2 NOT NULL>, list<list<date>>>",
]
ALL_TYPES = SCALARS + NESTED

#: Types whose plain Spark type gives them back with no metadata at all.
EXACT = ["boolean", "int2", "int4", "int8", "decimal(10,0)", "decimal(38,10)", "float4",
         "float8", "varchar", "date", "time(0)", "time(3)", "time(9)", "timestamp",
         "timestamptz", "binary", "list<int8>", "list<int8 NOT NULL>", "map<varchar, int4>",
         "struct<a: int4>", "map<int8, list<timestamp>>"]  # fmt: skip


def test_every_spec_kind_is_covered() -> None:
    covered = {parse_type(t, column="c").kind for t in ALL_TYPES}
    assert covered == set(KINDS)


@pytest.mark.parametrize("text", ALL_TYPES)
@pytest.mark.parametrize("nullable", [True, False])
@pytest.mark.parametrize("comment", [None, "a 'comment'"])
def test_round_trip_through_a_struct_field(text: str, nullable: bool, comment: str | None) -> None:
    column = ColumnSpec("c", parse_type(text, column="c"), nullable, comment)
    field = to_spark_field(column)
    assert field.nullable is nullable
    assert field.metadata.get("comment") == comment
    assert without_ids(from_spark_field(field)) == column
    # ... and after the schema travels as JSON (how Spark stores and ships it)
    again = T.StructField.fromJson(field.jsonValue())
    assert without_ids(from_spark_field(again)) == column


@pytest.mark.parametrize("text", EXACT)
def test_plain_spark_type_is_exact_where_spark_has_the_type(text: str) -> None:
    t = parse_type(text, column="c")
    assert from_spark_type(to_spark_type(t)) == t
    assert TYPE_METADATA_KEY not in to_spark_field(ColumnSpec("c", t)).metadata


def test_mapping_table() -> None:
    assert to_spark_type("int2") == T.ShortType()
    assert to_spark_type("decimal(12,3)") == T.DecimalType(12, 3)
    assert to_spark_type("float4") == T.FloatType() and to_spark_type("float8") == T.DoubleType()
    assert to_spark_type("timestamp") == T.TimestampNTZType()
    assert to_spark_type("timestamptz(3)") == T.TimestampType()
    assert to_spark_type("time(3)") == T.TimeType(3)
    assert to_spark_type("fixed(16)") == T.BinaryType()
    assert to_spark_type("char(3)") == T.StringType()
    assert to_spark_type("char(3)", char_varchar=True) == T.CharType(3)
    assert to_spark_type("varchar(7)", char_varchar=True) == T.VarcharType(7)
    assert to_spark_type("list<int4 NOT NULL>") == T.ArrayType(T.IntegerType(), False)
    assert to_spark_type("map<varchar, int8 NOT NULL>") == T.MapType(T.StringType(), T.LongType(), False)
    field = to_spark_field(ColumnSpec("c", parse_type("list<varchar(4)>", column="c")))
    assert field.metadata[CHAR_VARCHAR_METADATA_KEY] == "array<varchar(4)>"
    nested = to_spark_type("struct<a: fixed(2) COMMENT 'x'>")
    assert nested.fields[0].metadata == {"comment": "x", TYPE_METADATA_KEY: "fixed(2)"}


SPARK_TYPES = [
    T.BooleanType(), T.ShortType(), T.IntegerType(), T.LongType(), T.DecimalType(7, 2),
    T.FloatType(), T.DoubleType(), T.CharType(4), T.VarcharType(9), T.StringType(),
    T.DateType(), T.TimeType(3), T.TimestampType(), T.TimestampNTZType(), T.BinaryType(),
    T.ArrayType(T.LongType(), False), T.MapType(T.StringType(), T.ArrayType(T.DateType()), True),
    T.StructType([T.StructField("x", T.IntegerType(), False, {"comment": "c"}),
                  T.StructField("y", T.ArrayType(T.VarcharType(3)))]),
]  # fmt: skip


@pytest.mark.parametrize("data_type", SPARK_TYPES, ids=lambda t: t.simpleString())
def test_spark_to_trinitylake_and_back(data_type: T.DataType) -> None:
    assert to_spark_type(from_spark_type(data_type), char_varchar=True) == data_type


def test_byte_widens_to_int2() -> None:
    assert from_spark_type(T.ByteType()) == parse_type("int2", column="c")


@pytest.mark.parametrize(
    "data_type",
    [T.NullType(), T.CalendarIntervalType(), T.DayTimeIntervalType(), T.YearMonthIntervalType(),
     T.VariantType(), T.ArrayType(T.NullType()), T.StructType([])],
    ids=lambda t: t.simpleString(),
)  # fmt: skip
def test_spark_types_without_a_counterpart_are_refused_naming_the_column(data_type: T.DataType) -> None:
    with pytest.raises(InvalidDefinitionError, match="column 'events"):
        from_spark_field(T.StructField("events", data_type))


def test_stale_type_metadata_is_ignored() -> None:
    field = to_spark_field(ColumnSpec("c", parse_type("fixed(16)", column="c")))
    changed = T.StructField("c", T.LongType(), True, dict(field.metadata))
    assert from_spark_field(changed).type == parse_type("int8", column="c")


def test_duplicate_names_refused() -> None:
    schema = T.StructType([T.StructField("a", T.LongType()), T.StructField("a", T.LongType())])
    with pytest.raises(InvalidDefinitionError, match="duplicate"):
        from_spark_schema(schema)


def test_split_table_name() -> None:
    assert split_table_name("ns.t") == ("ns", "t")
    assert split_table_name("`a.b`.`c``d`") == ("a.b", "c`d")
    assert split_table_name(("x.y", "z")) == ("x.y", "z")
    for bad in ("a.b.c", "t", "`a.b", ".t", "`a`x.t"):
        with pytest.raises(ProgrammingError):
            split_table_name(bad)


# -- through Spark ------------------------------------------------------------------------


def test_every_type_survives_a_parquet_round_trip(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    columns = [
        ColumnSpec(f"c{i}", parse_type(text, column=f"c{i}"), i % 2 == 0, f"comment {i}" if i % 3 else None)
        for i, text in enumerate(ALL_TYPES)
    ]
    schema = to_spark_schema(columns)
    out = str(tmp_path / "all_types")
    spark.createDataFrame([], schema).write.parquet(out)
    back = from_spark_schema(spark.read.parquet(out).schema)
    # Spark writes every field of a Parquet file as nullable; everything else survives.
    assert [without_ids(c) for c in back] == [nullable(c) for c in columns]


def nullable(c: ColumnSpec) -> ColumnSpec:
    """``c`` with every field nullable except map keys (which never are)."""
    t = c.type
    t = TypeSpec(
        t.kind, t.length, t.precision, t.scale,
        fields=tuple(nullable(f) for f in t.fields),
        key=None if t.key is None else ColumnSpec("key", nullable(t.key).type, False, t.key.comment),
        value=None if t.value is None else nullable(t.value),
        element=None if t.element is None else nullable(t.element),
    )  # fmt: skip
    return ColumnSpec(c.name, t, True, c.comment)


def test_char_varchar_metadata_alone_is_understood(spark) -> None:  # type: ignore[no-untyped-def]
    field = T.StructField("c", T.ArrayType(T.StringType()), True,
                          {CHAR_VARCHAR_METADATA_KEY: "array<char(3)>"})  # as Spark writes it
    assert from_spark_field(field).type == parse_type("list<char(3)>", column="c")


@pytest.fixture
def lake(tmp_path) -> str:  # type: ignore[no-untyped-def]
    location = str(tmp_path / "lake")
    catalog = LakehouseCatalog(location, create=True)
    txn = catalog.begin()
    txn.create_namespace("sales")
    txn.create_namespace("my.ns")
    txn.create_table("sales", "orders", cols("id bigint NOT NULL", "amount decimal(10,2)"),
                     primary_key=["id"])
    txn.create_table("my.ns", "t", cols("x list<fixed(4)>"))
    txn.commit()
    txn = catalog.begin()
    txn.add_columns("sales", "orders", cols("note varchar(20)"))
    txn.alter_column("sales", "orders", "amount", comment="in EUR")
    txn.commit()
    return location


def test_table_schema_from_a_location_at_each_version(lake: str) -> None:
    latest = table_schema(lake, "sales.orders")
    assert [f.name for f in latest.fields] == ["id", "amount", "note"]
    assert latest["id"].nullable is False and latest["amount"].metadata["comment"] == "in EUR"
    assert latest["note"].metadata[TYPE_METADATA_KEY] == "varchar(20)"
    first = table_schema(lake, "sales.orders", version=1)
    assert [f.name for f in first.fields] == ["id", "amount"]
    assert "comment" not in first["amount"].metadata
    assert table_schema(lake, "`my.ns`.t")["x"].metadata[TYPE_METADATA_KEY] == "list<fixed(4)>"
    with pytest.raises(ObjectNotFoundError):
        table_schema(lake, "sales.missing")
    with pytest.raises(ObjectNotFoundError):
        table_schema(lake, "sales.orders", version=99)


def test_table_schema_from_a_connection_and_a_catalog(lake: str) -> None:
    catalog = LakehouseCatalog(lake)
    assert table_schema(catalog, "sales.orders") == table_schema(lake, "sales.orders")
    conn = trinitylake_dbapi.connect(lake)
    try:
        assert table_schema(conn, "sales.orders") == table_schema(lake, "sales.orders")
        assert table_schema(conn, "sales.orders", version=1) == table_schema(lake, "sales.orders", version=1)
    finally:
        conn.close()
    old = trinitylake_dbapi.connect(lake, version=1)  # a time travel connection reads its version
    try:
        assert table_schema(old, "sales.orders") == table_schema(lake, "sales.orders", version=1)
    finally:
        old.close()
    with pytest.raises(TypeError, match="Connection"):
        table_schema(42, "sales.orders")
