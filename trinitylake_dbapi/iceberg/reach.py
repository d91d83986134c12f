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
     caller decides (expiration refuses to go on, verify reports a problem).
  R4 Every location reported (files and table locations) is in the one canonical form
     of ``storage.locations`` (U1-U3): a data file a manifest names as ``file:/x``,
     ``/x`` or ``file:///a/./x`` is the same file as the listing's, so expiration never
     takes a live file for an unreached one (issue 31 item 4).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Iterable

from pyiceberg.serializers import FromInputFile
from pyiceberg.table.metadata import TableMetadata

from ..storage.locations import canonical_location
from .io import DurableFileIO, file_io_properties

__all__ = ["IcebergReach", "Reached"]


@dataclass
class Reached:
    """What metadata files reach: every file (absolute locations, canonical: R4) and
    the table locations (``location`` of each metadata file, canonical), plus what R1
    needed but could not read (location -> reason)."""

    files: set[str] = field(default_factory=set)
    table_locations: set[str] = field(default_factory=set)
    missing: dict[str, str] = field(default_factory=dict)


class IcebergReach:
    """R1 over many metadata files, with R2's memo."""

    def __init__(self, storage_options: dict | None = None) -> None:
        self._io = DurableFileIO(file_io_properties(storage_options))
        self._lock = threading.Lock()
        self._of_metadata: dict[str, tuple[frozenset[str], str]] = {}
        self._of_manifest_list: dict[str, frozenset[str]] = {}
        self._of_manifest: dict[str, frozenset[str]] = {}
        self._locations: dict[str, str] = {}

    def reach(self, metadata_locations: Iterable[str]) -> Reached:
        """Everything the metadata files at ``metadata_locations`` reach (R1, R3)."""
        reached = Reached()
        for location in set(metadata_locations):
            try:
                files, table_location = self._metadata(location)
            except FileNotFoundError as e:
                reached.missing[location] = f"missing: {e}"
                continue
            except (OSError, ValueError) as e:
                reached.missing[location] = f"cannot be read: {e}"
                continue
            reached.files |= files
            reached.table_locations.add(table_location)
        return reached

    def table_locations(self, pointers: Iterable[tuple[str, bool]]) -> list[tuple[str, bool]]:
        """(table location, flag) for each (metadata location, flag) whose metadata
        can be read (the ``location`` it records); unreadable ones are left out."""
        out = []
        for metadata_location, flag in pointers:
            with self._lock:
                location = self._locations.get(metadata_location)
            if location is None:
                try:
                    location = self.metadata(metadata_location).location
                except (OSError, ValueError):
                    continue
                with self._lock:
                    self._locations[metadata_location] = location
            out.append((canonical_location(location), flag))
        return out

    def metadata(self, location: str) -> TableMetadata:
        """The parsed metadata file at ``location``; FileNotFoundError or OSError when
        it cannot be read, ValueError when it does not parse."""
        return FromInputFile.table_metadata(self._io.new_input(location))

    def exists(self, location: str) -> bool:
        """True if the file at ``location`` exists."""
        return self._io.new_input(location).exists()

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
        for manifest in snapshot.manifests(self._io):  # type: ignore[attr-defined]
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
        entries = manifest.fetch_manifest_entry(self._io, discard_deleted=True)  # type: ignore[attr-defined]
        result = frozenset({path, *(entry.data_file.file_path for entry in entries)})
        with self._lock:
            self._of_manifest[path] = result
        return result
