"""Object keys of the TrinityLake tree (SPEC 3): names -> sortable key strings and back.

Invariants (every function below relies on them; the tests check each one):

* A valid object name is a non-empty ``str`` that encodes to UTF-8 (no lone
  surrogates), contains no code point U+0000..U+0020 and no U+007F, and is at most the
  lakehouse's limit for its kind **in UTF-8 bytes**. Because every byte of a valid
  name's UTF-8 form is > 0x20, right-padding with spaces (0x20) keeps name order.
* ``enc(name)`` is the name right-padded with spaces to exactly ``max_bytes`` UTF-8
  bytes (its ``len()`` in characters may be smaller for multi-byte names).
* Namespace key = ``"B==="`` + enc(ns); table key = ``"C==="`` + enc(ns) + enc(table).
  Keys compare as Python ``str`` (code point order), which for valid strings equals
  UTF-8 byte order, so: key order == (schema id, namespace, table) order of the names'
  UTF-8 bytes; every namespace key sorts before every table key; the table keys of one
  namespace are contiguous and exactly those starting with ``"C===" + enc(ns)``.
* Every key has exactly one decoding and every decoding exactly one key
  (``KeyCodec.decode`` refuses anything ``KeyCodec`` would not produce).

Names this library writes (rule N2; SPEC 3 lets a writer be stricter than a reader):
``validate_new_name`` accepts a name only when ``validate_name`` does and it is in
Unicode normalization form NFC and has no character of the categories Zs, Zl, Zp
(spaces and separators, U+00A0 and U+3000 included), Cc (controls) or Cf (format
characters such as U+200B, U+200D, U+FEFF and the bidirectional marks). So two names
that look the same are the same name, and no name hides characters. Namespace, table,
column, struct field and snapshot names are checked this way when created or renamed;
names already stored are read as they are. Columns, struct fields and snapshot names
have no limit of their own in the format: this library caps them at
MAX_COLUMN_NAME_BYTES and MAX_SNAPSHOT_NAME_BYTES UTF-8 bytes.

System keys (``lakehouse_def``, ...) live in a node's system rows and are never sorted
with object keys; they start with a lower-case letter, never with a schema ID.

Pure module: no I/O, no state beyond the constants below.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal, Sequence

from trinitylake_dbapi.errors import InvalidNameError

# --- schema IDs (SPEC 3) ----------------------------------------------------------

LAKEHOUSE_SCHEMA_ID = 0
NAMESPACE_SCHEMA_ID = 1
TABLE_SCHEMA_ID = 2

# --- system keys (SPEC 3) ---------------------------------------------------------

LAKEHOUSE_DEF = "lakehouse_def"
PREVIOUS_ROOT = "previous_root"
ROLLBACK_FROM_ROOT = "rollback_from_root"
CREATED_AT_MILLIS = "created_at_millis"
N_KEYS = "n_keys"
SYSTEM_KEYS: frozenset[str] = frozenset(
    {LAKEHOUSE_DEF, PREVIOUS_ROOT, ROLLBACK_FROM_ROOT, CREATED_AT_MILLIS, N_KEYS}
)

# --- base64 digits of schema IDs ----------------------------------------------------

_BASE64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_BASE64_INDEX = {c: i for i, c in enumerate(_BASE64_ALPHABET)}

_PAD = " "
# Longest name shown in full inside an error message; longer ones are abbreviated so a
# megabyte-long name does not produce a megabyte-long message.
_MAX_NAME_IN_MESSAGE = 100


def _show(name: str) -> str:
    """repr() of a name for an error message, abbreviated when very long."""
    if len(name) <= _MAX_NAME_IN_MESSAGE:
        return repr(name)
    return f"{name[:_MAX_NAME_IN_MESSAGE]!r}... ({len(name)} characters)"


#: The bytes SPEC 3 forbids in a name: 0x00-0x20 and 0x7F.
_FORBIDDEN_BYTE = re.compile(rb"[\x00-\x20\x7f]")


def _check_max_bytes(max_bytes: int) -> None:
    """A size limit must be a positive int; anything else is a caller bug."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive int, not {max_bytes!r}")


def validate_name(name: str, max_bytes: int, kind: str) -> None:
    """Refuse an object name that SPEC 3 does not allow, before anything is written.

    ``kind`` ("namespace", "table", "column", ...) only names the object in the message.
    A valid name is a non-empty str, UTF-8 encodable, without bytes 0x00-0x20 and 0x7F,
    and at most ``max_bytes`` UTF-8 bytes long. Raises InvalidNameError saying which
    rule the name breaks and where.
    """
    _check_max_bytes(max_bytes)
    if not isinstance(name, str):
        raise InvalidNameError(f"{kind} name must be a string, not {type(name).__name__}")
    if not name:
        raise InvalidNameError(f"{kind} name is empty")
    try:
        data = name.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidNameError(
            f"{kind} name {_show(name)} is not valid Unicode: lone surrogate "
            f"U+{ord(name[e.start]):04X} at character {e.start} cannot be encoded as UTF-8"
        ) from None
    forbidden = _FORBIDDEN_BYTE.search(data)
    if forbidden is not None:
        i, byte = forbidden.start(), data[forbidden.start()]
        what = {0x20: "a space", 0x7F: "DEL"}.get(byte, "a control character")
        raise InvalidNameError(
            f"{kind} name {_show(name)} contains {what} (byte 0x{byte:02X}) at byte {i}; "
            f"names may not contain bytes 0x00-0x20 or 0x7F"
        )
    if len(data) > max_bytes:
        raise InvalidNameError(
            f"{kind} name {_show(name)} is {len(data)} bytes in UTF-8; "
            f"the maximum for a {kind} name is {max_bytes} bytes"
        )


#: Longest column or struct field name this library writes, in UTF-8 bytes (N2).
MAX_COLUMN_NAME_BYTES = 255
#: Longest exported snapshot name this library writes, in UTF-8 bytes (N2).
MAX_SNAPSHOT_NAME_BYTES = 255
_REFUSED_CATEGORIES = {
    "Zs": "a space", "Zl": "a line separator", "Zp": "a paragraph separator",
    "Cc": "a control character", "Cf": "a format character",
}


def validate_new_name(name: str, max_bytes: int, kind: str) -> None:
    """Refuse a name this library will not write (rule N2 above), before anything is
    written: InvalidNameError naming the rule, the character and where it is."""
    validate_name(name, max_bytes, kind)
    if not unicodedata.is_normalized("NFC", name):
        raise InvalidNameError(
            f"{kind} name {_show(name)} is not in Unicode normalization form NFC; "
            f"write it as {_show(unicodedata.normalize('NFC', name))}"
        )
    for i, c in enumerate(name):
        category = unicodedata.category(c)
        if category in _REFUSED_CATEGORIES:
            raise InvalidNameError(
                f"{kind} name {_show(name)} contains {_REFUSED_CATEGORIES[category]} "
                f"U+{ord(c):04X} ({unicodedata.name(c, 'unnamed')}, category {category}) "
                f"at character {i}; names may not contain spaces, separators, control or "
                "format characters"
            )


def encode_name(name: str, max_bytes: int, kind: str = "object") -> str:
    """Validate ``name`` and right-pad it with spaces to exactly ``max_bytes`` UTF-8 bytes.

    The fixed byte width is what makes concatenated names sort as tuples (SPEC 3).
    """
    validate_name(name, max_bytes, kind)
    return name + _PAD * (max_bytes - len(name.encode("utf-8")))


def encode_schema_id(schema_id: int) -> str:
    """Base64 digits of a non-negative schema ID, most significant first, '='-padded.

    The result has the smallest length that is a multiple of 4 (at least 4):
    0 -> "A===", 4 -> "E===", 63 -> "/===", 64 -> "BA==".
    """
    if isinstance(schema_id, bool) or not isinstance(schema_id, int):
        raise TypeError(f"schema ID must be an int, not {type(schema_id).__name__}")
    if schema_id < 0:
        raise ValueError(f"schema ID must be non-negative, not {schema_id}")
    digits = []
    n = schema_id
    while True:
        n, d = divmod(n, 64)
        digits.append(_BASE64_ALPHABET[d])
        if n == 0:
            break
    text = "".join(reversed(digits))
    return text + "=" * (-len(text) % 4)


def decode_schema_id(text: str) -> int:
    """Inverse of encode_schema_id; ValueError for anything it would not produce.

    Non-canonical forms (leading "A" digits, extra or missing padding) are refused so
    that every schema ID has exactly one text.
    """
    if not isinstance(text, str) or not text or len(text) % 4:
        raise ValueError(f"malformed schema ID {text!r}: length must be a multiple of 4")
    digits = text.rstrip("=")
    if not digits or any(c not in _BASE64_INDEX for c in digits):
        raise ValueError(f"malformed schema ID {text!r}: not base64 digits then '=' padding")
    value = 0
    for c in digits:
        value = value * 64 + _BASE64_INDEX[c]
    if encode_schema_id(value) != text:
        raise ValueError(f"malformed schema ID {text!r}: not canonical (expected "
                         f"{encode_schema_id(value)!r})")
    return value


_NAMESPACE_PREFIX = encode_schema_id(NAMESPACE_SCHEMA_ID)  # "B==="
_TABLE_PREFIX = encode_schema_id(TABLE_SCHEMA_ID)  # "C==="


def _successor(ch: str) -> str | None:
    """The next code point after ``ch`` that is a valid Unicode scalar, or None."""
    code = ord(ch) + 1
    if 0xD800 <= code <= 0xDFFF:  # skip surrogates: keep bounds UTF-8 encodable
        code = 0xE000
    return chr(code) if code <= 0x10FFFF else None


def prefix_range(prefix: str) -> tuple[str, str]:
    """Half-open range [lo, hi) of exactly the strings that start with ``prefix``.

    hi is ``prefix`` with its last character incremented (trailing U+10FFFF characters
    are dropped first). For valid (surrogate-free) strings, ``lo <= s < hi`` holds iff
    ``s.startswith(prefix)``. ValueError if no finite upper bound exists (empty prefix,
    or a prefix made only of U+10FFFF).
    """
    for i in range(len(prefix) - 1, -1, -1):
        nxt = _successor(prefix[i])
        if nxt is not None:
            return prefix, prefix[:i] + nxt
    raise ValueError(f"prefix {prefix!r} has no finite upper bound")


@dataclass(frozen=True)
class ObjectKey:
    """A decoded object key: a namespace (table is None) or a table of a namespace."""

    kind: Literal["namespace", "table"]
    namespace: str
    table: str | None = None


def describe(key: ObjectKey) -> str:
    """An object as messages name it: ``'ns'`` or ``'ns'.'table'`` (repr of each name,
    so odd characters stay visible)."""
    if key.kind == "namespace":
        return repr(key.namespace)
    return f"{key.namespace!r}.{key.table!r}"


@dataclass(frozen=True)
class KeyCodec:
    """Encodes and decodes object keys for one lakehouse's name size limits (bytes)."""

    namespace_max_bytes: int
    table_max_bytes: int

    def __post_init__(self) -> None:
        _check_max_bytes(self.namespace_max_bytes)
        _check_max_bytes(self.table_max_bytes)

    def _enc_namespace(self, namespace: str) -> str:
        return encode_name(namespace, self.namespace_max_bytes, "namespace")

    def namespace_key(self, namespace: str) -> str:
        """Key of a namespace: "B===" + enc(namespace). InvalidNameError if invalid."""
        return _NAMESPACE_PREFIX + self._enc_namespace(namespace)

    def table_name_in(self, prefix: str, key: str) -> str | None:
        """The table name of ``key``, a key in the range of the namespace whose key prefix
        is ``prefix``, when its table field is well formed (a name of allowed characters
        right-padded with spaces to exactly the table max size in bytes); None for
        anything else, which :meth:`decode` then reports precisely. The same answer as
        ``decode`` at a fraction of its cost."""
        field = key[len(prefix):]
        name = field.rstrip(" ")
        if (
            name
            and key.startswith(prefix)
            and _NAME_CHARS.fullmatch(name)
            and len(field.encode("utf-8")) == self.table_max_bytes
        ):
            return name
        return None

    def table_key(self, namespace: str, table: str) -> str:
        """Key of a table: "C===" + enc(namespace) + enc(table). InvalidNameError if invalid."""
        return (
            _TABLE_PREFIX
            + self._enc_namespace(namespace)
            + encode_name(table, self.table_max_bytes, "table")
        )

    def namespaces_range(self) -> tuple[str, str]:
        """[lo, hi) holding every namespace key and no other object key."""
        return prefix_range(_NAMESPACE_PREFIX)

    def tables_range(self, namespace: str | None = None) -> tuple[str, str]:
        """[lo, hi) holding every table key, or only those of ``namespace`` if given."""
        if namespace is None:
            return prefix_range(_TABLE_PREFIX)
        return prefix_range(_TABLE_PREFIX + self._enc_namespace(namespace))

    def _decode_name(self, key: str, data: bytes, kind: str, max_bytes: int) -> str:
        """One fixed-width name field: valid name + space padding, else ValueError."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(
                f"malformed key {key!r}: {kind} field does not end on a character boundary"
            ) from None
        name = text.rstrip(_PAD)
        try:
            validate_name(name, max_bytes, kind)
        except InvalidNameError as e:
            raise ValueError(f"malformed key {key!r}: {e}") from None
        return name

    def decode(self, key: str) -> ObjectKey:
        """Parse an object key produced by this codec; ValueError for anything else."""
        if not isinstance(key, str):
            raise ValueError(f"malformed key {key!r}: not a string")
        prefix, rest = key[:4], key[4:]
        if prefix == _NAMESPACE_PREFIX:
            widths = (self.namespace_max_bytes,)
        elif prefix == _TABLE_PREFIX:
            widths = (self.namespace_max_bytes, self.table_max_bytes)
        else:
            raise ValueError(f"malformed key {key!r}: prefix is neither 'B===' nor 'C==='")
        try:
            data = rest.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"malformed key {key!r}: not valid Unicode") from None
        if len(data) != sum(widths):
            raise ValueError(
                f"malformed key {key!r}: {len(data)} bytes after the prefix, "
                f"expected {sum(widths)}"
            )
        namespace = self._decode_name(
            key, data[: self.namespace_max_bytes], "namespace", self.namespace_max_bytes
        )
        if len(widths) == 1:
            return ObjectKey("namespace", namespace, None)
        table = self._decode_name(
            key, data[self.namespace_max_bytes :], "table", self.table_max_bytes
        )
        return ObjectKey("table", namespace, table)

    def describe_key(self, key: str) -> str:
        """An object key in words for messages, ``table 'ns'.'t'`` or ``namespace 'ns'``
        (see :func:`describe`); a key this codec cannot decode is shown as its repr, so
        a message about a damaged key still names it."""
        try:
            decoded = self.decode(key)
        except ValueError:
            return repr(key)
        return f"{decoded.kind} {describe(decoded)}"


__all__ = [
    "LAKEHOUSE_SCHEMA_ID",
    "NAMESPACE_SCHEMA_ID",
    "TABLE_SCHEMA_ID",
    "LAKEHOUSE_DEF",
    "PREVIOUS_ROOT",
    "ROLLBACK_FROM_ROOT",
    "CREATED_AT_MILLIS",
    "N_KEYS",
    "SYSTEM_KEYS",
    "validate_name",
    "encode_name",
    "encode_schema_id",
    "decode_schema_id",
    "prefix_range",
    "ObjectKey",
    "KeyCodec",
]


# --- slicing names out of keys (the listing's hot loop) -----------------------------

#: A name's characters (SPEC 3): no byte 0x00-0x20 or 0x7F (in UTF-8 those bytes only
#: ever encode those code points), and no lone surrogate.
_NAME_CHARS = re.compile(r"[^\x00-\x20\x7f\ud800-\udfff]+")


@dataclass(frozen=True)
class TableNamesOfKeys:
    """A ``derive`` for range scans (``Tree.scan``): the table names of keys of the
    namespace whose key prefix is ``prefix``, all at once, when they are all ASCII and
    well formed (SPEC 3: a name of allowed characters right-padded with spaces to the
    table max size, so keys are ``width`` characters); None otherwise, and the listing
    then decodes key by key. Names ascend with their keys (the padding sorts below every
    name character), as a derive must. Hashable by value: the tree caches what it
    derives per node under it."""

    prefix: str
    width: int

    def __call__(self, keys: Sequence[str]) -> list[str] | None:
        if not keys:
            return []
        prefix, width = self.prefix, self.width
        cut = len(prefix)
        # A name runs to the first space after the prefix (or to the end of the key,
        # find's -1 taken modulo width + 1); the checks below make sure only spaces
        # follow it.
        names = [key[cut : key.find(" ", cut) % (width + 1)] for key in keys]
        joined = "".join(keys)
        if not (
            keys[0].startswith(prefix)
            and keys[-1].startswith(prefix)  # sorted: so do all keys between them
            and set(map(len, keys)) == {width}
            and joined.isascii()  # then characters and bytes are one to one
            and all(names)
            and _NAME_CHARS.fullmatch("".join(names))  # no space in a name, so:
            # every character after a name is a space (counting the prefix's padding)
            and joined.count(" ")
            == len(keys) * (prefix.count(" ") + width - cut) - sum(map(len, names))
        ):
            return None
        return names
