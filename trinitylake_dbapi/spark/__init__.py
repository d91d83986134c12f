"""PySpark integration: schema mapping, the ``trinitylake`` data source, distributed maintenance.

Needs the ``spark`` extra (``pip install 'trinitylake-dbapi[spark]'``).

* :func:`table_schema`, :func:`to_spark_type`, :func:`from_spark_type` (and the field
  and schema variants): SPEC 5 types <-> Spark types, see :mod:`.schema`.
* The ``trinitylake`` data source (found by PySpark on its own through the top-level
  module ``pyspark_trinitylake``; :func:`register` for sessions started otherwise):
  the catalog as DataFrames (:mod:`.datasource`) and tables' rows, read and written
  (:mod:`.tabledata`).
* :func:`transaction`: several table writes and DDL as one lakehouse version.
* :func:`expire_versions`, :func:`export_snapshot`, :func:`verify`: maintenance that
  runs on the executors, see :mod:`.maintenance`; :func:`optimize_table`: compaction
  with the files rewritten on the executors, see :mod:`.compaction`.
"""

import importlib
from typing import TYPE_CHECKING, Any

from .datasource import TrinityLakeDataSource, register

#: Names loaded from their module on first use (PEP 562). PySpark imports this package
#: (through ``pyspark_trinitylake``) in every planner process it starts, a data source
#: lookup, a read's planning, each write's set-up and commit: those need only the data
#: source, so maintenance, verification, schemas and table data (PyIceberg) wait.
_LAZY = {
    "SparkExpireResult": ".maintenance",
    "SparkExportResult": ".maintenance",
    "expire_versions": ".maintenance",
    "optimize_table": ".compaction",
    "export_snapshot": ".maintenance",
    "from_spark_field": ".schema",
    "from_spark_schema": ".schema",
    "from_spark_type": ".schema",
    "table_schema": ".schema",
    "to_spark_field": ".schema",
    "to_spark_schema": ".schema",
    "to_spark_type": ".schema",
    "SparkVerifyReport": ".verification",
    "verify": ".verification",
    "transaction": ".tabledata",
    "SparkTransaction": ".tabledata",
}

if TYPE_CHECKING:
    from .maintenance import SparkExpireResult, SparkExportResult, expire_versions, export_snapshot
    from .schema import (
        from_spark_field,
        from_spark_schema,
        from_spark_type,
        table_schema,
        to_spark_field,
        to_spark_schema,
        to_spark_type,
    )
    from .compaction import optimize_table
    from .tabledata import SparkTransaction, transaction
    from .verification import SparkVerifyReport, verify

__all__ = [
    "table_schema",
    "to_spark_type",
    "from_spark_type",
    "to_spark_field",
    "from_spark_field",
    "to_spark_schema",
    "from_spark_schema",
    "TrinityLakeDataSource",
    "register",
    "transaction",
    "SparkTransaction",
    "expire_versions",
    "export_snapshot",
    "verify",
    "optimize_table",
    "SparkExpireResult",
    "SparkExportResult",
    "SparkVerifyReport",
]


def __getattr__(name: str) -> Any:
    """Load one of the names of ``_LAZY`` from its module (once: it is then set here)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
