"""One record per storage scheme: what every I/O stack needs to know about a kind of store.

Three stacks read and write a lakehouse's files: the lakehouse's ``Storage`` (this
package), the Iceberg tables' FileIO (``iceberg/io.py``) and DuckDB, which reads the
tables' data files through the fsspec filesystem registered in it. Each asks the
``Scheme`` of a URI here, and nothing else decides by scheme name. Pure data and
string work: importing this module imports neither fsspec nor any store's client.

Rules:

  SC1 Every URI scheme this library serves is one row of ``SCHEMES``: its names (the
      first one canonical, the others aliases of the same store), the ``Backend`` that
      does the lakehouse's I/O (``storage/base.py`` B1-B5), the fsspec filesystem class
      and the options it is opened with unless the caller sets them, how an exclusive
      create is made atomic, which errors of the store mean "the name is taken" or
      "retry" (the error mapping of a conditional write), the PyIceberg FileIO
      properties that reach the store, whether DuckDB reads through the filesystem and
      whether another process can see the store. A scheme not listed is served by its
      fsspec filesystem with ``GENERIC`` (exclusive create only where that filesystem
      implements a conditional write itself, objectstore O2).
  SC2 The options given to ``connect()`` reach every stack unchanged. The lakehouse's
      files and DuckDB use the same filesystem object. The Iceberg FileIO receives the
      options whole (iceberg/locations.py ``file_io_properties``: as JSON under
      ``STORAGE_OPTIONS_PROPERTY``, beside PyIceberg's own property names for them) and opens a filesystem of the
      same class with them; a scheme whose Iceberg files go through PyArrow's own file
      system (S3: one PUT per small file, iceberg.io F3) uses it only when every option
      is one PyArrow receives through a PyIceberg property or one that only tunes
      fsspec's caches (``Scheme.pyarrow_carries``); otherwise the Iceberg files go
      through the fsspec filesystem too, so no endpoint, credential or setting is lost.
  SC3 A new kind of store is one row here and one module with its ``Backend`` subclass
      (docs/architecture.md, "Add a storage backend").
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "GENERIC",
    "SCHEMES",
    "STORAGE_OPTIONS_PROPERTY",
    "STORAGE_SCHEME_PROPERTY",
    "Scheme",
    "scheme_of",
    "scheme_of_location",
]

#: SC2: the FileIO properties carrying the storage options whole (as JSON) and the
#: scheme they are for (iceberg/locations.py writes and reads them).
STORAGE_OPTIONS_PROPERTY = "trinitylake.storage-options"
STORAGE_SCHEME_PROPERTY = "trinitylake.storage-scheme"

#: A path into an fsspec options dict: ("client_kwargs", "endpoint_url").
OptionPath = tuple[str, ...]


@dataclass(frozen=True)
class Scheme:
    """Everything the I/O stacks know about one kind of store (rule SC1)."""

    #: URI schemes served, the canonical one first ("s3", "s3a").
    names: tuple[str, ...]
    #: The lakehouse's backend, as "module of trinitylake_dbapi.storage:class".
    backend: str
    #: How ``create_exclusive`` is made atomic here (said in errors and docs).
    exclusive_create: str
    #: The fsspec filesystem class as "module:class"; None: fsspec's registry entry
    #: for the scheme (``fsspec.filesystem(name)``).
    filesystem: str | None = None
    #: Options the filesystem is opened with unless the caller sets them.
    default_options: Mapping[str, Any] = field(default_factory=dict)
    #: The extra that installs the filesystem's package ("s3" -> trinitylake-dbapi[s3]).
    extra: str | None = None
    #: Error mapping of a conditional write: codes (S3's Error.Code, an HTTP status,
    #: Azure's error_code) that mean the name is taken / the request should be retried.
    taken_codes: frozenset[str] = frozenset()
    conflict_codes: frozenset[str] = frozenset()
    #: PyIceberg FileIO property -> the fsspec option paths it stands for (the first
    #: path is where ``storage_options_from_properties`` puts it back).
    iceberg_properties: tuple[tuple[str, tuple[OptionPath, ...]], ...] = ()
    #: Iceberg files through PyArrow's own file system for this scheme (when the options
    #: allow: SC2) rather than the fsspec filesystem.
    iceberg_via_pyarrow: bool = False
    #: Options that only tune fsspec's caches: PyArrow's file system needs none of them.
    cache_options: frozenset[str] = frozenset()
    #: DuckDB reads the tables' data through this scheme's fsspec filesystem.
    register_in_duckdb: bool = True
    #: Every request costs a round trip to a service (larger tree buffers pay off).
    object_store: bool = True
    #: Another process (a Spark worker) sees the same files.
    shared: bool = True

    @property
    def name(self) -> str:
        """The canonical scheme name."""
        return self.names[0]

    def backend_class(self) -> type:
        """The ``Backend`` subclass serving this scheme (its module imported now)."""
        module, _, name = self.backend.partition(":")
        return getattr(importlib.import_module(f"trinitylake_dbapi.storage.{module}"), name)

    def open_filesystem(self, protocol: str, options: Mapping[str, Any] | None) -> Any:
        """A new fsspec filesystem of this scheme with ``options`` over the defaults
        (ImportError if its package is missing, the filesystem's own error if the
        options are wrong)."""
        merged = dict(options or {})
        for key, value in self.default_options.items():
            merged.setdefault(key, value)
        if self.filesystem is None:
            import fsspec

            return fsspec.filesystem(protocol, **merged)
        module, _, name = self.filesystem.partition(":")
        return getattr(importlib.import_module(module), name)(**merged)

    def properties_of(self, options: Mapping[str, Any] | None) -> dict[str, str]:
        """PyIceberg's FileIO properties for the options that have one (SC2)."""
        properties: dict[str, str] = {}
        for prop, paths in self.iceberg_properties:
            for path in paths:
                value = _get(options or {}, path)
                if value is not None:
                    properties[prop] = _as_property(value)
                    break
        return properties

    def options_of(self, properties: Mapping[str, Any]) -> dict[str, Any]:
        """The fsspec options that PyIceberg's FileIO ``properties`` stand for (the
        inverse of ``properties_of``)."""
        options: dict[str, Any] = {}
        for prop, paths in self.iceberg_properties:
            if prop in properties:
                target = options
                for part in paths[0][:-1]:
                    target = target.setdefault(part, {})
                target[paths[0][-1]] = properties[prop]
        return options

    def pyarrow_carries(self, options: Mapping[str, Any] | None) -> bool:
        """True if PyArrow's file system, given ``properties_of(options)``, reaches the
        store as the fsspec filesystem with ``options`` does (SC2): every option is one
        of ``iceberg_properties``' paths or a cache setting."""
        if not self.iceberg_via_pyarrow:
            return False
        known = {path for _, paths in self.iceberg_properties for path in paths}
        return all(path in known or path[0] in self.cache_options for path in _leaves(options or {}))


def _get(options: Mapping[str, Any], path: OptionPath) -> Any:
    value: Any = options
    for part in path:
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _leaves(options: Mapping[str, Any], prefix: OptionPath = ()) -> list[OptionPath]:
    """Paths of the non-dict values of ``options`` (an empty dict is no option)."""
    out: list[OptionPath] = []
    for key, value in options.items():
        if isinstance(value, Mapping):
            out.extend(_leaves(value, prefix + (str(key),)))
        else:
            out.append(prefix + (str(key),))
    return out


def _as_property(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


#: fsspec's own cache settings (and s3fs's): they change no request's target.
_FSSPEC_CACHE_OPTIONS = frozenset({
    "skip_instance_cache", "use_listings_cache", "listings_expiry_time", "max_paths",
    "default_block_size", "default_fill_cache", "default_cache_type", "cache_regions",
})

_S3 = Scheme(
    names=("s3", "s3a", "s3n"),
    backend="objectstore:S3Backend",
    exclusive_create="conditional PUT (If-None-Match: *), probed once per root; 409s retried",
    default_options={"use_listings_cache": False},  # other processes write too
    extra="s3",
    taken_codes=frozenset({"PreconditionFailed", "412"}),
    conflict_codes=frozenset({"ConditionalRequestConflict", "409"}),
    iceberg_properties=(
        ("s3.endpoint", (("client_kwargs", "endpoint_url"), ("endpoint_url",))),
        ("s3.region", (("client_kwargs", "region_name"),)),
        ("s3.access-key-id", (("key",), ("client_kwargs", "aws_access_key_id"))),
        ("s3.secret-access-key", (("secret",), ("client_kwargs", "aws_secret_access_key"))),
        ("s3.session-token", (("token",), ("client_kwargs", "aws_session_token"))),
        ("s3.anonymous", (("anon",),)),
    ),
    iceberg_via_pyarrow=True,
    cache_options=_FSSPEC_CACHE_OPTIONS,
)

#: SC1: the rows, one per kind of store.
SCHEMES: tuple[Scheme, ...] = (
    Scheme(
        names=("file", "local"),
        backend="local:LocalBackend",
        exclusive_create="temp file + fsync, hard link to the name, directory fsync (LF3)",
        iceberg_via_pyarrow=True,  # made durable by iceberg.io F1
        register_in_duckdb=False,  # DuckDB reads local files itself
        object_store=False,
    ),
    Scheme(
        names=("memory",),
        backend="memory:MemoryBackend",
        exclusive_create="check-then-write under one process-wide lock (MM1)",
        object_store=False,
        shared=False,
    ),
    _S3,
    Scheme(
        names=("gs", "gcs"),
        backend="gcs:GcsBackend",
        exclusive_create="upload with ifGenerationMatch=0 (412 when taken), probed once per root (GS1)",
        filesystem="gcsfs.core:GCSFileSystem",  # GS2: not the registry's gRPC-probing class
        default_options={"use_listings_cache": False},  # other processes write too
        extra="gcs",
        taken_codes=frozenset({"412"}),
        conflict_codes=frozenset({"409"}),
        iceberg_properties=(  # PyIceberg's FsspecFileIO names for gcsfs's options
            ("gcs.service.host", (("endpoint_url",),)),
            ("gcs.project-id", (("project",),)),
            ("gcs.oauth2.token", (("token",),)),
            ("gcs.access", (("access",),)),
            ("gcs.consistency", (("consistency",),)),
            ("gcs.requester-pays", (("requester_pays",),)),
            ("gcs.default-bucket-location", (("default_location",),)),
        ),
    ),
    Scheme(
        names=("az", "abfs", "abfss"),
        backend="azure:AzureBackend",
        exclusive_create="upload with If-None-Match: * (409 BlobAlreadyExists when taken), probed once per root (AZ1)",
        filesystem="adlfs:AzureBlobFileSystem",
        default_options={"use_listings_cache": False},  # other processes write too
        extra="azure",
        taken_codes=frozenset({"BlobAlreadyExists", "ConditionNotMet", "412"}),
        iceberg_properties=(  # PyIceberg's names for adlfs's options
            ("adls.connection-string", (("connection_string",),)),
            ("adls.account-name", (("account_name",),)),
            ("adls.account-key", (("account_key",),)),
            ("adls.sas-token", (("sas_token",),)),
            ("adls.tenant-id", (("tenant_id",),)),
            ("adls.client-id", (("client_id",),)),
            ("adls.client-secret", (("client_secret",),)),
            ("adls.account-host", (("account_host",),)),
            ("adls.anon", (("anon",),)),
        ),
    ),
)

#: SC1: a scheme without a row: its fsspec filesystem, used as any object store.
GENERIC = Scheme(
    names=("",),
    backend="objectstore:FsspecBackend",
    exclusive_create="the filesystem's own pipe_file(mode='create'), probed once per root",
    taken_codes=_S3.taken_codes,  # S3-compatible stores under another name
    conflict_codes=_S3.conflict_codes,
)

_BY_NAME: dict[str, Scheme] = {name: row for row in SCHEMES for name in row.names}


def scheme_of(protocol: str) -> Scheme:
    """The row of a URI scheme (any of its names, any case); ``GENERIC`` if none."""
    return _BY_NAME.get(protocol.lower(), GENERIC)


def scheme_of_location(location: str) -> Scheme:
    """The row of a location's scheme; a plain path is a local file."""
    head, sep, _ = location.partition("://")
    if not sep:
        head, sep, _ = location.partition(":")
        if not sep or len(head) < 2:
            return _BY_NAME["file"]
    return scheme_of(head)
