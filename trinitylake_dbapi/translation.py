"""The one translation of exceptions from below into PEP 249 exceptions (driver layer).

Connections and cursors both use it, so neither imports the other for it.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Iterator, NoReturn

from trinitylake_dbapi import errors

__all__ = ["translate_errors", "raise_translated"]


@contextlib.contextmanager
def translate_errors() -> Iterator[None]:
    """The one place where exceptions from below become PEP 249 exceptions. The
    package's own errors already are; a sqlglot error is a ProgrammingError, and so is a
    RecursionError (a statement nested too deeply for sqlglot's recursive descent); anything
    else is an InternalError (a bug), with the original chained."""
    try:
        yield
    except Exception as e:  # noqa: BLE001 - mapped once, here
        raise_translated(e)


def raise_translated(e: BaseException) -> NoReturn:
    """Raise the PEP 249 exception for ``e`` (see :func:`translate_errors`; ``e`` itself
    when it already is one, or is not an Exception). For hot paths that catch
    exceptions themselves instead of entering :func:`translate_errors`."""
    if isinstance(e, errors.Error) or not isinstance(e, Exception):
        raise e
    # Only a process that imported sqlglot can raise its errors: one that ran plain
    # statements alone (sql.plain) never imports it, and need not for this check.
    sqlglot_errors = sys.modules.get("sqlglot.errors")
    if sqlglot_errors is not None and isinstance(e, sqlglot_errors.SqlglotError):
        raise errors.ProgrammingError(str(e).replace("\x1b[4m", "").replace("\x1b[0m", "")) from e
    if isinstance(e, RecursionError):
        raise errors.ProgrammingError(
            "the statement is nested too deeply to run (Python's recursion limit); simplify it"
        ) from e
    raise errors.InternalError(f"internal error: {type(e).__name__}: {e}") from e
