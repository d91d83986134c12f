"""PEP 249 Cursor: runs one statement at a time.

``execute(sql, parameters)`` parses exactly one statement with the TrinityLake dialect,
binds the parameters into its syntax tree (``?`` with a sequence, ``:name`` with a
mapping) and runs it on the connection; a plain DESCRIBE, SHOW TABLES or DROP TABLE
without parameters is recognised and run without the parser (sql.plain). Statements
with a result set (SHOW, DESCRIBE, SELECT, ...) set ``description`` (7-tuples whose type
code is a SPEC 5 type kind that compares equal to STRING, NUMBER, DATETIME or BINARY)
and ``rowcount`` (the number of rows); other statements set ``description`` to None and
``rowcount`` to -1, except INSERT, UPDATE and DELETE, whose ``rowcount`` is the number
of rows they wrote.

A catalog statement's result set is held in memory. A query over tables' rows streams
(sql.query Q5): its rows are made from DuckDB's record batches as they are fetched, so
its ``rowcount`` is -1 (PEP 249: not known) until a fetch reaches the end of the result
(``fetchall()``, or a ``fetchone()``/``fetchmany(n)`` that returns fewer rows than asked,
or iteration to the end); from then on it is the number of rows of the result.
``executemany``'s ``rowcount`` is the total of its statements' counts (rows inserted,
updated or deleted; 0 for no parameter sets), or -1 when one of them has none (a query).
``executemany`` of ``INSERT ... VALUES`` runs as one INSERT of
every parameter set's rows: one append to the table; ``execute`` of a multi-row
``INSERT ... VALUES (?, ?), (?, ?), ...`` with its flat parameter sequence runs the same
way (as pandas' ``to_sql(method="multi")`` sends its chunks).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from trinitylake_dbapi import errors
from trinitylake_dbapi.translation import raise_translated, translate_errors
from trinitylake_dbapi.driver_session import DriverSession
from trinitylake_dbapi.sql.plain import recognise
from trinitylake_dbapi.sql.session import Result

if TYPE_CHECKING:  # sqlglot is imported by the parser, not by the plain statements (sql.plain)
    from sqlglot import exp

__all__ = ["Cursor"]


def _without_parameters(parameters: Any) -> bool:
    """True for None or an empty collection: what a statement without markers accepts."""
    return parameters is None or (hasattr(parameters, "__len__") and len(parameters) == 0)


def _parse_checked(session: DriverSession, operation: Any) -> tuple[exp.Expr, bool]:
    if not isinstance(operation, str):
        raise errors.ProgrammingError(
            f"the operation must be an SQL string, not {type(operation).__name__}"
        )
    try:
        return session.parse(operation)
    except errors.SQLSyntaxError:
        # Written for a driver of another paramstyle (``%s``, ``%(name)s``)? Say so.
        from trinitylake_dbapi.sql.binding import foreign_marker

        foreign = foreign_marker(operation)
        if foreign is not None:
            raise foreign from None
        raise
    except Exception as e:  # noqa: BLE001 - translated
        raise_translated(e)


class Cursor:
    """A PEP 249 cursor (see the module docstring)."""

    #: Rows fetched by fetchmany() without a size.
    arraysize: int = 1

    def __init__(self, connection: Any, session: DriverSession) -> None:
        #: The connection that made this cursor (held, never called: it runs on ``session``).
        self._connection: Any = connection
        self._session = session
        self._closed = False
        self._result: Result | None = None
        self._position = 0
        self.description: tuple[tuple[Any, ...], ...] | None = None
        self.rowcount = -1
        self.arraysize = 1

    # -- attributes -------------------------------------------------------------------------

    @property
    def connection(self) -> Any:
        """The connection that made this cursor (PEP 249 optional extension)."""
        self._check_open()
        assert self._connection is not None
        return self._connection

    @property
    def lastrowid(self) -> None:
        """Always None: TrinityLake has no row ids."""
        return None

    @property
    def rownumber(self) -> int | None:
        """Index of the next row in the result set, None without one."""
        return None if self._result is None or self._result.columns is None else self._position

    @property
    def closed(self) -> bool:
        return self._closed

    # -- running statements -------------------------------------------------------------------

    def execute(self, operation: str, parameters: Sequence[Any] | Mapping[str, Any] | None = None) -> "Cursor":
        """Run one statement; returns the cursor (so ``cur.execute(...).fetchall()`` works)."""
        self._check_open()
        self._reset()
        assert self._connection is not None
        if isinstance(operation, str) and _without_parameters(parameters):
            plain = recognise(operation)
            if plain is not None:
                self._set(self._session.run_statement(plain))
                return self
        if (
            isinstance(parameters, Sequence)
            and not isinstance(parameters, (str, bytes))
            and len(parameters) > 1
            and isinstance(operation, str)
            and operation.rstrip().endswith((")", ";"))
            and self._run_multi_row(operation, parameters)
        ):
            return self
        statement, markers = _parse_checked(self._session, operation)
        if markers and isinstance(parameters, Sequence) and not isinstance(parameters, (str, bytes)):
            from trinitylake_dbapi.sql.query import multi_row_template  # the data path: not for DDL

            multi = multi_row_template(statement)
            if multi is not None and len(parameters) == multi[1] * len(statement.expression.expressions):
                template, width = multi
                rows = [parameters[i : i + width] for i in range(0, len(parameters), width)]
                self._set(self._session.run_statement(template, rows))
                return self
        if markers or parameters is not None:
            from trinitylake_dbapi.sql.binding import bind

            with translate_errors():
                statement = bind(statement, parameters, markers=markers)
        self._set(self._session.run_statement(statement))
        return self

    def _run_multi_row(self, operation: str, parameters: Sequence[Any]) -> bool:
        """Run a multi-row ``INSERT ... VALUES (?, ?), (?, ?), ...`` as the bulk insert
        of its rows, parsing only its one-row text (sql.query.multi_row_text); False
        (nothing run) when the text is not one or the parameters do not fill it."""
        from trinitylake_dbapi.sql.query import bulk_insert_template, multi_row_text  # the data path

        split = multi_row_text(operation)
        if split is None:
            return False
        one_row, width, count = split
        if len(parameters) != width * count:
            return False
        try:
            statement, _ = self._session.parse(one_row)
        except Exception:  # noqa: BLE001 - the whole text is parsed again, and its error raised
            return False
        holes = bulk_insert_template(statement)
        if holes is None or len(holes) != width:
            return False
        rows = [parameters[i : i + width] for i in range(0, len(parameters), width)]
        assert self._connection is not None
        self._set(self._session.run_statement(statement, rows))
        return True

    def executemany(
        self, operation: str, seq_of_parameters: Any
    ) -> "Cursor":
        """Run one statement once per parameter set. Result sets are discarded;
        ``rowcount`` is the total of the statements' counts (rows inserted, updated or
        deleted), -1 when a statement has no count (a query). An ``INSERT ... VALUES
        (?, ...)`` runs as one INSERT of every parameter set (one append)."""
        self._check_open()
        self._reset()
        statement, markers = _parse_checked(self._session, operation)
        assert self._connection is not None
        from trinitylake_dbapi.sql.binding import bind
        from trinitylake_dbapi.sql.query import bulk_insert_template  # the data path: not for DDL

        if markers and bulk_insert_template(statement) is not None:
            rows = list(seq_of_parameters)
            self.rowcount = self._session.run_statement(statement, rows).rowcount if rows else 0
            return self
        total = 0
        for parameters in seq_of_parameters:
            with translate_errors():
                bound = bind(statement, parameters, markers=markers)
            result = self._session.run_statement(bound)
            if result.columns is not None and result.stream is not None:
                result.stream.close()  # a query's rows are not fetched: release them
            count = result.rowcount if result.columns is None else -1
            total = -1 if total < 0 or count < 0 else total + count
        self.rowcount = total
        return self

    def setinputsizes(self, sizes: Any) -> None:
        """Accepted and ignored (PEP 249 allows this)."""
        self._check_open()

    def setoutputsize(self, size: Any, column: Any = None) -> None:
        """Accepted and ignored (PEP 249 allows this)."""
        self._check_open()

    # -- fetching ---------------------------------------------------------------------------

    def _result_set(self) -> Result:
        self._check_open()
        if self._result is None or self._result.columns is None:
            raise errors.ProgrammingError(
                "no result set: execute a statement that returns rows (SHOW, DESCRIBE, SELECT) first"
            )
        return self._result

    def _take(self, count: int | None) -> list[tuple]:
        """Up to ``count`` rows of the result set (all that remain for None)."""
        result = self._result_set()
        if result.stream is not None:
            with translate_errors():
                chunk = result.stream.fetch(count)
            if count is None or len(chunk) < count:  # the end: the count is known now
                self.rowcount = self._position + len(chunk)
        else:
            end = None if count is None else self._position + count
            chunk = result.rows[self._position : end]
        self._position += len(chunk)
        return chunk

    def fetchone(self) -> tuple | None:
        chunk = self._take(1)
        return chunk[0] if chunk else None

    def fetchmany(self, size: int | None = None) -> list[tuple]:
        size = self.arraysize if size is None else size
        if size < 0:
            raise errors.ProgrammingError(f"fetchmany size must not be negative, got {size}")
        return self._take(size)

    def fetchall(self) -> list[tuple]:
        return self._take(None)

    def __iter__(self) -> Iterator[tuple]:
        return self

    def __next__(self) -> tuple:
        row = self.fetchone()
        if row is None:
            raise StopIteration
        return row

    # -- closing ---------------------------------------------------------------------------

    def close(self) -> None:
        """Release the result set; the cursor can no longer be used. Idempotent.
        ``rowcount`` keeps the last statement's count (as sqlite3's does): SQLAlchemy
        reads an INSERT's count after closing its cursor (pandas' to_sql returns it)."""
        self._closed = True
        rowcount = self.rowcount
        self._reset()
        self.rowcount = rowcount

    def detach(self) -> None:
        """Called when the connection closes."""
        self.close()

    def __enter__(self) -> "Cursor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise errors.InterfaceError("the cursor is closed")
        if self._session.closed:
            raise errors.InterfaceError("the connection is closed")

    def _reset(self) -> None:
        if self._result is not None and self._result.stream is not None:
            self._result.stream.close()
        self._result = None
        self._position = 0
        self.description = None
        self.rowcount = -1

    def _set(self, result: Result) -> None:
        self._result = result
        self._position = 0
        if result.columns is None:
            self.description = None
            self.rowcount = result.rowcount
        else:
            self.description = _description(result.columns)
            self.rowcount = result.rowcount if result.stream is not None else len(result.rows)


@functools.lru_cache(maxsize=256)
def _description(columns: tuple[tuple[Any, ...], ...]) -> tuple[tuple[Any, ...], ...]:
    """PEP 249 description of a result's (name, type kind) columns, with the precision
    and scale of a decimal column that has them (name, kind, precision, scale); tuples
    all the way down, so sharing them between results is safe."""
    return tuple(
        (c[0], c[1], None, None, *(c[2:4] if len(c) == 4 else (None, None)), None) for c in columns
    )
