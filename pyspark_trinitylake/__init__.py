"""The ``trinitylake`` data source for PySpark's automatic lookup.

PySpark (4 and later) imports every top-level module whose name starts with
``pyspark_`` at its first data-source lookup and registers its ``DefaultSource``
under ``DefaultSource.name()``, so ``spark.read.format("trinitylake")`` and
``df.write.format("trinitylake")`` work with no call. Everything lives in
:mod:`trinitylake_dbapi.spark`; this module only hands it over.
"""

from trinitylake_dbapi.spark.datasource import TrinityLakeDataSource as DefaultSource

__all__ = ["DefaultSource"]
