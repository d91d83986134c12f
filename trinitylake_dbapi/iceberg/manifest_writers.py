"""Writing manifests without rebuilding the Avro writer for every file (issue 34).

PyIceberg's ``ManifestWriter`` builds, for every manifest it opens, the manifest entry
schema of the table's partition type twice, resolves the Avro writer tree from it, and
converts the file schema to Avro JSON for the header: ~0.6 ms of the ~0.8 ms a one-row
INSERT's manifest costs, the same work for every file of a table.

Rules:

  MW1 A manifest writer built here (:class:`ManifestWriterV2`, and the delete manifest
      writer that subclasses it) writes the bytes PyIceberg's ``ManifestWriterV2`` writes
      for the same entries (the Avro sync marker aside, random per file as PyIceberg
      makes it): the same file schema, header metadata and codec, and PyIceberg's
      writer tree. What it reuses is what depends only on the manifest's metadata (the
      table schema and partition spec, as the header names them, the format version
      and the codec): the file schema, the resolved writer tree and the header's Avro
      schema JSON, kept per distinct metadata (at most :data:`KEPT`, process-wide).
      Writer trees hold no state between records, so threads share them.
  MW3 A v2 manifest list (:func:`write_manifest_list`) is written the same way: the
      bytes of PyIceberg's ``ManifestListWriterV2``, its writer tree and header schema
      JSON built once per process (the manifest list schema is fixed per format
      version). The append producers' commit (writing W6) writes its list so.
  MW2 Only the set-up is shared: each file gets its own output stream, sync marker,
      counters and partition summaries, exactly as PyIceberg's writer keeps them.
  MW4 A file these writers wrote completely (closed without an error) is handed to the
      manifests cache as it was encoded (manifests MF6): a manifest's (status, file
      path) pairs when ``to_manifest_file`` describes it, a manifest list's entries as
      ``prepare_manifest`` made them (what was encoded) when it closes. A file whose
      writing failed is never handed over.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Callable

from pyiceberg.avro.codecs import AVRO_CODEC_KEY, CODEC_MAPPING_ICEBERG_TO_AVRO
from pyiceberg.avro.file import MAGIC, META_SCHEMA, SYNC_SIZE, AvroFileHeader, AvroOutputFile
from pyiceberg.avro.resolver import construct_writer, resolve_writer
from pyiceberg.io import OutputFile
from pyiceberg.manifest import DEFAULT_READ_VERSION, MANIFEST_LIST_FILE_SCHEMAS, ManifestEntry, ManifestFile
from pyiceberg.manifest import ManifestListWriterV2 as _PyIcebergManifestListWriterV2
from pyiceberg.manifest import ManifestWriterV2 as _PyIcebergManifestWriterV2
from pyiceberg.utils.schema_conversion import AvroSchemaConversion

from .manifests import note_entry_paths, note_list

__all__ = ["KEPT", "ManifestListWriterV2", "ManifestWriterV2", "cache_size", "write_manifest", "write_manifest_list"]

#: MW1: distinct manifest metadata whose writer set-up is kept.
KEPT = 64

_lock = threading.Lock()
_setups: dict[tuple, tuple[Any, Any, str]] = {}
_header_writer: Any = None


def cache_size() -> int:
    """How many writer set-ups are kept (MW1)."""
    return len(_setups)


class _PreparedAvroOutputFile(AvroOutputFile[Any]):
    """PyIceberg's AvroOutputFile with the file schema, writer tree and header schema
    JSON given (MW1) instead of built; the stream, encoder and sync marker are its own."""

    def __init__(
        self, output_file: OutputFile, file_schema: Any, writer: Any, json_schema: str, schema_name: str,
        metadata: dict[str, str],
    ) -> None:  # fmt: skip
        self.output_file = output_file
        self.file_schema = file_schema
        self.schema_name = schema_name
        self.sync_bytes = os.urandom(SYNC_SIZE)
        self.writer = writer
        self.metadata = metadata
        self._json_schema = json_schema

    def _write_header(self) -> None:
        """PyIceberg's ``AvroOutputFile._write_header`` with the schema JSON prepared."""
        from pyiceberg.table import TableProperties

        global _header_writer
        codec_name = self.metadata.get(AVRO_CODEC_KEY, TableProperties.WRITE_AVRO_COMPRESSION_DEFAULT)
        if avro_codec_name := CODEC_MAPPING_ICEBERG_TO_AVRO.get(codec_name):
            codec_name = avro_codec_name
        meta = {**self.metadata, "avro.schema": self._json_schema, AVRO_CODEC_KEY: codec_name}
        if _header_writer is None:
            _header_writer = construct_writer(META_SCHEMA)
        _header_writer.write(self.encoder, AvroFileHeader(MAGIC, meta, self.sync_bytes))


class ManifestWriterV2(_PyIcebergManifestWriterV2):
    """PyIceberg 0.12's v2 manifest writer whose Avro set-up is built once per distinct
    manifest metadata (MW1); what it wrote goes to the manifests cache (MW4)."""

    _written: list[tuple[Any, str]] | None = None
    _complete = False

    def add_entry(self, entry: ManifestEntry) -> "ManifestWriterV2":
        super().add_entry(entry)
        if self._written is None:
            self._written = []
        self._written.append((entry.status, entry.data_file.file_path))  # MW4: as encoded
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        super().__exit__(exc_type, exc_value, traceback)
        self._complete = exc_type is None

    def to_manifest_file(self) -> ManifestFile:
        manifest = super().to_manifest_file()
        if self._complete and self._written:  # MW4: only a file written completely
            note_entry_paths(manifest, tuple(self._written))
        return manifest

    def new_writer(self) -> AvroOutputFile[ManifestEntry]:
        meta = self._meta
        key = (type(self), self.version, meta.get("schema"), meta.get("partition-spec"), meta.get("partition-spec-id"))
        file_schema, writer, json_schema = _setup(
            key, lambda: self._with_partition(self.version), lambda: self._with_partition(DEFAULT_READ_VERSION),
            "manifest_entry",
        )
        return _PreparedAvroOutputFile(self._output_file, file_schema, writer, json_schema, "manifest_entry", meta)


def _setup(
    key: tuple, file_schema_of: Callable[[], Any], record_schema_of: Callable[[], Any], schema_name: str
) -> tuple[Any, Any, str]:
    """MW1: the (file schema, resolved writer tree, header schema JSON) kept for ``key``,
    built from the schemas the callables give the first time (at most KEPT kept)."""
    with _lock:
        setup = _setups.get(key)
    if setup is None:
        file_schema = file_schema_of()
        writer = resolve_writer(record_schema=record_schema_of(), file_schema=file_schema)
        json_schema = json.dumps(AvroSchemaConversion().iceberg_to_avro(file_schema, schema_name=schema_name))
        setup = (file_schema, writer, json_schema)
        with _lock:
            if len(_setups) >= KEPT:
                _setups.clear()
            _setups[key] = setup
    return setup


def write_manifest(format_version: int, spec: Any, schema: Any, output_file: OutputFile, snapshot_id: int,
                   avro_compression: Any) -> Any:  # fmt: skip
    """PyIceberg's ``write_manifest``, with MW1's writer for format version 2."""
    if format_version == 2:
        return ManifestWriterV2(spec, schema, output_file, snapshot_id, avro_compression)
    from pyiceberg.manifest import write_manifest as pyiceberg_write_manifest

    return pyiceberg_write_manifest(format_version, spec, schema, output_file, snapshot_id, avro_compression)


class ManifestListWriterV2(_PyIcebergManifestListWriterV2):
    """PyIceberg 0.12's v2 manifest list writer whose Avro set-up is built once (MW3)."""

    _prepared: list[ManifestFile] | None = None

    def add_manifests(self, manifest_files: list[ManifestFile]) -> "ManifestListWriterV2":
        """PyIceberg's ``add_manifests``, keeping what it encodes (MW4)."""
        prepared = [self.prepare_manifest(manifest_file) for manifest_file in manifest_files]
        self._writer.write_block(prepared)
        self._prepared = [*(self._prepared or []), *prepared]
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        super().__exit__(exc_type, exc_value, traceback)
        if exc_type is None:  # MW4: only a file written completely
            note_list(self._output_file.location, self._commit_snapshot_id, self._prepared or [])

    def __enter__(self) -> "ManifestListWriterV2":
        file_schema, writer, json_schema = _setup(
            ("manifest list", 2), lambda: MANIFEST_LIST_FILE_SCHEMAS[2],
            lambda: MANIFEST_LIST_FILE_SCHEMAS[DEFAULT_READ_VERSION], "manifest_file",
        )
        self._writer = _PreparedAvroOutputFile(self._output_file, file_schema, writer, json_schema, "manifest_file",
                                               self._meta)  # fmt: skip
        self._writer.__enter__()
        return self


def write_manifest_list(format_version: int, output_file: OutputFile, snapshot_id: int, parent_snapshot_id: int | None,
                        sequence_number: int | None, avro_compression: Any) -> Any:  # fmt: skip
    """PyIceberg's ``write_manifest_list``, with MW3's writer for format version 2."""
    if format_version == 2 and sequence_number is not None:
        return ManifestListWriterV2(output_file, snapshot_id, parent_snapshot_id, sequence_number, avro_compression)
    from pyiceberg.manifest import write_manifest_list as pyiceberg_write_manifest_list

    return pyiceberg_write_manifest_list(format_version, output_file, snapshot_id, parent_snapshot_id, sequence_number,
                                         avro_compression)  # fmt: skip
