"""The files an Iceberg metadata file reaches (SPEC 8, Reachability).

Rules:

  R1 A metadata file reaches itself, every snapshot it lists -> that snapshot's manifest
     list -> its manifests -> the data and delete files of their live entries (ADDED or
     EXISTING; a DELETED entry records a removal and keeps nothing alive), and the
     statistics and partition statistics files it names. Entries of its
     ``metadata-log`` are not reached: an older metadata file lives only as long as a
     kept lakehouse version names it.
  R2 Metadata files, manifest lists and manifests are immutable, so what one reaches is
     computed once per instance of :class:`IcebergReach` (expiration and verify ask for
     the same files over many versions).
  R3 A file that R1 needs but that is missing is reported, never skipped silently: the
     caller decides (expiration refuses to go on, verify reports a problem; a metadata
     file deleted after a commit, iceberg.oldmetadata OM5, is neither).
  R4 Every location reported (files and table locations) is in the one canonical form
     of ``storage.locations`` (U1-U3): a data file a manifest names as ``file:/x``,
     ``/x`` or ``file:///a/./x`` is the same file as the listing's, so expiration never
     takes a live file for an unreached one (issue 31 item 4).
  R5 What a manifest list records of each manifest (its length) and a manifest of each
     data or delete file (``file_size_in_bytes``) is kept with what is reached, so
     ``verify --data`` checks each file's content against it (:meth:`content_problem`).
  R6 Manifest lists and manifests are decoded with iceberg.manifests' reader trees,
     built once per distinct Avro file schema (MF1), not PyIceberg's, which resolves
     the schema at every file (~7 ms of a small file's ~10 ms: a ``verify --data``
     reads every snapshot's manifest list). Uncached beyond R2: what a verify or an
     expiration reads stays out of the process-wide cache of planning (MF2).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Iterable

from pyiceberg.table.metadata import TableMetadata

from ..errors import CorruptFileError
from ..storage.locations import canonical_location
from .files import parse_metadata
from .io import DurableFileIO, file_io_properties
from .manifests import manifest_entries, read_list
from .oldmetadata import METADATA_PATH, deletion_prefixes

__all__ = ["IcebergReach", "Reached"]


@dataclass
class Reached:
    """What metadata files reach: every file (absolute locations, canonical: R4) and
    the table locations (``location`` of each metadata file, canonical), plus what R1
    needed but could not read (location -> reason)."""

    files: set[str] = field(default_factory=set)
    table_locations: set[str] = field(default_factory=set)
    missing: dict[str, str] = field(default_factory=dict)
    #: The metadata files among ``missing`` that do not exist (rather than not read).
    absent: set[str] = field(default_factory=set)
    #: R5: the size recorded for a reached manifest (in its manifest list) or data or
    #: delete file (in its manifest), by location.
    sizes: dict[str, int] = field(default_factory=dict)


class IcebergReach:
    """R1 over many metadata files, with R2's memo."""

    def __init__(self, storage_options: dict | None = None) -> None:
        self._io = DurableFileIO(file_io_properties(storage_options))
        self._lock = threading.Lock()
        self._of_metadata: dict[str, tuple[frozenset[str], str]] = {}
        self._of_manifest_list: dict[str, frozenset[str]] = {}
        self._of_manifest: dict[str, frozenset[str]] = {}
        self._locations: dict[str, tuple[str, tuple[str, ...], str | None]] = {}
        self._sizes: dict[str, int] = {}

    def reach(self, metadata_locations: Iterable[str]) -> Reached:
        """Everything the metadata files at ``metadata_locations`` reach (R1, R3)."""
        reached = Reached()
        for location in set(metadata_locations):
            try:
                files, table_location = self._metadata(location)
            except FileNotFoundError as e:
                reached.missing[location] = f"missing: {e}"
                reached.absent.add(location)
                continue
            except (OSError, ValueError, CorruptFileError) as e:
                reached.missing[location] = f"cannot be read: {e}"
                continue
            reached.files |= files
            reached.table_locations.add(table_location)
        with self._lock:
            reached.sizes = {f: self._sizes[f] for f in reached.files if f in self._sizes}
        return reached

    def table_locations(self, pointers: Iterable[tuple[str, bool]]) -> list[tuple[str, bool]]:
        """(table location, flag) for each (metadata location, flag) whose metadata
        can be read (the ``location`` it records); unreadable ones are left out."""
        out = []
        for metadata_location, flag in pointers:
            known = self._summary(metadata_location)
            if known is not None:
                out.append((canonical_location(known[0]), flag))
        return out

    def deletion_prefixes(self, pointers: Iterable[tuple[str, bool]]) -> set[str]:
        """iceberg.oldmetadata OM5: the directories of the tables that enable
        delete-after-commit, among the readable metadata files of the (metadata
        location, is EXTERNAL) ``pointers`` of MANAGED tables."""
        found: set[str] = set()
        for metadata_location, external in pointers:
            known = None if external else self._summary(metadata_location)
            if known is not None:
                found.update(known[1])
        return found

    def metadata_paths(self, pointers: Iterable[tuple[str, bool]]) -> list[tuple[str, bool]]:
        """(directory, flag) for each (metadata location, flag) of ``pointers`` whose
        metadata can be read: the table's ``write.metadata.path`` when it sets one
        (canonical), and for a flagged (EXTERNAL) table also the directory of the
        metadata file itself, whose older siblings are its owner's (maintenance E8)."""
        out = []
        for metadata_location, flag in pointers:
            known = self._summary(metadata_location)
            if known is not None and known[2] is not None:
                out.append((known[2], flag))
            if flag:
                out.append((canonical_location(metadata_location).rsplit("/", 1)[0], flag))
        return out

    def _summary(self, metadata_location: str) -> tuple[str, tuple[str, ...], str | None] | None:
        """(table location, OM5 directories if it enables delete-after-commit, its
        ``write.metadata.path`` canonical or None) of a metadata file, memoized; None
        when it cannot be read."""
        with self._lock:
            known = self._locations.get(metadata_location)
        if known is None:
            try:
                metadata = self.metadata(metadata_location)
            except (OSError, ValueError, CorruptFileError):
                return None
            custom = metadata.properties.get(METADATA_PATH)
            known = (
                metadata.location,
                tuple(sorted(deletion_prefixes([metadata]))),
                canonical_location(custom) if custom else None,
            )
            with self._lock:
                self._locations[metadata_location] = known
        return known

    def metadata(self, location: str) -> TableMetadata:
        """The parsed metadata file at ``location``; FileNotFoundError or OSError when
        it cannot be read, CorruptFileError naming it when it does not parse (IF1)."""
        with self._io.new_input(location).open() as stream:
            data = stream.read()
        return parse_metadata(location, data)

    def exists(self, location: str) -> bool:
        """True if the file at ``location`` exists."""
        return self._io.new_input(location).exists()

    def content_problem(self, location: str, recorded_size: int | None) -> str | None:
        """R5: what is wrong with the content of the existing file at ``location``, or
        None: a size other than ``recorded_size`` (what its manifest list or manifest
        says), an Avro file that is not whole (iceberg.files IF2), a Parquet file whose
        ends are not Parquet's (IF3). Reads an Avro file whole, only the ends of the
        others."""
        from .files import avro_problem, parquet_problem

        source = self._io.new_input(location)
        if location.endswith(".avro"):
            with _unchecked(source) as stream:
                data = stream.read()
            if recorded_size is not None and len(data) != recorded_size:
                return f"{len(data)} bytes, but its manifest list records {recorded_size} (truncated or overwritten)"
            return avro_problem(data)
        if location.endswith(".parquet"):
            with _unchecked(source) as stream:
                stream.seek(0, 2)
                size = stream.tell()
                stream.seek(0)
                head = stream.read(4)
                stream.seek(max(size - 8, 0))
                tail = stream.read(8)
            return parquet_problem(size, head, tail, recorded_size)
        if recorded_size is not None:
            size = len(source)
            if size != recorded_size:
                return f"{size} bytes, but its manifest records {recorded_size} (truncated or overwritten)"
        return None

    def _metadata(self, location: str) -> tuple[frozenset[str], str]:
        with self._lock:
            known = self._of_metadata.get(location)
        if known is not None:
            return known
        metadata = self.metadata(location)
        files = {location}
        for snapshot in metadata.snapshots:
            files |= self._manifest_list(snapshot)
        for statistics in [*metadata.statistics, *metadata.partition_statistics]:
            files.add(statistics.statistics_path)
        result = (frozenset(canonical_location(f) for f in files), canonical_location(metadata.location))
        with self._lock:
            self._of_metadata[location] = result
        return result

    def _manifest_list(self, snapshot: object) -> frozenset[str]:
        path: str = snapshot.manifest_list  # type: ignore[attr-defined]
        with self._lock:
            known = self._of_manifest_list.get(path)
        if known is not None:
            return known
        files = {path}
        for manifest in read_list(self._io, path).manifests:  # R6
            with self._lock:
                self._sizes[canonical_location(manifest.manifest_path)] = manifest.manifest_length
            files |= self._manifest(manifest)
        result = frozenset(files)
        with self._lock:
            self._of_manifest_list[path] = result
        return result

    def _manifest(self, manifest: object) -> frozenset[str]:
        path: str = manifest.manifest_path  # type: ignore[attr-defined]
        with self._lock:
            known = self._of_manifest.get(path)
        if known is not None:
            return known
        entries = manifest_entries(self._io, manifest, discard_deleted=True)  # type: ignore[arg-type]  # R6
        result = frozenset({path, *(entry.data_file.file_path for entry in entries)})
        with self._lock:
            self._sizes.update((canonical_location(e.data_file.file_path), e.data_file.file_size_in_bytes) for e in entries)
        with self._lock:
            self._of_manifest[path] = result
        return result


def _unchecked(source: Any) -> Any:
    """A seekable stream of ``source`` without the Avro check of the durable FileIO (io
    F5): the caller checks the bytes, and reports what is wrong instead of raising."""
    from pyiceberg.io.pyarrow import PyArrowFile

    if isinstance(source, PyArrowFile):
        return PyArrowFile.open(source, seekable=True)
    return source.open(seekable=True)
