"""Spark's distributed expiration reclaims the same Iceberg files as the local one
(issue 17, acceptance 5; maintenance E8)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from pyiceberg.expressions import EqualTo

from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog
from trinitylake_dbapi.spark import expire_versions
from trinitylake_dbapi import maintenance

SCHEMA = pa.schema([("id", pa.int64())])


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())}, schema=SCHEMA)


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_spark_and_local_expiration_reclaim_the_same_iceberg_files(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "lake"
    catalog = TrinityLakeCatalog("lake", uri=str(root), create="true")
    a = catalog.create_table("default.a", SCHEMA)
    b = catalog.create_table("default.b", SCHEMA)
    gone = catalog.create_table("default.gone", SCHEMA)
    gone.append(rows(0))
    for step in range(8):
        a.overwrite(rows(step)) if step % 3 == 0 else a.append(rows(step))
        b.append(rows(step, step + 100))
        if step % 4 == 3:
            b.delete(EqualTo("id", step))
    catalog.drop_table("default.gone")
    expected_a = sorted(catalog.load_table("default.a").scan().to_arrow()["id"].to_pylist())
    expected_b = sorted(catalog.load_table("default.b").scan().to_arrow()["id"].to_pylist())

    lake = LakehouseCatalog(str(root))
    local = maintenance.expire_versions(lake, retain_last=2, older_than_millis=2**62, dry_run=True, orphan_grace_millis=0)
    remote = expire_versions(spark, str(root), retain_last=2, older_than=2**62, dry_run=True, orphan_grace_millis=0)
    assert remote.versions == local.versions
    assert remote.file_list() == local.files
    iceberg = {f for f in local.files if f.startswith("tables/")}
    assert iceberg and any("/gone-" in f for f in iceberg)

    before = files_under(root)
    done = expire_versions(spark, str(root), retain_last=2, older_than=2**62, orphan_grace_millis=0)
    assert done.file_list() == local.files
    assert files_under(root) == before - set(local.files)
    fresh = TrinityLakeCatalog("check", uri=str(root))
    assert sorted(fresh.load_table("default.a").scan().to_arrow()["id"].to_pylist()) == expected_a
    assert sorted(fresh.load_table("default.b").scan().to_arrow()["id"].to_pylist()) == expected_b


def test_spark_expiration_applies_each_tables_snapshot_retention(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """maintenance E11 on Spark too: the same snapshots as the local dry run, and the
    replaced data files go in the same run (iceberg.retention RT7)."""
    root = tmp_path / "lake"
    LakehouseCatalog(str(root), create=True, lakehouse_options={"minimum_versions_to_keep": 1})
    catalog = TrinityLakeCatalog("lake", uri=str(root))
    table = catalog.create_table("default.t", SCHEMA, properties={"history.expire.max-snapshot-age-ms": "0"})
    for step in range(4):
        table.overwrite(rows(step))
    history = [s.snapshot_id for s in catalog.load_table("default.t").metadata.snapshots]
    local = maintenance.expire_versions(LakehouseCatalog(str(root)), retain_last=1, older_than_millis=2**62,
                                        dry_run=True, orphan_grace_millis=0)  # fmt: skip
    remote = expire_versions(spark, str(root), retain_last=1, older_than=2**62, dry_run=True, orphan_grace_millis=0)
    assert remote.snapshots == local.snapshots == {"default.t": history[:-1]}
    assert len(list((root / "tables").rglob("*.parquet"))) == 4
    done = expire_versions(spark, str(root), retain_last=1, older_than=2**62, orphan_grace_millis=0)
    assert done.snapshots == local.snapshots
    assert len(list((root / "tables").rglob("*.parquet"))) == 1
    fresh = TrinityLakeCatalog("check", uri=str(root)).load_table("default.t")
    assert fresh.scan().to_arrow()["id"].to_pylist() == [3] and len(fresh.metadata.snapshots) == 1
