"""A one-row INSERT of plain values checked and converted without DuckDB.

Rules:

  Q12. An ``INSERT ... VALUES (...)`` of one row, each value a literal or a bound
       parameter of a type that matches its column exactly (the table below), is checked
       and converted to the table's stored Arrow types in Python (:func:`plain_row`),
       with the same result as Q3's DuckDB path (sql.query.writes ``checked_values``):
       the same Arrow table after the cast to the Iceberg schema, value for value.
       Anything else, and every value that would fail a check of Q3 or Q9 (NULL into a
       NOT NULL column, a text or bytes too long, a number out of its column's range, a
       date outside the years 1-9999 in UTC), takes the DuckDB path, which makes the
       error: the fast path never raises one itself, so the errors are Q3's by
       construction. Measured (2026-11-27, /dev/shm): the DuckDB path's three statements
       cost about 3.5 ms of process CPU of a one-row INSERT (tests/sql/test_onerow.py
       proves the equivalence with the DuckDB path as the oracle).

What is taken (a value node as sql.binding makes it, or the same literal in the SQL):

=========================  =============================================================
column kind                value
=========================  =============================================================
any (nullable)             NULL
boolean                    TRUE / FALSE
int2, int4, int8           an integer literal within the column's range
float8                     a number literal with an exponent (a bound float), NaN, +-inf,
                           or an integer literal of at most 2**53 in magnitude
float4                     the same, when the value rounds to a finite float4 (or is
                           NaN or +-inf)
decimal(p, s)              an integer or decimal literal with at most ``s`` decimals and
                           fewer than ``p - s`` digits before the point
char(n), varchar[(n)]      a string literal of at most ``n`` characters, without NUL
binary[(n)], fixed(n)      ``UNHEX('...')`` (bound bytes) of at most / exactly ``n`` bytes
date                       ``CAST('...' AS DATE)`` (a bound date)
time                       ``CAST('...' AS TIME)`` (a bound time without a zone)
timestamp                  ``CAST('...' AS TIMESTAMP)`` (a bound naive datetime)
timestamptz                ``CAST('...' AS TIMESTAMPTZ)`` (a bound aware datetime whose
                           offset is whole minutes and whose UTC instant is in 1-9999)
=========================  =============================================================
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import math
import re
from typing import Any, Sequence

from sqlglot import exp

from trinitylake_dbapi.format.types import ColumnSpec

__all__ = ["plain_row"]


class _Fallback(Exception):
    """The value is not one this module converts: the DuckDB path takes the row."""


_INT_RANGES = {"int2": 2**15, "int4": 2**31, "int8": 2**63}
_FLOAT_KINDS = frozenset({"float4", "float8"})
_TEXT_KINDS = frozenset({"char", "varchar"})
_BYTES_KINDS = frozenset({"binary", "fixed"})
_CASTS = {"DATE": "date", "TIME": "time", "TIMESTAMP": "timestamp", "TIMESTAMPTZ": "timestamptz"}
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_EXACT_DOUBLE = 2**53
#: Room for every digit of a DECIMAL(38, s) (the default context's 28 digits made
#: ``quantize`` raise InvalidOperation on a value of 29 digits or more; negation and
#: ``abs`` are taken exactly, without a context, as they rounded such a value).
_DECIMALS = decimal.Context(prec=80)
#: The number literals DuckDB reads as an integer, a DECIMAL and a DOUBLE (ASCII only:
#: Python's int() and Decimal() also take other digits and ``_``).
_INTEGER = re.compile(r"[0-9]+", re.ASCII)
_DECIMAL = re.compile(r"[0-9]+\.[0-9]*|\.[0-9]+", re.ASCII)
_DOUBLE = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][+-]?[0-9]+", re.ASCII)


def plain_row(source: exp.Expr, columns: Sequence[ColumnSpec], provided: Sequence[str] | None) -> Any:
    """Q12: the one row of ``source`` (an INSERT's VALUES list) as an Arrow table of the
    Iceberg schema of ``columns`` (every column, in order; those not in ``provided`` are
    NULL), or None when the DuckDB path must take it (see the module docstring)."""
    if not isinstance(source, exp.Values) or len(source.expressions) != 1 or source.args.get("alias"):
        return None
    row = source.expressions[0]
    if not isinstance(row, exp.Tuple):
        return None
    names = [c.name for c in columns] if provided is None else list(provided)
    if len(row.expressions) != len(names):
        return None  # the DuckDB path reports the count
    by_name = {n.lower(): node for n, node in zip(names, row.expressions)}
    values = []
    try:
        for c in columns:
            node = by_name.get(c.name.lower())
            values.append(_value(node, c))
    except _Fallback:
        return None
    return _to_arrow(tuple(columns), values)


def _to_arrow(columns: tuple[ColumnSpec, ...], values: list[Any]) -> Any:
    import pyarrow as pa

    schema = _schema(columns)
    arrays = []
    for c, field, value in zip(columns, schema, values):
        if c.type.kind == "float4" and value is not None:
            array = pa.array([value], pa.float64()).cast(pa.float32())
            if math.isfinite(value) and not math.isfinite(array[0].as_py()):
                return None  # rounds past float4's range: DuckDB's error
            arrays.append(array.cast(field.type))
        else:
            arrays.append(pa.array([value], field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


@functools.lru_cache(maxsize=64)
def _schema(columns: tuple[ColumnSpec, ...]) -> Any:
    """The Arrow schema a table of ``columns`` is stored with (sql.query.types'
    ``stored_arrow_type`` of every column; the same schema writes.as_iceberg casts to)."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    from trinitylake_dbapi.iceberg.schema import schema_from_columns

    return schema_to_pyarrow(schema_from_columns(list(columns)), include_field_ids=False)


def _value(node: exp.Expr | None, column: ColumnSpec) -> Any:
    """The Python value ``node`` stores in ``column``; _Fallback for anything else."""
    kind = column.type.kind
    if node is None or isinstance(node, exp.Null):
        if not column.nullable:
            raise _Fallback  # Q3's IntegrityError
        return None
    if isinstance(node, exp.Boolean):
        if kind != "boolean":
            raise _Fallback
        return bool(node.this)
    if isinstance(node, (exp.Literal, exp.Neg)):
        return _literal(node, column)
    if isinstance(node, exp.Cast):
        return _cast(node, column)
    if isinstance(node, exp.Unhex) and kind in _BYTES_KINDS:
        text = node.this
        if not (isinstance(text, exp.Literal) and text.is_string):
            raise _Fallback
        try:
            data = bytes.fromhex(text.this)
        except ValueError:
            raise _Fallback from None
        length = column.type.length
        if length is not None and (len(data) > length or (kind == "fixed" and len(data) != length)):
            raise _Fallback
        return data
    raise _Fallback


def _literal(node: exp.Expr, column: ColumnSpec) -> Any:
    kind = column.type.kind
    negative = False
    while isinstance(node, exp.Neg):
        negative = not negative
        node = node.this
    if not isinstance(node, exp.Literal):
        raise _Fallback
    text = node.this
    if node.is_string:
        if negative or kind not in _TEXT_KINDS or "\x00" in text:
            raise _Fallback
        length = column.type.length
        if length is not None and len(text) > length:
            raise _Fallback
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise _Fallback from None
        return text
    if _INTEGER.fullmatch(text):
        number = -int(text) if negative else int(text)
        if kind in _INT_RANGES:
            bound = _INT_RANGES[kind]
            if not -bound <= number < bound:
                raise _Fallback
            return number
        if kind in _FLOAT_KINDS and abs(number) <= _EXACT_DOUBLE:
            return float(number)
        if kind == "decimal":
            return _decimal(decimal.Decimal(number), column)
        raise _Fallback
    if _DOUBLE.fullmatch(text):
        if kind not in _FLOAT_KINDS:
            raise _Fallback
        number = float(text)
        if not math.isfinite(number):
            raise _Fallback  # an overflowing literal: DuckDB's to judge
        return -number if negative else number
    if kind == "decimal" and _DECIMAL.fullmatch(text):
        number = decimal.Decimal(text)
        return _decimal(number.copy_negate() if negative else number, column)  # exact: no context
    raise _Fallback  # a DECIMAL literal into another kind: DuckDB's rounding


def _decimal(number: decimal.Decimal, column: ColumnSpec) -> decimal.Decimal:
    precision, scale = column.type.precision or 10, column.type.scale or 0
    if not number.is_finite():
        raise _Fallback
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)
    if -exponent > scale:
        raise _Fallback  # DuckDB rounds
    if number.copy_abs() >= decimal.Decimal(10) ** (precision - scale):  # exact: no context
        raise _Fallback  # out of range: DuckDB's error
    return number.quantize(decimal.Decimal(1).scaleb(-scale), context=_DECIMALS)


def _cast(node: exp.Cast, column: ColumnSpec) -> Any:
    kind = column.type.kind
    text = node.this
    if not (isinstance(text, exp.Literal) and text.is_string):
        raise _Fallback
    to = node.to.this.name if isinstance(node.to, exp.DataType) else None
    value = text.this
    if to == "DOUBLE" and kind in _FLOAT_KINDS and value in _NON_FINITE:
        return _NON_FINITE[value]
    if to not in _CASTS or _CASTS[to] != kind:
        raise _Fallback
    # Only the text sql.binding writes (isoformat): DuckDB and Python read other
    # spellings differently.
    try:
        if kind == "date":
            day = dt.date.fromisoformat(value)
            if day.isoformat() != value:
                raise _Fallback
            return day
        if kind == "time":
            clock = dt.time.fromisoformat(value)
            if clock.tzinfo is not None or clock.isoformat() != value:
                raise _Fallback
            return clock
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise _Fallback from None
    if parsed.isoformat(sep=" ") != value:
        raise _Fallback
    if kind == "timestamp":
        if parsed.tzinfo is not None:
            raise _Fallback
        return parsed
    offset = parsed.utcoffset()
    if offset is None or offset.microseconds or offset.seconds % 60:
        raise _Fallback
    try:
        return parsed.astimezone(dt.timezone.utc)
    except (OverflowError, ValueError):
        raise _Fallback from None
