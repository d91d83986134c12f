"""Small builders shared by the engine tests."""

from __future__ import annotations

from trinitylake_dbapi.format.types import ColumnSpec, type_from_sql


def columns(*names: str) -> list[ColumnSpec]:
    """bigint columns with the given names."""
    return [ColumnSpec(name, type_from_sql("bigint", column=name)) for name in names]


def state(catalog) -> dict:  # type: ignore[no-untyped-def]
    """Everything a catalog transaction sees: namespaces, tables and their columns."""
    out = {}
    for namespace in catalog.list_namespaces():
        out[namespace] = {
            table: [c.name for c in catalog.describe_table(ns, table).columns]
            for ns, table in catalog.list_tables(namespace)
        }
    return out
