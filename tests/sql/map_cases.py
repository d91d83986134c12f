"""MAP values written and read back, run by tests/sql/test_map_values.py in a process of
its own (a child it forks): on pyarrow 23 to 25 a map could abort the interpreter (SIGABRT
in pyarrow's cast, apache/arrow#51029), which must fail one test, not kill pytest.

:func:`main` (or ``python tests/sql/map_cases.py LAKEHOUSE_DIR``) prints ``case NAME`` before each case
and ``ok NAME`` after it (flushed, so the last line names the case a crash stopped in),
and exits 1 with the difference when a value does not come back as it went in.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random
import sys
from typing import Any, Callable

import trinitylake_dbapi as tl
from trinitylake_dbapi import errors

UTC = dt.timezone.utc


def q(cur: Any, sql: str, params: Any = None) -> list[tuple] | None:
    cur.execute(sql, params)
    return cur.fetchall() if cur.description is not None else None


def round_trip(cur: Any, table: str, columns: str, rows: list[tuple], bound: int = 20) -> None:
    """CREATE ``table`` with ``columns``, write ``rows`` with executemany (one append from
    Arrow) and the first ``bound`` of them, shifted by 1000 ids, with execute (bound
    literals); both read back equal."""
    q(cur, f"CREATE TABLE ns.{table} (id INT, {columns})")
    marks = ", ".join("?" * len(rows[0]))
    cur.executemany(f"INSERT INTO ns.{table} VALUES ({marks})", rows)
    for id_, *rest in rows[:bound]:
        q(cur, f"INSERT INTO ns.{table} VALUES ({marks})", (id_ + 1000, *rest))
    expected = sorted(rows + [(id_ + 1000, *rest) for id_, *rest in rows[:bound]], key=lambda r: r[0])
    got = q(cur, f"SELECT * FROM ns.{table} ORDER BY id")
    if got != expected:
        raise AssertionError(f"{table}: wrote {expected!r}, read {got!r}")


def docs_example(cur: Any, location: str) -> None:
    """docs/sqlalchemy.md's customers, through SQLAlchemy as the page writes them."""
    from urllib.parse import quote

    import sqlalchemy as sa

    from trinitylake_sqlalchemy.types import MAP, STRUCT, StructField

    engine = sa.create_engine("trinitylake://?location=" + quote(location, safe=""))
    meta = sa.MetaData(schema="ns")
    customers = sa.Table(
        "customers", meta,
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("address", STRUCT(StructField("city", sa.String()), StructField("zip", sa.String(10)))),
        sa.Column("tags", sa.ARRAY(sa.String())),
        sa.Column("attributes", MAP(sa.String(), sa.Integer())),
    )  # fmt: skip
    meta.create_all(engine)
    with engine.begin() as conn:
        conn.execute(customers.insert(), [
            {"id": 1, "address": {"city": "Lisbon", "zip": "1100"}, "tags": ["vip"], "attributes": {"visits": 3}},
            {"id": 2, "address": None, "tags": [], "attributes": {}},
        ])  # fmt: skip
        conn.execute(customers.insert().values(id=3, attributes={"visits": 4}))
        conn.execute(customers.update().where(customers.c.id == 2).values(attributes={"visits": 1}))
    with engine.connect() as conn:
        got = conn.execute(sa.select(customers.c.id, customers.c.attributes).order_by(customers.c.id)).all()
    engine.dispose()
    if [tuple(r) for r in got] != [(1, {"visits": 3}), (2, {"visits": 1}), (3, {"visits": 4})]:
        raise AssertionError(got)


def plain_maps(cur: Any, location: str) -> None:
    """Maps, NULL maps, empty maps and maps with NULL values, in one column."""
    rows = [(1, {"visits": 3}), (2, None), (3, {}), (4, {"a": None, "b": 2}), (5, {"x" * 300: 1})]
    round_trip(cur, "plain", "m MAP<STRING, BIGINT>", rows)
    round_trip(cur, "nulls", "m MAP<STRING, BIGINT>", [(1, None), (2, None)])
    round_trip(cur, "empties", "m MAP<STRING, BIGINT>", [(1, {}), (2, {})])


def key_types(cur: Any, location: str) -> None:
    """Keys of every kind a cast may convert (string and binary to their large forms)."""
    round_trip(cur, "ki", "m MAP<INT, STRING>", [(1, {1: "one", 2: None}), (2, None), (3, {})])
    round_trip(cur, "kb", "m MAP<BINARY, INT>", [(1, {b"\x00": 1, b"\xff\xfe": 2}), (2, None)])
    round_trip(cur, "kd", "m MAP<DATE, DECIMAL(10,2)>",
               [(1, {dt.date(2024, 2, 29): decimal.Decimal("1.50")}), (2, {})])  # fmt: skip
    round_trip(cur, "kt", "m MAP<TIMESTAMPTZ, BIGINT>", [(1, {dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC): 7})])
    round_trip(cur, "kl", "m MAP<BIGINT, DOUBLE>", [(1, {2**40: 1.5, -1: None})])


def nested_maps(cur: Any, location: str) -> None:
    """Maps in maps, lists and structs, and lists and structs in maps. Maps in a list or
    a map are written with executemany only (bound=0): as bound literals they gain their
    siblings' keys (a bug of parameter binding, apart from the crash this file is about),
    and a dict or list mixing empty and other dicts is a ProgrammingError."""
    round_trip(cur, "mm", "m MAP<STRING, MAP<STRING, INT>>",
               [(1, {"a": {"b": 1}, "c": None, "e": {"f": None}}), (2, None), (3, {}), (4, {"d": {}}),
                (5, {"a": {"b": 1}, "d": {}})], bound=0)  # fmt: skip
    round_trip(cur, "lm", "l ARRAY<MAP<STRING, INT>>",
               [(1, [{"a": 1}, None, {"b": 2, "c": None}]), (2, None), (3, []), (4, [{}, None])], bound=0)  # fmt: skip
    round_trip(cur, "lme", "l ARRAY<MAP<STRING, INT>>", [(1, [{"a": 1}, {}])], bound=0)
    round_trip(cur, "sm", "s STRUCT<m: MAP<STRING, INT>, n: INT>",
               [(1, {"m": {"a": 1}, "n": 2}), (2, {"m": None, "n": 3}), (3, None)])  # fmt: skip
    round_trip(cur, "ml", "m MAP<STRING, ARRAY<INT>>", [(1, {"a": [1, None], "b": None, "c": []}), (2, None)])
    # (no NULL map of structs: PyIceberg 0.12 writes it as an empty map, see
    # test_map_values.py::test_a_null_map_of_structs_stays_null)
    round_trip(cur, "ms", "m MAP<STRING, STRUCT<x: INT, y: STRING>>",
               [(1, {"a": {"x": 1, "y": None}, "b": None}), (2, {})])  # fmt: skip
    round_trip(cur, "lsm", "l ARRAY<STRUCT<m: MAP<INT, MAP<STRING, STRING>>>>",
               [(1, [{"m": {1: {"k": "v"}, 2: None}}, None, {"m": None}]), (2, [])], bound=0)  # fmt: skip


def sql_statements(cur: Any, location: str) -> None:
    """MAP literals, INSERT ... SELECT, CREATE TABLE AS, UPDATE and DELETE (which
    rewrite files holding maps)."""
    q(cur, "CREATE TABLE ns.lit (id INT, m MAP<STRING, BIGINT>, mm MAP<STRING, MAP<STRING, INT>>)")
    q(cur, "INSERT INTO ns.lit VALUES (1, MAP {'visits': 3}, MAP {'a': MAP {'b': 1}}), (2, NULL, MAP {}),"
           " (3, MAP {'x': NULL}, NULL)")  # fmt: skip
    q(cur, "INSERT INTO ns.lit SELECT id + 10, m, mm FROM ns.lit")
    q(cur, "CREATE TABLE ns.copy AS SELECT * FROM ns.lit WHERE id > 1")
    q(cur, "UPDATE ns.lit SET m = MAP {'visits': 4} WHERE id = 1")
    q(cur, "UPDATE ns.lit SET m = ? WHERE id = 2", [{"b": 5}])
    q(cur, "DELETE FROM ns.lit WHERE id = 3")
    got = q(cur, "SELECT id, m, mm FROM ns.lit ORDER BY id")
    want = [(1, {"visits": 4}, {"a": {"b": 1}}), (2, {"b": 5}, {}), (11, {"visits": 3}, {"a": {"b": 1}}),
            (12, None, {}), (13, {"x": None}, None)]  # fmt: skip
    if got != want:
        raise AssertionError(got)
    if q(cur, "SELECT id FROM ns.copy ORDER BY id") != [(2,), (3,), (11,), (12,), (13,)]:
        raise AssertionError("CREATE TABLE AS")


def null_key(cur: Any, location: str) -> None:
    """A NULL key is refused with a PEP 249 error, never a crash."""
    q(cur, "CREATE TABLE ns.nk (id INT, m MAP<STRING, INT>)")
    # (not the literal MAP {NULL: 1}: it stores the key 'NULL', see
    # test_map_values.py::test_a_null_key_in_a_map_literal_is_refused)
    for statement, params in [("INSERT INTO ns.nk VALUES (?, ?)", (1, {None: 1})),
                              ("INSERT INTO ns.nk VALUES (?, ?)", (1, {"a": 1, None: 2}))]:  # fmt: skip
        try:
            q(cur, statement, params)
        except errors.Error:
            continue
        raise AssertionError(f"{statement} {params}: no error")
    if q(cur, "SELECT count(*) FROM ns.nk") != [(0,)]:
        raise AssertionError("a NULL key was written")


def random_values(cur: Any, location: str) -> None:
    """Seeded random rows of a nested type, many enough to span several Arrow batches
    (DuckDB's vectors hold 2,048 rows, so the arrays cast are slices of longer ones)."""
    rng = random.Random(31)

    def maybe(make: Callable[[], Any]) -> Any:
        return None if rng.random() < 0.15 else make()

    def inner() -> dict:
        return {rng.choice("abcdefgh") * rng.randint(1, 3): maybe(lambda: rng.randint(-9, 9))
                for _ in range(rng.randint(0, 3))}  # fmt: skip

    rows = [
        (i, maybe(inner), maybe(lambda: {rng.randint(0, 50): maybe(inner) for _ in range(rng.randint(0, 3))}),
         maybe(lambda: [maybe(inner) for _ in range(rng.randint(0, 3))]), maybe(lambda: {"m": maybe(inner)}))
        for i in range(5000)
    ]  # fmt: skip
    round_trip(cur, "rnd", "a MAP<STRING, INT>, b MAP<INT, MAP<STRING, INT>>, c ARRAY<MAP<STRING, INT>>, "
                           "d STRUCT<m: MAP<STRING, INT>>", rows, bound=0)  # fmt: skip
    q(cur, "UPDATE ns.rnd SET a = MAP {'u': 1} WHERE id % 7 = 0")
    if q(cur, "SELECT count(*) FROM ns.rnd WHERE a = MAP {'u': 1}") != [(715,)]:
        raise AssertionError("UPDATE of random rows")


CASES: list[Callable[[Any, str], None]] = [
    docs_example, plain_maps, key_types, nested_maps, sql_statements, null_key, random_values,
]


def main(location: str) -> int:
    import pyarrow

    print(f"pyarrow {pyarrow.__version__}", flush=True)
    with tl.connect(location, create=True, autocommit=True) as conn:
        cur = conn.cursor()
        q(cur, "CREATE NAMESPACE ns")
        for case in CASES:
            print(f"case {case.__name__}", flush=True)
            case(cur, location)
            print(f"ok {case.__name__}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
