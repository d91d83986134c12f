"""A one-row INSERT of constants (literals, bound parameters) is checked and converted
from its VALUES list itself, without the temporary copy an INSERT ... SELECT gets
(sql.query.writes checked_values, Q3/Q9): the same rows are stored and the same errors
raised either way."""

from __future__ import annotations

import datetime as dt
from typing import Any, Iterator

import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trinitylake_dbapi as tl
from trinitylake_dbapi import errors
from trinitylake_dbapi.sql.binding import bind
from trinitylake_dbapi.sql.query.writes import constant_rows

COLUMNS = "k INT, i BIGINT, s VARCHAR(5) NOT NULL, d DATE, x DOUBLE, b BINARY, t TIMESTAMP"


@pytest.mark.parametrize(
    ("sql", "parameters", "constant"),
    [
        ("INSERT INTO t VALUES (?, ?, ?)", (1, "a", dt.date(2020, 1, 1)), True),
        ("INSERT INTO t VALUES (?, ?, ?)", (-1, b"\xff", {"a": [1, -2.5]}), True),
        ("INSERT INTO t VALUES (1, 'a'), (2, NULL)", None, True),
        ("INSERT INTO t VALUES (random())", None, False),
        ("INSERT INTO t VALUES (now())", None, False),
        ("INSERT INTO t VALUES ((SELECT max(k) FROM u))", None, False),
        ("INSERT INTO t VALUES (k)", None, False),
        ("INSERT INTO t SELECT 1", None, False),
    ],
)
def test_which_sources_are_constant(sql: str, parameters: Any, constant: bool) -> None:
    statement = bind(sqlglot.parse_one(sql), parameters)
    assert constant_rows(statement.expression) is constant


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    location = str(tmp_path_factory.mktemp("constant-rows") / "lake")
    with tl.connect(location, create=True, autocommit=True) as c:
        cur = c.cursor()
        cur.execute("CREATE NAMESPACE ns")
        for table in ("by_values", "by_select"):
            cur.execute(f"CREATE TABLE ns.{table} ({COLUMNS}) TBLPROPERTIES ('compaction.auto.min-small-files' = '0')")
        yield c


_KEYS = iter(range(1, 1 << 30))

VALUES = {
    "i": st.one_of(st.none(), st.integers(-(2**70), 2**70), st.sampled_from(["12", "x", "1e3"]), st.floats(allow_nan=True)),
    "s": st.one_of(st.none(), st.text(max_size=7), st.integers(-10**6, 10**6), st.binary(max_size=6)),
    "d": st.one_of(st.none(), st.dates(), st.sampled_from(["2020-02-30", "10000-01-01", "2020-01-01", "x"])),
    "x": st.one_of(st.none(), st.floats(), st.integers(-(2**70), 2**70), st.sampled_from(["1.5", "nan", "y"])),
    "b": st.one_of(st.none(), st.binary(max_size=6), st.text(max_size=3)),
    "t": st.one_of(st.none(), st.datetimes(), st.sampled_from(["2020-01-01 10:00:00", "infinity", "z"])),
}


def _outcome(conn: Any, table: str, sql: str, key: int, values: tuple) -> tuple:
    cur = conn.cursor()
    try:
        cur.execute(sql.format(table=table), (key, *values))
    except errors.Error as e:
        return type(e).__name__, str(e).replace(table, "<table>")
    rows = cur.execute(f"SELECT i, s, d, x, b, t FROM ns.{table} WHERE k = ?", (key,)).fetchall()
    return ("stored", [tuple("NaN" if v != v else v for v in row) for row in rows])  # NaN == NaN here


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.tuples(*(VALUES[c] for c in ("i", "s", "d", "x", "b", "t"))))
def test_constant_rows_store_and_fail_as_a_select_does(conn: Any, values: tuple) -> None:
    key = next(_KEYS)
    by_values = _outcome(conn, "by_values", "INSERT INTO ns.{table} VALUES (?, ?, ?, ?, ?, ?, ?)", key, values)
    by_select = _outcome(conn, "by_select", "INSERT INTO ns.{table} SELECT ?, ?, ?, ?, ?, ?, ?", key, values)
    assert by_values == by_select
    if by_values[0] != "stored":
        assert by_values[0] in ("DataError", "IntegrityError"), by_values
