"""Small builders shared by the transaction tests."""

from __future__ import annotations

from lake_builders import columns  # noqa: F401 - re-exported to the transaction tests


def state(catalog) -> dict:  # type: ignore[no-untyped-def]
    """Everything a catalog transaction sees: namespaces, tables and their columns."""
    out = {}
    for namespace in catalog.list_namespaces():
        out[namespace] = {
            table: [c.name for c in catalog.describe_table(ns, table).columns]
            for ns, table in catalog.list_tables(namespace)
        }
    return out
