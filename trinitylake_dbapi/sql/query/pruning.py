"""Pruning files by a query's conditions.

Rules:

  Q7. Files are pruned only by what cannot change a result: the conditions AND-ed at
      the top of the WHERE of the SELECT a table is a FROM item of, comparing one of
      its columns with an integer, string or boolean literal of the column's own kind,
      or a ``DATE '...'`` / ``TIMESTAMP '...'`` literal (ISO text, no time zone) with a
      date / timestamp column (``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``, ``IN``). Each rejects NULL, so a row
      it rules out could not reach the result under inner or outer joins; planning
      (iceberg.planning PC4, from manifests decoded once per process, PC1) drops a
      file only when its column bounds, or its partition value (PC7), rule out every row; bound parameters are
      literals by then (sql.binding), so they prune alike; DuckDB still
      applies the whole WHERE. Other conditions (expressions, OR, casts, IS NULL, the
      ON of a join) prune nothing.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Sequence

from sqlglot import exp

from trinitylake_dbapi.format.types import ColumnSpec
from trinitylake_dbapi.sql.compat import DType
from trinitylake_dbapi.sql.session import where_conjuncts


#: (column name, operator, value): ``column op value`` with a value of the column's own
#: kind family (see _LITERAL_KINDS), or ("in", tuple of values).
_Condition = tuple[str, str, Any]

_OPERATORS = {exp.EQ: "=", exp.NEQ: "<>", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_MIRRORED = {"=": "=", "<>": "<>", ">": "<", ">=": "<=", "<": ">", "<=": ">="}
#: Python value type -> the column kinds it is compared with exactly (no rounding, no
#: parsing that could differ from DuckDB's): only these conditions prune files.
_LITERAL_KINDS = {
    int: {"int2", "int4", "int8"}, str: {"char", "varchar"}, bool: {"boolean"},
    dt.date: {"date"}, dt.datetime: {"timestamp"},
}  # fmt: skip
_DATETIME_CASTS = {DType.DATE: dt.date, DType.TIMESTAMP: dt.datetime}


def _literal(node: exp.Expr) -> Any:
    """The value of an integer, string or boolean literal, or of a date or timestamp
    (without time zone) literal written in ISO form (a bound date or datetime is one,
    sql.binding); None for anything else."""
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        kind = _DATETIME_CASTS.get(node.to.this)
        if kind is None or not re.fullmatch(r"\d{4}-\d\d-\d\d([ T]\d\d:\d\d(:\d\d(\.\d{1,6})?)?)?", node.this.this):
            return None
        try:
            value = kind.fromisoformat(node.this.this)
        except ValueError:
            return None
        return value if kind is dt.datetime or type(value) is dt.date else None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    negative = isinstance(node, exp.Neg)
    if negative:
        node = node.this
    if isinstance(node, exp.Literal):
        if node.is_string:
            return None if negative else node.this
        if re.fullmatch(r"\d+", node.this):
            return -int(node.this) if negative else int(node.this)
    return None


def prunable_conditions(node: exp.Table, columns: Sequence[ColumnSpec]) -> list[_Condition]:
    """The conditions of the WHERE of the SELECT that ``node`` is a FROM item of which
    only its own rows can satisfy: ``column op literal`` and ``column IN (literals)``
    on one of its top-level columns, AND-ed at the top. Each rejects NULL, so a row
    pruned by one could not have reached the result, under inner or outer joins alike."""
    container = node.parent
    select = container.parent if isinstance(container, (exp.From, exp.Join)) else None
    if not isinstance(select, exp.Select):
        return []
    sole = not select.args.get("joins")
    name = node.alias_or_name.lower()
    kinds = {c.name.lower(): c for c in columns}
    found: list[_Condition] = []

    def column_of(ref: exp.Expr) -> ColumnSpec | None:
        if not isinstance(ref, exp.Column) or ref.args.get("db") is not None:
            return None
        if ref.table.lower() != name and not (sole and not ref.table):
            return None
        return kinds.get(ref.name.lower())

    def fits(column: ColumnSpec, value: Any) -> bool:
        return value is not None and column.type.kind in _LITERAL_KINDS.get(type(value), ())

    for condition in where_conjuncts(select.args.get("where")):
        if isinstance(condition, exp.In) and not condition.args.get("query"):
            column = column_of(condition.this)
            values = [_literal(v) for v in condition.expressions]
            if column is not None and values and all(fits(column, v) for v in values):
                found.append((column.name, "in", tuple(values)))
            continue
        op = _OPERATORS.get(type(condition))
        if op is None:
            continue
        left, right = condition.left, condition.right
        if column_of(left) is None:
            left, right, op = right, left, _MIRRORED[op]
        column, value = column_of(left), _literal(right)
        if column is not None and fits(column, value):
            found.append((column.name, op, value))
    return found
