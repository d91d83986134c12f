"""The data source and the maintenance jobs on an object store (moto S3)."""

from __future__ import annotations

import json
import time

import pytest

from lakehouses import SMALL_NODES, all_files, cols
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.maintenance import plan_expiration
from trinitylake_dbapi.spark import expire_versions, export_snapshot, verify
from trinitylake_dbapi.storage import Storage

pytestmark = pytest.mark.s3


def test_spark_on_s3(spark, s3_root, s3_storage_options, tmp_path) -> None:  # type: ignore[no-untyped-def]
    lake = LakehouseCatalog(s3_root, create=True, lakehouse_options=SMALL_NODES,
                            storage_options=s3_storage_options)
    txn = lake.begin()
    txn.create_namespace("n")
    txn.commit()
    for i in range(12):
        txn = lake.begin()
        txn.create_table("n", f"t{i}", cols("a bigint"))
        if i % 4 == 3:
            txn.drop_table("n", f"t{i - 2}")
        txn.commit()

    tables = (spark.read.format("trinitylake").option("location", s3_root)
              .option("storage_options", json.dumps(s3_storage_options)).load().collect())
    assert [(r.namespace, r.table_name) for r in tables] == lake.begin().list_tables()

    report = verify(spark, s3_root, storage_options=s3_storage_options)
    assert report.ok, report.text()
    assert report.versions == list(range(lake.latest_version() + 1))

    cutoff = lake.lakehouse.snapshot(8).created_at_millis
    plan = plan_expiration(lake.lakehouse, None, cutoff, int(time.time() * 1000))
    assert plan.files

    target = str(tmp_path / "copy")
    result = export_snapshot(spark, s3_root, target, version=10, storage_options=s3_storage_options)
    source = Storage(s3_root, s3_storage_options)
    assert all_files(target) - {"_latest_hint.txt"} == {
        p for p in source.list("") if p in set(row["path"] for row in result.files.collect())
    }
    assert LakehouseCatalog(target).begin().list_tables() == lake.begin(version=10).list_tables()

    # The dry run plans exactly this (test_maintenance.py); here the executors delete on S3.
    done = expire_versions(spark, s3_root, older_than=cutoff, storage_options=s3_storage_options)
    assert done.versions == plan.versions and done.file_list() == plan.files
    assert not set(plan.files) & set(source.list(""))
    assert LakehouseCatalog(s3_root, storage_options=s3_storage_options).begin().list_tables() == \
        lake.begin().list_tables()
