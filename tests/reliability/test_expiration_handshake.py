"""The commit-expiration handshake (reclaim G1-G6, maintenance E10, transaction C7), each
interleaving forced by a hook on the real storage calls, one process, two threads.

Before the handshake, a commit of a transaction whose files were old orphans could check
them (present), publish, and then see them deleted by an expiration already past its
last look at the versions (E9): the new version named missing files (the hostile run of
issue 31 hit it 1 run in 4). Each test stops one side at a storage call and runs the
other side there:

* the window itself: the commit runs while expiration is in its deletion call; it must
  wait for the marker to go, then fail with MissingFileError, nothing published;
* the commit sees the marker before expiration reads the intents: expiration spares
  its files, the commit waits, then commits;
* the commit checks its files after the whole expiration ran: its intent was there, so
  its files were spared, and it commits;
* stale markers and intents (crashed processes, G4), unreadable ones, the cost of an
  ordinary commit (G5), and the same window on S3 (moto).

``PREWRITTEN_CHECK_AGE_S`` is set to 0 so every file a commit names is checked, and
expiration runs with a grace of GRACE_MS, which the transaction's files outlive (they
are orphans it dooms) and the files the commit writes itself do not. Deadlines only
catch hangs.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable

import pytest

import trinitylake_dbapi
from deadlines import HANG_S
from trinitylake_dbapi import reclaim
from trinitylake_dbapi.errors import CommitFailedError, MissingFileError
from trinitylake_dbapi.lakehouse import Lakehouse
from trinitylake_dbapi.maintenance import expire_versions, export_snapshot_files
from trinitylake_dbapi.storage import Storage
from trinitylake_dbapi.verify import verify


GRACE_MS = 1000
#: Long enough for the transaction's files to be older than GRACE_MS.
OLD_S = GRACE_MS / 1000 + 0.3


@pytest.fixture(autouse=True)
def every_file_is_old(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("trinitylake_dbapi.transaction.PREWRITTEN_CHECK_AGE_S", 0.0)


def _lake(location: str, **options: Any) -> str:
    with trinitylake_dbapi.connect(location, create=True, autocommit=True, **options) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE default.t (id BIGINT, name STRING)")
        cur.execute("INSERT INTO default.t VALUES (1, 'a'), (2, 'b')")
    return location


def _ids(location: str, **options: Any) -> list[int]:
    with trinitylake_dbapi.connect(location, **options) as conn:
        cur = conn.cursor()
        cur.execute("SELECT id FROM default.t ORDER BY id")
        return [r[0] for r in cur.fetchall()]


def _expire(location: str, **options: Any) -> list[str]:
    with trinitylake_dbapi.connect(location, autocommit=True, **options) as conn:
        return expire_versions(conn.lakehouse, retain_last=1, older_than_millis=2**62, orphan_grace_millis=GRACE_MS).files


def _open_transaction(location: str, **options: Any) -> Any:
    """A connection whose open transaction inserted row 3 (its files: orphans)."""
    conn = trinitylake_dbapi.connect(location, **options)
    conn.cursor().execute("INSERT INTO default.t VALUES (3, 'c')")
    time.sleep(OLD_S)
    return conn


class Commit:
    """``conn.commit()`` in a thread; ``stopped`` is set once it ended or waits (G2)."""

    def __init__(self, conn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.conn = conn
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.waiting = threading.Event()
        self.stopped = threading.Event()
        pause = reclaim.pause

        def noted_pause(seconds: float) -> None:
            self.waiting.set()
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


def _hook(monkeypatch: pytest.MonkeyPatch, method: str, when: Callable[..., bool], action: Callable[[], None]) -> None:
    """Run ``action`` once, on the first call of ``Storage.method`` for which ``when``
    (given the call's arguments) is true, before the call does anything."""
    original = getattr(Storage, method)
    fired = threading.Event()

    def hooked(self: Storage, *args: Any, **kwargs: Any) -> Any:
        if not fired.is_set() and when(*args, **kwargs):
            fired.set()
            action()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Storage, method, hooked)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _deletes_data_files(paths: Any, *_: Any) -> bool:
    paths = list(paths)
    return _in_main_thread() and any("/data/" in p for p in paths)


def _check_clean(location: str, expected: list[int], **options: Any) -> None:
    assert _ids(location, **options) == expected
    report = verify(location, all_versions=True, data=True, storage_options=options.get("storage_options"))
    assert report.ok, report.problems
    storage = Storage(location, storage_options=options.get("storage_options"))
    assert storage.list(reclaim.SYNC_DIRECTORY) == []  # every marker removed


def test_a_commit_inside_the_deletion_call_waits_and_fails(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The window E9 left: expiration has looked at the versions for the last time and
    is in its deletion call when the commit checks and publishes. The commit sees the
    marker, waits for it to go, finds its file deleted: MissingFileError, nothing
    published, every version valid; the retried transaction commits. (Before the
    handshake: the commit published a version naming the deleted files.)"""
    location = _lake(str(tmp_path / "lake"))
    conn = _open_transaction(location)
    commit = Commit(conn, monkeypatch)
    _hook(monkeypatch, "delete_many", _deletes_data_files, commit.start_and_wait_until_stopped)
    before = conn.lakehouse.latest_version()
    deleted = _expire(location)
    commit.join()
    assert any("/data/" in f for f in deleted)
    report = verify(location, all_versions=True, data=True)
    assert report.ok, report.problems  # before the handshake: the new version's data file is missing
    assert commit.waiting.is_set()  # it saw the marker (G2)
    assert isinstance(commit.error, MissingFileError), commit.error
    assert "table 'default'.'t' names this file" in str(commit.error)
    assert conn.lakehouse.latest_version() == before
    _check_clean(location, [1, 2])
    conn.cursor().execute("INSERT INTO default.t VALUES (3, 'c')")
    conn.commit()
    conn.close()
    _check_clean(location, [1, 2, 3])


def test_a_commit_that_sees_the_marker_before_the_intents_are_read_is_spared(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit announces itself after the marker was created and before expiration
    reads the intents: it waits; expiration sees its intent and spares its files; the
    commit then finds them and commits."""
    location = _lake(str(tmp_path / "lake"))
    conn = _open_transaction(location)
    commit = Commit(conn, monkeypatch)
    _hook(monkeypatch, "list", lambda prefix="", **_: _in_main_thread() and prefix == reclaim.COMMITS_DIRECTORY,
          commit.start_and_wait_until_stopped)
    _expire(location)
    commit.join()
    assert commit.waiting.is_set() and commit.error is None, commit.error
    conn.close()
    _check_clean(location, [1, 2, 3])


@pytest.mark.parametrize("stop_at", ["exists", "publish"])
def test_an_expiration_during_the_commit_check_spares_its_files(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, stop_at: str
) -> None:
    """The commit announced itself and found no marker; a whole expiration runs before
    its existence check (or right before it publishes): the intent is there, so the
    files are spared, and the commit publishes them. (Before: deleted, and at
    "publish" the version named them.)"""
    location = _lake(str(tmp_path / "lake"))
    conn = _open_transaction(location)
    deleted: list[list[str]] = []
    def at_the_commit(target: Any, *_: Any, **__: Any) -> bool:  # its check of a table file, or its root
        return "tables/" in target if stop_at == "exists" else target.path.endswith(".arrow")

    _hook(monkeypatch, stop_at, at_the_commit, lambda: deleted.append(_expire(location)))
    conn.commit()
    conn.close()
    assert deleted and any("/data/" in f for f in deleted[0])  # the plan doomed them
    _check_clean(location, [1, 2, 3])


def test_a_stale_marker_is_ignored_and_removed(tmp_path: Any) -> None:
    """G4: a marker left by a crashed expiration, older than the lease, naming the
    commit's file: the commit ignores it and commits; the next expiration removes it."""
    location = _lake(str(tmp_path / "lake"))
    conn = _open_transaction(location)
    storage = Storage(location)
    doomed = [f for f in storage.list("tables") if "/data/" in f]
    marker = reclaim.Expiring.begin(storage, doomed).path
    old = time.time() - reclaim.LEASE_S - 60
    os.utime(tmp_path / "lake" / marker, (old, old))
    conn.commit()
    conn.close()
    _expire(location)
    _check_clean(location, [1, 2, 3])


def test_a_live_marker_naming_the_files_fails_the_commit_clearly(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """G2: an expiration that neither ends nor goes stale (a paused process) blocks a
    commit naming its files for COMMIT_WAIT_S, then CommitFailedError naming the file
    and the marker; nothing published. A marker naming other files blocks nothing."""
    monkeypatch.setattr(reclaim, "COMMIT_WAIT_S", 0.2)
    location = _lake(str(tmp_path / "lake"))
    storage = Storage(location)
    elsewhere = reclaim.Expiring.begin(storage, ["tables/default/t/data/other.parquet"])
    conn = _open_transaction(location)
    mine = [f for f in storage.list("tables") if "/data/" in f]
    expiring = reclaim.Expiring.begin(storage, mine)
    before = conn.lakehouse.latest_version()
    with pytest.raises(CommitFailedError, match=r"table 'default'.'t' names .*/data/.*a version expiration .*expirations/.*retry the transaction"):
        conn.commit()
    assert conn.lakehouse.latest_version() == before
    assert storage.list(reclaim.COMMITS_DIRECTORY) == []  # the intent was withdrawn
    expiring.end()
    conn.cursor().execute("INSERT INTO default.t VALUES (3, 'c')")
    conn.commit()  # only the other marker is left: it names none of these files
    conn.close()
    report = verify(location, all_versions=True, data=True)  # G1: readers ignore markers
    assert report.ok and not [p for p in report.problems if reclaim.is_sync_path(p.path)], report.problems
    target = Storage(str(tmp_path / "copy"))
    lakehouse = Lakehouse(storage)
    copied = export_snapshot_files(lakehouse, target, lakehouse.latest_version())
    assert not [f for f in copied if reclaim.is_sync_path(f)] and target.list(reclaim.SYNC_DIRECTORY) == []
    elsewhere.end()
    _check_clean(location, [1, 2, 3])


@pytest.mark.parametrize("content", [b'{"files": ["x"]}', b"{not json"])
def test_intents_spare_their_files_until_stale(tmp_path: Any, content: bytes) -> None:
    """G3, G4: an intent (here left by a crashed commit) spares the files it names, an
    unreadable one every Iceberg file; once older than the lease it spares nothing and
    the expiration removes it."""
    location = _lake(str(tmp_path / "lake"))
    storage = Storage(location)
    orphan = "tables/default/t/data/crashed-writer.parquet"  # no version names it
    storage.write(orphan, b"PAR1")
    time.sleep(OLD_S)
    intent = f"{reclaim.COMMITS_DIRECTORY}/crashed.json"
    data = content.replace(b'"x"', f'"{orphan}"'.encode())
    storage.write(intent, data)
    _expire(location)
    assert storage.exists(orphan) and storage.exists(intent)
    old = time.time() - reclaim.LEASE_S - 60
    os.utime(tmp_path / "lake" / intent, (old, old))
    _expire(location)
    assert not storage.exists(orphan) and not storage.exists(intent)
    _check_clean(location, [1, 2])


def test_an_ordinary_commit_makes_no_handshake_call(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """G5: with the real check age, an autocommit INSERT (its files younger than it) and
    an expiration that deletes no Iceberg file never touch ``_tl_sync/``."""
    monkeypatch.undo()  # the real PREWRITTEN_CHECK_AGE_S
    location = _lake(str(tmp_path / "lake"))
    touched: list[str] = []
    for method in ("list", "create_exclusive", "prepare_exclusive", "read", "delete", "exists"):
        original = getattr(Storage, method)

        def spy(self: Storage, path: str = "", *args: Any, __original: Any = original, **kwargs: Any) -> Any:
            if reclaim.is_sync_path(path):
                touched.append(path)
            return __original(self, path, *args, **kwargs)

        monkeypatch.setattr(Storage, method, spy)
    with trinitylake_dbapi.connect(location, autocommit=True) as conn:
        conn.cursor().execute("INSERT INTO default.t VALUES (3, 'c')")
        expire_versions(conn.lakehouse, retain_last=1, older_than_millis=2**62)  # grace: an hour
    assert touched == []
    assert not (tmp_path / "lake" / reclaim.SYNC_DIRECTORY).exists()


@pytest.mark.s3
def test_a_commit_inside_the_deletion_call_waits_and_fails_on_s3(
    s3_root: str, s3_storage_options: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window on S3 (moto): markers by conditional PUT, listed by prefix."""
    options = {"storage_options": s3_storage_options}
    location = _lake(s3_root, **options)
    conn = _open_transaction(location, **options)
    commit = Commit(conn, monkeypatch)
    _hook(monkeypatch, "delete_many", _deletes_data_files, commit.start_and_wait_until_stopped)
    _expire(location, **options)
    commit.join()
    report = verify(location, all_versions=True, data=True, storage_options=s3_storage_options)
    assert report.ok, report.problems
    assert commit.waiting.is_set()
    assert isinstance(commit.error, MissingFileError), commit.error
    _check_clean(location, [1, 2], **options)
    conn.cursor().execute("INSERT INTO default.t VALUES (3, 'c')")
    conn.commit()
    conn.close()
    _check_clean(location, [1, 2, 3], **options)


@pytest.mark.s3
def test_a_commit_that_sees_the_marker_is_spared_on_s3(
    s3_root: str, s3_storage_options: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = {"storage_options": s3_storage_options}
    location = _lake(s3_root, **options)
    conn = _open_transaction(location, **options)
    commit = Commit(conn, monkeypatch)
    _hook(monkeypatch, "list", lambda prefix="", **_: _in_main_thread() and prefix == reclaim.COMMITS_DIRECTORY,
          commit.start_and_wait_until_stopped)
    _expire(location, **options)
    commit.join()
    assert commit.waiting.is_set() and commit.error is None, commit.error
    conn.close()
    _check_clean(location, [1, 2, 3], **options)


@pytest.mark.parametrize("seed", range(6))
def test_a_commit_racing_an_expiration_with_random_delays(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Beyond the forced interleavings: the commit (in a thread) and the expiration run
    at once, every storage call of either delayed at random (seeded). Whatever the
    order, the commit either publishes its files, present, or fails with
    MissingFileError and publishes nothing; every version stays valid."""
    import random

    rng, lock = random.Random(seed), threading.Lock()
    location = _lake(str(tmp_path / "lake"))
    conn = _open_transaction(location)
    for method in ("list", "read", "exists", "modified_millis", "publish", "delete", "delete_many"):
        original = getattr(Storage, method)

        def delayed(self: Storage, *args: Any, __original: Any = original, **kwargs: Any) -> Any:
            with lock:
                delay = rng.uniform(0, 0.03)
            time.sleep(delay)
            return __original(self, *args, **kwargs)

        monkeypatch.setattr(Storage, method, delayed)
    commit = Commit(conn, monkeypatch)
    commit.thread.start()
    _expire(location)
    commit.join()
    conn.close()
    assert commit.error is None or isinstance(commit.error, MissingFileError), commit.error
    _check_clean(location, [1, 2] if commit.error else [1, 2, 3])


def test_a_commit_published_between_the_listing_and_the_plans_latest_is_kept(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan reads the latest version before it lists the root: a transaction that
    commits right after the listing is after the plan's latest, where E9 looks again.
    (Read after the listing, that version was the plan's latest with no root in the
    listing: not kept, not looked at again, and the transaction's files, older than the
    grace, were deleted as orphans; the random-delay race found it 1 run in 3.)"""
    location = _lake(str(tmp_path / "lake"))
    conn = _open_transaction(location)
    original = Storage.list
    committed: list[bool] = []

    def list_then_commit(self: Storage, prefix: str = "", *args: Any, **kwargs: Any) -> Any:
        found = original(self, prefix, *args, **kwargs)
        if prefix == "" and kwargs.get("include_reserved") and not committed:
            committed.append(True)
            conn.commit()  # lands between expiration's listing and what it reads next
        return found

    monkeypatch.setattr(Storage, "list", list_then_commit)
    _expire(location)
    conn.close()
    assert committed == [True]
    _check_clean(location, [1, 2, 3])
