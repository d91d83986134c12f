"""Tables' rows through Spark: the ``trinitylake`` data source with ``table`` and the
Spark transaction (issue 19, acceptance 2-5; spark/tabledata.py SD1-SD7; acceptance 1 is
test_install.py).

One lakehouse for the module; each test uses tables of its own. Spark jobs are slow
here (a first write in a session takes tens of seconds), so each test checks several
things per job.
"""

from __future__ import annotations

import datetime as dt
import decimal
import threading

import pyarrow as pa
import pytest
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyspark.sql.types import StructField, StructType
from pyiceberg.types import IntegerType, LongType, NestedField, StringType

import trinitylake_dbapi
from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog
from trinitylake_dbapi.spark import table_schema, transaction


EVERY_TYPE = """CREATE TABLE n.every (
    id BIGINT NOT NULL, b BOOLEAN, s SMALLINT, i INT, d DECIMAL(12,2), f REAL, g DOUBLE,
    v VARCHAR(20), t STRING, day DATE, tm TIME, ts TIMESTAMP, tz TIMESTAMPTZ, fx FIXED(4),
    bin BINARY, xs ARRAY<INT>, m MAP<STRING, ARRAY<BIGINT>>,
    st STRUCT<a: STRING, b: INT, inner: STRUCT<x: DOUBLE>>)"""


@pytest.fixture(scope="module")
def lake(tmp_path_factory):  # type: ignore[no-untyped-def]
    location = str(tmp_path_factory.mktemp("tabledata") / "lake")
    with trinitylake_dbapi.connect(location, create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE n")
        cur.execute(EVERY_TYPE)
    return location


def catalog(location: str) -> TrinityLakeCatalog:
    return TrinityLakeCatalog("test", uri=location)


def latest(location: str) -> int:
    return catalog(location).lakehouse.latest_version()


def read(spark, location: str, table: str, **options):  # type: ignore[no-untyped-def]
    reader = spark.read.format("trinitylake").option("location", location).option("table", table)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def write(df, location: str, table: str, mode: str = "append", **options) -> None:  # type: ignore[no-untyped-def]
    writer = df.write.format("trinitylake").option("location", location).option("table", table)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode(mode).save()


def every_type_rows() -> list[tuple]:
    utc = dt.timezone.utc
    return [
        (1, True, 7, 70000, decimal.Decimal("12.34"), 1.5, 2.25, "eu", "text", dt.date(2024, 5, 1),
         dt.time(12, 30, 1, 250000), dt.datetime(2024, 5, 1, 12, 30, 0, 123456),
         dt.datetime(2024, 5, 1, 10, 0, tzinfo=utc), b"\x00\x01\x02\x03", b"raw", [1, None, 3],
         {"a": [1, 2], "b": None}, ("x", 5, (0.5,))),
        (2, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None),
        (3, False, -1, -2, decimal.Decimal("-0.01"), -0.0, 1e300, "ü" * 20, "", dt.date(1970, 1, 1),
         dt.time(0, 0), dt.datetime(1999, 12, 31, 23, 59, 59), dt.datetime(2000, 1, 1, tzinfo=utc),
         b"\xff" * 4, b"", [], {}, (None, None, None)),
    ]  # fmt: skip


def comparable(rows) -> list:  # type: ignore[no-untyped-def]
    """Rows as plain values; a timestamp with a zone as PySpark gives it back (naive, in
    the local time zone)."""
    def plain(value):  # type: ignore[no-untyped-def]
        if hasattr(value, "asDict"):
            return tuple(plain(v) for v in value)
        if isinstance(value, (list, tuple)):
            return type(value)(plain(v) for v in value)
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (bytes, bytearray)):
            return bytes(value)
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            return value.astimezone().replace(tzinfo=None)
        return value

    return sorted((plain(tuple(r)) for r in rows), key=lambda r: r[0])


def test_write_then_read_every_type_and_one_version_per_write(spark, lake) -> None:  # type: ignore[no-untyped-def]
    """Acceptance 2: row for row, nested included; append and overwrite one version each."""
    schema = table_schema(lake, "n.every")
    df = spark.createDataFrame(every_type_rows(), schema)
    before = latest(lake)
    write(df, lake, "n.every")
    assert latest(lake) == before + 1
    back = read(spark, lake, "n.every")
    assert back.schema == schema
    expected = comparable(every_type_rows())
    assert comparable(back.collect()) == comparable(df.collect())
    got = comparable(back.collect())
    assert got[0][13] == b"\x00\x01\x02\x03" and got[0][17] == ("x", 5, (0.5,)) and got == expected

    write(df.where("id = 3"), lake, "n.every", mode="overwrite")
    assert latest(lake) == before + 2
    assert [r.id for r in read(spark, lake, "n.every").collect()] == [3]
    # The Iceberg files carry field ids and statistics: PyIceberg reads them by id.
    table = catalog(lake).load_table("n.every")
    assert table.scan().to_arrow().column("id").to_pylist() == [3]
    assert all(task.file.value_counts for task in table.scan().plan_files())

    # A new table from a DataFrame's schema, created by the same (one) version.
    write(df.select("id", "d", "xs", "st"), lake, "n.made", create="true")
    assert latest(lake) == before + 3
    assert comparable(read(spark, lake, "n.made").collect()) == [(r[0], r[4], r[15], r[17]) for r in expected]
    with pytest.raises(Exception, match="does not exist"):
        write(df, lake, "n.nothing")


def test_a_job_failing_in_an_executor_publishes_nothing(spark, lake) -> None:  # type: ignore[no-untyped-def]
    schema = table_schema(lake, "n.every")
    nullable = StructType([StructField(f.name, f.dataType, True, f.metadata) for f in schema.fields])
    bad = spark.createDataFrame([(None,) * 18], nullable)
    before = latest(lake)
    with pytest.raises(Exception, match="NOT NULL"):
        write(bad, lake, "n.every")
    assert latest(lake) == before


def test_a_read_at_a_version_holds_while_writers_commit(spark, lake) -> None:  # type: ignore[no-untyped-def]
    """Acceptance 3 (and SD4: a column added later reads as typed nulls)."""
    cat = catalog(lake)
    table = cat.create_table("n.moving", Schema(NestedField(1, "k", LongType(), required=False)))
    table.append(pa.table({"k": pa.array([1, 2], pa.int64())}))
    pinned = cat.lakehouse.latest_version()
    with table.update_schema() as update:
        update.add_column("label", StringType())
    stop = threading.Event()
    commits = []

    def writer() -> None:
        own = catalog(lake).load_table("n.moving")
        i = 10
        while not stop.is_set() and i < 60:
            own.append(pa.table({"k": pa.array([i], pa.int64()), "label": pa.array([f"r{i}"], pa.large_string())}))
            commits.append(i)
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        at_pinned = read(spark, lake, "n.moving", version=pinned)
        first = sorted(r.k for r in at_pinned.collect())
        now = read(spark, lake, "n.moving").collect()
        second = sorted(r.k for r in at_pinned.collect())
    finally:
        stop.set()
        thread.join()
    assert commits  # writers committed while Spark read
    assert first == second == [1, 2]
    assert at_pinned.columns == ["k"]
    old_rows = [r for r in now if r.k in (1, 2)]
    assert len(old_rows) == 2 and all(r.label is None for r in old_rows)  # typed nulls
    assert all(r.label == f"r{r.k}" for r in now if r.k >= 10)


def test_a_pipeline_of_two_tables_is_one_version_and_a_conflict_fails_it_whole(spark, lake) -> None:  # type: ignore[no-untyped-def]
    """Acceptance 4 (SD7)."""
    source = spark.createDataFrame([(1, "eu", 10), (2, "us", 20), (3, "eu", 5)], "id bigint, region string, amount int")
    before = latest(lake)
    with transaction(spark, lake) as tx:
        tx.catalog.create_namespace("p")
        tx.write(source.where("region = 'eu'"), "p.eu", create=True)
        tx.write(source.groupBy("region").sum("amount").withColumnRenamed("sum(amount)", "total"), "p.totals", create=True)
    assert latest(lake) == before + 1
    assert sorted(r.id for r in read(spark, lake, "p.eu").collect()) == [1, 3]
    assert sorted((r.region, r.total) for r in read(spark, lake, "p.totals").collect()) == [("eu", 15), ("us", 20)]

    # Another writer appends to p.eu while the block overwrites it: nothing of the block lands.
    other = catalog(lake).load_table("p.eu")
    with pytest.raises(CommitFailedException):
        with transaction(spark, lake) as tx:
            tx.write(source.where("region = 'us'"), "p.eu", mode="overwrite")
            tx.write(source.limit(1).select("region", "amount").withColumnRenamed("amount", "total"), "p.totals")
            assert sorted(r.id for r in tx.read("p.eu").collect()) == [1, 3]  # the block's start
            other.append(pa.table({"id": pa.array([9], pa.int64()), "region": ["eu"], "amount": pa.array([1], pa.int32())}))
    assert latest(lake) == before + 2  # only the other writer's version
    assert sorted(r.id for r in read(spark, lake, "p.eu").collect()) == [1, 3, 9]
    assert read(spark, lake, "p.totals").count() == 2


def test_one_partition_per_data_file_and_a_filter_prunes_files(spark, lake) -> None:  # type: ignore[no-untyped-def]
    """Acceptance 5 (SD2, SD3)."""
    cat = catalog(lake)
    schema = Schema(NestedField(1, "day", IntegerType(), required=False), NestedField(2, "v", LongType(), required=False))
    spec = PartitionSpec(PartitionField(source_id=1, field_id=1000, transform=IdentityTransform(), name="day"))
    table = cat.create_table("n.parted", schema, partition_spec=spec)
    for day in range(16):
        table.append(pa.table({"day": pa.array([day] * 3, pa.int32()), "v": pa.array([day * 10 + i for i in range(3)], pa.int64())}))
    assert len(list(table.scan().plan_files())) == 16
    df = read(spark, lake, "n.parted")
    assert df.rdd.getNumPartitions() == 16
    assert df.count() == 48
    pruned = read(spark, lake, "n.parted", filter="day = 3 or day = 5")
    assert pruned.rdd.getNumPartitions() == 2
    assert sorted(r.v for r in pruned.collect()) == [30, 31, 32, 50, 51, 52]
    stats = read(spark, lake, "n.parted", filter="v >= 151")  # column statistics prune too
    assert stats.rdd.getNumPartitions() == 1 and stats.count() == 2
    with pytest.raises(Exception, match="not a PyIceberg row filter"):
        read(spark, lake, "n.parted", filter="day ==== 3").collect()
