"""What a statement needs from its connection, and how it reads.

:class:`Session` is the connection's side of a statement (its transaction, its
lakehouse, its current namespace, its Iceberg catalog and data engine), which the
driver's session (trinitylake_dbapi.driver_session) provides; :class:`Result`
is what a statement gives back. Catalog statements (:mod:`.execute`) and data statements
(:mod:`.query`) share the helpers here: how a table name resolves, how a time travel
clause becomes a read-only catalog at a version, how a timestamp becomes milliseconds.

Names: an unqualified table name is in the session's current namespace (``USE``), or in
``default`` when none was chosen. Timestamps (``FOR SYSTEM_TIME AS OF``, ``EXPIRE
VERSIONS OLDER THAN``) are ISO strings, ``TIMESTAMP '...'`` literals, datetime/date
parameters or numbers of milliseconds since the epoch; one without a zone is UTC.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from trinitylake_dbapi.catalog import DEFAULT_NAMESPACE, CatalogTransaction, LakehouseCatalog
from trinitylake_dbapi.errors import NotSupportedError, ProgrammingError, ReadOnlyError
from trinitylake_dbapi.sql.control import StatementControl

if TYPE_CHECKING:  # sqlglot is imported by the parser, not by the plain statements (sql.plain)
    from sqlglot import exp

__all__ = [
    "SYSTEM_SCHEMAS",
    "where_conjuncts",
    "QueryShape",
    "is_cte_reference",
    "Session",
    "Result",
    "RowStream",
    "EMPTY_RESULT",
    "rows_result",
    "show_value",
    "to_millis",
    "millis_to_naive",
    "table_name",
    "resolve_table",
    "refuse_write",
    "reading",
    "time_travel",
]


#: The namespaces of the system tables (sql.system_tables), which no user table is in.
SYSTEM_SCHEMAS = frozenset({"information_schema", "system"})


class Session(Protocol):
    """What statements need from the connection."""

    lakehouse: LakehouseCatalog
    #: True for a connection opened at a fixed version (time travel).
    read_only: bool
    #: Set by USE; None until then.
    current_namespace: str | None
    #: Cancellation, timeout and row limit of the running statement (sql.control).
    control: StatementControl

    def transaction(self) -> CatalogTransaction:
        """The current transaction, begun when first needed."""

    def begin(self, isolation: str | None) -> None:
        """BEGIN / START TRANSACTION."""

    def commit(self) -> None:
        """COMMIT."""

    def rollback(self) -> None:
        """ROLLBACK."""

    def use(self, namespace: str) -> None:
        """USE (the namespace exists)."""

    def before_lakehouse_operation(self, title: str) -> None:
        """Called before a statement that commits on its own (ROLLBACK TO VERSION, EXPORT
        SNAPSHOT, EXPIRE VERSIONS); refuses while the transaction has uncommitted writes."""

    def table_states(self) -> Any:
        """The Iceberg states of the lakehouse's tables
        (:class:`trinitylake_dbapi.iceberg.tables.TableStates`), made when first needed."""

    def statement_catalog(self) -> Any:
        """The PyIceberg catalog bound to this session's transaction that statements
        write through (:class:`trinitylake_dbapi.iceberg.TrinityLakeCatalog`), kept for
        the session's lifetime."""

    def data_engine(self) -> Any:
        """The DuckDB engine that runs data statements (:class:`.query.Engine`), made
        when first needed."""


class RowStream(Protocol):
    """Rows of a result produced while they are fetched (a data query's batches)."""

    def fetch(self, count: int | None) -> list[tuple]:
        """Up to ``count`` more rows (all that remain for None); [] at the end."""

    def close(self) -> None:
        """Stop producing rows and release what the stream holds. Idempotent."""


@dataclass
class Result:
    """A statement's outcome: ``columns`` (name, type kind), or (name, "decimal",
    precision, scale) for a decimal column whose precision is known, is None when the
    statement returns no result set. A result set is either ``rows``, in memory, or
    ``stream``, produced while fetched (then ``rowcount`` is -1: not known in advance)."""

    columns: tuple[tuple[Any, ...], ...] | None = None
    rows: list[tuple] = field(default_factory=list)
    rowcount: int = -1
    stream: RowStream | None = None


def rows_result(columns: tuple[tuple[str, str], ...], rows: list[tuple]) -> Result:
    """A result set held in memory."""
    return Result(columns, rows, len(rows))


#: The outcome of a statement without a result set.
EMPTY_RESULT = Result()


def show_value(value: Any) -> str:
    """A bound value as an error message shows it."""
    return "NULL" if value is None else repr(value)


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)


def millis_to_naive(millis: int) -> dt.datetime:
    """Milliseconds since the epoch as a naive UTC datetime (how timestamps are shown)."""
    return _EPOCH_NAIVE + dt.timedelta(milliseconds=millis)


def to_millis(value: Any, what: str) -> int:
    """Milliseconds since the epoch of a timestamp value (naive = UTC)."""
    if isinstance(value, bool):
        raise ProgrammingError(f"{what} must be a timestamp, not {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            raise ProgrammingError(
                f"{what}: {value!r} is not a timestamp; write e.g. '2024-05-01 12:00:00' (UTC)"
            ) from None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return (value - _EPOCH) // dt.timedelta(milliseconds=1)
    if isinstance(value, dt.date):
        return to_millis(dt.datetime(value.year, value.month, value.day), what)
    raise ProgrammingError(f"{what} must be a timestamp, not {show_value(value)}")


def where_conjuncts(where: exp.Expr | None) -> list[exp.Expr]:
    """The conditions AND-ed at the top of a WHERE clause (through parentheses)."""
    from sqlglot import exp

    found, stack = [], [] if where is None else [where.this]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.And):
            stack.extend((node.left, node.right))
        elif isinstance(node, exp.Paren):
            stack.append(node.this)
        else:
            found.append(node)
    return found


def _with_of(node: exp.Expr) -> exp.With | None:
    """The WITH clause a query, set operation or DML statement carries (sqlglot names
    its argument ``with_``, before 30 ``with``)."""
    return node.args.get("with_") or node.args.get("with")


def is_cte_reference(node: exp.Table) -> bool:
    """Whether a table reference names a CTE in its scope (QX1 in sql.query): an
    unqualified name equal (ignoring case, as DuckDB does) to a CTE of a WITH whose
    body holds the reference, or, inside a CTE's own definition, to an earlier CTE of
    the same WITH (or to itself when the WITH is RECURSIVE). A name is never taken for a
    CTE outside that scope: a CTE of a subquery, of another branch of a set operation
    or defined later in the list does not count. When in doubt the answer is no, and
    the name must then be a lakehouse or system table."""
    from sqlglot import exp

    if not node.name or node.args.get("db") is not None or node.args.get("catalog") is not None:
        return False
    if not isinstance(node.this, exp.Identifier):
        return False
    name = node.name.lower()
    child: exp.Expr = node
    parent = node.parent
    while parent is not None:
        if isinstance(parent, exp.CTE) and isinstance(parent.parent, exp.With):
            clause = parent.parent
            for cte in clause.expressions:
                if cte is parent and not clause.args.get("recursive"):
                    break
                if cte.alias_or_name.lower() == name:
                    return True
                if cte is parent:
                    break
            # the WITH's owner: its body (where all of the list is visible) is not where we are
            child, parent = clause, clause.parent
            continue
        clause = _with_of(parent)
        if clause is not None and child is not clause:
            if any(cte.alias_or_name.lower() == name for cte in clause.expressions):
                return True
        child, parent = parent, parent.parent
    return False


@dataclass(frozen=True)
class QueryShape:
    """What a query's tree holds, from one walk of it (each ``find`` walks the whole
    tree again, and choosing where a SELECT runs, then answering it over the system
    tables, asks a dozen questions of it): the node types present, the table
    references in walk order, and which of them name a CTE in their scope
    (:func:`is_cte_reference`)."""

    types: frozenset[type]
    tables: tuple[exp.Table, ...]
    #: ``id()`` of the references in ``tables`` that name a CTE in their scope.
    cte_references: frozenset[int]

    @classmethod
    def of(cls, query: exp.Expr) -> QueryShape:
        from sqlglot import exp

        types: set[type] = set()
        tables: list[exp.Table] = []
        for node in query.walk():
            types.add(type(node))
            if isinstance(node, exp.Table):
                tables.append(node)
        ctes = frozenset(id(t) for t in tables if exp.CTE in types and is_cte_reference(t))
        return cls(frozenset(types), tuple(tables), ctes)

    def has(self, *classes: type) -> bool:
        """Whether a node of one of ``classes`` (or of a subclass) is in the tree, as
        ``query.find(*classes) is not None`` says."""
        return any(issubclass(kind, classes) for kind in self.types)

    def is_cte(self, node: exp.Table) -> bool:
        """Whether ``node``, one of ``tables``, names a CTE in its scope."""
        return id(node) in self.cte_references


def table_name(session: Session, node: exp.Table) -> tuple[str, str]:
    """(namespace, name) of a table reference (see the module docstring)."""
    return resolve_table(session, node.text("db"), node.name)


def resolve_table(session: Session, namespace: str | None, name: str) -> tuple[str, str]:
    """(namespace, name) of a table named ``name`` in ``namespace``, or unqualified
    (None or ""): in the session's current namespace, else in ``default``."""
    return namespace or session.current_namespace or DEFAULT_NAMESPACE, name


def refuse_write(session: Session, title: str) -> None:
    """Raise ReadOnlyError for a statement that writes (``title``, e.g. "DROP TABLE")
    on a read-only session, before anything is touched."""
    if session.read_only:
        raise ReadOnlyError(
            f"{title} refused: this connection reads a fixed version (time travel) and is read-only"
        )


class reading:
    """``with reading(session, version) as catalog``: the catalog a read sees, the
    transaction or a read-only one at the version of a time travel clause (released
    afterwards). A class, not a generator: it is on the path of every read."""

    __slots__ = ("_session", "_version", "_owned")

    def __init__(self, session: Session, version: exp.Version | None) -> None:
        self._session = session
        self._version = version
        self._owned: CatalogTransaction | None = None

    def __enter__(self) -> CatalogTransaction:
        if self._version is None:
            return self._session.transaction()
        self._owned = time_travel(self._session, self._version)
        return self._owned

    def __exit__(self, *exc: Any) -> None:
        if self._owned is not None:
            self._owned.rollback()


def time_travel(session: Session, version: exp.Version) -> CatalogTransaction:
    """A read-only catalog at the version a ``FOR SYSTEM_VERSION | SYSTEM_TIME AS OF``
    clause names; the caller rolls it back when done."""
    from trinitylake_dbapi.sql.binding import constant

    if version.args.get("kind") != "AS OF":
        raise NotSupportedError("only FOR SYSTEM_VERSION/SYSTEM_TIME AS OF is supported")
    if version.this == "VERSION":
        value = constant(version.expression, "FOR SYSTEM_VERSION AS OF")
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ProgrammingError(
                "FOR SYSTEM_VERSION AS OF takes a version number or a snapshot name, "
                f"not {show_value(value)}"
            )
        return session.lakehouse.begin(version=value)
    value = constant(version.expression, "FOR SYSTEM_TIME AS OF")
    millis = to_millis(value, "FOR SYSTEM_TIME AS OF")
    return session.lakehouse.begin(version=session.lakehouse.version_at(millis))
