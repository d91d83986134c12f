"""What a new user of the driver types and reads (issue 32, items 5-10): other drivers'
parameter markers, rowcount, numpy and pyarrow values as parameters, date and time
functions, integer sums, savepoints."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from typing import Any

import pytest

import trinitylake_dbapi as tl
from trinitylake_dbapi import errors
from tests.lakes import Lake


@pytest.fixture
def data(memory_lake: Lake) -> Any:
    """A cursor (autocommit) on a lakehouse with ``ns.t (a INT, b STRING)`` holding 3 rows."""
    conn = memory_lake.connect(autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute("CREATE TABLE ns.t (a INT, b STRING)")
    cur.executemany("INSERT INTO ns.t VALUES (?, ?)", [(1, "x"), (2, "y"), (3, "z")])
    yield cur
    conn.close()


# -- item 7: other drivers' parameter markers ------------------------------------------------

@pytest.mark.parametrize(
    "sql, parameters, marker, where, instead",
    [
        ("SELECT * FROM ns.t WHERE a = %(x)s", {"x": 1}, "%(x)s", "line 1, column 30", ":x"),
        ("SELECT * FROM ns.t WHERE a = %s", (1,), "%s", "line 1, column 30", "?"),
        ("INSERT INTO ns.t VALUES (%s, %s)", (4, "w"), "%s", "line 1, column 26", "?"),
        ("SELECT '%s' AS s,\n  a FROM ns.t WHERE a = %(the_a)s", {"the_a": 1}, "%(the_a)s",
         "line 2, column 25", ":the_a"),
        ("SELECT \"%s\" /* %s */ -- %s\nFROM ns.t WHERE b = %s", ("x",), "%s", "line 2, column 21", "?"),
    ],
)  # fmt: skip
def test_another_drivers_markers_name_the_paramstyle(
    data: Any, sql: str, parameters: Any, marker: str, where: str, instead: str
) -> None:
    for run in (lambda: data.execute(sql, parameters), lambda: data.executemany(sql, [parameters])):
        with pytest.raises(errors.ProgrammingError) as raised:
            run()
        message = str(raised.value)
        assert f"parameter marker {marker} at {where}" in message
        assert "paramstyle is 'qmark'" in message and f"write {instead} " in message
        assert not isinstance(raised.value, errors.SQLSyntaxError)
    assert tl.paramstyle == "qmark"


def test_percent_inside_strings_and_real_syntax_errors_stay_what_they_are(data: Any) -> None:
    data.execute("SELECT b FROM ns.t WHERE b LIKE '%s' OR b LIKE '%(x)s' OR a = ?", (1,))
    assert data.fetchall() == [("x",)]
    with pytest.raises(errors.SQLSyntaxError):
        data.execute("SELECT * FROM ns.t WHERE a = 5 %")


# -- item 8: rowcount ---------------------------------------------------------------------------

def test_rowcount_of_a_data_query_is_known_once_its_end_is_fetched(data: Any) -> None:
    data.executemany("INSERT INTO ns.t VALUES (?, ?)", [(i, "n") for i in range(10, 20)])
    for fetch, ends in [
        (lambda: data.fetchall(), True),
        (lambda: data.fetchmany(5), False),
        (lambda: data.fetchmany(13), False),  # all the rows, but the end is not reached yet
        (lambda: data.fetchmany(14), True),
        (lambda: [data.fetchone() for _ in range(13)], False),
        (lambda: [data.fetchone() for _ in range(14)], True),
        (lambda: list(data), True),
    ]:
        data.execute("SELECT * FROM ns.t")
        assert data.rowcount == -1  # streaming: not known yet (PEP 249)
        fetch()
        assert data.rowcount == (13 if ends else -1)
        assert data.fetchall() is not None and data.rowcount == 13
        assert data.fetchone() is None and data.rowcount == 13
    data.execute("SELECT * FROM ns.t WHERE a < 0")
    assert data.fetchone() is None and data.rowcount == 0
    data.execute("SELECT count(*) FROM ns.t")  # a new statement: unknown again
    assert data.rowcount == -1
    data.execute("SHOW TABLES IN ns")  # a catalog result is in memory: known at once
    assert data.rowcount == 1


def test_rowcount_of_executemany_is_the_total(data: Any) -> None:
    data.executemany("UPDATE ns.t SET b = ? WHERE a >= ?", [("u", 2), ("v", 3), ("w", 9)])
    assert data.rowcount == 2 + 1 + 0
    data.executemany("DELETE FROM ns.t WHERE a = ?", [(1,), (2,), (2,)])
    assert data.rowcount == 2
    data.executemany("INSERT INTO ns.t VALUES (?, ?)", [])
    assert data.rowcount == 0
    data.executemany("INSERT INTO ns.t (b, a) SELECT ?, ?", [("p", 7), ("q", 8)])  # not the bulk form
    assert data.rowcount == 2
    data.executemany("INSERT INTO ns.t VALUES (?, 'const'), (?, 'const')", [(30, 31), (32, 33)])
    assert data.rowcount == 4
    data.executemany("SELECT * FROM ns.t WHERE a = ?", [(3,), (7,)])
    assert data.rowcount == -1 and data.description is None
    data.execute("SELECT count(*) FROM ns.t")
    assert data.fetchall() == [(7,)]


# -- item 5: integer sums stay integers ------------------------------------------------------

def test_sums_of_integer_columns_are_bigint_ints(memory_lake: Lake) -> None:
    conn = memory_lake.connect(autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute("CREATE TABLE ns.n (s SMALLINT, i INT, b BIGINT, d DECIMAL(10, 2), f DOUBLE, g STRING)")
    cur.executemany("INSERT INTO ns.n VALUES (?, ?, ?, ?, ?, ?)",
                    [(1, 10, 2**40, "1.25", 0.5, "x"), (-3, 20, 2**40, "2.00", 1.5, "y"), (None, None, None, None, None, "y")])  # fmt: skip
    cur.execute("SELECT sum(s), sum(i), sum(b), sum(d), sum(f), sum(i) * 2 + sum(s), count(*), "
                "sum(i) FILTER (WHERE g = 'none') FROM ns.n")  # fmt: skip
    row = cur.fetchone()
    assert row == (-2, 30, 2**41, decimal.Decimal("3.25"), 2.0, 58, 3, None)
    assert [type(v) for v in row[:3]] == [int, int, int]
    assert [d[1] for d in cur.description] == ["int8", "int8", "int8", "decimal", "float8", "int8", "int8", "int8"]
    cur.execute("SELECT g, sum(i) AS total FROM ns.n GROUP BY g ORDER BY g")
    assert cur.fetchall() == [("x", 10), ("y", 20)]
    # Beyond BIGINT: a DataError naming the column, never a wrong number.
    cur.execute("INSERT INTO ns.n (b) VALUES (?), (?)", (2**63 - 1, 2**63 - 1))
    cur.execute("SELECT sum(b) AS big FROM ns.n")
    with pytest.raises(errors.DataError, match="column 'big' of the result.*BIGINT"):
        cur.fetchall()
    cur.execute("SELECT sum(CAST(b AS DECIMAL(38, 0))) FROM ns.n")
    assert cur.fetchone() == (decimal.Decimal(2 * (2**63 - 1) + 2**41),)
    conn.close()


def test_pandas_read_sql_of_an_integer_sum_is_int64(memory_lake: Lake) -> None:
    pd = pytest.importorskip("pandas")
    conn = memory_lake.connect(autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute("CREATE TABLE ns.n (g STRING, i INT)")
    cur.executemany("INSERT INTO ns.n VALUES (?, ?)", [("a", 1), ("a", 2), ("b", 5)])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # pandas: "only SQLAlchemy connectables..."
        frame = pd.read_sql("SELECT g, sum(i) AS total FROM ns.n GROUP BY g ORDER BY g", conn)
    assert str(frame["total"].dtype) == "int64"
    assert frame["total"].tolist() == [3, 5]
    conn.close()


# -- item 5: date and time functions -----------------------------------------------------------

#: (expression over d DATE, ts TIMESTAMP, tz TIMESTAMPTZ): what users type, from
#: PostgreSQL, DuckDB, Spark and MySQL habits.
DATE_EXPRESSIONS = [
    "date_trunc('month', ts)", "date_trunc('week', d)", "date_trunc('hour', tz)",
    "extract(year FROM d)", "extract(hour FROM ts)", "extract(dow FROM d)", "extract(epoch FROM ts)",
    "date_part('month', ts)", "date_part('doy', d)", "d + INTERVAL 1 DAY", "ts - INTERVAL '2 hours'",
    "ts + INTERVAL 3 MONTH", "strftime(ts, '%Y-%m')", "strftime(d, '%d/%m/%Y')",
    "date_diff('day', d, DATE '2024-04-01')", "date_diff('hour', ts, TIMESTAMP '2024-03-16 00:00:00')",
    "datediff(DATE '2024-04-01', d)", "date_add(d, 3)", "date_sub(d, 3)", "date_add('day', 3, ts)",
    "year(d)", "month(ts)", "day(d)", "hour(ts)", "dayofweek(d)", "quarter(d)", "last_day(d)",
    "make_date(2024, 1, 2)", "CAST(ts AS DATE)", "(ts)::date", "epoch(ts)", "to_timestamp(1700000000)",
    "strptime('2024-01-02', '%Y-%m-%d')", "to_date('2024-01-01')", "date_format(ts, 'yyyy-MM')",
    "ts - TIMESTAMP '2024-03-01 00:00:00'",
]  # fmt: skip
_VALUES = {"d": "DATE '2024-03-15'", "ts": "TIMESTAMP '2024-03-15 10:30:05'",
           "tz": "TIMESTAMPTZ '2024-03-15 10:30:05+00'"}  # fmt: skip


@pytest.fixture(scope="module")
def dates() -> Any:
    """A cursor on one table of one row of dates, for the module's tests (they only read
    it): built per test, the lakehouse, its table and its INSERT were ~half of each of
    the 36 date-function tests' CPU."""
    conn = tl.connect(f"memory://user-surface-dates-{uuid.uuid4().hex}/lake", create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute("CREATE TABLE ns.e (d DATE, ts TIMESTAMP, tz TIMESTAMPTZ)")
    cur.execute("INSERT INTO ns.e VALUES (?, ?, ?)", (dt.date(2024, 3, 15), dt.datetime(2024, 3, 15, 10, 30, 5),
                                                      dt.datetime(2024, 3, 15, 10, 30, 5, tzinfo=dt.timezone.utc)))  # fmt: skip
    yield cur
    conn.close()


@pytest.mark.parametrize("expression", DATE_EXPRESSIONS)
def test_date_functions_give_one_answer_with_and_without_a_table(dates: Any, expression: str) -> None:
    import re

    dates.execute(f"SELECT {expression} AS v FROM ns.e")
    over_table = dates.fetchall()
    kind = dates.description[0][1]
    literal = re.sub(r"(?<![%'\w])(d|ts|tz)\b(?!')", lambda m: _VALUES[m.group(1)], expression)
    dates.execute(f"SELECT {literal} AS v")  # no table: the catalog's executor would answer
    assert dates.fetchall() == over_table and dates.description[0][1] == kind
    dates.execute(f"SELECT v FROM (SELECT {literal} AS v) q, information_schema.schemata s WHERE s.schema_name = 'ns'")
    assert dates.fetchall() == over_table
    assert over_table[0][0] is not None


def test_the_current_time_functions(dates: Any) -> None:
    now = dt.datetime.now(dt.timezone.utc)
    for sql in ["SELECT {} AS v", "SELECT {} AS v FROM ns.e"]:
        for expression, kind in [("now()", "timestamptz"), ("current_timestamp", "timestamptz"),
                                 ("localtimestamp", "timestamp"), ("today()", "date"),
                                 ("current_date", "date"), ("current_date()", "date"),
                                 ("current_time", "time"), ("localtime", "time"),
                                 ("unix_timestamp()", "int8")]:  # fmt: skip
            dates.execute(sql.format(expression))
            (value,), = dates.fetchall()
            assert dates.description[0][1] == kind, expression
            if kind == "timestamptz":
                assert abs(value - now) < dt.timedelta(hours=1)
            elif kind == "timestamp":
                assert abs(value - now.replace(tzinfo=None)) < dt.timedelta(hours=1)  # UTC
            elif kind == "date":
                assert abs(value - now.date()) <= dt.timedelta(days=1)
            elif kind == "int8":
                assert abs(value - now.timestamp()) < 3600
            else:
                assert isinstance(value, dt.time)
    dates.execute("SELECT count(*) FROM ns.e WHERE ts < now() - INTERVAL 1 DAY AND d <= current_date")
    assert dates.fetchall() == [(1,)]
    # A catalog query with a date function runs too (system tables join in DuckDB).
    dates.execute("SELECT count(*) FROM system.versions WHERE created_at <= now() + INTERVAL 1 MINUTE")
    assert dates.fetchall()[0][0] >= 3
    dates.execute("SELECT age(TIMESTAMP '2024-03-15 00:00:00', TIMESTAMP '2024-03-14 12:00:00')")
    assert dates.fetchall() == [(dt.timedelta(hours=12),)]


# -- item 10: a multi-row INSERT ... VALUES of markers runs as a bulk insert --------------------

@pytest.mark.parametrize("template", [
    "INSERT INTO ns.m VALUES {rows}",
    "INSERT INTO ns.m (a, b, c) VALUES {rows};",
    "insert into ns.m (c, b, a)\n  values\n{rows}  ;  ",
    "INSERT INTO ns.m VALUES {rows} -- a comment: VALUES (?)",
    "/* VALUES (?, ?, ?) */ INSERT INTO ns.m (a, b, c) VALUES {rows}",
])  # fmt: skip
def test_multi_row_values_insert_the_same_rows_as_executemany(memory_lake: Lake, template: str) -> None:
    from trinitylake_dbapi import driver_session as session_module

    conn = memory_lake.connect(autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute("CREATE TABLE ns.m (a BIGINT, b STRING, c DOUBLE)")
    rows = [(i, f"n{i}" if i % 3 else None, i / 4) for i in range(1, 701)]
    if template.startswith("insert into ns.m (c, b, a)"):
        rows_in = [(c, b, a) for a, b, c in rows]
    else:
        rows_in = rows
    sql = template.format(rows=",\n ".join(["( ?,? , ?)"] * len(rows)))
    cur.execute(sql, [v for r in rows_in for v in r])
    assert cur.rowcount == len(rows)
    if "--" not in template:  # (a trailing comment hides the rows: then it is parsed whole)
        assert sql not in session_module._SEEN and sql not in session_module._PARSED  # never parsed whole
    cur.executemany("INSERT INTO ns.m VALUES (?, ?, ?)", [(-a, b, c) for a, b, c in rows])
    cur.execute("SELECT a, b, c FROM ns.m WHERE a > 0 ORDER BY a")
    assert cur.fetchall() == rows
    cur.execute("SELECT count(*) FROM ns.m WHERE a < 0")
    assert cur.fetchall() == [(len(rows),)]
    conn.close()


def test_texts_that_are_not_a_multi_row_insert_of_markers_run_as_before(data: Any) -> None:
    for sql, parameters in [
        ("INSERT INTO ns.t VALUES (?, ?), (?, 'lit')", (4, "a", 5)),  # a literal in a row
        ("INSERT INTO ns.t VALUES (?, ?), (?, ?)", (6, "b", 7, "c")),
        ("INSERT INTO ns.t VALUES (?, ?)", (8, "d")),  # one row
    ]:
        data.execute(sql, parameters)
    data.execute("SELECT a, b FROM ns.t WHERE a > 3 ORDER BY a")
    assert data.fetchall() == [(4, "a"), (5, "lit"), (6, "b"), (7, "c"), (8, "d")]
    with pytest.raises(errors.ProgrammingError, match="4 parameter marker.*3 parameter"):
        data.execute("INSERT INTO ns.t VALUES (?, ?), (?, ?)", (1, "x", 2))
    with pytest.raises(errors.DatabaseError, match="same length"):
        data.execute("INSERT INTO ns.t VALUES (?, ?), (?)", (1, "x", 2))
    with pytest.raises(errors.SQLSyntaxError):
        data.execute("INSERT INTO ns.t VALUSE (?, ?), (?, ?)", (1, "x", 2, "y"))
    data.execute("SELECT count(*) FROM ns.t")
    assert data.fetchall() == [(8,)]


# -- item 9: numpy and pyarrow values as parameters ---------------------------------------------

@pytest.fixture
def lists(memory_lake: Lake) -> Any:
    conn = memory_lake.connect(autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute("CREATE TABLE ns.l (k BIGINT, xs LIST<INT>, names ARRAY<STRING>, f DOUBLE, ok BOOLEAN)")
    yield cur
    conn.close()


def _array_values() -> list[tuple[Any, list[Any] | None]]:
    """(value as numpy or pyarrow hands it over, the list it stands for)."""
    np = pytest.importorskip("numpy")
    pa = pytest.importorskip("pyarrow")
    return [
        (np.array([1, 2, 3]), [1, 2, 3]),
        (np.array([], dtype=np.int64), []),
        (np.array([7], dtype=np.int32), [7]),
        (pa.array([4, None, 5]), [4, None, 5]),
        (pa.scalar([6, 7], type=pa.list_(pa.int64())), [6, 7]),
        (pa.chunked_array([[8], [9]]), [8, 9]),
        ([np.int64(10), np.int64(11)], [10, 11]),
        (None, None),
    ]


def test_numpy_and_pyarrow_values_bind_as_lists(lists: Any) -> None:
    np = pytest.importorskip("numpy")
    pa = pytest.importorskip("pyarrow")
    values = _array_values()
    for k, (value, _) in enumerate(values):  # execute: bound as literals
        names = np.array(["a", "b"], dtype=object) if k % 2 else pa.array(["c"])
        lists.execute("INSERT INTO ns.l VALUES (?, ?, ?, ?, ?)", (np.int64(k), value, names, np.float32(0.5), np.bool_(k % 2)))
    offset = len(values)
    lists.executemany("INSERT INTO ns.l VALUES (?, ?, ?, ?, ?)",  # executemany: one Arrow table
                      [(np.int64(offset + k), value, np.array(["z"]), np.float64(1.5), np.bool_(True))
                       for k, (value, _) in enumerate(values)])  # fmt: skip
    assert lists.rowcount == len(values)
    lists.execute("SELECT k, xs, names, f, ok FROM ns.l ORDER BY k")
    rows = lists.fetchall()
    expected = [v for _, v in values]
    assert [r[1] for r in rows] == expected + expected
    assert [r[2] for r in rows[:2]] == [["c"], ["a", "b"]] and rows[-1][2] == ["z"]
    assert [type(r[0]) for r in rows] == [int] * len(rows)
    assert rows[0][3:] == (0.5, False) and rows[-1][3:] == (1.5, True)


def test_a_numpy_value_that_does_not_fit_names_its_column(lists: Any) -> None:
    np = pytest.importorskip("numpy")
    with pytest.raises(errors.DataError, match="column 'xs'"):
        lists.executemany("INSERT INTO ns.l (k, xs) VALUES (?, ?)", [(1, np.array(["x", "y"]))])
    lists.execute("SELECT count(*) FROM ns.l")
    assert lists.fetchall() == [(0,)]
