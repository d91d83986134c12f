"""What every storage backend does, and what the facade and the backends share.

``Storage`` (the package's ``__init__``) is the facade: it checks paths, counts calls,
caches immutable files and turns failures into this library's errors. Behind it sits one
``Backend`` per root, chosen by URI scheme (``storage.BACKENDS``), which does the I/O of
one kind of store. The contract between the two:

* B1. A backend receives only relative paths the facade has already checked
  (``check_relative_path``); it resolves them under its root itself.
* B2. A backend raises the store's own exceptions: ``FileNotFoundError`` or
  ``NotADirectoryError`` for a file that is not there, anything else for a failure. The
  facade maps them, naming the operation and the file, except where a backend knows
  better which operation and file failed (a concurrent fsync, one request deleting
  many files): there it raises ``operation_failed``'s error itself, the same message
  the facade would write, or a ``StorageError`` / ``NotSupportedError`` of its own.
* B3. A backend never counts: every call the facade makes is counted there, exactly
  once. A backend's own extra requests (a probe, a retry, reading back after a refused
  create) are not storage calls.
* B4. Names whose last component starts with ``RESERVED_PREFIX`` belong to the backends'
  temporary and probe files; the facade hides them from listings.
* B5. An exclusive create is two calls. ``prepare_exclusive`` does all the work that can
  come before the file may become visible, and nothing visible (on local disk the data
  in an unnamed or temp file, fsynced; elsewhere the one-time checks of the store);
  ``publish`` then makes the file appear, whole, only if the name is free. The caller
  does what it must between the two (the commit protocol waits for its other files and
  checks its base there, transaction C1-C2, lakehouse D3): nothing of the storage
  layer ever calls back up. Whether published or discarded, the backend's hold on a
  prepared file (an open descriptor, a temp file) is released exactly once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Callable

from trinitylake_dbapi.errors import StorageError

if TYPE_CHECKING:
    import fsspec

#: Last-component prefix of the backends' own temporary and probe files (rule B4).
RESERVED_PREFIX = ".tl-"


def is_reserved_name(path: str) -> bool:
    """True for this library's own short-lived files (``.tl-tmp-*`` before a rename or
    link, ``.tl-probe-*`` of the S3 conditional-write check): never part of a lakehouse,
    left behind only by a process killed while writing one."""
    return path.rpartition("/")[2].startswith(RESERVED_PREFIX)


def as_bytes(data: Any) -> bytes:
    """``data`` as bytes (bytearray and memoryview are copied); TypeError for anything
    else, so a caller's mistake is not written as some object's repr."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"data must be bytes, not {type(data).__name__}")


def operation_failed(root_uri: str, op: str, path: str, exc: BaseException) -> StorageError:
    """The one wording of a failed storage operation: the operation, the file's URI and
    the original error (which the caller chains as ``__cause__``)."""
    return StorageError(f"{op} of {root_uri + path!r} failed: {type(exc).__name__}: {exc}")


def filesystem_protocols(fs: fsspec.AbstractFileSystem) -> set[str]:
    """The protocols an fsspec filesystem serves (its ``protocol`` is a str or a tuple)."""
    p = fs.protocol
    return {p} if isinstance(p, str) else set(p)


class PreparedCreate:
    """The first half of an exclusive create (rule B5): ``data`` made ready to appear,
    whole, under ``path``. ``Storage.publish`` makes it appear unless the name is taken;
    ``discard`` drops it; a ``with`` block discards it on the way out unless it was
    published. A backend that holds something for it (an open file, a temp file)
    subclasses this and frees it in ``release``. It belongs to one thread."""

    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.data = data
        #: Published or discarded: ``release`` has run, and it cannot be published.
        self.finished = False

    def release(self) -> None:
        """Free what the backend holds for this file; called once, by ``discard``."""

    def discard(self) -> None:
        """Drop the prepared file (a no-op once published or discarded)."""
        if not self.finished:
            self.finished = True
            self.release()

    def __enter__(self) -> PreparedCreate:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.discard()


class Backend(ABC):
    """The I/O of one kind of store under one root URI (rules B1-B5 above).

    A subclass is listed in ``storage.BACKENDS`` under the URI schemes it serves; the
    facade builds it with ``open``. Every method takes checked relative paths.
    """

    #: The qualified root URI ("file:///abs/", "s3://bucket/lake/"), ending with "/".
    root_uri: str
    #: The fsspec filesystem doing the I/O, or None where the backend uses the OS itself.
    fs: fsspec.AbstractFileSystem | None

    @classmethod
    @abstractmethod
    def open(
        cls,
        root_uri: str,
        protocol: str,
        storage_options: dict[str, Any] | None,
        filesystem: fsspec.AbstractFileSystem | None,
    ) -> Backend:
        """The backend of a qualified root URI: from ``storage_options`` or the
        ``filesystem`` the caller passed (not both). Raises ``InvalidLocationError``,
        ``NotSupportedError`` or ``StorageError`` if the store cannot be used."""

    # --- reads ----------------------------------------------------------------------

    @abstractmethod
    def read(self, path: str) -> bytes:
        """The whole content of a file."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """True if ``path`` is a file (a directory or a key prefix is not)."""

    @abstractmethod
    def modified_millis(self, path: str) -> int | None:
        """Last modification in ms since the epoch; None if the store does not say."""

    @abstractmethod
    def list(self, directory: str, recursive: bool) -> list[str]:
        """Relative paths of the files under ``directory`` ("" is the root), in any
        order, reserved names included; [] if there is no such directory."""

    # --- writes ---------------------------------------------------------------------

    @abstractmethod
    def write(self, path: str, data: bytes, *, new: bool, durable: bool) -> None:
        """Create or overwrite a file, creating parents as needed (the flags are the
        facade's ``write``'s: hints a backend may use to write more cheaply)."""

    def write_many(
        self,
        items: list[tuple[str, bytes]],
        *,
        new: bool,
        write: Callable[..., None],
        accept: Callable[[str, Any], bytes],
    ) -> None:
        """Write several files. ``write`` is the facade's own ``write`` (it checks the
        path, counts, writes through this backend and maps failures); ``accept`` does
        only the first two and returns the bytes, for a backend that writes a batch its
        own way. This default writes the files one after another with ``write``."""
        for path, data in items:
            write(path, data, new=new)

    def run_in_background(self, call: Callable[[], None]) -> Callable[[], None] | None:
        """Start ``call`` on a worker thread and return a function that waits for it and
        raises its failure; None (the default) where the caller gains nothing from
        overlapping its work with this backend's writes, so the facade runs it at once."""
        return None

    def prepare_exclusive(self, path: str, data: bytes) -> PreparedCreate:
        """The first half of an exclusive create of ``path`` (rule B5): the work that can
        come before the file may become visible, none of it visible. This default has
        nothing to do."""
        return PreparedCreate(path, data)

    @abstractmethod
    def publish(self, prepared: PreparedCreate) -> bool:
        """The second half: create ``prepared.path`` with ``prepared.data`` only if it
        does not exist, atomically; True if this call created it. The facade releases
        ``prepared`` afterwards, whatever happened."""

    # --- deletes --------------------------------------------------------------------

    @abstractmethod
    def delete(self, path: str) -> None:
        """Delete a file; a missing file is not an error."""

    def delete_many(self, paths: list[str]) -> None:
        """Delete files (missing ones are fine); a failure names its file (rule B2).
        This default deletes them one by one."""
        for p in paths:
            try:
                self.delete(p)
            except Exception as e:  # noqa: BLE001 - translated, never leaked
                raise operation_failed(self.root_uri, "delete", p, e) from e
