"""Object stores through fsspec: any fsspec filesystem, and S3 (s3fs) in particular.

``FsspecBackend`` serves any URI scheme with an fsspec filesystem; ``S3Backend`` adds
what S3 needs and allows. The rules this module keeps:

* O1. Paths are never glob-expanded: only fsspec calls that take one literal path
  (``cat_file``, ``pipe_file``, ``rm_file``, ``info``, ``find``) are used, so a file
  named ``a[1]*?.arrow`` is just a name.
* O2. ``create_exclusive`` (``publish``) is a conditional PUT (``pipe_file(mode="create")``, on S3
  ``If-None-Match: *``), used only on a filesystem that implements it itself (the fsspec
  base classes check, then write, which races) and only after a one-time probe per
  backend that the store refuses a second conditional PUT of one key (a store that
  ignores the condition would let two commits both win; ``prepare_exclusive`` does the
  check and the probe, so that they never come between a caller's last check and its
  PUT). Of racing creators exactly one succeeds; an object store never shows a
  partial object.
* O3. S3's 409 ConditionalRequestConflict (overlapping conditional writes to one key)
  is retried a bounded number of times (about 1.3 s in all). A refused PUT whose object
  holds exactly our bytes was an earlier attempt of the same call (its reply was lost
  and botocore or s3fs retried it): that call is the creator.
* O4. On S3 a read is one GET (no HEAD first), ``exists`` is one HEAD, and deleting
  many files is one DeleteObjects request per 1000 keys.
"""

from __future__ import annotations

import inspect
import random
import threading
import time
import uuid
from typing import Any

import fsspec

from trinitylake_dbapi.errors import (
    Error,
    InvalidLocationError,
    NotSupportedError,
    StorageError,
)

from .base import RESERVED_PREFIX, Backend, PreparedCreate, filesystem_protocols, operation_failed
from .schemes import scheme_of

# O3: retries of a 409 ConditionalRequestConflict. Bounded: about 1.3 s in total at most.
_CONFLICT_RETRIES = 8
_CONFLICT_BACKOFF_S = 0.01

# O4: S3 DeleteObjects takes at most 1000 keys per request.
_S3_DELETE_BATCH = 1000


class FsspecBackend(Backend):
    """Files of one root on an fsspec filesystem (rules O1-O3), as its scheme's row
    (storage.schemes SC1) says: the filesystem's class and default options, and the
    error mapping of its conditional write."""

    def __init__(self, root_uri: str, protocol: str, fs: fsspec.AbstractFileSystem) -> None:
        self.root_uri = root_uri
        self.protocol = protocol
        self.scheme = scheme_of(protocol)
        self.fs = fs
        self._base = fs._strip_protocol(root_uri).rstrip("/")
        self._probe_lock = threading.Lock()
        self._probed = False

    @classmethod
    def drives(cls, fs: fsspec.AbstractFileSystem) -> bool:
        """True if this class can drive ``fs``. A subclass that relies on one fsspec
        implementation says so here; a filesystem of another class, though registered
        for the same scheme, is then served by plain ``FsspecBackend``."""
        return True

    @classmethod
    def open(
        cls,
        root_uri: str,
        protocol: str,
        storage_options: dict[str, Any] | None,
        filesystem: fsspec.AbstractFileSystem | None,
    ) -> FsspecBackend:
        """Open the scheme's fsspec filesystem with ``storage_options`` (over the row's
        default options), or check that ``filesystem`` serves ``protocol``."""
        if filesystem is None:
            row = scheme_of(protocol)
            try:
                filesystem = row.open_filesystem(protocol, storage_options)
            except ImportError as e:
                extra = f"; install 'trinitylake-dbapi[{row.extra}]'" if row.extra else ""
                raise NotSupportedError(
                    f"protocol {protocol!r} of root URI {root_uri!r} needs a "
                    f"package that is not installed ({e}){extra}"
                ) from e
            except ValueError as e:
                raise NotSupportedError(
                    f"protocol {protocol!r} of root URI {root_uri!r} is not "
                    f"supported by fsspec: {e}"
                ) from e
            except Exception as e:  # noqa: BLE001 - a filesystem's own setup failure
                raise StorageError(
                    f"cannot open the filesystem of root URI {root_uri!r}: "
                    f"{type(e).__name__}: {e}"
                ) from e
        elif storage_options:
            raise ValueError("pass either storage_options or filesystem, not both")
        elif protocol not in filesystem_protocols(filesystem):
            raise InvalidLocationError(
                f"root URI {root_uri!r} has protocol {protocol!r} but the "
                f"filesystem given is {type(filesystem).__name__} "
                f"(protocols {sorted(filesystem_protocols(filesystem))})"
            )
        backend = cls if cls.drives(filesystem) else FsspecBackend
        return backend(root_uri, protocol, filesystem)

    def _full(self, path: str) -> str:
        """The path handed to fsspec for a checked relative path."""
        return self._base + "/" + path

    # --- reads ----------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        """``cat_file`` of the whole object."""
        return bytes(self.fs.cat_file(self._full(path)))

    def exists(self, path: str) -> bool:
        """``info`` says it is a file."""
        return self.fs.info(self._full(path)).get("type") == "file"

    def modified_millis(self, path: str) -> int | None:
        """From ``info``: the first of LastModified (S3), mtime, created that is set."""
        info = self.fs.info(self._full(path))
        for name in ("LastModified", "mtime", "created"):
            value = info.get(name)
            if value is None:
                continue
            if hasattr(value, "timestamp"):
                return int(value.timestamp() * 1000)
            if isinstance(value, (int, float)):
                return int(float(value) * 1000)
        return None

    def list(self, directory: str, recursive: bool) -> list[str]:
        """``find`` below the directory (one level deep unless ``recursive``)."""
        top = self._full(directory) if directory else self._base
        want = top + "/"
        strip = len(self._base) + 1
        names = self.fs.find(top, withdirs=False, **({} if recursive else {"maxdepth": 1}))
        return [n[strip:] for n in names if n.startswith(want) and not n.endswith("/")]

    # --- writes ---------------------------------------------------------------------

    def write(self, path: str, data: bytes, *, new: bool, durable: bool) -> None:
        """One PUT (``pipe_file``): an object appears whole or not at all, so neither
        flag changes anything here."""
        self.fs.pipe_file(self._full(path), data)

    def prepare_exclusive(self, path: str, data: bytes) -> PreparedCreate:
        """O2, what can come first (nothing is visible before the PUT): the check that
        the filesystem has a conditional write, and the probe, once per backend."""
        if not self.has_conditional_put():
            raise NotSupportedError(
                f"exclusive create is not supported for protocol {self.protocol!r} "
                f"({type(self.fs).__name__} has no atomic pipe_file(mode='create')); "
                f"root URI {self.root_uri!r}"
            )
        self._probe_conditional_put()
        return PreparedCreate(path, data)

    def publish(self, prepared: PreparedCreate) -> bool:
        """O2: one conditional PUT (O3: with its retries and its reading back)."""
        return self._create_conditional(prepared.path, prepared.data)

    def has_conditional_put(self) -> bool:
        """True if the filesystem implements ``pipe_file(mode="create")`` itself.

        The fsspec base classes implement it as check-then-write, which races; only a
        filesystem that overrides it (and is probed before use) is trusted.
        """
        from fsspec.asyn import AsyncFileSystem
        from fsspec.spec import AbstractFileSystem

        for name, base in (("pipe_file", AbstractFileSystem), ("_pipe_file", AsyncFileSystem)):
            impl = getattr(type(self.fs), name, None)
            if impl is None or impl is getattr(base, name, None):
                continue
            try:
                if "mode" in inspect.signature(impl).parameters:
                    return True
            except (TypeError, ValueError):
                continue
        return False

    def _put_if_absent(self, full: str, data: bytes) -> bool:
        """One conditional PUT with bounded retries on 409 (O3); False if the key exists."""
        for attempt in range(_CONFLICT_RETRIES + 1):
            try:
                self.fs.pipe_file(full, data, mode="create")
                return True
            except FileExistsError:
                return False
            except OSError as e:
                code = _error_code(e)
                if code in self.scheme.taken_codes:
                    return False
                if code not in self.scheme.conflict_codes or attempt == _CONFLICT_RETRIES:
                    raise
            delay = _CONFLICT_BACKOFF_S * (2 ** min(attempt, 5))
            time.sleep(delay * (0.5 + random.random()))
        raise AssertionError("unreachable")  # pragma: no cover

    def _create_conditional(self, path: str, data: bytes) -> bool:
        full = self._full(path)
        if self._put_if_absent(full, data):
            return True
        # Refused. If the object is byte-identical to ours, an earlier attempt of this
        # same call (a retry inside botocore/s3fs) created it (O3).
        try:
            existing = self.read(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except Error:
            raise
        except Exception as e:  # noqa: BLE001 - translated, never leaked
            raise operation_failed(self.root_uri, "read", path, e) from e
        return existing == data

    def _probe_conditional_put(self) -> None:
        """Once per backend: check the store refuses a second conditional PUT of a key."""
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
        """``rm_file``; a missing file is fine."""
        try:
            self.fs.rm_file(self._full(path))
        except (FileNotFoundError, NotADirectoryError):
            pass


class S3Backend(FsspecBackend):
    """S3 through s3fs (rules O1-O4): conditional PUT is native, requests are few."""

    @classmethod
    def drives(cls, fs: fsspec.AbstractFileSystem) -> bool:
        """Only s3fs's filesystem (its ``call_s3`` and ``split_path`` are used)."""
        try:
            from s3fs import S3FileSystem
        except ImportError:  # pragma: no cover - s3fs is optional
            return False
        return isinstance(fs, S3FileSystem)

    def read(self, path: str) -> bytes:
        """O4: ``max_concurrency=1``: one GET, without the HEAD s3fs sends otherwise."""
        return bytes(self.fs.cat_file(self._full(path), max_concurrency=1))

    def exists(self, path: str) -> bool:
        """O4: one HEAD of the key (a 404 is s3fs's FileNotFoundError)."""
        bucket, key, _ = self.fs.split_path(self._full(path))
        self.fs.call_s3("head_object", Bucket=bucket, Key=key)
        return True

    def has_conditional_put(self) -> bool:
        """S3 takes If-None-Match: * (the probe still checks the store honours it)."""
        return True

    def delete_many(self, paths: list[str]) -> None:
        """O4: one DeleteObjects per 1000 distinct keys; a failure names the first key
        of its request."""
        unique = list(dict.fromkeys(paths))
        for i in range(0, len(unique), _S3_DELETE_BATCH):
            chunk = unique[i : i + _S3_DELETE_BATCH]
            try:
                self._bulk_delete(chunk)
            except Error:
                raise
            except Exception as e:  # noqa: BLE001
                raise operation_failed(self.root_uri, "bulk delete", chunk[0], e) from e

    def _bulk_delete(self, chunk: list[str]) -> None:
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


def _error_code(exc: BaseException) -> str | None:
    """The store's error code in ``exc``'s cause chain, matched against a scheme's
    ``taken_codes`` and ``conflict_codes`` (SC1): a botocore ClientError's Error.Code
    (s3fs turns a 409 ConditionalRequestConflict into a generic OSError, O3), an Azure
    error's ``error_code``, else an HTTP status the error carries; the text
    "ConditionalRequestConflict" in a message that lost its cause."""
    seen = 0
    e: BaseException | None = exc
    while e is not None and seen < 10:
        response = getattr(e, "response", None)
        if isinstance(response, dict):
            code = response.get("Error", {}).get("Code")
            if code:
                return str(code)
        code = getattr(e, "error_code", None)
        if code:
            return str(code)
        status = getattr(e, "status_code", None) or getattr(e, "code", None)
        if isinstance(status, int):
            return str(status)
        e = e.__cause__ or e.__context__
        seen += 1
    if "ConditionalRequestConflict" in str(exc):
        return "ConditionalRequestConflict"
    return None


__all__ = ["FsspecBackend", "S3Backend"]
