"""One canonical form of every file location, and whether one lies within another.

Iceberg metadata names files by absolute location, and writers spell the same file in
many ways: ``/abs/x`` (PyIceberg), ``file:/abs/x`` (Spark and Hadoop), ``file:///abs/x``,
with ``//``, ``.`` or ``..`` segments. Every comparison of
locations (expiration's reachability, verify, export, the readers' confinement of a
managed table's files) goes through :func:`canonical_location` here, so that the same
file is never seen as two (expiration would delete a live file) and two files are never
seen as one by a check that confines reads. Pure string work, plus ``os.getcwd`` for a
relative local path; nothing is read, and fsspec is not imported.

Rules:

  U1 Local locations (no scheme, ``file:``, ``file://`` with an empty host)
     canonicalise to ``file:///<path>``: the path made absolute (against the current
     directory, as a local reader opens it), ``.`` segments and repeated ``/`` removed,
     ``..`` resolved lexically (``/..`` is ``/``, as the OS has it), no trailing ``/``
     (except the root itself). A ``file://`` URI with a host (``localhost`` included) is
     not local here: PyIceberg opens ``file://localhost/x`` as the relative path
     ``localhost/x`` and DuckDB as ``/x``, so it names no one file; it keeps its host
     (``file://localhost/x``) and so lies outside every local directory.
  U2 Other locations canonicalise to ``<scheme>://<bucket or host>/<key>``: the scheme in
     lower case, Hadoop's aliases of one store mapped to one name (``s3a``, ``s3n`` ->
     ``s3``; ``gcs`` -> ``gs``; ``abfs``, ``abfss`` -> ``az``), an Azure container
     written as ``container@<account host>`` reduced to the container (adlfs opens it
     so: the account is the filesystem's, whatever the host says), and
     ``<bucket>/<key>`` normalised as one path as in U1
     (so a ``..`` that climbs above the bucket leaves it, as SPEC 2 says such a URI is
     read: ``s3://b/../c/x`` is ``s3://c/x``). Object stores would keep ``a//b`` and
     ``a/b`` as two keys; this library never writes such keys, and treating them as one
     errs towards keeping a file, never towards reading or deleting the wrong one.
  U3 Nothing is decoded: ``%20``, ``?`` and ``#`` are characters of the name (PyIceberg
     and DuckDB open them as written). Canonicalising a canonical location returns it
     unchanged; two locations name the same file exactly when their canonical forms are
     equal (for the spellings above; symbolic links are not resolved).
  U4 :func:`location_within` says whether a location lies strictly inside a directory
     location by comparing canonical forms segment-wise (``/t`` never contains
     ``/t2/x``), after U1's resolution of ``..``: ``<table>/../other`` is outside.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re

__all__ = ["canonical_location", "location_within", "is_local_location", "local_file_path", "local_path_as_written"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(.*)\Z", re.DOTALL)
#: U2: names of one store under Hadoop's and other tools' schemes.
_ALIASES = {"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfs": "az", "abfss": "az"}
#: U2: schemes whose ``<container>@<account host>`` authority names the container.
_AZURE = "az"
#: Schemes that name local files (``local`` is fsspec's alias of ``file``).
_LOCAL = frozenset({"file", "local"})


def _split(location: str) -> tuple[str | None, str]:
    """(scheme in lower case or None, the rest after ``scheme:``). A one-letter
    "scheme" is not one (``c:/x`` is no URI this library writes)."""
    match = _SCHEME.match(location)
    if match is None or len(match.group(1)) < 2:
        return None, location
    return match.group(1).lower(), match.group(2)


def _normal_path(path: str) -> str:
    """An absolute POSIX path with ``.``, ``..`` and repeated ``/`` resolved lexically
    (U1); ``path`` must start with ``/``."""
    out = posixpath.normpath(path)
    if out.startswith("//"):  # normpath keeps exactly two leading slashes (POSIX)
        out = "/" + out.lstrip("/")
    return out


def _local(location: str) -> str | None:
    """The absolute local path a local location names (U1), else None."""
    path = _local_as_written(location)
    return None if path is None else _normal_path(path)


def _local_as_written(location: str) -> str | None:
    """The local path a local location names, made absolute but not normalised (its
    ``.``, ``..`` and ``//`` kept, as the OS walks it), else None."""
    scheme, rest = _split(location)
    if scheme is None:
        path = location
    elif scheme in _LOCAL:
        if rest.startswith("//"):
            host, slash, tail = rest[2:].partition("/")
            if host:
                return None
            path = slash + tail
        else:
            path = rest
    else:
        return None
    if not path.startswith("/"):
        path = os.path.join(os.getcwd(), path)
    return path


def _clean(path: str) -> bool:
    """True if normalising ``path`` (an absolute path, or a bucket and key) as U1 does
    would not change it: no empty, ``.`` or ``..`` segment, no trailing "/"."""
    return "//" not in path and "/." not in path and not path.startswith(".") and not path.endswith("/")


def canonical_location(location: str) -> str:
    """The one spelling of the file (or directory) ``location`` names (U1-U3)."""
    if location.startswith("file:///"):  # the spellings this library writes: ~1 us, not ~10
        if _clean(location[7:]):
            return location
    elif location.startswith("s3://"):
        if location[5:] and not location[5:].startswith("/") and _clean(location[5:]):
            return location
    local = _local(location)
    if local is not None:
        return "file://" + local
    scheme, rest = _split(location)
    assert scheme is not None  # every scheme-less location is local
    scheme = _ALIASES.get(scheme, scheme)
    if scheme == _AZURE and rest.startswith("//"):
        authority, slash, key = rest[2:].partition("/")
        rest = "//" + authority.partition("@")[0] + slash + key
    path = _normal_path("/" + rest.lstrip("/"))
    return f"{scheme}://{path[1:]}"


def is_local_location(location: str) -> bool:
    """True if ``location`` names a file of this machine's file system (U1)."""
    return _local(location) is not None


def local_file_path(location: str) -> str | None:
    """The normalised absolute path of a local location (U1), else None."""
    return _local(location)


def local_path_as_written(location: str) -> str | None:
    """The absolute path of a local location as the OS walks it when a reader opens it
    as written (``..`` after a symbolic link leads out of the link's target, not back
    up lexically), else None. For checks that must see every component the OS will."""
    return _local_as_written(location)


@functools.lru_cache(maxsize=1024)
def _directory_prefix(directory: str) -> str:
    """The canonical form of ``directory`` ending with "/" (asked for the same few
    directories, a table's or the root, over and over)."""
    outer = canonical_location(directory)
    return outer if outer.endswith("/") else outer + "/"


def location_within(location: str, directory: str) -> str | None:
    """The path of ``location`` relative to ``directory`` when it lies strictly inside
    it (U4: canonical forms compared segment by segment), else None."""
    inner = canonical_location(location)
    prefix = _directory_prefix(directory)
    if inner.startswith(prefix) and len(inner) > len(prefix):
        return inner[len(prefix):]
    return None
