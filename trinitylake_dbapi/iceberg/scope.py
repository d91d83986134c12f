"""Where the Iceberg catalog's reads and writes run (iceberg.catalog P3-P5): a
:class:`CatalogScope` is what a DB-API connection or the REST server offers to bind a
:class:`~trinitylake_dbapi.iceberg.catalog.TrinityLakeCatalog` to its transactions;
:class:`OwnScope` is the catalog's own (one lakehouse transaction per call, or the open
block of a thread); :func:`commit_replaying` commits a transaction and, when it lost a
race and every write was a plain append, runs its writes again on the latest version
(P4). The rules are stated in iceberg.catalog.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from typing import Any, Callable, Iterator, Protocol, TypeVar

from pyiceberg.exceptions import CommitFailedException

from ..catalog import CatalogTransaction, LakehouseCatalog
from ..errors import SerializationError

__all__ = ["MAX_COMMIT_ATTEMPTS", "CatalogScope", "OwnScope", "commit_replaying"]

#: Commits of one table tried before giving up under constant contention (P3).
MAX_COMMIT_ATTEMPTS = 32
_T = TypeVar("_T")


class CatalogScope(Protocol):
    """Where the Iceberg catalog's reads and writes go (P3, P4): a DB-API session's
    transaction (catalog.session_scope), or the server's requests. The catalog calls
    only this object, which sits at its layer or below, never a connection above it."""

    def run(self, work: Callable[[CatalogTransaction], _T], *, writes: bool) -> _T:
        """Run ``work`` on the current catalog transaction; with ``writes``, publish it
        when the scope commits each statement on its own (autocommit)."""

    def commits_each_call(self) -> bool:
        """True when each ``run`` is its own lakehouse transaction (so a commit that
        lost a race can be tried again: P3)."""

    def reruns_statement(self) -> bool:
        """True when a lost race is better answered by running the whole calling SQL
        statement again than by retrying the commit (P3): SerializationError is raised."""

    def note_commit(self, table: tuple[str, str], plain_append: bool) -> None:
        """Record a table commit about to be staged, for the replay rule of P4."""


class OwnScope:
    """The catalog's own lakehouse transactions: one per call (P3), or the open block
    of this thread (P4), at the latest version or at a pinned one (P5)."""

    def __init__(self, lakehouse: LakehouseCatalog, version: int | None = None) -> None:
        self.lakehouse = lakehouse
        self.version = version
        self._local = threading.local()

    @property
    def open_block(self) -> CatalogTransaction | None:
        return getattr(self._local, "txn", None)

    def commits_each_call(self) -> bool:
        return self.open_block is None

    def reruns_statement(self) -> bool:
        return False

    def run(self, work: Callable[[CatalogTransaction], _T], *, writes: bool) -> _T:
        txn = self.open_block
        if txn is not None:
            if writes:
                self._local.writes.append(work)
            return work(txn)
        txn = self.lakehouse.begin(version=self.version)
        try:
            result = work(txn)
        except BaseException:
            txn.rollback()
            raise
        if writes:
            self.saw_version(txn.commit())
        else:
            self.saw_version(txn.version)
            txn.rollback()
        return result

    def saw_version(self, version: int) -> None:
        """Called with the version each call read or published (a block's: when it
        commits). Nothing here; a scope that reports versions (the REST server's
        response header) records it."""

    @contextlib.contextmanager
    def block(self) -> Iterator[None]:
        """P4: the block's writes are one lakehouse transaction. When another writer
        commits to one of its tables first, the block's writes are run again, in order,
        on the latest version (each checks its requirements again, appends are rebased:
        P3), up to MAX_COMMIT_ATTEMPTS times; a write that no longer holds fails the
        whole block with CommitFailedException and nothing is published."""
        if self.open_block is not None:
            raise ValueError("a lakehouse transaction is already open in this thread")
        txn = self.lakehouse.begin(version=self.version)
        self._local.txn, self._local.writes, self._local.commits = txn, [], []
        try:
            yield
        except BaseException:
            txn.rollback()
            raise
        else:
            self._commit_block(txn, list(self._local.writes))
        finally:
            self._local.txn, self._local.writes, self._local.commits = None, [], []

    def note_commit(self, table: tuple[str, str], plain_append: bool) -> None:
        """Record a table commit of the open block, for the replay rule of P4."""
        if self.open_block is not None:
            self._local.commits.append((table, plain_append))

    def _replayable(self) -> bool:
        """Only blocks whose table commits are plain appends are run again."""
        return all(plain for _, plain in self._local.commits)

    def _commit_block(
        self, txn: CatalogTransaction, writes: list[Callable[[CatalogTransaction], Any]]
    ) -> None:
        try:
            self.saw_version(commit_replaying(
                txn, lambda: self.lakehouse.begin(version=self.version), writes, self._replayable()
            ))
        except SerializationError as e:
            raise CommitFailedException(f"the lakehouse transaction was not committed: {e}") from e


def commit_replaying(
    txn: CatalogTransaction,
    begin: Callable[[], CatalogTransaction],
    writes: list[Callable[[CatalogTransaction], Any]],
    replayable: bool,
) -> int:
    """Commit ``txn``; when it loses to a conflicting version and ``replayable`` (every
    write of ``txn`` came from ``writes``, each a plain append, P4), run ``writes`` again,
    in order, on a transaction from ``begin`` (at the latest version) and commit that,
    up to MAX_COMMIT_ATTEMPTS times with jittered backoff. Returns the version committed.
    Raises SerializationError (PEP 249, naming the table and the version) when ``txn`` is
    not replayable or after the last attempt; what a write raises when it no longer
    holds (CommitFailedException naming the table) arrives as it is."""
    for attempt in range(MAX_COMMIT_ATTEMPTS):
        try:
            return txn.commit()
        except SerializationError:
            if not replayable or not writes or attempt == MAX_COMMIT_ATTEMPTS - 1:
                raise
        time.sleep(min(0.2, 0.002 * 2**attempt) * random.random())
        txn = begin()
        try:
            for work in writes:
                work(txn)
        except BaseException:
            txn.rollback()
            raise
    raise AssertionError("unreachable")  # pragma: no cover - the last attempt raised
