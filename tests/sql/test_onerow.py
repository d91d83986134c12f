"""A one-row INSERT of plain values is checked and converted in Python (sql.query.onerow
Q12) with the same result as Q3's DuckDB path: the same Arrow table handed to the
Iceberg append (schema and every value, to the sign of a zero and the scale of a
decimal), or the same error (class and message). The DuckDB path is the oracle: the same
INSERT runs on a second lakehouse with the fast path switched off."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from typing import Any, Iterator

import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trinitylake_dbapi as tl
from trinitylake_dbapi.format.types import ColumnSpec, TypeSpec
from trinitylake_dbapi.sql.binding import bind
from trinitylake_dbapi.sql.query import writes
from trinitylake_dbapi.sql.query.onerow import plain_row

#: (SQL type, strategy of values that fit or nearly fit it). Every column also gets
#: values of the other columns' strategies (wrong types: the DuckDB path's to judge).
UTC = dt.timezone.utc
ZONES = st.sampled_from([UTC, dt.timezone(dt.timedelta(hours=14)), dt.timezone(dt.timedelta(hours=-12, minutes=-30)),
                         dt.timezone(dt.timedelta(seconds=3601)), dt.timezone(dt.timedelta(hours=5, minutes=45))])  # fmt: skip
INTS = st.one_of(st.integers(-(2**15) - 2, 2**15 + 1), st.integers(-(2**31) - 2, 2**31 + 1),
                 st.integers(-(2**63) - 2, 2**63 + 1), st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1, 0]))  # fmt: skip
FLOATS = st.one_of(st.floats(), st.floats(width=32), st.sampled_from([-0.0, 0.0, 3.4028235e38, 3.4028236e38, 1e-46,
                                                                      float("nan"), float("inf"), -float("inf")]))  # fmt: skip
DECIMALS = st.one_of(st.decimals(allow_nan=False, allow_infinity=False, places=p) for p in (0, 1, 2, 3, 6))
TEXT = st.one_of(st.text(max_size=6), st.text(st.characters(codec="utf-8"), max_size=3), st.just("a\x00b"),
                 st.uuids().map(str))  # fmt: skip
BYTES = st.one_of(st.binary(max_size=6), st.sampled_from([b"\xff\xfe", "é".encode(), b""]))
DATES = st.one_of(st.dates(), st.sampled_from([dt.date(1, 1, 1), dt.date(9999, 12, 31)]))
NAIVE = st.one_of(st.datetimes(), st.sampled_from([dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)]))
AWARE = st.one_of(st.datetimes(timezones=ZONES), st.sampled_from([
    dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))),
    dt.datetime(9999, 12, 31, 23, tzinfo=dt.timezone(dt.timedelta(hours=-2))),
    dt.datetime(9999, 12, 31, 23, tzinfo=UTC)]))  # fmt: skip
TIMES = st.one_of(st.times(), st.times(timezones=ZONES))
ANY = st.one_of(st.none(), st.booleans(), INTS, FLOATS, DECIMALS, TEXT, BYTES, DATES, NAIVE, AWARE, TIMES)

TYPES = [
    ("BOOLEAN", st.booleans()), ("SMALLINT", INTS), ("INT", INTS), ("BIGINT", INTS),
    ("DOUBLE", st.one_of(FLOATS, INTS)), ("REAL", st.one_of(FLOATS, INTS)),
    ("DECIMAL(38,0)", st.one_of(DECIMALS, INTS)), ("DECIMAL(10,2)", st.one_of(DECIMALS, INTS)),
    ("DECIMAL(5,5)", DECIMALS), ("DECIMAL(4,1)", st.one_of(DECIMALS, INTS)),
    ("STRING", TEXT), ("VARCHAR(3)", TEXT), ("CHAR(2)", TEXT),
    ("BINARY", BYTES), ("BINARY(3)", BYTES), ("FIXED(2)", BYTES),
    ("DATE", DATES), ("TIME", TIMES), ("TIMESTAMP", NAIVE), ("TIMESTAMPTZ", AWARE),
    ("ARRAY<INT>", st.lists(st.integers(-5, 5), max_size=2)),
    ("MAP<STRING, INT>", st.dictionaries(st.text(max_size=2), st.integers(-5, 5), max_size=2)),
    ("STRUCT<a: INT>", st.fixed_dictionaries({"a": st.integers(-5, 5)})),
]  # fmt: skip


@st.composite
def inserts(draw: st.DrawFn) -> tuple[list[tuple[str, str, bool]], list[str] | None, tuple]:
    """Columns (name, type, NOT NULL), the INSERT's column list (None: all) and its row:
    half the rows of values that fit or nearly fit (and NULLs), half mixed with values of
    any type."""
    chosen = draw(st.lists(st.sampled_from(range(len(TYPES))), min_size=1, max_size=5))
    columns = [(f"c{i}", TYPES[t][0], draw(st.booleans())) for i, t in enumerate(chosen)]
    names: list[str] | None = None
    if draw(st.booleans()):
        names = draw(st.permutations([c[0] for c in columns]))
        names = names[: draw(st.integers(1, len(names)))]
    mixed = draw(st.booleans())
    row = []
    for name in names if names is not None else [c[0] for c in columns]:
        fitting = TYPES[chosen[int(name[1:])]][1]
        row.append(draw(st.one_of(fitting, st.none(), ANY) if mixed else st.one_of(fitting, fitting, fitting, st.none())))
    return columns, names, tuple(row)


def _values(captured: list[Any]) -> list[list[str]]:
    """Each column's values as their reprs: NaN equals NaN, -0.0 differs from 0.0 and a
    decimal's scale counts, as Arrow's equality would not have them."""
    return [[repr(v) for v in column.to_pylist()] for column in captured[0].columns]


@pytest.fixture
def capture(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The Arrow tables INSERTs hand to the Iceberg append (writes.as_iceberg's result)."""
    captured: list[Any] = []
    original = writes.as_iceberg

    def as_iceberg(arrow: Any, table: Any) -> Any:
        converted = original(arrow, table)
        captured.append(converted)
        return converted

    monkeypatch.setattr(writes, "as_iceberg", as_iceberg)
    return captured


_TABLES = iter(range(1 << 30))


@pytest.fixture(scope="module")
def lakes() -> Iterator[tuple[Any, Any]]:
    """Two lakehouses: the INSERTs' and the oracle's (one table each per example)."""
    with tl.connect(f"memory://onerow-{uuid.uuid4().hex}/lake", create=True, autocommit=True) as fast, \
         tl.connect(f"memory://onerow-{uuid.uuid4().hex}/lake", create=True, autocommit=True) as oracle:  # fmt: skip
        for conn in (fast, oracle):
            conn.cursor().execute("CREATE NAMESPACE ns")
        yield fast.cursor(), oracle.cursor()


def _run(cur: Any, table: str, columns: list[tuple[str, str, bool]], sql: str, row: tuple, captured: list[Any]) -> Any:
    """Create the table and run the INSERT: ("ok", schema, values) or ("error", class, message)."""
    captured.clear()
    definition = ", ".join(f"{n} {t}{' NOT NULL' if nn else ''}" for n, t, nn in columns)
    cur.execute(f"CREATE TABLE {table} ({definition}) TBLPROPERTIES ('compaction.auto.min-small-files' = '0')")
    try:
        cur.execute(sql, row)
    except tl.Error as e:
        return ("error", type(e).__name__, str(e))
    return ("ok", captured[0].schema, _values(captured))


@pytest.mark.slow  # 150 examples (~3.9 s of CPU): the full run only; the quick lane keeps the edge values below
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])  # fmt: skip
@given(case=inserts())
def test_the_python_path_gives_what_duckdb_gives(
    case: Any, lakes: tuple[Any, Any], capture: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    columns, names, row = case
    table = f"ns.t{next(_TABLES)}"
    into = f"{table} ({', '.join(names)})" if names is not None else table
    sql = f"INSERT INTO {into} VALUES ({', '.join('?' for _ in row)})"
    fast = _run(lakes[0], table, columns, sql, row, capture)
    monkeypatch.setattr(writes, "plain_row", lambda *a: None)  # the DuckDB path only
    try:
        oracle = _run(lakes[1], table, columns, sql, row, capture)
    finally:
        monkeypatch.setattr(writes, "plain_row", plain_row)
    assert fast == oracle


EDGES = [
    ("SMALLINT", v) for v in (-(2**15), 2**15 - 1, 2**15, -(2**15) - 1)
] + [("INT", v) for v in (-(2**31), 2**31 - 1, 2**31)] + [("BIGINT", v) for v in (-(2**63), 2**63 - 1, 2**63)] + [
    ("DOUBLE", v) for v in (float("nan"), float("inf"), -float("inf"), -0.0, 5e-324, 2**53, 2**53 + 1)
] + [("REAL", v) for v in (float("nan"), -0.0, 3.4028235e38, 3.4028236e38, 3.5e38, 1e-46, 0.1, 2**24 + 1)] + [
    ("DECIMAL(4,1)", v) for v in (decimal.Decimal("999.9"), decimal.Decimal("-999.9"), decimal.Decimal("1000"),
                                  decimal.Decimal("1.25"), decimal.Decimal("1.20"), decimal.Decimal("-0.0"), 999, 1000)
] + [("DECIMAL(38,0)", v) for v in (10**38 - 1, 10**38, decimal.Decimal("1E+5"), decimal.Decimal(10**28),
                                   decimal.Decimal(10**38 - 1), decimal.Decimal(-(10**38) + 1), decimal.Decimal(10**38),
                                   decimal.Decimal("-12925279541072294009725832350.5"),
                                   decimal.Decimal("-1234567890123456789012345678901"), decimal.Decimal(-(10**38)))
] + [("DECIMAL(38,10)", v) for v in (decimal.Decimal("1234567890123456789012345678.0123456789"),
                                    decimal.Decimal("-9999999999999999999999999999.9999999999"), decimal.Decimal("1.5"))
] + [
    ("VARCHAR(3)", v) for v in ("abc", "abcd", "üéà", "😀😀😀", "😀😀😀😀", "a\x00", b"abc", b"\xff")
] + [("CHAR(2)", v) for v in ("a", "ab", "abc")] + [("STRING", v) for v in ("", "x" * 100_000, "\u2028")] + [
    ("BINARY(2)", v) for v in (b"", b"\xff\xfe", b"\x00\x00\x00", bytearray(b"a"), "ab")
] + [("FIXED(2)", v) for v in (b"ab", b"a", b"abc")] + [
    ("DATE", v) for v in (dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.datetime(2026, 1, 1, 12), "2026-01-01")
] + [("TIMESTAMP", v) for v in (dt.datetime(1, 1, 1), dt.datetime(2026, 1, 1, tzinfo=UTC), dt.date(2026, 1, 1))] + [
    ("TIMESTAMPTZ", v) for v in (
        dt.datetime(2026, 1, 1, 12, 30, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))),
        dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))), dt.datetime(1, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        dt.datetime(9999, 12, 31, 23, tzinfo=dt.timezone(dt.timedelta(hours=-1))),
        dt.datetime(2026, 1, 1, tzinfo=dt.timezone(dt.timedelta(seconds=30))), dt.datetime(2026, 1, 1))
] + [("TIME", v) for v in (dt.time(0), dt.time(23, 59, 59, 999999), dt.time(1, tzinfo=UTC))] + [
    ("BOOLEAN", v) for v in (True, False, 1, "true")
]  # fmt: skip


@pytest.mark.parametrize(("sql_type", "value"), EDGES)
def test_edge_values_give_what_duckdb_gives(
    sql_type: str, value: Any, lakes: tuple[Any, Any], capture: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    columns = [("c0", sql_type, False), ("c1", "INT", True)]
    table = f"ns.t{next(_TABLES)}"
    sql = f"INSERT INTO {table} (c1, c0) VALUES (?, ?)"  # column order and subsets: the property test
    fast = _run(lakes[0], table, columns, sql, (7, value), capture)
    monkeypatch.setattr(writes, "plain_row", lambda *a: None)
    try:
        oracle = _run(lakes[1], table, columns, sql, (7, value), capture)
    finally:
        monkeypatch.setattr(writes, "plain_row", plain_row)
    assert fast == oracle


def _plain(sql: str, row: tuple, columns: list[ColumnSpec], provided: list[str] | None = None) -> Any:
    return plain_row(bind(sqlglot.parse_one(sql), row).expression, columns, provided)


COLUMNS = [
    ColumnSpec("id", TypeSpec("int8")), ColumnSpec("name", TypeSpec("varchar")),
    ColumnSpec("amount", TypeSpec("float8")), ColumnSpec("day", TypeSpec("date"), nullable=False),
]  # fmt: skip


@pytest.mark.parametrize(
    "row",
    [
        (1, "name 1", 1.5, dt.date(2026, 1, 1)),
        (-(2**63), "", float("nan"), dt.date(1, 1, 1)),
        (None, None, None, dt.date(9999, 12, 31)),
        (2**63 - 1, "ü" * 10_000, -0.0, dt.date(2026, 11, 27)),
    ],
)
def test_the_everyday_rows_take_the_python_path(row: tuple) -> None:
    table = _plain("INSERT INTO t VALUES (?, ?, ?, ?)", row, COLUMNS)
    assert table is not None and table.num_rows == 1
    assert [repr(v) for v in table.to_pylist()[0].values()] == [repr(v) for v in row]


@pytest.mark.parametrize(
    "row",
    [
        (2**63, "a", 1.0, dt.date(2026, 1, 1)),  # out of BIGINT's range
        (1, "a", 1.0, None),  # NULL into NOT NULL
        (1, b"\xff", 1.0, dt.date(2026, 1, 1)),  # bytes into text (Q9)
        ("1", "a", 1.0, dt.date(2026, 1, 1)),  # text into an integer
        (1, "a", decimal.Decimal("1.5"), dt.date(2026, 1, 1)),  # DuckDB's decimal to double
        (1, "a", 1.0, dt.datetime(2026, 1, 1)),  # a timestamp into a date
        (True, "a", 1.0, dt.date(2026, 1, 1)),  # a boolean into an integer
    ],
)
def test_other_rows_take_the_duckdb_path(row: tuple) -> None:
    assert _plain("INSERT INTO t VALUES (?, ?, ?, ?)", row, COLUMNS) is None


def test_several_rows_and_expressions_take_the_duckdb_path() -> None:
    assert _plain("INSERT INTO t VALUES (1, 'a', 1e0, DATE '2026-01-01'), (2, 'b', 2e0, DATE '2026-01-01')", (), COLUMNS) is None
    assert _plain("INSERT INTO t VALUES (1 + 1, 'a', 1e0, CAST('2026-01-01' AS DATE))", (), COLUMNS) is None
    assert _plain("INSERT INTO t SELECT 1, 'a', 1e0, CAST('2026-01-01' AS DATE)", (), COLUMNS) is None
    assert _plain("INSERT INTO t (id, day) VALUES (1, CAST('2026-01-01' AS DATE))", (), COLUMNS, ["id", "day"]) is not None


@pytest.fixture
def lake() -> Iterator[Any]:
    with tl.connect(f"memory://onerow-{uuid.uuid4().hex}/lake", create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE ns")
        cur.execute("CREATE TABLE ns.t (id BIGINT, name VARCHAR(3), day DATE NOT NULL)")
        yield cur


def test_errors_still_name_the_column(lake: Any) -> None:
    with pytest.raises(tl.IntegrityError, match="'day'"):
        lake.execute("INSERT INTO ns.t VALUES (?, ?, ?)", (1, "a", None))
    with pytest.raises(tl.DataError, match="'name'"):
        lake.execute("INSERT INTO ns.t VALUES (?, ?, ?)", (1, "abcd", dt.date(2026, 1, 1)))
    with pytest.raises(tl.DataError, match="'id'"):
        lake.execute("INSERT INTO ns.t VALUES (?, ?, ?)", (2**63, "a", dt.date(2026, 1, 1)))
    lake.execute("INSERT INTO ns.t (day, id) VALUES (?, ?)", (dt.date(2026, 1, 1), 7))
    assert lake.execute("SELECT * FROM ns.t").fetchall() == [(7, None, dt.date(2026, 1, 1))]
