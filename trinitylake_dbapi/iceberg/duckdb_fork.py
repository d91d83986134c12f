"""DuckDB databases and ``os.fork``: a forked child never destroys or uses its parent's.

A DuckDB database runs a pool of threads. A child forked from a process that holds one
inherits the database's memory but none of its threads, and glibc hands the dead
threads' stacks to the threads the child starts next. Destroying the inherited database
(closing it, dropping its last reference, or a garbage collection of a reference cycle
that holds it, on any thread) joins "its" threads, which are now live threads of another
database of the child: the child hangs for ever (measured: duckdb 2.0.1, a
``multiprocessing`` pool forked after a query). Using it fails in the same way.

Rules:

  DF1 Every DuckDB database this package opens comes from :func:`connect`, which
      remembers it (weakly: the parent frees it as usual).
  DF2 In a child forked from a process holding such databases, each of them, still alive
      at the fork, is referenced for good (the reference count is raised once and never
      lowered): no garbage collection, no dropped reference and no interpreter shutdown
      runs its destructor there.
  DF3 Their users check :func:`opened_here` before using one and open a new database in
      the child instead (the engine of a connection; the primary-key check).
"""

from __future__ import annotations

import ctypes
import os
import weakref
from typing import Any

__all__ = ["connect", "opened_here"]

#: DF1: each database opened here, with the process that opened it.
_OPENED: "weakref.WeakKeyDictionary[Any, int]" = weakref.WeakKeyDictionary()


def connect(database: str = ":memory:", config: dict[str, Any] | None = None) -> Any:
    """DF1: a new DuckDB database (``duckdb.connect``), safe across ``os.fork``."""
    import duckdb

    con = duckdb.connect(database, config=config or {})
    _OPENED[con] = os.getpid()
    return con


def opened_here(con: Any) -> bool:
    """DF3: whether ``con`` (from :func:`connect`) was opened by this process, so that it
    may be used and closed here."""
    return _OPENED.get(con) == os.getpid()


def _keep_inherited() -> None:
    """DF2, in the child after a fork: a reference that is never released to each
    database alive at the fork."""
    for con in list(_OPENED.keys()):
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(con))


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_keep_inherited)
