"""Values no column can hold are DataError naming the column, never InternalError or
ProgrammingError, and never stored as something else (issue 32, items 3 and 4;
sql.query Q9)."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
from typing import Any, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trinitylake_dbapi as tl
from trinitylake_dbapi import errors


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    location = str(tmp_path_factory.mktemp("values") / "lake")
    with tl.connect(location, create=True, autocommit=True) as c:
        cur = c.cursor()
        cur.execute("CREATE NAMESPACE ns")
        cur.execute(
            "CREATE TABLE ns.t (id INT, ts TIMESTAMP, tz TIMESTAMPTZ, d DATE, n DECIMAL(10, 2), "
            "s STRING, v VARCHAR(8), c CHAR(4), b BINARY)"
        )
        yield c


def rows(conn: Any, where: str) -> list[tuple]:
    return conn.cursor().execute(f"SELECT * FROM ns.t WHERE {where}").fetchall()


def expect_data_error(conn: Any, sql: str, parameters: Any = None, *, column: str, many: bool = False) -> None:
    cur = conn.cursor()
    with pytest.raises(errors.Error) as info:
        if many:
            cur.executemany(sql, parameters)
        elif parameters is None:
            cur.execute(sql)
        else:
            cur.execute(sql, parameters)
    assert type(info.value) is errors.DataError, f"{type(info.value).__name__}: {info.value}"
    assert repr(column) in str(info.value)


# -- item 3: dates and times past year 9999, decimals that are not numbers -----------------

FAR = [
    ("ts", "'10000-01-01 00:00:00'"),
    ("ts", "TIMESTAMP '9999-12-31 23:59:59' + INTERVAL 1 SECOND"),
    ("ts", "CAST('infinity' AS TIMESTAMP)"),
    ("tz", "CAST('10000-01-01 00:00:00+00' AS TIMESTAMPTZ)"),
    ("d", "'10000-01-01'"),
    ("d", "DATE '9999-12-31' + 1"),
    ("d", "CAST('-infinity' AS DATE)"),
]


@pytest.mark.parametrize(("column", "value"), FAR)
def test_a_date_or_timestamp_past_year_9999_is_a_data_error_naming_the_column(conn: Any, column: str, value: str) -> None:
    expect_data_error(conn, f"INSERT INTO ns.t (id, {column}) VALUES (1, {value})", column=column)
    expect_data_error(conn, f"INSERT INTO ns.t (id, {column}) SELECT 2, {value}", column=column)
    assert rows(conn, "id IN (1, 2)") == []


def test_far_timestamps_as_parameters_are_data_errors(conn: Any) -> None:
    expect_data_error(conn, "INSERT INTO ns.t (id, ts) VALUES (?, ?)", (3, "10000-01-01 00:00:00"), column="ts")
    expect_data_error(
        conn, "INSERT INTO ns.t (id, ts) VALUES (?, ?)", [(3, "2020-01-01"), (3, "10000-01-01")], column="ts", many=True
    )
    assert rows(conn, "id = 3") == []


def test_the_last_representable_instants_are_stored(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute(
        "INSERT INTO ns.t (id, ts, d) VALUES (4, TIMESTAMP '9999-12-31 23:59:59.999999', DATE '9999-12-31'), "
        "(4, TIMESTAMP '0001-01-01 00:00:00', DATE '0001-01-01')"
    )
    found = sorted(cur.execute("SELECT ts, d FROM ns.t WHERE id = 4").fetchall())
    assert found == [(dt.datetime(1, 1, 1), dt.date(1, 1, 1)), (dt.datetime(9999, 12, 31, 23, 59, 59, 999999), dt.date(9999, 12, 31))]


def test_a_result_value_past_year_9999_is_a_data_error_naming_the_column(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute("INSERT INTO ns.t (id) VALUES (5)")
    with pytest.raises(errors.DataError, match="'far'.*VARCHAR"):
        cur.execute("SELECT TIMESTAMP '9999-12-31 23:59:59' + INTERVAL 1 DAY AS far FROM ns.t WHERE id = 5").fetchall()
    assert cur.execute(
        "SELECT CAST(TIMESTAMP '9999-12-31 23:59:59' + INTERVAL 1 DAY AS VARCHAR) FROM ns.t WHERE id = 5"
    ).fetchall() == [("10000-01-01 23:59:59",)]


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "sNaN", "-NaN"])
def test_a_decimal_that_is_not_a_number_is_a_data_error(conn: Any, value: str) -> None:
    parameter = decimal.Decimal(value)
    for sql in ("INSERT INTO ns.t (id, n) VALUES (6, ?)", "SELECT ? FROM ns.t"):
        with pytest.raises(errors.Error) as info:
            conn.cursor().execute(sql, (parameter,))
        assert type(info.value) is errors.DataError, f"{type(info.value).__name__}: {info.value}"
        assert value.lstrip("-s") in str(info.value)
    with pytest.raises(errors.DataError):
        conn.cursor().executemany("INSERT INTO ns.t (id, n) VALUES (?, ?)", [(6, decimal.Decimal(1)), (6, parameter)])
    assert rows(conn, "id = 6") == []


# -- item 4: bytes bound to text columns ---------------------------------------------------


@pytest.mark.parametrize("column", ["s", "v", "c"])
@pytest.mark.parametrize("value", [b"\xff\xfe", b"ok\x80", bytearray(b"\xc3"), memoryview(b"\xed\xa0\x80")])
def test_bytes_that_are_not_utf8_for_a_text_column_are_a_data_error(conn: Any, column: str, value: Any) -> None:
    expect_data_error(conn, f"INSERT INTO ns.t (id, {column}) VALUES (7, ?)", (value,), column=column)
    expect_data_error(
        conn, f"INSERT INTO ns.t (id, {column}) VALUES (?, ?)", [(7, b"fine"), (7, value)], column=column, many=True
    )
    assert rows(conn, "id = 7") == []


#: The ids of the property test below, one per example (a DELETE of the last example's
#: rows was a third of its commits).
_UTF8_IDS = itertools.count(1000)


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(text=st.text(max_size=4))
def test_utf8_bytes_for_a_text_column_are_stored_as_their_text(conn: Any, text: str) -> None:
    cur = conn.cursor()
    key = next(_UTF8_IDS)
    cur.execute("INSERT INTO ns.t (id, s, v) VALUES (?, ?, ?)", (key, text.encode(), text.encode()))
    cur.executemany("INSERT INTO ns.t (id, s, v) VALUES (?, ?, ?)", [(key, text.encode(), bytearray(text.encode()))])
    assert cur.execute("SELECT s, v FROM ns.t WHERE id = ?", (key,)).fetchall() == [(text, text)] * 2


def test_bytes_for_a_binary_column_stay_bytes(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute("INSERT INTO ns.t (id, b) VALUES (9, ?)", (b"\xff\xfe",))
    assert cur.execute("SELECT b FROM ns.t WHERE id = 9").fetchall() == [(b"\xff\xfe",)]
