"""Locations of Iceberg files and the properties of the tables' FileIO: plain functions
that import no PyArrow, so that the data path can ask them before (or without) making
the FileIO of :mod:`.io`, whose import brings ``pyarrow.dataset`` and pandas.

The canonical form of a location (``canonical_location``, ``location_within``) is
storage's (``storage.locations`` U1-U4), offered here to the layers that may not import
storage (SQL).
"""

from __future__ import annotations

import json
from typing import Any, Mapping
from urllib.parse import urlparse

from pyiceberg.io import PY_IO_IMPL

from ..storage.locations import canonical_location, location_within
from ..storage.schemes import GENERIC, STORAGE_OPTIONS_PROPERTY, STORAGE_SCHEME_PROPERTY, scheme_of, scheme_of_location

__all__ = [
    "DURABLE_FILE_IO", "canonical_location", "file_io_properties", "local_path", "location_within",
    "scheme_names", "storage_options_from_properties",
]

#: The class PyIceberg loads as the tables' FileIO (``py-io-impl``): :mod:`.io`'s.
DURABLE_FILE_IO = "trinitylake_dbapi.iceberg.io.DurableFileIO"


def scheme_names(scheme: str) -> tuple[str, ...]:
    """Every name of the store ``scheme`` names (storage.schemes SC1: ``az``, ``abfs``,
    ``abfss``), the canonical one first; a scheme without a row is only itself."""
    row = scheme_of(scheme)
    return (scheme,) if row is GENERIC else row.names


def file_io_properties(storage_options: Mapping[str, Any] | None, location: str | None = None) -> dict[str, str]:
    """PyIceberg FileIO properties that reach the store ``storage_options`` (as given to
    :func:`trinitylake_dbapi.connect`) reach, with this FileIO (rule F2, storage.schemes
    SC2): the FileIO class; PyIceberg's names for the options that have one, of the
    scheme of ``location`` (S3's when no location is given); the options whole as JSON
    (unless a value is no JSON value, e.g. a credential object) and, with ``location``,
    the scheme they are for."""
    properties = {PY_IO_IMPL: DURABLE_FILE_IO}
    if not storage_options:
        return properties
    row = scheme_of("s3") if location is None else scheme_of_location(location)
    properties.update(row.properties_of(storage_options))
    try:
        properties[STORAGE_OPTIONS_PROPERTY] = json.dumps(storage_options, sort_keys=True)
    except (TypeError, ValueError):
        pass  # only the named properties can carry it
    if location is not None:
        properties[STORAGE_SCHEME_PROPERTY] = row.name
    return properties


def storage_options_from_properties(properties: Mapping[str, Any], location: str | None = None) -> dict[str, Any]:
    """The storage options of PyIceberg FileIO ``properties`` (the inverse of
    :func:`file_io_properties`): the options carried whole if there, else those that
    PyIceberg's property names of the scheme of ``location`` (default: the ``uri``
    property, else S3) stand for; empty when none are given."""
    carried = properties.get(STORAGE_OPTIONS_PROPERTY)
    if carried:
        options = json.loads(carried)
        if isinstance(options, dict):
            return options
    where = location if location is not None else properties.get("uri")
    row = scheme_of("s3") if not isinstance(where, str) else scheme_of_location(where)
    return row.options_of(properties)


def local_path(location: str) -> str | None:
    """The file system path of a local location (``/x`` or ``file:///x``), else None."""
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        return parsed.path if parsed.scheme else location
    return None
