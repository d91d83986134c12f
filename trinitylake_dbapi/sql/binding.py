"""Parameters bound into the syntax tree as literals (never by formatting SQL text).

Placeholders are ``?`` (qmark, the module's ``paramstyle``: a sequence of values, in the
order the placeholders are written) and ``:name`` (named: a mapping). One statement uses
one style. Each ``exp.Placeholder`` is replaced by a node holding the value:

=====================  ==============================================================
Python value           node
=====================  ==============================================================
None                   ``NULL``
bool                   ``TRUE`` / ``FALSE``
int, Decimal           number literal (a non-finite Decimal is refused)
float                  number literal with an exponent (``1.5e0``: a DOUBLE, where ``1.5``
                       is a DECIMAL); NaN and +-inf as ``CAST('NaN' AS DOUBLE)`` etc.
str                    string literal (quotes, ``;``, ``--``, ``?`` stay characters)
bytes-like             ``UNHEX('...')``
datetime               ``CAST('iso' AS TIMESTAMP)``, or ``TIMESTAMPTZ`` when it has a zone
date / time            ``CAST('iso' AS DATE)`` / ``CAST('iso' AS TIME)``
uuid.UUID              string literal
list, tuple            ``[v, ...]`` (a list; each item bound by this table)
numpy, pyarrow         as their Python value (:func:`python_value`): arrays as lists
dict                   ``{'k': v, ...}`` (a struct, which a map column also takes) when
                       every key is a string; else ``MAP([k, ...], [v, ...])``
=====================  ==============================================================

:func:`constant` reads such nodes (and the same literals written in SQL) back into Python
values for the statements that take values (comments, properties, versions, ...).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from sqlglot import exp

from trinitylake_dbapi.sql.compat import DType
from trinitylake_dbapi.errors import DataError, ProgrammingError

__all__ = ["bind", "placeholders", "to_node", "python_value", "constant", "foreign_marker", "MARKERS"]

#: The parameter markers this driver accepts, as its messages name them.
MARKERS = "? with a sequence of values, or :name with a mapping"


def placeholders(statement: exp.Expr) -> list[exp.Placeholder]:
    """The statement's placeholders in the order they are written."""
    found = list(statement.find_all(exp.Placeholder))
    return sorted(found, key=lambda p: p.meta.get("start", 0))


def bind(statement: exp.Expr, parameters: Any = None, *, markers: bool = True) -> exp.Expr:
    """A copy of ``statement`` with every placeholder replaced by its parameter's value.

    ``markers=False`` says the statement has no parameter markers for certain (see
    :func:`~trinitylake_dbapi.sql.dialect.parse_marked`): then nothing is walked or
    copied and ``statement`` itself is returned, so it must never be mutated afterwards.

    Raises ProgrammingError when the parameters do not match the placeholders: wrong
    count, missing names, a sequence for ``:name`` or a mapping for ``?``, mixed styles,
    or a value of a type that cannot be bound.
    """
    if not markers:
        _check_no_parameters(parameters)
        return statement
    # One walk of the copy finds both (it was a walk for each and one more to replace).
    copied = statement.copy()
    holes: list[exp.Placeholder] = []
    for node in copied.walk():
        if isinstance(node, exp.Parameter):
            raise ProgrammingError(f"unsupported parameter marker; this driver takes {MARKERS}")
        if isinstance(node, exp.Placeholder):
            holes.append(node)
    holes.sort(key=lambda p: p.meta.get("start", 0))  # the order they are written (placeholders)
    if not holes:
        _check_no_parameters(parameters)
        return copied
    named = [p for p in holes if p.this]
    if named and len(named) != len(holes):
        raise ProgrammingError("a statement uses either ? or :name parameters, not both")
    if parameters is None:
        raise ProgrammingError(
            f"the statement has {len(holes)} parameter marker(s) but no parameters were given"
        )
    values: dict[int, exp.Expr] = {}
    if named:
        if not isinstance(parameters, Mapping):
            raise ProgrammingError(
                "the statement uses :name parameters; pass a mapping of names to values"
            )
        for p in holes:
            if p.name not in parameters:
                raise ProgrammingError(f"no value for parameter :{p.name}")
            values[id(p)] = _bound(p, parameters[p.name], f":{p.name}")
    else:
        if isinstance(parameters, (str, bytes, bytearray, memoryview, Mapping)) or not isinstance(
            parameters, Sequence
        ):
            raise ProgrammingError(
                "the statement uses ? parameters; pass a sequence (list or tuple) of values"
            )
        if len(parameters) != len(holes):
            raise ProgrammingError(
                f"the statement has {len(holes)} parameter marker(s) but "
                f"{len(parameters)} parameter(s) were given"
            )
        for index, (p, value) in enumerate(zip(holes, parameters), start=1):
            values[id(p)] = _bound(p, value, f"#{index}")

    if isinstance(copied, exp.Placeholder):
        return values[id(copied)]
    for p in holes:  # in place: a fresh node each, in the copy (no walk of the whole tree)
        p.replace(values[id(p)])
    return copied


# What a statement's text is read as when looking for another driver's markers: strings,
# quoted names and comments (skipped whole), and the markers themselves.
_SCAN = re.compile(
    r"'(?:[^']|'')*'?|\"(?:[^\"]|\"\")*\"?|`(?:[^`]|``)*`?|--[^\n]*|/\*.*?(?:\*/|\Z)"
    r"|(?P<marker>%\((?P<name>\w+)\)s|%s)",
    re.S,
)


def foreign_marker(sql: str) -> ProgrammingError | None:
    """The error for a statement written with another driver's parameter markers
    (``%s`` or ``%(name)s``, the ``format`` and ``pyformat`` styles of psycopg and
    others) outside strings, quoted names and comments: it names the marker, where it
    stands and the markers this driver takes (``paramstyle`` is ``qmark``; ``:name``
    works too). None when the text has no such marker. Called when a statement fails to
    parse, so that the user reads this instead of a syntax error about ``%``."""
    for match in _SCAN.finditer(sql):
        marker = match.group("marker")
        if marker is None:
            continue
        line = sql.count("\n", 0, match.start()) + 1
        column = match.start() - (sql.rfind("\n", 0, match.start()) + 1) + 1
        name = match.group("name")
        instead = f":{name} with a mapping" if name else "? with a sequence of values"
        return ProgrammingError(
            f"parameter marker {marker} at line {line}, column {column}: this driver's "
            f"paramstyle is 'qmark' and it takes {MARKERS}; write {instead} instead"
        )
    return None


def _bound(hole: exp.Placeholder, value: Any, label: str) -> exp.Expr:
    """The node of ``value`` for one placeholder; the label of an error names the
    parameter and where its marker stands in the SQL."""
    where = f"{label} (line {hole.meta.get('line', 1)}, column {hole.meta.get('col', 1)})"
    if isinstance(hole.parent, (exp.Limit, exp.Offset)) and hole.parent.args.get("expression") is hole:
        clause = "LIMIT" if isinstance(hole.parent, exp.Limit) else "OFFSET"
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ProgrammingError(
                f"parameter {where}: {clause} takes a non-negative integer, got {value!r}"
            )
    return to_node(value, where)


def _check_no_parameters(parameters: Any) -> None:
    """For a statement without markers: None or an empty collection is fine."""
    if parameters is not None and (not hasattr(parameters, "__len__") or len(parameters) > 0):
        raise ProgrammingError("the statement has no parameter markers but parameters were given")


def _cast(text: str, kind: DType) -> exp.Expr:
    return exp.Cast(this=exp.Literal.string(text), to=exp.DataType(this=kind))


def to_node(value: Any, label: str = "") -> exp.Expr:
    """The literal node of one parameter value (table in the module docstring)."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        return _number(str(value))
    if isinstance(value, float):
        if math.isnan(value):
            return _cast("NaN", DType.DOUBLE)
        if math.isinf(value):
            return _cast("Infinity" if value > 0 else "-Infinity", DType.DOUBLE)
        return _number(_double_text(value))
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():  # a value no DECIMAL holds: the data's fault, not the SQL's
            raise DataError(f"parameter {label}: the decimal {value} is not a number any DECIMAL column holds")
        return _number(str(value))
    if isinstance(value, str):
        _check_text(value, f"parameter {label}")
        return exp.Literal.string(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return exp.Unhex(this=exp.Literal.string(bytes(value).hex()))
    if isinstance(value, dt.datetime):
        kind = DType.TIMESTAMPTZ if value.tzinfo is not None else DType.TIMESTAMP
        return _cast(value.isoformat(sep=" "), kind)
    if isinstance(value, dt.date):
        return _cast(value.isoformat(), DType.DATE)
    if isinstance(value, dt.time):
        return _cast(value.isoformat(), DType.TIME)
    if isinstance(value, uuid.UUID):
        return exp.Literal.string(str(value))
    if isinstance(value, (list, tuple)):
        return exp.Array(expressions=[to_node(v, label) for v in value])
    if isinstance(value, dict):
        if value and all(isinstance(k, str) for k in value):
            return exp.Struct(expressions=[
                exp.PropertyEQ(this=exp.to_identifier(k), expression=to_node(v, label))
                for k, v in value.items()
            ])  # fmt: skip
        return exp.Map(
            keys=exp.Array(expressions=[to_node(k, label) for k in value]),
            values=exp.Array(expressions=[to_node(v, label) for v in value.values()]),
        )
    plain = python_value(value)
    if plain is not value:
        return to_node(plain, label)
    raise ProgrammingError(
        f"parameter {label}: cannot bind a value of type {type(value).__name__}"
    )


def python_value(value: Any) -> Any:
    """The plain Python value of a numpy or pyarrow value (``value`` itself for any
    other): an array becomes a list (what a LIST column takes; pandas holds a polars
    List column as numpy arrays), a scalar its Python value (a datetime64 in
    microseconds, so that it becomes a datetime, never a count of nanoseconds)."""
    module = type(value).__module__
    if module.startswith("numpy"):
        if getattr(getattr(value, "dtype", None), "kind", "") == "M":
            value = value.astype("datetime64[us]")
        tolist = getattr(value, "tolist", None)
        return tolist() if callable(tolist) else value
    if module.startswith("pyarrow"):
        for method in ("to_pylist", "as_py"):  # arrays and chunked arrays; scalars
            convert = getattr(value, method, None)
            if callable(convert):
                return convert()
    return value


def _check_text(value: str, subject: str) -> None:
    """DataError for text that has no UTF-8 form (a lone surrogate): every string the
    lakehouse stores or shows is UTF-8 (SPEC 3)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise DataError(
            f"{subject}: the string is not valid Unicode text: lone surrogate "
            f"U+{ord(value[e.start]):04X} at index {e.start}"
        ) from None


def _double_text(value: float) -> str:
    """A finite float as a number literal with an exponent (``1.5e0``), which DuckDB
    reads as a DOUBLE: without one, ``1.5`` is a DECIMAL literal there, and a float
    parameter would come back as a Decimal."""
    text = repr(value)
    return text if "e" in text else f"{text}e0"


def _number(text: str) -> exp.Expr:
    if text.startswith("-"):
        return exp.Neg(this=exp.Literal.number(text[1:]))
    return exp.Literal.number(text)


class NotConstant(ProgrammingError):
    """Raised by :func:`constant` for an expression that is not a plain value."""


def constant(node: exp.Expr | None, what: str) -> Any:
    """The Python value of a literal node (as written in SQL or bound by :func:`bind`).

    Strings -> str; integers -> int; other numbers -> Decimal; NULL -> None; TRUE/FALSE
    -> bool; CAST('..' AS TIMESTAMP|TIMESTAMPTZ|DATE|TIME) and TIMESTAMP '..' ->
    datetime/date/time; UNHEX('..') -> bytes. Anything else raises ProgrammingError
    naming ``what``.
    """
    if node is None:
        return None
    if isinstance(node, exp.Literal):
        if node.is_string:
            _check_text(node.this, what)
            return node.this
        text = node.this
        try:
            return int(text)
        except ValueError:
            try:
                return decimal.Decimal(text)
            except decimal.InvalidOperation:
                raise NotConstant(f"{what}: {text!r} is not a number") from None
    if isinstance(node, exp.Neg):
        inner = constant(node.this, what)
        if isinstance(inner, (int, decimal.Decimal, float)) and not isinstance(inner, bool):
            return -inner
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Paren):
        return constant(node.this, what)
    if isinstance(node, exp.Unhex) and isinstance(node.this, exp.Literal) and node.this.is_string:
        try:
            return bytes.fromhex(node.this.this)
        except ValueError:
            raise NotConstant(f"{what}: {node.this.this!r} is not hexadecimal") from None
    if isinstance(node, (exp.Cast, exp.TryCast)) and isinstance(node.this, exp.Literal):
        text = node.this.this
        kind = node.to.this if isinstance(node.to, exp.DataType) else None
        try:
            if kind in (DType.TIMESTAMP, DType.TIMESTAMPTZ, DType.DATETIME):
                return dt.datetime.fromisoformat(text)
            if kind == DType.DATE:
                return dt.date.fromisoformat(text)
            if kind == DType.TIME:
                return dt.time.fromisoformat(text)
            if kind in (DType.DOUBLE, DType.FLOAT):
                return float(text)
        except ValueError:
            raise NotConstant(f"{what}: {text!r} is not a valid {kind.value.lower()}") from None
    if isinstance(node, exp.Placeholder):
        raise NotConstant(f"{what}: parameter {node.name} has no value")
    raise NotConstant(f"{what} must be a constant value, not {node.sql()!r}")
