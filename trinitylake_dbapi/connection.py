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
  CN5. ``iceberg_catalog()`` returns a catalog that holds what it runs on (the
      connection's lakehouse and transaction scope) strongly, as a cursor holds its
      connection: it works while it (or a table loaded from it) is referenced, whether or
      not the connection still is. The connection remembers that catalog only weakly,
      so no reference cycle keeps either alive, and it returns the same catalog while
      that lives. SQL statements use a catalog of the connection's own
      (``statement_catalog()`` of its session), held for the connection's lifetime, so
      what its FileIO remembers of the files it wrote (iceberg.io F3: the manifest list
      an append reads back) lasts from one statement to the next.

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

Ownership. The connection is the PEP 249 surface only: the lakehouse, the transaction,
the engines and the parse cache belong to its session (driver_session DS1-DS3), which
its cursors run statements on and which the Iceberg catalogs it hands out are bound to
through the session's scope (catalog.session_scope), never through the connection.

Errors. Everything raised is a PEP 249 exception from :mod:`trinitylake_dbapi.errors`;
the one translation of foreign exceptions is :func:`trinitylake_dbapi.translation.translate_errors`. Using a closed
connection raises InterfaceError.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any, Iterator

from trinitylake_dbapi import errors
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.cursor import Cursor
from trinitylake_dbapi.driver_session import DriverSession, positive
from trinitylake_dbapi.transaction import Isolation
from trinitylake_dbapi.translation import translate_errors

__all__ = ["Connection"]


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
        self._session = DriverSession(
            location, create=create, lakehouse_options=lakehouse_options, storage_options=storage_options,
            autocommit=autocommit, isolation_level=isolation_level, version=version,
            statement_timeout=statement_timeout, max_query_rows=max_query_rows, memory_limit=memory_limit,
        )  # fmt: skip
        self._lock = self._session.lock  # CN1
        self.location = location
        #: Cancellation, timeout and row limit of this connection's statements (sql.control).
        self.control = self._session.control
        self._cursors: weakref.WeakSet[Cursor] = weakref.WeakSet()

    # -- attributes ---------------------------------------------------------------------

    @property
    def session(self) -> DriverSession:
        """What this connection's statements run on (driver_session): its lakehouse,
        transaction, engines and parse cache."""
        return self._session

    @property
    def closed(self) -> bool:
        return self._session.closed

    @property
    def autocommit(self) -> bool:
        return self._session.scope.autocommit

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        """Turning autocommit on commits the open transaction (as sqlite3 does)."""
        with self._lock:
            self._check_open()
            value = bool(value)
            if value and not self._session.scope.autocommit:
                self.commit()
            self._session.scope.autocommit = value

    @property
    def isolation_level(self) -> str:
        """"SNAPSHOT" or "SERIALIZABLE": the level of the transactions begun from now on."""
        return self._session.scope.isolation.value

    @isolation_level.setter
    def isolation_level(self, value: str | None) -> None:
        with self._lock:
            self._check_open()
            with translate_errors():
                isolation = Isolation.parse(value)
            if self._session.scope.has_writes:
                raise errors.ProgrammingError(
                    "cannot change the isolation level while a transaction has uncommitted changes"
                )
            self._session.scope.isolation = isolation

    @property
    def read_only(self) -> bool:
        """True when the connection reads a fixed version (``version=``)."""
        return self._session.read_only

    @property
    def version(self) -> int | None:
        """The version a time travel connection reads; None for a writable connection."""
        return self._session.version

    @property
    def lakehouse(self) -> LakehouseCatalog:
        """The catalog API of the lakehouse (for programs that want objects, not SQL)."""
        self._check_open()
        return self._session.lakehouse

    @property
    def in_transaction(self) -> bool:
        """True while a transaction holds uncommitted changes."""
        return self._session.scope.has_writes

    @property
    def current_namespace(self) -> str | None:
        """The namespace chosen by USE (None: unqualified names are in "default")."""
        return self._session.current_namespace

    # -- PEP 249 --------------------------------------------------------------------------

    def cursor(self) -> Cursor:
        with self._lock:
            self._check_open()
            cursor = Cursor(self, self._session)
            self._cursors.add(cursor)
            return cursor

    def commit(self) -> None:
        """Publish the transaction's writes as a new version (nothing to do without
        writes). Appends are run again on a newer version when another writer committed
        to their table first (CN7); any other conflicting concurrent commit raises
        SerializationError, and the transaction is then discarded."""
        self._session.commit()

    def rollback(self) -> None:
        """Discard the transaction's writes."""
        self._session.rollback()

    def close(self) -> None:
        """Discard any uncommitted work and close. Closing twice raises InterfaceError."""
        with self._lock:
            self._check_open()
            for cursor in list(self._cursors):
                cursor.detach()
            self._session.close()

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
        self.control.timeout_s = positive(value, "statement_timeout", float)

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
        if self.closed:
            return
        try:
            if exc_type is None:
                self.commit()
            else:
                self.rollback()
        finally:
            self.close()

    def iceberg_catalog(self, name: str = "trinitylake", **properties: str) -> Any:
        """A PyIceberg catalog (:class:`trinitylake_dbapi.iceberg.TrinityLakeCatalog`)
        bound to this connection's transaction: its commits join the transaction's SQL
        DDL and publish together at ``commit()`` (or at once, under autocommit).
        ``properties`` are PyIceberg's (e.g. ``warehouse``).

        The catalog holds the connection's session (its lakehouse and transaction), so
        ``connect(lake).iceberg_catalog()`` is a catalog that works; the session holds
        it only weakly (no reference cycle), and returns the same one while it lives."""
        return self._session.iceberg_catalog(name, properties)

    # -- internals ------------------------------------------------------------------------

    def _check_open(self) -> None:
        self._session.check_open()

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("read-only" if self.read_only else "open")
        return f"<trinitylake_dbapi.Connection {self.location!r} {state}>"
