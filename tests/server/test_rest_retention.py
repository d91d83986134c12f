"""Snapshot expiration through the REST endpoint (iceberg.retention RT3, RT4): a PyIceberg
REST client's ``expire_snapshots`` is the catalog's commit like any other, checked
against the latest metadata."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest
from pyiceberg.exceptions import CommitFailedException

from tests.server.conftest import RestServer

SCHEMA = pa.schema([("id", pa.int64())])


def test_a_rest_client_expires_snapshots_and_a_stale_one_cannot_drop_a_tag(rest: RestServer) -> None:
    catalog = rest.catalog()
    catalog.create_namespace("retention")
    table = catalog.create_table("retention.t", SCHEMA)
    for i in range(4):
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
    table = catalog.load_table("retention.t")
    history = [s.snapshot_id for s in table.metadata.snapshots]
    stale = catalog.load_table("retention.t")
    catalog.load_table("retention.t").manage_snapshots().create_tag(history[1], "keep").commit()
    with pytest.raises(CommitFailedException, match=f"{history[1]}.*'keep'"):
        stale.maintenance.expire_snapshots().by_id(history[1]).commit()  # RT4: the tag stays
    table = catalog.load_table("retention.t")
    assert table.metadata.refs["keep"].snapshot_id == history[1]
    future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    table.maintenance.expire_snapshots().older_than(future).commit()  # PyIceberg spares ref heads itself
    metadata = catalog.load_table("retention.t").metadata
    assert {s.snapshot_id for s in metadata.snapshots} == {history[1], history[-1]}
    assert {e.snapshot_id for e in metadata.snapshot_log} <= {history[1], history[-1]}
    assert sorted(catalog.load_table("retention.t").scan().to_arrow()["id"].to_pylist()) == [0, 1, 2, 3]
