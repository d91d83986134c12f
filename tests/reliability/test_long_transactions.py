"""Transactions older than the orphan grace period of an expiration (issue 31 item 5;
transaction C7, iceberg.catalog P9, maintenance E9).

A transaction's data files, manifests and manifest lists are written by its statements
and named by no version until it commits: an expiration with a grace period shorter than
the transaction deletes them as orphans. Before, ``commit()`` then published a version
whose data was gone (MissingFileError on read, ``verify`` INVALID). Now the commit checks,
right before it publishes, that the files it names which are old enough to have been
reclaimed still exist: MissingFileError naming the file, nothing published, and the
retried transaction commits. Sleeps make files old; deadlines only catch hangs.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import pyarrow as pa
import pytest

import trinitylake_dbapi
from trinitylake_dbapi.errors import MissingFileError, OperationalError
from trinitylake_dbapi.maintenance import expire_versions
from trinitylake_dbapi.transaction import PREWRITTEN_CHECK_AGE_S
from trinitylake_dbapi.verify import verify

GRACE_MS = int(PREWRITTEN_CHECK_AGE_S * 1000) + 500
#: Long enough for every file a transaction wrote to be older than GRACE_MS.
OLD_S = GRACE_MS / 1000 + 1.0


def _lake(tmp_path: Any) -> str:
    location = str(tmp_path / "lake")
    with trinitylake_dbapi.connect(location, create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE default.t (id BIGINT, name STRING)")
        cur.execute("INSERT INTO default.t VALUES (1, 'a'), (2, 'b')")
    return location


def _ids(location: str) -> list[int]:
    with trinitylake_dbapi.connect(location) as conn:
        cur = conn.cursor()
        cur.execute("SELECT id FROM default.t ORDER BY id")
        return [r[0] for r in cur.fetchall()]


def _expire(conn: Any, grace_ms: int = GRACE_MS) -> list[str]:
    return expire_versions(conn.lakehouse, retain_last=1, older_than_millis=2**62, orphan_grace_millis=grace_ms).files


def _insert(conn: Any) -> None:
    conn.cursor().execute("INSERT INTO default.t VALUES (3, 'c')")


def _executemany(conn: Any) -> None:
    conn.cursor().executemany("INSERT INTO default.t VALUES (?, ?)", [(3, "c"), (4, "d")])


def _update(conn: Any) -> None:
    conn.cursor().execute("UPDATE default.t SET name = 'z' WHERE id = 2")


def _iceberg_append(conn: Any) -> None:
    table = conn.iceberg_catalog().load_table("default.t")
    table.append(pa.table({"id": pa.array([3], pa.int64()), "name": ["c"]}))


WRITES: dict[str, tuple[Callable[[Any], None], list[int]]] = {
    "insert": (_insert, [1, 2, 3]),
    "executemany": (_executemany, [1, 2, 3, 4]),
    "update": (_update, [1, 2]),
    "pyiceberg-append": (_iceberg_append, [1, 2, 3]),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_commit_never_publishes_files_expiration_deleted(tmp_path: Any, write: str) -> None:
    """The issue's shape: write in a transaction, let its files grow older than the
    grace, expire, commit: MissingFileError naming a file of the table, the lakehouse
    unchanged and valid; the retried transaction commits and reads back."""
    location = _lake(tmp_path)
    work, expected = WRITES[write]
    conn = trinitylake_dbapi.connect(location)
    work(conn)
    time.sleep(OLD_S)
    with trinitylake_dbapi.connect(location, autocommit=True) as other:
        before = other.lakehouse.latest_version()
        deleted = _expire(other)
    assert any("/data/" in f for f in deleted), deleted  # the transaction's files went
    with pytest.raises(MissingFileError, match=r"table 'default'.'t' names this file.*retry the transaction") as caught:
        conn.commit()
    assert isinstance(caught.value, OperationalError)
    assert "tables/default/" in str(caught.value)
    assert conn.lakehouse.latest_version() == before  # nothing published
    assert _ids(location) == [1, 2]
    report = verify(location, all_versions=True, data=True)
    assert report.ok, report.problems
    work(conn)  # the retry writes its files again
    conn.commit()
    conn.close()
    assert _ids(location) == expected
    report = verify(location, all_versions=True, data=True)
    assert report.ok, report.problems


def test_files_that_are_still_there_commit(tmp_path: Any) -> None:
    """An old transaction whose files a grace longer than it kept commits as before."""
    location = _lake(tmp_path)
    conn = trinitylake_dbapi.connect(location)
    _insert(conn)
    time.sleep(PREWRITTEN_CHECK_AGE_S + 0.2)  # old enough to be checked
    with trinitylake_dbapi.connect(location, autocommit=True) as other:
        _expire(other, grace_ms=3_600_000)
    conn.commit()
    conn.close()
    assert _ids(location) == [1, 2, 3]


def test_a_lakehouse_transaction_block_is_checked_too(tmp_path: Any) -> None:
    """PyIceberg's own catalog: a ``lakehouse_transaction()`` block that outlived the
    grace fails with MissingFileError, and its table is unchanged."""
    from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

    location = _lake(tmp_path)
    catalog = TrinityLakeCatalog("lake", uri=location)
    table = catalog.load_table("default.t")
    with pytest.raises(MissingFileError, match="no longer exists"):
        with catalog.lakehouse_transaction():
            table.append(pa.table({"id": pa.array([3], pa.int64()), "name": ["c"]}))
            time.sleep(OLD_S)
            with trinitylake_dbapi.connect(location, autocommit=True) as other:
                _expire(other)
    assert _ids(location) == [1, 2]
    assert verify(location, all_versions=True, data=True).ok


def test_long_transactions_race_expiration(tmp_path: Any) -> None:
    """Two writer processes commit young, old and racing transactions while a third
    process expires with a short grace as fast as it can. Every "old" transaction (its
    files older than the grace when a whole expiration run began) is refused at least
    once with MissingFileError; every transaction commits in the end; every acknowledged row is
    present exactly once, nothing else, and ``verify --data`` of every version is clean:
    no version names a missing file."""
    from collections import Counter

    import warm_processes
    from deadlines import HANG_S
    from sql_writer_workers import expirer, long_writer

    location = _lake(tmp_path)
    cycles, stop = str(tmp_path / "cycles"), str(tmp_path / "stop")
    context = warm_processes.context("sql_writer_workers")
    transactions = 6
    with context.Pool(3) as pool:
        expiring = pool.apply_async(expirer, (location, GRACE_MS, cycles, stop, str(tmp_path / "e.err")))
        writers = [
            pool.apply_async(long_writer, (location, w, transactions, GRACE_MS, cycles, str(tmp_path / f"w{w}.err")))
            for w in range(2)
        ]
        results = [w.get(timeout=HANG_S) for w in writers]
        open(stop, "w").close()
        expired, expirer_err = expiring.get(timeout=HANG_S)
    assert expirer_err == ""
    outcomes: Counter = Counter()
    for result, err in results:
        assert err == "", err
        outcomes.update(result["outcomes"])
    assert outcomes["old: MissingFileError"] >= 2, outcomes  # C7 refused each old one
    # (A "young" transaction may be refused too: its commit, replayed on other writers'
    # versions with backoff on a loaded host, can outlast a grace this short.)
    assert sum(v for k, v in outcomes.items() if k.endswith("committed")) == 2 * transactions, outcomes
    assert expired["runs"] > 0 and expired["deleted"] > 0, expired
    ids = Counter(_ids(location))
    committed = {row for result, _ in results for row in result["committed"]}
    assert set(ids) == {1, 2} | committed and set(ids.values()) == {1}
    report = verify(location, all_versions=True, data=True)
    assert report.ok, report.problems
    print(f"\nlong transactions racing expiration: {dict(outcomes)}; expirer {expired}")


def test_a_commit_never_publishes_files_expiration_deleted_on_object_stores(object_lake: Any) -> None:
    """The issue's shape on S3 (moto) and GCS: the existence check goes through the
    object store."""
    s3_root, s3_storage_options = object_lake.location, object_lake.storage_options
    opts = {"storage_options": s3_storage_options}
    with trinitylake_dbapi.connect(s3_root, create=True, autocommit=True, **opts) as conn:
        conn.cursor().execute("CREATE TABLE default.t (id BIGINT, name STRING)")
        conn.cursor().execute("INSERT INTO default.t VALUES (1, 'a'), (2, 'b')")
    conn = trinitylake_dbapi.connect(s3_root, **opts)
    _insert(conn)
    time.sleep(OLD_S)
    with trinitylake_dbapi.connect(s3_root, autocommit=True, **opts) as other:
        before = other.lakehouse.latest_version()
        assert any("/data/" in f for f in _expire(other))
    with pytest.raises(MissingFileError, match="table 'default'.'t' names this file"):
        conn.commit()
    assert conn.lakehouse.latest_version() == before
    _insert(conn)
    conn.commit()
    cur = conn.cursor()
    cur.execute("SELECT id FROM default.t ORDER BY id")
    assert [r[0] for r in cur.fetchall()] == [1, 2, 3]
    conn.close()
    report = verify(s3_root, all_versions=True, data=True, storage_options=s3_storage_options)
    assert report.ok, report.problems


@pytest.mark.parametrize("commits_after_plan", [1, 3])
def test_expiration_spares_files_a_version_committed_during_its_run_reaches(tmp_path: Any, commits_after_plan: int) -> None:
    """E9, the interleaving C7 alone cannot see: the expiration plans (the transaction's
    files are old orphans, doomed), then the transaction commits (its files still exist),
    then the expiration deletes. It reads the latest version again first and spares what
    the versions committed since reach: the new version stays readable and valid."""
    from trinitylake_dbapi.lakehouse import now_millis
    from trinitylake_dbapi.maintenance import plan_expiration

    location = _lake(tmp_path)
    conn = trinitylake_dbapi.connect(location)
    _insert(conn)
    time.sleep(OLD_S)
    with trinitylake_dbapi.connect(location, autocommit=True) as other:
        lakehouse = other.lakehouse.lakehouse
        plan = plan_expiration(lakehouse, 1, 2**62, now_millis(), GRACE_MS)
        doomed = [f for f in plan.files if "/data/" in f]
        assert doomed  # the open transaction's data file is an old orphan
        conn.commit()  # C7 finds its files: they are still there
        for k in range(commits_after_plan - 1):  # and more versions after it
            other.cursor().execute(f"INSERT INTO default.t VALUES ({10 + k}, 'x')")
        plan.execute(lakehouse)
    conn.close()
    assert _ids(location)[:3] == [1, 2, 3]
    report = verify(location, all_versions=True, data=True)
    assert report.ok, report.problems
