"""Storage: every byte the lakehouse reads or writes goes through here (SPEC 2, 7).

A ``Storage`` is one root URI plus a filesystem. Everything above this module sees
only paths *relative* to the root; this is the only module that touches fsspec.

Invariants:

* Every public method checks its relative path first (``check_relative_path``: non-empty,
  no leading "/", no "", "." or ".." component, no NUL) and raises
  ``InvalidLocationError`` before any I/O.
* No raw filesystem exception leaves this module: a missing file on ``read`` is
  ``MissingFileError(path)``; every other failure is ``StorageError`` naming the
  operation and the file's URI (the original exception is chained as ``__cause__``).
* Paths are never glob-expanded: only fsspec calls that take one literal path
  (``cat_file``, ``pipe_file``, ``rm_file``, ``info``, ``find``) or plain ``os`` calls
  are used, so a file named ``a[1]*?.arrow`` is just a name.
* ``create_exclusive`` is atomic: of several racing creators exactly one gets True and
  no reader ever sees a partial file. How depends on the backend (see the method).
* Every public storage call adds exactly one to one counter of ``counters`` (plus bytes),
  counted whether or not it succeeds. Internal calls (the If-None-Match probe, retries)
  are not counted. ``uri()`` is not a storage call.
* Names whose last component starts with ``.tl-`` are reserved for this module's
  temporary and probe files; ``list`` never returns them.
* L1 (local disk): a write never goes through a symbolic link inside the root. Before
  a file is created or written, every existing directory between the root and the file
  is checked with ``lstat`` (a directory found clean is remembered), files are opened
  with ``O_NOFOLLOW``, and a symlink found is a StorageError naming it: so a planted
  ``_latest_hint.txt`` link or a linked hash directory never makes a commit write
  outside the root. (The root itself may be a link: the user chose it.)

Local disk ("file") uses the ``os`` module directly, not fsspec: exclusive create needs
``os.link`` and every write is made atomic and durable (temp file, fsync, rename).
"""

from __future__ import annotations

import dataclasses
import errno
import inspect
import os
import random
import stat
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import fsspec

from trinitylake_dbapi.errors import (
    Error,
    InvalidLocationError,
    MissingFileError,
    NotSupportedError,
    StorageError,
)
from trinitylake_dbapi.format.paths import check_relative_path, qualify_root_uri

#: Last-component prefix of this module's own temporary and probe files.
RESERVED_PREFIX = ".tl-"


def is_reserved_name(path: str) -> bool:
    """True for this library's own short-lived files (``.tl-tmp-*`` before a rename or
    link, ``.tl-probe-*`` of the S3 conditional-write check): never part of a lakehouse,
    left behind only by a process killed while writing one."""
    return path.rpartition("/")[2].startswith(RESERVED_PREFIX)


# S3 answers 409 ConditionalRequestConflict when conditional writes to one key overlap;
# the request may be retried. Bounded: about 1.3 s in total at most.
_CONFLICT_RETRIES = 8
_CONFLICT_BACKOFF_S = 0.01

# Threads of write_many on local disk (fsync waits for the device, not the CPU).
_WRITE_THREADS = 8

# write_many(new=True) on local disk keeps at most this many files open at once.
_OPEN_FILES_BATCH = 64

# S3 DeleteObjects takes at most 1000 keys per request.
_S3_DELETE_BATCH = 1000

# Where O_TMPFILE or linking through /proc/self/fd is unavailable (the filesystem does
# not support it, an old kernel, no /proc), root files are published via a temp name.
_NO_TMPFILE_ERRNOS = frozenset(
    getattr(errno, name) for name in ("EOPNOTSUPP", "EISDIR", "EINVAL", "ENOENT", "EXDEV", "ENOTSUP")
    if hasattr(errno, name)
)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

# The memory filesystem is one store per process; check-then-write needs a lock.
_MEMORY_CREATE_LOCK = threading.Lock()


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


def _as_bytes(data: Any) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"data must be bytes, not {type(data).__name__}")


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


def _client_error_code(exc: BaseException) -> str | None:
    """The S3 error code of a botocore ClientError in ``exc``'s cause chain, if any."""
    seen = 0
    e: BaseException | None = exc
    while e is not None and seen < 10:
        response = getattr(e, "response", None)
        if isinstance(response, dict):
            code = response.get("Error", {}).get("Code")
            if code:
                return str(code)
        e = e.__cause__ or e.__context__
        seen += 1
    return None


def _is_conditional_conflict(exc: BaseException) -> bool:
    """S3's 409 ConditionalRequestConflict (s3fs turns it into a generic OSError)."""
    code = _client_error_code(exc)
    if code is not None:
        return code in ("ConditionalRequestConflict", "409")
    return "ConditionalRequestConflict" in str(exc)


def _is_precondition_failed(exc: BaseException) -> bool:
    """A 412 that s3fs did not map to FileExistsError (no "Condition" in the reply)."""
    return _client_error_code(exc) in ("PreconditionFailed", "412")


def _supports_create_mode(fs: fsspec.AbstractFileSystem) -> bool:
    """True if ``fs`` implements ``pipe_file(mode="create")`` itself.

    The fsspec base classes implement it as check-then-write, which races; only a
    filesystem that overrides it (and is probed before use) is trusted.
    """
    from fsspec.asyn import AsyncFileSystem
    from fsspec.spec import AbstractFileSystem

    for name, base in (("pipe_file", AbstractFileSystem), ("_pipe_file", AsyncFileSystem)):
        impl = getattr(type(fs), name, None)
        if impl is None or impl is getattr(base, name, None):
            continue
        try:
            if "mode" in inspect.signature(impl).parameters:
                return True
        except (TypeError, ValueError):
            continue
    return False


class Storage:
    """Files of one lakehouse: a root URI and a filesystem, addressed by relative paths."""

    root_uri: str
    protocol: str
    counters: StorageCounters

    def __init__(
        self,
        root_uri: str,
        storage_options: dict[str, Any] | None = None,
        *,
        filesystem: fsspec.AbstractFileSystem | None = None,
        cache_bytes: int = 256 * 2**20,
    ) -> None:
        self.root_uri, self.protocol = _qualify(root_uri)
        self.counters = StorageCounters()
        self._lock = threading.Lock()  # counters and cache
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cache_size = 0
        self._cache_bytes = max(0, int(cache_bytes))
        self._probe_lock = threading.Lock()
        self._probed = False
        self._dirs_lock = threading.Lock()  # created directories not yet made durable
        self._created_dirs: set[str] = set()

        self._local = self.protocol == "file"
        self._is_memory = False
        self._is_s3 = False
        if self._local:
            if filesystem is not None and "file" not in _protocols(filesystem):
                raise InvalidLocationError(
                    f"root URI {self.root_uri!r} is local but the filesystem given is "
                    f"{type(filesystem).__name__}"
                )
            # Local disk uses the os module directly (exclusive create needs os.link).
            self.fs = None
            self._base = self.root_uri[len("file://"):].rstrip("/")
            self._anonymous_files = hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")
            self._checked_dirs: set[str] = set()  # L1: directories found not to be links
            return

        if filesystem is None:
            options = dict(storage_options or {})
            if self.protocol in ("s3", "s3a"):
                # Other processes write too; a listing cache would go stale.
                options.setdefault("use_listings_cache", False)
            try:
                filesystem = fsspec.filesystem(self.protocol, **options)
            except ImportError as e:
                raise NotSupportedError(
                    f"protocol {self.protocol!r} of root URI {self.root_uri!r} needs a "
                    f"package that is not installed ({e}); for S3 install "
                    "'trinitylake-dbapi[s3]'"
                ) from e
            except ValueError as e:
                raise NotSupportedError(
                    f"protocol {self.protocol!r} of root URI {self.root_uri!r} is not "
                    f"supported by fsspec: {e}"
                ) from e
            except Exception as e:  # noqa: BLE001 - a filesystem's own setup failure
                raise StorageError(
                    f"cannot open the filesystem of root URI {self.root_uri!r}: "
                    f"{type(e).__name__}: {e}"
                ) from e
        elif storage_options:
            raise ValueError("pass either storage_options or filesystem, not both")
        elif self.protocol not in _protocols(filesystem):
            raise InvalidLocationError(
                f"root URI {self.root_uri!r} has protocol {self.protocol!r} but the "
                f"filesystem given is {type(filesystem).__name__} "
                f"(protocols {sorted(_protocols(filesystem))})"
            )
        self.fs = filesystem
        self._base = filesystem._strip_protocol(self.root_uri).rstrip("/")
        from fsspec.implementations.memory import MemoryFileSystem

        self._is_memory = isinstance(filesystem, MemoryFileSystem)
        try:
            from s3fs import S3FileSystem

            self._is_s3 = isinstance(filesystem, S3FileSystem)
        except ImportError:  # pragma: no cover - s3fs is optional
            self._is_s3 = False

    def __repr__(self) -> str:
        return f"Storage({self.root_uri!r})"

    # --- paths ----------------------------------------------------------------------

    def uri(self, path: str) -> str:
        """Absolute URI of a relative path."""
        return self.root_uri + check_relative_path(path)

    def _full(self, path: str) -> str:
        """The path handed to os or fsspec (``path`` is already checked)."""
        return self._base + "/" + path

    def _count(self, kind: str, n_written: int = 0) -> None:
        with self._lock:
            c = self.counters
            setattr(c, kind, getattr(c, kind) + 1)
            c.bytes_written += n_written

    def _error(self, op: str, path: str, exc: BaseException) -> StorageError:
        return StorageError(
            f"{op} of {self.root_uri + path!r} failed: {type(exc).__name__}: {exc}"
        )

    def _missing(self, path: str) -> MissingFileError:
        return MissingFileError(path, f"file does not exist (under {self.root_uri})")

    # --- reads ----------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        """The whole content of a file; ``MissingFileError`` if it does not exist."""
        check_relative_path(path)
        self._count("reads")
        data = self._read(path)
        with self._lock:
            self.counters.bytes_read += len(data)
        return data

    def _read(self, path: str) -> bytes:
        full = self._full(path)
        try:
            if self._local:
                with open(full, "rb", buffering=0) as f:
                    return f.readall()
            if self._is_s3:
                # max_concurrency=1: one GET, without the HEAD s3fs sends otherwise.
                return bytes(self.fs.cat_file(full, max_concurrency=1))
            return bytes(self.fs.cat_file(full))
        except (FileNotFoundError, NotADirectoryError) as e:
            raise self._missing(path) from e
        except Error:
            raise
        except Exception as e:  # noqa: BLE001 - translated, never leaked
            raise self._error("read", path, e) from e

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
        full = self._full(path)
        try:
            if self._local:
                return os.path.isfile(full)
            if self._is_s3:
                bucket, key, _ = self.fs.split_path(full)
                self.fs.call_s3("head_object", Bucket=bucket, Key=key)
                return True
            return self.fs.info(full).get("type") == "file"
        except (FileNotFoundError, NotADirectoryError):
            return False
        except Exception as e:  # noqa: BLE001
            raise self._error("exists", path, e) from e

    def modified_millis(self, path: str) -> int | None:
        """Last modification time of a file in ms since epoch (a metadata call, counted
        as ``exists``); None if the file is missing or the store does not say."""
        check_relative_path(path)
        self._count("exists")
        full = self._full(path)
        try:
            if self._local:
                return int(os.stat(full).st_mtime * 1000)
            info = self.fs.info(full)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except Exception as e:  # noqa: BLE001
            raise self._error("stat", path, e) from e
        for name in ("LastModified", "mtime", "created"):
            value = info.get(name)
            if value is None:
                continue
            if hasattr(value, "timestamp"):
                return int(value.timestamp() * 1000)
            if isinstance(value, (int, float)):
                return int(float(value) * 1000)
        return None

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
            if self._local:
                found = self._list_local(directory, recursive)
            else:
                found = self._list_fs(directory, recursive)
        except Error:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._error("list", directory, e) from e
        if include_reserved:
            return sorted(found)
        return sorted(p for p in found if not is_reserved_name(p))

    def _list_local(self, directory: str, recursive: bool) -> list[str]:
        top = self._full(directory) if directory else self._base or "/"
        strip = len(self._base) + 1
        if not recursive:
            try:
                with os.scandir(top) as entries:
                    # Files as os.walk tells them from directories (below).
                    return [(top + "/" + e.name)[strip:] for e in entries if not _is_dir(e)]
            except (FileNotFoundError, NotADirectoryError):
                return []
        errors: list[OSError] = []

        def onerror(e: OSError) -> None:
            if not isinstance(e, (FileNotFoundError, NotADirectoryError)):
                errors.append(e)

        out = []
        for dirpath, _dirs, files in os.walk(top, onerror=onerror):
            for name in files:
                out.append((dirpath + "/" + name)[strip:])
        if errors:
            raise errors[0]
        return out

    def _list_fs(self, directory: str, recursive: bool) -> list[str]:
        top = self._full(directory) if directory else self._base
        want = top + "/"
        strip = len(self._base) + 1
        names = self.fs.find(top, withdirs=False, **({} if recursive else {"maxdepth": 1}))
        return [n[strip:] for n in names if n.startswith(want) and not n.endswith("/")]

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
        check_relative_path(path)
        data = _as_bytes(data)
        self._count("writes", n_written=len(data))
        try:
            if self._local and new:
                self._write_local_new(path, data)
            elif self._local and not durable:
                self._write_local_in_place(path, data)
            elif self._local:
                self._write_local(path, data)
            else:
                self.fs.pipe_file(self._full(path), data)
        except Error:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._error("write", path, e) from e

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
        if background and self._local and files:
            future = _BACKGROUND.submit(self._write_many, dict(files), new)
            return future.result
        self._write_many(files, new)
        return _nothing

    def _write_many(self, files: dict[str, bytes], new: bool) -> None:
        items = list(files.items())
        if not self._local:
            for path, data in items:
                self.write(path, data, new=new)
        elif new:
            for start in range(0, len(items), _OPEN_FILES_BATCH):
                self._write_new_local_batch(items[start:start + _OPEN_FILES_BATCH])
        else:
            self._run_all([(path, "write", partial(self.write, path, data)) for path, data in items])
            directories = self._directories_to_sync([self._full(path) for path, _ in items])
            self._run_all([(self._relative(d), "directory fsync", partial(_fsync_dir, d)) for d in directories])

    def _run_all(self, calls: list[tuple[str, str, Callable[[], Any]]]) -> None:
        """``_run_concurrently``; a failure is raised as this Storage's error naming the
        file or directory (an error that already is one is raised as it is)."""
        try:
            _run_concurrently(calls)
            return
        except _SyncFailed as failed:
            what, where, cause = failed.what, failed.where, failed.cause
        if isinstance(cause, Error):
            raise cause  # outside the handler: its own cause chain, nothing added
        raise self._error(what, where, cause) from cause

    def _write_new_local_batch(self, items: list[tuple[str, bytes]]) -> None:
        """``write(new=True)`` of a few files, their fsyncs and their directories' fsyncs
        all issued at once (a device completes concurrent flushes sooner than the same
        flushes one after another). Each file's name exists before its directory is
        fsynced, and nothing returns before every fsync has succeeded."""
        opened: list[tuple[int, str, str]] = []  # fd, full path, relative path
        try:
            for path, data in items:
                check_relative_path(path)
                data = _as_bytes(data)
                self._count("writes", n_written=len(data))
                full = self._full(path)
                try:
                    try:
                        fd = self._open_local(full, os.O_EXCL)
                    except FileExistsError:
                        # A leftover of an earlier, failed attempt at this same write.
                        self._write_local(path, data)
                        continue
                    opened.append((fd, full, path))
                    _write_all(fd, data)
                except Error:
                    raise
                except Exception as e:  # noqa: BLE001
                    raise self._error("write", path, e) from e
            syncs = [(path, "fsync", partial(os.fsync, fd)) for fd, _, path in opened]
            directories = self._directories_to_sync([self._full(path) for path, _ in items])
            syncs += [(self._relative(d), "directory fsync", partial(_fsync_dir, d)) for d in directories]
            self._run_all(syncs)
        except BaseException:
            for _, full, _ in opened:
                _unlink_quietly(full)
            raise
        finally:
            for fd, _, _ in opened:
                os.close(fd)

    def _relative(self, full: str) -> str:
        """A local full path as the relative path errors name ("" for the root itself)."""
        return full[len(self._base) + 1:]

    def _directories_to_sync(self, fulls: list[str]) -> list[str]:
        """The directories whose fsync makes the names of just-written local files
        durable: each file's directory, and the parent of every directory created since
        the last call. A file's fsync does not persist its directory entry; commits fsync
        these (through ``write_many``) before creating the root, so a root that survives
        a crash never names a file whose entry was lost."""
        with self._dirs_lock:
            created, self._created_dirs = self._created_dirs, set()
        directories = {os.path.dirname(full) for full in fulls}
        directories.update(os.path.dirname(d) for d in created)
        return sorted(directories, key=len, reverse=True)

    def _refuse_symlinks(self, full: str) -> None:
        """L1: StorageError if a directory between the root and ``full`` is a symlink."""
        directory = os.path.dirname(full)
        checked = self._checked_dirs
        pending = []
        while len(directory) > len(self._base) and directory not in checked:
            pending.append(directory)
            directory = os.path.dirname(directory)
        for directory in reversed(pending):  # from the root down
            try:
                mode = os.lstat(directory).st_mode
            except FileNotFoundError:
                return  # the rest is created by this writer (makedirs) as directories
            if stat.S_ISLNK(mode):
                raise StorageError(
                    f"refusing to write {self._uri_of(full)!r}: {self._uri_of(directory)!r} is "
                    "a symbolic link inside the lakehouse; writes never follow links (storage "
                    "rule L1): replace it with a directory"
                )
            checked.add(directory)

    def _uri_of(self, full: str) -> str:
        return "file://" + full

    def _make_parents(self, parent: str) -> None:
        """``os.makedirs``, remembering the directories it created (see _directories_to_sync)."""
        missing = []
        directory = parent
        while len(directory) > len(self._base) and not os.path.isdir(directory):
            missing.append(directory)
            directory = os.path.dirname(directory)
        os.makedirs(parent, exist_ok=True)
        with self._dirs_lock:
            self._created_dirs.update(missing)

    def _local_temp(self, full: str) -> tuple[int, str]:
        """Open a new temp file beside ``full``, creating parent directories lazily."""
        parent = os.path.dirname(full)
        self._refuse_symlinks(full)
        tmp = f"{parent}/{RESERVED_PREFIX}tmp-{uuid.uuid4().hex}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | _O_NOFOLLOW
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileNotFoundError:
            self._make_parents(parent)
            return os.open(tmp, flags, 0o666), tmp

    @staticmethod
    def _write_fd(fd: int, data: bytes) -> None:
        _write_all(fd, data)
        os.fsync(fd)

    def _write_local(self, path: str, data: bytes) -> None:
        full = self._full(path)
        fd, tmp = self._local_temp(full)
        try:
            try:
                self._write_fd(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, full)
        except BaseException:
            _unlink_quietly(tmp)
            raise

    def _open_local(self, full: str, flags: int) -> int:
        """``os.open`` for writing, creating parent directories lazily; never through a
        symlink (L1)."""
        self._refuse_symlinks(full)
        flags |= os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | _O_NOFOLLOW
        try:
            try:
                return os.open(full, flags, 0o666)
            except FileNotFoundError:
                self._make_parents(os.path.dirname(full))
                return os.open(full, flags, 0o666)
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise
            raise StorageError(
                f"refusing to write {self._uri_of(full)!r}: it is a symbolic link inside the "
                "lakehouse; writes never follow links (storage rule L1): remove it"
            ) from None

    def _write_local_new(self, path: str, data: bytes) -> None:
        full = self._full(path)
        try:
            fd = self._open_local(full, os.O_EXCL)
        except FileExistsError:
            # A leftover of an earlier, failed attempt at this same write: replace it.
            self._write_local(path, data)
            return
        try:
            try:
                self._write_fd(fd, data)
            finally:
                os.close(fd)
        except BaseException:
            _unlink_quietly(full)
            raise

    def _write_local_in_place(self, path: str, data: bytes) -> None:
        fd = self._open_local(self._full(path), 0)
        if os.fstat(fd).st_nlink != 1:
            # Hard-linked (a copy made with links shares it): never edit it in place.
            os.close(fd)
            self._write_local(path, data)
            return
        try:
            view, offset = memoryview(data), 0
            while offset < len(data):
                offset += os.pwrite(fd, view[offset:], offset)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)

    def create_exclusive(
        self, path: str, data: bytes, *, ready: Callable[[], None] | None = None
    ) -> bool:
        """Create ``path`` only if it does not exist: True if this call created it.

        ``ready``, if given, is called before the file can become visible (on local disk
        after the temp file is written and fsynced, elsewhere first); if it raises,
        nothing is created and its error propagates.

        Of racing creators exactly one gets True; readers never see a partial file.
        * local disk: the data in an unnamed file (``O_TMPFILE``; elsewhere a temp file)
          + fsync, then a hard link to ``path`` (fails if the name is taken), then fsync
          of the directory;
        * S3 (and filesystems that implement ``pipe_file(mode="create")`` themselves):
          a conditional PUT (If-None-Match: *), after a one-time probe that the store
          honours it; 409 conflicts are retried. If the PUT is refused but the object
          holds exactly ``data`` (an earlier attempt of this call that landed but whose
          reply was lost), the call counts as the creator;
        * memory: check-then-write under a process-wide lock;
        * anything else: ``NotSupportedError``.
        """
        check_relative_path(path)
        data = _as_bytes(data)
        self._count("exclusive_creates", n_written=len(data))
        try:
            if self._local:
                return self._create_local(path, data, ready)
            if ready is not None:
                ready()
            if self._is_memory:
                full = self._full(path)
                with _MEMORY_CREATE_LOCK:
                    if self.fs.exists(full):
                        return False
                    self.fs.pipe_file(full, data)
                return True
            if not (self._is_s3 or _supports_create_mode(self.fs)):
                raise NotSupportedError(
                    f"exclusive create is not supported for protocol {self.protocol!r} "
                    f"({type(self.fs).__name__} has no atomic pipe_file(mode='create')); "
                    f"root URI {self.root_uri!r}"
                )
            self._probe_conditional_put()
            return self._create_conditional(path, data)
        except Error:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._error("exclusive create", path, e) from e

    def _create_local(self, path: str, data: bytes, ready: Callable[[], None] | None) -> bool:
        full = self._full(path)
        if self._anonymous_files:
            created = self._create_local_anonymous(full, data, ready)
            if created is not None:
                return created
        fd, tmp = self._local_temp(full)
        try:
            try:
                self._write_fd(fd, data)
            finally:
                os.close(fd)
            if ready is not None:
                ready()
            try:
                os.link(tmp, full)
            except FileExistsError:
                return False
            _fsync_dir(os.path.dirname(full))
            return True
        finally:
            _unlink_quietly(tmp)

    def _create_local_anonymous(
        self, full: str, data: bytes, ready: Callable[[], None] | None
    ) -> bool | None:
        """``_create_local`` without a temp name (Linux): the data goes to an unnamed file
        in the target directory (``O_TMPFILE``), is fsynced, and the file gets its one
        name by ``linkat``, which fails if the name is taken. There is no temp directory
        entry to create and remove, and nothing is left behind if the process dies.
        None if this filesystem or kernel cannot do it (the caller falls back, and this
        Storage stops trying)."""
        parent = os.path.dirname(full)
        self._refuse_symlinks(full)
        try:
            dir_fd = os.open(parent, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC | _O_NOFOLLOW)
        except FileNotFoundError:
            return None  # the temp-file path creates missing parents
        try:
            try:
                fd = os.open(".", os.O_TMPFILE | os.O_WRONLY | _O_CLOEXEC, 0o666, dir_fd=dir_fd)
            except OSError as e:
                if e.errno in _NO_TMPFILE_ERRNOS:
                    self._anonymous_files = False
                    return None
                raise
            try:
                self._write_fd(fd, data)
                if ready is not None:
                    ready()
                try:
                    # An absolute source ignores src_dir_fd, but passing one makes Python
                    # call linkat(AT_SYMLINK_FOLLOW), which links the file the magic
                    # /proc link stands for (plain link() would refuse it).
                    os.link(f"/proc/self/fd/{fd}", os.path.basename(full), src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                except FileExistsError:
                    return False
                except OSError as e:
                    if e.errno not in _NO_TMPFILE_ERRNOS:
                        raise
                    self._anonymous_files = False  # no /proc: publish through a temp name
                    return None
            finally:
                os.close(fd)
            os.fsync(dir_fd)
            return True
        finally:
            os.close(dir_fd)

    def _put_if_absent(self, full: str, data: bytes) -> bool:
        """One conditional PUT with bounded retries on 409; False if the key exists."""
        for attempt in range(_CONFLICT_RETRIES + 1):
            try:
                self.fs.pipe_file(full, data, mode="create")
                return True
            except FileExistsError:
                return False
            except OSError as e:
                if _is_precondition_failed(e):
                    return False
                if not _is_conditional_conflict(e) or attempt == _CONFLICT_RETRIES:
                    raise
            delay = _CONFLICT_BACKOFF_S * (2 ** min(attempt, 5))
            time.sleep(delay * (0.5 + random.random()))
        raise AssertionError("unreachable")  # pragma: no cover

    def _create_conditional(self, path: str, data: bytes) -> bool:
        full = self._full(path)
        if self._put_if_absent(full, data):
            return True
        # Refused. If the object is byte-identical to ours, an earlier attempt of this
        # same call (a retry inside botocore/s3fs) created it.
        try:
            existing = self._read(path)
        except MissingFileError:
            return False
        return existing == data

    def _probe_conditional_put(self) -> None:
        """Once per Storage: check the store refuses a second conditional PUT of a key."""
        if self._probed:
            return
        with self._probe_lock:
            if self._probed:
                return
            probe = f"{RESERVED_PREFIX}probe-{uuid.uuid4().hex}"
            full = self._full(probe)
            try:
                # _create_conditional: a first PUT that landed but whose reply was lost
                # is retried into a 412 for our own object, which is support, not refusal.
                first = self._create_conditional(probe, b"1")
                second = self._put_if_absent(full, b"2") if first else True
            finally:
                try:
                    self.fs.rm_file(full)
                except FileNotFoundError:
                    pass
            if not first:
                raise StorageError(
                    f"the store at {self.root_uri!r} refused a conditional PUT of a new "
                    f"key {probe!r}; exclusive create cannot be used"
                )
            if second:
                raise StorageError(
                    f"the store at {self.root_uri!r} does not honour If-None-Match: a "
                    "conditional PUT overwrote an existing object. Exclusive create (the "
                    "commit point) cannot be made safe on it; use a store with "
                    "conditional writes (AWS S3 or a compatible one)"
                )
            self._probed = True

    # --- deletes --------------------------------------------------------------------

    def delete(self, path: str) -> None:
        """Delete a file; a missing file is not an error."""
        check_relative_path(path)
        self._count("deletes")
        try:
            self._delete_one(path)
        except Exception as e:  # noqa: BLE001
            raise self._error("delete", path, e) from e

    def _delete_one(self, path: str) -> None:
        try:
            if self._local:
                os.unlink(self._full(path))
            else:
                self.fs.rm_file(self._full(path))
        except (FileNotFoundError, NotADirectoryError):
            pass

    def delete_many(self, paths: Iterable[str]) -> None:
        """Delete files (missing ones are fine); one bulk request per 1000 keys on S3."""
        if isinstance(paths, str):
            raise TypeError("delete_many takes an iterable of paths, not one string")
        paths = [check_relative_path(p) for p in paths]
        self._count("deletes")
        if not self._is_s3:
            for p in paths:
                try:
                    self._delete_one(p)
                except Exception as e:  # noqa: BLE001
                    raise self._error("delete", p, e) from e
            return
        unique = list(dict.fromkeys(paths))
        for i in range(0, len(unique), _S3_DELETE_BATCH):
            chunk = unique[i : i + _S3_DELETE_BATCH]
            try:
                self._bulk_delete_s3(chunk)
            except Error:
                raise
            except Exception as e:  # noqa: BLE001
                raise self._error("bulk delete", chunk[0], e) from e

    def _bulk_delete_s3(self, chunk: list[str]) -> None:
        bucket = self.fs.split_path(self._base)[0]
        keys = [self.fs.split_path(self._full(p))[1] for p in chunk]
        out = self.fs.call_s3(
            "delete_objects",
            Bucket=bucket,
            Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True},
        )
        for p in chunk:
            self.fs.invalidate_cache(self._full(p))
        errors = [e for e in out.get("Errors", []) if e.get("Code") != "NoSuchKey"]
        if errors:
            first = errors[0]
            raise StorageError(
                f"bulk delete under {self.root_uri!r} failed for {len(errors)} of "
                f"{len(chunk)} files, e.g. {first.get('Key')!r}: "
                f"{first.get('Code')}: {first.get('Message')}"
            )


def _nothing() -> None:
    pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class _SyncFailed(Exception):
    """An fsync of ``_run_concurrently`` failed: ``what`` of ``where`` raised ``cause``."""

    def __init__(self, what: str, where: str, cause: BaseException) -> None:
        super().__init__(f"{what} of {where}: {cause}")
        self.what, self.where, self.cause = what, where, cause


def _run_concurrently(calls: list[tuple[str, str, Callable[[], Any]]]) -> None:
    """Run ``(where, what, call)`` triples at once (the first on this thread); when all
    have ended, raise ``_SyncFailed`` for the first that failed, if any."""
    if not calls:
        return
    futures = [_SYNC.submit(call) for _, _, call in calls[1:]]
    failure: _SyncFailed | None = None
    where, what, call = calls[0]
    try:
        call()
    except Exception as e:  # noqa: BLE001 - reported below, after the others ended
        failure = _SyncFailed(what, where, e)
    for (where, what, _), future in zip(calls[1:], futures):
        try:
            future.result()
        except Exception as e:  # noqa: BLE001
            failure = failure or _SyncFailed(what, where, e)
    if failure is not None:
        raise failure


class _LazyPool:
    """Worker threads of the process, started on first use and forgotten in a forked
    child (the parent's threads do not exist there)."""

    def __init__(self, workers: int, name: str) -> None:
        self._workers, self._name = workers, name
        self._pool: Any = None
        self._lock = threading.Lock()

    def submit(self, call: Callable[..., Any], *args: Any) -> Any:
        with self._lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix=self._name)
            pool = self._pool
        return pool.submit(call, *args)

    def forget(self) -> None:
        self._pool, self._lock = None, threading.Lock()


#: ``write_many(background=True)``: a commit's C1 files while its root is encoded.
_BACKGROUND = _LazyPool(4, "trinitylake-io")
#: ``_run_concurrently``'s fsyncs (not _BACKGROUND: C1 runs there and waits for them).
_SYNC = _LazyPool(_WRITE_THREADS, "trinitylake-sync")


def _forget_pools() -> None:
    _BACKGROUND.forget()
    _SYNC.forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)


def _protocols(fs: fsspec.AbstractFileSystem) -> set[str]:
    p = fs.protocol
    return {p} if isinstance(p, str) else set(p)


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["Storage", "StorageCounters", "RESERVED_PREFIX", "is_reserved_name"]
