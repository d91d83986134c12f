"""Every statement of TrinityLake SQL on real lakehouses: what it does, and how it fails."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pytest

import trinitylake_dbapi as tl
from trinitylake_dbapi import errors, like_to_regex

from lakes import Lake, local_and_memory


def q(cur: Any, sql: str, params: Any = None) -> list[tuple] | None:
    cur.execute(sql, params)
    return cur.fetchall() if cur.description is not None else None


@pytest.fixture
def auto(memory_lake: Lake) -> Any:
    """A cursor on an autocommit connection to a new lakehouse with namespace ``ns``."""
    conn = memory_lake.connect(autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    yield cur
    conn.close()


# ---------------------------------------------------------------------------
# Namespaces
# ---------------------------------------------------------------------------


def test_create_namespace_variants(auto: Any) -> None:
    q(auto, "CREATE NAMESPACE a COMMENT 'first' WITH DBPROPERTIES ('k' = 'v', 'n' = 1)")
    q(auto, "CREATE SCHEMA b WITH (owner = 'bob', x.y = 'z')")
    q(auto, "CREATE DATABASE c WITH PROPERTIES ('comment' = 'from a property')")
    q(auto, "CREATE NAMESPACE `MixedCase`")
    assert q(auto, "SHOW NAMESPACES") == [("MixedCase",), ("a",), ("b",), ("c",), ("default",), ("ns",)]
    assert q(auto, "DESCRIBE NAMESPACE a") == [
        ("namespace", "a"), ("comment", "first"), ("k", "v"), ("n", "1")
    ]
    assert q(auto, "DESCRIBE SCHEMA b") == [
        ("namespace", "b"), ("comment", None), ("owner", "bob"), ("x.y", "z")
    ]
    assert q(auto, "DESCRIBE DATABASE c")[1] == ("comment", "from a property")
    assert [c[0] for c in auto.description] == ["property", "value"]


def test_create_namespace_errors(auto: Any) -> None:
    with pytest.raises(errors.ObjectExistsError, match="'ns' already exists"):
        q(auto, "CREATE NAMESPACE ns")
    q(auto, "CREATE NAMESPACE IF NOT EXISTS ns COMMENT 'ignored'")
    assert q(auto, "DESCRIBE NAMESPACE ns")[1] == ("comment", None)
    with pytest.raises(errors.InvalidNameError):
        q(auto, 'CREATE NAMESPACE "has space"')
    with pytest.raises(errors.InvalidNameError):
        q(auto, "CREATE NAMESPACE `" + "x" * 101 + "`")
    with pytest.raises(errors.ProgrammingError, match="given twice"):
        q(auto, "CREATE NAMESPACE d WITH ('a' = '1', 'a' = '2')")
    with pytest.raises(errors.InvalidDefinitionError, match="reserved"):
        q(auto, "CREATE NAMESPACE d WITH ('trinitylake.x' = '1')")
    with pytest.raises(errors.ProgrammingError, match="must be a string"):
        q(auto, "CREATE NAMESPACE d COMMENT ?", [5])
    assert q(auto, "SHOW NAMESPACES") == [("default",), ("ns",)]


def test_alter_namespace(auto: Any) -> None:
    q(auto, "ALTER NAMESPACE ns SET DBPROPERTIES ('a' = '1', 'b' = '2', 'comment' = 'c')")
    q(auto, "ALTER SCHEMA ns UNSET PROPERTIES ('a')")
    assert q(auto, "DESCRIBE NAMESPACE ns") == [("namespace", "ns"), ("comment", "c"), ("b", "2")]
    q(auto, "ALTER NAMESPACE ns UNSET PROPERTIES ('comment', 'missing')")
    assert q(auto, "DESCRIBE NAMESPACE ns") == [("namespace", "ns"), ("comment", None), ("b", "2")]
    q(auto, "COMMENT ON NAMESPACE ns IS 'again'")
    assert q(auto, "DESCRIBE NAMESPACE ns")[1] == ("comment", "again")
    with pytest.raises(errors.ObjectNotFoundError, match="'nope' does not exist"):
        q(auto, "ALTER NAMESPACE nope SET PROPERTIES ('a' = '1')")
    with pytest.raises(errors.ObjectNotFoundError, match="'nope'"):
        q(auto, "COMMENT ON NAMESPACE nope IS 'x'")


def test_drop_namespace(auto: Any) -> None:
    q(auto, "CREATE TABLE ns.t (a INT)")
    with pytest.raises(errors.ObjectNotEmptyError, match="CASCADE"):
        q(auto, "DROP NAMESPACE ns")
    with pytest.raises(errors.ObjectNotEmptyError):
        q(auto, "DROP NAMESPACE ns RESTRICT")
    q(auto, "DROP NAMESPACE ns CASCADE")
    assert q(auto, "SHOW NAMESPACES") == [("default",)]
    assert q(auto, "SHOW TABLES") == []
    with pytest.raises(errors.ObjectNotFoundError, match="'ns' does not exist"):
        q(auto, "DROP NAMESPACE ns")
    q(auto, "DROP NAMESPACE IF EXISTS ns")
    q(auto, "CREATE NAMESPACE empty")
    q(auto, "DROP SCHEMA empty")


def test_show_and_describe_namespaces(auto: Any) -> None:
    for n in ["sales", "sales_eu", "Salesforce", "hr"]:
        q(auto, f"CREATE NAMESPACE {n}")
    assert q(auto, "SHOW NAMESPACES LIKE 'sales%'") == [("sales",), ("sales_eu",)]
    assert q(auto, "SHOW SCHEMAS LIKE ?", ["_r"]) == [("hr",)]
    assert q(auto, "SHOW DATABASES LIKE 'S%'") == [("Salesforce",)]
    assert auto.description[0][:2] == ("namespace", "varchar")
    with pytest.raises(errors.ObjectNotFoundError, match="'nope'"):
        q(auto, "DESCRIBE NAMESPACE nope")


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------

ALL_TYPES = """
    CREATE TABLE ns.everything (
      id BIGINT NOT NULL COMMENT 'the key',
      flag BOOLEAN, s SMALLINT, i INT, l LONG,
      d DECIMAL(12, 2), f4 REAL, f8 DOUBLE, f FLOAT,
      c CHAR(3), v VARCHAR(20), t TEXT, st STRING,
      dt DATE, tm TIME(3), tmz TIMETZ, ts TIMESTAMP, tsz TIMESTAMPTZ(6),
      fx FIXED(16), b BINARY, vb VARBINARY(8),
      arr ARRAY<STRING>, lst LIST<INT NOT NULL>,
      m MAP<STRING, ARRAY<DECIMAL(5,2)>>,
      rec STRUCT<name: STRING NOT NULL COMMENT 'who', tags: ARRAY<STRING>, `odd-name`: INT>,
      PRIMARY KEY (id)
    ) USING iceberg COMMENT 'every type' TBLPROPERTIES ('owner' = 'me', 'write.format' = 'parquet')
"""

ALL_TYPES_DESCRIBED = [
    ("id", "int8", False, "the key"),
    ("flag", "boolean", True, None), ("s", "int2", True, None), ("i", "int4", True, None),
    ("l", "int8", True, None), ("d", "decimal(12,2)", True, None), ("f4", "float4", True, None),
    ("f8", "float8", True, None), ("f", "float8", True, None), ("c", "char(3)", True, None),
    ("v", "varchar(20)", True, None), ("t", "varchar", True, None), ("st", "varchar", True, None),
    ("dt", "date", True, None), ("tm", "time(3)", True, None), ("tmz", "timetz", True, None),
    ("ts", "timestamp", True, None), ("tsz", "timestamptz(6)", True, None),
    ("fx", "fixed(16)", True, None), ("b", "binary", True, None), ("vb", "binary(8)", True, None),
    ("arr", "list<varchar>", True, None), ("lst", "list<int4 NOT NULL>", True, None),
    ("m", "map<varchar, list<decimal(5,2)>>", True, None),
    ("rec", "struct<name: varchar NOT NULL COMMENT 'who', tags: list<varchar>, `odd-name`: int4>",
     True, None),
]  # fmt: skip


def test_create_table_every_type_and_describe(auto: Any) -> None:
    q(auto, ALL_TYPES)
    assert q(auto, "DESCRIBE TABLE ns.everything") == ALL_TYPES_DESCRIBED
    assert [c[:2] for c in auto.description] == [
        ("col_name", "varchar"), ("data_type", "varchar"), ("nullable", "boolean"),
        ("comment", "varchar"),
    ]  # fmt: skip
    assert auto.description[0][1] == tl.STRING


def test_show_create_table_round_trips(auto: Any) -> None:
    q(auto, ALL_TYPES)
    [(text,)] = q(auto, "SHOW CREATE TABLE ns.everything")
    assert text.startswith("CREATE TABLE ns.everything (\n  id int8 NOT NULL COMMENT 'the key',")
    assert "PRIMARY KEY (id)" in text and "USING iceberg" in text
    assert "TBLPROPERTIES ('owner' = 'me', 'write.format' = 'parquet')" in text
    q(auto, "CREATE NAMESPACE dup")
    q(auto, text.replace("CREATE TABLE ns.everything", "CREATE TABLE dup.everything"))
    assert q(auto, "DESCRIBE dup.everything") == ALL_TYPES_DESCRIBED
    [(again,)] = q(auto, "SHOW CREATE TABLE dup.everything")
    assert again == text.replace("ns.everything", "dup.everything")


def test_external_table_and_table_kinds(auto: Any) -> None:
    q(auto, "CREATE EXTERNAL TABLE ns.ext (a INT) LOCATION 's3://bucket/ext'")
    q(auto, "CREATE TABLE ns.ext2 (a INT) USING delta LOCATION '/data/ext2'")
    q(auto, "CREATE TABLE ns.managed (a INT)")
    rows = q(auto, "SELECT table_name, table_kind, table_format, location FROM "
                   "information_schema.tables ORDER BY table_name")  # fmt: skip
    assert rows == [
        ("ext", "EXTERNAL", "ICEBERG", "s3://bucket/ext"),
        ("ext2", "EXTERNAL", "DELTA", "/data/ext2"),
        ("managed", "MANAGED", "ICEBERG", None),
    ]
    [(text,)] = q(auto, "SHOW CREATE TABLE ns.ext")
    assert text.endswith("LOCATION 's3://bucket/ext'")


def test_create_table_errors(auto: Any) -> None:
    q(auto, "CREATE TABLE ns.t (a INT)")
    with pytest.raises(errors.ObjectExistsError, match="'ns'.'t' already exists"):
        q(auto, "CREATE TABLE ns.t (b INT)")
    q(auto, "CREATE TABLE IF NOT EXISTS ns.t (b INT)")
    assert q(auto, "DESCRIBE ns.t") == [("a", "int4", True, None)]
    with pytest.raises(errors.ObjectNotFoundError, match="namespace 'nope' does not exist"):
        q(auto, "CREATE TABLE nope.t (a INT)")
    with pytest.raises(errors.InvalidDefinitionError, match="column 'x': unknown type 'TINYINT'"):
        q(auto, "CREATE TABLE ns.u (x TINYINT)")
    with pytest.raises(errors.InvalidDefinitionError, match="duplicate column name 'a'"):
        q(auto, "CREATE TABLE ns.u (a INT, a STRING)")
    with pytest.raises(errors.InvalidDefinitionError, match="primary key column 'z'"):
        q(auto, "CREATE TABLE ns.u (a INT, PRIMARY KEY (z))")
    with pytest.raises(errors.InvalidNameError):
        q(auto, 'CREATE TABLE ns."bad name" (a INT)')
    with pytest.raises(errors.SQLSyntaxError):
        q(auto, "CREATE TABLE ns.u ()")
    assert q(auto, "SHOW TABLES") == [("ns", "t")]


def test_unqualified_names_use_default_then_use(auto: Any) -> None:
    q(auto, "CREATE TABLE t (a INT)")  # a new lakehouse has the namespace default
    assert q(auto, "SHOW TABLES IN default") == [("default", "t")]
    q(auto, "USE ns")
    q(auto, "CREATE TABLE t (b INT)")
    assert q(auto, "SHOW TABLES") == [("ns", "t")]  # the current namespace
    assert q(auto, "DESCRIBE t") == [("b", "int4", True, None)]
    with pytest.raises(errors.ObjectNotFoundError, match="'nope'"):
        q(auto, "USE nope")
    assert auto.connection.current_namespace == "ns"


def test_alter_table_columns(auto: Any) -> None:
    q(auto, "CREATE TABLE ns.t (id INT NOT NULL, name STRING, PRIMARY KEY (id))")
    q(auto, "ALTER TABLE ns.t ADD COLUMN age INT COMMENT 'years'")
    q(auto, "ALTER TABLE ns.t ADD COLUMNS (a1 STRING, a2 MAP<STRING, INT> NOT NULL)")
    q(auto, "ALTER TABLE ns.t DROP COLUMN a1")
    q(auto, "ALTER TABLE ns.t RENAME COLUMN name TO full_name")
    q(auto, "ALTER TABLE ns.t ALTER COLUMN age SET NOT NULL")
    q(auto, "ALTER TABLE ns.t ALTER COLUMN a2 DROP NOT NULL")
    q(auto, "ALTER TABLE ns.t ALTER COLUMN full_name COMMENT 'given and family'")
    q(auto, "ALTER TABLE ns.t ALTER COLUMN age COMMENT NULL")
    q(auto, "COMMENT ON COLUMN ns.t.id IS 'key'")
    assert q(auto, "DESCRIBE ns.t") == [
        ("id", "int4", False, "key"),
        ("full_name", "varchar", True, "given and family"),
        ("age", "int4", False, None),
        ("a2", "map<varchar, int4>", True, None),
    ]


def test_alter_table_column_errors(auto: Any) -> None:
    q(auto, "CREATE TABLE ns.t (id INT NOT NULL, name STRING, PRIMARY KEY (id))")
    with pytest.raises(errors.ObjectExistsError, match="'name' already exists"):
        q(auto, "ALTER TABLE ns.t ADD COLUMN name INT")
    with pytest.raises(errors.InvalidDefinitionError, match="duplicate column name 'x'"):
        q(auto, "ALTER TABLE ns.t ADD COLUMNS (x INT, x INT)")
    with pytest.raises(errors.InvalidDefinitionError, match="unknown type"):
        q(auto, "ALTER TABLE ns.t ADD COLUMN x JSON")
    with pytest.raises(errors.ObjectNotFoundError, match="column 'nope'"):
        q(auto, "ALTER TABLE ns.t DROP COLUMN nope")
    with pytest.raises(errors.InvalidDefinitionError, match="key"):
        q(auto, "ALTER TABLE ns.t DROP COLUMN id")
    with pytest.raises(errors.ObjectExistsError):
        q(auto, "ALTER TABLE ns.t RENAME COLUMN name TO id")
    with pytest.raises(errors.ObjectNotFoundError):
        q(auto, "ALTER TABLE ns.t RENAME COLUMN nope TO other")
    with pytest.raises(errors.InvalidDefinitionError, match="primary key"):
        q(auto, "ALTER TABLE ns.t ALTER COLUMN id DROP NOT NULL")
    with pytest.raises(errors.ObjectNotFoundError, match="'ns'.'missing' does not exist"):
        q(auto, "ALTER TABLE ns.missing ADD COLUMN x INT")
    with pytest.raises(errors.ObjectNotFoundError, match="namespace 'nope'"):
        q(auto, "ALTER TABLE nope.t ADD COLUMN x INT")
    assert q(auto, "DESCRIBE ns.t") == [("id", "int4", False, None), ("name", "varchar", True, None)]


def test_rename_and_drop_table(auto: Any) -> None:
    q(auto, "CREATE NAMESPACE other")
    q(auto, "CREATE TABLE ns.t (a INT)")
    q(auto, "CREATE TABLE ns.u (a INT)")
    q(auto, "ALTER TABLE ns.t RENAME TO t2")  # stays in ns
    q(auto, "ALTER TABLE ns.u RENAME TO other.u")
    assert q(auto, "SHOW TABLES") == [("ns", "t2"), ("other", "u")]
    with pytest.raises(errors.ObjectExistsError):
        q(auto, "CREATE TABLE ns.t3 (a INT)") or q(auto, "ALTER TABLE ns.t3 RENAME TO t2")
    with pytest.raises(errors.ObjectNotFoundError):
        q(auto, "ALTER TABLE ns.t2 RENAME TO missing_ns.t")
    q(auto, "DROP TABLE ns.t2")
    with pytest.raises(errors.ObjectNotFoundError, match="'ns'.'t2' does not exist"):
        q(auto, "DROP TABLE ns.t2")
    q(auto, "DROP TABLE IF EXISTS ns.t2")
    assert q(auto, "SHOW TABLES IN ns") == [("ns", "t3")]


def test_table_properties_and_comments(auto: Any) -> None:
    q(auto, "CREATE TABLE ns.t (a INT) TBLPROPERTIES ('a' = '1', 'comment' = 'c1')")
    assert q(auto, "SELECT comment FROM information_schema.tables") == [("c1",)]
    q(auto, "ALTER TABLE ns.t SET TBLPROPERTIES ('b' = '2', 'comment' = 'c2')")
    [(text,)] = q(auto, "SHOW CREATE TABLE ns.t")
    assert "COMMENT 'c2'" in text and "TBLPROPERTIES ('a' = '1', 'b' = '2')" in text
    q(auto, "ALTER TABLE ns.t UNSET TBLPROPERTIES ('a', 'comment')")
    [(text,)] = q(auto, "SHOW CREATE TABLE ns.t")
    assert "COMMENT" not in text and "TBLPROPERTIES ('b' = '2')" in text
    with pytest.raises(errors.ObjectNotFoundError, match="no property 'zz'"):
        q(auto, "ALTER TABLE ns.t UNSET TBLPROPERTIES ('b', 'zz')")
    with pytest.raises(errors.ProgrammingError, match="'comment'"):
        q(auto, "ALTER TABLE ns.t UNSET TBLPROPERTIES ('b', 'comment')")
    [(after,)] = q(auto, "SHOW CREATE TABLE ns.t")
    assert after == text  # a failed statement changed nothing
    q(auto, "ALTER TABLE ns.t UNSET TBLPROPERTIES IF EXISTS ('zz', 'b', 'comment')")
    q(auto, "COMMENT ON TABLE ns.t IS 'again'")
    [(text,)] = q(auto, "SHOW CREATE TABLE ns.t")
    assert text.endswith("COMMENT 'again'")
    with pytest.raises(errors.InvalidDefinitionError, match="reserved"):
        q(auto, "ALTER TABLE ns.t SET TBLPROPERTIES ('trinitylake.last-column-id' = '9')")


def test_show_tables(auto: Any) -> None:
    q(auto, "CREATE NAMESPACE b")
    for t in ["ns.orders", "ns.order_items", "ns.users", "b.orders"]:
        q(auto, f"CREATE TABLE {t} (a INT)")
    assert q(auto, "SHOW TABLES") == [("b", "orders"), ("ns", "order_items"), ("ns", "orders"),
                                      ("ns", "users")]  # fmt: skip
    assert [c[0] for c in auto.description] == ["namespace", "table_name"]
    assert q(auto, "SHOW TABLES IN ns LIKE 'order%'") == [("ns", "order_items"), ("ns", "orders")]
    assert q(auto, "SHOW TABLES FROM b") == [("b", "orders")]
    assert q(auto, "SHOW TABLES LIKE 'u%'") == [("ns", "users")]
    with pytest.raises(errors.ObjectNotFoundError, match="'nope'"):
        q(auto, "SHOW TABLES IN nope")
    with pytest.raises(errors.ObjectNotFoundError, match="'ns'.'nope'"):
        q(auto, "DESCRIBE ns.nope")
    with pytest.raises(errors.ObjectNotFoundError, match="'ns'.'nope'"):
        q(auto, "SHOW CREATE TABLE ns.nope")


LIKE_PATTERNS = [
    "orders", "Orders", "order", "nope", "order_items", "order\\_items", "order\\_item_",
    "ord%", "%", "_", "", "we\\\\ird", "we\\ird", "trailing\\", "trailing\\\\", "pct\\%",
    "pct%", "a b", "x" * 300, "ünï", "ünï\\", "\\o\\r\\d\\e\\r\\s",
]


@pytest.mark.parametrize("namespace", ["ns", "b"])
def test_show_tables_like_a_name_answers_as_the_listing(auto: Any, namespace: str) -> None:
    """Without wildcards SHOW TABLES ... LIKE is one key lookup: the same rows as the
    listing with the pattern, for names, escapes, invalid names and case."""
    q(auto, "CREATE NAMESPACE b")
    tables = ["orders", "order_items", "orderXitems", "we\\ird", "trailing\\", "pct%", "ünï"]
    for t in tables:
        q(auto, f"CREATE TABLE ns.`{t}` (a INT)")
    q(auto, "CREATE TABLE b.orders (a INT)")
    listing = auto.connection.lakehouse.begin()
    for pattern in LIKE_PATTERNS:
        expected = listing.list_tables(namespace, like_to_regex(pattern).fullmatch)
        assert q(auto, f"SHOW TABLES IN {namespace} LIKE ?", [pattern]) == expected, pattern
        assert [c[0] for c in auto.description] == ["namespace", "table_name"]
        assert auto.rowcount == len(expected)
    listing.rollback()
    assert q(auto, "SHOW TABLES IN ns LIKE 'orders'") == [("ns", "orders")]
    assert q(auto, "SHOW TABLES IN ns LIKE 'order\\_items'") == [("ns", "order_items")]
    assert q(auto, "SHOW TABLES IN ns LIKE 'we\\\\ird'") == [("ns", "we\\ird")]
    assert q(auto, "SHOW TABLES IN ns LIKE 'trailing\\'") == [("ns", "trailing\\")]
    assert q(auto, "SHOW TABLES IN ns LIKE 'pct\\%'") == [("ns", "pct%")]
    assert q(auto, "SHOW TABLES IN b LIKE 'order_items'") == []
    assert q(auto, "SHOW TABLES IN ns LIKE 'a b'") == []
    q(auto, "USE b")
    assert q(auto, "SHOW TABLES LIKE 'orders'") == [("b", "orders")]


def test_show_tables_like_a_name_fails_as_the_listing(auto: Any) -> None:
    listing = auto.connection.lakehouse.begin()
    for namespace, sql_name in [("nope", "nope"), ("a b", "`a b`"), ("x" * 300, "x" * 300)]:
        with pytest.raises(errors.ProgrammingError) as expected:
            listing.list_tables(namespace, like_to_regex("t").fullmatch)
        for pattern in ["t", "t%"]:
            with pytest.raises(type(expected.value)) as got:
                q(auto, f"SHOW TABLES IN {sql_name} LIKE '{pattern}'")
            assert str(got.value) == str(expected.value)
    listing.rollback()
    with pytest.raises(errors.ObjectNotFoundError, match="namespace 'nope' does not exist"):
        q(auto, "SHOW TABLES IN nope LIKE 't'")


def test_show_tables_like_a_name_sees_the_transaction_and_time_travel(memory_lake: Lake) -> None:
    conn = memory_lake.connect()
    cur = conn.cursor()
    q(cur, "CREATE NAMESPACE ns")
    q(cur, "CREATE TABLE ns.t (a INT)")
    assert q(cur, "SHOW TABLES IN ns LIKE 't'") == [("ns", "t")]  # uncommitted, own write
    conn.commit()
    q(cur, "DROP TABLE ns.t")
    assert q(cur, "SHOW TABLES IN ns LIKE 't'") == []
    conn.commit()
    version = conn.lakehouse.latest_version()
    assert q(cur, f"SHOW TABLES IN ns LIKE 't' FOR SYSTEM_VERSION AS OF {version - 1}") == [
        ("ns", "t")
    ]
    assert q(cur, f"SHOW TABLES IN ns LIKE 't' FOR SYSTEM_VERSION AS OF {version}") == []
    with pytest.raises(errors.ObjectNotFoundError, match="namespace 'ns' does not exist"):
        q(cur, "SHOW TABLES IN ns LIKE 't' FOR SYSTEM_VERSION AS OF 0")
    conn.close()


def test_like_without_wildcards_looks_up_one_key(
    auto: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trinitylake_dbapi.catalog import CatalogTransaction

    q(auto, "CREATE TABLE ns.t (a INT)")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("listed")

    monkeypatch.setattr(CatalogTransaction, "list_tables", refuse)
    monkeypatch.setattr(CatalogTransaction, "list_namespaces", refuse)
    assert q(auto, "SHOW TABLES IN ns LIKE 't'") == [("ns", "t")]
    assert q(auto, "SHOW TABLES IN ns LIKE 'u'") == []
    assert q(auto, "SHOW NAMESPACES LIKE 'ns'") == [("ns",)]
    assert q(auto, "SHOW NAMESPACES LIKE 'nope'") == []
    with pytest.raises(errors.ObjectNotFoundError, match="namespace 'nope' does not exist"):
        q(auto, "SHOW TABLES IN nope LIKE 't'")
    with pytest.raises(errors.InternalError, match="listed"):
        q(auto, "SHOW TABLES IN ns LIKE 't_'")


def test_show_namespaces_like_a_name_answers_as_the_listing(auto: Any) -> None:
    for n in ["sales", "sales_eu", "salesXeu", "we\\ird", "ünï"]:
        q(auto, f"CREATE NAMESPACE `{n}`")
    listing = auto.connection.lakehouse.begin()
    for pattern in LIKE_PATTERNS + ["sales", "sales_eu", "sales\\_eu", "Sales", "ns"]:
        expected = [(n,) for n in listing.list_namespaces(like_to_regex(pattern).fullmatch)]
        assert q(auto, "SHOW NAMESPACES LIKE ?", [pattern]) == expected, pattern
        assert [c[0] for c in auto.description] == ["namespace"]
    listing.rollback()
    assert q(auto, "SHOW NAMESPACES LIKE 'sales\\_eu'") == [("sales_eu",)]
    assert q(auto, "SHOW NAMESPACES LIKE 'nope'") == []


def test_show_and_describe_never_run_the_query_executor(
    auto: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trinitylake_dbapi.sql import system_tables

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the query executor ran")

    monkeypatch.setattr(system_tables, "run_query", refuse)
    q(auto, "CREATE TABLE ns.t (a INT)")
    for sql in ["SHOW TABLES", "SHOW TABLES IN ns", "SHOW TABLES IN ns LIKE 't'",
                "SHOW TABLES IN ns LIKE 't%'", "SHOW NAMESPACES", "SHOW NAMESPACES LIKE 'ns'",
                "DESCRIBE TABLE ns.t", "DESCRIBE NAMESPACE ns", "SHOW CREATE TABLE ns.t",
                "SHOW VERSIONS"]:  # fmt: skip
        assert q(auto, sql)
    with pytest.raises(errors.InternalError, match="the query executor ran"):
        q(auto, "SELECT 1")  # the patch is in place


def test_the_query_executor_is_imported_by_the_first_select(tmp_path: Any) -> None:
    import subprocess
    import sys

    code = (
        "import sys, trinitylake_dbapi as tl\n"
        f"c = tl.connect({str(tmp_path / 'lake')!r}, create=True, autocommit=True)\n"
        "cur = c.cursor()\n"
        "for sql in ['CREATE NAMESPACE ns', 'CREATE TABLE ns.t (a INT)', 'DESCRIBE ns.t',\n"
        "            'SHOW TABLES IN ns LIKE \\'t\\'', 'SHOW VERSIONS', 'DROP TABLE ns.t']:\n"
        "    cur.execute(sql)\n"
        "assert 'sqlglot.executor' not in sys.modules, 'imported early'\n"
        "assert cur.execute('SELECT 1 AS x').fetchall() == [(1,)]\n"
        "assert 'sqlglot.executor' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------
# History: time travel, rollback, snapshots, expiration
# ---------------------------------------------------------------------------


@pytest.fixture
def history(auto: Any) -> Any:
    """Versions: 1 ns, 2 ns.t, 3 ns.t.b, 4 ns.u."""
    q(auto, "CREATE TABLE ns.t (a INT)")
    q(auto, "ALTER TABLE ns.t ADD COLUMN b STRING")
    time.sleep(0.01)
    q(auto, "CREATE TABLE ns.u (x INT)")
    return auto


def test_show_versions(history: Any) -> None:
    rows = q(history, "SHOW VERSIONS")
    assert [c[:2] for c in history.description] == [
        ("version", "int8"), ("created_at", "timestamp"), ("previous_version", "int8"),
        ("rollback_from_version", "int8"), ("changes", "varchar"),
    ]  # fmt: skip
    assert [r[0] for r in rows] == [4, 3, 2, 1, 0]
    assert rows[0][2:] == (3, None, "table ns.u")
    assert rows[-2][4] == "namespace ns"
    assert history.description[1][1] == tl.DATETIME
    assert all(isinstance(r[1], dt.datetime) and r[1].tzinfo is None for r in rows)
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    assert abs((now - rows[0][1]).total_seconds()) < 60  # UTC


def test_time_travel_on_show_describe_select(history: Any) -> None:
    assert q(history, "SHOW TABLES FOR SYSTEM_VERSION AS OF 1") == []
    assert q(history, "SHOW TABLES FOR SYSTEM_VERSION AS OF 2") == [("ns", "t")]
    assert q(history, "DESCRIBE ns.t FOR SYSTEM_VERSION AS OF 2") == [("a", "int4", True, None)]
    assert len(q(history, "DESCRIBE ns.t")) == 2
    assert q(history, "SHOW NAMESPACES FOR SYSTEM_VERSION AS OF 0") == [("default",)]
    assert q(history, "SHOW CREATE TABLE ns.t FOR SYSTEM_VERSION AS OF ?", [2])[0][0].count("\n") == 3
    assert q(history, "DESCRIBE NAMESPACE ns FOR SYSTEM_VERSION AS OF 1")[0] == ("namespace", "ns")
    rows = q(history, "SELECT v3.table_name, v4.table_name AS now FROM "
                      "information_schema.tables FOR SYSTEM_VERSION AS OF 3 AS v3 "
                      "RIGHT JOIN information_schema.tables v4 ON v3.table_name = v4.table_name "
                      "ORDER BY now")  # fmt: skip
    assert rows == [("t", "t"), (None, "u")]
    assert q(history, "SELECT count(*) AS n FROM system.versions FOR SYSTEM_VERSION AS OF 2") == [(3,)]


def test_time_travel_by_time_and_snapshot(history: Any) -> None:
    versions = {r[0]: r[1] for r in q(history, "SHOW VERSIONS")}
    at3 = versions[3]
    assert q(history, "SHOW TABLES FOR SYSTEM_TIME AS OF ?", [at3]) == [("ns", "t")]
    text = at3.isoformat(sep=" ")
    assert q(history, f"SHOW TABLES FOR SYSTEM_TIME AS OF '{text}'") == [("ns", "t")]
    assert q(history, f"SHOW TABLES FOR SYSTEM_TIME AS OF TIMESTAMP '{text}'") == [("ns", "t")]
    millis = int(at3.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)
    assert q(history, f"SHOW TABLES FOR SYSTEM_TIME AS OF {millis}") == [("ns", "t")]
    aware = at3.replace(tzinfo=dt.timezone.utc).astimezone(dt.timezone(dt.timedelta(hours=5)))
    assert q(history, "SHOW TABLES FOR SYSTEM_TIME AS OF ?", [aware]) == [("ns", "t")]
    q(history, "EXPORT SNAPSHOT before_u AS OF VERSION 3")
    assert q(history, "SHOW TABLES FOR SYSTEM_VERSION AS OF 'before_u'") == [("ns", "t")]
    assert q(history, "SELECT table_name FROM information_schema.tables "
                      "FOR SYSTEM_VERSION AS OF 'before_u'") == [("t",)]  # fmt: skip


def test_time_travel_errors(history: Any) -> None:
    with pytest.raises(errors.ObjectNotFoundError):
        q(history, "SHOW TABLES FOR SYSTEM_VERSION AS OF 99")
    with pytest.raises(errors.ObjectNotFoundError):
        q(history, "SHOW TABLES FOR SYSTEM_VERSION AS OF 'no such snapshot'")
    with pytest.raises(errors.ObjectNotFoundError):
        q(history, "SHOW TABLES FOR SYSTEM_TIME AS OF '1999-01-01 00:00:00'")
    with pytest.raises(errors.ProgrammingError, match="not a timestamp"):
        q(history, "SHOW TABLES FOR SYSTEM_TIME AS OF 'yesterday'")
    with pytest.raises(errors.ProgrammingError, match="version number or a snapshot name"):
        q(history, "SHOW TABLES FOR SYSTEM_VERSION AS OF NULL")
    with pytest.raises(errors.ObjectNotFoundError, match="'ns'.'u'"):
        q(history, "DESCRIBE ns.u FOR SYSTEM_VERSION AS OF 3")


def test_rollback_to_version(history: Any) -> None:
    assert q(history, "ROLLBACK TO VERSION 2") == [(5,)]
    assert q(history, "SHOW TABLES") == [("ns", "t")]
    assert q(history, "DESCRIBE ns.t") == [("a", "int4", True, None)]
    assert q(history, "SHOW VERSIONS")[0][:4][0::2] == (5, 4)  # version 5, rolled back from 4
    with pytest.raises(errors.ObjectNotFoundError):
        q(history, "ROLLBACK TO VERSION 42")
    with pytest.raises(errors.ProgrammingError, match="integer"):
        q(history, "ROLLBACK TO VERSION 'two'")


def test_export_snapshot(history: Any) -> None:
    assert q(history, "EXPORT SNAPSHOT first_table AS OF VERSION 2") == [("first_table", 2)]
    assert q(history, "EXPORT SNAPSHOT ?", ["latest-one"]) == [("latest-one", 5)]
    with pytest.raises(errors.ObjectExistsError, match="first_table"):
        q(history, "EXPORT SNAPSHOT first_table")
    with pytest.raises(errors.ObjectNotFoundError):
        q(history, "EXPORT SNAPSHOT nope AS OF VERSION 77")


def test_expire_versions(memory_lake: Lake) -> None:
    conn = memory_lake.connect(autocommit=True, lakehouse_options={"minimum_versions_to_keep": 1})
    cur = conn.cursor()
    for i in range(4):
        q(cur, f"CREATE NAMESPACE n{i}")
    q(cur, "EXPORT SNAPSHOT keep AS OF VERSION 1")
    files = memory_lake.files()
    far_future = "2999-01-01 00:00:00"
    dry = q(cur, f"EXPIRE VERSIONS RETAIN LAST 2 OLDER THAN '{far_future}' DRY RUN")
    assert [c[0] for c in cur.description] == ["object", "name"]
    assert [r for r in dry if r[0] == "version"] == [("version", "0"), ("version", "2"), ("version", "3")]
    assert memory_lake.files() == files  # a dry run deletes nothing
    done = q(cur, f"EXPIRE VERSIONS RETAIN LAST 2 OLDER THAN '{far_future}'")
    assert done == dry
    assert memory_lake.files() == files - {name for kind, name in done if kind == "file"}
    with memory_lake.connect() as fresh:
        # the exported snapshot behind the expired gap is still listed (H3)
        assert [r[0] for r in q(fresh.cursor(), "SHOW VERSIONS")] == [5, 4, 1]
        fresh_cur = fresh.cursor()
        assert q(fresh_cur, "SHOW NAMESPACES FOR SYSTEM_VERSION AS OF 'keep'") == [("default",), ("n0",)]
        with pytest.raises(errors.ObjectNotFoundError):
            q(fresh_cur, "SHOW NAMESPACES FOR SYSTEM_VERSION AS OF 2")
    with pytest.raises(errors.ProgrammingError, match="at least 1"):
        q(cur, "EXPIRE VERSIONS RETAIN LAST 0")
    assert q(cur, "EXPIRE VERSIONS") == []  # nothing is old enough by default
    conn.close()


def test_expired_versions_vanish_for_the_expiring_connection(memory_lake: Lake) -> None:
    conn = memory_lake.connect(autocommit=True, lakehouse_options={"minimum_versions_to_keep": 1})
    cur = conn.cursor()
    for i in range(3):
        q(cur, f"CREATE NAMESPACE n{i}")
    q(cur, "EXPIRE VERSIONS RETAIN LAST 1 OLDER THAN '2999-01-01'")
    assert [r[0] for r in q(cur, "SHOW VERSIONS")] == [3]


def test_lakehouse_statements_refused_with_pending_writes(memory_lake: Lake) -> None:
    conn = memory_lake.connect()
    cur = conn.cursor()
    q(cur, "CREATE NAMESPACE a")
    for sql in ["ROLLBACK TO VERSION 0", "EXPORT SNAPSHOT s", "EXPIRE VERSIONS DRY RUN"]:
        with pytest.raises(errors.ProgrammingError, match="uncommitted changes"):
            q(cur, sql)
    conn.commit()
    assert q(cur, "EXPORT SNAPSHOT s") == [("s", 1)]
    assert q(cur, "ROLLBACK TO VERSION 0") == [(3,)]
    assert q(cur, "SHOW NAMESPACES") == [("default",)]  # the read view starts afresh
    conn.close()


# ---------------------------------------------------------------------------
# SELECT over the system tables
# ---------------------------------------------------------------------------


@pytest.fixture
def catalog(auto: Any) -> Any:
    q(auto, "CREATE NAMESPACE hr COMMENT 'people'")
    q(auto, "CREATE TABLE ns.orders (id BIGINT NOT NULL, total DECIMAL(10,2), "
            "note VARCHAR(200) COMMENT 'free text', at TIMESTAMP(3), PRIMARY KEY (id)) "
            "COMMENT 'all orders'")  # fmt: skip
    q(auto, "CREATE TABLE ns.items (order_id BIGINT, sku STRING)")
    q(auto, "CREATE TABLE hr.people (name STRING NOT NULL)")
    return auto


def test_select_without_tables(auto: Any) -> None:
    assert q(auto, "SELECT 1") == [(1,)]
    assert q(auto, "SELECT 1 AS x") == [(1,)]
    assert auto.description[0][:2] == ("x", "int4")
    assert q(auto, "SELECT ? AS s, ? AS n", ["it's; --", 2]) == [("it's; --", 2)]
    assert q(auto, "SELECT 'a' || 'b' AS ab, 2 * 3 AS six") == [("ab", 6)]


def test_information_schema_schemata_and_tables(catalog: Any) -> None:
    assert q(catalog, "SELECT schema_name, comment FROM information_schema.schemata "
                      "ORDER BY schema_name") == [("default", None), ("hr", "people"), ("ns", None)]  # fmt: skip
    rows = q(catalog, "SELECT * FROM information_schema.tables WHERE table_schema = 'ns' "
                      "ORDER BY table_name")  # fmt: skip
    assert [c[0] for c in catalog.description] == [
        "table_catalog", "table_schema", "table_name", "table_type", "table_kind",
        "table_format", "location", "comment",
    ]  # fmt: skip
    assert rows == [
        ("trinitylake", "ns", "items", "BASE TABLE", "MANAGED", "ICEBERG", None, None),
        ("trinitylake", "ns", "orders", "BASE TABLE", "MANAGED", "ICEBERG", None, "all orders"),
    ]


def test_information_schema_columns(catalog: Any) -> None:
    rows = q(catalog, "SELECT column_name, ordinal_position, is_nullable, data_type, "
                      "character_maximum_length, numeric_precision, numeric_scale, "
                      "datetime_precision, comment, primary_key_position "
                      "FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
                      "ORDER BY ordinal_position", ["ns", "orders"])  # fmt: skip
    assert rows == [
        ("id", 1, "NO", "int8", None, 64, 0, None, None, 1),
        ("total", 2, "YES", "decimal(10,2)", None, 10, 2, None, None, None),
        ("note", 3, "YES", "varchar(200)", 200, None, None, None, "free text", None),
        ("at", 4, "YES", "timestamp(3)", None, None, None, 3, None, None),
    ]
    assert catalog.description[1][1] == tl.NUMBER
    assert catalog.description[0][1] == tl.STRING


def test_bi_tool_queries(catalog: Any) -> None:
    rows = q(catalog, """
        SELECT t.table_schema AS "Schema", t.table_name, COUNT(c.column_name) AS n_columns
        FROM information_schema.tables t
        JOIN information_schema.columns c
          ON c.table_schema = t.table_schema AND c.table_name = t.table_name
        WHERE t.table_type = 'BASE TABLE' AND t.table_name LIKE '%o%'
        GROUP BY t.table_schema, t.table_name
        ORDER BY n_columns DESC, t.table_name
        LIMIT 2
    """)
    assert rows == [("ns", "orders", 4), ("hr", "people", 1)]
    assert [c[0] for c in catalog.description] == ["Schema", "table_name", "n_columns"]
    assert q(catalog, "SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES") == [(3,)]
    assert q(catalog, 'SELECT "TABLE_NAME" FROM information_schema."TABLES" '
                      "WHERE table_schema = 'hr'") == [("people",)]  # fmt: skip
    rows = q(catalog, "WITH s AS (SELECT schema_name FROM information_schema.schemata) "
                      "SELECT schema_name FROM s WHERE schema_name IN "
                      "(SELECT table_schema FROM information_schema.tables) ORDER BY 1")
    assert rows == [("hr",), ("ns",)]
    assert q(catalog, "SELECT DISTINCT table_schema FROM information_schema.columns "
                      "ORDER BY table_schema LIMIT 1") == [("hr",)]  # fmt: skip
    # Conditions the reader uses to read fewer definitions give the same answers.
    for where, n in [("table_name = 'orders'", 4), ("table_name = 'orders' OR table_name = 'items'", 6),
                     ("table_name = 'has space'", 0), ("table_schema = 'nope'", 0),
                     ("table_schema = 'ns' AND table_name = 'people'", 0),
                     ("NOT table_name = 'orders'", 3)]:  # fmt: skip
        assert q(catalog, f"SELECT count(*) FROM information_schema.columns WHERE {where}") == [(n,)]
    rows = q(catalog, "SELECT version, changes FROM system.versions "
                      "WHERE changes LIKE '%hr.people%'")  # fmt: skip
    assert rows == [(5, "table hr.people")]


def test_select_errors(catalog: Any) -> None:
    # A table without data reads as empty, with its declared columns (sql.query Q1).
    assert q(catalog, "SELECT * FROM ns.orders") == []
    assert [d[:2] for d in catalog.description] == [
        ("id", "int8"), ("total", "decimal"), ("note", "varchar"), ("at", "timestamp")]
    with pytest.raises(errors.ObjectNotFoundError, match="'ns'.'nope'"):
        q(catalog, "SELECT * FROM ns.nope")
    with pytest.raises(errors.ObjectNotFoundError, match="information_schema.views"):
        q(catalog, "SELECT * FROM information_schema.views")
    with pytest.raises(errors.ProgrammingError, match="no_such_column"):
        q(catalog, "SELECT no_such_column FROM information_schema.tables")
    with pytest.raises(errors.ProgrammingError, match="at most two parts"):
        q(catalog, "SELECT * FROM a.information_schema.tables")


def test_select_sees_uncommitted_work_of_its_transaction(memory_lake: Lake) -> None:
    conn = memory_lake.connect()
    cur = conn.cursor()
    q(cur, "CREATE NAMESPACE a")
    assert q(cur, "SELECT schema_name FROM information_schema.schemata") == [("a",), ("default",)]
    conn.rollback()
    assert q(cur, "SELECT schema_name FROM information_schema.schemata") == [("default",)]
    conn.close()


# ---------------------------------------------------------------------------
# Bad input writes nothing
# ---------------------------------------------------------------------------

BAD = [
    "CREATE NAMESPACE ns",
    "CREATE NAMESPACE 'quoted'",
    'CREATE NAMESPACE "bad name"',
    "CREATE TABLE ns.t (a INT)",
    "CREATE TABLE nope.t (a INT)",
    "CREATE TABLE ns.u (a TINYINT)",
    "CREATE TABLE ns.u (a INT, a INT)",
    "CREATE TABLE ns.u (a INT, b INT, PRIMARY KEY (c))",
    "CREATE TABLE ns.u (a DECIMAL(99, 1))",
    "CREATE TABLE ns.u (a INT) garbage",
    "ALTER TABLE ns.t ADD COLUMN a INT",
    "ALTER TABLE ns.t DROP COLUMN nope",
    "ALTER TABLE ns.t DROP COLUMN a",
    "ALTER TABLE ns.t RENAME TO nope.t",
    "ALTER TABLE ns.t UNSET TBLPROPERTIES ('nope')",
    "ALTER TABLE ns.t SET TBLPROPERTIES ('trinitylake.x' = '1')",
    "ALTER NAMESPACE nope SET PROPERTIES ('a' = 'b')",
    "DROP NAMESPACE ns",
    "DROP NAMESPACE nope",
    "DROP TABLE ns.nope",
    "ROLLBACK TO VERSION 99",
    "EXPORT SNAPSHOT s AS OF VERSION 99",
    "EXPORT SNAPSHOT taken",
    "EXPIRE VERSIONS RETAIN LAST 0",
    "INSERT INTO ns.t VALUES ('one')",
    "INSERT INTO ns.t VALUES (2147483648)",
    "INSERT INTO ns.t VALUES (1, 2)",
    "INSERT INTO ns.t (nope) VALUES (1)",
    "INSERT INTO ns.nope VALUES (1)",
    "INSERT INTO ns.t SELECT nope FROM ns.t",
    "UPDATE ns.t SET nope = 1",
    "DELETE FROM ns.t WHERE nope = 1",
    "CREATE TABLE ns.c AS SELECT nope FROM ns.t",
    "SELECT nope FROM ns.t",
    "SHOW TABLES IN nope",
    "DESCRIBE ns.t FOR SYSTEM_VERSION AS OF 99",
    "BEGIN ISOLATION LEVEL READ UNCOMMITTED",
    "COMMENT ON COLUMN ns.t.nope IS 'x'",
    "USE nope",
]


@pytest.mark.parametrize("autocommit", [True, False], ids=["autocommit", "transaction"])
@local_and_memory  # S3 on moto: ~25 s more for a check of the SQL layer
def test_bad_input_writes_no_file(lake: Lake, autocommit: bool) -> None:
    conn = lake.connect(autocommit=True)
    cur = conn.cursor()
    q(cur, "CREATE NAMESPACE ns")
    q(cur, "CREATE TABLE ns.t (a INT)")
    q(cur, "EXPORT SNAPSHOT taken")
    conn.close()
    before = lake.files()
    conn = lake.connect(autocommit=autocommit)
    cur = conn.cursor()
    for sql in BAD:
        with pytest.raises(errors.Error):
            q(cur, sql)
        assert lake.files() == before, sql
    conn.commit()  # nothing to publish: the failures left no writes behind
    conn.close()
    assert lake.files() == before


def test_table_level_foreign_key_is_not_supported_and_says_so(memory_lake: Lake) -> None:
    cur = memory_lake.connect(autocommit=True).cursor()
    q(cur, "CREATE NAMESPACE ns")
    with pytest.raises(errors.NotSupportedError, match="FOREIGN KEY"):
        q(cur, "CREATE TABLE ns.d (a INT, FOREIGN KEY (a) REFERENCES ns.x(a))")


@pytest.mark.parametrize("kind", ["column", "struct field", "namespace", "table", "snapshot"])
def test_new_names_are_validated_everywhere_with_byte_limits(auto: Any, kind: str) -> None:
    # Issue 15, item 15: column names took NUL, newlines and a megabyte; snapshot names
    # were unbounded.
    statements = {
        "column": lambda n: f"CREATE TABLE ns.t ({n} INT)",
        "struct field": lambda n: f"CREATE TABLE ns.t (s STRUCT<{n}: INT>)",
        "namespace": lambda n: f"CREATE NAMESPACE {n}",
        "table": lambda n: f"CREATE TABLE ns.{n} (a INT)",
        "snapshot": lambda n: f"EXPORT SNAPSHOT '{n[1:-1]}'",
    }
    versions = q(auto, "SHOW VERSIONS")
    for bad, why in (('"a\u200bb"', r"format character U\+200B"), ('"e\u0301"', "NFC"),
                     ('"a\nb"', "control character"), ('"' + "x" * 300 + '"', "bytes")):
        with pytest.raises(errors.InvalidNameError, match=why):
            q(auto, statements[kind](bad))
    assert q(auto, "SHOW VERSIONS") == versions  # nothing written
    q(auto, statements[kind]('"ünïcödé-ok"'))  # NFC, no spaces: fine
