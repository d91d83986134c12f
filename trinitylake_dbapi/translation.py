"""The one translation of exceptions from below into PEP 249 exceptions (driver layer).

Connections and cursors both use it, so neither imports the other for it.
"""

from __future__ import annotations

import contextlib
import re
import sys
from typing import Iterator, NoReturn

from trinitylake_dbapi import errors

__all__ = ["translate_errors", "raise_translated"]


@contextlib.contextmanager
def translate_errors() -> Iterator[None]:
    """The one place where exceptions from below become PEP 249 exceptions. The
    package's own errors already are; a sqlglot error is a ProgrammingError, and so is a
    RecursionError (a statement nested too deeply for sqlglot's recursive descent). An
    OSError from a library below (PyArrow's or fsspec's file systems, writing or reading
    Iceberg files) names its file: a missing file is MissingFileError, any other (no
    permission, a read-only file system, a full disk, the network) a StorageError, both
    OperationalErrors. Anything else is an InternalError (a bug), with the original
    chained."""
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
    if isinstance(e, OSError):
        raise _storage_error(e) from e
    if isinstance(e, RecursionError):
        raise errors.ProgrammingError(
            "the statement is nested too deeply to run (Python's recursion limit); simplify it"
        ) from e
    raise errors.InternalError(f"internal error: {type(e).__name__}: {e}") from e


#: The file an OSError of PyArrow names in its message ("... local file '/x/y'. Detail: ...").
_QUOTED_PATH = re.compile(r"'([^']+)'")


def _storage_error(e: OSError) -> errors.StorageError:
    """The PEP 249 error of an OSError from below, naming its file when it names one."""
    path = e.filename
    if path is None:
        found = _QUOTED_PATH.search(str(e))
        path = found.group(1) if found else None
    detail = e.strerror or str(e)
    if "Detail: " in detail:  # PyArrow's "Failed to open local file '/x'. Detail: [errno 1] ..."
        detail = detail.split("Detail: ", 1)[1]
    if path is None:
        return errors.StorageError(f"a storage call failed: {type(e).__name__}: {e}")
    if isinstance(e, FileNotFoundError):
        return errors.MissingFileError(str(path))
    if isinstance(e, PermissionError):
        return errors.StorageError(f"{str(path)!r}: permission denied ({detail}); is the lakehouse read-only?")
    return errors.StorageError(f"{str(path)!r}: {type(e).__name__}: {detail}")
