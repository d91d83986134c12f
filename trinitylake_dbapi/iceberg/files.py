"""Checks of the Iceberg files a table reaches: metadata JSON, Avro manifest lists and
manifests, Parquet data files. Kept light (no PyArrow, no PyIceberg FileIO): the readers
of :mod:`.tables` and :mod:`.io`, and ``verify --data``, share them.

Rules:

  IF1 A metadata file that does not parse as Iceberg table metadata (not JSON, not
      UTF-8, a JSON document that is not Iceberg's, a truncated or bad gzip stream) is a
      CorruptFileError naming the file, never PyIceberg's ValidationError.
  IF2 An Avro file (manifest list, manifest) is checked whole before PyIceberg decodes
      it: the magic, the header (UTF-8 text, as PyIceberg reads it; a schema PyIceberg
      reads; a known codec), every block's framing and sync marker, and that the
      last block ends exactly at the end of the file. PyIceberg's reader treats an
      early end of file as the end of the records, so a truncated manifest would read
      as a shorter one: here it is a CorruptFileError naming the file. A deflate block
      is also decompressed (a flipped bit in it fails there); other codecs' payloads
      and uncompressed payloads carry no checksum and are not checked beyond framing.
  IF4 A manifest list or manifest whose framing is whole but whose records do not
      decode (a flipped bit in an uncompressed block, a string that is not UTF-8) makes
      PyIceberg raise whatever its decoder meets; :func:`undecodable_manifest` finds,
      on that error path only, which file of a snapshot it was, so the reader can name it.
  IF3 A Parquet file is checked by its ends: ``PAR1`` at the start and at the end, a
      footer length that fits in the file, and the file's length against the
      ``file_size_in_bytes`` its manifest recorded (``verify --data``; readers find the
      rest when they read the footer).
"""

from __future__ import annotations

import functools
import gzip
import json
import zlib
from typing import Any

from ..errors import CorruptFileError, Error, MissingFileError

__all__ = [
    "AVRO_MAGIC", "PARQUET_MAGIC", "avro_problem", "check_avro", "parquet_problem", "parse_metadata",
    "undecodable_manifest",
]

AVRO_MAGIC = b"Obj\x01"
PARQUET_MAGIC = b"PAR1"
_SYNC = 16
#: The codecs PyIceberg's Avro reader knows (pyiceberg.avro.codecs.KNOWN_CODECS).
_CODECS = frozenset({b"null", b"deflate", b"snappy", b"zstandard", b"bzip2"})


def parse_metadata(location: str, data: bytes) -> Any:
    """IF1: the Iceberg table metadata in ``data`` (the bytes of the file at
    ``location``, compressed as its name says); CorruptFileError naming it otherwise."""
    from pyiceberg.exceptions import ValidationError
    from pyiceberg.table.metadata import TableMetadataUtil

    try:
        if location.endswith(".gz.metadata.json"):  # PyIceberg's rule (Compressor)
            data = gzip.decompress(data)
        return TableMetadataUtil.parse_raw(data.decode("utf-8"))
    except (ValidationError, ValueError, EOFError, OSError, zlib.error) as e:
        raise CorruptFileError(location, f"not Iceberg table metadata: {_first_line(e)}") from None


def _first_line(e: BaseException) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    if not lines:
        return type(e).__name__
    # pydantic: "1 validation error for TableMetadataWrapper" then the reason.
    line = lines[1] if len(lines) > 1 and "validation error" in lines[0] else lines[0]
    return line.split(" [type=")[0][:300]


class _Truncated(Exception):
    pass


def _long(data: bytes, pos: int) -> tuple[int, int]:
    """An Avro long (zig-zag varint) at ``pos``: (value, next position)."""
    shift = 0
    result = 0
    while True:
        if pos >= len(data):
            raise _Truncated
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("a varint longer than 10 bytes")


def _bytes(data: bytes, pos: int) -> tuple[bytes, int]:
    size, pos = _long(data, pos)
    if size < 0:
        raise ValueError(f"a negative length {size}")
    if pos + size > len(data):
        raise _Truncated
    return data[pos : pos + size], pos + size


def avro_problem(data: bytes) -> str | None:
    """IF2: what is wrong with the Avro object container file ``data``, or None."""
    if len(data) < len(AVRO_MAGIC) or data[: len(AVRO_MAGIC)] != AVRO_MAGIC:
        return f"not an Avro file (it starts with {data[:4]!r}, not {AVRO_MAGIC!r}; {len(data)} bytes)"
    pos = len(AVRO_MAGIC)
    try:
        meta: dict[bytes, bytes] = {}
        while True:
            count, pos = _long(data, pos)
            if count == 0:
                break
            if count < 0:
                count = -count
                _, pos = _long(data, pos)  # the block's size in bytes
            for _ in range(count):
                key, pos = _bytes(data, pos)
                meta[key], pos = _bytes(data, pos)
        if pos + _SYNC > len(data):
            raise _Truncated
        sync = data[pos : pos + _SYNC]
        pos += _SYNC
        for key, value in meta.items():
            try:
                key.decode("utf-8"), value.decode("utf-8")  # PyIceberg reads them as text
            except ValueError as e:
                return f"its header entry {key!r} is not UTF-8 ({e})"
        if b"avro.schema" not in meta:
            return "its header has no avro.schema"
        problem = _schema_problem(meta[b"avro.schema"].decode("utf-8"))
        if problem is not None:
            return problem
        codec = meta.get(b"avro.codec")
        if codec is None:  # PyIceberg writes it, and reads a file without it as "gzip", which it cannot
            return "its header has no avro.codec"
        if codec not in _CODECS:
            return f"its header names an unknown codec {codec!r}"
        block = 0
        while pos < len(data):
            records, pos = _long(data, pos)
            payload, pos = _bytes(data, pos)
            if records < 0:
                return f"block {block} at byte {pos}: negative record count {records}"
            if pos + _SYNC > len(data):
                raise _Truncated
            if data[pos : pos + _SYNC] != sync:
                return f"block {block} ends at byte {pos} without the file's sync marker (damaged or truncated)"
            pos += _SYNC
            if codec == b"deflate":
                try:
                    zlib.decompress(payload, -15)
                except zlib.error as e:
                    return f"block {block}: its deflate data does not decompress ({e})"
            block += 1
    except _Truncated:
        return f"truncated: it ends at byte {len(data)} inside a block or the header"
    except ValueError as e:
        return f"damaged Avro framing at byte {pos}: {e}"
    return None


@functools.lru_cache(maxsize=64)
def _schema_problem(text: str) -> str | None:
    """IF2: why PyIceberg cannot take the Avro schema ``text`` of a file's header, or
    None (memoized: a table's manifests share a handful of schemas)."""
    from pyiceberg.utils.schema_conversion import AvroSchemaConversion

    try:
        AvroSchemaConversion().avro_to_iceberg(json.loads(text))
    except Exception as e:  # noqa: BLE001 - any failure of a damaged schema is the file's
        return f"its header's avro.schema is not a schema PyIceberg reads ({type(e).__name__}: {str(e)[:200]})"
    return None


def check_avro(location: str, data: bytes) -> bytes:
    """IF2: ``data`` itself when it is a whole Avro file; CorruptFileError naming
    ``location`` otherwise."""
    problem = avro_problem(data)
    if problem is not None:
        raise CorruptFileError(location, problem)
    return data


def undecodable_manifest(io: Any, snapshot: Any) -> Error | None:
    """IF4: the CorruptFileError naming the manifest list or manifest of ``snapshot``
    (PyIceberg's) that does not decode through ``io`` (or the MissingFileError naming
    one that is missing), or None when every one decodes or cannot be read (an OSError:
    not a decoding error; the caller re-raises what it caught)."""
    try:
        manifests = snapshot.manifests(io)
    except (CorruptFileError, MissingFileError) as e:
        return e
    except OSError:
        return None
    except Exception as e:  # noqa: BLE001 - whatever the decoder met, the file is damaged
        return CorruptFileError(snapshot.manifest_list, f"its records do not decode ({type(e).__name__}: {e})")
    for manifest in manifests:
        try:
            manifest.fetch_manifest_entry(io, discard_deleted=False)
        except (CorruptFileError, MissingFileError) as e:
            return e
        except OSError:
            return None
        except Exception as e:  # noqa: BLE001 - as above
            return CorruptFileError(manifest.manifest_path, f"its records do not decode ({type(e).__name__}: {e})")
    return None


def parquet_problem(size: int, head: bytes, tail: bytes, recorded_size: int | None = None) -> str | None:
    """IF3: what is wrong with a Parquet file of ``size`` bytes whose first four bytes
    are ``head`` and last eight ``tail`` (footer length and magic), or None;
    ``recorded_size`` is what its manifest says (None: not checked)."""
    if recorded_size is not None and size != recorded_size:
        return f"{size} bytes, but its manifest records {recorded_size} (truncated or overwritten)"
    if size < 12:
        return f"{size} bytes: too short for a Parquet file"
    if head[:4] != PARQUET_MAGIC:
        return f"not a Parquet file (it starts with {head[:4]!r}, not {PARQUET_MAGIC!r})"
    if tail[-4:] != PARQUET_MAGIC:
        return f"no Parquet magic at its end ({tail[-4:]!r}): truncated or damaged"
    footer = int.from_bytes(tail[-8:-4], "little")
    if footer + 12 > size:
        return f"its footer length {footer} does not fit in its {size} bytes"
    return None
