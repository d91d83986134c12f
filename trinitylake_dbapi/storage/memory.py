"""The in-memory backend: fsspec's ``memory://`` filesystem, for tests and scratch work.

It reads, lists, writes and deletes as any fsspec store does (``FsspecBackend``); only
exclusive create differs:

* MM1. fsspec's memory filesystem is one store per process, without a conditional
  write, so ``publish`` (``create_exclusive``) checks and then writes under one process-wide lock.
  Of racing creators in this process exactly one gets True (other processes cannot see
  the store at all). The check looks the path up in the store's dict, as ``exists``
  does (a path that is no key of the store holds no file): fsspec's ``exists`` first
  scans every key of the process's store for a directory of that name.
* MM2. DuckDB reads a memory lakehouse's files through :func:`keyed_filesystem`'s copy
  of the filesystem (same store), whose ``info`` of a path that is a key of the store
  (and no pseudo-directory) answers from the dict as fsspec's ``info`` answers a file;
  any other path is asked of fsspec's. DuckDB's bind globs and sizes every data file
  it reads, and fsspec's ``info`` first scans every key of the process's store (the
  SQLAlchemy suite: ~3 s of its ~65 s of CPU, growing with the files of every memory
  lakehouse of the process). A key that is also a directory prefix (no lakehouse
  writes one) reads as the file.
"""

from __future__ import annotations

import threading
from typing import Any

import fsspec
import fsspec.implementations.memory

from .base import PreparedCreate
from .objectstore import FsspecBackend

# MM1: the memory filesystem is one store per process; check-then-write needs a lock.
_CREATE_LOCK = threading.Lock()


class MemoryBackend(FsspecBackend):
    """A root in fsspec's process-wide memory filesystem (rule MM1)."""

    @classmethod
    def drives(cls, fs: fsspec.AbstractFileSystem) -> bool:
        """Only fsspec's own memory filesystem (and its subclasses) is one store per
        process that the lock of MM1 covers."""
        from fsspec.implementations.memory import MemoryFileSystem

        return isinstance(fs, MemoryFileSystem)

    def prepare_exclusive(self, path: str, data: bytes) -> PreparedCreate:
        """Nothing to prepare (no conditional write to check for: MM1)."""
        return PreparedCreate(path, data)

    def exists(self, path: str) -> bool:
        """As for any fsspec store (``info`` says it is a file), but a path that is no
        key of the store is answered from the store's dict: fsspec's ``info`` first
        scans every key of the process's store for a directory of that name, which made
        each check of a missing file cost O(all files of all memory lakehouses). The
        store's keys are the paths ``_full`` gives (the root's protocol stripped once, in
        the constructor)."""
        if self._full(path) not in self.fs.store:
            return False  # what info says too: a directory, or FileNotFoundError
        return super().exists(path)

    def publish(self, prepared: PreparedCreate) -> bool:
        """MM1: check-then-write under the process-wide lock."""
        full = self._full(prepared.path)
        with _CREATE_LOCK:
            if full in self.fs.store:  # MM1: O(1), as exists() answers a missing file
                return False
            self.fs.pipe_file(full, prepared.data)
        return True


class _KeyedMemoryFileSystem(fsspec.implementations.memory.MemoryFileSystem):
    """MM2: fsspec's memory filesystem whose ``info`` of a key of the store is a lookup."""

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        stripped = self._strip_protocol(path)
        filelike = self.store.get(stripped)
        if filelike is not None and stripped not in self.pseudo_dirs:
            return {"name": stripped, "size": filelike.size, "type": "file",
                    "created": getattr(filelike, "created", None)}  # fmt: skip
        return super().info(path, **kwargs)


def keyed_filesystem(fs: fsspec.AbstractFileSystem) -> fsspec.AbstractFileSystem:
    """MM2: for DuckDB, a copy of the memory filesystem ``fs`` (same store, same
    protocols) whose ``info`` of a file is a lookup; ``fs`` itself when it is not fsspec's
    own memory filesystem class."""
    from fsspec.implementations.memory import MemoryFileSystem

    if type(fs) is not MemoryFileSystem:
        return fs
    keyed = object.__new__(_KeyedMemoryFileSystem)
    keyed.__dict__.update(fs.__dict__)
    return keyed


__all__ = ["MemoryBackend", "keyed_filesystem"]
