"""Object definition files (SPEC 5): protobuf bytes <-> messages, and lakehouse settings.

Every ``.binpb`` file holds exactly one message of ``trinitylake.proto`` with no framing.
This module is the only place that turns those bytes into messages, so every caller gets
the same checks:

* bytes that do not parse, or that carry fields SPEC 5 does not define, are reported as
  :class:`~trinitylake_dbapi.errors.CorruptFileError` naming the file. Rejecting unknown
  fields matters because the protobuf wire format is so permissive that many random byte
  strings parse "successfully" as unknown fields; SPEC 5 fixes every field of format
  major version 0, so an unknown field means the file is not one of ours;
* a lakehouse definition of a major version other than 0 is refused with
  :class:`~trinitylake_dbapi.errors.UnsupportedFormatError`;
* what is written can be read (rule FD1): :func:`encode` parses its own bytes back the
  way every reader does (protobuf's nesting limit included) and raises
  InvalidDefinitionError instead of returning bytes no reader could decode.

:class:`LakehouseSettings` is the lakehouse definition with the defaults of SPEC 5
applied, which is what every layer above wants to read; :func:`new_lakehouse_def` builds
and validates a new definition from keyword options (``connect(lakehouse_options=...)``).

Pure: no I/O. The ``path`` arguments only label errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, TypeVar

from google.protobuf.message import DecodeError, Message

from trinitylake_dbapi.errors import (
    CorruptFileError,
    InvalidDefinitionError,
    UnsupportedFormatError,
)
from trinitylake_dbapi.format.trinitylake_pb2 import LakehouseDef, NamespaceDef, TableDef

__all__ = [
    "FORMAT_MAJOR_VERSION",
    "DEFAULTS",
    "LAKEHOUSE_OPTIONS",
    "LakehouseSettings",
    "encode",
    "decode_lakehouse_def",
    "decode_namespace_def",
    "decode_table_def",
    "new_lakehouse_def",
    "LakehouseDef",
    "NamespaceDef",
    "TableDef",
]

#: The only format major version this package reads and writes (SPEC header).
FORMAT_MAJOR_VERSION = 0

#: Defaults of the optional scalar fields of LakehouseDef (SPEC 5), applied when absent.
DEFAULTS: Mapping[str, int] = {
    "order": 128,
    "namespace_name_max_size_bytes": 100,
    "table_name_max_size_bytes": 100,
    "file_name_max_size_bytes": 200,
    "node_file_max_size_bytes": 1048576,
    "maximum_version_age_millis": 604800000,
    "minimum_versions_to_keep": 3,
}

_UINT32_FIELDS = frozenset(
    {
        "order",
        "namespace_name_max_size_bytes",
        "table_name_max_size_bytes",
        "file_name_max_size_bytes",
        "minimum_versions_to_keep",
    }
)
_STR_MAP_FIELDS = ("properties", "exported_snapshots")
_OVERRIDES = "maximum_version_age_millis_overrides"

#: Keyword options accepted by :func:`new_lakehouse_def`, named like the proto fields.
LAKEHOUSE_OPTIONS: tuple[str, ...] = (*DEFAULTS, *_STR_MAP_FIELDS, _OVERRIDES)

_UINT32_MAX = 2**32 - 1
_UINT64_MAX = 2**64 - 1

_M = TypeVar("_M", bound=Message)


# ---------------------------------------------------------------------------
# Bytes <-> messages
# ---------------------------------------------------------------------------


def encode(message: Message) -> bytes:
    """Serialize a definition message to the bytes of its ``.binpb`` file.

    Deterministic (map entries sorted by key), so the same definition always gives the
    same bytes; this keeps tests and content comparisons stable. FD1: the bytes are
    parsed back before they are returned.
    """
    data = message.SerializeToString(deterministic=True)
    try:
        type(message)().ParseFromString(data)
    except DecodeError as e:
        raise InvalidDefinitionError(
            f"the {message.DESCRIPTOR.name} cannot be stored: its encoding would not be "
            f"readable ({e}); a type nested this deeply is beyond what readers decode"
        ) from None
    return data


def _parse(message: _M, data: bytes, path: str) -> _M:
    """Parse ``data`` into ``message``; raise CorruptFileError naming ``path`` if it is
    not a well-formed message made only of the fields SPEC 5 defines."""
    kind = message.DESCRIPTOR.name
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{kind} data must be bytes, not {type(data).__name__}")
    try:
        message.ParseFromString(bytes(data))
    except DecodeError as exc:
        raise CorruptFileError(path, f"not a valid {kind} protobuf message ({exc})") from None
    return message


def _reject_unknown_fields(message: Message, path: str) -> None:
    """Raise CorruptFileError if the parsed message (at any depth) holds unknown fields."""
    size = message.ByteSize()
    message.DiscardUnknownFields()
    if message.ByteSize() != size:
        raise CorruptFileError(
            path,
            f"not a valid {message.DESCRIPTOR.name}: it holds fields that format major "
            f"version {FORMAT_MAJOR_VERSION} does not define",
        )


def decode_lakehouse_def(data: bytes, path: str) -> LakehouseDef:
    """Decode a lakehouse definition file.

    Raises UnsupportedFormatError if its major version is not 0 (checked before anything
    else that could fail, so a newer lakehouse is reported as newer, not as corrupt), and
    CorruptFileError if the bytes do not parse, hold unknown fields, or hold settings no
    valid lakehouse can have (e.g. order < 3, a non-positive write buffer capacity).
    """
    message = _parse(LakehouseDef(), data, path)
    if message.major_version != FORMAT_MAJOR_VERSION:
        raise UnsupportedFormatError(
            f"lakehouse definition {path!r} has format major version "
            f"{message.major_version}; this package reads only major version "
            f"{FORMAT_MAJOR_VERSION}"
        )
    _reject_unknown_fields(message, path)
    problems = _setting_problems(LakehouseSettings.from_proto(message))
    if problems:
        raise CorruptFileError(path, "invalid lakehouse settings: " + "; ".join(problems))
    return message


def decode_namespace_def(data: bytes, path: str) -> NamespaceDef:
    """Decode a namespace definition file; CorruptFileError naming ``path`` on failure."""
    message = _parse(NamespaceDef(), data, path)
    _reject_unknown_fields(message, path)
    return message


def decode_table_def(data: bytes, path: str) -> TableDef:
    """Decode a table definition file; CorruptFileError naming ``path`` on failure.

    Only the wire structure is checked here; the columns are checked when they are
    converted with ``types.from_proto_columns``.
    """
    message = _parse(TableDef(), data, path)
    _reject_unknown_fields(message, path)
    return message


# ---------------------------------------------------------------------------
# Effective settings
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LakehouseSettings:
    """The lakehouse definition with SPEC 5's defaults applied to absent fields.

    Layers above read settings from here, never from the message, so a default is
    written down exactly once (:data:`DEFAULTS`). The dict fields are copies: changing
    them does not change the message (and instances are not hashable because of them).
    """

    name: str = ""
    order: int = DEFAULTS["order"]
    namespace_name_max_size_bytes: int = DEFAULTS["namespace_name_max_size_bytes"]
    table_name_max_size_bytes: int = DEFAULTS["table_name_max_size_bytes"]
    file_name_max_size_bytes: int = DEFAULTS["file_name_max_size_bytes"]
    node_file_max_size_bytes: int = DEFAULTS["node_file_max_size_bytes"]
    maximum_version_age_millis: int = DEFAULTS["maximum_version_age_millis"]
    minimum_versions_to_keep: int = DEFAULTS["minimum_versions_to_keep"]
    properties: dict[str, str] = field(default_factory=dict)
    maximum_version_age_millis_overrides: dict[int, int] = field(default_factory=dict)
    exported_snapshots: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_proto(cls, message: LakehouseDef) -> LakehouseSettings:
        """Effective settings of a lakehouse definition: a field that is absent takes
        its SPEC 5 default; one that is present is used as written, even if 0."""
        scalars = {
            name: getattr(message, name) if message.HasField(name) else default
            for name, default in DEFAULTS.items()
        }
        return cls(
            name=message.name,
            properties=dict(message.properties),
            maximum_version_age_millis_overrides=dict(
                message.maximum_version_age_millis_overrides
            ),
            exported_snapshots=dict(message.exported_snapshots),
            **scalars,
        )

    @property
    def buffer_capacity_bytes(self) -> int:
        """Write buffer capacity of a node (SPEC 6): the node file size limit minus the
        estimated key table size, order x (namespace max + table max + file name max + 4).
        """
        return self.node_file_max_size_bytes - self.order * self._key_row_estimate

    @property
    def _key_row_estimate(self) -> int:
        return (
            self.namespace_name_max_size_bytes
            + self.table_name_max_size_bytes
            + self.file_name_max_size_bytes
            + 4
        )

    def max_version_age_millis(self, version: int) -> int:
        """Maximum age of root ``version`` before it may expire: its entry in
        maximum_version_age_millis_overrides if any, else maximum_version_age_millis."""
        return self.maximum_version_age_millis_overrides.get(
            version, self.maximum_version_age_millis
        )


def _setting_problems(settings: LakehouseSettings) -> list[str]:
    """Every way ``settings`` breaks the invariants the tree and expiration rely on."""
    problems = []
    if settings.order < 3:
        problems.append(f"order must be at least 3, got {settings.order}")
    for name in (
        "namespace_name_max_size_bytes",
        "table_name_max_size_bytes",
        "file_name_max_size_bytes",
        "node_file_max_size_bytes",
        "minimum_versions_to_keep",
    ):
        value = getattr(settings, name)
        if value < 1:
            problems.append(f"{name} must be at least 1, got {value}")
    if not problems and settings.buffer_capacity_bytes <= 0:
        s = settings
        problems.append(
            "the node write buffer capacity must be positive, but "
            f"node_file_max_size_bytes ({s.node_file_max_size_bytes}) - order ({s.order}) "
            f"x (namespace_name_max_size_bytes ({s.namespace_name_max_size_bytes}) + "
            f"table_name_max_size_bytes ({s.table_name_max_size_bytes}) + "
            f"file_name_max_size_bytes ({s.file_name_max_size_bytes}) + 4) = "
            f"{s.node_file_max_size_bytes} - {s.order * s._key_row_estimate} = "
            f"{s.buffer_capacity_bytes}; raise node_file_max_size_bytes or lower the "
            "order or the name sizes"
        )
    return problems


# ---------------------------------------------------------------------------
# New definitions
# ---------------------------------------------------------------------------


def _check_int(name: str, value: Any, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidDefinitionError(
            f"lakehouse option {name} must be an integer, got {value!r}"
        )
    if not 0 <= value <= maximum:
        raise InvalidDefinitionError(
            f"lakehouse option {name} must be between 0 and {maximum}, got {value}"
        )
    return value


def _check_str_map(name: str, value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidDefinitionError(
            f"lakehouse option {name} must be a mapping of strings to strings, got {value!r}"
        )
    return dict(value)


def new_lakehouse_def(name: str = "", **options: Any) -> LakehouseDef:
    """Build the definition of a new lakehouse (major version 0) from keyword options.

    Options are named like the LakehouseDef fields (see :data:`LAKEHOUSE_OPTIONS`):
    integers for the scalar settings, ``dict[str, str]`` for ``properties`` and
    ``exported_snapshots``, ``dict[int, int]`` for
    ``maximum_version_age_millis_overrides``. Only the options given are written; the
    others stay absent so readers apply the defaults of SPEC 5.

    Raises InvalidDefinitionError for an unknown option (listing the valid ones), a value
    of the wrong type or range, order < 3, a size or minimum_versions_to_keep < 1, or a
    write buffer capacity (SPEC 6) that is not positive (the message shows the numbers).
    """
    if not isinstance(name, str):
        raise InvalidDefinitionError(f"lakehouse name must be a string, got {name!r}")
    unknown = sorted(set(options) - set(LAKEHOUSE_OPTIONS))
    if unknown:
        raise InvalidDefinitionError(
            f"unknown lakehouse option(s) {', '.join(unknown)}; valid options are: "
            + ", ".join(LAKEHOUSE_OPTIONS)
        )
    message = LakehouseDef(name=name, major_version=FORMAT_MAJOR_VERSION)
    for option, value in options.items():
        if option in DEFAULTS:
            maximum = _UINT32_MAX if option in _UINT32_FIELDS else _UINT64_MAX
            setattr(message, option, _check_int(option, value, maximum))
        elif option in _STR_MAP_FIELDS:
            getattr(message, option).update(_check_str_map(option, value))
        else:  # maximum_version_age_millis_overrides
            if not isinstance(value, Mapping):
                raise InvalidDefinitionError(
                    f"lakehouse option {option} must be a mapping of versions to "
                    f"milliseconds, got {value!r}"
                )
            for version, age in value.items():
                message.maximum_version_age_millis_overrides[
                    _check_int(f"{option} version", version, _UINT64_MAX)
                ] = _check_int(f"{option}[{version}]", age, _UINT64_MAX)
    problems = _setting_problems(LakehouseSettings.from_proto(message))
    if problems:
        raise InvalidDefinitionError("invalid lakehouse options: " + "; ".join(problems))
    return message
