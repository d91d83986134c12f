"""Bulk INSERT: the statement templates whose ``executemany`` (and pandas'
multi-row INSERTs) run as one append, and their parameter sets as one Arrow table.

No rules of its own: the rows it makes are checked by sql.query.writes (Q3).
"""

from __future__ import annotations

import contextlib
import decimal
from typing import Any, Callable, Sequence

from sqlglot import exp

from trinitylake_dbapi.errors import ProgrammingError


def bulk_insert_template(statement: exp.Expr) -> list[exp.Placeholder] | None:
    """The placeholders of ``INSERT ... VALUES (?, ?, ...)`` (one row of parameter
    markers only), whose ``executemany`` runs as one INSERT of every parameter set; None
    for any other statement."""
    if not isinstance(statement, exp.Insert) or not isinstance(statement.expression, exp.Values):
        return None
    rows = statement.expression.expressions
    if len(rows) != 1 or not isinstance(rows[0], exp.Tuple):
        return None
    holes = rows[0].expressions
    if not holes or not all(isinstance(h, exp.Placeholder) for h in holes):
        return None
    return list(holes)


def multi_row_template(statement: exp.Expr) -> tuple[exp.Insert, int] | None:
    """For ``INSERT ... VALUES (?, ?), (?, ?), ...`` (several rows, each only ``?``
    markers, all of one width): the one-row statement and the width, so its parameters
    run as the parameter sets of a bulk insert (one append, no SQL text per value), as
    pandas' ``to_sql(method="multi")`` sends them; None for any other statement."""
    if not isinstance(statement, exp.Insert) or not isinstance(statement.expression, exp.Values):
        return None
    rows = statement.expression.expressions
    if len(rows) < 2 or not all(isinstance(r, exp.Tuple) for r in rows):
        return None
    width = len(rows[0].expressions)
    for row in rows:
        if len(row.expressions) != width or not all(
            isinstance(h, exp.Placeholder) and h.this in (None, "?") for h in row.expressions
        ):
            return None
    template = statement.copy()
    template.expression.set("expressions", [template.expression.expressions[0]])
    return template, width


def multi_row_text(sql: str) -> tuple[str, int, int] | None:
    """For the text of ``INSERT ... VALUES (?, ?), (?, ?), ...`` (rows of ``?`` markers
    only, all of one width, up to the end of the text): (the same text with its first
    row only, the width, the number of rows), found without parsing; None for any other
    text. A multi-row INSERT of pandas' ``to_sql(method="multi")`` holds thousands of
    markers, and parsing them took 5-10 times as long as inserting the rows: its one-row
    text is parsed instead (and kept parsed), and the rows run as a bulk insert. The
    caller parses the one-row text and checks it is an INSERT whose one row holds
    ``width`` markers (a VALUES inside a comment or string must not mislead it)."""
    end = len(sql.rstrip().rstrip(";").rstrip())
    if end == 0 or sql[end - 1] != ")":
        return None
    start = sql.upper().rfind("VALUES", 0, end)
    if start <= 0 or (sql[start - 1].isalnum() or sql[start - 1] in "_\"`"):
        return None
    # Without white space, the rows must read "(?,?),(?,?),...": string operations in C
    # (a regular expression took 5 ms for 1,000 rows of 5).
    compact = "".join(sql[start + 6 : end].split())
    width = compact.find(")") // 2
    if width < 1:
        return None
    first = "(" + ",".join("?" * width) + ")"
    rows = (len(compact) + 1) // (len(first) + 1)
    if rows < 2 or compact != ",".join([first] * rows):
        return None
    return sql[: start + 6] + " " + first, width, rows


def _parameter_columns(holes: list[exp.Placeholder], parameter_rows: Sequence[Any]) -> list[list[Any]]:
    """The parameter sets of a bulk INSERT as one list of values per placeholder."""
    from collections.abc import Mapping
    from collections.abc import Sequence as AnySequence

    names = [h.this if isinstance(h.this, str) and h.this != "?" else None for h in holes]
    named = any(n is not None for n in names)
    if named and not all(names):
        raise ProgrammingError("a statement uses one parameter style: ? or :name, not both")
    if not named:
        sets = parameter_rows if isinstance(parameter_rows, list) else list(parameter_rows)
        # The usual case, checked and transposed in C: tuples or lists, each as long as
        # the statement has markers. Anything else is checked set by set below, which
        # names the first set that is wrong.
        if sets and set(map(type, sets)) <= {tuple, list} and len(sets[0]) == len(holes):
            try:
                return [list(column) for column in zip(*sets, strict=True)]
            except ValueError:
                pass
        parameter_rows = sets
    rows: list[Any] = []
    for i, parameters in enumerate(parameter_rows):
        if named:
            if not isinstance(parameters, Mapping):
                raise ProgrammingError(f"parameter set {i}: :name parameters need a mapping")
            try:
                rows.append([parameters[n] for n in names])
            except KeyError as e:
                raise ProgrammingError(f"parameter set {i}: no value for :{e.args[0]}") from None
            continue
        # (tuples and lists first: an ABC check per row costs more than the rest together)
        if type(parameters) is not tuple and type(parameters) is not list and (
            isinstance(parameters, (str, bytes, Mapping)) or not isinstance(parameters, AnySequence)
        ):
            raise ProgrammingError(f"parameter set {i}: ? parameters need a sequence")
        if len(parameters) != len(holes):
            raise ProgrammingError(
                f"parameter set {i}: {len(parameters)} value(s) for {len(holes)} parameter marker(s)"
            )
        rows.append(parameters)
    return [list(column) for column in zip(*rows)] if rows else [[] for _ in holes]


def parameter_table(holes: list[exp.Placeholder], parameter_rows: Sequence[Any], target_type: Callable[[int], Any]) -> Any:
    """The parameter sets as an Arrow table, or None when Arrow cannot type a column
    (mixed Python types): then they are bound as literals instead. A column of lists or
    dicts takes the Arrow type of its target column (``target_type(i)`` for placeholder
    i): inferred, dicts would become one struct of every row's keys, so a map's rows
    would gain each other's keys. A column of Decimals takes its target's type too when
    that is a decimal (inferring precision and scale costs ten times more), and is
    inferred when its values do not fit (the cast then decides, Q3)."""
    import pyarrow as pa

    from trinitylake_dbapi.sql.binding import python_value

    arrays = []
    for i, column in enumerate(_parameter_columns(holes, parameter_rows)):
        target = target_type(i)
        # (the values are scanned only for a nested target: a scan costs more than the rest)
        if pa.types.is_nested(target) and any(
            type(v).__module__.startswith(("numpy", "pyarrow")) and not isinstance(v, (int, float, str)) for v in column
        ):  # numpy and pyarrow arrays (a polars List column through pandas) as lists
            column = [python_value(v) for v in column]
        if pa.types.is_nested(target) and any(isinstance(v, (list, tuple, dict)) for v in column):
            try:
                arrays.append(pa.array(column, type=target))
                continue
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                return None
        if pa.types.is_decimal(target) and isinstance(next((v for v in column if v is not None), None), decimal.Decimal):
            with contextlib.suppress(pa.ArrowException, TypeError, ValueError, OverflowError):
                arrays.append(pa.array(column, type=target))
                continue
        try:
            array = pa.array(column)
            if pa.types.is_nested(array.type) and not pa.types.is_nested(target):
                return None  # lists or dicts for a column of neither: as literals, as before
            arrays.append(array)
            continue
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            pass
        # Values of several Python types: as text, which the column's type then reads
        # (DuckDB's cast rules), the way a text protocol would send them.
        if any(isinstance(v, (bytes, bytearray, memoryview, list, dict, tuple)) for v in column):
            return None
        arrays.append(pa.array([None if v is None else _as_text(v) for v in column], pa.string()))
    return pa.table(arrays, names=[f"p{i}" for i in range(len(arrays))])


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    isoformat = getattr(value, "isoformat", None)
    return isoformat(sep=" ") if callable(isoformat) and hasattr(value, "hour") and hasattr(value, "day") else (
        isoformat() if callable(isoformat) else str(value)
    )


def bound_rows(insert: exp.Insert, parameter_rows: Sequence[Any]) -> exp.Insert:
    """One INSERT whose VALUES hold every parameter set, bound as literals."""
    from trinitylake_dbapi.sql.binding import bind

    rows: list[exp.Expr] = []
    merged: exp.Insert | None = None
    for parameters in parameter_rows:
        bound = bind(insert, parameters)
        assert isinstance(bound, exp.Insert)
        rows.extend(bound.expression.expressions)
        merged = merged or bound
    assert merged is not None
    merged.expression.set("expressions", rows)
    return merged
