"""The in-memory backend: fsspec's ``memory://`` filesystem, for tests and scratch work.

It reads, lists, writes and deletes as any fsspec store does (``FsspecBackend``); only
exclusive create differs:

* MM1. fsspec's memory filesystem is one store per process, without a conditional
  write, so ``publish`` (``create_exclusive``) checks and then writes under one process-wide lock.
  Of racing creators in this process exactly one gets True (other processes cannot see
  the store at all). The check looks the path up in the store's dict, as ``exists``
  does (a path that is no key of the store holds no file): fsspec's ``exists`` first
  scans every key of the process's store for a directory of that name.
"""

from __future__ import annotations

import threading

import fsspec

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


__all__ = ["MemoryBackend"]
