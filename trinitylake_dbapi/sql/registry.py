"""The one registry of statements: each kind of statement, by its title ("SELECT",
"INSERT", "DESCRIBE TABLE", "CREATE NAMESPACE", ...), maps to one entry: its category,
whether it writes, and its handler.

Whatever path prepared a statement, it runs here. The preparations in front of the
registry make what a handler takes and never run a statement themselves:

  - the parser and binding (sql.dialect, sql.binding) make a syntax tree, and
    :func:`trinitylake_dbapi.sql.execute.execute` names its kind (and, for the kinds
    sql.plain also recognises, turns the node into the same :class:`~.plain.PlainStatement`);
  - sql.plain recognises DESCRIBE, SHOW TABLES and DROP TABLE in their plainest spelling
    without the parser;
  - the cursor's templates (``executemany`` of ``INSERT ... VALUES (?, ...)``, a
    multi-row INSERT of markers) make one INSERT and its parameter rows, which the
    INSERT entry takes as one statement.

SELECT is one kind whichever engine answers it (sql.execute's handler sends a query
over tables' rows to DuckDB and one over system tables alone to the catalog's
executor), and INSERT, UPDATE and DELETE are kinds like the others.

Rules:

  SR1 One path: every statement a connection runs goes through :func:`run`, which
      refuses a write on a read-only session (before anything else is touched) and
      then calls its kind's handler.
  SR2 One entry per kind: registering a kind twice is an error, so a kind's meaning
      cannot depend on the path it came by.
  SR3 No sqlglot here: this module imports nothing that imports sqlglot, so a
      recognised plain statement runs without it (sql.plain PS4). Handlers register
      when their module is imported: sql.plain's kinds with it, the parsed kinds with
      sql.execute (imported by the first parsed statement).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from trinitylake_dbapi.errors import NotSupportedError
from trinitylake_dbapi.sql.session import Result, Session, refuse_write

__all__ = ["CATALOG", "DATA", "SESSION", "LAKEHOUSE", "Entry", "Handler", "STATEMENTS", "register", "run"]

#: Categories of statements: what a statement works on.
CATALOG = "catalog"  # namespaces, tables and columns (definitions), in the transaction
DATA = "data"  # tables' rows (DuckDB), or system tables' (the catalog's executor)
SESSION = "session"  # the connection's state: its transaction, its namespace
LAKEHOUSE = "lakehouse"  # versions: history, rollback, export, expiration

#: A handler: (the prepared statement, the session, the parameter rows of a bulk
#: INSERT or None) -> the result.
Handler = Callable[[Any, Session, "Sequence[Any] | None"], Result]


@dataclass(frozen=True)
class Entry:
    """What the registry knows of one kind of statement."""

    kind: str
    category: str
    writes: bool
    handler: Handler


#: Every kind of statement, by title (SR2).
STATEMENTS: dict[str, Entry] = {}


def register(kind: str, category: str, *, writes: bool = False) -> Callable[[Handler], Handler]:
    """Register ``handler`` as the one handler of ``kind`` (SR2)."""
    if category not in (CATALOG, DATA, SESSION, LAKEHOUSE):
        raise ValueError(f"unknown statement category {category!r}")

    def add(handler: Handler) -> Handler:
        if kind in STATEMENTS:
            raise ValueError(f"statement kind {kind!r} is registered twice")
        STATEMENTS[kind] = Entry(kind, category, writes, handler)
        return handler

    return add


def run(kind: str, statement: Any, session: Session, parameter_rows: Sequence[Any] | None = None) -> Result:
    """Run a prepared statement of ``kind`` (SR1): ReadOnlyError for a write on a
    read-only session, NotSupportedError for a kind nothing registered."""
    entry = STATEMENTS.get(kind)
    if entry is None:
        raise NotSupportedError(f"statement {kind} is not supported")
    if entry.writes:
        refuse_write(session, kind)
    return entry.handler(statement, session, parameter_rows)
