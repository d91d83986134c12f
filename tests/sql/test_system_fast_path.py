"""The direct answer to plain system-table lookups equals sqlglot's executor's.

sql/system_tables.py answers a SELECT of columns of one system table, filtered by
column = literal equalities, without the optimizer. The oracle is the executor itself:
the same query with one more conjunct, ``1 = 1``, which the direct path does not take.
Generated queries cover every system table, star and qualified columns, aliases, literals
on either side, literals of the wrong kind, unknown and quoted names, ORDER BY (columns
with and without NULLs and ties, ASC/DESC, NULLS FIRST/LAST, output aliases, positions)
and LIMIT.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trinitylake_dbapi as tl
from trinitylake_dbapi.sql import system_tables

optimize = system_tables.optimize

TABLES = {
    "information_schema.schemata": ["catalog_name", "schema_name", "comment"],
    "information_schema.tables": ["table_schema", "table_name", "table_kind", "comment"],
    "information_schema.columns": ["table_schema", "table_name", "column_name", "ordinal_position",
                                   "is_nullable", "data_type", "character_maximum_length"],
    "system.versions": ["version", "previous_version", "changes"],
}  # fmt: skip
LITERALS = ["'ns'", "'other'", "'t1'", "'t2'", "'id'", "'name'", "'YES'", "'NO'", "'int8'", "'varchar(20)'", "1",
            "2", "3", "20", "'1'", "NULL", "'missing'"]  # fmt: skip


@pytest.fixture(scope="module")
def cur(tmp_path_factory: Any) -> Any:
    conn = tl.connect(str(tmp_path_factory.mktemp("fast") / "lake"), create=True, autocommit=True)
    cur = conn.cursor()
    for sql in ("CREATE NAMESPACE ns COMMENT 'first'", "CREATE NAMESPACE other",
                "CREATE TABLE ns.t1 (id BIGINT NOT NULL, name VARCHAR(20), at TIMESTAMP) COMMENT 'one'",
                "CREATE TABLE ns.t2 (id INT, score DOUBLE)", "CREATE TABLE other.t1 (id BIGINT)"):  # fmt: skip
        cur.execute(sql)
    yield cur
    conn.close()


def result(cur: Any, sql: str) -> tuple[Any, Any]:
    try:
        cur.execute(sql)
    except tl.Error as e:
        return type(e), None
    return [(d[0], d[1]) for d in cur.description], cur.fetchall()


@st.composite
def lookups(draw: Any) -> tuple[str, str]:
    """A query the direct path may answer, and the same query for the executor."""
    table = draw(st.sampled_from(sorted(TABLES)))
    alias = draw(st.sampled_from(["", "c", "C"]))
    columns = TABLES[table]
    odd = ["nope", '"TABLE_NAME"', "TABLE_NAME", '"table_name"']
    names = st.one_of(st.sampled_from(columns), st.sampled_from(columns), st.sampled_from(columns), st.sampled_from(odd))

    def ref(name: str) -> str:
        return draw(st.sampled_from([name, f"{alias or table.split('.')[1]}.{name}"]))

    select = draw(st.one_of(
        st.just("*"),
        st.just(f"{alias or table.split('.')[1]}.*"),
        st.lists(st.tuples(names, st.sampled_from(["", " AS x", " AS Col", " AS table_name"])), min_size=1, max_size=3)
        .map(lambda cols: ", ".join(f"{ref(n)}{a}" for n, a in cols)),
    ))  # fmt: skip
    conditions = [
        f"{ref(name)} = {lit}" if draw(st.booleans()) else f"{lit} = {ref(name)}"
        for name, lit in draw(st.lists(st.tuples(names, st.sampled_from(LITERALS)), max_size=4))
    ]  # fmt: skip
    keys = draw(st.lists(st.tuples(
        st.one_of(st.sampled_from(columns), st.sampled_from(columns), st.sampled_from(columns),
                  st.sampled_from(odd + ["x", "Col", "1"])),
        st.sampled_from(["", " ASC", " DESC", " NULLS FIRST", " DESC NULLS LAST"]),
    ), max_size=3))  # fmt: skip
    order = " ORDER BY " + ", ".join(f"{ref(n)}{d}" for n, d in keys) if keys else ""
    limit = draw(st.sampled_from(["", " LIMIT 1", " LIMIT 0", " LIMIT 5"]))
    source = f"{table} {alias}".rstrip()
    where = " WHERE " + " AND ".join(conditions) if conditions else ""
    oracle_where = " WHERE " + " AND ".join(conditions + ["1 = 1"])
    return (f"SELECT {select} FROM {source}{where}{order}{limit}",
            f"SELECT {select} FROM {source}{oracle_where}{order}{limit}")  # fmt: skip


@pytest.mark.slow  # 200 examples (~3.0 s of CPU): the full run only
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(pair=lookups())
def test_direct_answers_equal_the_executors(cur: Any, pair: tuple[str, str]) -> None:
    direct, oracle = pair
    assert result(cur, direct) == result(cur, oracle), direct


def test_the_inspector_query_runs_without_the_optimizer(cur: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the optimizer ran")

    monkeypatch.setattr(system_tables, "optimize", refuse)
    cur.execute("SELECT column_name, data_type, ordinal_position AS pos FROM information_schema.columns "
                "WHERE table_schema = 'ns' AND 't1' = table_name")  # fmt: skip
    assert [d[0] for d in cur.description] == ["column_name", "data_type", "pos"]
    assert cur.fetchall() == [("id", "int8", 1), ("name", "varchar(20)", 2), ("at", "timestamp", 3)]


ORDERED = [  # (query, answered directly): ties, DESC, several keys, NULLs, aliases
    ("SELECT column_name, data_type, is_nullable, comment, primary_key_position FROM "
     "information_schema.columns WHERE table_schema = 'ns' AND table_name = 't1' ORDER BY ordinal_position", True),
    ("SELECT table_name FROM information_schema.tables WHERE table_schema = 'ns' ORDER BY table_name", True),
    ("SELECT table_schema, table_name, column_name FROM information_schema.columns "
     "ORDER BY column_name DESC, table_schema, c.table_name DESC", False),  # c: not this table
    ("SELECT table_schema, table_name, column_name FROM information_schema.columns c "
     "ORDER BY column_name DESC, table_schema, c.table_name DESC LIMIT 4", True),
    ("SELECT * FROM information_schema.columns ORDER BY data_type", True),  # ties keep the table's order
    ("SELECT * FROM information_schema.columns ORDER BY is_nullable DESC NULLS FIRST, ordinal_position", True),
    ("SELECT * FROM information_schema.columns ORDER BY character_maximum_length", False),  # NULLs
    ("SELECT schema_name, comment FROM information_schema.schemata ORDER BY comment DESC", False),
    ("SELECT table_schema AS table_name FROM information_schema.tables ORDER BY table_name", False),
    ("SELECT table_name FROM information_schema.tables ORDER BY 1 DESC", False),
    ("SELECT version, changes FROM system.versions ORDER BY version DESC LIMIT 3", True),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "direct"), ORDERED)
def test_ordered_lookups_equal_the_executors(cur: Any, sql: str, direct: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ORDER BY of columns without NULLs is answered directly, in the executor's order;
    the rest goes to the executor. Each of these has several rows to order."""
    oracle = result(cur, sql.replace(" ORDER BY", " WHERE 1 = 1 ORDER BY") if " WHERE " not in sql
                    else sql.replace(" WHERE ", " WHERE 1 = 1 AND "))  # fmt: skip
    assert oracle[1] is None or len(oracle[1]) > 1, oracle
    ran = []
    monkeypatch.setattr(system_tables, "optimize", lambda *a, **k: ran.append(1) or optimize(*a, **k))
    assert result(cur, sql) == oracle
    assert (not ran) == direct


@pytest.mark.parametrize("sql", [
    "SELECT column_name FROM information_schema.columns WHERE table_schema = 'ns' AND table_name = 't2'",
    "SELECT table_name FROM information_schema.tables t WHERE 1 = 1 ORDER BY 1",
    "SELECT table_name FROM information_schema.tables FOR SYSTEM_VERSION AS OF 3 ORDER BY 1",
    "SELECT a.table_name, b.table_name FROM information_schema.tables FOR SYSTEM_VERSION AS OF 4 a "
    "JOIN information_schema.tables b ON a.table_name = b.table_name ORDER BY 1, 2",
])  # fmt: skip
def test_a_statement_gives_the_same_rows_every_time_it_runs(cur: Any, sql: str) -> None:
    """The cursor keeps a parsed statement from its second run on and runs that same tree
    again: answering it must not change it (the executor gets a copy of its own)."""
    first = result(cur, sql)
    assert first[1], first
    assert [result(cur, sql) for _ in range(3)] == [first] * 3


# information_schema.tables queries that name no column but table_catalog, table_schema
# and table_name read no table definition (system_tables: the names come from the keys).
NAMES_ONLY = [
    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'ns' ORDER BY table_name",
    "SELECT table_schema, table_name FROM information_schema.tables",
    "SELECT t.table_catalog, upper(t.table_name) AS n FROM information_schema.tables t "
    "WHERE t.table_name LIKE 't%' ORDER BY upper(t.table_name) DESC, t.table_schema",
    "SELECT count(table_name) FROM information_schema.tables WHERE table_schema <> 'other'",
    "SELECT table_schema, count(table_name) AS c FROM information_schema.tables GROUP BY table_schema ORDER BY 1",
    "SELECT table_name FROM information_schema.tables WHERE table_name = 't1' AND table_schema = 'other'",
    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'missing'",
]  # fmt: skip
#: Makes the same query name another column (always true): every definition is read.
EVERY_COLUMN = "(comment IS NULL OR comment IS NOT NULL)"


def _with_every_column(sql: str) -> str:
    for clause in (" GROUP BY", " ORDER BY"):
        if clause in sql:
            head, tail = sql.split(clause, 1)
            return _with_every_column(head) + clause + tail
    qualifier = "t." if " t " in sql else ""
    condition = EVERY_COLUMN.replace("comment", f"{qualifier}comment")
    return sql.replace(" WHERE ", f" WHERE {condition} AND ") if " WHERE " in sql else f"{sql} WHERE {condition}"


@pytest.mark.parametrize("sql", NAMES_ONLY)
def test_a_names_only_table_query_reads_no_definition_and_answers_the_same(
    cur: Any, sql: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trinitylake_dbapi.catalog import CatalogTransaction

    full = result(cur, _with_every_column(sql))
    assert full[1] is not None, full
    read = []
    describe = CatalogTransaction.describe_table
    monkeypatch.setattr(CatalogTransaction, "describe_table", lambda self, *a: read.append(a) or describe(self, *a))
    assert result(cur, sql) == full
    assert read == []
    result(cur, _with_every_column(sql))
    assert read or not full[1]  # the oracle did read them


@pytest.mark.parametrize("isolation", ["SNAPSHOT", "SERIALIZABLE"])
def test_a_names_only_table_list_follows_ddl_transactions_and_time_travel(tmp_path: Any, isolation: str) -> None:
    """The names come from the catalog the query reads: after a CREATE or DROP (committed
    or the transaction's own), and at a time travel version, exactly as the full rows."""
    names = "SELECT table_name FROM information_schema.tables{at} WHERE table_schema = 'ns' ORDER BY table_name"
    conn = tl.connect(str(tmp_path / "lake"), create=True, isolation_level=isolation)
    try:
        cur = conn.cursor()

        def listed(at: str = "") -> list[str]:
            sql = names.format(at=at)
            rows = result(cur, sql)[1]
            assert result(cur, _with_every_column(sql))[1] == rows
            return [r[0] for r in rows]

        cur.execute("CREATE NAMESPACE ns")
        cur.execute("CREATE TABLE ns.a (id INT)")
        conn.commit()
        cur.execute("SELECT max(version) FROM system.versions")
        (with_a,) = cur.fetchone()
        assert listed() == ["a"]
        cur.execute("CREATE TABLE ns.b (id INT)")
        assert listed() == ["a", "b"]  # the transaction's own table
        conn.rollback()
        assert listed() == ["a"]
        cur.execute("CREATE TABLE ns.b (id INT)")
        cur.execute("DROP TABLE ns.a")
        conn.commit()
        assert listed() == ["b"]
        assert listed(f" FOR SYSTEM_VERSION AS OF {with_a}") == ["a"]
        other = tl.connect(str(tmp_path / "lake"), autocommit=True)
        other.cursor().execute("CREATE TABLE ns.c (id INT)")  # another connection's commit
        other.close()
        conn.commit()  # a new transaction sees it
        assert listed() == ["b", "c"]
    finally:
        conn.close()
