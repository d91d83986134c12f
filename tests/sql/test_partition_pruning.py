"""Reads of partitioned tables prune by partition values (issue 36; iceberg.planning PC7,
sql.query.pruning Q7): files whose partition rules out every row are not read, with
literals and bound parameters; the pruned answer is the unpruned one (hypothesis)."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trinitylake_dbapi
from trinitylake_dbapi import errors


def connect(path: Path) -> Any:
    c = trinitylake_dbapi.connect(str(path), create=True, autocommit=True)
    c.cursor().execute("CREATE NAMESPACE IF NOT EXISTS ns")
    return c


def q(cur: Any, sql: str, params: Any = None) -> list[tuple]:
    cur.execute(sql, params)
    return [tuple(r) for r in cur.fetchall()]


def files_by_partition(conn: Any, table: str) -> dict[tuple, list[str]]:
    t = conn.iceberg_catalog().load_table(table)
    found: dict[tuple, list[str]] = {}
    for task in t.scan().plan_files():
        found.setdefault(tuple(task.file.partition), []).append(task.file.file_path.removeprefix("file://"))
    return found


BASE = dt.datetime(2024, 1, 1)
ROWS = [(BASE + dt.timedelta(days=i % 4, hours=i), i, f"n{i}", ["eu", "us"][i % 2]) for i in range(40)]


@pytest.fixture
def table(tmp_path: Path) -> Any:
    """ns.t partitioned by bucket(4, id) (column bounds of its files all overlap: only
    partition values prune) and day(ts); 40 rows in one INSERT."""
    conn = connect(tmp_path / "lake")
    cur = conn.cursor()
    cur.execute("CREATE TABLE ns.t (ts timestamp, id bigint, name string, region string) "
                "PARTITIONED BY (bucket(4, id), day(ts))")  # fmt: skip
    cur.executemany("INSERT INTO ns.t VALUES (?, ?, ?, ?)", ROWS)
    yield conn
    conn.close()


def remove_all_but(conn: Any, keep: set[str]) -> None:
    """Delete every data file of ns.t except ``keep``: a query that reads one fails."""
    for files in files_by_partition(conn, "ns.t").values():
        for f in files:
            if f not in keep:
                os.remove(f)


def test_bucket_and_day_conditions_read_only_matching_partitions(table: Any) -> None:
    from pyiceberg.transforms import BucketTransform
    from pyiceberg.types import LongType

    bucket = BucketTransform(4).transform(LongType())
    by_partition = files_by_partition(table, "ns.t")
    assert len(by_partition) > 8
    day2 = (dt.date(2024, 1, 3) - dt.date(1970, 1, 1)).days
    # Rows with id 6 (bucket b, day 2) and everything in day 2 for the bucket of 6.
    keep = set(by_partition[(bucket(6), day2)])
    remove_all_but(table, keep)
    cur = table.cursor()
    assert q(cur, "SELECT id FROM ns.t WHERE id = 6") == [(6,)]
    assert q(cur, "SELECT id FROM ns.t WHERE id = ?", [6]) == [(6,)]
    assert q(cur, "SELECT id FROM ns.t WHERE id IN (6, ?) AND ts >= TIMESTAMP '2024-01-03 00:00:00' "
                  "AND ts < ?", [6, dt.datetime(2024, 1, 4)]) == [(6,)]  # fmt: skip
    def day(i: int) -> int:
        return (ROWS[i][0].date() - dt.date(1970, 1, 1)).days

    others = [i for i in range(40) if (bucket(i), day(i)) != (bucket(6), day2)]
    with pytest.raises(errors.OperationalError):
        q(cur, f"SELECT id FROM ns.t WHERE id = {others[0]}")
    with pytest.raises(errors.OperationalError):
        q(cur, "SELECT count(*) FROM ns.t")


def test_timestamp_and_date_literals_prune_by_day(tmp_path: Path) -> None:
    conn = connect(tmp_path / "lake")
    cur = conn.cursor()
    cur.execute("CREATE TABLE ns.e (ts timestamp, d date, v int) PARTITIONED BY (month(d), hour(ts))")
    cur.executemany("INSERT INTO ns.e VALUES (?, ?, ?)", [
        (BASE + dt.timedelta(hours=h), dt.date(2024, 1 + h % 3, 1), h) for h in range(12)
    ])  # fmt: skip
    keep = [f for p, fs in files_by_partition(conn, "ns.e").items() for f in fs]
    assert len(keep) == 12
    t = conn.iceberg_catalog().load_table("ns.e")
    wanted = {task.file.file_path.removeprefix("file://") for task in t.scan(row_filter="v = 5").plan_files()}
    assert len(wanted) == 1
    for f in keep:
        if f not in wanted:
            os.remove(f)
    assert q(cur, "SELECT v FROM ns.e WHERE ts = TIMESTAMP '2024-01-01 05:00:00'") == [(5,)]
    assert q(cur, "SELECT v FROM ns.e WHERE ts = ? AND d = ?", [BASE + dt.timedelta(hours=5), dt.date(2024, 3, 1)]) == [(5,)]
    assert q(cur, "SELECT v FROM ns.e WHERE d = DATE '2024-03-01' AND ts >= TIMESTAMP '2024-01-01 05:00' "
                  "AND ts < TIMESTAMP '2024-01-01 06:00'") == [(5,)]  # fmt: skip
    conn.close()


def test_partition_pruning_across_evolved_specs(tmp_path: Path) -> None:
    conn = connect(tmp_path / "lake")
    cur = conn.cursor()
    cur.execute("CREATE TABLE ns.t (id bigint, region string) PARTITIONED BY (region)")
    cur.executemany("INSERT INTO ns.t VALUES (?, ?)", [(i, ["eu", "us"][i % 2]) for i in range(10)])
    cur.execute("ALTER TABLE ns.t DROP PARTITION FIELD region")
    cur.execute("ALTER TABLE ns.t ADD PARTITION FIELD bucket(3, id)")
    cur.executemany("INSERT INTO ns.t VALUES (?, ?)", [(i, ["eu", "us"][i % 2]) for i in range(10, 20)])
    assert q(cur, "SELECT id FROM ns.t WHERE region = 'eu' AND id > 14 ORDER BY id") == [(16,), (18,)]
    assert q(cur, "SELECT count(*) FROM ns.t WHERE id = 3") == [(1,)]
    conn.close()


CONDITIONS = st.one_of(
    st.tuples(st.just("id"), st.sampled_from(["=", "<", "<=", ">", ">=", "<>"]), st.integers(-5, 45)),
    st.tuples(st.just("name"), st.sampled_from(["=", "<", ">="]), st.sampled_from(["n1", "n10", "n5", "m", "o", ""])),
    st.tuples(st.just("region"), st.sampled_from(["=", "<>"]), st.sampled_from(["eu", "us", "ap"])),
    st.tuples(st.just("ts"), st.sampled_from(["=", "<", ">="]),
              st.integers(-24, 120).map(lambda h: BASE + dt.timedelta(hours=h))),
    st.tuples(st.just("id"), st.just("in"), st.lists(st.integers(-2, 42), min_size=1, max_size=4)),
)
OPS = {"=": lambda a, b: a == b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
       ">=": lambda a, b: a >= b, "<>": lambda a, b: a != b, "in": lambda a, b: a in b}  # fmt: skip
SPECS = ["bucket(4, id), day(ts)", "truncate(2, name), region", "hour(ts)", "truncate(10, id), month(ts)",
         "bucket(3, name), identity(id)", "year(ts), bucket(2, region)"]  # fmt: skip


@pytest.fixture(scope="module")
def spec_tables(tmp_path_factory: Any) -> Iterator[tuple[Any, dict[str, str]]]:
    """One lakehouse for the examples below, which only read: ROWS in a table per spec of
    SPECS, made when an example first draws the spec (cursor, spec -> table name)."""
    with connect(tmp_path_factory.mktemp("lake")) as conn:
        yield conn.cursor(), {}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=st.sampled_from(SPECS), conditions=st.lists(CONDITIONS, min_size=1, max_size=3),
       bind=st.booleans())  # fmt: skip
def test_pruned_reads_give_the_unpruned_answer(
    spec_tables: tuple[Any, dict[str, str]], spec: str, conditions: list, bind: bool
) -> None:
    cur, tables = spec_tables
    if spec not in tables:
        table = f"ns.t{len(tables)}"
        cur.execute(f"CREATE TABLE {table} (ts timestamp, id bigint, name string, region string) PARTITIONED BY ({spec})")
        cur.executemany(f"INSERT INTO {table} VALUES (?, ?, ?, ?)", ROWS)
        tables[spec] = table
    where, params = [], []
    for column, op, value in conditions:
        if op == "in":
            where.append(f"{column} IN ({', '.join('?' for _ in value)})")
            params += value
        elif bind:
            where.append(f"{column} {op} ?")
            params.append(value)
        else:
            literal = f"TIMESTAMP '{value}'" if isinstance(value, dt.datetime) else (
                f"'{value}'" if isinstance(value, str) else str(value))
            where.append(f"{column} {op} {literal}")
    got = q(cur, f"SELECT id FROM {tables[spec]} WHERE {' AND '.join(where)} ORDER BY id", params or None)
    names = {"ts": 0, "id": 1, "name": 2, "region": 3}
    expected = [(r[1],) for r in ROWS if all(OPS[op](r[names[c]], v) for c, op, v in conditions)]
    assert got == expected
