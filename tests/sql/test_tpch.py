"""A TPC-H-shaped query corpus (issue 18, acceptance 1): every query's result through the
DB-API equals DuckDB's own result on the same rows loaded natively into an in-memory
DuckDB database (the oracle).

The lakehouse is loaded once per module, through the DB-API, in three lakehouse
versions: ``first`` (the generator's rows, one append per table by ``executemany``),
``second`` (200 more orders and their lineitems, one transaction) and the current one
(a DELETE of the oldest orders and their lineitems and two UPDATEs of customers, one
transaction). The oracle runs the same statements on its own tables and keeps a schema
per earlier version, so a time-travel query compares with that version's rows. The
queries are in tests/sql/tpch_queries.py; the data comes from tests/tpch_data.py.

Results are compared as lists when the query ends in ORDER BY, as multisets otherwise;
floats are compared to 9 significant digits (sums of doubles depend on their order),
everything else exactly (Decimals by value).
"""

from __future__ import annotations

import collections
import re
from typing import Any, Iterator

import duckdb
import pyarrow as pa
import pytest

import trinitylake_dbapi as tl
from trinitylake_dbapi.sql.dialect import parse_statement
from tests import tpch_data
from tests.sql import tpch_queries

#: The statements that make the current version out of ``second`` (one transaction).
CHANGES = [
    "DELETE FROM tpch.lineitem WHERE l_orderkey IN "
    "(SELECT o_orderkey FROM tpch.orders WHERE o_orderdate < DATE '1992-04-01')",
    "DELETE FROM tpch.orders WHERE o_orderdate < DATE '1992-04-01'",
    "UPDATE tpch.customer SET c_nickname = 'vip' WHERE c_acctbal > 9000",
    "UPDATE tpch.customer SET c_nickname = NULL WHERE c_custkey % 10 = 1",
]

_ARROW = {"INT": pa.int32(), "BIGINT": pa.int64(), "STRING": pa.string(), "DATE": pa.date32(),
          "DECIMAL(15,2)": pa.decimal128(15, 2)}  # fmt: skip
_SYSTEM_TYPES = {"varchar": "VARCHAR", "int4": "INTEGER", "int8": "BIGINT", "timestamp": "TIMESTAMP"}


class TPCH:
    """The loaded lakehouse (a cursor on it), the oracle and the versions' names."""

    def __init__(self, cursor: Any, oracle: Any, versions: dict[str, int], first_time: str) -> None:
        self.cursor = cursor
        self.oracle = oracle
        self.versions = versions
        self.first_time = first_time

    def ours(self, query: str) -> str:
        def table(m: re.Match) -> str:
            name, version = m.group(1), m.group(2)
            if version == "first_time":
                return f"tpch.{name} FOR SYSTEM_TIME AS OF '{self.first_time}'"
            return f"tpch.{name} FOR SYSTEM_VERSION AS OF {self.versions[version]}"

        query = re.sub(r"\{(\w+)@(\w+)\}", table, query)
        query = query.replace("tl_information_schema.", "information_schema.").replace("tl_system.", "system.")
        return query.replace("{version_first}", str(self.versions["first"]))

    def theirs(self, query: str) -> str:
        def table(m: re.Match) -> str:
            version = "first" if m.group(2) == "first_time" else m.group(2)
            return f"{version}.{m.group(1)}"

        query = re.sub(r"\{(\w+)@(\w+)\}", table, query)
        return query.replace("{version_first}", str(self.versions["first"]))


def _arrow(table: str, rows: list[tuple]) -> pa.Table:
    columns = tpch_data.SCHEMA[table]
    schema = pa.schema([(name, _ARROW[sql_type.replace(" NOT NULL", "")]) for name, sql_type in columns])
    return pa.table([pa.array([r[i] for r in rows], f.type) for i, f in enumerate(schema)], schema=schema)


def _oracle_insert(oracle: Any, table: str, rows: list[tuple]) -> None:
    oracle.register("__rows", _arrow(table, rows))
    oracle.execute(f"INSERT INTO tpch.{table} SELECT * FROM __rows")
    oracle.unregister("__rows")


def _insert(cur: Any, oracle: Any, table: str, rows: list[tuple]) -> None:
    holes = ", ".join("?" * len(tpch_data.SCHEMA[table]))
    cur.executemany(f"INSERT INTO tpch.{table} VALUES ({holes})", rows)
    assert cur.rowcount == len(rows)
    _oracle_insert(oracle, table, rows)


def _snapshot(oracle: Any, schema: str) -> None:
    oracle.execute(f"CREATE SCHEMA {schema}")
    for table in tpch_data.TABLES:
        oracle.execute(f"CREATE TABLE {schema}.{table} AS SELECT * FROM tpch.{table}")


def _latest(cur: Any) -> tuple[int, Any]:
    cur.execute("SELECT version, created_at FROM system.versions ORDER BY version DESC LIMIT 1")
    row = cur.fetchone()
    return row[0], row[1]


def _copy_system_tables(cur: Any, oracle: Any) -> None:
    """The driver's information_schema.tables / .columns and system.versions, as tables
    of the oracle (``tl_information_schema``, ``tl_system``)."""
    oracle.execute("CREATE SCHEMA tl_information_schema")
    oracle.execute("CREATE SCHEMA tl_system")
    for schema, name, oracle_schema in (
        ("information_schema", "tables", "tl_information_schema"),
        ("information_schema", "columns", "tl_information_schema"),
        ("system", "versions", "tl_system"),
    ):
        cur.execute(f"SELECT * FROM {schema}.{name}")
        rows = cur.fetchall()
        columns = ", ".join(f'"{d[0]}" {_SYSTEM_TYPES[d[1]]}' for d in cur.description)
        oracle.execute(f"CREATE TABLE {oracle_schema}.{name} ({columns})")
        if rows:
            oracle.executemany(f"INSERT INTO {oracle_schema}.{name} VALUES ({', '.join('?' * len(rows[0]))})", rows)


@pytest.fixture(scope="module")
def tpch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TPCH]:
    data = tpch_data.generate()
    more = tpch_data.more_orders(data, 200)
    conn = tl.connect(str(tmp_path_factory.mktemp("tpch") / "lake"), create=True, autocommit=True)
    cur = conn.cursor()
    oracle = duckdb.connect()
    oracle.execute("SET TimeZone = 'UTC'")
    cur.execute("CREATE NAMESPACE tpch")
    oracle.execute("CREATE SCHEMA tpch")
    for table, columns in tpch_data.SCHEMA.items():
        cur.execute(f"CREATE TABLE tpch.{table} ({', '.join(f'{n} {t}' for n, t in columns)})")
        oracle.execute(f"CREATE TABLE tpch.{table} "
                       f"({', '.join(f'{n} {tpch_data.duckdb_type(t)}' for n, t in columns)})")  # fmt: skip
    for table in tpch_data.TABLES:
        _insert(cur, oracle, table, data[table])  # one append (and one version) per table
    versions = {}
    versions["first"], first_time = _latest(cur)
    _snapshot(oracle, "first")
    conn.autocommit = False
    for table, rows in more.items():
        _insert(cur, oracle, table, rows)
    conn.commit()
    versions["second"], _ = _latest(cur)
    _snapshot(oracle, "second")
    for statement in CHANGES:
        cur.execute(statement)
        assert cur.rowcount == oracle.execute(statement).fetchone()[0] > 0, statement
    conn.commit()
    conn.autocommit = True
    versions["current"], _ = _latest(cur)
    assert versions["first"] < versions["second"] < versions["current"]
    _copy_system_tables(cur, oracle)
    yield TPCH(cur, oracle, versions, first_time.isoformat(sep=" "))
    conn.close()
    oracle.close()


def _normal(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, (list, tuple)):
        return tuple(_normal(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _normal(v)) for k, v in value.items()))
    return value


def _ordered(query: str) -> bool:
    """Whether the query's result is ordered (an ORDER BY at its top level)."""
    return parse_statement(query).args.get("order") is not None


CORPUS = tpch_queries.corpus()


def test_the_corpus_has_the_22_tpch_queries_and_more_than_60_in_all() -> None:
    assert [k for k in CORPUS if re.fullmatch(r"q\d\d", k)] == [f"q{i:02d}" for i in range(1, 23)]
    assert len(CORPUS) >= 60


@pytest.mark.parametrize("name", list(CORPUS))
def test_query_agrees_with_duckdb(tpch: TPCH, name: str) -> None:
    query = CORPUS[name]
    tpch.cursor.execute(tpch.ours(query))
    ours = [_normal(r) for r in tpch.cursor.fetchall()]
    width = len(tpch.cursor.description)
    native = tpch.oracle.execute(tpch.theirs(query))
    theirs = [_normal(r) for r in native.fetchall()]
    assert width == len(native.description)
    if _ordered(tpch.ours(query)):
        assert ours == theirs
    else:
        assert collections.Counter(ours) == collections.Counter(theirs)


def test_versions_hold_what_each_load_wrote(tpch: TPCH) -> None:
    """The versions differ (so time travel reads something else than the current rows)."""
    counts = {}
    for name, version in tpch.versions.items():
        tpch.cursor.execute(f"SELECT count(*) FROM tpch.lineitem FOR SYSTEM_VERSION AS OF {version}")
        counts[name] = tpch.cursor.fetchone()[0]
    assert counts["first"] < counts["second"] and counts["current"] < counts["second"]
