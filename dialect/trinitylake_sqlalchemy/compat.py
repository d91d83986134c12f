"""What differs between SQLAlchemy 1.4 and 2.x, for the rest of the dialect.

The dialect supports SQLAlchemy 1.4 (what Apache Superset 6.1 and other BI tools pin) and
2.x from one code base, as trino's and duckdb_engine's dialects do: every name that exists
in one series only is guarded here, once, and the dialect's modules import it from here.

=====================  ==========================  ================================
name                   SQLAlchemy 2.x              SQLAlchemy 1.4
=====================  ==========================  ================================
``DOUBLE``             ``sqlalchemy.DOUBLE``       a ``Float`` visited as ``DOUBLE``
``SQLALCHEMY_2``       True                        False
``driver_connection``  ``conn.connection``'s       ``conn.connection`` itself (or its
                       ``dbapi_connection``        ``.connection``)
``type_compiler``      ``dialect.type_compiler_``  ``dialect.type_compiler``
                       ``instance``
``reflection_cache``   ``reflection.cache``        the same, on a copy of the method
                                                   without annotations (1.4's decorator
                                                   writes ``-> 'list[str]`` unquoted)
=====================  ==========================  ================================

The dialect's tests run on both: ``scripts/test`` runs the compliance suite
(tests/sqlalchemy/suite) and the dialect tests that need no 2.x-only tool on 1.4 too.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy
from sqlalchemy import types as sqltypes
from sqlalchemy.engine import reflection

__all__ = ["DOUBLE", "SQLALCHEMY_2", "SQLALCHEMY_VERSION", "driver_connection", "reflection_cache",
           "type_compiler"]

#: The installed SQLAlchemy's (major, minor).
SQLALCHEMY_VERSION = tuple(int(p) for p in sqlalchemy.__version__.split(".")[:2])
SQLALCHEMY_2 = SQLALCHEMY_VERSION >= (2, 0)

if hasattr(sqltypes, "DOUBLE"):
    DOUBLE = sqltypes.DOUBLE
else:  # SQLAlchemy 1.4

    class DOUBLE(sqltypes.Float):  # type: ignore[no-redef]
        """An 8-byte float (SQLAlchemy 2.x's ``DOUBLE``)."""

        __visit_name__ = "DOUBLE"


def reflection_cache(fn: Any) -> Any:
    """``sqlalchemy.engine.reflection.cache``: results cached per inspector. SQLAlchemy
    1.4 rebuilds the method's signature as source text and breaks on annotations written
    as strings (``from __future__ import annotations``), so there it decorates the
    method without them."""
    if not SQLALCHEMY_2:
        fn.__annotations__ = {}
    return reflection.cache(fn)


def driver_connection(connection: Any) -> Any:
    """The driver's own connection (a ``trinitylake_dbapi.Connection``) under a
    SQLAlchemy ``Connection``: 2.x reaches it through the pool's proxy as
    ``dbapi_connection``; 1.4 hands the driver's connection itself to the dialect while
    it initialises, and a proxy with ``.connection`` afterwards."""
    raw = connection.connection
    return getattr(raw, "dbapi_connection", None) or getattr(raw, "connection", raw)


def type_compiler(dialect: Any) -> Any:
    """The dialect's type compiler instance (``type_compiler_instance`` in 2.x; 1.4's
    ``type_compiler`` is the instance)."""
    return getattr(dialect, "type_compiler_instance", None) or dialect.type_compiler
