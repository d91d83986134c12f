"""SELECT over tables' rows, as a streaming result.

Rules:

  Q5. Results stream: DuckDB produces record batches as the cursor fetches, and each
      batch becomes Python rows only when reached, so a large result is read in
      bounded memory. Values are what PEP 249 users expect: Decimal, datetime (with
      tzinfo UTC for TIMESTAMPTZ), date, time, bytes, lists, dicts (for structs and
      maps), timedelta (for intervals, a month as 30 days). An integer sum is a BIGINT (int), as in PostgreSQL, though DuckDB makes it
      a HUGEINT: every HUGEINT result column is read as BIGINT, and a value beyond
      BIGINT is DataError naming the column.

(The last sentence of Q9, a result value outside Python's range, is enforced here too.)
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Sequence

from sqlglot import exp

from trinitylake_dbapi.errors import DataError
from trinitylake_dbapi.sql.compat import duckdb_dialect
from trinitylake_dbapi.sql.query.engine import BATCH_ROWS, interruptible, stream
from trinitylake_dbapi.sql.query.translate import translating
from trinitylake_dbapi.sql.query.types import query_columns
from trinitylake_dbapi.sql.query.views import DataStatement
from trinitylake_dbapi.sql.session import Result, Session


class _Rows:
    """A result's record batches, turned into Python rows as they are reached (Q5)."""

    def __init__(self, statement: DataStatement, reader: Any, source: exp.Expr, wide: Sequence[bool] = ()) -> None:
        self._statement = statement
        self._reader = reader
        self._source = source
        self._rows: list[tuple] = []
        self._position = 0
        self._done = False
        wide = tuple(wide) or (False,) * len(reader.schema)
        self._convert = [
            _bigint_converter(f.name) if w else _converter(f.type) for f, w in zip(reader.schema, wide)
        ]

    def _next_batch(self) -> bool:
        control = self._statement.session.control
        try:
            with translating(self._source, self._statement), control.interrupting(
                self._statement.cursor.interrupt
            ):
                batch = self._reader.read_next_batch()
        except StopIteration:
            self.close()
            return False
        try:
            columns = [convert(column) for convert, column in zip(self._convert, batch.columns)]
        except (OverflowError, ValueError) as e:  # Q9: a value Python's types cannot hold
            name = next(
                (f.name for f, convert, column in zip(self._reader.schema, self._convert, batch.columns)
                 if not _converts(convert, column)),
                "?",
            )  # fmt: skip
            raise DataError(
                f"column {name!r} of the result holds a value Python cannot represent ({e}); "
                "cast it to VARCHAR in the query to read it as text"
            ) from None
        self._rows = list(zip(*columns)) if columns else [() for _ in range(batch.num_rows)]
        self._position = 0
        return True

    def fetch(self, count: int | None) -> list[tuple]:
        out: list[tuple] = []
        while not self._done and (count is None or len(out) < count):
            if self._position >= len(self._rows) and not self._next_batch():
                break
            take = len(self._rows) - self._position if count is None else min(count - len(out), len(self._rows) - self._position)
            out.extend(self._rows[self._position : self._position + take])
            self._position += take
        return out

    def close(self) -> None:
        if not self._done:
            self._done = True
            self._rows = []
            with contextlib.suppress(Exception):
                self._reader.close()
            self._statement.close_cursor()


def _bigint_converter(name: str) -> Callable[[Any], list]:
    """Q5: DuckDB's HUGEINT (what its ``sum`` of integers gives) as BIGINT, as in
    PostgreSQL's ``sum(int4)``: Python ints (pandas: int64), not Decimals. A value
    beyond BIGINT is DataError naming the column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def convert(column: Any) -> list:
        try:
            return pc.cast(column, pa.int64()).to_pylist()
        except pa.ArrowInvalid:
            raise DataError(
                f"column {name!r} of the result: a value does not fit BIGINT (integer sums "
                "are BIGINT); cast the summed values to DECIMAL(38, 0) for larger sums"
            ) from None

    return convert


def _timedelta(value: Any) -> Any:
    """An Arrow month-day-nanosecond interval as a ``datetime.timedelta`` (a month is
    30 days, as DuckDB's own Python client counts it)."""
    import datetime as dt

    if value is None:
        return None
    months, days, nanoseconds = value
    return dt.timedelta(days=months * 30 + days, microseconds=nanoseconds // 1000)


def _converts(convert: Callable[[Any], list], column: Any) -> bool:
    """True if ``convert`` turns ``column`` into Python values without an error."""
    try:
        convert(column)
    except (OverflowError, ValueError):
        return False
    return True


def _converter(t: Any) -> Callable[[Any], list]:
    """Arrow column -> Python values (maps become dicts, at any depth)."""
    import pyarrow as pa

    def has_map(t: Any) -> bool:
        if pa.types.is_map(t):
            return True
        if pa.types.is_struct(t):
            return any(has_map(t.field(i).type) for i in range(t.num_fields))
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            return has_map(t.value_type)
        return False

    if pa.types.is_interval(t):  # (age(), ts - ts): timedelta, a month as 30 days, as DuckDB's client
        return lambda column: [_timedelta(v) for v in column.to_pylist()]
    if not has_map(t):
        return lambda column: column.to_pylist()

    def fix(value: Any, t: Any) -> Any:
        if value is None:
            return None
        if pa.types.is_map(t):
            return {fix(k, t.key_type): fix(v, t.item_type) for k, v in value}
        if pa.types.is_struct(t):
            return {t.field(i).name: fix(value[t.field(i).name], t.field(i).type) for i in range(t.num_fields)}
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            return [fix(v, t.value_type) for v in value]
        return value

    return lambda column: [fix(v, t) for v in column.to_pylist()]


def run_select(query: exp.Query, session: Session) -> Result:
    """A SELECT that reads tables' rows, as a streaming result (Q1, Q2, Q5)."""
    statement = DataStatement(session)
    try:
        with translating(query, statement):
            rewritten = query.copy()
            statement.replace_tables(rewritten)
            sql = rewritten.sql(dialect=duckdb_dialect(), copy=False)  # our copy: no second one
            with interruptible(session.control, statement.cursor):
                reader, types = stream(statement.cursor, sql, BATCH_ROWS)  # runs what must run first
                wide = tuple(t == "hugeint" for t in types)
    except BaseException:
        statement.close_cursor()
        raise
    finally:
        statement.close()
    rows = _Rows(statement, reader, query, wide)
    columns = tuple((c[0], "int8") if w else c for c, w in zip(query_columns(reader.schema), wide))
    return Result(columns, [], -1, rows)
