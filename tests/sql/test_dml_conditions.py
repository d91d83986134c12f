"""The WHERE of an UPDATE or DELETE on a table with position deletes (Q4): a condition
that can neither fail nor vary is evaluated before the rows' liveness is checked (the
cheap way), any other only for live rows; both touch exactly the rows DuckDB touches
running the same statements on a plain table."""

from __future__ import annotations

from typing import Any, Iterator

import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trinitylake_dbapi as tl
from trinitylake_dbapi.format.types.spec import ColumnSpec, type_from_sql
from trinitylake_dbapi.sql.dialect import TrinityLake
from trinitylake_dbapi.sql.query.rewrite import infallible_condition
from tests.lakes import Lake
from tests.sql.test_dml_rows import Twins

COLUMNS = [
    ("id", "BIGINT"), ("small", "SMALLINT"), ("name", "VARCHAR"), ("ok", "BOOLEAN"), ("d", "DATE"),
    ("ts", "TIMESTAMP"), ("f", "DOUBLE"), ("amount", "DECIMAL(10,2)"), ("tags", "ARRAY<STRING>"),
]  # fmt: skip


def _where(condition: str) -> Any:
    return sqlglot.parse_one(f"DELETE FROM ns.t AS a WHERE {condition}", dialect=TrinityLake).args.get("where")


def _columns() -> list[ColumnSpec]:
    specs = []
    for name, sql in COLUMNS:
        if sql.startswith("ARRAY"):
            from trinitylake_dbapi.format.types.spec import list_type

            specs.append(ColumnSpec(name, list_type(type_from_sql("VARCHAR", column=name))))
        elif "(" in sql:
            base, params = sql[:-1].split("(")
            specs.append(ColumnSpec(name, type_from_sql(base, [int(p) for p in params.split(",")], column=name)))
        else:
            specs.append(ColumnSpec(name, type_from_sql(sql, column=name)))
    return specs


INFALLIBLE = [
    "id % 100 = 4", "id = 5", "id = -5", "id <> 5 AND name = 'x'", "a.id >= 3 OR NOT ok", "ok", "NOT ok",
    "id IN (1, 2, 3)", "name IN ('a', 'b')", "id BETWEEN 1 AND 10", "name LIKE 'n%'", "name ILIKE 'N%'",
    "id IS NULL", "name IS NOT NULL", "d = '2026-01-01'", "d < CAST('2026-01-01' AS DATE)",
    "ts >= '2026-01-01 10:00:00'", "ts < CAST('2026-01-01 10:00:00.5' AS TIMESTAMP)", "d > CAST('2026-01-01' AS TIMESTAMP)",
    "f > 1.5", "f = 2", "small = 100000", "id = NULL", "(id = 1)", "id = small", "true", "small % 7 = 0",
    "id IS NOT DISTINCT FROM 3",
]  # fmt: skip
FALLIBLE = [
    "name = 5",  # the text is converted to a number, row by row
    "id = '5'", "id = 1.5", "d = 'someday'", "d = CAST('2026-13-01' AS DATE)", "d = '20260101'",
    "id % 0 = 1", "id % small = 1", "id + 1 = 5", "id * 2 > 5", "abs(id) = 3", "random() < 0.5",
    "length(name) = 3", "CAST(name AS INT) = 3", "id IN (SELECT 1)", "amount = 1", "tags = ['a']",
    "other.id = 1", "name LIKE 'a!%' ESCAPE '!'", "f = 'NaN'", "id = f",
]  # fmt: skip


@pytest.mark.parametrize("condition", INFALLIBLE)
def test_conditions_that_can_neither_fail_nor_vary(condition: str) -> None:
    assert infallible_condition(_where(condition), _columns(), {"t", "a"})


@pytest.mark.parametrize("condition", FALLIBLE)
def test_conditions_that_may_fail_or_vary(condition: str) -> None:
    assert not infallible_condition(_where(condition), _columns(), {"t", "a"})


def test_no_where_is_infallible() -> None:
    assert infallible_condition(None, _columns(), {"t"})


@pytest.fixture()
def lakehouse(memory_lake: Lake) -> Iterator[tl.Connection]:
    conn = memory_lake.connect(autocommit=True)
    yield conn
    conn.close()


def test_a_condition_is_never_evaluated_on_a_deleted_row(lakehouse: tl.Connection) -> None:
    """``name = 7`` converts each name to a number: 'abc' fails. Its row was updated
    away (merge-on-read: the old row stays in its file, deleted by position), so the
    statements never meet it."""
    cur = lakehouse.cursor()
    cur.execute("CREATE TABLE t (id BIGINT, name VARCHAR, d VARCHAR)")
    cur.execute("INSERT INTO t VALUES (1, 'abc', 'someday'), (2, '7', '2026-01-02'), (3, '8', '2026-01-03')")
    cur.execute("UPDATE t SET name = '9', d = '2026-01-01' WHERE id = 1")
    cur.execute("UPDATE t SET id = id + 10 WHERE name = 8")
    assert cur.rowcount == 1
    cur.execute("DELETE FROM t WHERE name = 7")
    assert cur.rowcount == 1
    cur.execute("DELETE FROM t WHERE CAST(d AS DATE) = '2026-01-01'")
    assert cur.rowcount == 1
    cur.execute("SELECT id, name FROM t")
    assert cur.fetchall() == [(13, "8")]


_VALUES = st.one_of(st.none(), st.integers(-3, 12))
_NAMES = st.one_of(st.none(), st.sampled_from(["a", "b", "ab", "n1", "x"]))


#: The leaves of :func:`_conditions` (built once: building them at every draw was a third
#: of the property test's CPU).
_LEAF = st.one_of(
    st.builds("id {} {}".format, st.sampled_from(["=", "<>", "<", ">=", "IS NOT DISTINCT FROM"]), st.integers(-3, 12)),
    st.builds("id % {} = {}".format, st.integers(1, 5), st.integers(0, 4)),
    st.builds("name = '{}'".format, st.sampled_from(["a", "b", "ab", "zz"])),
    st.builds("name LIKE '{}'".format, st.sampled_from(["a%", "%b", "_", "n%"])),
    st.builds("id BETWEEN {} AND {}".format, st.integers(-3, 6), st.integers(0, 12)),
    st.builds("id IN ({}, {})".format, st.integers(-3, 12), st.integers(-3, 12)),
    st.sampled_from(["ok", "id IS NULL", "name IS NOT NULL", "id = NULL", "abs(id - 4) < 3", "id + 1 = 5"]),
)


@st.composite
def _conditions(draw: Any, depth: int = 0) -> str:
    """WHEREs over (id BIGINT, name VARCHAR, ok BOOLEAN): the infallible shapes, and
    some that are not (arithmetic, functions) to take the other way."""
    if depth >= 2 or draw(st.booleans()):
        return draw(_LEAF)
    left, right = draw(_conditions(depth + 1)), draw(_conditions(depth + 1))
    return draw(st.sampled_from([f"({left}) AND ({right})", f"({left}) OR ({right})", f"NOT ({left})"]))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.tuples(_VALUES, _NAMES, st.one_of(st.none(), st.booleans())), min_size=1, max_size=25),
    statements=st.lists(st.tuples(st.sampled_from(["UPDATE", "DELETE"]), _conditions()), min_size=1, max_size=5),
)
def test_updates_and_deletes_touch_the_rows_duckdb_touches(lakehouse: tl.Connection, rows: list, statements: list) -> None:
    """After each statement (merge-on-read: later ones meet earlier ones' deleted rows),
    our rowcount and rows equal DuckDB's on a plain table."""
    cur = lakehouse.cursor()
    cur.execute("DROP TABLE IF EXISTS default.f")
    twins = Twins(lakehouse, "id BIGINT, name STRING, ok BOOLEAN")
    twins.run("INSERT INTO f VALUES " + ", ".join("(?, ?, ?)" for _ in rows), [v for r in rows for v in r])
    for kind, condition in statements:
        if kind == "UPDATE":
            twins.run(f"UPDATE f SET name = name || 'u', id = id + 1 WHERE {condition}")
        else:
            twins.run(f"DELETE FROM f WHERE {condition}")
