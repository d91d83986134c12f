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
  runs on the executors, see :mod:`.maintenance`.
"""

from typing import Any

from .datasource import TrinityLakeDataSource, register
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

    "SparkExpireResult",
    "SparkExportResult",
    "SparkVerifyReport",

]


def __getattr__(name: str) -> Any:
    """:func:`transaction` and :class:`SparkTransaction`, imported on first use (PEP 562)."""
    if name in ("transaction", "SparkTransaction"):
        from . import tabledata

        return getattr(tabledata, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
