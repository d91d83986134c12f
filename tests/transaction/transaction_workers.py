"""Functions run in worker processes by the transaction tests (importable after spawn)."""

from __future__ import annotations

from trinitylake_dbapi.catalog import LakehouseCatalog
from catalog_helpers import columns


def create_tables(location: str, storage_options: dict | None, worker: int, count: int) -> list[tuple[str, int]]:
    """Create ``count`` tables ns.w<worker>_<i>, one commit each; returns (table, version)."""
    catalog = LakehouseCatalog(location, storage_options=storage_options)
    done = []
    for i in range(count):
        txn = catalog.begin()
        name = f"w{worker}_{i}"
        txn.create_table("ns", name, columns("id", "value"))
        done.append((name, txn.commit()))
    return done
