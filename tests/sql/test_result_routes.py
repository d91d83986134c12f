"""A SELECT's result reaches the cursor by one of two routes (sql.query.engine
``stream``): duckdb 2's one-step streaming result, or the public relation route (duckdb
1.5, or a DuckDB whose one-step call differs). Both give the same rows, types, errors
and streaming."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any, Iterator

import pytest

from trinitylake_dbapi import errors
from trinitylake_dbapi.sql.query import engine as engine_module
from tests.lakes import Lake

QUERIES = [
    "SELECT k, count(*), sum(i), min(i), max(d), sum(d) FROM ns.t GROUP BY k ORDER BY k",
    "SELECT sum(i) * 1 AS s, avg(i) FROM ns.t",  # sum of integers: HUGEINT in DuckDB, int here
    "SELECT i, s, d, ts, tz, m, l, st FROM ns.t WHERE i < 5 ORDER BY i",
    "SELECT i FROM ns.t WHERE i = 7",
    "SELECT * FROM ns.t WHERE false",
    "SELECT count(*) FROM ns.t a JOIN ns.t b ON a.k = b.k",
]


def _rows(conn: Any) -> Iterator[tuple]:
    cur = conn.cursor()
    for sql in QUERIES:
        cur.execute(sql)
        yield sql, cur.description, cur.fetchall()
    cur.execute("SELECT i FROM ns.t ORDER BY i")
    assert cur.rowcount == -1
    first = cur.fetchmany(3)
    yield "stream", first + cur.fetchmany(10_000), cur.fetchall()


@pytest.mark.parametrize("one_step", [True, False])
def test_both_routes_give_the_same_results(memory_lake: Lake, monkeypatch: pytest.MonkeyPatch, one_step: bool) -> None:
    conn = memory_lake.connect(autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute("CREATE TABLE ns.t (i BIGINT, k INT, s STRING, d DECIMAL(12, 2), ts TIMESTAMP, tz TIMESTAMPTZ, "
                "m MAP<STRING, INT>, l LIST<INT>, st STRUCT<x: INT, y: STRING>)")  # fmt: skip
    rows = [
        (i, i % 3, f"s{i}", decimal.Decimal(i) / 4, dt.datetime(2026, 1, 1, i % 24),
         dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), {"a": i}, [i, None], {"x": i, "y": str(i)})
        for i in range(20_000)
    ]  # fmt: skip
    cur.executemany("INSERT INTO ns.t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    monkeypatch.setattr(engine_module, "_ONE_STEP", False)
    expected = list(_rows(conn))  # the relation route
    monkeypatch.setattr(engine_module, "_ONE_STEP", one_step)
    if one_step:  # (the relation route read again would be compared with itself)
        assert list(_rows(conn)) == expected
    assert expected[1][2] == [(sum(range(20_000)), sum(range(20_000)) / 20_000)]
    assert isinstance(expected[1][2][0][0], int) and expected[1][1][0][1] == "int8"
    with pytest.raises(errors.DataError, match="BIGINT"):
        cur.execute("SELECT sum(i) * 9223372036854775807 FROM ns.t").fetchall()
    with pytest.raises(errors.DatabaseError):
        cur.execute("SELECT CAST(s AS INT) FROM ns.t").fetchall()
    conn.close()
