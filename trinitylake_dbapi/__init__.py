"""trinitylake-dbapi: the TrinityLake lakehouse format for Python, as a PEP 249 driver.

>>> import trinitylake_dbapi
>>> conn = trinitylake_dbapi.connect("memory://doctest", create=True)
>>> cur = conn.cursor()
>>> _ = cur.execute("CREATE NAMESPACE sales COMMENT ?", ["the sales team"])
>>> conn.commit()
>>> cur.execute("SHOW NAMESPACES").fetchall()
[('sales',)]
>>> conn.close()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from trinitylake_dbapi.errors import (
    DatabaseError,
    DataError,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    Warning,
)
from trinitylake_dbapi.types_dbapi import (
    BINARY,
    DATETIME,
    NUMBER,
    ROWID,
    STRING,
    Binary,
    Date,
    DateFromTicks,
    Time,
    TimeFromTicks,
    Timestamp,
    TimestampFromTicks,
)

if TYPE_CHECKING:
    from trinitylake_dbapi.catalog import DEFAULT_NAMESPACE
    from trinitylake_dbapi.connection import Connection
    from trinitylake_dbapi.cursor import Cursor
    from trinitylake_dbapi.format.types import TypeSpec, parse_type
    from trinitylake_dbapi.sql.dialect import KEYWORDS, quote_identifier, split_statements
    from trinitylake_dbapi.sql.like import like_to_regex

__version__ = "0.1.0"

#: PEP 249 globals.
apilevel = "2.0"
#: Threads may share the module and connections (statements of one connection run one
#: at a time; see connection.py, CN1-CN3), not cursors.
threadsafety = 2
#: ``?`` placeholders; ``:name`` with a mapping is accepted too.
paramstyle = "qmark"


def connect(
    location: str,
    *,
    create: bool = False,
    lakehouse_options: dict | None = None,
    storage_options: dict | None = None,
    autocommit: bool = False,
    isolation_level: str | None = None,
    version: int | str | None = None,
    statement_timeout: float | None = None,
    max_query_rows: int | None = None,
    memory_limit: str | None = None,
) -> "Connection":
    """Open a connection to the lakehouse at ``location``.

    ``location``: ``"/path"``, ``"file:///path"``, ``"s3://bucket/lake"``,
    ``"memory://name"``. ``create``: create the lakehouse if it does not exist, with
    ``lakehouse_options`` (LakehouseDef fields, e.g. ``{"order": 64}``).
    ``storage_options`` go to fsspec. ``autocommit``: commit after every statement.
    ``isolation_level``: ``"SNAPSHOT"`` (default) or ``"SERIALIZABLE"``. ``version``: a
    version number or an exported snapshot name; the connection then reads that version
    and refuses writes. ``statement_timeout``: seconds after which a statement is
    canceled (QueryCanceledError; ``Connection.interrupt()`` cancels from another thread).
    ``max_query_rows``: the most rows a catalog query may hold at any step
    (QueryTooLargeError; default 1,000,000); data queries stream instead. ``memory_limit``:
    the most memory DuckDB may use for this connection's data statements (e.g.
    ``"2GB"``; default DuckDB's, 80 % of the machine's memory).
    """
    from trinitylake_dbapi.connection import Connection

    return Connection(
        location,
        create=create,
        lakehouse_options=lakehouse_options,
        storage_options=storage_options,
        autocommit=autocommit,
        isolation_level=isolation_level,
        version=version,
        statement_timeout=statement_timeout,
        max_query_rows=max_query_rows,
        memory_limit=memory_limit,
    )


#: Names this package exports from modules it loads on first use (PEP 562): the SQL
#: layer (sqlglot) and the connection load with the first ``connect()`` or the first use
#: of one of these names, so what imports only part of the package (the Spark data
#: source in PySpark's planner processes, the PyIceberg catalog) does not pay for them.
_LAZY = {
    "Connection": "trinitylake_dbapi.connection",
    "Cursor": "trinitylake_dbapi.cursor",
    # Beyond PEP 249: what tools built on the driver (the shell, the SQLAlchemy dialect)
    # need of TrinityLake SQL and types, so they never reach into the layers below.
    "DEFAULT_NAMESPACE": "trinitylake_dbapi.catalog",
    "TypeSpec": "trinitylake_dbapi.format.types",
    "parse_type": "trinitylake_dbapi.format.types",
    "KEYWORDS": "trinitylake_dbapi.sql.dialect",
    "quote_identifier": "trinitylake_dbapi.sql.dialect",
    "split_statements": "trinitylake_dbapi.sql.dialect",
    "like_to_regex": "trinitylake_dbapi.sql.like",
}


def __getattr__(name: str) -> Any:
    """Load one of the names of ``_LAZY`` from its module (once: it is then set here)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def system_tables() -> dict[tuple[str, str], tuple[str, ...]]:
    """The system tables a query can read, (schema, table) -> column names."""
    from trinitylake_dbapi.sql.system_tables import SYSTEM_TABLES  # the query engine, lazily

    return {key: tuple(name for name, _ in spec.columns) for key, spec in SYSTEM_TABLES.items()}

__all__ = [
    "__version__",
    "apilevel",
    "threadsafety",
    "paramstyle",
    "connect",
    "Connection",
    "Cursor",
    "Warning",
    "Error",
    "InterfaceError",
    "DatabaseError",
    "DataError",
    "OperationalError",
    "IntegrityError",
    "InternalError",
    "ProgrammingError",
    "NotSupportedError",
    "STRING",
    "BINARY",
    "NUMBER",
    "DATETIME",
    "ROWID",
    "Date",
    "Time",
    "Timestamp",
    "DateFromTicks",
    "TimeFromTicks",
    "TimestampFromTicks",
    "Binary",
    "DEFAULT_NAMESPACE",
    "TypeSpec",
    "parse_type",
    "quote_identifier",
    "KEYWORDS",
    "split_statements",
    "like_to_regex",
    "system_tables",
]
