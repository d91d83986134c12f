"""SELECT over the system tables, run by sqlglot's Python executor.

System tables (names case-insensitive): the catalog views of :mod:`trinitylake_dbapi.views`
(their one definition, rows and values) as SQL presents them (views CV2-CV4):

``information_schema.schemata``
    catalog_name, schema_name, schema_owner (always NULL), comment
``information_schema.tables``
    table_catalog, table_schema, table_name, table_type (``BASE TABLE``), table_kind
    (``MANAGED`` | ``EXTERNAL``), table_format, location, comment
``information_schema.columns`` (top-level columns only)
    table_catalog, table_schema, table_name, column_name, ordinal_position (1-based),
    column_default (NULL), is_nullable (``YES`` | ``NO``), data_type (canonical type
    text, e.g. ``varchar(20)``, ``list<int4>``), character_maximum_length,
    numeric_precision, numeric_scale, datetime_precision, comment,
    primary_key_position (1-based position in the primary key, NULL if not in it)
``system.versions``
    version, created_at (UTC, without time zone), previous_version,
    rollback_from_version, changes (comma separated, e.g. ``namespace ns, table ns.t``)

Each referenced system table is built only when a query names it, as prebuilt
``sqlglot.executor.table.Table`` objects with an explicit schema (NOTES: fast, and empty
tables keep their columns). A time travel clause applies per table, so one query can
compare two versions. Simple ``table_schema = '..'`` / ``table_name = '..'`` conditions
in a single-table WHERE are used to read fewer table definitions; the executor still
applies the whole WHERE. A single-table query over ``information_schema.tables`` that
names no column but table_catalog, table_schema and table_name (``SELECT table_name ...
WHERE table_schema = 'ns'``, SQLAlchemy's get_table_names, a BI tool's table list) reads
no table definition at all: the names come from the catalog's keys (300 tables: 5 ms ->
0.3 ms).

The most common catalog query of BI tools and SQLAlchemy inspectors, one system table's
columns filtered by equalities (``SELECT column_name, data_type FROM
information_schema.columns WHERE table_schema = 'ns' AND table_name = 't'``), is answered
directly (:func:`_plain_lookup`), as is the same with an ORDER BY of columns (``ORDER
BY ordinal_position``): sqlglot's optimizer took about two thirds of such a
query's time. It gives exactly what the executor would (tests/sql/test_system_fast_path.py
compares both on generated queries); anything else goes to the executor.

User tables hold no rows here (TrinityLake stores definitions; the data lives in the
table format): selecting from one raises NotSupportedError, or ObjectNotFoundError when
it does not exist. A query without tables (``SELECT 1``) works.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from sqlglot import exp
from sqlglot.errors import ExecuteError, OptimizeError, SqlglotError
from sqlglot.executor.python import PythonExecutor
from sqlglot.executor.table import Table, ensure_tables
from sqlglot.optimizer import optimize
from sqlglot.planner import Plan
from sqlglot.schema import ensure_schema

from trinitylake_dbapi.sql.compat import DType, executor_compat
from trinitylake_dbapi.catalog import CatalogTransaction, LakehouseCatalog
from trinitylake_dbapi.errors import (
    InvalidDefinitionError,
    NotSupportedError,
    ObjectNotFoundError,
    ProgrammingError,
    QueryCanceledError,
    QueryTooLargeError,
)
from trinitylake_dbapi.format.types import canonical_kind
from trinitylake_dbapi import views
from trinitylake_dbapi.sql.columns import DTYPE_NAMES
from trinitylake_dbapi.sql.control import StatementControl
from trinitylake_dbapi.sql.dialect import TrinityLake
from trinitylake_dbapi.sql.session import SYSTEM_SCHEMAS, QueryShape, where_conjuncts

__all__ = ["SYSTEM_TABLES", "CATALOG_NAME", "QueryResult", "run_query", "millis_to_datetime"]

#: The catalog name shown in information_schema (views.CATALOG_NAME).
CATALOG_NAME = views.CATALOG_NAME

#: Type kind -> the type name given to sqlglot's optimizer.
_SQLGLOT_TYPES = {"varchar": "varchar", "int4": "int", "int8": "bigint", "boolean": "boolean",
                  "timestamp": "timestamp"}  # fmt: skip


@dataclass(frozen=True)
class SystemTable:
    columns: tuple[tuple[str, str], ...]  # (name, type kind)
    # (catalog, lakehouse, scope) -> rows: at least every row the query's WHERE keeps
    build: Callable[[CatalogTransaction, LakehouseCatalog, "Scope"], list[tuple]]


@dataclass(frozen=True)
class Scope:
    """What a query needs of one system table, pushed down into building it (the
    executor still applies the whole query): equality filters on names, the range of
    ``version`` values, how many rows are enough (only when nothing else filters or
    orders them), and the statement's control (CT1, CT2)."""

    filters: dict[str, str]
    versions: tuple[int | None, int | None] = (None, None)  # inclusive bounds
    limit: int | None = None
    control: StatementControl = dataclasses.field(default_factory=StatementControl)
    #: The lower-cased names of every column the query names, None when it may read any
    #: (``*``, or not a single-table query).
    columns: frozenset[str] | None = None


def millis_to_datetime(millis: int) -> dt.datetime:
    """Milliseconds since the epoch as a naive UTC datetime (how timestamps are shown)."""
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=millis)


def _namespaces(catalog: CatalogTransaction, filters: dict[str, str]) -> list[str]:
    wanted = filters.get("schema_name") or filters.get("table_schema")
    if wanted is not None:
        try:
            return [wanted] if catalog.namespace_exists(wanted) else []
        except ProgrammingError:  # not a valid name: nothing can match
            return []
    return catalog.list_namespaces()


def _tables(catalog: CatalogTransaction, filters: dict[str, str]) -> list[tuple[str, str]]:
    found = []
    for ns in _namespaces(catalog, filters):
        wanted = filters.get("table_name")
        if wanted is not None:
            try:
                if catalog.table_exists(ns, wanted):
                    found.append((ns, wanted))
            except ProgrammingError:
                pass
        else:
            found.extend(catalog.list_tables(ns))
    return found


def _schemata(
    catalog: CatalogTransaction, lakehouse: LakehouseCatalog, scope: Scope
) -> list[tuple]:
    rows = []
    for ns in _namespaces(catalog, scope.filters):
        scope.control.check()
        rows.append(views.namespace_row(catalog.describe_namespace(ns)))
    return views.sql_rows(views.SQL[("information_schema", "schemata")], rows)


def _tables_rows(
    catalog: CatalogTransaction, lakehouse: LakehouseCatalog, scope: Scope
) -> list[tuple]:
    rows = []
    names_only = scope.columns is not None and scope.columns <= _TABLE_NAME_COLUMNS
    for ns, name in _tables(catalog, scope.filters):
        scope.control.check()
        rows.append(views.table_name_row(ns, name) if names_only else views.table_row(catalog.describe_table(ns, name)))
    return views.sql_rows(views.SQL[("information_schema", "tables")], rows)


#: The columns of information_schema.tables known without reading a table's definition.
_TABLE_NAME_COLUMNS = frozenset({"table_catalog", "table_schema", "table_name"})


def _columns_rows(
    catalog: CatalogTransaction, lakehouse: LakehouseCatalog, scope: Scope
) -> list[tuple]:
    rows = []
    for ns, name in _tables(catalog, scope.filters):
        scope.control.check()
        rows.extend(views.column_rows(catalog.describe_table(ns, name)))
    return views.sql_rows(views.SQL[("information_schema", "columns")], rows)


def _versions_rows(
    catalog: CatalogTransaction, lakehouse: LakehouseCatalog, scope: Scope
) -> list[tuple]:
    """The history as of the catalog's version, lazily (H3): only the roots in the
    ``version`` range are read, and no more than the limit."""
    low, high = scope.versions
    newest = catalog.version if high is None else min(high, catalog.version)
    rows: list[tuple] = []
    if newest < (low or 0):
        return rows
    if not lakehouse.has_version(newest):  # expired: walk down from the catalog's version
        newest = catalog.version
    for v in lakehouse.iter_versions(newest, low or 0):
        if high is not None and v.version > high:
            continue
        if scope.limit is not None and len(rows) >= scope.limit:
            break
        scope.control.check()
        rows.append(views.version_row(v))
        scope.control.check_rows(len(rows), "system.versions")
    return views.sql_rows(views.SQL[("system", "versions")], rows)


#: The system tables: the catalog views as SQL presents them (views CV2), and how to
#: build each one's rows.
SYSTEM_TABLES: dict[tuple[str, str], SystemTable] = {
    key: SystemTable(views.sql_columns(views.SQL[key]), build)
    for key, build in (
        (("information_schema", "schemata"), _schemata),
        (("information_schema", "tables"), _tables_rows),
        (("information_schema", "columns"), _columns_rows),
        (("system", "versions"), _versions_rows),
    )
}
assert SYSTEM_SCHEMAS == frozenset(db for db, _ in SYSTEM_TABLES)


@dataclass(frozen=True)
class QueryResult:
    columns: tuple[tuple[str, str], ...]  # (name, type kind)
    rows: list[tuple]


def _kind_of_type(node: exp.Expr | None) -> str | None:
    if not isinstance(node, exp.DataType) or not isinstance(node.this, DType):
        return None
    name = DTYPE_NAMES.get(node.this)
    if name is None:
        return None
    try:
        return canonical_kind(name, column="")
    except InvalidDefinitionError:
        return None


def _kind_of_value(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int8"
    if isinstance(value, float):
        return "float8"
    if isinstance(value, decimal.Decimal):
        return "decimal"
    if isinstance(value, dt.datetime):
        return "timestamptz" if value.tzinfo else "timestamp"
    if isinstance(value, dt.date):
        return "date"
    if isinstance(value, dt.time):
        return "time"
    if isinstance(value, (bytes, bytearray)):
        return "binary"
    return "varchar"


def _single_table(query: exp.Expr, shape: QueryShape) -> bool:
    return (isinstance(query, exp.Select) and not query.args.get("joins")
            and not query.args.get("with_") and not shape.has(exp.Subquery)
            and len(shape.tables) == 1)  # fmt: skip


def _conjuncts(query: exp.Expr, shape: QueryShape) -> list[exp.Expr]:
    """The conditions AND-ed at the top of a single-table SELECT's WHERE."""
    return where_conjuncts(query.args.get("where")) if _single_table(query, shape) else []


_COMPARISONS = {exp.EQ: "=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_MIRRORED = {"=": "=", ">": "<", ">=": "<=", "<": ">", "<=": ">="}


def _version_bound(node: exp.Expr) -> tuple[int | None, int | None] | None:
    """The inclusive range a condition on ``version`` keeps (``version = 5``, ``< 7``,
    ``BETWEEN 3 AND 9``, with integer literals), or None for any other condition."""
    def literal(n: exp.Expr) -> int | None:
        return int(n.this) if isinstance(n, exp.Literal) and not n.is_string and n.this.isdigit() else None

    def is_version(n: exp.Expr) -> bool:
        return isinstance(n, exp.Column) and n.name.lower() == "version"

    if isinstance(node, exp.Between) and is_version(node.this):
        low, high = literal(node.args["low"]), literal(node.args["high"])
        return None if low is None or high is None else (low, high)
    op = _COMPARISONS.get(type(node))
    if op is None:
        return None
    left, right = node.left, node.right
    if not is_version(left):
        left, right, op = right, left, _MIRRORED[op]
    value = literal(right)
    if not is_version(left) or value is None:
        return None
    return {"=": (value, value), ">": (value + 1, None), ">=": (value, None),
            "<": (None, value - 1), "<=": (None, value)}[op]  # fmt: skip


def _scope(query: exp.Expr, shape: QueryShape, control: StatementControl) -> Scope:
    """What a single-table query lets a system table skip (see Scope)."""
    conditions = _conjuncts(query, shape)
    low: int | None = None
    high: int | None = None
    rest = []
    for node in conditions:
        bound = _version_bound(node)
        if bound is None:
            rest.append(node)
            continue
        if bound[0] is not None:
            low = bound[0] if low is None else max(low, bound[0])
        if bound[1] is not None:
            high = bound[1] if high is None else min(high, bound[1])
    limit = None
    simple = _single_table(query, shape) and not rest and not query.args.get("order") \
        and not query.args.get("group") and not query.args.get("distinct") \
        and not shape.has(exp.AggFunc) and not query.args.get("offset")
    if simple and isinstance(query.args.get("limit"), exp.Limit):
        count = query.args["limit"].expression
        if isinstance(count, exp.Literal) and not count.is_string and count.this.isdigit():
            limit = int(count.this)
    return Scope(_equality_filters(conditions), (low, high), limit, control, _named_columns(query, shape))


def _named_columns(query: exp.Expr, shape: QueryShape) -> frozenset[str] | None:
    """The lower-cased names of the columns a single-table query names anywhere (select
    list, WHERE, ORDER BY, ...); None when it may read others: ``*`` (also in
    ``COUNT(*)``), or not a single table."""
    if not _single_table(query, shape) or shape.has(exp.Star) or shape.tables[0].name.lower() != "tables":
        return None  # (only information_schema.tables uses it)
    return frozenset(node.name.lower() for node in query.find_all(exp.Column))


def _equality_filters(conditions: list[exp.Expr]) -> dict[str, str]:
    """``column = 'text'`` conditions on names among ``conditions``."""
    found: dict[str, str] = {}
    for node in conditions:
        if isinstance(node, exp.EQ):
            left, right = node.left, node.right
            if isinstance(right, exp.Column):
                left, right = right, left
            if (
                isinstance(left, exp.Column)
                and isinstance(right, exp.Literal)
                and right.is_string
                and left.name.lower() in ("schema_name", "table_schema", "table_name")
            ):
                found[left.name.lower()] = right.this
    return found


def run_query(
    query: exp.Expr,
    *,
    catalog_for: Callable[[exp.Version | None], CatalogTransaction],
    lakehouse: LakehouseCatalog,
    resolve_table: Callable[[exp.Table], tuple[str, str]],
    control: StatementControl | None = None,
    shape: QueryShape | None = None,
) -> QueryResult:
    """Run a bound SELECT over the system tables.

    ``catalog_for(version)`` gives the catalog to read for a table's time travel clause
    (None: the current transaction); ``resolve_table`` turns a user table reference into
    (namespace, name) for the error (raising when it does not exist); ``shape``: the
    query's, when the caller has it already.
    """
    control = control if control is not None else StatementControl()
    shape = shape if shape is not None else QueryShape.of(query)
    built: list[tuple[SystemTable, Table]] = []
    scope = _scope(query, shape, control)
    tables: dict[str, dict[str, Table]] = {}
    schema: dict[str, dict[str, dict[str, str]]] = {}
    catalogs: dict[str, CatalogTransaction] = {}
    # The query is not changed (a parsed statement is shared by the cursor's cache): the
    # executor gets a copy whose table references name the tables built here.
    renamed: list[exp.Table | None] = []
    for node in shape.tables:
        renamed.append(None)
        if not node.name:
            raise NotSupportedError(f"unsupported FROM item {node.sql(dialect=TrinityLake)!r}")
        db = node.text("db").lower()
        if shape.is_cte(node):
            continue
        if node.args.get("catalog"):
            raise ProgrammingError(
                f"table {node.sql(dialect=TrinityLake)!r}: names have at most two parts"
            )
        key = (db, node.name.lower())
        spec = SYSTEM_TABLES.get(key)
        if spec is None:
            if db in SYSTEM_SCHEMAS:
                names = ", ".join(f"{d}.{n}" for d, n in SYSTEM_TABLES)
                raise ObjectNotFoundError(
                    f"system table {db}.{node.name.lower()} does not exist; the system "
                    f"tables are {names}"
                )
            namespace, name = resolve_table(node)
            raise NotSupportedError(
                f"cannot read rows of table {namespace!r}.{name!r}: TrinityLake SQL "
                "queries the catalog; select from information_schema.schemata, "
                "information_schema.tables, information_schema.columns or system.versions"
            )
        version = node.args.get("version")
        version_key = "" if version is None else version.sql(dialect=TrinityLake)
        if version_key not in catalogs:
            catalogs[version_key] = catalog_for(version)
        catalog = catalogs[version_key]
        # One executor table per (system table, version).
        alias_db = db if not version_key else f"{db}_v{list(catalogs).index(version_key)}"
        table_name = key[1]
        if table_name not in tables.get(alias_db, {}):
            rows = spec.build(catalog, lakehouse, scope)
            table = tables.setdefault(alias_db, {})[table_name] = Table([c for c, _ in spec.columns], rows)
            built.append((spec, table))
            schema.setdefault(alias_db, {})[table_name] = {
                c: _SQLGLOT_TYPES[k] for c, k in spec.columns
            }
        alias = node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name))
        renamed[-1] = exp.Table(this=exp.to_identifier(table_name), db=exp.to_identifier(alias_db), alias=alias)
    if len(built) == 1:
        answer = _plain_lookup(query, shape, *built[0])
        if answer is not None:
            control.check()
            return answer
    query = query.copy()
    for node, replacement in zip(list(query.find_all(exp.Table)), renamed):  # the same walk order
        if replacement is not None:
            node.replace(replacement.copy())
    return _execute(query, tables, schema, control)


def _plain_lookup(query: exp.Expr, shape: QueryShape, spec: SystemTable, table: Table) -> QueryResult | None:
    """The result of ``query`` over ``table`` (the rows of the system table ``spec``) when
    the query only projects columns (``*``, ``c``, ``t.c``, ``c AS x``), keeps rows by
    equalities of a column and a literal of its kind (a string for text, digits for an
    integer), AND-ed, and orders them by columns of the table (ASC or DESC) that hold no
    NULL in the kept rows, with at most a LIMIT; None for anything else, which the
    executor answers (errors included: an unknown or quoted upper-case name falls through
    too). The order is the executor's: a stable sort of the rows in the table's order
    (sqlglot's ``Context.sort``), so ties keep that order; NULLs, whose place depends on
    the dialect's null ordering, are left to the executor. SQLAlchemy's inspector and BI
    tools order their catalog queries (``ORDER BY ordinal_position``, ``ORDER BY
    table_name``): the optimizer and executor took ~14 ms of each such query."""
    if not _single_table(query, shape) or any(
        query.args.get(arg) for arg in ("group", "having", "distinct", "offset", "qualify")
    ) or shape.has(exp.AggFunc, exp.Window, exp.CTE, exp.Union):
        return None
    (source,) = shape.tables
    qualifiers = {source.name.lower(), source.alias_or_name.lower()}
    kinds = dict(spec.columns)
    position = {name: i for i, (name, _) in enumerate(spec.columns)}

    def column(node: exp.Expr) -> str | None:
        if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
            return None
        if node.table and node.table.lower() not in qualifiers:
            return None
        ident = node.this
        name = ident.this if ident.quoted else ident.this.lower()
        return name if name in kinds else None

    keep: list[tuple[int, Any]] = []
    for condition in _conjuncts(query, shape):
        if not isinstance(condition, exp.EQ):
            return None
        left, right = condition.left, condition.right
        if isinstance(left, exp.Literal):
            left, right = right, left
        name = column(left)
        if name is None or not isinstance(right, exp.Literal):
            return None
        if kinds[name] == "varchar" and right.is_string:
            keep.append((position[name], right.this))
        elif kinds[name] in ("int4", "int8") and not right.is_string and right.this.isdigit():
            keep.append((position[name], int(right.this)))
        else:
            return None
    out: list[tuple[str, int]] = []
    for select in query.selects:
        if isinstance(select, exp.Star) or (isinstance(select, exp.Column) and isinstance(select.this, exp.Star)):
            if isinstance(select, exp.Column) and select.table and select.table.lower() not in qualifiers:
                return None
            out.extend((name, position[name]) for name, _ in spec.columns)
            continue
        alias = select.alias if isinstance(select, exp.Alias) and select.alias else None
        name = column(select.this if isinstance(select, exp.Alias) else select)
        if name is None:
            return None
        out.append((alias or name, position[name]))
    # ORDER BY: (column position, descending) per key; a name that is also an output
    # alias (``SELECT a AS b ... ORDER BY b``) or any other expression goes to the executor.
    aliases = {s.alias.lower() for s in query.selects if isinstance(s, exp.Alias) and s.alias}
    order: list[tuple[int, bool]] = []
    ordering = query.args.get("order")
    for key in ordering.expressions if ordering is not None else ():
        if not isinstance(key, exp.Ordered):
            return None
        name = column(key.this)
        if name is None or name.lower() in aliases:
            return None
        order.append((position[name], bool(key.args.get("desc"))))
    limit = None
    if query.args.get("limit") is not None:
        count = query.args["limit"].expression if isinstance(query.args["limit"], exp.Limit) else None
        if not isinstance(count, exp.Literal) or count.is_string or not count.this.isdigit():
            return None
        limit = int(count.this)
    kept: list[tuple] = []
    for row in table.rows:
        if limit is not None and not order and len(kept) >= limit:
            break
        if all(row[i] == value for i, value in keep):
            kept.append(row)
    if order:
        if any(row[i] is None for row in kept for i, _ in order):
            return None
        for i, desc in reversed(order):  # stable sorts, the last key first
            kept.sort(key=lambda row: row[i], reverse=desc)
        if limit is not None:
            kept = kept[:limit]
    rows = [tuple(row[i] for _, i in out) for row in kept]
    return QueryResult(tuple((name, kinds[spec.columns[i][0]]) for name, i in out), rows)


_UNKNOWN_NAME = re.compile(r"name '(\w+)' is not defined")


class _BoundedExecutor(executor_compat(), PythonExecutor):  # type: ignore[misc]
    """sqlglot's executor under the statement's control (sql.control CT1, CT2): checked
    for cancellation between plan steps and every 1,024 joined row pairs, and refused
    before any step's table (or all join output together) exceeds max_query_rows."""

    def __init__(self, control: StatementControl, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._control = control
        self._pairs = 0
        self._joined = 0

    def _join_matches(self, row: Any, condition: Any, condition_context: Any) -> bool:  # type: ignore[override]
        self._pairs += 1
        if not self._pairs & 1023:
            self._control.check()
        if not super()._join_matches(row, condition, condition_context):
            return False
        self._joined += 1
        self._control.check_rows(self._joined, "a join")
        return True

    def _step(self, run: Callable[..., Any], step: Any, context: Any) -> Any:
        self._control.check()
        result = run(step, context)
        for table in result.tables.values():
            self._control.check_rows(len(table.rows), "a step of the query")
        return result

    def scan(self, step: Any, context: Any) -> Any:
        return self._step(super().scan, step, context)

    def join(self, step: Any, context: Any) -> Any:
        return self._step(super().join, step, context)

    def aggregate(self, step: Any, context: Any) -> Any:
        return self._step(super().aggregate, step, context)

    def sort(self, step: Any, context: Any) -> Any:
        return self._step(super().sort, step, context)

    def set_operation(self, step: Any, context: Any) -> Any:
        return self._step(super().set_operation, step, context)


def _execute(
    query: exp.Expr, tables: dict[str, dict[str, Table]], schema: dict[str, Any],
    control: StatementControl,
) -> QueryResult:
    original = query.copy()
    try:
        optimized = optimize(
            query, ensure_schema(schema, dialect=TrinityLake), leave_tables_isolated=True,
            dialect=TrinityLake,
        )  # fmt: skip
        executor = _BoundedExecutor(control, tables=ensure_tables(tables, dialect=TrinityLake))
        result = executor.execute(Plan(optimized))
    except OptimizeError as e:
        raise ProgrammingError(f"cannot run the query: {e}") from None
    except ExecuteError as e:
        if isinstance(e.__cause__, (QueryCanceledError, QueryTooLargeError)):
            raise e.__cause__ from None
        missing = _UNKNOWN_NAME.search(str(e))
        if missing:
            raise NotSupportedError(
                f"cannot run the query: function {missing.group(1)} is not available"
            ) from None
        raise ProgrammingError(f"cannot run the query: {e}") from None
    except SqlglotError as e:
        raise ProgrammingError(f"cannot run the query: {e}") from None
    names = list(result.columns)
    # Keep explicit aliases as written (the optimizer lower-cases identifiers).
    if isinstance(original, exp.Select) and not any(
        isinstance(s, exp.Star) or (isinstance(s, exp.Column) and isinstance(s.this, exp.Star))
        for s in original.selects
    ):
        if len(original.selects) == len(names):
            names = [
                s.alias if isinstance(s, exp.Alias) and s.alias else n
                for s, n in zip(original.selects, names)
            ]
    rows = [tuple(r) for r in result.rows]
    selects = optimized.selects if isinstance(optimized, exp.Query) else []
    columns = []
    for i, name in enumerate(names):
        kind = _kind_of_type(selects[i].type) if i < len(selects) else None
        if kind is None:
            sample = next((r[i] for r in rows if r[i] is not None), None)
            kind = _kind_of_value(sample) if sample is not None else "varchar"
        columns.append((name, kind))
    return QueryResult(tuple(columns), rows)
