"""iceberg.io F1: the fsyncs of the files a commit wrote, and of their directories, are
issued together, and all of them have ended (succeeded, or the first failure raised)
before ``sync_written`` returns.

``os.fsync`` is the real one, wrapped to record which inode each call flushed and on
which thread (no timing is asserted).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from trinitylake_dbapi.iceberg.io import DurableFileIO
from tests.deadlines import HANG_S


class FsyncRecorder:
    """os.fsync that records (thread name, inode) and fails for the inodes in ``fail``."""

    def __init__(self) -> None:
        self.real = os.fsync
        self.calls: list[tuple[str, int]] = []
        self.fail: set[int] = set()
        self.lock = threading.Lock()

    def __call__(self, fd: int) -> None:
        inode = os.fstat(fd).st_ino
        with self.lock:
            self.calls.append((threading.current_thread().name, inode))
        if inode in self.fail:
            raise OSError(5, "injected fsync failure")
        self.real(fd)

    def inodes(self) -> set[int]:
        return {inode for _, inode in self.calls}


def _write(io: DurableFileIO, path: Path, data: bytes) -> None:
    with io.new_output(str(path)).create() as out:
        out.write(data)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> FsyncRecorder:
    rec = FsyncRecorder()
    monkeypatch.setattr(os, "fsync", rec)
    return rec


@pytest.mark.parametrize("files", [1, 2, 3, 12])
def test_every_file_and_its_directory_is_synced_together(tmp_path: Path, recorder: FsyncRecorder, files: int) -> None:
    """Each written file and each directory naming one is flushed once, before
    ``sync_written`` returns; with more than one to flush, on more than one thread."""
    dirs = [tmp_path / "t" / "data", tmp_path / "t" / "metadata"]
    for d in dirs:
        d.mkdir(parents=True)
    io = DurableFileIO()
    paths = [dirs[i % 2] / f"f{i}.avro" for i in range(files)]
    for i, p in enumerate(paths):
        _write(io, p, b"x" * (i + 1))
    io.sync_written()
    wanted = {p.stat().st_ino for p in paths} | {d.stat().st_ino for d in dirs[: min(files, 2)]}
    assert wanted <= recorder.inodes()
    flushed = [inode for _, inode in recorder.calls if inode in wanted]
    assert len(flushed) == len(wanted), "a file or directory was flushed twice"
    assert len({thread for thread, inode in recorder.calls if inode in wanted}) > 1
    recorder.calls.clear()
    io.sync_written()  # nothing new written: nothing flushed again
    assert not wanted & recorder.inodes()


@pytest.mark.parametrize("failing", [0, 1, 3])
def test_a_failed_fsync_is_raised_after_the_others_ended_and_stays_pending(
    tmp_path: Path, recorder: FsyncRecorder, failing: int
) -> None:
    """One fsync failing makes ``sync_written`` raise (the commit must not go on), only
    after every other flush of the batch has ended; the files stay pending, so the next
    call flushes them all again."""
    d = tmp_path / "data"
    d.mkdir()
    io = DurableFileIO()
    paths = [d / f"f{i}.parquet" for i in range(4)]
    for p in paths:
        _write(io, p, b"rows")
    inodes = [p.stat().st_ino for p in paths]
    recorder.fail = {inodes[failing]}
    with pytest.raises(OSError, match="injected"):
        io.sync_written()
    assert set(inodes) | {d.stat().st_ino} <= recorder.inodes()  # every other flush ran first
    recorder.fail = set()
    recorder.calls.clear()
    io.sync_written()
    assert set(inodes) <= recorder.inodes()


def test_a_forked_child_syncs_on_threads_of_its_own(tmp_path: Path) -> None:
    """After a fork the parent's fsync threads do not exist in the child: it starts its own."""
    io = DurableFileIO()
    for i in range(3):
        _write(io, tmp_path / f"a{i}", b"a")
    io.sync_written()  # the parent's threads now exist
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit status
        code = 1
        try:
            for i in range(3):
                _write(io, tmp_path / f"b{i}", b"b")
            done = threading.Event()
            result: list[Any] = []

            def sync() -> None:
                try:
                    io.sync_written()
                    result.append(None)
                finally:
                    done.set()

            threading.Thread(target=sync, daemon=True).start()
            code = 0 if done.wait(HANG_S) and result == [None] else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@pytest.mark.parametrize("failing", [".parquet", "-m0.avro", "/snap-"])
def test_a_commit_stages_its_metadata_only_after_the_files_it_reaches_are_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """iceberg.catalog's commit checks and encodes the new metadata while the fsyncs of
    the files it reaches run (F1), but stages it in the transaction only once they have
    all succeeded: when one fails, the INSERT fails and the transaction holds nothing
    that names those files, so its COMMIT publishes no table that reads them."""
    import trinitylake_dbapi

    location = str(tmp_path / "lake")
    with trinitylake_dbapi.connect(location, create=True, autocommit=True) as conn:
        conn.cursor().execute("CREATE NAMESPACE ns")
        conn.cursor().execute("CREATE TABLE ns.t (id BIGINT)")
        conn.cursor().execute("INSERT INTO ns.t VALUES (1)")
    real = os.fsync

    def fsync(fd: int) -> None:
        if failing in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(5, "injected fsync failure")
        real(fd)

    with trinitylake_dbapi.connect(location) as conn:
        cur = conn.cursor()
        cur.execute("INSERT INTO ns.t VALUES (2)")  # staged: its files are durable
        monkeypatch.setattr(os, "fsync", fsync)
        with pytest.raises(trinitylake_dbapi.Error):
            cur.execute("INSERT INTO ns.t VALUES (3)")
        monkeypatch.setattr(os, "fsync", real)
        conn.commit()
    with trinitylake_dbapi.connect(location) as conn:
        assert conn.cursor().execute("SELECT id FROM ns.t ORDER BY id").fetchall() == [(1,), (2,)]
