"""Builders every test directory shares (tests/ is on sys.path, see conftest.py)."""

from __future__ import annotations

from trinitylake_dbapi.format.types import ColumnSpec, type_from_sql

#: Small nodes, so that a few hundred keys make a tree of three levels whose commits
#: flush, split, borrow and merge.
SMALL_TREE = {
    "order": 4,
    "node_file_max_size_bytes": 3000,
    "namespace_name_max_size_bytes": 20,
    "table_name_max_size_bytes": 20,
    "file_name_max_size_bytes": 202,
}


def columns(*names: str) -> list[ColumnSpec]:
    """bigint columns with the given names."""
    return [ColumnSpec(name, type_from_sql("bigint", column=name)) for name in names]
