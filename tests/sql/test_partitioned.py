"""Partitioned tables in SQL (issue 36): PARTITIONED BY, partition evolution, SHOW CREATE
TABLE, errors (iceberg.partitioning PT1-PT4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)

import trinitylake_dbapi
from trinitylake_dbapi.errors import (
    NotSupportedError,
    ObjectNotFoundError,
    ProgrammingError,
    SQLSyntaxError,
)


@pytest.fixture
def conn(tmp_path: Path) -> Any:
    c = trinitylake_dbapi.connect(str(tmp_path / "lake"), create=True, autocommit=True)
    c.cursor().execute("CREATE NAMESPACE ns")
    yield c
    c.close()


COLUMNS = "(ts timestamp, d date, id int, big bigint, name string, amount decimal(10, 2), region string, bin binary, tm time)"


def spec_of(conn: Any, table: str) -> list[tuple[str, str, Any]]:
    """(source column, transform, field name) of the table's current spec, by PyIceberg."""
    t = conn.iceberg_catalog().load_table(table)
    schema = t.schema()
    return [(schema.find_column_name(f.source_id), f.transform, f.name) for f in t.spec().fields]


def show_create(conn: Any, table: str) -> str:
    cur = conn.cursor()
    cur.execute(f"SHOW CREATE TABLE {table}")
    return cur.fetchone()[0]


def test_every_transform_lands_in_the_iceberg_spec(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute(
        f"CREATE TABLE ns.t {COLUMNS} PARTITIONED BY (day(ts), bucket(16, id), truncate(4, name), region, "
        "year(d), identity(amount) AS m, bucket(2, ts), truncate(big, 10), bucket(amount, 3))"
    )
    t = conn.iceberg_catalog().load_table("ns.t")
    assert t.spec().spec_id == 0 and [f.field_id for f in t.spec().fields] == list(range(1000, 1009))
    assert spec_of(conn, "ns.t") == [
        ("ts", DayTransform(), "ts_day"),
        ("id", BucketTransform(16), "id_bucket_16"),
        ("name", TruncateTransform(4), "name_trunc_4"),
        ("region", IdentityTransform(), "region"),
        ("d", YearTransform(), "d_year"),
        ("amount", IdentityTransform(), "m"),
        ("ts", BucketTransform(2), "ts_bucket_2"),
        ("big", TruncateTransform(10), "big_trunc_10"),
        ("amount", BucketTransform(3), "amount_bucket_3"),
    ]


def test_show_create_table_round_trips(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute(
        f"CREATE TABLE ns.t {COLUMNS} PARTITIONED BY (day(ts), bucket(16, id), truncate(name, 4), "
        "region AS \"Where\", identity(big))"
    )
    text = show_create(conn, "ns.t")
    assert 'PARTITIONED BY (day(ts), bucket(16, id), truncate(4, name), region AS `Where`, big)' in text
    cur.execute(text.replace("ns.t", "ns.u", 1))
    assert spec_of(conn, "ns.u") == spec_of(conn, "ns.t")
    assert show_create(conn, "ns.u") == text.replace("ns.t", "ns.u", 1)


def test_unpartitioned_show_create_has_no_clause(conn: Any) -> None:
    conn.cursor().execute("CREATE TABLE ns.t (a int)")
    assert "PARTITIONED" not in show_create(conn, "ns.t")
    assert conn.iceberg_catalog().load_table("ns.t").spec().is_unpartitioned()


def test_clauses_in_any_order_and_ctas(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute("CREATE TABLE ns.a (x int, y string) COMMENT 'c' PARTITIONED BY (y) TBLPROPERTIES ('k' = 'v')")
    assert spec_of(conn, "ns.a") == [("y", IdentityTransform(), "y")]
    cur.execute("INSERT INTO ns.a VALUES (1, 'p'), (2, 'q'), (3, 'p')")
    cur.execute("CREATE TABLE ns.b PARTITIONED BY (bucket(4, x)) AS SELECT * FROM ns.a")
    assert spec_of(conn, "ns.b") == [("x", BucketTransform(4), "x_bucket_4")]
    cur.execute("SELECT x, y FROM ns.b ORDER BY x")
    assert cur.fetchall() == [(1, "p"), (2, "q"), (3, "p")]
    cur.execute("CREATE TABLE IF NOT EXISTS ns.b PARTITIONED BY (y) AS SELECT * FROM ns.a")
    assert spec_of(conn, "ns.b") == [("x", BucketTransform(4), "x_bucket_4")]


@pytest.mark.parametrize(
    ("clause", "error", "message"),
    [
        ("(nope)", ObjectNotFoundError, "partition field nope: table ns.bad has no column 'nope'"),
        ("(day(nope))", ObjectNotFoundError, "partition field day(nope): table ns.bad has no column 'nope'"),
        ("(day(name))", ProgrammingError, "day cannot partition column 'name' of type string"),
        ("(hour(d))", ProgrammingError, "hour cannot partition column 'd' of type date"),
        ("(truncate(3, ts))", ProgrammingError, "truncate cannot partition column 'ts'"),
        ("(bucket(0, id))", ProgrammingError, "bucket(0, id): the bucket count must be at least 1, not 0"),
        ("(truncate(0, name))", ProgrammingError, "the truncate width must be at least 1, not 0"),
        ("(bucket(id))", ProgrammingError, "bucket takes a number and a column"),
        ("(day(3, ts))", ProgrammingError, "day takes only a column"),
        ("(frob(id))", ProgrammingError, "unknown transform 'frob'"),
        ("(id, id)", ProgrammingError, "the table is already partitioned by id"),
        ("(day(ts), days(ts))", ProgrammingError, "already partitioned by day(ts)"),
        ("(bucket(4, id) AS name)", ProgrammingError, "its name 'name' is a column's"),
        ("(id AS p, region AS p)", ProgrammingError, "already named 'p'"),
        ("(day(ts), hour(ts))", ProgrammingError, "hour(ts): redundant with day(ts)"),
        ("(month(d), years(d))", ProgrammingError, "redundant with month(d)"),
        ("(months(ts), hour(ts))", ProgrammingError, "redundant"),
        ("()", SQLSyntaxError, "Expected a partition column name"),
        ("(truncate(2, bin))", NotSupportedError, "truncate of a binary column is not supported"),
        ("(bucket(2, tm))", NotSupportedError, "bucket of a time column is not supported"),
        ("(bucket(4, 5))", SQLSyntaxError, "Expected a column name"),
    ],
)
def test_bad_partitioning_is_refused_and_nothing_is_created(conn: Any, clause: str, error: type, message: str) -> None:
    cur = conn.cursor()
    with pytest.raises(error, match=None) as raised:
        cur.execute(f"CREATE TABLE ns.bad {COLUMNS} PARTITIONED BY {clause}")
    assert message in str(raised.value)
    cur.execute("SHOW TABLES IN ns")
    assert cur.fetchall() == []


def test_partition_evolution(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE ns.t {COLUMNS} PARTITIONED BY (region)")
    cur.execute("INSERT INTO ns.t (ts, id, region) VALUES (TIMESTAMP '2024-01-01 10:00', 1, 'eu')")
    cur.execute("ALTER TABLE ns.t ADD PARTITION FIELD bucket(8, id)")
    cur.execute("ALTER TABLE ns.t ADD PARTITION FIELD day(ts) AS dd")
    assert spec_of(conn, "ns.t") == [
        ("region", IdentityTransform(), "region"), ("id", BucketTransform(8), "id_bucket_8"), ("ts", DayTransform(), "dd"),
    ]  # fmt: skip
    cur.execute("ALTER TABLE ns.t DROP PARTITION FIELD region")
    cur.execute("ALTER TABLE ns.t DROP PARTITION FIELD dd")  # by its name
    cur.execute("ALTER TABLE ns.t DROP PARTITION FIELD bucket(8, id)")  # by its transform
    t = conn.iceberg_catalog().load_table("ns.t")
    assert t.spec().is_unpartitioned() and len(t.specs()) >= 3
    cur.execute("ALTER TABLE ns.t ADD PARTITION FIELD bucket(8, id)")
    t = conn.iceberg_catalog().load_table("ns.t")
    assert [f.field_id for f in t.spec().fields] == [1001]  # Iceberg reuses the field's id
    cur.execute("INSERT INTO ns.t (ts, id, region) VALUES (TIMESTAMP '2024-01-02 10:00', 2, 'us')")
    cur.execute("SELECT id, region FROM ns.t ORDER BY id")
    assert cur.fetchall() == [(1, "eu"), (2, "us")]
    assert "PARTITIONED BY (bucket(8, id))" in show_create(conn, "ns.t")


@pytest.mark.parametrize(
    ("statement", "error", "message"),
    [
        ("ADD PARTITION FIELD region", ProgrammingError, "already partitioned by it"),
        ("ADD PARTITION FIELD month(ts)", ProgrammingError, "month(ts): redundant with day(ts)"),
        ("ADD PARTITION FIELD day(nope)", ObjectNotFoundError, "no column 'nope'"),
        ("ADD PARTITION FIELD bucket(0, id)", ProgrammingError, "at least 1"),
        ("DROP PARTITION FIELD id", ObjectNotFoundError, "table ns.t is not partitioned by id"),
        ("DROP PARTITION FIELD bucket(4, id)", ObjectNotFoundError, "not partitioned by bucket(4, id)"),
    ],
)
def test_bad_evolution_is_refused_and_changes_nothing(conn: Any, statement: str, error: type, message: str) -> None:
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE ns.t {COLUMNS} PARTITIONED BY (region, day(ts))")
    before = conn.iceberg_catalog().load_table("ns.t").metadata_location
    with pytest.raises(error) as raised:
        cur.execute(f"ALTER TABLE ns.t {statement}")
    assert message in str(raised.value)
    assert conn.iceberg_catalog().load_table("ns.t").metadata_location == before


def test_evolution_of_a_missing_table_names_it(conn: Any) -> None:
    with pytest.raises(ObjectNotFoundError, match="missing"):
        conn.cursor().execute("ALTER TABLE ns.missing ADD PARTITION FIELD a")


def test_a_partition_source_column_cannot_be_dropped(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE ns.t {COLUMNS} PARTITIONED BY (bucket(4, id))")
    with pytest.raises(ProgrammingError, match="id"):
        cur.execute("ALTER TABLE ns.t DROP COLUMN id")


def test_partitioning_in_a_rolled_back_transaction_leaves_nothing(tmp_path: Path) -> None:
    c = trinitylake_dbapi.connect(str(tmp_path / "lake"), create=True)
    cur = c.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute("CREATE TABLE ns.t (a int, b string) PARTITIONED BY (b)")
    c.commit()
    cur.execute("ALTER TABLE ns.t ADD PARTITION FIELD bucket(2, a)")
    c.rollback()
    assert "PARTITIONED BY (b)\n" in show_create(c, "ns.t") + "\n"


def show_partitions(conn: Any, table: str) -> list[tuple]:
    cur = conn.cursor()
    cur.execute(f"SHOW PARTITIONS {table}")
    assert [d[0] for d in cur.description] == [
        "spec_id", "partition", "record_count", "file_count", "total_size_bytes", "position_delete_record_count",
        "position_delete_file_count",
    ]  # fmt: skip
    return [tuple(r) for r in cur.fetchall()]


def test_show_partitions_counts_rows_files_and_bytes(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute("CREATE TABLE ns.t (id bigint, region string, d date) PARTITIONED BY (region, month(d))")
    assert show_partitions(conn, "ns.t") == []
    cur.executemany("INSERT INTO ns.t VALUES (?, ?, DATE '2024-01-05' + ?)", [(i, ["eu", "us"][i % 2], i * 20) for i in range(6)])
    cur.execute("INSERT INTO ns.t VALUES (10, 'eu', DATE '2024-01-06')")
    shown = show_partitions(conn, "ns.t")
    t = conn.iceberg_catalog().load_table("ns.t")
    sizes: dict[str, int] = {}
    for task in t.scan().plan_files():
        path = t.spec().partition_to_path(task.file.partition, t.schema())
        sizes[path] = sizes.get(path, 0) + task.file.file_size_in_bytes
    assert [(s, p, r, f) for s, p, r, f, _, _, _ in shown] == [
        (0, "region=eu/d_month=2024-01", 2, 2), (0, "region=eu/d_month=2024-02", 1, 1),
        (0, "region=eu/d_month=2024-03", 1, 1), (0, "region=us/d_month=2024-01", 1, 1),
        (0, "region=us/d_month=2024-03", 1, 1), (0, "region=us/d_month=2024-04", 1, 1),
    ]  # fmt: skip
    assert {p: b for _, p, _, _, b, _, _ in shown} == sizes
    assert all(r[5:] == (0, 0) for r in shown)
    cur.execute("SHOW VERSIONS LIMIT 1")
    before_delete = cur.fetchall()[0][0]
    cur.execute("ALTER TABLE ns.t SET TBLPROPERTIES ('write.delete.mode' = 'copy-on-write')")
    cur.execute("DELETE FROM ns.t WHERE region = 'us' AND d < DATE '2024-02-01'")  # whole files go
    cur.execute("ALTER TABLE ns.t SET TBLPROPERTIES ('write.delete.mode' = 'merge-on-read')")
    cur.execute("DELETE FROM ns.t WHERE id = 10")  # a position delete in that partition
    assert [r[1:] for r in show_partitions(conn, "ns.t") if r[1].startswith("region=eu/d_month=2024-01") or
            r[1].startswith("region=us/d_month=2024-01")] == [("region=eu/d_month=2024-01", 2, 2, sizes[
                "region=eu/d_month=2024-01"], 1, 1)]  # fmt: skip
    cur.execute(f"SHOW PARTITIONS ns.t FOR SYSTEM_VERSION AS OF {before_delete}")
    assert len(cur.fetchall()) == 6


def test_show_partitions_of_evolved_and_unpartitioned_tables(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute("CREATE TABLE ns.u (id bigint)")
    cur.execute("INSERT INTO ns.u VALUES (1), (2)")
    assert [r[:4] for r in show_partitions(conn, "ns.u")] == [(0, "", 2, 1)]
    cur.execute("ALTER TABLE ns.u ADD PARTITION FIELD bucket(2, id)")
    cur.execute("INSERT INTO ns.u VALUES (3), (4), (5)")
    rows = [r[:4] for r in show_partitions(conn, "ns.u")]
    assert rows[0] == (0, "", 2, 1) and {r[0] for r in rows[1:]} == {1} and sum(r[2] for r in rows) == 5
    with pytest.raises(ObjectNotFoundError, match="missing"):
        cur.execute("SHOW PARTITIONS ns.missing")
    with pytest.raises(SQLSyntaxError):
        cur.execute("SHOW PARTITIONS")


def test_describe_extended_shows_the_partitioning(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE ns.t {COLUMNS} PARTITIONED BY (day(ts), bucket(4, id) AS `my shard`)")
    cur.execute("DESCRIBE ns.t")
    plain = cur.fetchall()
    assert len(plain) == 9
    cur.execute("DESCRIBE TABLE EXTENDED ns.t")
    assert cur.fetchall() == [*plain, ("# Partitioning", "", None, None), ("Part 0", "day(ts)", None, None),
                              ("Part 1", "bucket(4, id) AS `my shard`", None, None)]  # fmt: skip
    cur.execute("CREATE TABLE ns.u (a int)")
    cur.execute("DESCRIBE EXTENDED ns.u")
    assert cur.fetchall() == [("a", "int4", True, None)]
