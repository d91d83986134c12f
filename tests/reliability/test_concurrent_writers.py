"""Concurrent writers of one table through SQL (issue 31 item 7; connection CN6, CN7,
iceberg.catalog P3, P4).

Appends never conflict: INSERTs in explicit transactions (how pandas ``to_sql`` and
SQLAlchemy sessions commit) are run again on the latest version at ``commit()`` and all
land. An autocommit UPDATE that loses to another writer runs again on the latest version,
so counters are exact. A real conflict in an explicit transaction is SerializationError
naming the table and the version. Nothing is printed on the workers' stderr.
Deadlines only catch hangs.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import trinitylake_dbapi
import warm_processes
from deadlines import HANG_S
from sql_writer_workers import ID_STRIDE, incrementer, inserter
from trinitylake_dbapi.errors import OperationalError, SerializationError

# Slow: worker processes racing on one table, several rounds (scripts/test --quick leaves it out).
pytestmark = pytest.mark.slow


def _lake(tmp_path: Any) -> str:
    location = str(tmp_path / "lake")
    with trinitylake_dbapi.connect(location, create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE default.t (id BIGINT, w INT)")
        cur.execute("CREATE TABLE default.counters (id BIGINT, v BIGINT)")
        cur.execute("INSERT INTO default.counters VALUES (1, 0), (2, 100)")
    return location


def _rows(location: str, sql: str) -> list[tuple]:
    with trinitylake_dbapi.connect(location) as conn:
        cur = conn.cursor()
        cur.execute(sql)
        return cur.fetchall()


def _run(tasks: list[tuple[Any, tuple]]) -> list[Any]:
    context = warm_processes.context("sql_writer_workers")
    with context.Pool(len(tasks)) as pool:
        pending = [pool.apply_async(fn, args) for fn, args in tasks]
        return [p.get(timeout=HANG_S) for p in pending]


def _assert_quiet(results: list[tuple[Any, str]]) -> None:
    for _, stderr in results:
        assert stderr == "", stderr  # no "Commit failed ... retrying", no warning


def _assert_verified(location: str) -> None:
    from trinitylake_dbapi.verify import verify

    report = verify(location, all_versions=True, data=True)
    assert report.ok, report.problems


@pytest.mark.parametrize("autocommit_with_begin", [False, True], ids=["connect-no-autocommit", "BEGIN-COMMIT"])
def test_explicit_transactions_of_inserts_all_land(tmp_path: Any, autocommit_with_begin: bool) -> None:
    """4 processes x 6 transactions of 3 rows into one table: every commit succeeds and
    every row is present exactly once (before: 1 committed, 3 got SerializationError)."""
    location = _lake(tmp_path)
    workers, transactions, rows = 4, 6, 3
    results = _run([
        (inserter, (location, w, transactions, rows, str(tmp_path / f"err{w}"), autocommit_with_begin))
        for w in range(workers)
    ])
    _assert_quiet(results)
    for result, _ in results:
        assert result["errors"] == {}, result["errors"]
    ids = Counter(r[0] for r in _rows(location, "SELECT id FROM default.t"))
    expected = {(w + 1) * ID_STRIDE + k for w in range(workers) for k in range(transactions * rows)}
    assert set(ids) == expected and set(ids.values()) == {1}
    _assert_verified(location)


def test_autocommit_updates_of_one_row_are_exact(tmp_path: Any) -> None:
    """4 processes x 5 ``UPDATE counters SET v = v + 1 WHERE id = 1`` under autocommit:
    all succeed and the counter is exactly 20 (before: InternalError ValidationException,
    PyIceberg's retry lines on stderr)."""
    location = _lake(tmp_path)
    workers, increments = 4, 5
    results = _run([
        (incrementer, (location, w, increments, str(tmp_path / f"err{w}"))) for w in range(workers)
    ])
    _assert_quiet(results)
    for result, _ in results:
        assert result == {"done": increments, "errors": {}}, result
    assert sorted(_rows(location, "SELECT id, v FROM default.counters")) == [(1, workers * increments), (2, 100)]
    _assert_verified(location)


def test_inserts_and_updates_of_one_table_race(tmp_path: Any) -> None:
    """Explicit-transaction INSERTs rebase on top of autocommit UPDATEs (overwrites) of the
    same table, and the UPDATEs run again on top of the INSERTs: rows exactly once,
    counter exact. Explicit UPDATEs that lose get SerializationError, and an application
    retrying them keeps the count exact too."""
    location = _lake(tmp_path)
    with trinitylake_dbapi.connect(location, autocommit=True) as conn:
        conn.cursor().execute("INSERT INTO default.t VALUES (1, 0)")  # the counter row
    transactions, rows, increments = 5, 2, 4
    results = _run([
        (inserter, (location, 0, transactions, rows, str(tmp_path / "err0"))),
        (inserter, (location, 1, transactions, rows, str(tmp_path / "err1"))),
        (incrementer, (location, 2, increments, str(tmp_path / "err2"), "default.t", False, "w")),
        (incrementer, (location, 3, increments, str(tmp_path / "err3"), "default.t", True, "w")),
    ])
    _assert_quiet(results)
    assert results[0][0]["errors"] == {} and results[1][0]["errors"] == {}
    assert results[2][0] == {"done": increments, "errors": {}}
    retried = results[3][0]
    assert retried["done"] == increments
    assert set(retried["errors"]) <= {"SerializationError", "first"}, retried["errors"]
    ids = Counter(r[0] for r in _rows(location, "SELECT id FROM default.t"))
    expected = {1} | {(w + 1) * ID_STRIDE + k for w in range(2) for k in range(transactions * rows)}
    assert set(ids) == expected and set(ids.values()) == {1}
    assert _rows(location, "SELECT w FROM default.t WHERE id = 1") == [(2 * increments,)]
    _assert_verified(location)


# -- one process, deterministic interleavings ----------------------------------------------


def _other_writer(location: str, sql: str) -> int:
    with trinitylake_dbapi.connect(location, autocommit=True) as other:
        other.cursor().execute(sql)
        return other.lakehouse.latest_version()


@pytest.mark.parametrize("winner", [
    "INSERT INTO default.t VALUES (90, 9)",
    "UPDATE default.t SET w = 8 WHERE id = 1",
    "DELETE FROM default.t WHERE id = 1",
    "INSERT INTO default.counters VALUES (3, 0)",
])
@pytest.mark.parametrize("mine", ["one", "two-statements", "two-tables", "executemany"])
def test_a_transactions_appends_are_run_again_on_the_winner(tmp_path: Any, winner: str, mine: str) -> None:
    """CN7: whatever the concurrent winner did to the table (append, overwrite, delete),
    a transaction of appends lands on top of it, in one version."""
    location = _lake(tmp_path)
    _other_writer(location, "INSERT INTO default.t VALUES (1, 1)")
    conn = trinitylake_dbapi.connect(location)
    cur = conn.cursor()
    if mine == "executemany":
        cur.executemany("INSERT INTO default.t VALUES (?, ?)", [(10, 0), (11, 0)])
    else:
        cur.execute("INSERT INTO default.t VALUES (10, 0)")
    if mine == "two-statements":
        cur.execute("INSERT INTO default.t VALUES (11, 0)")
    if mine == "two-tables":
        cur.execute("INSERT INTO default.counters VALUES (11, 0)")
    won = _other_writer(location, winner)
    conn.commit()
    assert conn.lakehouse.latest_version() == won + 1
    conn.close()
    ids = sorted(r[0] for r in _rows(location, "SELECT id FROM default.t"))
    expected = {90} if "90" in winner else set()
    expected |= set() if winner.startswith("DELETE") else {1}
    expected |= {10} | ({11} if mine in ("two-statements", "executemany") else set())
    assert ids == sorted(expected)
    if mine == "two-tables":
        assert (11, 0) in _rows(location, "SELECT id, v FROM default.counters")
    if winner.startswith("UPDATE"):
        assert _rows(location, "SELECT w FROM default.t WHERE id = 1") == [(8,)]


@pytest.mark.parametrize("ending", ["commit()", "SQL COMMIT"])
@pytest.mark.parametrize("case", ["update", "ddl-then-insert", "serializable-insert"])
def test_a_real_conflict_in_a_transaction_is_serialization_error(tmp_path: Any, case: str, ending: str) -> None:
    """CN7: a transaction that is not only appends (or is SERIALIZABLE) and lost to a
    writer of its table fails with SerializationError (an OperationalError) naming the
    table and the version; nothing of it is published. Also when it is BEGIN ... COMMIT
    on an autocommit connection: the COMMIT that lost is never run again as an autocommit
    statement (CN6; it was, found by the hostile run of issue 31: the second run
    committed nothing and returned, so an acknowledged transaction was lost)."""
    location = _lake(tmp_path)
    isolation = "SERIALIZABLE" if case.startswith("serial") else None
    conn = trinitylake_dbapi.connect(location, isolation_level=isolation, autocommit=ending == "SQL COMMIT")
    cur = conn.cursor()
    if ending == "SQL COMMIT":
        cur.execute("BEGIN")
    if case == "update":
        cur.execute("UPDATE default.counters SET v = v + 1 WHERE id = 1")
    else:
        if case == "ddl-then-insert":
            cur.execute("ALTER TABLE default.counters SET TBLPROPERTIES ('k' = 'v')")
        cur.execute("INSERT INTO default.counters VALUES (7, 7)")
    won = _other_writer(location, "UPDATE default.counters SET v = v + 10 WHERE id = 1")
    with pytest.raises(SerializationError, match=rf"table 'default'.'counters' .*version {won}") as caught:
        if ending == "SQL COMMIT":
            cur.execute("COMMIT")
        else:
            conn.commit()
    assert isinstance(caught.value, OperationalError)
    assert conn.lakehouse.latest_version() == won
    conn.close()
    assert sorted(_rows(location, "SELECT id, v FROM default.counters")) == [(1, 10), (2, 100)]


@pytest.mark.parametrize("client", ["sqlalchemy-session", "pandas-to_sql"])
def test_sqlalchemy_and_pandas_appends_land_after_another_writer(tmp_path: Any, client: str) -> None:
    """CN7 through the clients that commit in explicit transactions: a SQLAlchemy Session
    and pandas ``to_sql`` (executemany) whose table another writer changed before their
    commit still commit, on top of it."""
    import sqlalchemy as sa
    from sqlalchemy import orm

    location = _lake(tmp_path)
    engine = sa.create_engine(f"trinitylake:///{location}")
    rows = [{"id": 10 + k, "w": 0} for k in range(5)]
    if client == "sqlalchemy-session":
        with orm.Session(engine) as session:
            session.execute(sa.text("INSERT INTO default.t VALUES (:id, :w)"), rows)
            won = _other_writer(location, "INSERT INTO default.t VALUES (90, 9)")
            session.commit()
    else:
        import pandas as pd

        with engine.begin() as conn:  # to_sql joins the open transaction; its end commits
            pd.DataFrame(rows).to_sql("t", conn, schema="default", if_exists="append", index=False)
            won = _other_writer(location, "INSERT INTO default.t VALUES (90, 9)")
    engine.dispose()
    assert sorted(r[0] for r in _rows(location, "SELECT id FROM default.t")) == [10, 11, 12, 13, 14, 90]
    with trinitylake_dbapi.connect(location) as conn:
        assert conn.lakehouse.latest_version() == won + 1


@pytest.mark.s3
def test_appends_and_updates_race_on_s3(s3_root: str, s3_storage_options: dict) -> None:
    """One process, S3 through moto: a transaction of appends lands on top of another
    writer's UPDATE, and an explicit UPDATE that lost is SerializationError."""
    opts = {"storage_options": s3_storage_options}
    with trinitylake_dbapi.connect(s3_root, create=True, autocommit=True, **opts) as conn:
        conn.cursor().execute("CREATE TABLE default.t (id BIGINT, w INT)")
        conn.cursor().execute("INSERT INTO default.t VALUES (1, 0)")
    mine = trinitylake_dbapi.connect(s3_root, **opts)
    updater = trinitylake_dbapi.connect(s3_root, **opts)
    mine.cursor().execute("INSERT INTO default.t VALUES (2, 0)")
    updater.cursor().execute("UPDATE default.t SET w = w + 1 WHERE id = 1")
    with trinitylake_dbapi.connect(s3_root, autocommit=True, **opts) as other:
        other.cursor().execute("UPDATE default.t SET w = w + 10 WHERE id = 1")
    mine.commit()
    with pytest.raises(SerializationError, match="table 'default'.'t'"):
        updater.commit()
    cur = mine.cursor()
    cur.execute("SELECT id, w FROM default.t ORDER BY id")
    assert cur.fetchall() == [(1, 10), (2, 0)]
    mine.close()
    updater.close()
