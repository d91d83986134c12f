"""Column types (SPEC 5): the one table from SQL type names to DataType and back.

Every layer that names a type (SQL DDL, the SQLAlchemy dialect, Spark schemas, SHOW and
DESCRIBE output) goes through this package, so an alias, a parameter rule or the quoting
of a name is written exactly once. Everything is importable from here:

  spec.py     the model (TypeSpec, ColumnSpec), SQL type names and parameters, the
              canonical text written and read back (with the one quoting rule of
              names, quote_name), and the checks of a type (nesting N1, parameters,
              nested fields). They belong together: a type prints as its text, reading
              a text validates the type, and validation messages quote the text.
  proto.py    how columns are stored in definition files (ColumnSpec <-> protobuf
              Column, column ids).
  iceberg.py  the Iceberg type of each SPEC 5 type and back (SPEC 8, rules I1-I3).

Pure: no I/O, no state.
"""

from __future__ import annotations

from trinitylake_dbapi.format.types.iceberg import (
    ICEBERG_CARRIERS,
    ICEBERG_TIME_PRECISION,
    iceberg_type,
    type_from_iceberg,
)
from trinitylake_dbapi.format.types.proto import (
    ColumnCache,
    from_proto_column,
    from_proto_columns,
    max_column_id,
    to_proto_columns,
    without_ids,
)
from trinitylake_dbapi.format.types.spec import (
    ALIASES,
    KINDS,
    MAX_DECIMAL_PRECISION,
    MAX_LENGTH,
    MAX_NESTING_DEPTH,
    MAX_TIME_PRECISION,
    NESTED_KINDS,
    ColumnSpec,
    TypeSpec,
    canonical_kind,
    check_nesting,
    is_plain_name,
    list_type,
    map_type,
    nested_fields,
    nesting_depth,
    parse_type,
    quote_name,
    quote_string,
    struct_type,
    type_from_sql,
    type_to_sql,
    validate_column,
)

__all__ = [
    "KINDS",
    "NESTED_KINDS",
    "ALIASES",
    "MAX_DECIMAL_PRECISION",
    "MAX_TIME_PRECISION",
    "MAX_LENGTH",
    "MAX_NESTING_DEPTH",
    "TypeSpec",
    "ColumnSpec",
    "canonical_kind",
    "type_from_sql",
    "struct_type",
    "map_type",
    "list_type",
    "parse_type",
    "type_to_sql",
    "is_plain_name",
    "quote_name",
    "quote_string",
    "validate_column",
    "nested_fields",
    "nesting_depth",
    "check_nesting",
    "ColumnCache",
    "to_proto_columns",
    "from_proto_column",
    "from_proto_columns",
    "max_column_id",
    "without_ids",
    "ICEBERG_CARRIERS",
    "ICEBERG_TIME_PRECISION",
    "iceberg_type",
    "type_from_iceberg",
]
