"""Decoding manifest lists and manifests once, for planning and for commits (issue 34).

Planning (:mod:`.planning`) and the commit path (a snapshot producer's existing
manifests, the checks of a commit: tables M6, transaction C7) read the same immutable
Avro files. PyIceberg's ``Snapshot.manifests`` and ``ManifestFile.fetch_manifest_entry``
resolve the file's Avro schema against the read schema at every read (~5 ms a file, most
of decoding a small one): after N one-row commits an INSERT decoded the N-entry manifest
list three times and its own new manifest twice.

Rules:

  MF1 The Avro reader tree of a manifest list or manifest (its file schema resolved
      against PyIceberg's read schema) is built once per distinct file schema (at most
      64 kept) and reused: a table's manifests share their writer's schema. The reader
      of the Avro file header (one fixed schema) is built once per process (PyIceberg
      builds it at every file opened: ~7% of a one-row INSERT's CPU, which opens its
      parent's manifest list and its new manifest and manifest list).
  MF2 Decoded files are kept in one process-wide LRU (:data:`CACHE`, reported and bounded
      by :mod:`.planning`'s ``cache_info`` and ``set_cache_limit``), bounded by the
      estimated bytes of what it holds. A manifest list is kept under its canonical
      location and its snapshot id (planning adds whether a confinement was checked
      before it was read, planning PC3). Iceberg never rewrites a file, so nothing is
      invalidated (planning PC2).
  MF3 What is returned is shared: callers never mutate a ManifestFile or ManifestEntry
      they got from here (copy it first, as a rebased append does).
  MF5 A manifest's set of live data file paths (:func:`live_data_paths`, cached as in
      MF2 under the manifest's canonical location, length, sequence number and adding
      snapshot) tells a writer which manifests hold the files it replaces: an overwrite
      or rewrite decodes only those (writing W7).
  MF4 Entries read with :func:`manifest_entries` inherit snapshot id, sequence numbers
      and partition spec from the manifest list entry exactly as PyIceberg's
      ``fetch_manifest_entry`` makes them inherit.
  MF6 What a commit reads back of the files its snapshot adds (tables M6's check,
      catalog P9's list: each entry's status and data file path, :func:`entry_paths`;
      the new manifest list) is decoded once per process and kept as in MF2: a
      manifest's pairs under its canonical location, length and adding snapshot, a
      list under MF2's key. A file this process wrote with :mod:`.manifest_writers`
      (manifest_writers MW4) is put there by its writer once it is completely
      written, as the file holds it (the manifest list's entries as the writer
      prepared and encoded them, each manifest's pairs as it encoded them), so the
      commit that adds it, and the next append that reads its parent's list, decode
      neither. Iceberg files are never rewritten under the same location (MF2), so
      what is kept is what a decode would give (tests/iceberg/test_manifest_seeding.py
      compares them).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from pyiceberg.avro.decoder import new_decoder
from pyiceberg.avro.file import META_SCHEMA, AvroFile, AvroFileHeader
from pyiceberg.avro.resolver import construct_reader, resolve_reader
from pyiceberg.io import FileIO, InputFile
from pyiceberg.manifest import (
    DEFAULT_READ_VERSION,
    MANIFEST_ENTRY_SCHEMAS,
    MANIFEST_LIST_FILE_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
)

from ..storage.locations import canonical_location

__all__ = [
    "CACHE", "Cache", "ManifestAvroFile", "entry_paths", "inherit", "list_size", "live_data_paths", "manifest_entries",
    "manifests_kept", "note_entry_paths", "note_list", "note_live_data_paths", "snapshot_manifests",
]

_DEFAULT_LIMIT = 64 * 1024 * 1024


class Cache:
    """MF2: an LRU of decoded files, bounded by estimated bytes (each value has ``size``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.bytes = 0
        self._items: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def holds(self, key: tuple) -> bool:
        """Whether ``key`` is kept (not counted as a hit or a miss)."""
        with self._lock:
            return key in self._items

    def get(self, key: tuple) -> Any:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple, value: Any) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.bytes -= old.size
            if value.size > self.limit:
                return  # larger than the whole cache: used once, not kept
            self._items[key] = value
            self.bytes += value.size
            self._shrink()

    def _shrink(self) -> None:
        while self.bytes > self.limit and self._items:
            _, evicted = self._items.popitem(last=False)
            self.bytes -= evicted.size

    def set_limit(self, limit: int) -> None:
        with self._lock:
            self.limit = limit
            self._shrink()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes = 0

    def info(self) -> dict[str, int]:
        with self._lock:
            return {"entries": len(self._items), "bytes": self.bytes, "limit": self.limit,
                    "hits": self.hits, "misses": self.misses}  # fmt: skip


#: MF2: the process-wide cache of decoded manifest lists and manifests.
CACHE = Cache(_DEFAULT_LIMIT)


class ManifestAvroFile(AvroFile):
    """PyIceberg's AvroFile for a manifest list (``kind`` "list") or a manifest (any
    other ``kind``), whose reader tree is built once per distinct file schema (MF1)."""

    _readers: dict[tuple, tuple[Any, Any]] = {}
    _lock = threading.Lock()
    #: MF1: the reader of every Avro file's header (stateless: shared by all threads).
    _header_reader: Any = None

    def __init__(self, input_file: InputFile, kind: str) -> None:
        if kind == "list":
            super().__init__(input_file, MANIFEST_LIST_FILE_SCHEMAS[DEFAULT_READ_VERSION],
                             read_types={-1: ManifestFile, 508: PartitionFieldSummary},
                             read_enums={517: ManifestContent})  # fmt: skip
        else:
            super().__init__(input_file, MANIFEST_ENTRY_SCHEMAS[DEFAULT_READ_VERSION],
                             read_types={-1: ManifestEntry, 2: DataFile},
                             read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent})  # fmt: skip
        self._kind = kind

    def _read_header(self) -> AvroFileHeader:
        reader = ManifestAvroFile._header_reader
        if reader is None:
            reader = ManifestAvroFile._header_reader = construct_reader(META_SCHEMA, {-1: AvroFileHeader})
        return reader.read(self.decoder)

    def __enter__(self) -> "ManifestAvroFile":
        with self.input_file.open() as f:
            self.decoder = new_decoder(f.read())
        self.header = self._read_header()
        key = (self._kind, self.header.meta.get("avro.schema"))
        with self._lock:
            found = self._readers.get(key)
        if found is None:
            schema = self.header.get_schema()
            found = (schema, resolve_reader(schema, self.read_schema, self.read_types, self.read_enums))
            with self._lock:
                if len(self._readers) >= 64:
                    self._readers.clear()
                self._readers[key] = found
        self.schema, self.reader = found
        return self


class ManifestList:
    """A decoded manifest list (MF2): its manifests, in order."""

    __slots__ = ("manifests", "size", "confined")

    def __init__(self, manifests: list[ManifestFile]) -> None:
        self.manifests = manifests
        self.size = list_size(manifests)
        #: planning PC3: (table location, root) pairs whose M6 check these files passed.
        self.confined: set[tuple[str, str]] = set()


def list_size(manifests: list[ManifestFile]) -> int:
    """The estimated bytes of a decoded manifest list of ``manifests`` (MF2)."""
    return 300 + sum(500 + 2 * len(m.manifest_path) for m in manifests)


def list_key(snapshot: Any, confined: bool) -> tuple:
    """MF2: the cache key of ``snapshot``'s manifest list, read after a confinement
    check (``confined``) or without one."""
    return ("list", canonical_location(snapshot.manifest_list), snapshot.snapshot_id, confined)


def read_list(io: FileIO, location: str) -> ManifestList:
    """Decode the manifest list at ``location`` (MF1), uncached."""
    with ManifestAvroFile(io.new_input(location), "list") as reader:
        return ManifestList(list(reader))


def note_list(location: str, snapshot_id: int, manifests: list[ManifestFile]) -> None:
    """MF6: keep the manifest list just written completely at ``location`` for
    ``snapshot_id``, whose entries are ``manifests`` (as encoded; shared: MF3)."""
    CACHE.put(("list", canonical_location(location), snapshot_id, False), ManifestList(manifests))


def manifests_kept(snapshot: Any) -> bool:
    """Whether :func:`snapshot_manifests` of ``snapshot`` would read no file (MF2)."""
    return CACHE.holds(list_key(snapshot, False))


def snapshot_manifests(io: FileIO, snapshot: Any) -> list[ManifestFile]:
    """The manifests ``snapshot``'s manifest list names, in order, decoded once per
    process (MF2; shared: never mutate them, MF3). For the commit path, which checks
    locations itself (tables M6): planning reads through its own confinement."""
    key = list_key(snapshot, False)
    found = CACHE.get(key)
    if found is None:
        found = read_list(io, snapshot.manifest_list)
        CACHE.put(key, found)
    return found.manifests


def inherit(entry: ManifestEntry, manifest: ManifestFile) -> ManifestEntry:
    """MF4: Iceberg's inheritance of snapshot id, sequence numbers and partition spec
    from the manifest list entry (as PyIceberg's ``fetch_manifest_entry`` does)."""
    if entry.snapshot_id is None and manifest.added_snapshot_id is not None:
        entry.snapshot_id = manifest.added_snapshot_id
    inherits = manifest.sequence_number == 0 or entry.status == ManifestEntryStatus.ADDED
    if entry.sequence_number is None and inherits:
        entry.sequence_number = manifest.sequence_number
    if entry.file_sequence_number is None and inherits:
        entry.file_sequence_number = manifest.sequence_number
    entry.data_file.spec_id = manifest.partition_spec_id
    return entry


def manifest_entries(io: FileIO, manifest: ManifestFile, discard_deleted: bool = True) -> list[ManifestEntry]:
    """The entries of ``manifest`` as PyIceberg's ``fetch_manifest_entry`` returns them
    (MF4), decoded with a reused reader tree (MF1); new objects at every call."""
    with ManifestAvroFile(io.new_input(manifest.manifest_path), "manifest") as reader:
        return [
            inherit(entry, manifest)
            for entry in reader
            if not discard_deleted or entry.status != ManifestEntryStatus.DELETED
        ]


class _Paths:
    __slots__ = ("paths", "size")

    def __init__(self, paths: frozenset[str]) -> None:
        self.paths = paths
        self.size = 300 + sum(100 + len(p) for p in paths)


def _paths_key(manifest: ManifestFile) -> tuple:
    return ("paths", canonical_location(manifest.manifest_path), manifest.manifest_length,
            manifest.sequence_number, manifest.added_snapshot_id)  # fmt: skip


def note_live_data_paths(manifest: ManifestFile, paths: frozenset[str]) -> None:
    """MF5: remember what a reader that decoded ``manifest`` found (planning does, so a
    rewrite after a read decodes no manifest to find its files)."""
    CACHE.put(_paths_key(manifest), _Paths(paths))


def live_data_paths(io: FileIO, manifest: ManifestFile) -> frozenset[str]:
    """MF5: the paths of the live data files ``manifest`` lists (none for a delete
    manifest), decoded once per process."""
    key = _paths_key(manifest)
    found = CACHE.get(key)
    if found is None:
        entries = manifest_entries(io, manifest) if manifest.content == ManifestContent.DATA else []
        found = _Paths(frozenset(e.data_file.file_path for e in entries if e.data_file.content == DataFileContent.DATA))
        CACHE.put(key, found)
    return found.paths


class _EntryPaths:
    __slots__ = ("entries", "size")

    def __init__(self, entries: tuple[tuple[ManifestEntryStatus, str], ...]) -> None:
        self.entries = entries
        self.size = 300 + sum(100 + len(p) for _, p in entries)


def _entry_paths_key(location: str, length: int, added_snapshot_id: int | None) -> tuple:
    return ("entry paths", canonical_location(location), length, added_snapshot_id)


def note_entry_paths(manifest: ManifestFile, entries: tuple[tuple[ManifestEntryStatus, str], ...]) -> None:
    """MF6: keep the (status, data file path) of every entry of the manifest just
    written completely (``manifest``: what its writer's ``to_manifest_file`` gave)."""
    key = _entry_paths_key(manifest.manifest_path, manifest.manifest_length, manifest.added_snapshot_id)
    CACHE.put(key, _EntryPaths(entries))


def entry_paths(io: FileIO, manifest: ManifestFile) -> tuple[tuple[ManifestEntryStatus, str], ...]:
    """MF6: the status and data (or delete) file path of every entry of ``manifest``,
    deleted entries included, in file order; decoded once per process (shared)."""
    key = _entry_paths_key(manifest.manifest_path, manifest.manifest_length, manifest.added_snapshot_id)
    found = CACHE.get(key)
    if found is None:
        found = _EntryPaths(tuple(
            (e.status, e.data_file.file_path) for e in manifest_entries(io, manifest, discard_deleted=False)
        ))  # fmt: skip
        CACHE.put(key, found)
    return found.entries
