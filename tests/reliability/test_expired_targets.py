"""Rollback and snapshot export to a version that another connection has expired.

Found by the SQL fuzzer: a connection keeps the snapshots it has read in a cache; once
another connection (or process) expires that version, ROLLBACK TO VERSION and EXPORT
SNAPSHOT ... AS OF VERSION must refuse it, not commit a version that points at deleted
files (the rollback) or a snapshot name that points at a deleted root (the export).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from reliability_helpers import SMALL_TREE, columns
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.errors import ObjectNotFoundError
from trinitylake_dbapi.verify import verify
from trinitylake_dbapi import maintenance


def _expired_under_a_reader(tmp_path: Any) -> tuple[str, LakehouseCatalog, int]:
    location = str(tmp_path / "lake")
    writer = LakehouseCatalog(location, create=True, lakehouse_options=SMALL_TREE)
    txn = writer.begin()
    txn.create_namespace("ns")
    txn.create_table("ns", "t", columns("id"))
    txn.commit()
    for i in range(40):  # enough alters to flush version 1's definition out of the root
        txn = writer.begin()
        txn.add_columns("ns", "t", columns(f"c{i}"))
        txn.commit()
    reader = LakehouseCatalog(location)
    assert [c.name for c in reader.begin(version=1).describe_table("ns", "t").columns] == ["id"]
    expired = maintenance.expire_versions(writer, retain_last=1, orphan_grace_millis=0,
                                     older_than_millis=int(time.time() * 1000) + 10**6)
    assert 1 in expired.versions
    return location, reader, writer.latest_version()


def test_rollback_to_a_version_expired_by_another_connection(tmp_path: Any) -> None:
    location, reader, latest = _expired_under_a_reader(tmp_path)
    with pytest.raises(ObjectNotFoundError, match="version 1"):
        reader.rollback_to(1)
    assert LakehouseCatalog(location).latest_version() == latest
    assert verify(location).ok


def test_export_of_a_version_expired_by_another_connection(tmp_path: Any) -> None:
    location, reader, latest = _expired_under_a_reader(tmp_path)
    with pytest.raises(ObjectNotFoundError, match="version 1"):
        reader.export_snapshot("gone", 1)
    assert LakehouseCatalog(location).latest_version() == latest
    assert verify(location).ok
