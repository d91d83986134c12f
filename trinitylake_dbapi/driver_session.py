"""The session below a PEP 249 connection: what its statements run on (issue 33 item 6).

A :class:`DriverSession` owns everything a connection's statements need, and builds it:
the open lakehouse, the transaction and its rules (an
:class:`~trinitylake_dbapi.catalog.session_scope.SessionScope`), the engines (the DuckDB
engine of data statements, the Iceberg table states with their FileIO, the PyIceberg
catalog SQL writes through) and the parse cache. It is the
:class:`~trinitylake_dbapi.sql.session.Session` the SQL layer sees. The connection
(:mod:`trinitylake_dbapi.connection`) is the PEP 249 surface over it, and the cursor runs
statements on it.

Ownership (who builds and holds what):

  DS1. The session builds and holds the lakehouse, the scope, the statement control, the
      DuckDB engine (made by the first data statement), the table states and their
      FileIO (made when first needed), and the statement catalog (CN5); closing the
      session closes each of them, once.
  DS2. Lower layers receive what they need and never call up: the Iceberg catalog bound
      to a connection gets the lakehouse, the scope and the table states; the SQL layer
      gets the session (its Session protocol); none of them imports or holds the
      connection or the session's module.
  DS3. The parse cache is process-wide (statements are parsed once for every connection
      of the process, as SQLAlchemy's pool opens many), read and written under one lock;
      its parsed trees are shared, so nothing may mutate them (binding works on a copy).
"""

from __future__ import annotations

import random
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable

from trinitylake_dbapi import errors
from trinitylake_dbapi.catalog import CatalogTransaction, LakehouseCatalog
from trinitylake_dbapi.catalog.session_scope import SessionScope
from trinitylake_dbapi.sql.control import DEFAULT_MAX_QUERY_ROWS, StatementControl
from trinitylake_dbapi.sql.plain import PlainStatement
from trinitylake_dbapi.sql.registry import run as run_statement_kind
from trinitylake_dbapi.sql.session import Result
from trinitylake_dbapi.transaction import Isolation
from trinitylake_dbapi.translation import raise_translated, translate_errors

if TYPE_CHECKING:  # sqlglot is imported by the parser, not by the plain statements (sql.plain)
    from sqlglot import exp

__all__ = ["DriverSession", "STATEMENT_ATTEMPTS", "parse", "parse_marked", "positive"]

#: CN6: runs of one autocommit statement that lost to concurrent writers, at most.
STATEMENT_ATTEMPTS = 32


def positive(value: Any, name: str, kind: type) -> Any:
    """``value`` as a positive ``kind`` (None stays None); ProgrammingError otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int) or value <= 0:
        raise errors.ProgrammingError(f"{name} must be a positive {kind.__name__} or None, not {value!r}")
    return kind(value)


# DS3: parsed statements (and whether they may hold parameter markers), by text, least
# recently used first. They are shared, so nothing may mutate them: binding works on a
# copy, and a statement without markers runs as it is.
_PARSED: dict[str, tuple[exp.Expr, bool]] = {}
_PARSED_MAX = 512
# Texts parsed once and not kept. A statement is cached the second time its text is
# seen: a syntax tree is a few hundred objects with reference cycles, and keeping the
# tree of every one-off statement (each CREATE TABLE of a script) makes the garbage
# collector walk them again and again, which costs more than parsing (measured: +150 us
# per CREATE TABLE of 10 columns). Strings are not tracked by the collector.
_SEEN: dict[str, None] = {}
_SEEN_MAX = 4096
# Cursors of several threads and sessions share both caches.
_CACHE_LOCK = threading.Lock()


def parse_marked(sql: str) -> tuple[exp.Expr, bool]:
    """:func:`trinitylake_dbapi.sql.dialect.parse_marked`, imported when first needed:
    the parser and the binder import sqlglot, which a process that runs only plain
    statements (sql.plain) never does."""
    from trinitylake_dbapi.sql.dialect import parse_marked as parse_text

    return parse_text(sql)


def parse(sql: str) -> tuple[exp.Expr, bool]:
    """One statement of ``sql`` parsed with the TrinityLake dialect, and whether it may
    hold parameter markers, from the shared cache (DS3)."""
    with _CACHE_LOCK:
        parsed = _PARSED.pop(sql, None)
    cached = parsed is not None
    if not cached:
        parsed = parse_marked(sql)  # outside the lock: threads parse in parallel
    with _CACHE_LOCK:
        if not cached and sql not in _SEEN:
            if len(_SEEN) >= _SEEN_MAX:
                _SEEN.clear()
            _SEEN[sql] = None
            return parsed
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.pop(next(iter(_PARSED)), None)
        _PARSED[sql] = parsed  # (again) the most recently used
    return parsed


def commit_replaying(
    txn: CatalogTransaction, begin: Callable[[], CatalogTransaction], writes: list[Any], replayable: bool
) -> None:
    """CN7: commit ``txn`` whose writes include the Iceberg catalog's ``writes``, running
    them again on a newer version if it loses a race (iceberg.catalog P4); an append that
    no longer holds there is SerializationError. Imported here, when a transaction holds
    such writes, so the catalog-only path never imports PyIceberg."""
    from pyiceberg.exceptions import CommitFailedException

    from trinitylake_dbapi.iceberg.scope import commit_replaying as commit

    try:
        commit(txn, begin, writes, replayable)
    except CommitFailedException as e:  # an append that no longer holds on the latest version
        raise errors.SerializationError(f"the transaction was not committed: {e}") from e


class DriverSession:
    """What one connection's statements run on (see the module docstring)."""

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
        #: Cancellation, timeout and row limit of this session's statements (sql.control).
        self.control = StatementControl(
            positive(statement_timeout, "statement_timeout", float),
            positive(max_query_rows, "max_query_rows", int) or DEFAULT_MAX_QUERY_ROWS,
        )
        with translate_errors():
            isolation = Isolation.parse(isolation_level)
            if version is not None and (isinstance(version, bool) or not isinstance(version, (int, str))):
                raise errors.ProgrammingError(
                    f"version must be a version number or a snapshot name, not {version!r}"
                )
            if memory_limit is not None:
                from trinitylake_dbapi.sql.query import check_memory_limit

                check_memory_limit(memory_limit)
            lakehouse = LakehouseCatalog(
                location, create=create, lakehouse_options=lakehouse_options,
                storage_options=storage_options,
            )  # fmt: skip
            try:
                pinned = None if version is None else lakehouse.resolve_version(version)
            except BaseException:
                lakehouse.close()
                raise
        self.location = location
        self.lakehouse = lakehouse
        #: The transaction and its rules, shared with the bound Iceberg catalogs (DS2).
        self.scope = SessionScope(lakehouse, isolation=isolation, version=pinned, autocommit=bool(autocommit))
        #: The lock of every operation on the transaction (connection CN1).
        self.lock = self.scope.lock
        self._memory_limit = memory_limit
        self._engine: Any = None
        self._table_states: Any = None
        #: The catalog SQL statements use, for the session's lifetime (CN5).
        self._statement_catalog: Any = None
        #: The connection's Iceberg catalog while someone references it (CN5).
        self._iceberg: weakref.ref[Any] | None = None
        #: The namespace chosen by USE (None: unqualified names are in "default").
        self.current_namespace: str | None = None

    # -- state ------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.scope.closed

    @property
    def read_only(self) -> bool:
        """True when the session reads a fixed version (``version=``)."""
        return self.scope.version is not None

    @property
    def version(self) -> int | None:
        return self.scope.version

    def check_open(self) -> None:
        self.scope.check_open()

    # -- the Session of sql (sql.session.Session) ---------------------------------------------

    def transaction(self) -> CatalogTransaction:
        return self.scope.transaction()

    def begin(self, isolation: str | None) -> None:
        self.scope.begin(isolation)

    def commit(self) -> None:
        """Publish the transaction's writes as a new version; appends are run again on a
        newer version when another writer committed to their table first (CN7)."""
        with self.lock:
            self.check_open()
            txn = self.scope.take()
            if txn is not None:
                due = self.scope.deferred_compactions(txn)
                with translate_errors():
                    self.scope.commit(txn, commit_replaying)
                if due and not self.read_only:
                    self._compact_after_commit(due)
            else:
                self.scope.forget_replay()

    def _compact_after_commit(self, tables: list[tuple[str, str]]) -> None:
        """iceberg.compaction CP6 (session_scope SS4): the tables the committed
        transaction found due are compacted, each as its own version, if still due on
        the latest version. Never an error of the commit: a compaction that loses to
        another writer, or fails otherwise, is skipped (the next commit checks again)."""
        from trinitylake_dbapi.iceberg.compaction import auto_compact

        with self.scope.own_versions():
            for table in tables:
                try:
                    auto_compact(self.statement_catalog().load_table(table))
                except Exception:  # noqa: BLE001 - CP6: the transaction committed
                    continue

    def rollback(self) -> None:
        """Discard the transaction's writes."""
        with self.lock:
            self.scope.forget_replay()
            self.check_open()
            txn = self.scope.take()
            if txn is not None:
                with translate_errors():
                    txn.rollback()

    def use(self, namespace: str) -> None:
        self.current_namespace = namespace

    def before_lakehouse_operation(self, title: str) -> None:
        self.scope.before_lakehouse_operation(title)

    def table_states(self) -> Any:
        """The Iceberg states of this lakehouse's tables, shared by SQL DDL and the
        session's Iceberg catalogs (made when first needed: it imports PyIceberg's
        table model, not its data path); their FileIO is made by the first read."""
        if self._table_states is None:
            from trinitylake_dbapi.iceberg.tables import TableStates

            storage_options = self.lakehouse.storage_options
            root_uri = self.lakehouse.storage.root_uri  # not self: the closure must not hold it
            made: list[Any] = []

            def file_io() -> Any:
                if not made:
                    from trinitylake_dbapi.iceberg.io import DurableFileIO, file_io_properties

                    made.append(DurableFileIO(file_io_properties(storage_options, root_uri)))
                return made[0]

            self._table_states = TableStates(root_uri, None, file_io)
        return self._table_states

    def statement_catalog(self) -> Any:
        """The PyIceberg catalog SQL statements write through (CN5): bound to this
        session's scope, made once and kept for the session's lifetime."""
        with self.lock:
            self.check_open()
            if self._statement_catalog is None:
                from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

                self._statement_catalog = TrinityLakeCatalog.bound(
                    "trinitylake", self.lakehouse, self.scope, read_only=self.read_only,
                    tables=self.table_states(),
                )  # fmt: skip
            return self._statement_catalog

    def iceberg_catalog(self, name: str, properties: dict[str, str]) -> Any:
        """A PyIceberg catalog bound to the session's scope (CN5): the same one while it
        lives, unless ``properties`` ask for another; held weakly here."""
        with self.lock:
            self.check_open()
            catalog = self._iceberg() if self._iceberg is not None and not properties else None
            if catalog is None:
                from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

                catalog = TrinityLakeCatalog.bound(
                    name, self.lakehouse, self.scope, read_only=self.read_only,
                    tables=None if properties else self.table_states(), **properties,
                )  # fmt: skip
                if not properties:
                    self._iceberg = weakref.ref(catalog)
            return catalog

    def data_engine(self) -> Any:
        """The DuckDB engine of this session's data statements
        (:class:`trinitylake_dbapi.sql.query.Engine`), made by the first one."""
        if self._engine is None:
            from trinitylake_dbapi.sql.query import Engine

            storage = self.lakehouse.storage
            self._engine = Engine(
                filesystem=storage.duckdb_filesystem, memory_limit=self._memory_limit, allowed=[storage.root_uri]
            )
        return self._engine

    # -- statements ---------------------------------------------------------------------------

    def parse(self, sql: str) -> tuple[exp.Expr, bool]:
        """``sql`` parsed, from the shared parse cache (DS3)."""
        return parse(sql)

    def run_statement(self, statement: Any, parameter_rows: Any = None) -> Result:
        """Run one parsed and bound statement, or a recognised plain one (sql.plain),
        under the transaction rules (CN1, CN6); what a Cursor calls for ``execute``
        (and, with ``parameter_rows``, for the ``executemany`` of a bulk INSERT)."""
        scope = self.scope
        with self.lock:
            self.check_open()
            self.control.start()
            began_on_its_own = scope.commits_each_statement  # CN6: not a COMMIT ending a BEGIN
            try:
                with scope.statement():
                    for attempt in range(STATEMENT_ATTEMPTS):
                        scope.start_attempt()
                        try:
                            return scope.run_work(lambda: self._execute(statement, parameter_rows))
                        except errors.SerializationError:
                            if not (began_on_its_own and scope.may_run_again()) or attempt == STATEMENT_ATTEMPTS - 1:
                                raise
                        time.sleep(min(0.2, 0.002 * 2**attempt) * random.random())  # CN6
                    raise AssertionError("unreachable")  # pragma: no cover
            except BaseException as e:
                raise_translated(e)
            finally:
                self.control.finish()

    def _execute(self, statement: Any, parameter_rows: Any) -> Result:
        if isinstance(statement, PlainStatement):  # recognised without the parser (sql.plain)
            return run_statement_kind(statement.kind, statement, self)
        from trinitylake_dbapi.sql.execute import execute  # sqlglot: not for plain statements

        return execute(statement, self, parameter_rows)

    def close(self) -> None:
        """DS1: discard the open transaction and close the engine and the lakehouse."""
        with self.lock:
            self.check_open()
            self._statement_catalog = None
            engine, self._engine = self._engine, None
            with translate_errors():
                try:
                    self.scope.close()
                finally:
                    try:
                        if engine is not None:
                            engine.close()
                    finally:
                        self.lakehouse.close()
