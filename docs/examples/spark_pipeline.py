"""A Spark pipeline that takes its table definitions from a TrinityLake lakehouse.

1. Look the table up from the driver: its Spark schema (``table_schema``) and its data
   location (the ``trinitylake`` data source, or the DB-API).
2. Build an empty DataFrame with exactly that schema, and one with a few rows.
3. Write Parquet to the table's location.
4. Read it back with the table's schema and check nothing was lost: types with their
   parameters, comments, column order.

Run it:   python docs/examples/spark_pipeline.py [lakehouse-dir]
(needs ``pip install 'trinitylake-dbapi[spark]'``; without a directory it works in a
temporary one). The tests run :func:`run` with their own Spark session.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import sys
import tempfile

import trinitylake_dbapi
from trinitylake_dbapi.spark import from_spark_schema, register, table_schema


def create_lakehouse(location: str, data_location: str) -> None:
    """The lakehouse a pipeline would find: one external table with its data location."""
    conn = trinitylake_dbapi.connect(location, create=True, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE IF NOT EXISTS sales COMMENT 'what we sold'")
        cur.execute(
            "CREATE EXTERNAL TABLE IF NOT EXISTS sales.orders ("
            " id BIGINT NOT NULL COMMENT 'order number',"
            " placed_at TIMESTAMP,"
            " amount DECIMAL(12,2) COMMENT 'in EUR',"
            " currency CHAR(3),"
            " tags ARRAY<VARCHAR(20)>,"
            " shipping STRUCT<city: STRING, zip: VARCHAR(10)>"
            f") COMMENT 'one row per order' LOCATION '{data_location}'"
        )
    finally:
        conn.close()


def run(spark, location: str) -> dict:  # type: ignore[no-untyped-def]
    """The pipeline; returns what it saw, for the test."""
    register(spark)

    # 1. Look the table up from the driver: schema and location, at one version.
    conn = trinitylake_dbapi.connect(location)
    try:
        version = conn.lakehouse.latest_version()
        schema = table_schema(conn, "sales.orders", version=version)
    finally:
        conn.close()
    table = (
        spark.read.format("trinitylake")
        .option("location", location)
        .option("version", version)
        .load()
        .where("namespace = 'sales' AND table_name = 'orders'")
        .first()
    )
    data_location = table.location

    # 2. An empty DataFrame with the table's schema, and one with a few rows.
    empty = spark.createDataFrame([], schema)
    rows = [
        (1, dt.datetime(2024, 5, 1, 12, 30), decimal.Decimal("19.99"), "EUR", ["gift"], ("Lyon", "69001")),
        (2, dt.datetime(2024, 5, 2, 8, 0), decimal.Decimal("5.00"), "EUR", [], ("Paris", "75002")),
    ]
    batch = spark.createDataFrame(rows, schema)

    # 3. Write Parquet to the table's location.
    empty.write.mode("overwrite").parquet(data_location)
    batch.write.mode("append").parquet(data_location)

    # 4. Read it back with the table's schema.
    back = spark.read.schema(schema).parquet(data_location)
    return {
        "schema": schema,
        "location": data_location,
        "read_schema": back.schema,
        "columns": from_spark_schema(back.schema),
        "rows": sorted(back.collect()),
    }


def main(argv: list[str]) -> None:
    from pyspark.sql import SparkSession

    base = argv[1] if len(argv) > 1 else tempfile.mkdtemp(prefix="trinitylake-pipeline-")
    location = os.path.join(base, "lake")
    create_lakehouse(location, os.path.join(base, "data", "orders"))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.master("local[2]").appName("trinitylake-pipeline").getOrCreate()
    try:
        seen = run(spark, location)
    finally:
        spark.stop()
    print(f"table sales.orders at {seen['location']}")
    for field in seen["schema"].fields:
        print(f"  {field.name}: {field.dataType.simpleString()} {dict(field.metadata)}")
    print(f"read back {len(seen['rows'])} rows")


if __name__ == "__main__":
    main(sys.argv)
