"""Column types (SPEC 5) <-> Apache Iceberg types (SPEC 8).

Rules (I1-I3), for a table whose data is an Apache Iceberg table (format version 2):

  I1 Every SPEC 5 type has an Iceberg type that holds every one of its values: its
     *carrier*, below. Where the carrier is wider than the SPEC type (int2 in int,
     char(n) and varchar(n) in string, binary(n) in binary, a time or timestamp of
     precision p < 6 in microseconds, timetz as ISO 8601 text with its offset, e.g.
     "12:30:00+02:00", since Iceberg has no time with a zone), the definition keeps
     the SPEC type (what SQL, SHOW CREATE TABLE and the dialect show) and the Iceberg
     schema the carrier; nothing enforces the narrower type on data written by other
     engines.
  I2 Refused for an Iceberg table, naming the column: time and timestamp precisions
     above 6 (nanoseconds need Iceberg format version 3).
  I3 An Iceberg type read back becomes the SPEC type it carries: int -> int4,
     long -> int8, float -> float4, double -> float8, string -> varchar,
     binary -> binary, fixed[n] -> fixed(n), uuid -> fixed(16), time/timestamp/
     timestamptz -> the same kind without a precision (microseconds);
     timestamp_ns/timestamptz_ns -> precision 9. A table's definition keeps its own SPEC
     type for a column whose carrier is the Iceberg type read (same column id), so
     int2 stays int2 across a schema change made by another engine. Iceberg types with
     no SPEC 5 counterpart (variant, geometry, unknown, ...) are refused, naming the
     column.
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Mapping

from trinitylake_dbapi.errors import InvalidDefinitionError
from trinitylake_dbapi.format.types.spec import (
    NESTED_KINDS,
    TIME_KINDS,
    TypeSpec,
    column_error,
    describe_type,
)


#: SPEC 5 kind of a primitive -> its Iceberg carrier (I1).
#: ``{p}``, ``{s}`` and ``{n}`` are the type's precision, scale and length.
ICEBERG_CARRIERS: Mapping[str, str] = MappingProxyType(
    {
        "boolean": "boolean", "int2": "int", "int4": "int", "int8": "long",
        "decimal": "decimal({p}, {s})", "float4": "float", "float8": "double",
        "char": "string", "varchar": "string", "date": "date", "time": "time",
        "timetz": "string", "timestamp": "timestamp", "timestamptz": "timestamptz",
        "fixed": "fixed[{n}]", "binary": "binary",
    }
)  # fmt: skip
#: Iceberg microsecond precision: the finest time precision of format version 2 (I2).
ICEBERG_TIME_PRECISION = 6
#: Iceberg primitive type name -> the SPEC 5 type it reads back as (I3).
_FROM_ICEBERG: Mapping[str, TypeSpec] = MappingProxyType(
    {
        "boolean": TypeSpec("boolean"), "int": TypeSpec("int4"), "long": TypeSpec("int8"),
        "float": TypeSpec("float4"), "double": TypeSpec("float8"), "date": TypeSpec("date"),
        "time": TypeSpec("time"), "timestamp": TypeSpec("timestamp"),
        "timestamptz": TypeSpec("timestamptz"),
        "timestamp_ns": TypeSpec("timestamp", precision=9),
        "timestamptz_ns": TypeSpec("timestamptz", precision=9),
        "string": TypeSpec("varchar"), "binary": TypeSpec("binary"),
        "uuid": TypeSpec("fixed", length=16),
    }
)  # fmt: skip
_ICEBERG_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_ICEBERG_FIXED = re.compile(r"fixed\[\s*(\d+)\s*\]")


def iceberg_type(t: TypeSpec, *, column: str) -> str:
    """The Iceberg type (its text in the Iceberg spec) that carries the primitive ``t``
    (rule I1); InvalidDefinitionError naming the column where none does (I2)."""
    if t.kind in NESTED_KINDS:
        raise ValueError(f"{t.kind} is nested: map its fields one by one")
    carrier = ICEBERG_CARRIERS[t.kind]
    if t.kind in TIME_KINDS and t.precision is not None and t.precision > ICEBERG_TIME_PRECISION:
        raise column_error(
            column,
            f"type {describe_type(t)!r}: Iceberg tables (format version 2) hold at most "
            f"microseconds, precision {ICEBERG_TIME_PRECISION}",
        )
    return carrier.format(p=t.precision, s=t.scale, n=t.length)


def type_from_iceberg(text: str, *, column: str, declared: TypeSpec | None = None) -> TypeSpec:
    """The SPEC 5 type of the Iceberg primitive type ``text`` (rule I3): ``declared``
    (the definition's type of the same column) when ``text`` is its carrier, else the
    type ``text`` reads back as. InvalidDefinitionError naming the column when SPEC 5
    has no such type."""
    text = text.strip().lower()
    if declared is not None and declared.kind not in NESTED_KINDS:
        try:
            if iceberg_type(declared, column=column) == text:
                return declared
        except InvalidDefinitionError:
            pass
    known = _FROM_ICEBERG.get(text)
    if known is not None:
        return known
    match = _ICEBERG_DECIMAL.fullmatch(text)
    if match:
        return TypeSpec("decimal", precision=int(match[1]), scale=int(match[2]))
    match = _ICEBERG_FIXED.fullmatch(text)
    if match:
        return TypeSpec("fixed", length=int(match[1]))
    raise column_error(column, f"Iceberg type {text!r} has no SPEC 5 counterpart in a table definition")
