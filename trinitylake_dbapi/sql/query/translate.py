"""Errors: DuckDB's errors as the PEP 249 errors a user of this driver expects, with
the position of a name in the statement's text and the data file a failed read met.

Rules:

  Q8. A read that fails on a data file names it: a missing one is MissingFileError,
      a damaged one (truncated, bad magic, a footer or page that does not decode)
      CorruptFileError, whether DuckDB's message names the file or not (then the
      statement's files' footers are read, on the error path only, to find it). So
      does a manifest list or manifest whose records PyIceberg cannot decode
      (iceberg.files IF4), when planning a read or appending.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Iterator, Protocol, Sequence

from sqlglot import exp

from trinitylake_dbapi.errors import (
    CorruptFileError,
    DataError,
    Error,
    IntegrityError,
    MissingFileError,
    NotSupportedError,
    ObjectNotFoundError,
    OperationalError,
    ProgrammingError,
    QueryCanceledError,
)



class Engine(Protocol):
    """What translation asks of the engine (sql.query.engine's Engine is one; a protocol,
    as the engine module imports this one)."""

    @property
    def errors(self) -> Any:
        """DuckDB's exception classes."""

    def file_problem(self, path: str, *, whole: bool) -> str | None:
        """What is wrong with the data file ``path``, if anything."""


class DataStatement(Protocol):
    """What translation asks of a running data statement (sql.query.views' DataStatement
    is one): its engine and the data files it reads."""

    engine: Engine
    files: list[str]


_QUOTED = re.compile(r'"([^"]+)"')


def text_position(statement: exp.Expr, name: str) -> str:
    """Where ``name`` (a column or table name) appears in the statement's text."""
    lowered = name.lower()
    for node in statement.find_all(exp.Identifier):
        meta = node.meta
        if node.this.lower() == lowered and "line" in meta:
            return f" at line {meta['line']}, column {meta['col'] - len(node.this) + 1}"
    return ""


_DUCKDB_KIND = re.compile(r"^[A-Z][A-Za-z ]* Error: ")
_INTERNAL = re.compile(r"\s*when casting from source column c\d+|__tl_\w+\.?")


def duckdb_message(e: Exception) -> str:
    """DuckDB's message without its error-kind prefix and sql.query's internal names."""
    first = str(e).split("\n")[0]
    return _INTERNAL.sub("", _DUCKDB_KIND.sub("", first)).strip()


def _translate(e: Exception, statement: exp.Expr, engine: Engine, files: Sequence[str] = ()) -> Exception:
    """A DuckDB error as the PEP 249 error a user of this driver expects; ``files``
    are the data files the statement reads (Q8)."""
    duckdb = engine.errors
    message = duckdb_message(e)
    if isinstance(e, duckdb.InterruptException):
        return QueryCanceledError("the statement was canceled (Connection.interrupt() or statement_timeout)")
    if isinstance(e, duckdb.OutOfMemoryException):
        return OperationalError(f"the query needs more memory than the connection's memory_limit allows: {message}")
    # (a string that is not UTF-8 can fail in DuckDB's Python client as RuntimeError)
    if (isinstance(e, duckdb.Error) and not isinstance(e, _statement_errors(duckdb))) or isinstance(e, RuntimeError):
        damaged = _damaged_file(message, engine, files)
        if damaged is not None:
            return damaged
    if isinstance(e, (duckdb.ConversionException, duckdb.OutOfRangeException)):
        return DataError(message)
    if isinstance(e, duckdb.BinderException) or isinstance(e, duckdb.CatalogException):
        found = _QUOTED.search(message)
        where = text_position(statement, found.group(1)) if found else ""
        return ProgrammingError(f"{message}{where}")
    if isinstance(e, duckdb.ParserException):
        return NotSupportedError(f"DuckDB cannot run this statement: {message}")
    if isinstance(e, duckdb.InvalidInputException):
        return DataError(message)
    if isinstance(e, getattr(duckdb, "PermissionException", ())):
        return NotSupportedError(f"the data engine reads only the files of the statement's tables: {message}")
    if isinstance(e, duckdb.IOException):
        return OperationalError(f"reading the table's data failed: {message}")
    for theirs, ours in (
        (duckdb.DataError, DataError), (duckdb.IntegrityError, IntegrityError),
        (duckdb.NotSupportedError, NotSupportedError), (duckdb.ProgrammingError, ProgrammingError),
    ):  # fmt: skip
        if isinstance(e, theirs):
            return ours(message)
    if isinstance(e, duckdb.Error):
        return OperationalError(message)
    return e


def _statement_errors(duckdb: Any) -> tuple[type, ...]:
    """DuckDB's errors about the statement or its values, never about a file."""
    return (
        duckdb.ConversionException, duckdb.OutOfRangeException, duckdb.BinderException,
        duckdb.CatalogException, duckdb.ParserException,
    )  # fmt: skip


#: DuckDB's message for a data file that is not there.
_NO_FILE = "No files found that match the pattern"


def _damaged_file(message: str, engine: Engine, files: Sequence[str]) -> Error | None:
    """Q8: the error naming the data file a failed read met: the one of ``files`` that
    DuckDB's message names (missing: MissingFileError; else CorruptFileError), or, when
    the message names none ("TProtocolException: Invalid data", "invalid TType", ...),
    the first of them whose footer, else whose pages, DuckDB cannot read."""
    named = [f for f in dict.fromkeys(files) if f in message]
    if named:
        path = max(named, key=len)
        if _NO_FILE in message:
            return MissingFileError(path, "data file does not exist")
        return CorruptFileError(path, message)
    for whole in (False, True):
        for path in dict.fromkeys(files):
            problem = engine.file_problem(path, whole=whole)
            if problem is not None:
                return CorruptFileError(path, f"{message} (reading it alone: {problem})")
    return None


@contextlib.contextmanager
def translating(statement: exp.Expr, run: DataStatement) -> Iterator[None]:
    try:
        yield
    except Error:
        raise
    except Exception as e:  # noqa: BLE001 - translated, or passed on
        translated = _translate(e, statement, run.engine, run.files)
        if translated is e:
            raise
        raise translated from None


def with_position(e: ObjectNotFoundError, node: exp.Table) -> ObjectNotFoundError:
    """``e`` with the position of the table reference ``node`` in the statement's text."""
    meta = node.this.meta if isinstance(node.this, exp.Identifier) else {}
    if "line" not in meta:
        return e
    start = meta["col"] - len(node.name) + 1 - (len(node.text("db")) + 1 if node.text("db") else 0)
    return ObjectNotFoundError(f"{e} (at line {meta['line']}, column {start})")


def raise_undecodable(io: Any, snapshot: Any) -> None:
    """Q8: raise the CorruptFileError naming the manifest list or manifest of
    ``snapshot`` that does not decode, if one does not (else return: the caller
    re-raises what it caught)."""
    from trinitylake_dbapi.iceberg.files import undecodable_manifest

    damaged = undecodable_manifest(io, snapshot)
    if damaged is not None:
        raise damaged from None
