"""A Spark pipeline over a TrinityLake lakehouse: read a table, transform, write two
tables as one lakehouse version, look at both as of the version before, roll back.

1. Read ``sales.orders`` with the ``trinitylake`` data source (one lakehouse version).
2. Transform: the European orders, and the totals per region.
3. Write both report tables in one ``transaction``: one new lakehouse version.
4. Read both tables as of the previous version (time travel): still empty.
5. Roll the lakehouse back to that version (SQL ``ROLLBACK TO VERSION``).

Run it:   python docs/examples/spark_pipeline.py [lakehouse-dir]
(needs ``pip install 'trinitylake-dbapi[spark]'``; without a directory it works in a
temporary one). The tests run :func:`run` with their own Spark session.
"""

from __future__ import annotations

import os
import sys
import tempfile

import trinitylake_dbapi
from trinitylake_dbapi.spark import transaction


def create_lakehouse(location: str) -> None:
    """The lakehouse the pipeline finds: orders, and two empty report tables."""
    with trinitylake_dbapi.connect(location, create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE sales")
        cur.execute("CREATE TABLE sales.orders (id BIGINT NOT NULL, region VARCHAR(10), amount DECIMAL(12,2))")
        cur.execute("INSERT INTO sales.orders VALUES (1, 'eu', 19.99), (2, 'us', 5.00), (3, 'eu', 7.50)")
        cur.execute("CREATE NAMESPACE reports")
        cur.execute("CREATE TABLE reports.eu_orders (id BIGINT NOT NULL, region VARCHAR(10), amount DECIMAL(12,2))")
        cur.execute("CREATE TABLE reports.totals (region VARCHAR(10), total DECIMAL(22,2), orders BIGINT)")


def read(spark, location: str, table: str, version: int | None = None):  # type: ignore[no-untyped-def]
    reader = spark.read.format("trinitylake").option("location", location).option("table", table)
    if version is not None:
        reader = reader.option("version", version)
    return reader.load()


def rows(df) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted(tuple(r) for r in df.collect())


def run(spark, location: str) -> dict:  # type: ignore[no-untyped-def]
    """The pipeline; returns what it saw, for the test."""
    from pyspark.sql import functions as F

    # 1. Read the source table.
    orders = read(spark, location, "sales.orders")

    # 2. Transform.
    eu = orders.where("region = 'eu'")
    totals = orders.groupBy("region").agg(F.sum("amount").alias("total"), F.count("*").alias("orders"))

    # 3. Write both tables as one lakehouse version.
    with transaction(spark, location) as tx:
        tx.write(eu, "reports.eu_orders", mode="overwrite")
        tx.write(totals, "reports.totals", mode="overwrite")
    with trinitylake_dbapi.connect(location, autocommit=True) as conn:
        published = conn.lakehouse.latest_version()
        previous = published - 1
        seen = {
            "published": published,
            "eu_orders": rows(read(spark, location, "reports.eu_orders")),
            "totals": rows(read(spark, location, "reports.totals")),
            # 4. Both tables as of the version before: the pipeline's writes are not there.
            "eu_orders_before": rows(read(spark, location, "reports.eu_orders", previous)),
            "totals_before": rows(read(spark, location, "reports.totals", previous)),
        }
        # 5. Roll back: every table as of the previous version, in one new version.
        conn.cursor().execute(f"ROLLBACK TO VERSION {previous}")
    seen["eu_orders_rolled_back"] = rows(read(spark, location, "reports.eu_orders"))
    seen["totals_rolled_back"] = rows(read(spark, location, "reports.totals"))
    return seen


def main(argv: list[str]) -> None:
    from pyspark.sql import SparkSession

    base = argv[1] if len(argv) > 1 else tempfile.mkdtemp(prefix="trinitylake-pipeline-")
    location = os.path.join(base, "lake")
    create_lakehouse(location)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.master("local[2]").appName("trinitylake-pipeline").getOrCreate()
    try:
        seen = run(spark, location)
    finally:
        spark.stop()
    print(f"published version {seen['published']}")
    print(f"reports.eu_orders: {seen['eu_orders']} (before: {seen['eu_orders_before']})")
    print(f"reports.totals:    {seen['totals']} (before: {seen['totals_before']})")
    print(f"after the rollback: {seen['eu_orders_rolled_back']} {seen['totals_rolled_back']}")


if __name__ == "__main__":
    main(sys.argv)
