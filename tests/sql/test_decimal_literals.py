"""A decimal literal is a DECIMAL and a float parameter a DOUBLE, with or without a table:
``SELECT 12.50`` is ``Decimal('12.50')`` as in DuckDB and PostgreSQL (the catalog's
executor read it as the float 12.5), ``SELECT CAST(12.50 AS DECIMAL(10,2))`` runs (the
executor failed with "'DType' object is not callable"), and a float bound with ``?``
comes back a float (it came back a Decimal from a query over a table)."""

from __future__ import annotations

import decimal
from typing import Any

import pytest

from tests.lakes import Lake

D = decimal.Decimal


@pytest.fixture(scope="module")
def cur(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A cursor on a lakehouse with ``ns.t (a INT)`` holding one row."""
    import trinitylake_dbapi as tl

    conn = tl.connect(str(tmp_path_factory.mktemp("lake")), create=True, autocommit=True)
    cursor = conn.cursor()
    cursor.execute("CREATE NAMESPACE ns")
    cursor.execute("CREATE TABLE ns.t (a INT)")
    cursor.execute("INSERT INTO ns.t VALUES (1)")
    yield cursor
    conn.close()


@pytest.mark.parametrize(
    "expression, value, type_code",
    [
        ("12.50", D("12.50"), "decimal"),
        ("-0.5", D("-0.5"), "decimal"),
        (".25", D("0.25"), "decimal"),
        ("12.50 + 1", D("13.50"), "decimal"),
        ("0.1 + 0.2", D("0.3"), "decimal"),
        ("CAST(12.50 AS DECIMAL(10,2))", D("12.50"), "decimal"),
        ("CAST('1.5' AS DECIMAL(5,1))", D("1.5"), "decimal"),
        ("CAST(7 AS NUMERIC(9,3))", D("7.000"), "decimal"),
        ("TRY_CAST('x' AS DECIMAL(5,1))", None, "decimal"),
        ("CASE WHEN 1 = 1 THEN 2.5 END", D("2.5"), "decimal"),
        ("1.5e3", 1500.0, "float8"),
        ("CAST(1 AS DOUBLE)", 1.0, "float8"),
        ("7", 7, "int4"),
    ],
)  # fmt: skip
def test_literals_mean_the_same_with_or_without_a_table(
    cur: Any, expression: str, value: Any, type_code: str
) -> None:
    for sql in (f"SELECT {expression} AS x", f"SELECT {expression} AS x FROM ns.t"):
        cur.execute(sql)
        row = cur.fetchall()
        assert row == [(value,)], sql
        assert value is None or type(row[0][0]) is type(value), sql
        assert cur.description[0][1] == type_code, sql


def test_decimal_literals_beside_system_tables(cur: Any) -> None:
    cur.execute("SELECT table_name, 1.50 AS price FROM information_schema.tables WHERE table_schema = 'ns'")
    assert cur.fetchall() == [("t", D("1.50"))]
    cur.execute("SELECT count(*) FROM information_schema.tables WHERE 2.5 > 1")
    assert isinstance(cur.fetchone()[0], int)


@pytest.mark.parametrize("value", [1.5, -0.25, 0.1, 1e300, 5e-324, 123456789.0, -2.0])
def test_a_float_parameter_stays_a_float(cur: Any, value: float) -> None:
    for sql in ("SELECT ? AS x", "SELECT ? AS x FROM ns.t", "SELECT ? * 1 AS x FROM ns.t"):
        cur.execute(sql, [value])
        (got,) = cur.fetchone()
        assert type(got) is float and got == value, sql
        assert cur.description[0][1] == "float8", sql


@pytest.mark.parametrize("value", [D("1.50"), D("-0.001"), D("12345678901234567890.123")])
def test_a_decimal_parameter_stays_a_decimal(cur: Any, value: decimal.Decimal) -> None:
    for sql in ("SELECT ? AS x", "SELECT ? AS x FROM ns.t"):
        cur.execute(sql, [value])
        (got,) = cur.fetchone()
        assert type(got) is D and got == value and str(got) == str(value), sql


def test_float_and_decimal_parameters_insert_into_their_columns(memory_lake: Lake) -> None:
    conn = memory_lake.connect(autocommit=True)
    c = conn.cursor()
    c.execute("CREATE NAMESPACE n")
    c.execute("CREATE TABLE n.v (d DECIMAL(10,2), f DOUBLE)")
    c.execute("INSERT INTO n.v VALUES (?, ?)", [0.125, 0.1])
    c.execute("INSERT INTO n.v VALUES (?, ?)", [D("2.50"), D("0.25")])
    c.execute("SELECT d, f FROM n.v ORDER BY d")
    assert c.fetchall() == [(D("0.13"), 0.1), (D("2.50"), 0.25)]
    c.execute("SELECT count(*) FROM n.v WHERE f = ?", [0.1])
    assert c.fetchone() == (1,)
    conn.close()


@pytest.mark.parametrize(
    "sql, precision, scale",
    [
        ("SELECT 12.50 AS x", 4, 2),
        ("SELECT CAST(12.50 AS DECIMAL(10,2)) AS x", 10, 2),
        ("SELECT CAST(a AS NUMERIC(18,6)) AS x FROM ns.t", 18, 6),
        ("SELECT sum(CAST(a AS DECIMAL(10,2))) AS x FROM ns.t", 38, 2),
        ("SELECT CAST(a AS DECIMAL(38,0)) AS x FROM ns.t", 38, 0),
        ("SELECT ? AS x", 3, 2),
    ],
)  # fmt: skip
def test_the_description_has_a_decimals_precision_and_scale(cur: Any, sql: str, precision: int, scale: int) -> None:
    """PEP 249's precision and scale of a decimal result column (polars' read_database
    builds its Decimal dtype from them and failed without)."""
    cur.execute(sql, [D("1.50")] if "?" in sql else None)
    cur.fetchall()
    assert cur.description[0][1:] == ("decimal", None, None, precision, scale, None)


def test_other_columns_have_no_precision_or_scale(cur: Any) -> None:
    cur.execute("SELECT a, sum(a) OVER () AS s, 1.5e0 AS f, 'x' AS v FROM ns.t")
    cur.fetchall()
    assert [d[1:] for d in cur.description] == [
        ("int4", None, None, None, None, None), ("int8", None, None, None, None, None),
        ("float8", None, None, None, None, None), ("varchar", None, None, None, None, None),
    ]  # fmt: skip
