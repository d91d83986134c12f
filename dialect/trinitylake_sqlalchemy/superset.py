"""Apache Superset's DB engine spec for ``trinitylake`` (issue 20).

Superset finds it through the ``superset.db_engine_specs`` entry point of this
distribution (pyproject.toml); nothing in the package imports this module, so Superset is
not a dependency. It tells Superset:

* the engine (``trinitylake``, the SQLAlchemy dialect's name) and its display name;
* the time grain expressions: TrinityLake SQL's ``date_trunc(unit, ts)`` (Spark's
  argument order; weeks start on Monday);
* how a native type name (a DESCRIBE type or a DB-API ``type_code``: ``int8``,
  ``decimal``, ``timestamp``, ...) maps to a SQLAlchemy type and a Superset generic type
  (numeric, string, temporal, boolean);
* how a Python datetime is written as a literal (``CAST('...' AS TIMESTAMP)``);
* that a LIMIT is forced onto SQL Lab queries, joins and subqueries are allowed, and
  there is no catalog level (namespaces are schemas).

Schema and table listing and the ``SELECT *`` preview are Superset's defaults over the
dialect's inspector, which lists namespaces (schemas) and tables, and its compiler, which
writes ``SELECT ... FROM "ns"."t" LIMIT n``. scripts/check-superset drives all of this
through Superset's REST API.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from sqlalchemy import types
from superset.constants import TimeGrain
from superset.db_engine_specs.base import BaseEngineSpec, LimitMethod
from superset.utils.core import GenericDataType

__all__ = ["TrinityLakeEngineSpec"]


def _trunc(unit: str) -> str:
    return f"date_trunc('{unit}', {{col}})"


class TrinityLakeEngineSpec(BaseEngineSpec):
    """Superset's view of the ``trinitylake`` dialect (see the module docstring)."""

    engine = "trinitylake"
    engine_name = "TrinityLake"
    default_driver = "trinitylake_dbapi"
    sqlalchemy_uri_placeholder = "trinitylake:////absolute/path/to/lakehouse"

    limit_method = LimitMethod.FORCE_LIMIT
    allows_joins = True
    allows_subqueries = True
    allows_alias_in_select = True
    allows_alias_in_orderby = True
    supports_catalog = False
    supports_dynamic_schema = False
    # A name is any characters but controls and space (SPEC 3), up to this many bytes.
    max_column_name_length = 255

    _time_grain_expressions = {
        None: "{col}",
        TimeGrain.SECOND: _trunc("second"),
        TimeGrain.MINUTE: _trunc("minute"),
        TimeGrain.HOUR: _trunc("hour"),
        TimeGrain.DAY: _trunc("day"),
        TimeGrain.WEEK: _trunc("week"),
        TimeGrain.MONTH: _trunc("month"),
        TimeGrain.QUARTER: _trunc("quarter"),
        TimeGrain.YEAR: _trunc("year"),
    }

    # Native type names as DESCRIBE and the DB-API's type_code write them (SPEC 5
    # canonical names) and their common spellings; the first match wins.
    column_type_mappings = (
        (re.compile(r"^bool(ean)?$", re.I), types.Boolean(), GenericDataType.BOOLEAN),
        (re.compile(r"^(int2|smallint)$", re.I), types.SmallInteger(), GenericDataType.NUMERIC),
        (re.compile(r"^(int4|int|integer)$", re.I), types.Integer(), GenericDataType.NUMERIC),
        (re.compile(r"^(int8|bigint)$", re.I), types.BigInteger(), GenericDataType.NUMERIC),
        (re.compile(r"^(decimal|numeric)(\(.*\))?$", re.I), types.Numeric(), GenericDataType.NUMERIC),
        (re.compile(r"^(float4|real)$", re.I), types.Float(), GenericDataType.NUMERIC),
        (re.compile(r"^(float8|float|double)$", re.I), types.Float(), GenericDataType.NUMERIC),
        (re.compile(r"^timestamptz(\(\d+\))?$", re.I), types.TIMESTAMP(timezone=True), GenericDataType.TEMPORAL),
        (re.compile(r"^timestamp(\(\d+\))?$", re.I), types.TIMESTAMP(), GenericDataType.TEMPORAL),
        (re.compile(r"^date$", re.I), types.Date(), GenericDataType.TEMPORAL),
        (re.compile(r"^timetz?(\(\d+\))?$", re.I), types.Time(), GenericDataType.TEMPORAL),
        (re.compile(r"^(var)?char(\(\d+\))?$|^string$|^text$", re.I), types.String(), GenericDataType.STRING),
    )  # fmt: skip

    @classmethod
    def convert_dttm(
        cls, target_type: str, dttm: datetime, db_extra: dict[str, Any] | None = None
    ) -> str | None:
        """A datetime as a literal of the column's type (time range filters)."""
        kind = target_type.lower().split("(")[0]
        if kind == "date":
            return f"CAST('{dttm.date().isoformat()}' AS DATE)"
        if kind in ("timestamp", "timestamptz"):
            text = dttm.isoformat(sep=" ", timespec="microseconds")
            return f"CAST('{text}' AS {kind.upper()})"
        return None

    @classmethod
    def epoch_to_dttm(cls) -> str:
        return "CAST(to_timestamp({col}) AS TIMESTAMP)"
