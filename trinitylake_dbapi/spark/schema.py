"""Spark schemas of TrinityLake tables (SPEC 5 types <-> Spark SQL types).

One mapping, both ways, for every SPEC 5 type (the type table itself lives in
:mod:`trinitylake_dbapi.format.types`):

    ==================  =======================  ===========================================
    TrinityLake         Spark                    back to TrinityLake (plain Spark type)
    ==================  =======================  ===========================================
    boolean             BooleanType              boolean
    int2                ShortType                int2 (ByteType is widened to int2 too)
    int4                IntegerType              int4
    int8                LongType                 int8
    decimal(p,s)        DecimalType(p,s)         decimal(p,s)
    float4 / float8     FloatType / DoubleType   float4 / float8
    char(n)             StringType *             varchar  (CharType(n) -> char(n))
    varchar(n)          StringType *             varchar  (VarcharType(n) -> varchar(n))
    varchar             StringType               varchar
    date                DateType                 date
    time(p)             TimeType(p)              time(p)
    time                TimeType(6) +            time(6)
    timetz(p)           TimeType(p or 6) +       time(p)
    timestamp(p)        TimestampNTZType +       timestamp
    timestamptz(p)      TimestampType +          timestamptz
    fixed(n)            BinaryType +             binary
    binary(n)           BinaryType +             binary
    struct<...>         StructType               struct (fields mapped one by one)
    map<k, v>           MapType(k, v, v null?)   map (key NOT NULL, value nullability kept)
    list<e>             ArrayType(e, e null?)    list (element nullability kept)
    ==================  =======================  ===========================================

    ``*`` with ``char_varchar=True`` the result is CharType(n) / VarcharType(n), which
    Spark accepts in table DDL but not in a DataFrame; the default StringType works
    everywhere and the length is kept in the field metadata Spark itself uses for that,
    ``__CHAR_VARCHAR_TYPE_STRING``.
    ``+`` Spark has no exact equivalent: the plain Spark type loses a parameter.

Exactness lives in field metadata. :func:`to_spark_field` (and :func:`table_schema`)
write on every StructField, nested struct fields included:

* ``comment``: the column's comment (Spark's own convention for column comments);
* ``trinitylake.type``: the canonical type text (``type_to_sql``) of the field, written
  only when the plain Spark type and the metadata of its nested struct fields do not
  already give back the same type; e.g. ``fixed(16)``, ``timestamp(3)``, or
  ``list<varchar(10) NOT NULL COMMENT 'x'>`` (array elements and map keys and values
  have no metadata of their own in Spark, so their parameters and comments ride on the
  nearest enclosing field);
* ``__CHAR_VARCHAR_TYPE_STRING``: Spark's own record of char/varchar lengths, when the
  type contains char(n) or varchar(n).

:func:`from_spark_field` reads ``trinitylake.type`` back only while it still agrees with
the field's Spark type (the text maps to that Spark type, nullability aside), so a
schema changed in Spark is never overridden by stale metadata; nested nullability is
always taken from the Spark type (the data obeys it; Parquet, for one, makes every
field nullable). ``to_spark_field`` then
``from_spark_field`` gives back every column unchanged (ids aside): name, type with all
parameters, nullability and comments at every depth.

Spark 4 reads and builds TimeType values, but writing them (e.g. to Parquet) needs
``spark.sql.timeType.enabled=true``.

Spark types with no TrinityLake counterpart (intervals, NullType, VariantType,
geospatial, user-defined types) are refused with an InvalidDefinitionError naming the
column.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Sequence

from pyspark.sql import types as T

from ..catalog import LakehouseCatalog
from ..errors import InvalidDefinitionError, ProgrammingError
from ..format.types import (
    ColumnSpec,
    TypeSpec,
    list_type,
    map_type,
    parse_type,
    quote_name,
    struct_type,
    type_to_sql,
    validate_column,
    without_ids,
)

__all__ = [
    "TYPE_METADATA_KEY",
    "COMMENT_METADATA_KEY",
    "CHAR_VARCHAR_METADATA_KEY",
    "to_spark_type",
    "to_spark_field",
    "to_spark_schema",
    "from_spark_type",
    "from_spark_field",
    "from_spark_schema",
    "table_schema",
    "catalog_of",
    "split_table_name",
]

TYPE_METADATA_KEY = "trinitylake.type"
COMMENT_METADATA_KEY = "comment"
CHAR_VARCHAR_METADATA_KEY = "__CHAR_VARCHAR_TYPE_STRING"

#: Spark's default (and largest) fractional-second precision, microseconds.
_SPARK_TIME_PRECISION = 6


# ---------------------------------------------------------------------------
# TrinityLake -> Spark
# ---------------------------------------------------------------------------


def _as_type(t: TypeSpec | str, column: str) -> TypeSpec:
    if isinstance(t, str):
        return parse_type(t, column=column)
    if not isinstance(t, TypeSpec):
        raise TypeError(f"expected a TypeSpec or type text, got {type(t).__name__}")
    return t


def to_spark_type(t: TypeSpec | str, *, char_varchar: bool = False) -> T.DataType:
    """The Spark type of a TrinityLake type (a TypeSpec or type text such as
    ``"map<varchar, list<int8>>"``), per the table in the module docstring.

    Struct fields become StructFields with the metadata of :func:`to_spark_field`, so a
    struct keeps its fields' comments and exact types. ``char_varchar=True`` gives
    CharType/VarcharType for char(n)/varchar(n) instead of StringType.
    """
    t = _as_type(t, "value")
    kind = t.kind
    if kind == "boolean":
        return T.BooleanType()
    if kind == "int2":
        return T.ShortType()
    if kind == "int4":
        return T.IntegerType()
    if kind == "int8":
        return T.LongType()
    if kind == "decimal":
        return T.DecimalType(t.precision, t.scale)
    if kind == "float4":
        return T.FloatType()
    if kind == "float8":
        return T.DoubleType()
    if kind == "char":
        return T.CharType(t.length) if char_varchar else T.StringType()
    if kind == "varchar":
        if char_varchar and t.length is not None:
            return T.VarcharType(t.length)
        return T.StringType()
    if kind == "date":
        return T.DateType()
    if kind in ("time", "timetz"):
        return T.TimeType(_SPARK_TIME_PRECISION if t.precision is None else t.precision)
    if kind == "timestamp":
        return T.TimestampNTZType()
    if kind == "timestamptz":
        return T.TimestampType()
    if kind in ("fixed", "binary"):
        return T.BinaryType()
    if kind == "struct":
        return T.StructType([to_spark_field(f, char_varchar=char_varchar) for f in t.fields])
    if kind == "map":
        assert t.key is not None and t.value is not None
        return T.MapType(
            to_spark_type(t.key.type, char_varchar=char_varchar),
            to_spark_type(t.value.type, char_varchar=char_varchar),
            t.value.nullable,
        )
    if kind == "list":
        assert t.element is not None
        return T.ArrayType(to_spark_type(t.element.type, char_varchar=char_varchar), t.element.nullable)
    raise InvalidDefinitionError(f"type {kind!r} has no Spark mapping")  # pragma: no cover


def spark_ddl(data_type: T.DataType) -> str:
    """Spark's DDL text of a type (its ``catalogString``): struct field names that are
    not plain identifiers in backquotes (the format's quote_name), so Spark's parser
    reads the text back."""
    dt = data_type
    if isinstance(dt, T.StructType):
        return "struct<" + ",".join(f"{quote_name(f.name)}:{spark_ddl(f.dataType)}" for f in dt.fields) + ">"
    if isinstance(dt, T.MapType):
        return f"map<{spark_ddl(dt.keyType)},{spark_ddl(dt.valueType)}>"
    if isinstance(dt, T.ArrayType):
        return f"array<{spark_ddl(dt.elementType)}>"
    return dt.simpleString()


def _has_char_varchar(t: TypeSpec) -> bool:
    if t.kind == "char" or (t.kind == "varchar" and t.length is not None):
        return True
    children = list(t.fields) + [c for c in (t.key, t.value, t.element) if c is not None]
    return any(_has_char_varchar(c.type) for c in children)


def to_spark_field(column: ColumnSpec, *, char_varchar: bool = False) -> T.StructField:
    """The StructField of a column: name, Spark type, nullability, and the metadata
    (``comment``, ``trinitylake.type`` when needed, ``__CHAR_VARCHAR_TYPE_STRING``)
    that lets :func:`from_spark_field` give the column back exactly."""
    if not isinstance(column, ColumnSpec):
        raise TypeError(f"expected a ColumnSpec, got {type(column).__name__}")
    validate_column(column)
    data_type = to_spark_type(column.type, char_varchar=char_varchar)
    metadata: dict[str, Any] = {}
    if column.comment is not None:
        metadata[COMMENT_METADATA_KEY] = column.comment
    if not char_varchar and _has_char_varchar(column.type):
        metadata[CHAR_VARCHAR_METADATA_KEY] = spark_ddl(to_spark_type(column.type, char_varchar=True))
    plain = T.StructField(column.name, data_type, column.nullable, dict(metadata))
    if without_ids(_from_field(plain, use_type_text=False, use_spark=False)) != without_ids(column):
        metadata[TYPE_METADATA_KEY] = type_to_sql(column.type)
    return T.StructField(column.name, data_type, column.nullable, metadata)


def to_spark_schema(columns: Iterable[ColumnSpec], *, char_varchar: bool = False) -> T.StructType:
    """The StructType of a table's columns (see :func:`to_spark_field`)."""
    return T.StructType([to_spark_field(c, char_varchar=char_varchar) for c in columns])


# ---------------------------------------------------------------------------
# Spark -> TrinityLake
# ---------------------------------------------------------------------------


def _refuse(column: str, data_type: T.DataType, why: str = "") -> InvalidDefinitionError:
    return InvalidDefinitionError(
        f"column {column!r}: Spark type {data_type.simpleString()!r} has no TrinityLake "
        f"type{why}; cast it to one of boolean, smallint, int, bigint, decimal, float, "
        "double, string, date, time, timestamp, timestamp_ntz, binary, struct, map, array"
    )


def from_spark_type(data_type: T.DataType, *, column: str = "value") -> TypeSpec:
    """The TrinityLake type of a Spark type, from the type alone (metadata of nested
    struct fields included, see :func:`from_spark_field`). ``column`` names the column
    in errors. Raises InvalidDefinitionError for a Spark type with no counterpart."""
    if not isinstance(data_type, T.DataType):
        raise TypeError(f"expected a pyspark DataType, got {type(data_type).__name__}")
    dt = data_type
    if isinstance(dt, T.BooleanType):
        return TypeSpec("boolean")
    if isinstance(dt, (T.ByteType, T.ShortType)):
        return TypeSpec("int2")
    if isinstance(dt, T.IntegerType):
        return TypeSpec("int4")
    if isinstance(dt, T.LongType):
        return TypeSpec("int8")
    if isinstance(dt, T.DecimalType):
        return TypeSpec("decimal", precision=dt.precision, scale=dt.scale)
    if isinstance(dt, T.FloatType):
        return TypeSpec("float4")
    if isinstance(dt, T.DoubleType):
        return TypeSpec("float8")
    if isinstance(dt, T.CharType):
        return TypeSpec("char", length=dt.length)
    if isinstance(dt, T.VarcharType):
        return TypeSpec("varchar", length=dt.length)
    if isinstance(dt, T.StringType):
        return TypeSpec("varchar")
    if isinstance(dt, T.DateType):
        return TypeSpec("date")
    if isinstance(dt, T.TimeType):
        return TypeSpec("time", precision=dt.precision)
    if isinstance(dt, T.TimestampNTZType):
        return TypeSpec("timestamp")
    if isinstance(dt, T.TimestampType):
        return TypeSpec("timestamptz")
    if isinstance(dt, T.BinaryType):
        return TypeSpec("binary")
    if isinstance(dt, T.StructType):
        if not dt.fields:
            raise _refuse(column, dt, " (a struct needs at least one field)")
        return struct_type(*(_from_field(f, path=f"{column}.{f.name}") for f in dt.fields))
    if isinstance(dt, T.MapType):
        return map_type(
            from_spark_type(dt.keyType, column=f"{column}.key"),
            from_spark_type(dt.valueType, column=f"{column}.value"),
            value_nullable=dt.valueContainsNull,
        )
    if isinstance(dt, T.ArrayType):
        return list_type(
            from_spark_type(dt.elementType, column=f"{column}.element"),
            element_nullable=dt.containsNull,
        )
    raise _refuse(column, dt)


_NULLABILITY_KEYS = frozenset({"nullable", "containsNull", "valueContainsNull"})


def _plain_json(data_type: T.DataType, *, nullability: bool = True) -> str:
    """The Spark type as JSON without any field metadata (and, with
    ``nullability=False``, without nullability), to compare shapes."""
    drop = {"metadata"} if nullability else {"metadata", *_NULLABILITY_KEYS}

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in drop}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return json.dumps(strip(data_type.jsonValue()), sort_keys=True)


def _with_nullability(t: TypeSpec, data_type: T.DataType) -> TypeSpec:
    """``t`` (whose shape matches ``data_type``) with the nested nullability of
    ``data_type``: Spark's nullability is what the data obeys (Parquet, for one, makes
    everything nullable), the type text keeps parameters and comments."""
    if t.kind == "list" and isinstance(data_type, T.ArrayType) and t.element is not None:
        e = t.element
        element = ColumnSpec(e.name, _with_nullability(e.type, data_type.elementType), data_type.containsNull, e.comment)
        return TypeSpec("list", element=element)
    if t.kind == "map" and isinstance(data_type, T.MapType) and t.key is not None and t.value is not None:
        k, v = t.key, t.value
        key = ColumnSpec(k.name, _with_nullability(k.type, data_type.keyType), False, k.comment)
        value = ColumnSpec(v.name, _with_nullability(v.type, data_type.valueType), data_type.valueContainsNull, v.comment)
        return TypeSpec("map", key=key, value=value)
    if t.kind == "struct" and isinstance(data_type, T.StructType):
        fields = tuple(
            ColumnSpec(f.name, _with_nullability(f.type, sf.dataType), bool(sf.nullable), f.comment)
            for f, sf in zip(t.fields, data_type.fields)
        )
        return TypeSpec("struct", fields=fields)
    return t


def _parse_spark_ddl(text: str) -> T.DataType | None:
    """A Spark type from its DDL text, via the active Spark session; None if there is
    no session or the text does not parse."""
    try:
        from pyspark.sql import SparkSession

        if SparkSession.getActiveSession() is None:
            return None
        return T._parse_datatype_string(text)
    except Exception:  # noqa: BLE001 - metadata from elsewhere; fall back to the plain type
        return None


def _from_field(
    field: T.StructField, *, path: str | None = None, use_type_text: bool = True, use_spark: bool = True
) -> ColumnSpec:
    path = field.name if path is None else path
    metadata = field.metadata or {}
    comment = metadata.get(COMMENT_METADATA_KEY)
    if comment is not None and not isinstance(comment, str):
        comment = str(comment)
    text = metadata.get(TYPE_METADATA_KEY) if use_type_text else None
    t: TypeSpec | None = None
    if isinstance(text, str):
        try:
            candidate = parse_type(text, column=path)
        except InvalidDefinitionError:
            candidate = None
        if candidate is not None and _plain_json(to_spark_type(candidate), nullability=False) == _plain_json(
            field.dataType, nullability=False
        ):
            t = _with_nullability(candidate, field.dataType)
    if t is None:
        shown = metadata.get(CHAR_VARCHAR_METADATA_KEY)
        spark_type = field.dataType
        if isinstance(shown, str) and use_spark:
            parsed = _parse_spark_ddl(shown)
            if parsed is not None and _plain_json(_char_varchar_as_string(parsed), nullability=False) == _plain_json(
                field.dataType, nullability=False
            ):
                spark_type = _restore_char_varchar(field.dataType, parsed)
        t = from_spark_type(spark_type, column=path)
    column = ColumnSpec(field.name, t, bool(field.nullable), comment)
    validate_column(column, path)
    return column


def _char_varchar_as_string(data_type: T.DataType) -> T.DataType:
    """``data_type`` with every CharType/VarcharType replaced by StringType."""
    dt = data_type
    if isinstance(dt, (T.CharType, T.VarcharType)):
        return T.StringType()
    if isinstance(dt, T.StructType):
        return T.StructType(
            [T.StructField(f.name, _char_varchar_as_string(f.dataType), f.nullable, f.metadata) for f in dt.fields]
        )
    if isinstance(dt, T.MapType):
        return T.MapType(
            _char_varchar_as_string(dt.keyType), _char_varchar_as_string(dt.valueType), dt.valueContainsNull
        )
    if isinstance(dt, T.ArrayType):
        return T.ArrayType(_char_varchar_as_string(dt.elementType), dt.containsNull)
    return dt


def _restore_char_varchar(actual: T.DataType, declared: T.DataType) -> T.DataType:
    """``actual`` (same shape as ``declared`` with strings for char/varchar) with the
    CharType/VarcharType of ``declared`` put back; ``actual``'s nullability and field
    metadata are kept."""
    if isinstance(actual, T.StringType) and isinstance(declared, (T.CharType, T.VarcharType)):
        return declared
    if isinstance(actual, T.StructType) and isinstance(declared, T.StructType):
        return T.StructType(
            [
                T.StructField(a.name, _restore_char_varchar(a.dataType, d.dataType), a.nullable, a.metadata)
                for a, d in zip(actual.fields, declared.fields)
            ]
        )
    if isinstance(actual, T.ArrayType) and isinstance(declared, T.ArrayType):
        return T.ArrayType(_restore_char_varchar(actual.elementType, declared.elementType), actual.containsNull)
    if isinstance(actual, T.MapType) and isinstance(declared, T.MapType):
        return T.MapType(
            _restore_char_varchar(actual.keyType, declared.keyType),
            _restore_char_varchar(actual.valueType, declared.valueType),
            actual.valueContainsNull,
        )
    return actual


def from_spark_field(field: T.StructField) -> ColumnSpec:
    """The column of a StructField: name, nullability, ``comment`` from the metadata,
    and the type from ``trinitylake.type`` when it still agrees with the Spark type,
    else from the Spark type (and ``__CHAR_VARCHAR_TYPE_STRING``). The column has no
    id (ids are given when a table stores it)."""
    if not isinstance(field, T.StructField):
        raise TypeError(f"expected a pyspark StructField, got {type(field).__name__}")
    return _from_field(field)


def from_spark_schema(schema: T.StructType) -> list[ColumnSpec]:
    """The columns of a Spark schema (see :func:`from_spark_field`), ready for
    ``CatalogTransaction.create_table``."""
    if not isinstance(schema, T.StructType):
        raise TypeError(f"expected a pyspark StructType, got {type(schema).__name__}")
    names = [f.name for f in schema.fields]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidDefinitionError(f"duplicate column name {duplicates[0]!r} in the Spark schema")
    return [from_spark_field(f) for f in schema.fields]


# ---------------------------------------------------------------------------
# Table lookups
# ---------------------------------------------------------------------------


def catalog_of(conn_or_location: Any, storage_options: dict | None = None) -> tuple[LakehouseCatalog, bool, Any]:
    """(the LakehouseCatalog, whether the caller opened it and must close it, the version
    the source reads by default).

    Accepts a location string (a root URI or local path), a LakehouseCatalog, or a DB-API
    Connection of this package: its LakehouseCatalog is its ``catalog`` attribute (or
    ``lakehouse``), and a time travel connection's ``version`` is the default version.
    """
    if isinstance(conn_or_location, LakehouseCatalog):
        return conn_or_location, False, None
    if isinstance(conn_or_location, str):
        return LakehouseCatalog(conn_or_location, storage_options=storage_options), True, None
    for attribute in ("catalog", "lakehouse"):
        catalog = getattr(conn_or_location, attribute, None)
        if isinstance(catalog, LakehouseCatalog):
            return catalog, False, getattr(conn_or_location, "version", None)
    raise TypeError(
        "expected a lakehouse location (str), a LakehouseCatalog or a trinitylake_dbapi "
        f"Connection (with a .catalog), got {type(conn_or_location).__name__}"
    )


def split_table_name(name: str | Sequence[str]) -> tuple[str, str]:
    """("ns", "t") from ``"ns.t"``, ``"`my.ns`.`t`"`` (backquotes, doubled inside) or a
    pair. A name with more than one unquoted dot is ambiguous and refused."""
    if not isinstance(name, str):
        parts = tuple(name)
        if len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
            raise ProgrammingError(f"table name {name!r}: give 'namespace.table' or (namespace, table)")
        return parts[0], parts[1]
    parts: list[str] = []
    current: list[str] = []
    i = 0
    quoted_part = False
    while i < len(name):
        ch = name[i]
        if ch == "`" and not current and not quoted_part:
            end = i + 1
            text: list[str] = []
            while True:
                if end >= len(name):
                    raise ProgrammingError(f"table name {name!r}: unclosed backquote")
                if name[end] == "`":
                    if end + 1 < len(name) and name[end + 1] == "`":
                        text.append("`")
                        end += 2
                        continue
                    break
                text.append(name[end])
                end += 1
            current = text
            quoted_part = True
            i = end + 1
            if i < len(name) and name[i] != ".":
                raise ProgrammingError(f"table name {name!r}: expected '.' after a quoted part")
            continue
        if ch == ".":
            parts.append("".join(current))
            current, quoted_part = [], False
        elif quoted_part:
            raise ProgrammingError(f"table name {name!r}: expected '.' after a quoted part")
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    if len(parts) != 2 or not all(parts):
        raise ProgrammingError(
            f"table name {name!r}: expected 'namespace.table'; quote a part that holds a dot "
            "in backquotes, e.g. '`my.ns`.t', or pass (namespace, table)"
        )
    return parts[0], parts[1]


def table_schema(
    conn_or_location: Any,
    name: str | Sequence[str],
    version: int | str | None = None,
    *,
    char_varchar: bool = False,
    storage_options: dict | None = None,
) -> T.StructType:
    """The Spark schema of table ``name`` ("ns.t") at ``version`` (a version number, an
    exported snapshot name, or None for the latest).

    ``conn_or_location`` is a lakehouse location, a LakehouseCatalog, or a DB-API
    Connection (its ``catalog``/``lakehouse`` attribute is used; a time travel
    connection's version is the default). Each field carries its column's
    nullability and metadata (see the module docstring); ``from_spark_schema`` gives
    the columns back exactly. ObjectNotFoundError if the table or version does not exist.
    """
    namespace, table = split_table_name(name)
    catalog, owned, default_version = catalog_of(conn_or_location, storage_options)
    if version is None:
        version = default_version
    try:
        txn = catalog.begin(version=version) if version is not None else catalog.begin()
        try:
            info = txn.describe_table(namespace, table)
        finally:
            txn.rollback()
    finally:
        if owned:
            catalog.close()
    return to_spark_schema(info.columns, char_varchar=char_varchar)
