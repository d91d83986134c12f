"""Storage: every byte the lakehouse reads or writes goes through here (SPEC 2, 7).

A ``Storage`` is one root URI plus one backend doing the I/O of its kind of store,
chosen by the URI's scheme from its row in ``schemes.SCHEMES`` (as PyIceberg's FileIO
picks its implementation by scheme). That row is the one record of the scheme, which
the Iceberg FileIO and DuckDB's registered filesystem derive from too (SC1-SC3).
Everything above this package sees only paths *relative* to the root; this package is
the only code that touches fsspec or the disk for the lakehouse's files.

    storage/__init__.py     the facade: root URI rules, path checks, call counters,
                            error mapping, the cache of immutable files
    storage/schemes.py      one record per URI scheme (SC1-SC3)
    storage/base.py         the Backend contract (B1-B5) and what all share
    storage/local.py        local disk on the os module (LF1-LF4)
    storage/objectstore.py  any fsspec filesystem; S3 (O1-O4)
    storage/memory.py       fsspec's memory:// filesystem (MM1)

A new kind of store (say GCS or Azure with their own exclusive create) is one module
with a ``Backend`` subclass and one row of ``schemes.SCHEMES``. A backend's module is
imported when a root of its scheme is first opened: a process on local disk never
imports fsspec (and the asyncio, ssl and compression modules it brings, ~0.1 s of a
cold start).

Invariants of the facade:

* Every public method checks its relative path first (``check_relative_path``: non-empty,
  no leading "/", no "", "." or ".." component, no NUL) and raises
  ``InvalidLocationError`` before any I/O.
* No raw filesystem exception leaves this package: a missing file on ``read`` is
  ``MissingFileError(path)``; every other failure is ``StorageError`` naming the
  operation and the file's URI (the original exception is chained as ``__cause__``).
* Paths are never glob-expanded: a file named ``a[1]*?.arrow`` is just a name (plain
  ``os`` calls on local disk, literal-path fsspec calls elsewhere: O1).
* ``create_exclusive`` is atomic: of several racing creators exactly one gets True and
  no reader ever sees a partial file. How depends on the backend (LF3, O2, MM1). It is
  also offered as its two halves, ``prepare_exclusive`` (everything before the file
  may become visible) and ``publish``, so that a caller can check what it must
  between them (B5): storage never calls back up into its caller.
* Every public storage call adds exactly one to one counter of ``counters`` (plus bytes),
  counted whether or not it succeeds; ``prepare_exclusive`` and ``publish`` are the
  halves of one exclusive create, counted once, when prepared. Internal calls (the
  If-None-Match probe, retries) are not counted. ``uri()`` is not a storage call.
* Names whose last component starts with ``.tl-`` are reserved for the backends'
  temporary and probe files; ``list`` never returns them unless asked.
* ``read_immutable`` caches only files that are never rewritten (node and definition
  files), bounded in bytes, least recently used first out.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Callable

from trinitylake_dbapi.errors import Error, InvalidLocationError, MissingFileError, StorageError
from trinitylake_dbapi.format.paths import check_relative_path, qualify_root_uri

from .base import (
    RESERVED_PREFIX,
    Backend,
    PreparedCreate,
    as_bytes,
    is_reserved_name,
    operation_failed,
)
from .schemes import GENERIC, SCHEMES, Scheme, scheme_of

if TYPE_CHECKING:
    import fsspec

#: The backend of each URI scheme, as ``"module of this package:class"`` (imported when
#: first used), from the schemes' rows. A scheme not listed here is served by the fsspec
#: filesystem registered for it (``FSSPEC_BACKEND``: exclusive create only where that
#: filesystem implements a conditional write itself).
BACKENDS: dict[str, str] = {name: row.backend for row in SCHEMES for name in row.names}
FSSPEC_BACKEND = GENERIC.backend


def backend_class(protocol: str) -> type[Backend]:
    """The ``Backend`` subclass serving ``protocol`` (its module imported now)."""
    return scheme_of(protocol).backend_class()


@dataclass
class StorageCounters:
    """Storage calls by kind. Tests and benchmarks read these."""

    reads: int = 0
    writes: int = 0
    exclusive_creates: int = 0
    exists: int = 0
    lists: int = 0
    deletes: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    cache_hits: int = 0

    def snapshot(self) -> StorageCounters:
        """A copy, e.g. to subtract later: ``storage.counters - before``."""
        return dataclasses.replace(self)

    def __sub__(self, other: StorageCounters) -> StorageCounters:
        if not isinstance(other, StorageCounters):
            return NotImplemented
        return StorageCounters(
            **{f.name: getattr(self, f.name) - getattr(other, f.name)
               for f in dataclasses.fields(self)}
        )


def _split_scheme(uri: str) -> tuple[str | None, str]:
    """("s3", "bucket/x/") for "s3://bucket/x/"; (None, uri) for a plain path."""
    head, sep, rest = uri.partition("://")
    if sep and head and head[0].isalpha() and all(c.isalnum() or c in "+.-" for c in head):
        return head.lower(), rest
    return None, uri


def _qualify(root_uri: str) -> tuple[str, str]:
    """(qualified root URI ending with "/", protocol). Local roots become file:///abs/."""
    if not isinstance(root_uri, str):
        raise InvalidLocationError(f"root URI {root_uri!r} is not a string")
    uri = qualify_root_uri(root_uri)  # checks the text the user gave
    scheme, rest = _split_scheme(uri)
    if scheme is None:
        return "file://" + _abs_dir(uri), "file"
    if scheme in ("file", "local"):
        if not rest.startswith("/"):
            raise InvalidLocationError(
                f"root URI {root_uri!r}: a file URI must name an absolute path with an "
                "empty host, e.g. 'file:///data/lake'"
            )
        return "file://" + rest, "file"
    if not rest.strip("/") or rest.startswith("/"):
        raise InvalidLocationError(
            f"root URI {root_uri!r} has an empty bucket or host: write "
            f"'{scheme}://<bucket or host>/<path>'"
        )
    return uri, scheme


def _abs_dir(path: str) -> str:
    p = os.path.abspath(path)
    return p if p.endswith("/") else p + "/"


class Storage:
    """Files of one lakehouse: a root URI and its backend, addressed by relative paths."""

    root_uri: str
    protocol: str
    counters: StorageCounters
    #: The backend doing this root's I/O (one of ``BACKENDS``' classes).
    backend: Backend
    #: The backend's fsspec filesystem; None on local disk (the os module is used).
    fs: fsspec.AbstractFileSystem | None
    #: The record of the root's URI scheme (storage.schemes SC1).
    scheme: Scheme

    def __init__(
        self,
        root_uri: str,
        storage_options: dict[str, Any] | None = None,
        *,
        filesystem: fsspec.AbstractFileSystem | None = None,
        cache_bytes: int = 256 * 2**20,
    ) -> None:
        """Open the root: ``storage_options`` for a filesystem this opens itself, or a
        ready ``filesystem`` (not both). Nothing is read or written."""
        self.root_uri, self.protocol = _qualify(root_uri)
        self.scheme = scheme_of(self.protocol)
        self.counters = StorageCounters()
        self._lock = threading.Lock()  # counters and cache
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cache_size = 0
        self._cache_bytes = max(0, int(cache_bytes))
        self.backend = self.scheme.backend_class().open(self.root_uri, self.protocol, storage_options, filesystem)
        self.fs = self.backend.fs

    @property
    def duckdb_filesystem(self) -> fsspec.AbstractFileSystem | None:
        """The filesystem DuckDB reads the tables' data through (registered in it), as
        the scheme's row says (SC1); None where DuckDB reads the files itself.

        DuckDB spells the files a registered filesystem lists with the first of its
        protocols (adlfs: ``abfs``), so a root named by another of them (``az://``)
        would have its files read under a name outside the root (and outside the
        engine's allowed directories): DuckDB gets a copy of the filesystem object
        whose protocols start with the root's own scheme (same client, same caches)."""
        if not self.scheme.register_in_duckdb or self.fs is None:
            return None
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        if protocols[0] == self.protocol or self.protocol not in protocols:
            from .memory import keyed_filesystem

            return keyed_filesystem(self.fs)  # memory MM2 (any other filesystem: itself)
        spelled = object.__new__(type(self.fs))
        spelled.__dict__.update(self.fs.__dict__)
        spelled.protocol = (self.protocol, *(p for p in protocols if p != self.protocol))
        return spelled

    def __repr__(self) -> str:
        return f"Storage({self.root_uri!r})"

    # --- paths, counters, errors ----------------------------------------------------

    def uri(self, path: str) -> str:
        """Absolute URI of a relative path."""
        return self.root_uri + check_relative_path(path)

    def _count(self, kind: str, n_written: int = 0) -> None:
        with self._lock:
            c = self.counters
            setattr(c, kind, getattr(c, kind) + 1)
            c.bytes_written += n_written

    def _error(self, op: str, path: str, exc: BaseException) -> StorageError:
        return operation_failed(self.root_uri, op, path, exc)

    def _missing(self, path: str) -> MissingFileError:
        return MissingFileError(path, f"file does not exist (under {self.root_uri})")

    # --- reads ----------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        """The whole content of a file; ``MissingFileError`` if it does not exist."""
        check_relative_path(path)
        self._count("reads")
        try:
            data = self.backend.read(path)
        except (FileNotFoundError, NotADirectoryError) as e:
            raise self._missing(path) from e
        except Error:
            raise
        except Exception as e:  # noqa: BLE001 - translated, never leaked
            raise self._error("read", path, e) from e
        with self._lock:
            self.counters.bytes_read += len(data)
        return data

    def read_immutable(self, path: str) -> bytes:
        """Like ``read``, through a bounded LRU cache: only for files never rewritten."""
        check_relative_path(path)
        with self._lock:
            data = self._cache.get(path)
            if data is not None:
                self._cache.move_to_end(path)
                self.counters.cache_hits += 1
                return data
        data = self.read(path)
        if len(data) <= self._cache_bytes:
            with self._lock:
                if path not in self._cache:
                    self._cache[path] = data
                    self._cache_size += len(data)
                    while self._cache_size > self._cache_bytes:
                        _, old = self._cache.popitem(last=False)
                        self._cache_size -= len(old)
        return data

    def exists(self, path: str) -> bool:
        """True if ``path`` is a file (a directory-like prefix is not)."""
        check_relative_path(path)
        self._count("exists")
        try:
            return self.backend.exists(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except Exception as e:  # noqa: BLE001
            raise self._error("exists", path, e) from e

    def modified_millis(self, path: str) -> int | None:
        """Last modification time of a file in ms since epoch (a metadata call, counted
        as ``exists``); None if the file is missing or the store does not say."""
        check_relative_path(path)
        self._count("exists")
        try:
            return self.backend.modified_millis(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except Exception as e:  # noqa: BLE001
            raise self._error("stat", path, e) from e

    def list(self, prefix: str = "", *, recursive: bool = True, include_reserved: bool = False) -> list[str]:
        """Relative paths of the files under a directory-like prefix, sorted.

        ``prefix`` is "" (everything) or a relative directory path, with or without a
        trailing "/"; ``list("a")`` finds "a/x" and "a/b/y", never "ab". With
        ``recursive=False`` only the files directly under the prefix are listed ("a/x",
        not "a/b/y"; ``list("", recursive=False)`` is the lakehouse's top level: roots,
        lakehouse definitions, the hint). Reserved ``.tl-*`` files (this library's own
        temp files) are left out unless ``include_reserved``.
        """
        if not isinstance(prefix, str):
            raise InvalidLocationError(f"list prefix {prefix!r} is not a string")
        directory = prefix[:-1] if prefix.endswith("/") else prefix
        if directory:
            check_relative_path(directory)
        self._count("lists")
        try:
            found = self.backend.list(directory, recursive)
        except Error:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._error("list", directory, e) from e
        if include_reserved:
            return sorted(found)
        return sorted(p for p in found if not is_reserved_name(p))

    # --- writes ---------------------------------------------------------------------

    def write(self, path: str, data: bytes, *, new: bool = False, durable: bool = True) -> None:
        """Create or overwrite a file (parent directories are created as needed).

        On local disk the file is written to a temp file, fsynced and renamed over the
        target, so readers see the old or the new content, never a mix. Two cheaper
        forms for callers that know more (other backends ignore both flags):

        * ``new=True``: ``path`` is a fresh, unique name that nothing refers to yet (a
          node or definition file before its commit). It is written in place and
          fsynced, without a temp file and a rename.
        * ``durable=False``: a best-effort file whose readers accept any content (the
          latest-version hint). It is overwritten in place without fsync: a reader may
          see a torn or stale value, and a crash may lose it.
        """
        data = self._accept_write(path, data)
        try:
            self.backend.write(path, data, new=new, durable=durable)
        except Error:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._error("write", path, e) from e

    def _accept_write(self, path: str, data: Any) -> bytes:
        """The part of a write before any I/O: check the path, take the bytes, count."""
        check_relative_path(path)
        data = as_bytes(data)
        self._count("writes", n_written=len(data))
        return data

    def write_many(
        self, files: dict[str, bytes], *, new: bool = False, background: bool = False
    ) -> Callable[[], None]:
        """``write`` each file (counted as one write each); on local disk several files
        are written by a few threads at once, so that their fsyncs overlap. Returns when
        every write has finished and, on local disk, the files' names are durable too
        (their directories fsynced); raises the first failure, after the others ended.

        With ``background=True`` on local disk all that runs on a worker thread and this
        returns at once (so the caller's own work overlaps the fsyncs): the returned
        function waits for it and raises its failure. Otherwise it returns a no-op."""
        if background and files:
            wait = self.backend.run_in_background(partial(self._write_many, dict(files), new))
            if wait is not None:
                return wait
        self._write_many(files, new)
        return _nothing

    def _write_many(self, files: dict[str, bytes], new: bool) -> None:
        items = list(files.items())
        self.backend.write_many(items, new=new, write=self.write, accept=self._accept_write)

    def create_exclusive(self, path: str, data: bytes) -> bool:
        """Create ``path`` only if it does not exist: True if this call created it
        (``prepare_exclusive``, then ``publish``).

        Of racing creators exactly one gets True; readers never see a partial file.
        * local disk: the data in an unnamed file (``O_TMPFILE``; elsewhere a temp file)
          + fsync, then a hard link to ``path`` (fails if the name is taken), then fsync
          of the directory (local rule LF3);
        * S3 (and filesystems that implement ``pipe_file(mode="create")`` themselves):
          a conditional PUT (If-None-Match: *), after a one-time probe that the store
          honours it; 409 conflicts are retried. If the PUT is refused but the object
          holds exactly ``data`` (an earlier attempt of this call that landed but whose
          reply was lost), the call counts as the creator (object store rules O2, O3);
        * memory: check-then-write under a process-wide lock (MM1);
        * anything else: ``NotSupportedError``.
        """
        with self.prepare_exclusive(path, data) as prepared:
            return self.publish(prepared)

    def prepare_exclusive(self, path: str, data: bytes) -> PreparedCreate:
        """The first half of ``create_exclusive``: everything that can be done before the
        file may become visible, and nothing visible (local disk: the data in an unnamed
        or temp file, fsynced; S3: the one-time probe). Counted as the exclusive create.

        Then ``publish(prepared)`` creates the file unless the name is taken, or
        ``prepared.discard()`` drops it; ``with storage.prepare_exclusive(...) as
        prepared:`` discards it on the way out unless it was published."""
        check_relative_path(path)
        data = as_bytes(data)
        self._count("exclusive_creates", n_written=len(data))
        try:
            return self.backend.prepare_exclusive(path, data)
        except Error:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._error("exclusive create", path, e) from e

    def publish(self, prepared: PreparedCreate) -> bool:
        """The second half of ``create_exclusive``: create ``prepared.path`` with its data
        only if it does not exist, atomically; True if this call created it. ``prepared``
        is released either way and cannot be published again."""
        if prepared.finished:
            raise ValueError(f"{prepared.path!r} was already published or discarded")
        try:
            return self.backend.publish(prepared)
        except Error:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._error("exclusive create", prepared.path, e) from e
        finally:
            prepared.discard()

    # --- deletes --------------------------------------------------------------------

    def delete(self, path: str) -> None:
        """Delete a file; a missing file is not an error."""
        check_relative_path(path)
        self._count("deletes")
        try:
            self.backend.delete(path)
        except Exception as e:  # noqa: BLE001
            raise self._error("delete", path, e) from e

    def delete_many(self, paths: Iterable[str]) -> None:
        """Delete files (missing ones are fine); one bulk request per 1000 keys on S3."""
        if isinstance(paths, str):
            raise TypeError("delete_many takes an iterable of paths, not one string")
        paths = [check_relative_path(p) for p in paths]
        self._count("deletes")
        self.backend.delete_many(paths)


def _nothing() -> None:
    pass


__all__ = [
    "BACKENDS", "FSSPEC_BACKEND", "RESERVED_PREFIX", "SCHEMES", "Backend", "PreparedCreate", "Scheme", "Storage",
    "StorageCounters", "backend_class", "is_reserved_name", "scheme_of",
]
