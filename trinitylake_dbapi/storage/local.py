"""Local disk: the ``file://`` backend, on the ``os`` module directly (not fsspec).

Exclusive create needs ``os.link`` (or ``linkat`` of an unnamed file), and every write
is made atomic and durable by hand. The rules this module keeps:

* LF1. A write never goes through a symbolic link inside the root. Before a file is
  created or written, every existing directory between the root and the file is
  checked with ``lstat``, at every write (a directory found clean is not trusted
  later: it may have been replaced by a link since, and one remembered for the
  backend's life let a commit make a new directory through a hash directory linked
  after the connection's earlier commits, and write there), files are opened
  with ``O_NOFOLLOW``, and a symlink found is a StorageError naming it: so a planted
  ``_latest_hint.txt`` link or a linked hash directory never makes a commit write
  outside the root. (The root itself may be a link: the user chose it.)
  Readers of Iceberg files ask the same walk (:func:`symlink_within`, the file itself
  included) before they read a managed table's file (iceberg.tables M7).
* LF2. A plain ``write`` goes to a temp file beside the target (``.tl-tmp-*``), is
  fsynced and renamed over the target: readers see the old or the new content, never
  a mix. ``new=True`` (a fresh name nothing refers to yet) writes in place and fsyncs;
  ``durable=False`` (the hint) overwrites in place without fsync, but never a file
  with other hard links.
* LF3. ``create_exclusive`` writes the data to an unnamed file (``O_TMPFILE``; where the
  filesystem or kernel cannot, a temp file), fsyncs it, then gives it its name with a
  hard link, which fails if the name is taken, and fsyncs the directory. Of racing
  creators exactly one links; no reader sees a partial file. ``prepare_exclusive`` is
  everything up to the link (the file's fsync included), ``publish`` the link and the
  directory's fsync: a caller's last check before publishing comes after the slow
  part. (A kernel that opens unnamed files but then refuses to link them is found out
  at the first ``publish`` of the process, which then writes and links a temp file:
  that one publish comes a write and an fsync of the root after the caller's check,
  a pause that must fit in the margin lakehouse D3 keeps for pauses,
  EXPIRED_ROOT_DELETE_DELAY_S - FRESH_LATEST_S.)
* LF4. A file's fsync does not persist its directory entry. ``write_many`` returns only
  when every file is fsynced and so is each file's directory and the parent of every
  directory created since the last ``write_many``: commits write their files this way
  before creating their root, so a root that survives a crash never names a lost file.
  The fsyncs of one batch are issued together, on a few threads (a device completes
  concurrent flushes sooner than the same flushes one after another).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import uuid
from functools import partial
from typing import Any, Callable

from trinitylake_dbapi.errors import Error, InvalidLocationError, StorageError

from .base import RESERVED_PREFIX, Backend, PreparedCreate, filesystem_protocols, operation_failed
from .locations import local_file_path, local_path_as_written

# Threads running the fsyncs of write_many (fsync waits for the device, not the CPU).
_WRITE_THREADS = 8

# write_many(new=True) keeps at most this many files open at once.
_OPEN_FILES_BATCH = 64

# Where O_TMPFILE or linking through /proc/self/fd is unavailable (the filesystem does
# not support it, an old kernel, no /proc), root files are published via a temp name.
_NO_TMPFILE_ERRNOS = frozenset(
    getattr(errno, name) for name in ("EOPNOTSUPP", "EISDIR", "EINVAL", "ENOENT", "EXDEV", "ENOTSUP")
    if hasattr(errno, name)
)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class LocalBackend(Backend):
    """Files under one local directory, written atomically and durably (LF1-LF4)."""

    fs = None

    def __init__(self, root_uri: str) -> None:
        self.root_uri = root_uri
        self._base = root_uri[len("file://"):].rstrip("/")
        #: Whether ``create_exclusive`` publishes from an unnamed file (LF3). Turned off
        #: for good by the first refusal of the filesystem or kernel; tests turn it off
        #: to exercise the temp-file way.
        self.anonymous_files = hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")
        self._dirs_lock = threading.Lock()  # created directories not yet made durable
        self._created_dirs: set[str] = set()

    @classmethod
    def open(
        cls,
        root_uri: str,
        protocol: str,
        storage_options: dict[str, Any] | None,
        filesystem: Any,
    ) -> LocalBackend:
        """A local root. ``storage_options`` mean nothing here; a ``filesystem`` passed
        must at least be a local one (it is not used: exclusive create needs os.link)."""
        if filesystem is not None and "file" not in filesystem_protocols(filesystem):
            raise InvalidLocationError(
                f"root URI {root_uri!r} is local but the filesystem given is "
                f"{type(filesystem).__name__}"
            )
        return cls(root_uri)

    # --- paths ----------------------------------------------------------------------

    def _full(self, path: str) -> str:
        """The absolute path of a checked relative path."""
        return self._base + "/" + path

    def _relative(self, full: str) -> str:
        """An absolute path as the relative path errors name ("" for the root itself)."""
        return full[len(self._base) + 1:]

    def _uri_of(self, full: str) -> str:
        return "file://" + full

    # --- reads ----------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        """The file's bytes, in one unbuffered read."""
        with open(self._full(path), "rb", buffering=0) as f:
            return f.readall()

    def exists(self, path: str) -> bool:
        """True for a regular file (following links, as reads do)."""
        return os.path.isfile(self._full(path))

    def modified_millis(self, path: str) -> int | None:
        """The file's mtime, in ms."""
        return int(os.stat(self._full(path)).st_mtime * 1000)

    def list(self, directory: str, recursive: bool) -> list[str]:
        """Files as ``os.walk`` tells them from directories; unreadable directories
        below the top are an error, missing ones (removed meanwhile) are not."""
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

    # --- writes ---------------------------------------------------------------------

    def write(self, path: str, data: bytes, *, new: bool, durable: bool) -> None:
        """One file, by LF2: in place for ``new`` and for ``durable=False``, otherwise
        through a temp file and a rename."""
        if new:
            self._write_new(path, data)
        elif not durable:
            self._write_in_place(path, data)
        else:
            self._write_replacing(path, data)

    def write_many(
        self,
        items: list[tuple[str, bytes]],
        *,
        new: bool,
        write: Callable[..., None],
        accept: Callable[[str, Any], bytes],
    ) -> None:
        """Several files with their fsyncs overlapping, then their names made durable
        (LF4). New files go in batches of at most ``_OPEN_FILES_BATCH`` open files;
        others are written by ``write`` on a few threads at once."""
        if new:
            for start in range(0, len(items), _OPEN_FILES_BATCH):
                self._write_new_batch(items[start:start + _OPEN_FILES_BATCH], accept)
            return
        self._run_all([(path, "write", partial(write, path, data)) for path, data in items])
        directories = self._directories_to_sync([self._full(path) for path, _ in items])
        self._run_all([(self._relative(d), "directory fsync", partial(_fsync_dir, d)) for d in directories])

    def run_in_background(self, call: Callable[[], None]) -> Callable[[], None] | None:
        """``call`` on the process's background writer threads: a commit encodes its
        root while its files' fsyncs run."""
        return _BACKGROUND.submit(call).result

    def _run_all(self, calls: list[tuple[str, str, Callable[[], Any]]]) -> None:
        """``_run_concurrently``; a failure is raised as the error naming its file or
        directory (an error that already is one of ours is raised as it is)."""
        try:
            _run_concurrently(calls)
            return
        except _SyncFailed as failed:
            what, where, cause = failed.what, failed.where, failed.cause
        if isinstance(cause, Error):
            raise cause  # outside the handler: its own cause chain, nothing added
        raise operation_failed(self.root_uri, what, where, cause) from cause

    def _write_new_batch(
        self, items: list[tuple[str, bytes]], accept: Callable[[str, Any], bytes]
    ) -> None:
        """``write(new=True)`` of a few files, their fsyncs and their directories' fsyncs
        all issued at once (LF4). Each file's name exists before its directory is
        fsynced, and nothing returns before every fsync has succeeded; on a failure no
        file of the batch is left behind."""
        opened: list[tuple[int, str, str]] = []  # fd, full path, relative path
        try:
            for path, data in items:
                data = accept(path, data)
                full = self._full(path)
                try:
                    try:
                        fd = self._open(full, os.O_EXCL)
                    except FileExistsError:
                        # A leftover of an earlier, failed attempt at this same write.
                        self._write_replacing(path, data)
                        continue
                    opened.append((fd, full, path))
                    _write_all(fd, data)
                except Error:
                    raise
                except Exception as e:  # noqa: BLE001
                    raise operation_failed(self.root_uri, "write", path, e) from e
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

    def _directories_to_sync(self, fulls: list[str]) -> list[str]:
        """The directories whose fsync makes the names of just-written files durable
        (LF4): each file's directory, and the parent of every directory created since
        the last call, deepest first."""
        with self._dirs_lock:
            created, self._created_dirs = self._created_dirs, set()
        directories = {os.path.dirname(full) for full in fulls}
        directories.update(os.path.dirname(d) for d in created)
        return sorted(directories, key=len, reverse=True)

    def _refuse_symlinks(self, full: str) -> None:
        """LF1: StorageError if a directory between the root and ``full`` is a symlink."""
        link = first_symlink(self._base, full, include_file=False)
        if link is not None:
            raise StorageError(
                f"refusing to write {self._uri_of(full)!r}: {self._uri_of(link)!r} is "
                "a symbolic link inside the lakehouse; writes never follow links (storage "
                "rule LF1): replace it with a directory"
            )

    def _make_parents(self, parent: str) -> None:
        """``os.makedirs``, remembering the directories it created (for LF4)."""
        missing = []
        directory = parent
        while len(directory) > len(self._base) and not os.path.isdir(directory):
            missing.append(directory)
            directory = os.path.dirname(directory)
        os.makedirs(parent, exist_ok=True)
        with self._dirs_lock:
            self._created_dirs.update(missing)

    def _temp(self, full: str) -> tuple[int, str]:
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

    def _write_replacing(self, path: str, data: bytes) -> None:
        """LF2: temp file, fsync, rename over the target."""
        full = self._full(path)
        fd, tmp = self._temp(full)
        try:
            try:
                self._write_fd(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, full)
        except BaseException:
            _unlink_quietly(tmp)
            raise

    def _open(self, full: str, flags: int) -> int:
        """``os.open`` for writing, creating parent directories lazily; never through a
        symlink (LF1)."""
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
                "lakehouse; writes never follow links (storage rule LF1): remove it"
            ) from None

    def _write_new(self, path: str, data: bytes) -> None:
        """LF2, ``new=True``: written in place under its fresh name and fsynced."""
        full = self._full(path)
        try:
            fd = self._open(full, os.O_EXCL)
        except FileExistsError:
            # A leftover of an earlier, failed attempt at this same write: replace it.
            self._write_replacing(path, data)
            return
        try:
            try:
                self._write_fd(fd, data)
            finally:
                os.close(fd)
        except BaseException:
            _unlink_quietly(full)
            raise

    def _write_in_place(self, path: str, data: bytes) -> None:
        """LF2, ``durable=False``: overwritten in place, no fsync."""
        fd = self._open(self._full(path), 0)
        if os.fstat(fd).st_nlink != 1:
            # Hard-linked (a copy made with links shares it): never edit it in place.
            os.close(fd)
            self._write_replacing(path, data)
            return
        try:
            view, offset = memoryview(data), 0
            while offset < len(data):
                offset += os.pwrite(fd, view[offset:], offset)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)

    def prepare_exclusive(self, path: str, data: bytes) -> PreparedCreate:
        """LF3 up to the link: the data in an unnamed file where possible, else in a temp
        file, fsynced."""
        full = self._full(path)
        if self.anonymous_files:
            prepared = self._prepare_anonymous(path, data, full)
            if prepared is not None:
                return prepared
        return self._prepare_named(path, data, full)

    def _prepare_named(self, path: str, data: bytes, full: str) -> _PreparedFile:
        """A temp file beside the target, written and fsynced."""
        fd, tmp = self._temp(full)
        prepared = _PreparedFile(path, data, full, tmp=tmp)
        try:
            try:
                self._write_fd(fd, data)
            finally:
                os.close(fd)
        except BaseException:
            prepared.discard()
            raise
        return prepared

    def _prepare_anonymous(self, path: str, data: bytes, full: str) -> _PreparedFile | None:
        """The data in an unnamed file in the target directory (``O_TMPFILE``, Linux),
        fsynced: no temp directory entry to create and remove, and nothing left behind
        if the process dies. None if this filesystem or kernel cannot do it (the caller
        falls back, and this backend stops trying)."""
        parent = os.path.dirname(full)
        self._refuse_symlinks(full)
        try:
            dir_fd = os.open(parent, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC | _O_NOFOLLOW)
        except FileNotFoundError:
            return None  # the temp-file path creates missing parents
        try:
            fd = os.open(".", os.O_TMPFILE | os.O_WRONLY | _O_CLOEXEC, 0o666, dir_fd=dir_fd)
        except OSError as e:
            os.close(dir_fd)
            if e.errno in _NO_TMPFILE_ERRNOS:
                self.anonymous_files = False
                return None
            raise
        prepared = _PreparedFile(path, data, full, fd=fd, dir_fd=dir_fd)
        try:
            self._write_fd(fd, data)
        except BaseException:
            prepared.discard()
            raise
        return prepared

    def publish(self, prepared: PreparedCreate) -> bool:
        """LF3 from the link on: the prepared file gets its name, unless the name is
        taken, and the directory is fsynced."""
        assert isinstance(prepared, _PreparedFile)
        full = prepared.full
        if prepared.fd is not None:
            try:
                # An absolute source ignores src_dir_fd, but passing one makes Python
                # call linkat(AT_SYMLINK_FOLLOW), which links the file the magic /proc
                # link stands for (plain link() would refuse it).
                os.link(
                    f"/proc/self/fd/{prepared.fd}", os.path.basename(full),
                    src_dir_fd=prepared.dir_fd, dst_dir_fd=prepared.dir_fd,
                )
            except FileExistsError:
                return False
            except OSError as e:
                if e.errno not in _NO_TMPFILE_ERRNOS:
                    raise
                self.anonymous_files = False  # no /proc: publish through a temp name
                with self._prepare_named(prepared.path, prepared.data, full) as named:
                    return self.publish(named)
            os.fsync(prepared.dir_fd)
            return True
        try:
            os.link(prepared.tmp, full)
        except FileExistsError:
            return False
        _fsync_dir(os.path.dirname(full))
        return True

    # --- deletes --------------------------------------------------------------------

    def delete(self, path: str) -> None:
        """``os.unlink``; a missing file is fine."""
        try:
            os.unlink(self._full(path))
        except (FileNotFoundError, NotADirectoryError):
            pass


class _PreparedFile(PreparedCreate):
    """A root ready to be linked (LF3): an open unnamed file (``fd``, in the directory
    ``dir_fd``) or a temp file (``tmp``), both already fsynced."""

    def __init__(
        self, path: str, data: bytes, full: str, *,
        fd: int | None = None, dir_fd: int | None = None, tmp: str | None = None,
    ) -> None:
        super().__init__(path, data)
        self.full, self.fd, self.dir_fd, self.tmp = full, fd, dir_fd, tmp

    def release(self) -> None:
        for fd in (self.fd, self.dir_fd):
            if fd is not None:
                os.close(fd)
        if self.tmp is not None:
            _unlink_quietly(self.tmp)


def first_symlink(
    base: str, full: str, *, include_file: bool = True, checked: set[str] | None = None
) -> str | None:
    """The first symbolic link on the way from the directory ``base`` down to ``full``
    (absolute paths, ``full`` lexically under ``base``): each directory between them,
    from ``base`` down, then ``full`` itself when ``include_file``; ``base`` is not
    checked (the user chose it). None if there is none; a component that does not exist
    ends the walk with None (nothing below it exists; a reader then finds the file
    missing, a writer creates real directories). ``checked``: directories already found
    not to be links (skipped; those found now are added). One ``lstat`` per component
    (LF1 for writes, iceberg.tables M7 for reads)."""
    directory = os.path.dirname(full)
    pending = []
    while len(directory) > len(base) and (checked is None or directory not in checked):
        pending.append(directory)
        directory = os.path.dirname(directory)
    pending.reverse()  # from the root down
    if include_file and len(full) > len(base):
        pending.append(full)
    for component in pending:
        try:
            mode = os.lstat(component).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(mode):
            return component
        if checked is not None and component is not full:
            checked.add(component)
    return None


def symlink_within(location: str, root_uri: str, checked: set[str] | None = None) -> str | None:
    """For a local ``location`` lexically inside the local directory ``root_uri`` (both
    as iceberg/storage locations, any spelling of U1): the ``file://`` URI of the first
    symbolic link between the root and the file, the file itself included
    (:func:`first_symlink`); None when there is none, or when either is not local or
    the location lies elsewhere (other rules judge those). A location spelled with
    ``..``, ``.`` or ``//`` is walked both in its canonical form (what DuckDB is given)
    and as written (what PyIceberg opens: ``<table>/data/link/../f`` goes through
    ``link``). ``checked``: as for :func:`first_symlink` (directories found clean by
    earlier calls of one reader, e.g. one scan's planning)."""
    base = local_file_path(root_uri)
    full = local_file_path(location)
    if base is None or full is None or not full.startswith(base.rstrip("/") + "/"):
        return None
    base = base.rstrip("/") or "/"
    link = first_symlink(base, full, checked=checked)
    written = local_path_as_written(location)
    if link is None and written is not None and written != full:
        link = first_symlink(base, written.rstrip("/"), checked=checked)
    return None if link is None else "file://" + link


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


__all__ = ["LocalBackend", "first_symlink", "symlink_within"]
