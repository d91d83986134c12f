"""PEP 249 connections: globals, connect(), transactions, isolation, time travel,
closing."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import trinitylake_dbapi as tl
from trinitylake_dbapi import errors

from lakes import Lake, local_and_memory


def rows(conn: tl.Connection, sql: str, params: Any = None) -> list[tuple]:
    return conn.cursor().execute(sql, params).fetchall()


def namespaces(conn: tl.Connection) -> list[str]:
    """The namespaces the test made: every one but ``default``, which every new
    lakehouse has (test_a_new_lakehouse_has_the_namespace_default checks it)."""
    return [r[0] for r in rows(conn, "SHOW NAMESPACES") if r[0] != "default"]


# ---------------------------------------------------------------------------
# Module and connect()
# ---------------------------------------------------------------------------


def test_module_globals() -> None:
    assert tl.apilevel == "2.0"
    assert tl.threadsafety == 2
    assert tl.paramstyle == "qmark"
    assert tl.__version__
    for name in tl.__all__:
        assert hasattr(tl, name), name
    for name in ["Warning", "Error", "InterfaceError", "DatabaseError", "DataError",
                 "OperationalError", "IntegrityError", "InternalError", "ProgrammingError",
                 "NotSupportedError"]:  # fmt: skip
        assert getattr(tl, name) is getattr(errors, name)


def test_connect_signature_is_the_public_contract() -> None:
    params = inspect.signature(tl.connect).parameters
    assert list(params) == ["location", "create", "lakehouse_options", "storage_options",
                            "autocommit", "isolation_level", "version", "statement_timeout",
                            "max_query_rows", "memory_limit"]  # fmt: skip
    assert params["location"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    for name, default in [("create", False), ("lakehouse_options", None),
                          ("storage_options", None), ("autocommit", False),
                          ("isolation_level", None), ("version", None),
                          ("statement_timeout", None), ("max_query_rows", None),
                          ("memory_limit", None)]:  # fmt: skip
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert params[name].default == default


@local_and_memory  # tl.connect(lake.location) without the options S3 needs
def test_connect_errors(lake: Lake) -> None:
    with pytest.raises(errors.ObjectNotFoundError, match="no lakehouse at") as info:
        tl.connect(lake.location)
    assert "create=True" in str(info.value)
    assert lake.files() == set()
    with pytest.raises(errors.ProgrammingError, match="isolation level"):
        lake.connect(isolation_level="READ COMMITTED")
    with pytest.raises(errors.InvalidDefinitionError, match="unknown lakehouse option"):
        lake.connect(lakehouse_options={"bogus": 1})
    lake.connect().close()
    with pytest.raises(errors.ObjectNotFoundError):
        lake.connect(version=7)
    with pytest.raises(errors.ObjectNotFoundError):
        lake.connect(version="no such snapshot")
    with pytest.raises(errors.ProgrammingError, match="version"):
        lake.connect(version=1.5)


def test_create_with_lakehouse_options(lake: Lake) -> None:
    with lake.connect(lakehouse_options={"order": 4, "namespace_name_max_size_bytes": 8}) as conn:
        cur = conn.cursor()
        for i in range(20):  # order 4: the tree splits several times
            cur.execute(f"CREATE NAMESPACE n{i:02d}")
        with pytest.raises(errors.InvalidNameError):
            cur.execute("CREATE NAMESPACE longer_than_8")
    with lake.connect(create=False) as conn:
        assert len(namespaces(conn)) == 20


def test_every_backend_round_trip(lake: Any) -> None:
    """local, memory and S3 (moto): commit, reopen, read."""
    kwargs = {"storage_options": lake.storage_options or None}
    with tl.connect(lake.location, create=True, **kwargs) as conn:
        conn.cursor().execute("CREATE NAMESPACE a COMMENT ?", [lake.backend])
        conn.cursor().execute("CREATE TABLE a.t (x INT)")
    with tl.connect(lake.location, **kwargs) as conn:
        assert rows(conn, "DESCRIBE NAMESPACE a")[1] == ("comment", lake.backend)
        assert rows(conn, "SHOW TABLES") == [("a", "t")]
        assert rows(conn, "SHOW VERSIONS")[0][0] == 1


def test_file_uri_and_plain_path(tmp_path: Any) -> None:
    with tl.connect(str(tmp_path / "l1"), create=True) as conn:
        conn.cursor().execute("CREATE NAMESPACE a")
    with tl.connect((tmp_path / "l1").as_uri()) as conn:
        assert namespaces(conn) == ["a"]


# ---------------------------------------------------------------------------
# Transactions
# ---------------------------------------------------------------------------


def test_uncommitted_work_is_invisible_then_committed(lake: Lake) -> None:
    a = lake.connect()
    b = lake.connect()
    a.cursor().execute("CREATE NAMESPACE n")
    assert namespaces(a) == ["n"]  # a transaction reads its own writes
    assert namespaces(b) == []
    files = lake.files()
    a.commit()
    assert lake.files() != files
    assert namespaces(b) == []  # b still reads the version its transaction began at
    b.rollback()
    assert namespaces(b) == ["n"]
    a.close()
    b.close()


def test_rollback_discards(lake: Lake) -> None:
    a = lake.connect()
    before = lake.files()
    a.cursor().execute("CREATE NAMESPACE n")
    a.cursor().execute("CREATE TABLE n.t (x INT)")
    a.rollback()
    assert namespaces(a) == []
    assert lake.files() == before
    with lake.connect() as b:
        assert namespaces(b) == []
    a.close()


def test_close_discards_uncommitted_work(lake: Lake) -> None:
    a = lake.connect()
    a.cursor().execute("CREATE NAMESPACE n")
    a.close()
    with lake.connect() as b:
        assert namespaces(b) == []


def test_context_manager_commits_or_rolls_back(memory_lake: Lake) -> None:
    with memory_lake.connect() as conn:
        conn.cursor().execute("CREATE NAMESPACE kept")
    assert conn.closed
    with pytest.raises(RuntimeError):
        with memory_lake.connect() as conn:
            conn.cursor().execute("CREATE NAMESPACE dropped")
            raise RuntimeError("boom")
    with memory_lake.connect() as conn:
        assert namespaces(conn) == ["kept"]


def test_autocommit(memory_lake: Lake) -> None:
    auto = memory_lake.connect(autocommit=True)
    other = memory_lake.connect(autocommit=True)
    auto.cursor().execute("CREATE NAMESPACE a")
    assert namespaces(other) == ["a"]
    with pytest.raises(errors.ObjectExistsError):
        auto.cursor().execute("CREATE NAMESPACE a")
    # A failed statement leaves no transaction behind.
    assert not auto.in_transaction
    auto.autocommit = False
    auto.cursor().execute("CREATE NAMESPACE b")
    assert namespaces(other) == ["a"]
    auto.autocommit = True  # commits the open transaction
    assert namespaces(other) == ["a", "b"]
    auto.close()
    other.close()


def test_transaction_statements(memory_lake: Lake) -> None:
    conn = memory_lake.connect(autocommit=True)
    cur = conn.cursor()
    other = memory_lake.connect(autocommit=True)
    cur.execute("BEGIN")
    cur.execute("CREATE NAMESPACE a")
    assert namespaces(other) == []  # BEGIN suspends autocommit
    cur.execute("COMMIT")
    assert namespaces(other) == ["a"]
    cur.execute("START TRANSACTION")
    cur.execute("CREATE NAMESPACE b")
    cur.execute("ROLLBACK")
    assert namespaces(other) == ["a"]
    cur.execute("CREATE NAMESPACE c")  # autocommit again
    assert namespaces(other) == ["a", "c"]
    conn.autocommit = False
    cur.execute("CREATE NAMESPACE d")
    with pytest.raises(errors.ProgrammingError, match="uncommitted changes"):
        cur.execute("BEGIN")
    cur.execute("COMMIT WORK")
    assert namespaces(other) == ["a", "c", "d"]
    conn.close()
    other.close()


def test_snapshot_isolation_conflict(memory_lake: Lake) -> None:
    a = memory_lake.connect()
    b = memory_lake.connect()
    a.cursor().execute("CREATE NAMESPACE same")
    b.cursor().execute("CREATE NAMESPACE same")
    a.commit()
    with pytest.raises(errors.SerializationError) as info:
        b.commit()
    assert isinstance(info.value, errors.OperationalError)
    assert not b.in_transaction  # the failed transaction is gone; the connection works
    assert namespaces(b) == ["same"]
    a.close()
    b.close()


@pytest.mark.parametrize("how", ["connect", "attribute", "statement"])
def test_serializable_detects_read_write_conflict(memory_lake: Lake, how: str) -> None:
    memory_lake.connect().close()
    if how == "connect":
        a = memory_lake.connect(isolation_level="SERIALIZABLE")
    else:
        a = memory_lake.connect()
        if how == "attribute":
            a.isolation_level = "serializable"
        else:
            a.cursor().execute("START TRANSACTION ISOLATION LEVEL SERIALIZABLE")
    if how != "statement":
        assert a.isolation_level == "SERIALIZABLE"
    b = memory_lake.connect()
    assert namespaces(a) == []  # a reads the whole namespace range...
    a.cursor().execute("CREATE NAMESPACE from_a")
    b.cursor().execute("CREATE NAMESPACE from_b")  # ...which b changes
    b.commit()
    with pytest.raises(errors.SerializationError):
        a.commit()
    a.close()
    b.close()


def test_snapshot_allows_disjoint_writes(memory_lake: Lake) -> None:
    memory_lake.connect().close()
    a = memory_lake.connect()
    b = memory_lake.connect()
    assert namespaces(a) == []
    a.cursor().execute("CREATE NAMESPACE from_a")
    b.cursor().execute("CREATE NAMESPACE from_b")
    b.commit()
    a.commit()
    assert namespaces(a) == ["from_a", "from_b"]
    a.close()
    b.close()


def test_isolation_level_cannot_change_mid_transaction(conn: tl.Connection) -> None:
    assert conn.isolation_level == "SNAPSHOT"
    conn.cursor().execute("CREATE NAMESPACE a")
    with pytest.raises(errors.ProgrammingError, match="uncommitted"):
        conn.isolation_level = "SERIALIZABLE"
    with pytest.raises(errors.ProgrammingError):
        conn.isolation_level = "CHAOS"


# ---------------------------------------------------------------------------
# Time travel connections
# ---------------------------------------------------------------------------

WRITES = [
    "CREATE NAMESPACE x",
    "CREATE NAMESPACE IF NOT EXISTS a",
    "ALTER NAMESPACE a SET PROPERTIES ('k' = 'v')",
    "DROP NAMESPACE a CASCADE",
    "CREATE TABLE a.u (x INT)",
    "ALTER TABLE a.t ADD COLUMN y INT",
    "ALTER TABLE a.t RENAME TO a.v",
    "DROP TABLE a.t",
    "COMMENT ON TABLE a.t IS 'x'",
    "ROLLBACK TO VERSION 0",
    "EXPORT SNAPSHOT again",
    "EXPIRE VERSIONS DRY RUN",
]


def test_version_connections_read_that_version_and_refuse_writes(lake: Lake) -> None:
    with lake.connect() as conn:
        conn.cursor().execute("CREATE NAMESPACE a")
        conn.commit()
        conn.cursor().execute("CREATE TABLE a.t (x INT)")
        conn.commit()
        conn.cursor().execute("EXPORT SNAPSHOT with_t")
    before = lake.files()
    for version in (1, "with_t"):
        old = lake.connect(version=version)
        assert old.read_only
        assert old.version == (1 if version == 1 else 2)
        expected = [] if version == 1 else [("a", "t")]
        assert rows(old, "SHOW TABLES") == expected
        for sql in WRITES:
            with pytest.raises(errors.ReadOnlyError, match="read-only") as info:
                old.cursor().execute(sql)
            assert isinstance(info.value, errors.ProgrammingError)
        old.commit()  # nothing to commit; allowed
        old.close()
    assert lake.files() == before
    with lake.connect() as latest:
        assert rows(latest, "SHOW VERSIONS")[0][0] == 3


# ---------------------------------------------------------------------------
# Closing and attributes
# ---------------------------------------------------------------------------


def test_closed_connection(memory_lake: Lake) -> None:
    conn = memory_lake.connect()
    cur = conn.cursor()
    conn.close()
    assert conn.closed
    for call in (conn.cursor, conn.commit, conn.rollback, conn.close,
                 lambda: cur.execute("SHOW TABLES"), lambda: conn.lakehouse):  # fmt: skip
        with pytest.raises(errors.InterfaceError, match="closed"):
            call()


def test_exceptions_as_connection_attributes(conn: tl.Connection) -> None:
    for name in ["Warning", "Error", "InterfaceError", "DatabaseError", "DataError",
                 "OperationalError", "IntegrityError", "InternalError", "ProgrammingError",
                 "NotSupportedError"]:  # fmt: skip
        assert getattr(conn, name) is getattr(tl, name)


def test_repr_and_lakehouse_api(conn: tl.Connection) -> None:
    assert "memory://" in repr(conn)
    assert conn.lakehouse.latest_version() == 0
    assert conn.version is None and not conn.read_only


def test_a_new_lakehouse_has_the_namespace_default(lake: Lake) -> None:
    # Issue 15, item 2 (catalog rule K6): tools that reflect the default schema (sqlacodegen,
    # Alembic, jupysql, eralchemy) work on a fresh lakehouse.
    with lake.connect() as conn:
        assert rows(conn, "SHOW NAMESPACES") == [("default",)]
        assert rows(conn, "SHOW VERSIONS")[0][0] == 0  # written in version 0 itself
        cur = conn.cursor()
        cur.execute("CREATE TABLE t (a INT)")  # an unqualified name lands in default
        conn.commit()
        assert rows(conn, "SHOW TABLES IN default") == [("default", "t")]
        cur.execute("DROP TABLE t")
        cur.execute("DROP NAMESPACE default")  # an ordinary namespace
        conn.commit()
        version = rows(conn, "SHOW VERSIONS")[0][0]
    with lake.connect(create=False) as conn:  # opening never writes, never re-creates it
        assert rows(conn, "SHOW NAMESPACES") == []
        assert rows(conn, "SHOW VERSIONS")[0][0] == version
        with pytest.raises(errors.ObjectNotFoundError, match="namespace 'default' does not exist"):
            conn.cursor().execute("CREATE TABLE t (a INT)")


def test_no_default_namespace_when_the_name_limit_is_below_its_length(lake: Lake) -> None:
    with lake.connect(lakehouse_options={"namespace_name_max_size_bytes": 4}) as conn:
        assert rows(conn, "SHOW NAMESPACES") == []
