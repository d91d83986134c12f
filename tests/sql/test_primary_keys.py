"""Enforced primary keys (issue 36; iceberg.keys PK1-PK5): every write through the
driver refuses a second live row with a key, or a NULL key, with IntegrityError naming
the table, the key and one duplicate value, and writes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trinitylake_dbapi as tl
from tests.lakes import Lake
from trinitylake_dbapi.errors import CorruptFileError, MissingFileError, SerializationError


def rows(cur: Any, table: str = "default.users") -> list[tuple]:
    cur.execute(f"SELECT * FROM {table}")
    return sorted(cur.fetchall(), key=repr)


def version(conn: tl.Connection) -> int:
    cur = conn.cursor()
    cur.execute("SELECT max(version) FROM system.versions")
    return cur.fetchone()[0]


@pytest.fixture
def users(conn: tl.Connection) -> Any:
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.users (id INT PRIMARY KEY, name STRING)")
    cur.execute("INSERT INTO default.users VALUES (1, 'a'), (2, 'b')")
    return cur


def refused(cur: Any, conn: tl.Connection, sql: str, params: Any = None, *, many: bool = False,
            value: str = "") -> tl.IntegrityError:
    """Run ``sql``: IntegrityError naming the table and the key; nothing written."""
    before, at = rows(cur), version(conn)
    with pytest.raises(tl.IntegrityError) as e:
        (cur.executemany if many else cur.execute)(sql, params)
    message = str(e.value)
    assert "default.users" in message and "(id)" in message and value in message, message
    assert rows(cur) == before and version(conn) == at
    return e.value


@pytest.mark.parametrize(
    ("sql", "value"),
    [
        ("INSERT INTO default.users VALUES (3, 'x'), (3, 'y')", "(3)"),
        ("INSERT INTO default.users VALUES (1, 'x')", "(1)"),
        ("INSERT INTO default.users VALUES (4, 'x'), (2, 'y')", "(2)"),
        ("INSERT INTO default.users (name, id) VALUES ('x', 1)", "(1)"),
        ("INSERT INTO default.users SELECT id, name FROM default.users", "(1)"),
        ("INSERT INTO default.users SELECT id + 10, name FROM default.users UNION ALL SELECT 11, 'z'", "(11)"),
        ("UPDATE default.users SET id = 1 WHERE id = 2", "(1)"),
        ("UPDATE default.users SET id = 7", "(7)"),
    ],
)
def test_a_duplicate_key_is_refused_and_nothing_is_written(
    conn: tl.Connection, users: Any, sql: str, value: str
) -> None:
    refused(users, conn, sql, value=value)


def test_executemany_bulk_and_bound_parameters(conn: tl.Connection, users: Any) -> None:
    refused(users, conn, "INSERT INTO default.users VALUES (?, ?)", [(5, "x"), (6, "y"), (5, "z")], many=True,
            value="(5)")
    refused(users, conn, "INSERT INTO default.users VALUES (?, ?)", [(5, "x"), (2, "y")], many=True, value="(2)")
    refused(users, conn, "INSERT INTO default.users VALUES (?, ?)", (1, "x"), value="(1)")
    users.executemany("INSERT INTO default.users VALUES (?, ?)", [(5, "x"), (6, "y")])
    assert [r[0] for r in rows(users)] == [1, 2, 5, 6]


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_keys_freed_by_delete_or_update_can_be_used_again(conn: tl.Connection, users: Any, mode: str) -> None:
    """Under merge-on-read the old rows stay in their files, deleted by position delete
    files: the check reads them with the deletes applied."""
    users.execute(f"ALTER TABLE default.users SET TBLPROPERTIES ('write.update.mode' = '{mode}', "
                  f"'write.delete.mode' = '{mode}')")
    with pytest.raises(tl.IntegrityError, match=r"\(id\) = \(1\)"):
        users.execute("UPDATE default.users SET id = 1 WHERE id = 2")
    users.execute("UPDATE default.users SET id = 5 WHERE id = 2")
    users.execute("INSERT INTO default.users VALUES (2, 'again')")
    users.execute("DELETE FROM default.users WHERE id = 1")
    users.execute("INSERT INTO default.users VALUES (1, 'again')")
    users.execute("UPDATE default.users SET id = id + 100")  # every key changes at once: no clash
    assert rows(users) == [(101, "again"), (102, "again"), (105, "b")]


def test_a_null_key_is_refused(conn: tl.Connection, users: Any) -> None:
    with pytest.raises(tl.IntegrityError, match="id"):
        users.execute("INSERT INTO default.users VALUES (NULL, 'x')")
    with pytest.raises(tl.IntegrityError, match="id"):
        users.execute("INSERT INTO default.users (name) VALUES ('x')")


def test_composite_and_string_keys(conn: tl.Connection) -> None:
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.pairs (a STRING, b BIGINT, v INT, PRIMARY KEY (a, b))")
    cur.execute("INSERT INTO default.pairs VALUES ('x', 1, 0), ('x', 2, 0), ('y', 1, 0)")
    with pytest.raises(tl.IntegrityError, match=r"default\.pairs already holds key \(a, b\) = \('x', 2\)"):
        cur.execute("INSERT INTO default.pairs VALUES ('z', 1, 0), ('x', 2, 1)")
    with pytest.raises(tl.IntegrityError, match=r"\('q', 9\) more than once"):
        cur.execute("INSERT INTO default.pairs VALUES ('q', 9, 0), ('q', 9, 1)")
    cur.execute("INSERT INTO default.pairs VALUES ('x', 3, 0), ('y', 2, 0)")
    cur.execute("SELECT count(*) FROM default.pairs")
    assert cur.fetchone() == (5,)


def test_a_table_without_key_takes_duplicates(conn: tl.Connection) -> None:
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.plain (id INT, name STRING)")
    cur.execute("INSERT INTO default.plain VALUES (1, 'a'), (1, 'a')")
    cur.execute("INSERT INTO default.plain VALUES (1, 'a')")
    assert len(rows(cur, "default.plain")) == 3


def test_in_a_transaction_the_statement_fails_and_the_transaction_goes_on(memory_lake: Lake) -> None:
    conn = memory_lake.connect(autocommit=False)
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.users (id INT PRIMARY KEY, name STRING)")
    cur.execute("INSERT INTO default.users VALUES (1, 'a')")
    with pytest.raises(tl.IntegrityError, match=r"already holds key \(id\) = \(1\)"):
        cur.execute("INSERT INTO default.users VALUES (1, 'b')")
    cur.execute("INSERT INTO default.users VALUES (2, 'b')")
    conn.commit()
    assert rows(cur) == [(1, "a"), (2, "b")]


def test_two_transactions_inserting_one_key_never_both_commit(memory_lake: Lake) -> None:
    """PK2: the second commit is checked again on the first's rows (a replay, P4)."""
    setup = memory_lake.connect()
    setup.cursor().execute("CREATE TABLE default.users (id INT PRIMARY KEY, name STRING)")
    setup.commit()
    one, two = (memory_lake.connect(autocommit=False, create=False) for _ in range(2))
    one.cursor().execute("INSERT INTO default.users VALUES (7, 'one')")
    two.cursor().execute("INSERT INTO default.users VALUES (8, 'two'), (7, 'two')")
    one.commit()
    with pytest.raises((tl.IntegrityError, SerializationError)) as e:
        two.commit()
    if isinstance(e.value, tl.IntegrityError):
        assert "(7)" in str(e.value)
    setup.rollback()  # a new transaction: the latest version
    assert rows(setup.cursor()) == [(7, "one")]


#: A statement of the model test: ("insert", keys) | ("update", old, new) | ("delete", key).
_STEPS = st.one_of(
    st.tuples(st.just("insert"), st.lists(st.integers(0, 12), min_size=1, max_size=5)),
    st.tuples(st.just("update"), st.integers(0, 12), st.integers(0, 12)),
    st.tuples(st.just("delete"), st.integers(0, 12)),
)


@pytest.mark.slow  # 25 random histories (~2.5 s of CPU): the full run only; the quick lane keeps the tests above
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_STEPS, min_size=1, max_size=10), mode=st.sampled_from(["merge-on-read", "copy-on-write"]))
def test_committed_keys_match_a_set_model(memory_lake: Lake, steps: list[tuple], mode: str) -> None:
    """Any sequence of inserts, key updates and deletes: a statement commits exactly when
    the keys it leaves are distinct (an INSERT's keys distinct and new, an UPDATE's new
    key free or its own), else IntegrityError and nothing changes; the table then holds
    exactly the model's keys."""
    conn = memory_lake.connect(autocommit=True)
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS default.m")
    cur.execute(f"CREATE TABLE default.m (k INT PRIMARY KEY) TBLPROPERTIES ('write.update.mode' = '{mode}', "
                f"'write.delete.mode' = '{mode}')")
    model: set[int] = set()
    for step in steps:
        if step[0] == "insert":
            batch = step[1]
            ok = len(set(batch)) == len(batch) and model.isdisjoint(batch)
            sql, params, after = f"INSERT INTO default.m VALUES {', '.join('(?)' for _ in batch)}", batch, model | set(batch)
        elif step[0] == "update":
            old, new = step[1], step[2]
            ok = old not in model or old == new or new not in model
            sql, params = "UPDATE default.m SET k = ? WHERE k = ?", (new, old)
            after = (model - {old}) | {new} if old in model else model
        else:
            ok, sql, params, after = True, "DELETE FROM default.m WHERE k = ?", (step[1],), model - {step[1]}
        if ok:
            cur.execute(sql, params)
            model = after
        else:
            with pytest.raises(tl.IntegrityError):
                cur.execute(sql, params)
    assert {r[0] for r in rows(cur, "default.m")} == model
    conn.close()


@pytest.mark.parametrize("partitioning", ["region", "bucket(4, id)"])
def test_a_partitioned_keyed_table(conn: tl.Connection, partitioning: str) -> None:
    """Keys are table-wide, whatever the partitions: a duplicate in another partition
    (or in the same bucket) is refused as one in the same."""
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE default.p (id INT PRIMARY KEY, region STRING) PARTITIONED BY ({partitioning})")
    cur.execute("INSERT INTO default.p VALUES (1, 'eu'), (2, 'us'), (3, 'eu')")
    with pytest.raises(tl.IntegrityError, match=r"default\.p already holds key \(id\) = \(2\)"):
        cur.execute("INSERT INTO default.p VALUES (4, 'eu'), (2, 'eu')")
    with pytest.raises(tl.IntegrityError, match=r"\(id\) = \(5\) more than once"):
        cur.execute("INSERT INTO default.p VALUES (5, 'eu'), (5, 'us')")
    with pytest.raises(tl.IntegrityError, match=r"\(id\) = \(1\)"):
        cur.execute("UPDATE default.p SET id = 1 WHERE id = 2")
    cur.execute("UPDATE default.p SET region = 'us' WHERE id = 1")  # the row moves partition, keeps its key
    cur.execute("INSERT INTO default.p VALUES (4, 'us')")
    assert rows(cur, "default.p") == [(1, "us"), (2, "us"), (3, "eu"), (4, "us")]


def test_a_table_created_and_filled_in_one_pyiceberg_transaction(conn: tl.Connection) -> None:
    """The commit that creates a keyed table with its first rows is checked too."""
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    catalog = conn.iceberg_catalog()
    schema = Schema(NestedField(1, "id", LongType(), required=True), identifier_field_ids=[1])
    arrow = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    txn = catalog.create_table_transaction("default.fresh", schema)
    txn.append(pa.table({"id": [1, 2, 1]}, schema=arrow))
    with pytest.raises(tl.IntegrityError, match=r"default\.fresh: the rows written hold key \(id\) = \(1\)"):
        txn.commit_transaction()
    txn = catalog.create_table_transaction("default.fresh", schema)
    txn.append(pa.table({"id": [1, 2]}, schema=arrow))
    txn.commit_transaction()
    assert rows(conn.cursor(), "default.fresh") == [(1,), (2,)]


def _insert_in_child(location: str, key: int) -> str:
    conn = tl.connect(location, autocommit=True)
    try:
        conn.cursor().execute("INSERT INTO default.k VALUES (?)", (key,))
        return "ok"
    except tl.IntegrityError:
        return "duplicate"
    finally:
        conn.close()


def test_processes_forked_after_a_checked_insert(tmp_path: Any) -> None:
    """The check's DuckDB connection does not survive a fork: a child forked after the
    parent checked an insert opens its own (it hung, using or closing the inherited
    one). Deadline only to catch the hang."""
    import multiprocessing

    from tests.deadlines import HANG_S

    location = str(tmp_path / "lake")
    conn = tl.connect(location, create=True, autocommit=True)
    conn.cursor().execute("CREATE TABLE default.k (id INT PRIMARY KEY)")
    conn.cursor().execute("INSERT INTO default.k VALUES (1)")
    with multiprocessing.get_context("fork").Pool(2) as pool:
        outcomes = pool.starmap_async(_insert_in_child, [(location, 1), (location, 2), (location, 3)]).get(HANG_S)
    assert outcomes == ["duplicate", "ok", "ok"]
    conn.cursor().execute("INSERT INTO default.k VALUES (4)")  # the parent's own connection still works
    assert [r[0] for r in rows(conn.cursor(), "default.k")] == [1, 2, 3, 4]


def test_a_delete_file_is_decoded_once_for_the_checks(tmp_path: Any) -> None:
    """PK7: the checks of later commits take a delete file's positions from the process's
    cache: made unreadable after the first check read it, the next INSERTs are still
    checked against the live rows exactly (it was an error reading the file)."""
    lake = tmp_path / "lake"
    cur = tl.connect(str(lake), create=True, autocommit=True).cursor()
    cur.execute("CREATE TABLE default.users (id INT PRIMARY KEY, name STRING)")
    cur.execute("INSERT INTO default.users VALUES (1, 'a'), (2, 'b')")
    cur.execute("INSERT INTO default.users VALUES (3, 'c')")
    cur.execute("DELETE FROM default.users WHERE id IN (1, 3)")  # one delete file
    cur.execute("INSERT INTO default.users VALUES (1, 'again')")  # checked: reads it
    (deletes,) = [p for p in lake.rglob("*.parquet") if "-deletes-" in p.name]
    deletes.write_bytes(b"not a parquet file")
    for duplicate in (1, 2):
        with pytest.raises(tl.IntegrityError, match=f"users.*{duplicate}"):
            cur.execute(f"INSERT INTO default.users VALUES ({duplicate}, 'x')")
    cur.execute("INSERT INTO default.users VALUES (3, 'freed')")
    assert rows(cur) == [(1, "again"), (2, "b"), (3, "freed")]


def _damage(path: Any, how: str) -> None:
    if how == "missing":
        path.unlink()
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        path.write_bytes(b"not a parquet file")


@pytest.mark.parametrize("how", ["garbage", "truncated", "missing"])
@pytest.mark.parametrize("kind", ["data", "deletes"])
def test_a_file_the_check_cannot_read_is_named(tmp_path: Any, kind: str, how: str) -> None:
    """PK8: a data or position delete file the key check must read and cannot is
    CorruptFileError (MissingFileError when absent) naming it, not InternalError, and the
    INSERT publishes nothing. Checked in a fresh connection of a fresh lakehouse whose
    delete file no check has read yet (PK7 would answer from the process's cache)."""
    lake = tmp_path / "lake"
    cur = tl.connect(str(lake), create=True, autocommit=True).cursor()
    cur.execute("CREATE TABLE default.users (id INT PRIMARY KEY, name STRING)")
    cur.execute("INSERT INTO default.users VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    cur.execute("DELETE FROM default.users WHERE id = 3")  # a delete file no check has read
    conn = tl.connect(str(lake), autocommit=True)
    before = version(conn)
    (target,) = [p for p in lake.rglob("*.parquet") if ("-deletes-" in p.name) == (kind == "deletes")]
    _damage(target, how)
    error = MissingFileError if how == "missing" else CorruptFileError
    with pytest.raises(error) as raised:
        conn.cursor().execute("INSERT INTO default.users VALUES (2, 'x')")  # its key lies in the file's bounds
    assert target.name in str(raised.value)
    assert version(tl.connect(str(lake))) == before
