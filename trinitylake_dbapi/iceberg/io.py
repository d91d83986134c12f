"""The FileIO of the lakehouse's Iceberg tables: PyArrow's, made durable on local disk.

Rules:

  F1 (SPEC 8, C0) Every file written through this FileIO is durable before a lakehouse
     root can publish it: on local disk each written file, and the directory that names
     it, is fsynced by :meth:`DurableFileIO.sync_written`, which the Iceberg catalog runs
     (on a worker thread, overlapping the commit's own work, and once more for files
     written meanwhile) and waits for before it swaps a table's metadata pointer. PyArrow's local writer never fsyncs. On
     an object store a completed PUT is durable, so there is nothing to do.
  F2 The Iceberg files and the lakehouse's own files are reached with the same settings:
     the object-store options the lakehouse storage was opened with are translated once,
     by :mod:`.locations` (which names this FileIO as ``DURABLE_FILE_IO``), into
     PyIceberg's FileIO properties and back.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from pyiceberg.io.pyarrow import PyArrowFile, PyArrowFileIO
from pyiceberg.typedef import EMPTY_DICT, Properties

from .locations import DURABLE_FILE_IO, file_io_properties, local_path, storage_options_from_properties

__all__ = [
    "DURABLE_FILE_IO",
    "DurableFileIO",
    "file_io_properties",
    "storage_options_from_properties",
    "local_path",
]

#: Schemes PyArrow's own file systems serve (PyIceberg's choice for them is kept).
_PYARROW_SCHEMES = frozenset({"", "file", "s3", "s3a", "s3n", "oss", "hdfs", "viewfs", "gs", "gcs", "abfs", "abfss"})


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _RecordedFile(PyArrowFile):
    """A PyArrow file that tells its FileIO when it is created for writing."""

    def __init__(self, *args: Any, on_create: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on_create = on_create

    def create(self, overwrite: bool = False) -> Any:
        stream = super().create(overwrite=overwrite)
        self._on_create(self.location)
        return stream


class DurableFileIO(PyArrowFileIO):
    """PyArrow's FileIO, plus rule F1: local files written are fsynced on request."""

    def __init__(self, properties: Properties = EMPTY_DICT) -> None:
        super().__init__(properties=properties)
        self._lock = threading.Lock()
        self._unsynced: set[str] = set()
        #: Directories (path, inode) whose entry in their parent was made durable.
        self._named_durably: set[tuple[str, int]] = set()
        self._pool: ThreadPoolExecutor | None = None

    def _initialize_fs(self, scheme: str, netloc: str | None = None) -> Any:
        """PyArrow's file system for the schemes it has; fsspec's for the others that
        a lakehouse can live on (``memory``, and any other fsspec protocol), so an
        Iceberg table can sit wherever its lakehouse does."""
        if scheme in _PYARROW_SCHEMES:
            return super()._initialize_fs(scheme, netloc)
        import fsspec
        from pyarrow.fs import FSSpecHandler, PyFileSystem

        return PyFileSystem(FSSpecHandler(fsspec.filesystem(scheme)))

    def new_output(self, location: str) -> PyArrowFile:
        plain = super().new_output(location)
        if local_path(location) is None:
            return plain
        return _RecordedFile(
            location=plain.location,
            path=plain._path,  # noqa: SLF001 - PyIceberg's own attribute, not ours
            fs=plain._filesystem,  # noqa: SLF001
            buffer_size=plain._buffer_size,  # noqa: SLF001
            on_create=self._record,
        )

    def _record(self, location: str) -> None:
        path = local_path(location)
        if path is not None:
            with self._lock:
                self._unsynced.add(path)

    def sync_written_soon(self) -> "Future[None]":
        """Start :meth:`sync_written` on this FileIO's worker thread, so that F1's
        fsyncs overlap a commit's own work. The caller waits for the future, then calls
        :meth:`sync_written` again (for files written since), before anything names the
        files."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tl-iceberg-sync")
            pool = self._pool
        return pool.submit(self.sync_written)

    def sync_written(self) -> None:
        """Make every local file written so far durable, with the directories naming
        them (F1); raises OSError if one cannot be synced (the commit must not go on)."""
        with self._lock:
            pending, self._unsynced = self._unsynced, set()
        try:
            directories = set()
            for path in sorted(pending):
                if not os.path.exists(path):
                    continue  # written, then deleted again (a failed write PyIceberg tidied)
                _fsync(path)
                directories.add(os.path.dirname(path))
            for directory in sorted(directories):
                _fsync(directory)  # names a new file
                # ... and is itself named by its parent, durably once synced after.
                parent = os.path.dirname(directory)
                while parent != directory:
                    named = (directory, os.stat(directory).st_ino)
                    if named in self._named_durably:
                        break
                    _fsync(parent)
                    with self._lock:
                        self._named_durably.add(named)
                    directory, parent = parent, os.path.dirname(parent)
        except BaseException:
            with self._lock:
                self._unsynced |= pending
            raise
