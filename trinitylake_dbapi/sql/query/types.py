"""Types: SPEC 5 kinds <-> DuckDB <-> Arrow, and the SQL spelling of names and text.

The data engine's one module for the DuckDB and Arrow type systems (docs/architecture.md
lists one module per type system): SPEC 5 types as DuckDB types, Arrow types as SPEC 5
kinds (result columns), the Arrow type a column is stored as (through its Iceberg
carrier, I1), and the system tables' rows as an Arrow table. No rules of its own: the
mappings that Q2 (views), Q3 (writes), Q5 (reads) and CREATE TABLE AS SELECT rely on.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from trinitylake_dbapi.errors import NotSupportedError
from trinitylake_dbapi.format.types import ColumnSpec, TypeSpec


_DUCK_PRIMITIVES = {
    "boolean": "BOOLEAN", "int2": "SMALLINT", "int4": "INTEGER", "int8": "BIGINT",
    "float4": "FLOAT", "float8": "DOUBLE", "char": "VARCHAR", "varchar": "VARCHAR",
    "date": "DATE", "time": "TIME", "timetz": "VARCHAR", "timestamp": "TIMESTAMP",
    "timestamptz": "TIMESTAMPTZ", "fixed": "BLOB", "binary": "BLOB",
}  # fmt: skip


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def string_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def duck_type(t: TypeSpec, *, stored: bool) -> str:
    """The DuckDB type of a SPEC 5 type: as stored in the Iceberg data (``stored``:
    the carrier, e.g. INTEGER for int2) or as SQL sees the column."""
    if t.kind == "decimal":
        return f"DECIMAL({t.precision},{t.scale})"
    if t.kind == "list":
        assert t.element is not None
        return f"{duck_type(t.element.type, stored=stored)}[]"
    if t.kind == "map":
        assert t.key is not None and t.value is not None
        return f"MAP({duck_type(t.key.type, stored=stored)}, {duck_type(t.value.type, stored=stored)})"
    if t.kind == "struct":
        fields = ", ".join(f"{quote_identifier(f.name)} {duck_type(f.type, stored=stored)}" for f in t.fields)
        return f"STRUCT({fields})"
    if stored and t.kind == "int2":
        return "INTEGER"
    return _DUCK_PRIMITIVES[t.kind]


def kind_of_arrow(t: Any) -> str:
    """The SPEC 5 kind (a PEP 249 type code) of an Arrow type of a result column."""
    import pyarrow as pa

    checks: Sequence[tuple[Callable[[Any], bool], str]] = (
        (pa.types.is_boolean, "boolean"), (pa.types.is_int8, "int2"), (pa.types.is_int16, "int2"),
        (pa.types.is_uint8, "int2"), (pa.types.is_int32, "int4"), (pa.types.is_uint16, "int4"),
        (pa.types.is_int64, "int8"), (pa.types.is_uint32, "int8"), (pa.types.is_uint64, "decimal"),
        (pa.types.is_float16, "float4"), (pa.types.is_float32, "float4"),
        (pa.types.is_float64, "float8"), (pa.types.is_decimal, "decimal"),
        (pa.types.is_string, "varchar"), (pa.types.is_large_string, "varchar"),
        (pa.types.is_string_view, "varchar"), (pa.types.is_fixed_size_binary, "fixed"),
        (pa.types.is_binary, "binary"), (pa.types.is_large_binary, "binary"),
        (pa.types.is_binary_view, "binary"), (pa.types.is_date, "date"),
        (pa.types.is_time, "time"), (pa.types.is_map, "map"), (pa.types.is_struct, "struct"),
        (pa.types.is_list, "list"), (pa.types.is_large_list, "list"),
        (pa.types.is_fixed_size_list, "list"), (pa.types.is_list_view, "list"),
    )  # fmt: skip
    if pa.types.is_timestamp(t):
        return "timestamptz" if t.tz else "timestamp"
    for check, kind in checks:
        if check(t):
            return kind
    return "varchar"  # intervals, nulls, unions: no SPEC 5 kind; shown as text would be


def query_columns(schema: Any) -> tuple[tuple[Any, ...], ...]:
    """(name, SPEC 5 kind) of an Arrow schema's fields: a result's description; a decimal
    column's is (name, "decimal", precision, scale), which cursor.description reports
    (polars' read_database builds its Decimal dtype from them, and fails without)."""
    import pyarrow as pa

    def column(f: Any) -> tuple[Any, ...]:
        if pa.types.is_decimal(f.type):
            return (f.name, "decimal", f.type.precision, f.type.scale)
        if pa.types.is_uint64(f.type):
            return (f.name, "decimal", 20, 0)
        return (f.name, kind_of_arrow(f.type))

    return tuple(column(f) for f in schema)


_DUCK_TO_KIND = {
    "BOOLEAN": "boolean", "TINYINT": "int2", "SMALLINT": "int2", "UTINYINT": "int2",
    "INTEGER": "int4", "USMALLINT": "int4", "BIGINT": "int8", "UINTEGER": "int8",
    "FLOAT": "float4", "DOUBLE": "float8", "VARCHAR": "varchar", "DATE": "date",
    "TIME": "time", "TIMESTAMP": "timestamp", "TIMESTAMP WITH TIME ZONE": "timestamptz",
    "BLOB": "binary", "UUID": "varchar", "TIME WITH TIME ZONE": "timetz",
    "TIMESTAMP_S": "timestamp", "TIMESTAMP_MS": "timestamp", "TIMESTAMP_NS": "timestamp",
}  # fmt: skip


def type_of_duck(t: Any, column: str) -> TypeSpec:
    """The SPEC 5 type of a DuckDB result column (for CREATE TABLE AS SELECT)."""
    from trinitylake_dbapi.format.types import list_type, map_type, struct_type

    text = str(t)
    type_id = getattr(t, "id", "").lower()
    if type_id == "decimal":
        children = dict(t.children)
        return TypeSpec("decimal", precision=int(children["precision"]), scale=int(children["scale"]))
    if type_id in ("hugeint", "uhugeint", "ubigint"):
        return TypeSpec("decimal", precision=38, scale=0)
    if type_id == "list":
        return list_type(type_of_duck(dict(t.children)["child"], column))
    if type_id == "map":
        children = dict(t.children)
        return map_type(type_of_duck(children["key"], column), type_of_duck(children["value"], column))
    if type_id == "struct":
        return struct_type(*(ColumnSpec(n, type_of_duck(c, f"{column}.{n}")) for n, c in t.children))
    kind = _DUCK_TO_KIND.get(text.upper())
    if kind is None:
        raise NotSupportedError(f"CREATE TABLE AS SELECT: column {column!r} has DuckDB type {text}, which no table type holds")
    if kind == "time" or kind == "timestamp" or kind == "timestamptz":
        return TypeSpec(kind, precision=6)
    return TypeSpec(kind)


def stored_arrow_type(columns: Sequence[ColumnSpec], name: str) -> Any:
    """The Arrow type a column's values are stored as (its Iceberg carrier's, I1)."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    from trinitylake_dbapi.iceberg.schema import schema_from_columns

    column = next(c for c in columns if c.name.lower() == name.lower())
    return schema_to_pyarrow(schema_from_columns([column]), include_field_ids=False).field(0).type


def arrow_table(columns: Sequence[tuple[str, str]], rows: Sequence[tuple]) -> Any:
    """A system table's rows (``columns``: (name, SPEC 5 kind), the kinds the system
    tables hold) as an Arrow table, for DuckDB to join with tables' data."""
    import pyarrow as pa

    types = {"varchar": pa.string(), "int4": pa.int32(), "int8": pa.int64(), "boolean": pa.bool_(),
             "timestamp": pa.timestamp("us")}  # fmt: skip
    schema = pa.schema([(name, types[kind]) for name, kind in columns])
    values = list(zip(*rows)) if rows else [[] for _ in columns]
    return pa.table([pa.array(list(col), type=f.type) for col, f in zip(values, schema)], schema=schema)
