"""How SQL and Spark write a table's data through PyIceberg (iceberg/writing.py)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyiceberg.catalog import load_catalog

from pyiceberg.table import Transaction

from trinitylake_dbapi.iceberg.writing import LakehouseTable

IMPL = "trinitylake_dbapi.iceberg.catalog.TrinityLakeCatalog"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])


def test_a_write_transaction_computes_its_metadata_once_per_staged_state(tmp_path: Any) -> None:
    """W4: reads of an unchanged transaction share one metadata object (PyIceberg 0.12
    deep-copies it at every read), for SQL's writes and PyIceberg users' alike; staging an update gives the next read the new state,
    and the transaction commits what was staged."""
    catalog = load_catalog("lake", **{"py-catalog-impl": IMPL, "uri": str(tmp_path / "lake"), "create": "true"})
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=SCHEMA)
    table.append(pa.Table.from_pylist([{"id": 1, "name": "a"}], schema=SCHEMA))

    assert isinstance(table, LakehouseTable)
    txn = table.transaction()
    first = txn.table_metadata
    assert txn.table_metadata is first
    assert first == Transaction(table).table_metadata  # what PyIceberg computes itself
    assert len(first.snapshots) == 1

    txn.set_properties(owner="me")
    staged = txn.table_metadata
    assert staged is not first and staged.properties["owner"] == "me"
    assert txn.table_metadata is staged
    txn.append(pa.Table.from_pylist([{"id": 2, "name": "b"}], schema=SCHEMA))
    assert len(txn.table_metadata.snapshots) == 2
    txn.commit_transaction()

    reloaded = catalog.load_table("ns.t")
    assert reloaded.properties["owner"] == "me"
    assert sorted(reloaded.scan().to_arrow()["id"].to_pylist()) == [1, 2]
