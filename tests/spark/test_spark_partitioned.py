"""Spark writes to partitioned tables (issue 36; spark/tabledata.py SD8): append and
overwrite write one partition per data file in one version, a dynamic overwrite
replaces only the partitions written, and reads prune by partition (SD3)."""

from __future__ import annotations

import datetime as dt

import pyarrow.parquet as pq
import pytest
from pyiceberg.utils.datetime import datetime_to_micros

import trinitylake_dbapi
from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog
from trinitylake_dbapi.spark import transaction


@pytest.fixture(scope="module")
def lake(tmp_path_factory):  # type: ignore[no-untyped-def]
    location = str(tmp_path_factory.mktemp("partitioned") / "lake")
    with trinitylake_dbapi.connect(location, create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE n")
        cur.execute("CREATE TABLE n.p (id BIGINT, region STRING, ts TIMESTAMP) PARTITIONED BY (region, day(ts))")
    return location


def write(df, location: str, table: str, mode: str, **options) -> None:  # type: ignore[no-untyped-def]
    writer = df.write.format("trinitylake").option("location", location).option("table", table)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode(mode).save()


def sql_rows(location: str) -> list[tuple]:
    with trinitylake_dbapi.connect(location) as conn:
        cur = conn.cursor()
        cur.execute("SELECT id, region, ts FROM n.p ORDER BY id")
        return [tuple(r) for r in cur.fetchall()]


def check_files(location: str) -> list:
    """Every data file holds one partition's rows (PyIceberg's transforms as the oracle)."""
    table = TrinityLakeCatalog("t", uri=location).load_table("n.p")
    schema = table.schema()
    files = [task.file for task in table.scan().plan_files()]
    for f in files:
        spec = table.specs()[f.spec_id]
        for row in pq.read_table(table.io.new_input(f.file_path).open()).to_pylist():
            expected = []
            for field in spec.fields:
                value = row[schema.find_column_name(field.source_id)]
                value = datetime_to_micros(value) if isinstance(value, dt.datetime) else value
                expected.append(field.transform.transform(schema.find_field(field.source_id).field_type)(value))
            assert list(f.partition) == expected
    return files


def rows(ids, region: str, day: int) -> list[tuple]:  # type: ignore[no-untyped-def]
    return [(i, region, dt.datetime(2024, 1, day, i % 24)) for i in ids]


def test_append_static_and_dynamic_overwrite_and_pruned_reads(spark, lake) -> None:  # type: ignore[no-untyped-def]
    schema = "id BIGINT, region STRING, ts TIMESTAMP"
    first = rows(range(0, 6), "eu", 1) + rows(range(6, 10), "us", 1) + rows(range(10, 14), "eu", 2)
    versions = TrinityLakeCatalog("t", uri=lake).lakehouse.latest_version()
    write(spark.createDataFrame(first, schema).repartition(2), lake, "n.p", "append")
    assert TrinityLakeCatalog("t", uri=lake).lakehouse.latest_version() == versions + 1  # one version
    files = check_files(lake)
    assert {tuple(f.partition) for f in files} == {("eu", 19723), ("us", 19723), ("eu", 19724)}
    assert sql_rows(lake) == sorted(first)

    # Dynamic: the partitions written (eu on day 1, and a new one) are replaced; the rest stay.
    replacement = rows(range(100, 103), "eu", 1) + rows(range(103, 105), "ap", 3)
    write(spark.createDataFrame(replacement, schema), lake, "n.p", "overwrite", partitionOverwriteMode="dynamic")
    expected = sorted(replacement + rows(range(6, 10), "us", 1) + rows(range(10, 14), "eu", 2))
    assert sql_rows(lake) == expected
    check_files(lake)

    # Reads prune by partition: one Spark partition per data file, the others skipped.
    df = spark.read.format("trinitylake").option("location", lake).option("table", "n.p").option(
        "filter", "region = 'us'").load()  # fmt: skip
    assert df.rdd.getNumPartitions() == len([f for f in check_files(lake) if f.partition[0] == "us"])
    assert sorted(r.id for r in df.collect()) == list(range(6, 10))

    # Static (the default): everything is replaced.
    write(spark.createDataFrame(rows([7], "us", 5), schema), lake, "n.p", "overwrite")
    assert sql_rows(lake) == rows([7], "us", 5)
    with pytest.raises(Exception, match="partitionOverwriteMode"):
        write(spark.createDataFrame(rows([8], "us", 5), schema), lake, "n.p", "overwrite", partitionOverwriteMode="sometimes")


def test_a_dynamic_overwrite_in_a_spark_transaction(spark, lake) -> None:  # type: ignore[no-untyped-def]
    schema = "id BIGINT, region STRING, ts TIMESTAMP"
    with trinitylake_dbapi.connect(lake, autocommit=True) as conn:
        conn.cursor().execute("CREATE TABLE n.q (id BIGINT, region STRING, ts TIMESTAMP) PARTITIONED BY (region)")
        conn.cursor().executemany("INSERT INTO n.q VALUES (?, ?, ?)", rows(range(4), "eu", 1) + rows(range(4, 6), "us", 1))
    with transaction(spark, lake) as tx:
        tx.write(spark.createDataFrame(rows([50], "us", 2), schema), "n.q", "overwrite", partition_overwrite_mode="dynamic")
        with pytest.raises(Exception, match="partition_overwrite_mode"):
            tx.write(spark.createDataFrame(rows([51], "us", 2), schema), "n.q", "overwrite", partition_overwrite_mode="x")
    with trinitylake_dbapi.connect(lake) as conn:
        cur = conn.cursor()
        cur.execute("SELECT id, region FROM n.q ORDER BY id")
        assert cur.fetchall() == [(0, "eu"), (1, "eu"), (2, "eu"), (3, "eu"), (50, "us")]
