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
