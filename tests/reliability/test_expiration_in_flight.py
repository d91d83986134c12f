"""Expiration at a grace shorter than a commit (maintenance E4, E9, E13; transaction C7).

An expiration may be asked to delete every orphan at once (``orphan_grace_millis=0``)
while writers commit. Each test forces one interleaving with a hook on the real storage
or lakehouse calls (one process; the expiration runs inside the hook) and checks that
no version names a missing file: every acknowledged statement is in the rows, every
version reads, ``verify`` finds nothing wrong; a commit whose files were taken fails
with MissingFileError and publishes nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import trinitylake_dbapi
from trinitylake_dbapi import maintenance
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.errors import MissingFileError
from trinitylake_dbapi.format.paths import root_node_path
from trinitylake_dbapi.lakehouse import Lakehouse
from trinitylake_dbapi.storage import Storage
from trinitylake_dbapi.verify import verify
from deadlines import HANG_S

FAR_FUTURE = 2**62


def _lake(root: Path) -> str:
    location = str(root)
    with trinitylake_dbapi.connect(location, create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE default.t (id BIGINT, name STRING)")
        cur.execute("INSERT INTO default.t VALUES (1, 'a')")
    return location


def _expire_everything(location: str) -> maintenance.ExpireResult:
    return maintenance.expire_versions(
        LakehouseCatalog(location), retain_last=1, older_than_millis=FAR_FUTURE, orphan_grace_millis=0
    )


def _ids(location: str) -> list[int]:
    with trinitylake_dbapi.connect(location) as conn:
        cur = conn.cursor()
        cur.execute("SELECT id FROM default.t ORDER BY id")
        return [row[0] for row in cur.fetchall()]


def backdate(root: Path, seconds: float) -> None:
    """Date every file under ``root`` ``seconds`` earlier (as if written that long ago)."""
    for path in root.rglob("*"):
        if path.is_file():
            stat = path.stat()
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns - int(seconds * 1e9)))


def _check_clean(location: str, ids: list[int]) -> None:
    assert _ids(location) == ids
    report = verify(location, all_versions=True, data=True)
    assert report.ok, report.text()


def test_a_version_published_between_the_plans_latest_and_its_listing_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E4: the plan reads the latest version, then lists the root; a version published
    in between has its root in the listing but is newer than the plan's latest. It is a
    version, not an orphan: its root, nodes, definitions and data files all stay.

    Its files are dated before the expiration began, as a root prepared under a
    temporary name (lakehouse ``prepare_root``) before it and linked after is: at zero
    grace they were older than the grace."""
    location = _lake(tmp_path / "lake")
    original = Storage.list
    published: list[int] = []

    def commit_then_list(self: Storage, prefix: str = "", *args: Any, **kwargs: Any) -> Any:
        if prefix == "" and kwargs.get("include_reserved") and not published:
            with trinitylake_dbapi.connect(location, autocommit=True) as other:
                other.cursor().execute("INSERT INTO default.t VALUES (2, 'b')")
                published.append(other.lakehouse.latest_version())
            backdate(Path(location), 60)
        return original(self, prefix, *args, **kwargs)

    monkeypatch.setattr(Storage, "list", commit_then_list)
    result = _expire_everything(location)
    monkeypatch.undo()
    assert published and root_node_path(published[0]) not in result.files
    assert LakehouseCatalog(location).latest_version() == published[0]
    _check_clean(location, [1, 2])


def test_a_commit_slower_than_the_grace_checks_its_own_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """C7, E4: a commit whose own node and definition files were written, then an
    expiration at zero grace ran to its end before the commit's check (a slow commit:
    its files are over PREWRITTEN_CHECK_AGE_S old at the check). The expiration took
    them as orphans; the commit finds them missing and fails with MissingFileError
    naming one, publishing nothing; a retry commits."""
    location = _lake(tmp_path / "lake")
    original = Lakehouse.is_still_latest
    expired: list[maintenance.ExpireResult] = []

    def expire_first(self: Lakehouse, *args: Any, **kwargs: Any) -> bool:
        if not expired:
            expired.append(_expire_everything(location))  # E13 waits: the files are then old
        return original(self, *args, **kwargs)

    conn = trinitylake_dbapi.connect(location)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE slow")
    monkeypatch.setattr(Lakehouse, "is_still_latest", expire_first)
    version = LakehouseCatalog(location).latest_version()
    with pytest.raises(MissingFileError, match="this commit names this file.*retry the transaction"):
        conn.commit()
    monkeypatch.undo()
    assert any("namespace-slow" in f for f in expired[0].files)  # it did take the commit's files
    assert LakehouseCatalog(location).latest_version() == version  # nothing published
    _check_clean(location, [1])
    cur.execute("CREATE NAMESPACE slow")
    conn.commit()
    conn.close()
    assert "slow" in {row[0] for row in _rows(location, "SHOW NAMESPACES")}
    _check_clean(location, [1])


def _rows(location: str, sql: str) -> list[tuple]:
    with trinitylake_dbapi.connect(location) as conn:
        cur = conn.cursor()
        cur.execute(sql)
        return cur.fetchall()


def test_a_rollback_to_a_version_being_expired_keeps_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E14, transaction RB1: a rollback checks its target's root right before it
    publishes; an expiration deleting that version's root at that moment deletes the
    files only expired versions reach no sooner than PUBLISH_MARGIN_MILLIS later, after
    a look at the versions committed meanwhile: the rollback's version keeps them.

    Forced: the rollback (a thread) stops at its publish until the expiration (this
    thread) has deleted the roots, then publishes as soon as the expiration deletes
    other files, or after a moment. The margin is raised to 5 s here, so that the
    moment fits inside it on a loaded host."""
    import threading

    monkeypatch.setattr(maintenance, "PUBLISH_MARGIN_MILLIS", 5000)
    location = str(tmp_path / "lake")
    LakehouseCatalog(location, create=True, lakehouse_options={"minimum_versions_to_keep": 1})
    with trinitylake_dbapi.connect(location) as conn:
        cur = conn.cursor()
        for i in range(200):
            cur.execute(f"CREATE NAMESPACE n{i}")
        conn.commit()
        cur.execute("CREATE NAMESPACE x")  # moves the 200 into child nodes of the tree
        conn.commit()
        target = conn.lakehouse.latest_version()
        for i in range(150):
            cur.execute(f"DROP NAMESPACE n{i}")
        conn.commit()
        cur.execute("CREATE NAMESPACE y")  # new child nodes: the target's are only expired versions'
        conn.commit()
    checked, roots_gone, others_gone = threading.Event(), threading.Event(), threading.Event()
    original_publish, original_delete_many = Storage.publish, Storage.delete_many
    rollback_thread: list[threading.Thread] = []

    def publish(self: Storage, prepared: Any) -> Any:
        if threading.current_thread() in rollback_thread:
            checked.set()  # RB1 is behind it
            assert roots_gone.wait(HANG_S)
            others_gone.wait(0.3)
        return original_publish(self, prepared)

    def delete_many(self: Storage, files: Any) -> Any:
        files = list(files)
        if threading.current_thread() is threading.main_thread() and files:
            if all(f.startswith("_") and f.endswith(".arrow") for f in files) and not roots_gone.is_set():
                assert checked.wait(HANG_S)
                try:
                    return original_delete_many(self, files)
                finally:
                    roots_gone.set()
            if roots_gone.is_set():
                try:
                    return original_delete_many(self, files)
                finally:
                    others_gone.set()
        return original_delete_many(self, files)

    monkeypatch.setattr(Storage, "publish", publish)
    monkeypatch.setattr(Storage, "delete_many", delete_many)
    errors: list[BaseException] = []

    def roll_back() -> None:
        try:
            with trinitylake_dbapi.connect(location, autocommit=True) as other:
                other.cursor().execute(f"ROLLBACK TO VERSION {target}")
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    thread = threading.Thread(target=roll_back, daemon=True)
    rollback_thread.append(thread)
    thread.start()
    result = _expire_everything(location)
    thread.join(HANG_S)
    monkeypatch.undo()
    assert not thread.is_alive() and not errors, errors
    assert target in result.versions  # the rollback's target was expired under it
    nodes = [f for f in result.files if f.endswith(".arrow") and not f.startswith("_")]
    assert nodes  # and files only it (and older versions) reached
    assert {row[0] for row in _rows(location, "SHOW NAMESPACES")} == {f"n{i}" for i in range(200)} | {"x", "default"}
    report = verify(location, all_versions=True)
    assert report.ok, report.text()
