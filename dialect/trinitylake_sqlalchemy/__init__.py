"""SQLAlchemy dialect ``trinitylake`` over the trinitylake_dbapi PEP 249 driver.

``create_engine("trinitylake:////abs/path?create=true")`` (see :mod:`.base` for URLs);
the dialect types for nested columns are exported here, and ``insert`` with
``on_conflict_do_update`` / ``on_conflict_do_nothing`` (:mod:`.dml`).
"""

from .dml import Insert, insert
from .types import FIXED, MAP, STRUCT, TIME, TIMESTAMP, StructField

__all__ = ["FIXED", "MAP", "STRUCT", "TIME", "TIMESTAMP", "StructField", "Insert", "insert"]
