"""Builders shared by the reliability tests (importable by spawned worker processes)."""

from __future__ import annotations

import os
from typing import Any

from lake_builders import SMALL_TREE, columns  # noqa: F401 - re-exported to the reliability tests
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.storage import Storage


def state(txn: Any) -> dict[str, dict[str, list[str]]]:
    """Everything a catalog transaction sees: namespaces -> tables -> column names."""
    out: dict[str, dict[str, list[str]]] = {}
    for namespace in txn.list_namespaces():
        out[namespace] = {
            table: [c.name for c in txn.describe_table(ns, table).columns]
            for ns, table in txn.list_tables(namespace)
        }
    return out


def build_lake(location: str, storage_options: dict | None = None, *, tables: int = 120,
               options: dict | None = None) -> LakehouseCatalog:
    """A lakehouse with history: namespaces, tables added in batches, alters, drops, a
    namespace dropped with CASCADE, a rollback and an exported snapshot. The namespace
    ``default`` of a new lakehouse is dropped in the first commit, so the tests' keys
    are the only ones."""
    catalog = LakehouseCatalog(location, create=True, storage_options=storage_options,
                               lakehouse_options=dict(SMALL_TREE, **(options or {})))
    txn = catalog.begin()
    txn.drop_namespace("default")
    for ns in ("ns", "other", "gone"):
        txn.create_namespace(ns, comment=f"namespace {ns}")
    txn.commit()
    txn = catalog.begin()
    txn.create_table("gone", "g", columns("id"))
    txn.commit()
    for start in range(0, tables, 10):
        txn = catalog.begin()
        for i in range(start, min(tables, start + 10)):
            txn.create_table("ns", f"t{i:03d}", columns("id", "v"))
        if start >= 20:
            txn.drop_table("ns", f"t{start - 15:03d}")
            txn.add_columns("ns", f"t{start - 20:03d}", columns(f"c{start}"))
        txn.commit()
    mark = catalog.latest_version()
    txn = catalog.begin()
    txn.drop_namespace("gone", cascade=True)
    txn.create_table("other", "o", columns("id"))
    txn.commit()
    txn = catalog.begin()
    txn.create_table("other", "doomed", columns("id"))
    txn.commit()
    catalog.rollback_to(mark + 1)
    catalog.export_snapshot("first", 1)
    txn = catalog.begin()
    txn.create_table("other", "after", columns("id"))
    txn.commit()
    return catalog


def local_files(root: str) -> set[str]:
    """Every file under a local directory, relative, including reserved temp files."""
    out = set()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            out.add(os.path.relpath(os.path.join(dirpath, name), root))
    return out


def files(location: str, storage_options: dict | None = None) -> set[str]:
    return set(Storage(location, storage_options).list())
