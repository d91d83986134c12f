"""PEP 249 Connection: one lakehouse, one transaction at a time.

Transactions. The first statement begins a catalog transaction (at the latest version,
with the connection's isolation level); its reads see its own writes and one consistent
version. ``commit()`` publishes its writes as a new version; ``rollback()`` discards
them. With ``autocommit`` each statement commits on its own, unless ``BEGIN`` / ``START
TRANSACTION`` opened an explicit transaction, which lasts until ``COMMIT`` or
``ROLLBACK``. A failed statement changes nothing: in autocommit mode its transaction is
discarded; otherwise the open transaction keeps its earlier work.

Time travel. ``version=`` (a version number or an exported snapshot name) pins the
connection to that version: every transaction reads it and every write is refused with
ReadOnlyError before anything is touched.

ROLLBACK TO VERSION, EXPORT SNAPSHOT and EXPIRE VERSIONS commit on their own, on the
lakehouse itself; they are refused while the transaction has uncommitted writes.

Threads (``threadsafety = 2``: threads may share a connection and its cursors).

  CN1. Every operation on a connection's transaction (a statement, ``commit``,
      ``rollback``, ``close``, ``BEGIN``, changing ``autocommit`` or the isolation
      level) runs under the connection's one reentrant lock: statements of a shared
      connection run one at a time, never interleaved inside one another.
  CN2. So an acknowledged commit is never lost: a statement either joins the
      transaction before ``commit()`` takes it, and is committed with it, or starts a
      new one after.
  CN4. Under autocommit a statement is one transaction, whatever it calls: a unit of
      work it runs on the connection (the bound Iceberg catalog's ``load_table``
      before an append) that wrote nothing leaves the transaction open for the
      statement's next unit, and the statement's end commits or discards it. So an
      INSERT reads its table and appends at one version, found once (one existence
      check of the next root on object storage, not two). A unit that wrote commits at
      its own end, as before (the Iceberg catalog retries a lost race there: P3).
  CN3. Threads sharing a connection share its transaction, as they would with any
      PEP 249 driver of threadsafety 2: under autocommit each statement is its own
      commit; otherwise one thread's ``commit()`` publishes the other threads' work too.
      ``serialized()`` holds the lock over several statements that must not be
      interleaved with other threads' statements.
  CN5. ``iceberg_catalog()`` returns a catalog that holds its connection strongly, as a
      cursor does: the connection lives while the catalog (or a table loaded from it)
      is referenced. The connection remembers that catalog only weakly, so no reference
      cycle keeps either alive, and it returns the same catalog while that lives. SQL
      statements use a catalog of the connection's own (``statement_catalog()``),
      which the connection holds strongly and which refers back to it weakly: it lives
      as long as the connection, so what its FileIO remembers of the files it wrote
      (iceberg.io F3: the manifest list an append reads back) lasts from one statement
      to the next.

Concurrent writers (iceberg.catalog P3, P4).

  CN6. Under autocommit a statement that loses to a conflicting commit of another
      writer (SerializationError from its own commit: an UPDATE or DELETE of a table
      changed meanwhile, DDL racing DDL) is run again, whole, on the latest version,
      up to STATEMENT_ATTEMPTS times with jittered backoff: a statement is its own
      transaction, so running it again is as if it had started later. Appends never
      get here (the Iceberg catalog rebases them). Not run again: a statement after
      which part of its work was already committed, the statements that commit on
      their own (ROLLBACK TO VERSION, EXPORT SNAPSHOT, EXPIRE VERSIONS), and a
      statement that began inside an explicit transaction: the COMMIT ending a BEGIN
      leaves the transaction before its commit fails, and run again it would commit
      nothing and return, losing the transaction it acknowledged.
  CN7. In a transaction (no autocommit, or BEGIN), ``commit()`` of a transaction whose
      every write is a plain append of the bound Iceberg catalog (INSERT, executemany,
      pandas ``to_sql``, PyIceberg ``append``), at SNAPSHOT isolation, runs those
      appends again on the latest version when another writer changed one of its
      tables first (iceberg.catalog P4): concurrent appends all land. Any other
      conflicting transaction fails with SerializationError naming the table and the
      version, and is discarded.

Errors. Everything raised is a PEP 249 exception from :mod:`trinitylake_dbapi.errors`;
the one translation of foreign exceptions is :func:`trinitylake_dbapi.translation.translate_errors`. Using a closed
connection raises InterfaceError.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
import weakref
from typing import Any, Callable, Iterator

from trinitylake_dbapi import errors
from trinitylake_dbapi.catalog import CatalogTransaction, LakehouseCatalog
from trinitylake_dbapi.sql.control import DEFAULT_MAX_QUERY_ROWS, StatementControl
from trinitylake_dbapi.sql.plain import PlainStatement
from trinitylake_dbapi.sql.registry import run as run_statement_kind
from trinitylake_dbapi.sql.session import Result
from trinitylake_dbapi.transaction import Isolation
from trinitylake_dbapi.translation import raise_translated, translate_errors

__all__ = ["Connection"]

#: CN6: runs of one autocommit statement that lost to concurrent writers, at most.
STATEMENT_ATTEMPTS = 32


class _Replay:
    """CN7: the Iceberg catalog's writes of one transaction, to run again at ``commit()``
    (iceberg.catalog P4). ``changes`` is the transaction's write count after the last
    of them: equal to the count at commit exactly when every write came from them."""

    def __init__(self, txn: CatalogTransaction) -> None:
        self.txn = txn
        self.writes: list[Callable[[CatalogTransaction], Any]] = []
        self.changes = 0
        self.appends_only = True


def _positive(value: Any, name: str, kind: type) -> Any:
    """``value`` as a positive ``kind`` (None stays None); ProgrammingError otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int) or value <= 0:
        raise errors.ProgrammingError(f"{name} must be a positive {kind.__name__} or None, not {value!r}")
    return kind(value)


class Connection:
    """A PEP 249 connection to one lakehouse (see the module docstring)."""

    # PEP 249 optional extension: the exceptions as attributes.
    Warning = errors.Warning
    Error = errors.Error
    InterfaceError = errors.InterfaceError
    DatabaseError = errors.DatabaseError
    DataError = errors.DataError
    OperationalError = errors.OperationalError
    IntegrityError = errors.IntegrityError
    InternalError = errors.InternalError
    ProgrammingError = errors.ProgrammingError
    NotSupportedError = errors.NotSupportedError

    def __init__(
        self,
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
    ) -> None:
        self._closed = True
        self._lock = threading.RLock()  # CN1
        #: Cancellation, timeout and row limit of this connection's statements (sql.control).
        self.control = StatementControl(
            _positive(statement_timeout, "statement_timeout", float),
            _positive(max_query_rows, "max_query_rows", int) or DEFAULT_MAX_QUERY_ROWS,
        )
        with translate_errors():
            isolation = Isolation.parse(isolation_level)
            if version is not None and (
                isinstance(version, bool) or not isinstance(version, (int, str))
            ):
                raise errors.ProgrammingError(
                    f"version must be a version number or a snapshot name, not {version!r}"
                )
            self._lakehouse = LakehouseCatalog(
                location, create=create, lakehouse_options=lakehouse_options,
                storage_options=storage_options,
            )  # fmt: skip
            try:
                self._version = None if version is None else self._lakehouse.resolve_version(version)
            except BaseException:
                self._lakehouse.close()
                raise
        self.location = location
        self._isolation = isolation
        self._autocommit = bool(autocommit)
        self._txn: CatalogTransaction | None = None
        self._explicit = False
        #: Statements running (CN4: work inside one keeps a read-only transaction open).
        self._statements = 0
        #: CN6: commits made by the running statement; whether it commits on its own.
        self._statement_commits = 0
        self._lakehouse_operation = False
        #: CN7: the replayable writes of the open transaction.
        self._replay: _Replay | None = None
        self._cursors: weakref.WeakSet[Any] = weakref.WeakSet()
        #: The connection's Iceberg catalog while someone references it (CN5).
        self._iceberg: weakref.ref[Any] | None = None
        #: The catalog SQL statements use, for the connection's lifetime (CN5).
        self._statement_catalog: Any = None
        self._table_states: Any = None
        self._engine: Any = None
        self._memory_limit = memory_limit
        if memory_limit is not None:
            from trinitylake_dbapi.sql.query import check_memory_limit

            with translate_errors():
                check_memory_limit(memory_limit)
        #: The namespace chosen by USE (None: unqualified names are in "default").
        self.current_namespace: str | None = None
        self._closed = False

    # -- attributes ---------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def autocommit(self) -> bool:
        return self._autocommit

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        """Turning autocommit on commits the open transaction (as sqlite3 does)."""
        with self._lock:
            self._check_open()
            value = bool(value)
            if value and not self._autocommit:
                self.commit()
            self._autocommit = value

    @property
    def isolation_level(self) -> str:
        """"SNAPSHOT" or "SERIALIZABLE": the level of the transactions begun from now on."""
        return self._isolation.value

    @isolation_level.setter
    def isolation_level(self, value: str | None) -> None:
        with self._lock:
            self._check_open()
            with translate_errors():
                isolation = Isolation.parse(value)
            if self._txn is not None and self._txn.has_writes:
                raise errors.ProgrammingError(
                    "cannot change the isolation level while a transaction has uncommitted changes"
                )
            self._isolation = isolation

    @property
    def read_only(self) -> bool:
        """True when the connection reads a fixed version (``version=``)."""
        return self._version is not None

    @property
    def version(self) -> int | None:
        """The version a time travel connection reads; None for a writable connection."""
        return self._version

    @property
    def lakehouse(self) -> LakehouseCatalog:
        """The catalog API of the lakehouse (for programs that want objects, not SQL)."""
        self._check_open()
        return self._lakehouse

    @property
    def in_transaction(self) -> bool:
        """True while a transaction holds uncommitted changes."""
        return self._txn is not None and self._txn.has_writes

    # -- PEP 249 --------------------------------------------------------------------------

    def cursor(self) -> Any:
        from trinitylake_dbapi.cursor import Cursor

        with self._lock:
            self._check_open()
            cursor = Cursor(self)
            self._cursors.add(cursor)
            return cursor

    def commit(self) -> None:
        """Publish the transaction's writes as a new version (nothing to do without
        writes). Appends are run again on a newer version when another writer committed
        to their table first (CN7); any other conflicting concurrent commit raises
        SerializationError, and the transaction is then discarded."""
        self._end_transaction(self._commit_replaying)

    def _commit_replaying(self, txn: CatalogTransaction) -> None:
        """CN7: commit ``txn``, replaying its Iceberg appends if it lost to a conflict."""
        replay, self._replay = self._replay, None
        if replay is None or replay.txn is not txn or not replay.writes:
            txn.commit()
            return
        from pyiceberg.exceptions import CommitFailedException

        from trinitylake_dbapi.iceberg.scope import commit_replaying

        replayable = (
            replay.appends_only and replay.changes == txn.changes and txn.isolation is Isolation.SNAPSHOT
        )
        begin = lambda: self._lakehouse.begin(txn.isolation, version=self._version)  # noqa: E731
        try:
            commit_replaying(txn, begin, replay.writes, replayable)
        except CommitFailedException as e:  # an append that no longer holds on the latest version
            raise errors.SerializationError(f"the transaction was not committed: {e}") from e

    def rollback(self) -> None:
        """Discard the transaction's writes."""
        self._replay = None
        self._end_transaction(CatalogTransaction.rollback)

    def _end_transaction(self, end: Callable[[CatalogTransaction], Any]) -> None:
        """Take the transaction off the connection (CN1) and commit or discard it."""
        with self._lock:
            self._check_open()
            txn, self._txn, self._explicit = self._txn, None, False
            if txn is not None:
                with translate_errors():
                    end(txn)

    def close(self) -> None:
        """Discard any uncommitted work and close. Closing twice raises InterfaceError."""
        with self._lock:
            self._check_open()
            for cursor in list(self._cursors):
                cursor.detach()
            txn, self._txn = self._txn, None
            self._replay = None
            self._closed = True
            self._statement_catalog = None
            engine, self._engine = self._engine, None
            with translate_errors():
                try:
                    if txn is not None:
                        txn.rollback()
                finally:
                    try:
                        if engine is not None:
                            engine.close()
                    finally:
                        self._lakehouse.close()

    def interrupt(self) -> None:
        """Cancel the statement running on this connection, from any thread: it raises
        QueryCanceledError at its next check and writes nothing (sql.control CT1). Takes
        no lock (CN1 would make it wait for the very statement it cancels); with no
        statement running it does nothing."""
        self.control.interrupt()

    @property
    def statement_timeout(self) -> float | None:
        """Seconds after which a statement is canceled; None: no limit."""
        return self.control.timeout_s

    @statement_timeout.setter
    def statement_timeout(self, value: float | None) -> None:
        self.control.timeout_s = _positive(value, "statement_timeout", float)

    @contextlib.contextmanager
    def serialized(self) -> Iterator["Connection"]:
        """Hold the connection's lock (CN1) over a block: statements of other threads
        sharing this connection wait until it ends, e.g. around a read and the write
        that depends on it, or around ``execute`` and the ``commit`` that ends it."""
        with self._lock:
            self._check_open()
            yield self

    def __enter__(self) -> "Connection":
        self._check_open()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Commit on success, roll back on an exception, then close."""
        if self._closed:
            return
        try:
            if exc_type is None:
                self.commit()
            else:
                self.rollback()
        finally:
            self.close()

    # -- the Session used by sql.execute ------------------------------------------------------

    def transaction(self) -> CatalogTransaction:
        if self._txn is None:
            self._txn = self._lakehouse.begin(self._isolation, version=self._version)
        return self._txn

    def begin(self, isolation: str | None) -> None:
        if self._txn is not None and self._txn.has_writes:
            raise errors.ProgrammingError(
                "BEGIN: a transaction with uncommitted changes is open; COMMIT or ROLLBACK first"
            )
        if self._txn is not None:
            self._txn.rollback()
        level = self._isolation if isolation is None else Isolation.parse(isolation)
        self._txn = self._lakehouse.begin(level, version=self._version)
        self._explicit = True

    def use(self, namespace: str) -> None:
        self.current_namespace = namespace

    def before_lakehouse_operation(self, title: str) -> None:
        self._lakehouse_operation = True  # CN6: never run again
        if self._txn is not None and self._txn.has_writes:
            raise errors.ProgrammingError(
                f"{title} commits on its own and cannot run while the transaction has "
                "uncommitted changes; COMMIT or ROLLBACK first"
            )
        if self._txn is not None:  # a read-only view; start afresh after the operation
            self._txn.rollback()
            self._txn = None

    @property
    def commits_each_statement(self) -> bool:
        """True under autocommit outside an explicit BEGIN: every statement (and every
        commit of the connection's Iceberg catalog) is its own lakehouse version."""
        return self._autocommit and not self._explicit

    def iceberg_catalog(self, name: str = "trinitylake", **properties: str) -> Any:
        """A PyIceberg catalog (:class:`trinitylake_dbapi.iceberg.TrinityLakeCatalog`)
        bound to this connection's transaction: its commits join the transaction's SQL
        DDL and publish together at ``commit()`` (or at once, under autocommit).
        ``properties`` are PyIceberg's (e.g. ``warehouse``).

        The catalog keeps this connection alive while it is referenced, as a cursor
        does, so ``connect(lake).iceberg_catalog()`` is a catalog that works; the
        connection holds it only weakly (no reference cycle), and returns the same one
        while it lives."""
        with self._lock:
            self._check_open()
            catalog = self._iceberg() if self._iceberg is not None and not properties else None
            if catalog is None:
                from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

                catalog = TrinityLakeCatalog.bound(
                    name, self._lakehouse, _ConnectionScope(self), read_only=self.read_only,
                    tables=None if properties else self.table_states(), **properties,
                )  # fmt: skip
                if not properties:
                    self._iceberg = weakref.ref(catalog)
            return catalog

    def statement_catalog(self) -> Any:
        """The PyIceberg catalog SQL statements write through (CN5): bound to this
        connection's transaction like :meth:`iceberg_catalog`'s, made once and kept for
        the connection's lifetime, referring back to the connection only weakly."""
        with self._lock:
            self._check_open()
            if self._statement_catalog is None:
                from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

                self._statement_catalog = TrinityLakeCatalog.bound(
                    "trinitylake", self._lakehouse, _ConnectionScope(self, keeps_alive=False),
                    read_only=self.read_only, tables=self.table_states(),
                )  # fmt: skip
            return self._statement_catalog

    def table_states(self) -> Any:
        """The Iceberg states of this lakehouse's tables, shared by SQL DDL and the
        connection's Iceberg catalog (made when first needed: it imports PyIceberg's
        table model, not its data path)."""
        if self._table_states is None:
            from trinitylake_dbapi.iceberg.tables import TableStates

            storage_options = self._lakehouse.storage_options
            root_uri = self._lakehouse.storage.root_uri  # not self: the closure must not hold it
            made: list[Any] = []

            def file_io() -> Any:
                if not made:
                    from trinitylake_dbapi.iceberg.io import DurableFileIO, file_io_properties

                    made.append(DurableFileIO(file_io_properties(storage_options, root_uri)))
                return made[0]

            self._table_states = TableStates(self._lakehouse.storage.root_uri, None, file_io)
        return self._table_states

    def data_engine(self) -> Any:
        """The DuckDB engine of this connection's data statements
        (:class:`trinitylake_dbapi.sql.query.Engine`), made by the first one."""
        if self._engine is None:
            from trinitylake_dbapi.sql.query import Engine

            storage = self._lakehouse.storage
            self._engine = Engine(filesystem=storage.duckdb_filesystem, memory_limit=self._memory_limit, allowed=[storage.root_uri])
        return self._engine

    # -- internals ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise errors.InterfaceError("the connection is closed")

    def run_statement(self, statement: Any, parameter_rows: Any = None) -> Result:
        """Run one parsed and bound statement, or a recognised plain one (sql.plain),
        under the connection's transaction rules (CN1, CN6); what a Cursor calls for
        ``execute`` (and, with ``parameter_rows``, for the ``executemany`` of a bulk
        INSERT)."""
        with self._lock:
            self._check_open()
            self.control.start()
            self._statements += 1
            began_on_its_own = self.commits_each_statement  # CN6: not a COMMIT ending a BEGIN
            try:
                for attempt in range(STATEMENT_ATTEMPTS):
                    self._statement_commits, self._lakehouse_operation = 0, False
                    try:
                        return self._run_work(lambda: self._execute(statement, parameter_rows))
                    except errors.SerializationError:
                        if not (began_on_its_own and self._may_run_again()) or attempt == STATEMENT_ATTEMPTS - 1:
                            raise
                    time.sleep(min(0.2, 0.002 * 2**attempt) * random.random())  # CN6
                raise AssertionError("unreachable")  # pragma: no cover
            except BaseException as e:
                raise_translated(e)
            finally:
                self._statements -= 1
                self.control.finish()

    def _may_run_again(self) -> bool:
        """CN6: whether the statement that just lost a race may run again, whole."""
        return (
            self._statements == 1
            and self.commits_each_statement
            and self._statement_commits == 0
            and not self._lakehouse_operation
        )

    def reruns_statement(self) -> bool:
        """CN6: True while an autocommit statement that may run again is running (the
        Iceberg catalog then leaves a lost race to it: iceberg.catalog P3)."""
        return self._statements == 1 and self.commits_each_statement and not self._lakehouse_operation

    def note_commit(self, plain_append: bool) -> None:
        """CN7: the bound Iceberg catalog is about to stage a table commit."""
        if not plain_append and not self.commits_each_statement:
            self._replay_of(self.transaction()).appends_only = False

    def _replay_of(self, txn: CatalogTransaction) -> _Replay:
        """CN7: the replay record of ``txn`` (made when first needed)."""
        replay = self._replay
        if replay is None or replay.txn is not txn:
            replay = self._replay = _Replay(txn)
        return replay

    def _execute(self, statement: Any, parameter_rows: Any) -> Result:
        if isinstance(statement, PlainStatement):  # recognised without the parser (sql.plain)
            return run_statement_kind(statement.kind, statement, self)
        from trinitylake_dbapi.sql.execute import execute  # sqlglot: not for plain statements

        return execute(statement, self, parameter_rows)

    def run_in_transaction(self, work: Callable[[CatalogTransaction], Any], *, replayable: bool = False) -> Any:
        """Run ``work`` on the connection's transaction under its rules (CN1): with
        autocommit (and no BEGIN), the transaction commits when ``work`` returns and is
        discarded when it raises; otherwise it stays open for ``commit()``, and with
        ``replayable`` (a write of the Iceberg catalog) ``work`` is kept to run again
        on a newer version if the commit loses a race (CN7). What ``work`` raises
        arrives as it is (the Iceberg catalog raises PyIceberg's exceptions)."""
        with self._lock:
            self._check_open()
            if not replayable or self.commits_each_statement:
                return self._run_work(lambda: work(self.transaction()), in_statement=self._statements > 0)
            txn = self.transaction()
            replay = self._replay_of(txn)
            if replay.changes != txn.changes:
                replay.appends_only = False  # a write that did not come from the catalog
            try:
                result = self._run_work(lambda: work(txn), in_statement=self._statements > 0)
            except BaseException:
                if replay.changes != txn.changes:
                    replay.appends_only = False  # half a write: never run again
                raise
            replay.writes.append(work)
            replay.changes = txn.changes
            return result

    def _run_work(self, work: Callable[[], Any], *, in_statement: bool = False) -> Any:
        auto = self._autocommit and not self._explicit
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

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("read-only" if self.read_only else "open")
        return f"<trinitylake_dbapi.Connection {self.location!r} {state}>"


class _ConnectionScope:
    """A connection's transaction as the Iceberg catalog's scope (iceberg.catalog P4).
    ``keeps_alive``: it holds the connection strongly, so a catalog handed to a user
    keeps its connection alive; the connection's own statement catalog holds it weakly
    (the connection holds that catalog: no cycle) (CN5)."""

    def __init__(self, connection: Connection, *, keeps_alive: bool = True) -> None:
        if keeps_alive:
            self._connection: Callable[[], Connection | None] = lambda: connection
        else:
            self._connection = weakref.ref(connection)

    def _open(self) -> Connection:
        connection = self._connection()
        if connection is None:
            raise errors.InterfaceError("the connection is closed")
        return connection

    def run(self, work: Callable[[CatalogTransaction], Any], *, writes: bool) -> Any:
        return self._open().run_in_transaction(work, replayable=writes)

    def commits_each_call(self) -> bool:
        return self._open().commits_each_statement

    def reruns_statement(self) -> bool:
        return self._open().reruns_statement()

    def note_commit(self, table: tuple[str, str], plain_append: bool) -> None:
        self._open().note_commit(plain_append)

