"""Primary keys on Spark writes through the data source (issue 36; iceberg.keys PK2):
the driver's commit goes through the project's catalog, so an append or overwrite that
would duplicate a key of a keyed table fails the job with the IntegrityError's message
(naming the table, the key and the value) and commits nothing."""

from __future__ import annotations

import pytest

import trinitylake_dbapi
from trinitylake_dbapi.spark import table_schema


def _rows(location: str) -> list[tuple]:
    with trinitylake_dbapi.connect(location) as conn:
        cur = conn.cursor()
        cur.execute("SELECT id, name FROM n.users ORDER BY id")
        return cur.fetchall()


def test_spark_writes_respect_the_primary_key(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    location = str(tmp_path / "lake")
    with trinitylake_dbapi.connect(location, create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE n")
        cur.execute("CREATE TABLE n.users (id BIGINT PRIMARY KEY, name STRING)")
        cur.execute("INSERT INTO n.users VALUES (1, 'a'), (2, 'b')")
    schema = table_schema(location, "n.users")

    def write(rows: list[tuple], mode: str = "append") -> None:
        (spark.createDataFrame(rows, schema).write.format("trinitylake").option("location", location)
         .option("table", "n.users").mode(mode).save())  # fmt: skip

    with pytest.raises(Exception, match=r"PRIMARY KEY constraint failed: table n\.users already holds key \(id\) = \(2\)"):
        write([(3, "c"), (2, "again")])
    with pytest.raises(Exception, match=r"\(id\) = \(5\) more than once"):
        write([(5, "x"), (5, "y")], mode="overwrite")
    assert _rows(location) == [(1, "a"), (2, "b")]
    write([(3, "c")])
    write([(1, "new"), (2, "new")], mode="overwrite")  # every row replaced: the same keys again
    assert _rows(location) == [(1, "new"), (2, "new")]
