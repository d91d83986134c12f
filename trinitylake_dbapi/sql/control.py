"""Bounds on one statement: cancellation, a time limit and a row limit (issue 15).

Rules:

  CT1. ``Connection.interrupt()`` (from any thread, without the connection's lock) and a
      statement timeout stop the running statement at its next check: QueryCanceledError.
      Checks stand in every loop whose length grows with the lakehouse or the query:
      the version history walk, system-table building, and the query executor (per
      joined row pair and between plan steps). A statement stopped before its commit
      writes nothing; a commit itself is never interrupted halfway (it is atomic).
      Work done outside Python (DuckDB running a data query) is stopped through the
      callback registered with ``interrupting``: at ``interrupt()`` and at the deadline.
  CT2. No intermediate or final table of a query holds more than ``max_query_rows`` rows:
      QueryTooLargeError, before memory grows without bound (a cross join of system
      tables multiplies their sizes).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, Iterator

from trinitylake_dbapi.errors import QueryCanceledError, QueryTooLargeError

__all__ = ["StatementControl", "DEFAULT_MAX_QUERY_ROWS"]

#: Default ``max_query_rows``: far above what a catalog query needs, far below what
#: exhausts memory (about 100 bytes a joined row).
DEFAULT_MAX_QUERY_ROWS = 1_000_000


class StatementControl:
    """The interrupt flag, deadline and row limit of the statements of one connection."""

    def __init__(self, timeout_s: float | None = None, max_rows: int = DEFAULT_MAX_QUERY_ROWS) -> None:
        self._interrupted = threading.Event()
        self._callbacks: list[Callable[[], None]] = []
        self._callbacks_lock = threading.Lock()
        self._deadline: float | None = None
        self.timeout_s = timeout_s
        self.max_rows = max_rows

    def start(self) -> None:
        """A statement begins: a new deadline, and an interrupt before it is forgotten."""
        self._interrupted.clear()
        self._deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s

    def finish(self) -> None:
        self._deadline = None

    def interrupt(self) -> None:
        """Ask the running statement to stop (CT1); safe from any thread."""
        self._interrupted.set()
        with self._callbacks_lock:
            callbacks = list(self._callbacks)
        for callback in callbacks:
            callback()

    @contextlib.contextmanager
    def interrupting(self, stop: Callable[[], None]) -> Iterator[None]:
        """While the block runs, ``interrupt()`` and the statement's deadline call
        ``stop`` (which makes foreign work, e.g. a DuckDB query, raise) (CT1)."""
        with self._callbacks_lock:
            self._callbacks.append(stop)
        timer = None
        if self._deadline is not None:
            timer = threading.Timer(max(0.0, self._deadline - time.monotonic()), stop)
            timer.daemon = True
            timer.start()
        try:
            yield
        finally:
            if timer is not None:
                timer.cancel()
            with self._callbacks_lock:
                self._callbacks.remove(stop)

    def check(self) -> None:
        """QueryCanceledError if the statement was interrupted or is past its deadline."""
        if self._interrupted.is_set():
            self._interrupted.clear()
            raise QueryCanceledError("the statement was canceled by Connection.interrupt()")
        if self._deadline is not None and time.monotonic() > self._deadline:
            self._deadline = None
            raise QueryCanceledError(
                f"the statement was canceled: it ran longer than statement_timeout "
                f"({self.timeout_s:g} s)"
            )

    def check_rows(self, count: int, what: str) -> None:
        """QueryTooLargeError when ``count`` rows exceed the limit (CT2)."""
        if count > self.max_rows:
            raise QueryTooLargeError(
                f"{what} would hold more than max_query_rows = {self.max_rows:,} rows; "
                "add conditions to the query or raise max_query_rows on the connection"
            )
