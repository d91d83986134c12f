"""Locations of Iceberg files and the properties of the tables' FileIO: plain functions
that import no PyArrow, so that the data path can ask them before (or without) making
the FileIO of :mod:`.io`, whose import brings ``pyarrow.dataset`` and pandas.

The canonical form of a location (``canonical_location``, ``location_within``) is
storage's (``storage.locations`` U1-U4), offered here to the layers that may not import
storage (SQL).
"""

from __future__ import annotations

from typing import Any, Mapping
from urllib.parse import urlparse

from pyiceberg.io import PY_IO_IMPL

from ..storage.locations import canonical_location, location_within

__all__ = [
    "DURABLE_FILE_IO", "canonical_location", "file_io_properties", "local_path", "location_within",
    "storage_options_from_properties",
]

#: The class PyIceberg loads as the tables' FileIO (``py-io-impl``): :mod:`.io`'s.
DURABLE_FILE_IO = "trinitylake_dbapi.iceberg.io.DurableFileIO"

#: PyIceberg FileIO property <-> path into s3fs's (fsspec) options (rule F2).
_S3_OPTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("s3.endpoint", ("client_kwargs", "endpoint_url")),
    ("s3.region", ("client_kwargs", "region_name")),
    ("s3.access-key-id", ("key",)),
    ("s3.secret-access-key", ("secret",)),
    ("s3.session-token", ("token",)),
)


def file_io_properties(storage_options: Mapping[str, Any] | None) -> dict[str, str]:
    """PyIceberg properties reaching the storage that ``storage_options`` (s3fs's
    options, as given to :func:`trinitylake_dbapi.connect`) reach, with this FileIO."""
    properties = {PY_IO_IMPL: DURABLE_FILE_IO}
    for prop, path in _S3_OPTIONS:
        value: Any = storage_options or {}
        for part in path:
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is not None:
            properties[prop] = str(value)
    return properties


def storage_options_from_properties(properties: Mapping[str, str]) -> dict[str, Any]:
    """The s3fs options of PyIceberg's FileIO ``properties`` (the inverse of
    :func:`file_io_properties`); empty when none are given."""
    options: dict[str, Any] = {}
    for prop, path in _S3_OPTIONS:
        if prop in properties:
            target = options
            for part in path[:-1]:
                target = target.setdefault(part, {})
            target[path[-1]] = properties[prop]
    return options


def local_path(location: str) -> str | None:
    """The file system path of a local location (``/x`` or ``file:///x``), else None."""
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        return parsed.path if parsed.scheme else location
    return None
