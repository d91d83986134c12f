"""The lakehouse transaction of one DB-API session, shared by its SQL statements and its
bound Iceberg catalog (issue 33 item 6).

A :class:`SessionScope` is the :class:`~trinitylake_dbapi.iceberg.scope.CatalogScope`
of a connection: it owns the connection's transaction and the rules that say when it
begins, commits and is discarded (connection CN1-CN7 state them for users). It sits in
the catalog layer, below the Iceberg catalog, the SQL layer and the driver, so the
Iceberg catalog bound to a connection calls only this object, never the connection
above it; the session (:mod:`trinitylake_dbapi.driver_session`) and the connection hold
it. It imports nothing of PyIceberg: how the Iceberg appends of a transaction run again
at its commit (iceberg.scope ``commit_replaying``) is handed to :meth:`commit` by the
session, which may import it.

Rules:

  SS1. Every change of the scope's transaction state (begin, commit, rollback, a unit of
      work, BEGIN, a statement's start and end, closing) runs under the scope's one
      reentrant ``lock`` (connection CN1); the session and the connection take the same
      lock.
  SS2. Once closed, every use raises InterfaceError ("the connection is closed"), from
      SQL and from a bound Iceberg catalog alike; closing discards the open transaction.
  SS3. The scope knows nothing of what runs on it: SQL statements and catalog calls hand
      it work (a function of the transaction) and it applies the autocommit, statement
      (CN4, CN6) and replay (CN7) rules to it.
  SS4. (iceberg.compaction CP6) A write of a transaction that is not its own version
      only notes the tables due for an automatic compaction (:meth:`defer_compaction`);
      the session takes them off the committed transaction (:meth:`deferred_compactions`)
      and compacts them after the commit, each in a unit of :meth:`own_versions`, where
      every commit is its own lakehouse version (as under autocommit) and no statement
      runs again. A rollback, a failed commit or closing forgets them.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator, TypeVar

from ..errors import InterfaceError, ProgrammingError
from ..transaction import Isolation
from .lakehouse_catalog import LakehouseCatalog
from .transactions import CatalogTransaction

__all__ = ["SessionScope", "Replaying"]

_T = TypeVar("_T")

#: How a transaction whose writes came from the Iceberg catalog commits (CN7): given the
#: transaction, a way to begin a new one at the latest version, the writes and whether
#: they may run again, it commits (iceberg.scope ``commit_replaying``, its failure as
#: SerializationError).
Replaying = Callable[
    [CatalogTransaction, Callable[[], CatalogTransaction], "list[Callable[[CatalogTransaction], Any]]", bool], Any
]


class _Replay:
    """CN7: the Iceberg catalog's writes of one transaction, to run again at ``commit()``
    (iceberg.catalog P4). ``changes`` is the transaction's write count after the last
    of them: equal to the count at commit exactly when every write came from them."""

    def __init__(self, txn: CatalogTransaction) -> None:
        self.txn = txn
        self.writes: list[Callable[[CatalogTransaction], Any]] = []
        self.changes = 0
        self.appends_only = True


class SessionScope:
    """The transaction of one connection (see the module docstring)."""

    def __init__(
        self, lakehouse: LakehouseCatalog, *, isolation: Isolation, version: int | None, autocommit: bool
    ) -> None:
        self.lock = threading.RLock()  # SS1, connection CN1
        self.lakehouse = lakehouse
        #: The level of the transactions begun from now on.
        self.isolation = isolation
        #: The version every transaction reads (time travel); None: the latest.
        self.version = version
        self.autocommit = autocommit
        self.closed = False
        self._txn: CatalogTransaction | None = None
        self._explicit = False
        #: Statements running (CN4: work inside one keeps a read-only transaction open).
        self._statements = 0
        #: CN6: commits made by the running statement; whether it commits on its own.
        self._statement_commits = 0
        self._lakehouse_operation = False
        #: CN7: the replayable writes of the open transaction.
        self._replay: _Replay | None = None
        #: SS4: the transaction whose writes found tables due for compaction, and them.
        self._deferred: tuple[CatalogTransaction, list[tuple[str, str]]] | None = None
        #: SS4: inside :meth:`own_versions`.
        self._own_versions = False

    def check_open(self) -> None:
        """SS2: InterfaceError once the connection is closed."""
        if self.closed:
            raise InterfaceError("the connection is closed")

    @property
    def has_writes(self) -> bool:
        """True while the transaction holds uncommitted changes."""
        return self._txn is not None and self._txn.has_writes

    # -- the transaction ------------------------------------------------------------------

    def transaction(self) -> CatalogTransaction:
        """The current transaction, begun when first needed."""
        if self._txn is None:
            self._txn = self.lakehouse.begin(self.isolation, version=self.version)
        return self._txn

    def begin(self, isolation: str | None) -> None:
        """BEGIN / START TRANSACTION: an explicit transaction until COMMIT or ROLLBACK."""
        if self.has_writes:
            raise ProgrammingError("BEGIN: a transaction with uncommitted changes is open; COMMIT or ROLLBACK first")
        if self._txn is not None:
            self._txn.rollback()
        level = self.isolation if isolation is None else Isolation.parse(isolation)
        self._txn = self.lakehouse.begin(level, version=self.version)
        self._explicit = True

    def take(self) -> CatalogTransaction | None:
        """Take the transaction off the scope (the caller commits or discards it); the
        explicit transaction, if any, ends."""
        txn, self._txn, self._explicit = self._txn, None, False
        return txn

    def commit(self, txn: CatalogTransaction, replaying: Replaying) -> None:
        """CN7: commit ``txn`` (taken off the scope); when the Iceberg catalog wrote in
        it, through ``replaying``, which runs those appends again if it lost a race."""
        replay, self._replay = self._replay, None
        if replay is None or replay.txn is not txn or not replay.writes:
            txn.commit()
            return
        replayable = (
            replay.appends_only and replay.changes == txn.changes and txn.isolation is Isolation.SNAPSHOT
        )
        begin = lambda: self.lakehouse.begin(txn.isolation, version=self.version)  # noqa: E731
        replaying(txn, begin, replay.writes, replayable)

    def forget_replay(self) -> None:
        """Drop the replay record (a rollback: nothing of it runs again) and the tables
        due for compaction (SS4)."""
        self._replay = None
        self._deferred = None

    # -- compaction after the commit (SS4) -------------------------------------------------

    def defer_compaction(self, table: tuple[str, str]) -> None:
        """SS4: ``table``, written by the open transaction, is due for an automatic
        compaction once the transaction has committed."""
        txn = self.transaction()
        if self._deferred is None or self._deferred[0] is not txn:
            self._deferred = (txn, [])
        if table not in self._deferred[1]:
            self._deferred[1].append(table)

    def deferred_compactions(self, txn: CatalogTransaction) -> list[tuple[str, str]]:
        """SS4: the tables ``txn`` (being committed) found due, taken off the scope."""
        deferred, self._deferred = self._deferred, None
        return list(deferred[1]) if deferred is not None and deferred[0] is txn else []

    @contextlib.contextmanager
    def own_versions(self) -> Iterator[None]:
        """SS4: within the block every commit is its own lakehouse version; a read-only
        transaction left open by the block is discarded at its end."""
        with self.lock:
            before, self._own_versions = self._own_versions, True
            try:
                yield
            finally:
                self._own_versions = before
                if not before and self._txn is not None and not self._txn.has_writes:
                    txn, self._txn = self._txn, None
                    with contextlib.suppress(Exception):
                        txn.rollback()

    def close(self) -> None:
        """SS2: closed from now on; the open transaction is discarded."""
        txn, self._txn = self._txn, None
        self._replay = self._deferred = None
        self.closed = True
        if txn is not None:
            txn.rollback()

    def before_lakehouse_operation(self, title: str) -> None:
        """Before a statement that commits on its own (ROLLBACK TO VERSION, EXPORT
        SNAPSHOT, EXPIRE VERSIONS): refused while the transaction has writes; a
        read-only one is discarded (CN6: such a statement never runs again)."""
        self._lakehouse_operation = True
        if self.has_writes:
            raise ProgrammingError(
                f"{title} commits on its own and cannot run while the transaction has "
                "uncommitted changes; COMMIT or ROLLBACK first"
            )
        if self._txn is not None:  # a read-only view; start afresh after the operation
            self._txn.rollback()
            self._txn = None

    @property
    def commits_each_statement(self) -> bool:
        """True under autocommit outside an explicit BEGIN: every statement (and every
        commit of the bound Iceberg catalog) is its own lakehouse version; and inside
        :meth:`own_versions` (SS4)."""
        return (self.autocommit and not self._explicit) or self._own_versions

    # -- statements (CN4, CN6) --------------------------------------------------------------

    @contextlib.contextmanager
    def statement(self) -> Iterator[None]:
        """Count a running statement around its block (CN4)."""
        self._statements += 1
        try:
            yield
        finally:
            self._statements -= 1

    def start_attempt(self) -> None:
        """CN6: a statement's (next) run begins: it has committed nothing yet."""
        self._statement_commits, self._lakehouse_operation = 0, False

    def may_run_again(self) -> bool:
        """CN6: whether the statement that just lost a race may run again, whole."""
        return (
            self._statements == 1
            and self.commits_each_statement
            and not self._own_versions
            and self._statement_commits == 0
            and not self._lakehouse_operation
        )

    def run_work(self, work: Callable[[], _T], *, in_statement: bool = False) -> _T:
        """Run ``work`` under the autocommit rule: with autocommit (and no BEGIN) the
        transaction commits when ``work`` returns (CN4: not a read-only unit inside a
        statement) and is discarded when it raises."""
        auto = self.commits_each_statement
        try:
            result = work()
        except BaseException:
            if auto and self._txn is not None:
                txn, self._txn = self._txn, None
                with contextlib.suppress(Exception):
                    txn.rollback()
            raise
        if auto and not self._explicit and self._txn is not None:
            if in_statement and not self._txn.has_writes:
                return result  # CN4: the statement's next unit, or its end, takes it
            txn, self._txn = self._txn, None
            wrote = txn.has_writes
            txn.commit()
            self._statement_commits += wrote  # CN6
        return result

    # -- CatalogScope (iceberg.catalog P3, P4) ------------------------------------------------

    def run(self, work: Callable[[CatalogTransaction], _T], *, writes: bool) -> _T:
        """Run ``work`` on the transaction under the connection's rules (CN1): with
        autocommit (and no BEGIN), the transaction commits when ``work`` returns and is
        discarded when it raises; otherwise it stays open for ``commit()``, and with
        ``writes`` (a write of the Iceberg catalog) ``work`` is kept to run again on a
        newer version if the commit loses a race (CN7). What ``work`` raises arrives as
        it is (the Iceberg catalog raises PyIceberg's exceptions)."""
        with self.lock:
            self.check_open()
            in_statement = self._statements > 0
            if not writes or self.commits_each_statement:
                return self.run_work(lambda: work(self.transaction()), in_statement=in_statement)
            txn = self.transaction()
            replay = self._replay_of(txn)
            if replay.changes != txn.changes:
                replay.appends_only = False  # a write that did not come from the catalog
            try:
                result = self.run_work(lambda: work(txn), in_statement=in_statement)
            except BaseException:
                if replay.changes != txn.changes:
                    replay.appends_only = False  # half a write: never run again
                raise
            replay.writes.append(work)
            replay.changes = txn.changes
            return result

    def commits_each_call(self) -> bool:
        return self.commits_each_statement

    def reruns_statement(self) -> bool:
        """CN6: True while an autocommit statement that may run again is running (the
        Iceberg catalog then leaves a lost race to it: iceberg.catalog P3)."""
        return (
            self._statements == 1 and self.commits_each_statement and not self._lakehouse_operation
            and not self._own_versions
        )

    def note_commit(self, table: tuple[str, str], plain_append: bool) -> None:
        """CN7: the bound Iceberg catalog is about to stage a table commit."""
        if not plain_append and not self.commits_each_statement:
            self._replay_of(self.transaction()).appends_only = False

    def _replay_of(self, txn: CatalogTransaction) -> _Replay:
        """CN7: the replay record of ``txn`` (made when first needed)."""
        replay = self._replay
        if replay is None or replay.txn is not txn:
            replay = self._replay = _Replay(txn)
        return replay
