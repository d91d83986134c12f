"""Storage locations of a Trinity Lakehouse (SPEC 2): file names and root URIs.

Invariants:

* Every path produced here is relative to the root URI: non-empty, no leading "/",
  no "", "." or ".." component, no NUL (what ``check_relative_path`` accepts).
* Root node file of version v (0 <= v <= MAX_VERSION = 2**32-1):
  ``"_" + format(v, "032b")[::-1] + ".arrow"``. ``parse_root_node_path`` is its exact
  inverse and returns None for every other string.
* Generated names (node, namespace and table definitions) are unique by a uuid4 and
  never parsed by readers. Object names inside them are *sanitised*: every character
  that is not ``str.isalnum()`` and not one of ``._-`` becomes ``_``, and each name part
  is cut to at most NAME_PART_MAX_BYTES UTF-8 bytes. So no "/", glob or escape
  character from a user's name reaches storage, and no component exceeds 255 bytes
  (the longest generated path is MAX_GENERATED_PATH_BYTES bytes).
* Path optimisation (SPEC 2) is a pure function of the original path text.
* ``parse_format_path`` recognises exactly the names the format produces (rule FP1): a
  root node file, a lakehouse definition, or an optimised path with exactly four "/"
  whose 20-bit prefix is the hash of the rest and whose rest is
  ``node-<uuid>.arrow``, ``namespace-<ns>-<uuid>.binpb`` or
  ``table-<table>-<ns>-<uuid>.binpb`` (name parts without "/"). A user's file that
  only looks like one (``.../00000000-table-events/part-0001.binpb``) is not one.
  Every module that must tell format files from others (expiration, verify, Spark)
  asks it, or the pieces it is made of (``split_optimized_path``, ``hash_prefix_bits``,
  ``ORIGINAL_NAME_SHAPES``) when it must say which part is wrong.
* Every optimised path lies under one of ``PREFIX_DIRECTORIES``, the 256 directories
  ``bbbb/bbbb`` of its first two levels.
* The lakehouse's *reserved area* (rule FP2, :func:`in_reserved_area`): every path whose
  first component starts with "_" or "." (roots, the hint, lakehouse definitions,
  ``_tl_sync/``, temp files) or is four binary digits (the optimised paths of nodes and
  definitions). Iceberg files a user's table property places (``write.metadata.path``,
  SPEC 8) never go there.
* A root URI is *qualified*: normalising its path part as POSIX (``.``, ``..``,
  ``//``) would not change it, apart from one trailing "/". ``qualify_root_uri``
  returns it ending with "/". Resolving relative local paths is left to storage.

Pure module: no I/O (uuid4 reads the OS random source, which is not storage I/O).
"""

from __future__ import annotations

import posixpath
import re
import uuid
from dataclasses import dataclass

import mmh3

from trinitylake_dbapi.errors import InvalidLocationError

MAX_VERSION = 2**32 - 1
LATEST_HINT_PATH = "_latest_hint.txt"

_ROOT_PREFIX = "_"
_NODE_SUFFIX = ".arrow"
_ROOT_NODE_RE = re.compile(r"_([01]{32})\.arrow")
_LAKEHOUSE_DEF_PREFIX = "_lakehouse_def_"
_DEF_SUFFIX = ".binpb"
_UUID_RE = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_LAKEHOUSE_DEF_RE = re.compile(r"_lakehouse_def_" + _UUID_RE + r"\.binpb")

#: Longest UTF-8 byte length of one object name inside a generated file name.
NAME_PART_MAX_BYTES = 64
_SAFE_PUNCTUATION = frozenset("._-")
# Optimised prefix "bbbb/bbbb/bbbb/bbbbbbbb-" is 24 bytes; a table definition original
# is "table-" + table + "-" + ns + "-" + uuid(36) + ".binpb".
_OPTIMIZED_PREFIX_BYTES = 24
#: Longest path (UTF-8 bytes) that new_*_path() can return (a table definition's).
MAX_GENERATED_PATH_BYTES = (
    _OPTIMIZED_PREFIX_BYTES + len("table--") + 2 * NAME_PART_MAX_BYTES + len("-") + 36
    + len(_DEF_SUFFIX)
)  # 202


def _check_version(version: int) -> None:
    """A root version is an int in [0, MAX_VERSION]; anything else is a caller bug."""
    if isinstance(version, bool) or not isinstance(version, int):
        raise TypeError(f"version must be an int, not {type(version).__name__}")
    if not 0 <= version <= MAX_VERSION:
        raise ValueError(f"version {version} is outside 0..{MAX_VERSION} (32-bit root names)")


# --- root node files and the latest-version hint ------------------------------------


def root_node_path(version: int) -> str:
    """Name of the root node file of ``version``: "_" + reversed 32-bit binary + ".arrow".

    The bits are reversed (least significant first) so that consecutive versions spread
    over object-store key prefixes instead of sharing one hot prefix.
    """
    _check_version(version)
    return _ROOT_PREFIX + format(version, "032b")[::-1] + _NODE_SUFFIX


def parse_root_node_path(path: str) -> int | None:
    """The version whose root node file is exactly ``path``, or None if it is not one."""
    if not isinstance(path, str):
        return None
    m = _ROOT_NODE_RE.fullmatch(path)
    return int(m.group(1)[::-1], 2) if m else None


def encode_hint(version: int) -> bytes:
    """Content of ``_latest_hint.txt``: the version in ASCII decimal, e.g. b"100"."""
    _check_version(version)
    return str(version).encode("ascii")


def decode_hint(data: bytes) -> int | None:
    """Version stored in a hint file, or None if the content is not one.

    The hint is only a starting point for probing (SPEC 7), so garbage is not an error:
    empty, non-ASCII, non-decimal, negative or > MAX_VERSION content gives None.
    Surrounding ASCII whitespace (e.g. a trailing newline) is ignored.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"hint content must be bytes, not {type(data).__name__}")
    text = bytes(data).strip(b" \t\r\n\x0b\x0c")
    # At most 10 digits plus leading zeros; bound the length before int() parses it.
    if not text or len(text) > 32 or not all(0x30 <= b <= 0x39 for b in text):
        return None
    version = int(text)
    return version if version <= MAX_VERSION else None


# --- optimised and generated paths --------------------------------------------------


def optimize_path(original: str) -> str:
    """SPEC 2 path optimisation: a 20-bit hash prefix spreads files over directories.

    h = MurmurHash3 x86 32 (seed 0, unsigned) of the UTF-8 bytes of ``original``;
    b = its 32-character big-endian binary; result =
    ``b[0:4]/b[4:8]/b[8:12]/b[12:20]-`` + ``original`` with every "/" replaced by "-".
    """
    h = mmh3.hash(original.encode("utf-8"), 0, signed=False)
    b = format(h, "032b")
    return f"{b[0:4]}/{b[4:8]}/{b[8:12]}/{b[12:20]}-" + original.replace("/", "-")


def _safe_name_part(name: str) -> str:
    """A name made safe for every filesystem: [alnum . _ -] only, <= 64 UTF-8 bytes.

    Readers never parse generated names, so information may be lost here; the uuid
    that follows keeps the path unique.
    """
    out = []
    size = 0
    for c in name:
        c = c if (c.isalnum() or c in _SAFE_PUNCTUATION) else "_"
        n = len(c.encode("utf-8"))  # isalnum() is False for lone surrogates
        if size + n > NAME_PART_MAX_BYTES:
            break
        out.append(c)
        size += n
    return "".join(out)


def new_lakehouse_def_path() -> str:
    """A new, unique lakehouse definition file name (not optimised, SPEC 2)."""
    return f"{_LAKEHOUSE_DEF_PREFIX}{uuid.uuid4()}{_DEF_SUFFIX}"


def is_lakehouse_def_path(path: str) -> bool:
    """True if ``path`` is exactly a lakehouse definition file name.

    That is "_lakehouse_def_" + a uuid in 8-4-4-4-12 hex form (either case) + ".binpb".
    """
    return isinstance(path, str) and _LAKEHOUSE_DEF_RE.fullmatch(path) is not None


#: The shape of the original name inside an optimised path, by kind (FP1).
ORIGINAL_NAME_SHAPES = {
    "node": re.compile(r"node-" + _UUID_RE + r"\.arrow"),
    "namespace": re.compile(r"namespace-[^/]+-" + _UUID_RE + r"\.binpb", re.DOTALL),
    "table": re.compile(r"table-[^/]+-[^/]+-" + _UUID_RE + r"\.binpb", re.DOTALL),
}
#: The same shapes as a reader is told them.
ORIGINAL_NAME_FORMS = {
    "node": "node-<uuid4>.arrow",
    "namespace": "namespace-<ns>-<uuid4>.binpb",
    "table": "table-<table>-<ns>-<uuid4>.binpb",
}
_OPTIMIZED_RE = re.compile(r"([01]{4})/([01]{4})/([01]{4})/([01]{8})-([^/]+)", re.DOTALL)
#: The 256 directories of the first two levels of optimised paths (``bbbb/bbbb``): every
#: node and object definition file lives under one of them, so a listing can be split by
#: them without listing anything first.
PREFIX_DIRECTORIES: tuple[str, ...] = tuple(
    f"{format(a, '04b')}/{format(b, '04b')}" for a in range(16) for b in range(16)
)


def split_optimized_path(path: str) -> tuple[str, str] | None:
    """(the 20 prefix bits, the rest) of a path shaped ``bbbb/bbbb/bbbb/bbbbbbbb-rest``
    with no "/" in the rest, else None. Says nothing about whether the bits match."""
    m = _OPTIMIZED_RE.fullmatch(path) if isinstance(path, str) else None
    return None if m is None else ("".join(m.groups()[:4]), m.group(5))


def hash_prefix_bits(original: str) -> str:
    """The 20 bits ``optimize_path`` puts in front of ``original`` (lone surrogates, which
    a listing may show, are hashed as their surrogate-pass UTF-8 bytes)."""
    return format(mmh3.hash(original.encode("utf-8", "surrogatepass"), 0, signed=False), "032b")[:20]


def original_name_kind(original: str) -> str | None:
    """"node", "namespace" or "table" when ``original`` has that kind's shape (FP1)."""
    return next((k for k, shape in ORIGINAL_NAME_SHAPES.items() if shape.fullmatch(original)), None)


def claimed_name_kind(original: str) -> str | None:
    """"node", "namespace" or "table" when ``original`` starts as that kind's names do
    (``node-``, ...), whether or not the rest has the kind's shape: a name that claims
    to be a format file."""
    return next((k for k in ORIGINAL_NAME_SHAPES if original.startswith(k + "-")), None)


@dataclass(frozen=True)
class FormatPath:
    """What a format file is: ``kind`` is "root", "lakehouse_def", "node", "namespace"
    or "table"; ``version`` is set for a root."""

    kind: str
    version: int | None = None


def parse_format_path(path: str) -> FormatPath | None:
    """The format file ``path`` names, or None when the format never produces that name
    (rule FP1 in the module docstring)."""
    version = parse_root_node_path(path)
    if version is not None:
        return FormatPath("root", version)
    if is_lakehouse_def_path(path):
        return FormatPath("lakehouse_def")
    parts = split_optimized_path(path)
    if parts is None or parts[0] != hash_prefix_bits(parts[1]):
        return None
    kind = original_name_kind(parts[1])
    return None if kind is None else FormatPath(kind)


def new_node_path() -> str:
    """A new, unique, optimised path for a non-root node file."""
    return optimize_path(f"node-{uuid.uuid4()}{_NODE_SUFFIX}")


def new_namespace_def_path(namespace: str) -> str:
    """A new, unique, optimised path for a namespace definition file."""
    return optimize_path(f"namespace-{_safe_name_part(namespace)}-{uuid.uuid4()}{_DEF_SUFFIX}")


def new_table_def_path(namespace: str, table: str) -> str:
    """A new, unique, optimised path for a table definition file (table name first)."""
    return optimize_path(
        f"table-{_safe_name_part(table)}-{_safe_name_part(namespace)}-{uuid.uuid4()}{_DEF_SUFFIX}"
    )


#: The format property naming an Iceberg table's current metadata file, and the one it
#: replaced (SPEC 8; the keys of the format's reference implementation).
METADATA_LOCATION = "metadata_location"
PREVIOUS_METADATA_LOCATION = "previous_metadata_location"
#: Where managed tables' files go, under the warehouse location (SPEC 8).
TABLES_DIRECTORY = "tables"


def new_table_location(warehouse_uri: str, namespace: str, table: str) -> str:
    """A new, unique location for a managed table's files: ``<warehouse>/tables/<ns>/
    <table>-<uuid>`` (sanitised names). Unique, so that a table dropped and created again
    under the same name never shares a file with the old one (expiration reclaims those
    by reachability, SPEC 8)."""
    return (
        f"{warehouse_uri.rstrip('/')}/{TABLES_DIRECTORY}/{_safe_name_part(namespace)}/"
        f"{_safe_name_part(table)}-{uuid.uuid4().hex}"
    )


_RESERVED_FIRST_RE = re.compile(r"[_.].*|[01]{4}", re.DOTALL)


def in_reserved_area(relative: str) -> bool:
    """FP2: whether ``relative`` (a path under the root; "" is the root itself) is the
    root or lies in the lakehouse's reserved area."""
    first = relative.split("/", 1)[0]
    return not first or _RESERVED_FIRST_RE.fullmatch(first) is not None


# --- validation of relative paths and root URIs -------------------------------------


def check_relative_path(path: str) -> str:
    """Return ``path`` if it is a clean path relative to the root URI, else raise.

    Clean: a non-empty str, not starting with "/", no NUL, and no "", "." or ".."
    component (so no "//", no trailing "/", and it cannot escape the root).
    Stored pointers come from files a reader does not control, so storage checks them.
    """
    if not isinstance(path, str):
        raise InvalidLocationError(f"relative path {path!r} is not a string")
    if not path:
        raise InvalidLocationError("relative path '' is empty")
    if "\x00" in path:
        raise InvalidLocationError(f"relative path {path!r} contains a NUL character")
    if path.startswith("/"):
        raise InvalidLocationError(
            f"relative path {path!r} starts with '/'; paths must be relative to the root URI"
        )
    for part in path.split("/"):
        if part in ("", ".", ".."):
            shown = "an empty" if not part else f"a {part!r}"
            raise InvalidLocationError(
                f"relative path {path!r} has {shown} component; "
                "components may not be '', '.' or '..'"
            )
    return path


_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_SCHEME_WITHOUT_SLASHES_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")


def _unqualified(uri: str, why: str) -> InvalidLocationError:
    return InvalidLocationError(f"root URI {uri!r} is not qualified: {why}")


def path_has_dot_prefix(path: str) -> bool:
    """True for a relative local path written with a leading "./" before more text."""
    return path.startswith("./") and len(path) > 2 and path[2] != "/"


def qualify_root_uri(uri: str) -> str:
    """Check that a root URI is qualified (SPEC 2) and return it ending with "/".

    Accepted forms: "scheme://netloc/path" (e.g. "s3://bucket/lake", "memory://lake",
    "file:///tmp/x") and plain local paths, absolute or relative ("/tmp/x", "lake"; a
    leading "./" is dropped, so "./lake" is "lake").
    The path part must already be POSIX-normal (``posixpath.normpath`` would leave it
    unchanged, ignoring one trailing "/"), so "s3://b/x/../y", "file:///a/./b" and
    "/a//b" are refused: two spellings of one lakehouse must not exist. Only the text
    is checked; resolving a relative local path is storage's job.
    """
    if not isinstance(uri, str):
        raise InvalidLocationError(f"root URI {uri!r} is not a string")
    if not uri:
        raise InvalidLocationError("root URI '' is empty")
    for i, c in enumerate(uri):
        if ord(c) < 0x20 or ord(c) == 0x7F:
            raise _unqualified(uri, f"control character {c!r} at character {i}")
    if uri != uri.strip():
        raise _unqualified(uri, "leading or trailing whitespace")

    m = _SCHEME_RE.match(uri)
    if m:
        rest = uri[m.end():]
        slash = rest.find("/")
        netloc, path = (rest, "") if slash < 0 else (rest[:slash], rest[slash:])
        if not netloc and not path:
            raise _unqualified(uri, "it names no location after '://'")
        if netloc in (".", ".."):
            raise _unqualified(uri, f"location {netloc!r} is a relative path component")
    else:
        if _SCHEME_WITHOUT_SLASHES_RE.match(uri):
            raise _unqualified(
                uri, "it looks like a URI without '//' after the scheme (use 'scheme://...')"
            )
        # "./lake" is how a shell names a directory here; it is the same place as "lake".
        # Only this one leading form is forgiven: "a/./b" and "./" alone still refuse.
        while path_has_dot_prefix(uri):
            uri = uri[2:]
        path = uri

    if path:
        body = path[:-1] if path.endswith("/") and path != "/" else path
        if "//" in path:
            raise _unqualified(uri, "'//' (an empty path component); normalising would change it")
        parts = body.split("/")
        if "." in parts:
            raise _unqualified(uri, "'.' path component; normalising would change it")
        normal = posixpath.normpath(body)
        if normal != body:
            raise _unqualified(
                uri, f"'..' path component; normalising would change the path to {normal!r}"
            )
    return uri if uri.endswith("/") else uri + "/"


__all__ = [
    "MAX_VERSION",
    "LATEST_HINT_PATH",
    "NAME_PART_MAX_BYTES",
    "MAX_GENERATED_PATH_BYTES",
    "root_node_path",
    "parse_root_node_path",
    "encode_hint",
    "decode_hint",
    "optimize_path",
    "PREFIX_DIRECTORIES",
    "ORIGINAL_NAME_SHAPES",
    "ORIGINAL_NAME_FORMS",
    "split_optimized_path",
    "hash_prefix_bits",
    "original_name_kind",
    "claimed_name_kind",
    "parse_format_path",
    "FormatPath",
    "new_lakehouse_def_path",
    "is_lakehouse_def_path",
    "new_node_path",
    "new_namespace_def_path",
    "new_table_def_path",
    "check_relative_path",
    "qualify_root_uri",
]
