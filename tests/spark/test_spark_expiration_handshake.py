"""Spark's expiration takes part in the commit-expiration handshake (reclaim G1-G6,
maintenance E9/E10), each interleaving forced on the driver's storage calls as
tests/reliability/test_expiration_handshake.py does for the local expiration.

Before, Spark's expiration wrote no marker, read no intent and did not look again: a
commit of a transaction older than the grace published a version naming the files its
executors deleted (the first test's commit returned success and the table's latest
version was unreadable).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import pytest

import trinitylake_dbapi
from deadlines import HANG_S
from trinitylake_dbapi import reclaim
from trinitylake_dbapi.errors import MissingFileError
from trinitylake_dbapi.spark import expire_versions
from trinitylake_dbapi.storage import Storage
from trinitylake_dbapi.verify import verify

GRACE_MS = 1000
OLD_S = GRACE_MS / 1000 + 0.3


@pytest.fixture(autouse=True)
def every_file_is_old(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("trinitylake_dbapi.transaction.PREWRITTEN_CHECK_AGE_S", 0.0)


def _lake(location: str) -> str:
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


def _open_transaction(location: str) -> Any:
    conn = trinitylake_dbapi.connect(location)
    conn.cursor().execute("INSERT INTO default.t VALUES (3, 'c')")
    time.sleep(OLD_S)
    return conn


class Commit:
    """``conn.commit()`` in a thread; ``stopped`` once it ended or waits for a marker (G2)."""

    def __init__(self, conn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.conn = conn
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.stopped = threading.Event()
        pause = reclaim.pause

        def noted_pause(seconds: float) -> None:
            self.stopped.set()
            pause(seconds)

        monkeypatch.setattr(reclaim, "pause", noted_pause)
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.conn.commit()
        except BaseException as error:  # noqa: BLE001 - reported to the test
            self.error = error
        finally:
            self.done.set()
            self.stopped.set()

    def start_and_wait_until_stopped(self) -> None:
        self.thread.start()
        assert self.stopped.wait(HANG_S)

    def join(self) -> None:
        self.thread.join(HANG_S)
        assert self.done.is_set()


def _hook_list(monkeypatch: pytest.MonkeyPatch, directory: str, action: Callable[[], None]) -> None:
    """Run ``action`` once, when the driver's main thread first lists ``directory``."""
    original = Storage.list
    fired = threading.Event()

    def hooked(self: Storage, prefix: str = "", *args: Any, **kwargs: Any) -> Any:
        if not fired.is_set() and prefix == directory and threading.current_thread() is threading.main_thread():
            fired.set()
            action()
        return original(self, prefix, *args, **kwargs)

    monkeypatch.setattr(Storage, "list", hooked)


def _expire(spark: Any, location: str) -> Any:
    return expire_versions(spark, location, retain_last=1, older_than=2**62, orphan_grace_millis=GRACE_MS)


def _check_clean(location: str, expected: list[int]) -> None:
    assert _ids(location) == expected
    report = verify(location, all_versions=True, data=True)
    assert report.ok, report.problems
    assert Storage(location).list(reclaim.SYNC_DIRECTORY) == []  # every marker removed


def test_a_commit_announced_before_the_intents_are_read_is_spared(spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The commit writes its intent, sees Spark's marker naming its files and waits;
    the driver then reads the intent and spares them; the commit lands."""
    location = _lake(str(tmp_path / "lake"))
    conn = _open_transaction(location)
    commit = Commit(conn, monkeypatch)
    _hook_list(monkeypatch, reclaim.COMMITS_DIRECTORY, commit.start_and_wait_until_stopped)
    done = _expire(spark, location)
    commit.join()
    assert commit.error is None, commit.error
    assert not [f for f in done.file_list() if f.endswith(".parquet")]
    _check_clean(location, [1, 2, 3])
    conn.close()


def test_a_commit_after_the_intents_were_read_waits_and_fails(spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The commit starts after the driver read the intents (its files are not spared):
    it sees the marker, waits until the executors deleted them and the marker is gone,
    then fails with MissingFileError; nothing names a missing file."""
    location = _lake(str(tmp_path / "lake"))
    conn = _open_transaction(location)
    commit = Commit(conn, monkeypatch)
    _hook_list(monkeypatch, reclaim.EXPIRATIONS_DIRECTORY, commit.start_and_wait_until_stopped)
    done = _expire(spark, location)
    commit.join()
    assert isinstance(commit.error, MissingFileError), commit.error
    assert [f for f in done.file_list() if f.endswith(".parquet")]  # the transaction's file
    _check_clean(location, [1, 2])
    conn.close()


def test_a_version_committed_after_the_plan_is_seen_again(spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """E9: a commit that published between the plan and the marker (no intent left to
    read) is found by the look at the versions committed since, and its files stay."""
    location = _lake(str(tmp_path / "lake"))
    conn = _open_transaction(location)
    original = reclaim.Expiring.begin

    def begin_after_the_commit(storage: Storage, files: Any) -> Any:
        conn.commit()  # publishes the old files; its intent is withdrawn
        return original(storage, files)

    monkeypatch.setattr(reclaim.Expiring, "begin", staticmethod(begin_after_the_commit))
    done = _expire(spark, location)
    assert not [f for f in done.file_list() if f.endswith(".parquet")]
    _check_clean(location, [1, 2, 3])
    conn.close()
