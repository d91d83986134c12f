"""Which statements are data statements (run in DuckDB rather than by the catalog's
own executor), and which names and functions a data statement may use.

Rules:

  QX1. Names resolve by scope (docs/security.md): a table reference names a CTE only
      inside that CTE's scope (``sql.session.is_cte_reference``: the body of its WITH,
      the definitions of the CTEs after it in the list, its own under RECURSIVE);
      every other name is a
      lakehouse table, a system table or one of ``TABLE_FUNCTIONS``, else
      ObjectNotFoundError naming it, never a file or URL (DuckDB's replacement scan
      reads any unknown name that looks like one: CSV, TSV, .gz, JSON, NDJSON, Parquet,
      globs, ``s3://`` through the lakehouse's registered filesystem). The functions
      that show the engine (``ENGINE_FUNCTIONS``: settings, environment, the running
      query's text) are refused wherever they appear, and CTE names starting with
      ``__tl_`` (the views of sql.query.views) are reserved.
  Q11. A query over system tables alone means what it would mean joined with a data
      table (issue 33 item 1): the catalog's own executor (sql.system_tables) answers
      it only when it is built of what that executor runs exactly as DuckDB does, rows
      and result types (``EXECUTOR_RUNS``); any other node (a function it lacks or
      types otherwise, such as length() or nullif(), FILTER, windows, date and time,
      decimals) sends it to DuckDB, where the system tables are Arrow views of the
      same version (tests/sql/test_system_meaning.py compares the two).
"""

from __future__ import annotations

import re

from sqlglot import exp

from trinitylake_dbapi.errors import NotSupportedError, ProgrammingError
from trinitylake_dbapi.sql.compat import EXECUTOR_DIFFERS
from trinitylake_dbapi.sql.session import QueryShape, SYSTEM_SCHEMAS


def is_system_table(node: exp.Table) -> bool:
    return node.text("db").lower() in SYSTEM_SCHEMAS


#: Table functions a query may call: they make rows, never read files (Q2: every file a
#: data statement reads is a table's, found through the lakehouse).
TABLE_FUNCTIONS = frozenset({"range", "generate_series"})


#: DuckDB scalar functions that show the engine rather than compute on rows: its
#: settings, environment, variables, logs, the text of the running (rewritten) query,
#: serialized SQL (QX1). Refused wherever they appear, qualified or not.
ENGINE_FUNCTIONS = frozenset({
    "current_setting", "getenv", "getvariable", "current_query", "write_log",
    "parse_duckdb_log_message", "json_serialize_sql", "json_deserialize_sql",
    "json_serialize_plan", "json_execute_serialized_sql",
})  # fmt: skip
#: The prefix of the names of sql.query's views (sql.query.views); no CTE may take such a name.
_VIEW_PREFIX = "__tl_"


def refuse_engine_functions(statement: exp.Expr) -> None:
    """NotSupportedError when ``statement`` calls one of :data:`ENGINE_FUNCTIONS` or
    names a CTE like sql.query's views (QX1)."""
    for node in statement.find_all(exp.Func, exp.CTE):
        if isinstance(node, exp.CTE):
            if node.alias_or_name.lower().startswith(_VIEW_PREFIX):
                raise ProgrammingError(f"CTE name {node.alias_or_name!r}: names starting with {_VIEW_PREFIX} are reserved")
            continue
        name = str(node.this) if isinstance(node, exp.Anonymous) else node.sql_name()
        if name.lower() in ENGINE_FUNCTIONS:
            raise NotSupportedError(f"function {name.lower()}() is not available: it shows the data engine, not data")


def table_function_name(node: exp.Table) -> str | None:
    """The name of the table function a FROM item calls, None for a table name."""
    if isinstance(node.this, exp.Anonymous):
        return str(node.this.this).lower()
    if isinstance(node.this, exp.Func):
        return node.this.sql_name().lower()
    return None


#: What the catalog's own executor (sql.system_tables) cannot run.
_EXECUTOR_CANNOT = (exp.Window, exp.Rollup, exp.Cube, exp.GroupingSets)

#: Q11: the nodes the catalog's own executor runs exactly as DuckDB does (values and
#: result types); a query holding any other runs in DuckDB. (What catalog clients send:
#: SQLAlchemy's reflection, the system tables' fast path, plain filters and listings.)
EXECUTOR_RUNS = frozenset({
    exp.Select, exp.From, exp.Join, exp.Where, exp.Group, exp.Having, exp.Order, exp.Ordered,
    exp.Limit, exp.Offset, exp.Distinct, exp.Union, exp.Intersect, exp.Except, exp.With,
    exp.CTE, exp.Subquery, exp.Table, exp.TableAlias, exp.Identifier, exp.Column, exp.Star,
    exp.Alias, exp.Literal, exp.Null, exp.Boolean, exp.Paren, exp.Tuple, exp.Version,
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is, exp.In, exp.Between,
    exp.Like, exp.ILike, exp.And, exp.Or, exp.Not, exp.Neg, exp.Add, exp.Sub, exp.Mul,
    exp.Div, exp.Mod, exp.DPipe, exp.Count, exp.Min, exp.Max, exp.Sum, exp.Avg, exp.Case,
    exp.If, exp.Coalesce, exp.Upper, exp.Lower, exp.Substring, exp.Trim, exp.Abs,
    exp.Round, exp.Cast, exp.DataType, exp.Concat, exp.Left, exp.Right,
})  # fmt: skip

#: Date and time functions (and intervals): DuckDB runs every query that uses one, so
#: that ``now()``, ``date_trunc``, ``extract``, ``strftime``, ... mean the same with or
#: without a table (the executor lacks most of them and has local-time versions of
#: others). The names of sqlglot's nodes, as far as the installed sqlglot has them.
_TEMPORAL = tuple(
    getattr(exp, name) for name in """
    CurrentDate CurrentDatetime CurrentTime CurrentTimestamp CurrentTimestampLTZ Localtime
    Localtimestamp Date DateTrunc TimestampTrunc TimeTrunc DatetimeTrunc Extract DateDiff
    DateAdd DateSub DatetimeAdd DatetimeSub DatetimeDiff TsOrDsAdd TsOrDsDiff TimestampAdd
    TimestampSub TimestampDiff TimeAdd TimeSub TimeDiff TimeToStr StrToTime StrToDate StrToUnix
    TimeToUnix UnixToTime UnixToStr TimeStrToTime TimeStrToDate DateStrToDate TsOrDsToDate
    TsOrDsToTimestamp Year Quarter Month Week WeekOfYear Day DayOfWeek DayOfWeekIso DayOfMonth
    DayOfYear Hour Minute Second LastDay AddMonths MonthsBetween Interval DateFromParts
    TimestampFromParts MakeInterval UnixSeconds UnixMillis UnixMicros
    """.split() if isinstance(getattr(exp, name, None), type)
)


_TEMPORAL_TYPES = frozenset(("DATE", "TIME", "TIMETZ", "TIMESTAMP", "TIMESTAMPTZ", "DATETIME"))


def _temporal_cast_of_expression(query: exp.Expr) -> bool:
    """Whether the query casts an expression (not a string literal, which is how a
    date or datetime parameter is bound) to a date or time type, or adds or subtracts
    such a value: the executor's casts parse ISO strings only, and its arithmetic of
    dates has no interval type."""
    for node in query.find_all(exp.Cast):
        to = node.args.get("to")
        kind = to.this.name if isinstance(to, exp.DataType) and hasattr(to.this, "name") else ""
        if kind in _TEMPORAL_TYPES and (
            not (isinstance(node.this, exp.Literal) and node.this.is_string)
            or isinstance(node.parent, (exp.Add, exp.Sub))  # date arithmetic
        ):
            return True
    return False


#: A decimal literal as SQL writes it (``12.50``, ``.5``, ``3.``; no exponent, which makes a
#: double): DECIMAL in DuckDB and PostgreSQL, a float in the executor.
_DECIMAL_LITERAL = re.compile(r"[0-9]*\.[0-9]*")

#: The decimal types (the executor has no cast to any of them).
_DECIMAL_TYPES = frozenset(("DECIMAL", "BIGDECIMAL", "DECIMAL32", "DECIMAL64", "DECIMAL128", "DECIMAL256", "UDECIMAL"))


def _decimal_value(query: exp.Expr) -> bool:
    """Whether the query writes a decimal literal or casts to a decimal type: DuckDB
    runs it, so ``SELECT 12.50`` is ``Decimal('12.50')`` with or without a table (the
    executor reads such a literal as a float and fails on a cast to DECIMAL with
    "'DType' object is not callable"). A float parameter is bound with an exponent
    (sql.binding), so it stays a float and does not count here."""
    for node in query.find_all(exp.Literal):
        if not node.is_string and _DECIMAL_LITERAL.fullmatch(node.this):
            return True
    for node in query.find_all(exp.Cast):  # TryCast too
        to = node.args.get("to")
        if isinstance(to, exp.DataType) and getattr(to.this, "name", "") in _DECIMAL_TYPES:
            return True
    return False


def reads_table_data(query: exp.Expr, shape: QueryShape | None = None) -> bool:
    """True when a query names a table that is neither a system table nor one of its
    CTEs in its scope (QX1), calls a table function, or uses what the catalog's own
    executor cannot run (window functions, ROLLUP, CUBE, GROUPING SETS, WITH RECURSIVE,
    date and time functions and casts, functions sqlglot does not model, decimal
    literals and casts to DECIMAL): it runs in
    DuckDB (Q2); otherwise that executor answers it. ``shape``: the query's, when the
    caller has it already."""
    shape = shape if shape is not None else QueryShape.of(query)
    # A lakehouse table named: DuckDB runs it, whatever else it holds (the checks below
    # are for queries of system tables alone; the common case skips their tree walks).
    if any(node.name and not is_system_table(node) and not shape.is_cte(node) for node in shape.tables):
        return True
    if not shape.types <= EXECUTOR_RUNS or shape.has(*EXECUTOR_DIFFERS):
        return True  # Q11: what the executor would answer otherwise than DuckDB
    # Functions sqlglot does not model (exp.Anonymous: now(), strftime(), ...) are
    # DuckDB's, whose meaning the executor's few same-named ones do not share.
    if shape.has(*_EXECUTOR_CANNOT, *_TEMPORAL, exp.Anonymous):
        return True
    if shape.has(exp.Cast) and _temporal_cast_of_expression(query):
        return True
    if shape.has(exp.Literal, exp.Cast) and _decimal_value(query):
        return True
    if shape.has(exp.With) and any(w.args.get("recursive") for w in query.find_all(exp.With)):
        return True  # nor recursion
    for node in shape.tables:
        if not node.name:
            return True  # a table function: DuckDB runs it (or it is refused there)
        if is_system_table(node):
            continue
        if shape.is_cte(node):
            continue
        return True
    return False
