"""SELECT over the system tables, run by sqlglot's Python executor.

System tables (names case-insensitive; columns listed with their type kinds):

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
applies the whole WHERE.

User tables hold no rows here (TrinityLake stores definitions; the data lives in the
table format): selecting from one raises NotSupportedError, or ObjectNotFoundError when
it does not exist. A query without tables (``SELECT 1``) works.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from dataclasses import dataclass
from typing import Any, Callable

from sqlglot import exp
from sqlglot.errors import ExecuteError, OptimizeError, SqlglotError
from sqlglot.executor.python import PythonExecutor
from sqlglot.executor.table import Table, ensure_tables
from sqlglot.optimizer import optimize
from sqlglot.planner import Plan
from sqlglot.schema import ensure_schema

from trinitylake_dbapi.catalog import Catalog, LakehouseCatalog
from trinitylake_dbapi.errors import (
    InvalidDefinitionError,
    NotSupportedError,
    ObjectNotFoundError,
    ProgrammingError,
)
from trinitylake_dbapi.format.types import canonical_kind, type_to_sql
from trinitylake_dbapi.sql.columns import DTYPE_NAMES
from trinitylake_dbapi.sql.dialect import TrinityLake

__all__ = ["SYSTEM_TABLES", "CATALOG_NAME", "QueryResult", "run_query", "millis_to_datetime"]

#: The catalog name shown in information_schema.
CATALOG_NAME = "trinitylake"

#: Type kind -> the type name given to sqlglot's optimizer.
_SQLGLOT_TYPES = {"varchar": "varchar", "int4": "int", "int8": "bigint", "boolean": "boolean",
                  "timestamp": "timestamp"}  # fmt: skip


@dataclass(frozen=True)
class SystemTable:
    columns: tuple[tuple[str, str], ...]  # (name, type kind)
    # (catalog, lakehouse, filters) -> rows; filters maps column name -> required value
    build: Callable[[Catalog, LakehouseCatalog, dict[str, str]], list[tuple]]


def millis_to_datetime(millis: int) -> dt.datetime:
    """Milliseconds since the epoch as a naive UTC datetime (how timestamps are shown)."""
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=millis)


def _namespaces(catalog: Catalog, filters: dict[str, str]) -> list[str]:
    wanted = filters.get("schema_name") or filters.get("table_schema")
    if wanted is not None:
        try:
            return [wanted] if catalog.namespace_exists(wanted) else []
        except ProgrammingError:  # not a valid name: nothing can match
            return []
    return catalog.list_namespaces()


def _tables(catalog: Catalog, filters: dict[str, str]) -> list[tuple[str, str]]:
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


def _schemata(catalog: Catalog, lakehouse: LakehouseCatalog, filters: dict[str, str]) -> list[tuple]:
    rows = []
    for ns in _namespaces(catalog, filters):
        info = catalog.describe_namespace(ns)
        rows.append((CATALOG_NAME, ns, None, info.comment))
    return rows


def _tables_rows(catalog: Catalog, lakehouse: LakehouseCatalog, filters: dict[str, str]) -> list[tuple]:
    rows = []
    for ns, name in _tables(catalog, filters):
        info = catalog.describe_table(ns, name)
        rows.append((CATALOG_NAME, ns, name, "BASE TABLE", info.table_type, info.table_format,
                     info.location, info.comment))  # fmt: skip
    return rows


def _columns_rows(catalog: Catalog, lakehouse: LakehouseCatalog, filters: dict[str, str]) -> list[tuple]:
    rows = []
    for ns, name in _tables(catalog, filters):
        info = catalog.describe_table(ns, name)
        key = {column: i for i, column in enumerate(info.primary_key, start=1)}
        for position, c in enumerate(info.columns, start=1):
            t = c.type
            numeric_precision = t.precision if t.kind == "decimal" else None
            numeric_precision = {"int2": 16, "int4": 32, "int8": 64, "float4": 24,
                                 "float8": 53}.get(t.kind, numeric_precision)  # fmt: skip
            rows.append((
                CATALOG_NAME, ns, name, c.name, position, None,
                "YES" if c.nullable else "NO", type_to_sql(t),
                t.length if t.kind in ("char", "varchar", "fixed", "binary") else None,
                numeric_precision,
                t.scale if t.kind == "decimal" else (0 if t.kind in ("int2", "int4", "int8") else None),
                t.precision if t.kind in ("time", "timetz", "timestamp", "timestamptz") else None,
                c.comment, key.get(c.name),
            ))  # fmt: skip
    return rows


def _versions_rows(catalog: Catalog, lakehouse: LakehouseCatalog, filters: dict[str, str]) -> list[tuple]:
    return [
        (v.version, millis_to_datetime(v.created_at_millis), v.previous_version,
         v.rollback_from_version, ", ".join(v.changes))
        for v in lakehouse.versions()
        if v.version <= catalog.version
    ]  # fmt: skip


_V = "varchar"
SYSTEM_TABLES: dict[tuple[str, str], SystemTable] = {
    ("information_schema", "schemata"): SystemTable(
        (("catalog_name", _V), ("schema_name", _V), ("schema_owner", _V), ("comment", _V)),
        _schemata,
    ),
    ("information_schema", "tables"): SystemTable(
        (("table_catalog", _V), ("table_schema", _V), ("table_name", _V), ("table_type", _V),
         ("table_kind", _V), ("table_format", _V), ("location", _V), ("comment", _V)),
        _tables_rows,
    ),  # fmt: skip
    ("information_schema", "columns"): SystemTable(
        (("table_catalog", _V), ("table_schema", _V), ("table_name", _V), ("column_name", _V),
         ("ordinal_position", "int4"), ("column_default", _V), ("is_nullable", _V),
         ("data_type", _V), ("character_maximum_length", "int4"), ("numeric_precision", "int4"),
         ("numeric_scale", "int4"), ("datetime_precision", "int4"), ("comment", _V),
         ("primary_key_position", "int4")),
        _columns_rows,
    ),  # fmt: skip
    ("system", "versions"): SystemTable(
        (("version", "int8"), ("created_at", "timestamp"), ("previous_version", "int8"),
         ("rollback_from_version", "int8"), ("changes", _V)),
        _versions_rows,
    ),  # fmt: skip
}
SYSTEM_SCHEMAS = frozenset(db for db, _ in SYSTEM_TABLES)


@dataclass(frozen=True)
class QueryResult:
    columns: tuple[tuple[str, str], ...]  # (name, type kind)
    rows: list[tuple]


def _kind_of_type(node: exp.Expr | None) -> str | None:
    if not isinstance(node, exp.DataType) or not isinstance(node.this, exp.DType):
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


def _equality_filters(query: exp.Expr, table: exp.Table) -> dict[str, str]:
    """``column = 'text'`` conditions AND-ed at the top of a single-table SELECT's WHERE."""
    if not isinstance(query, exp.Select) or query.args.get("joins") or query.args.get("with_"):
        return {}
    if query.find(exp.Subquery) or len(list(query.find_all(exp.Table))) != 1:
        return {}
    where = query.args.get("where")
    if where is None:
        return {}
    found: dict[str, str] = {}
    stack = [where.this]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.And):
            stack.extend((node.left, node.right))
        elif isinstance(node, exp.Paren):
            stack.append(node.this)
        elif isinstance(node, exp.EQ):
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
    catalog_for: Callable[[exp.Version | None], Catalog],
    lakehouse: LakehouseCatalog,
    resolve_table: Callable[[exp.Table], tuple[str, str]],
) -> QueryResult:
    """Run a bound SELECT over the system tables.

    ``catalog_for(version)`` gives the catalog to read for a table's time travel clause
    (None: the current transaction); ``resolve_table`` turns a user table reference into
    (namespace, name) for the error (raising when it does not exist).
    """
    query = query.copy()
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    tables: dict[str, dict[str, Table]] = {}
    schema: dict[str, dict[str, dict[str, str]]] = {}
    catalogs: dict[str, Catalog] = {}
    for node in list(query.find_all(exp.Table)):
        if not node.name:
            raise NotSupportedError(f"unsupported FROM item {node.sql(dialect=TrinityLake)!r}")
        db = node.text("db").lower()
        if not db and node.name.lower() in ctes:
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
        filters = _equality_filters(query, node)
        table_name = key[1]
        if table_name not in tables.get(alias_db, {}):
            rows = spec.build(catalog, lakehouse, filters)
            tables.setdefault(alias_db, {})[table_name] = Table(
                [c for c, _ in spec.columns], rows
            )
            schema.setdefault(alias_db, {})[table_name] = {
                c: _SQLGLOT_TYPES[k] for c, k in spec.columns
            }
        alias = node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name))
        node.replace(
            exp.Table(
                this=exp.to_identifier(table_name),
                db=exp.to_identifier(alias_db),
                alias=alias,
            )
        )
    return _execute(query, tables, schema)


_UNKNOWN_NAME = re.compile(r"name '(\w+)' is not defined")


def _execute(
    query: exp.Expr, tables: dict[str, dict[str, Table]], schema: dict[str, Any]
) -> QueryResult:
    original = query.copy()
    try:
        optimized = optimize(
            query, ensure_schema(schema, dialect=TrinityLake), leave_tables_isolated=True,
            dialect=TrinityLake,
        )  # fmt: skip
        result = PythonExecutor(tables=ensure_tables(tables, dialect=TrinityLake)).execute(
            Plan(optimized)
        )
    except OptimizeError as e:
        raise ProgrammingError(f"cannot run the query: {e}") from None
    except ExecuteError as e:
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
