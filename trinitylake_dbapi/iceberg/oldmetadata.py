"""Old metadata files deleted by ``write.metadata.delete-after-commit.enabled`` (issue 35;
iceberg.catalog P8).

Iceberg's catalogs delete, after a commit, the metadata files the commit dropped from
the table's metadata log (``write.metadata.previous-versions-max`` bounds the log) when
the table's properties enable ``write.metadata.delete-after-commit.enabled``. In a
lakehouse those files are also named by older lakehouse versions, so deleting them
costs those versions that table. The property is the table owner's explicit opt-in to
that cost.

Rules:

  OM1 A commit to a MANAGED table whose new metadata enables the property deletes the
      metadata files in the metadata log of the table's current metadata that are not
      in the new metadata's log (Iceberg's and PyIceberg's rule: never the current
      metadata file, never one the new log keeps). EXTERNAL tables: never (SPEC 8: the
      lakehouse deletes none of their files). A value that is not a boolean enables
      nothing.
  OM2 Only after the lakehouse version that drops them from the log is published
      (transaction C8): a commit that fails, loses or is rolled back deletes nothing; a
      crash between publication and deletion leaves them as files that older versions
      name, and version expiration reclaims them with those versions (maintenance E8).
      Deletion is best effort; PyIceberg's own ``_delete_old_metadata``, which its
      ``Table`` calls as soon as ``commit_table`` returns (inside a lakehouse
      transaction: before anything is published), does nothing here.
  OM3 Only files under the lakehouse root, under the table's location or its
      ``write.metadata.path`` (before or after the commit; itself inside the root,
      iceberg.tables M6), whose names are Iceberg metadata files (``.metadata.json``,
      optionally compressed), reached through no symbolic link under a local root
      (tables M7: the link is skipped, never followed).
  OM4 The cost: an older lakehouse version that names a deleted metadata file cannot
      read that table any more. Reading it there (time travel, a catalog or connection
      at that version, an exported snapshot) is MissingFileError naming the table, the
      version and the file (tables M9); ROLLBACK to such a version is refused before
      anything is published (catalog K9). Later versions read the table as always.
      Known limit: the files are checked right before the rollback's root is published;
      a deletion by another process's commit landing between that check and the
      publication (milliseconds) leaves the rollback version naming a deleted file,
      which then reads, verifies and expires as any version older than the deletion.
  OM5 A metadata file that a version names and that is missing is *deleted after
      commit* when it lies under the location or ``write.metadata.path`` of a readable
      metadata file of a MANAGED table, named by any existing version, that enables the
      property (:func:`deletion_prefixes`, :func:`explains_missing`). Version
      expiration then takes it as reaching nothing (maintenance E8), and verify
      reports it as a warning that says so, not as corruption.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable

from pyiceberg.table import TableProperties
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.utils.properties import property_as_bool

from ..storage.local import symlink_within
from ..storage.locations import canonical_location, location_within

__all__ = [
    "DELETE_AFTER_COMMIT", "METADATA_PATH", "deletes_old_metadata", "deletion_prefixes", "doomed_metadata",
    "delete_metadata_files", "explains_missing", "is_metadata_file", "metadata_prefixes",
]

_log = logging.getLogger(__name__)

DELETE_AFTER_COMMIT = TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED
METADATA_PATH = TableProperties.WRITE_METADATA_PATH
_METADATA_SUFFIXES = (".metadata.json", ".metadata.json.gz", ".gz.metadata.json")


def deletes_old_metadata(properties: dict[str, str]) -> bool:
    """OM1: whether table ``properties`` enable delete-after-commit (not a boolean: no)."""
    try:
        return property_as_bool(properties, DELETE_AFTER_COMMIT, False)
    except ValueError:
        return False


def is_metadata_file(location: str) -> bool:
    """OM3: whether ``location`` is named as an Iceberg metadata file."""
    return location.rsplit("/", 1)[-1].endswith(_METADATA_SUFFIXES)


def metadata_prefixes(metadata: TableMetadata) -> list[str]:
    """OM3, OM5: the canonical directories (ending with ``/``) where ``metadata``'s
    table keeps its metadata files: its location, and its ``write.metadata.path``."""
    found = [canonical_location(metadata.location).rstrip("/") + "/"]
    custom = metadata.properties.get(METADATA_PATH)
    if custom:
        found.append(canonical_location(custom).rstrip("/") + "/")
    return found


def doomed_metadata(root_uri: str, current: TableMetadata, updated: TableMetadata) -> list[str]:
    """OM1, OM3: the locations of the metadata files a commit from ``current`` to
    ``updated`` (of a MANAGED table in the lakehouse at ``root_uri``) deletes once it
    is published."""
    if not deletes_old_metadata(updated.properties):
        return []
    kept = {entry.metadata_file for entry in updated.metadata_log}
    prefixes = metadata_prefixes(current) + metadata_prefixes(updated)
    doomed = set()
    for entry in current.metadata_log:
        location = entry.metadata_file
        if location in kept or not is_metadata_file(location) or location_within(location, root_uri) is None:
            continue
        if any(canonical_location(location).startswith(p) for p in prefixes):
            doomed.add(location)
    return sorted(doomed)


def delete_metadata_files(io: Any, root_uri: str, locations: Iterable[str], table: str, version: int) -> None:
    """OM2, OM3: delete the metadata files at ``locations`` (from :func:`doomed_metadata`)
    through the FileIO ``io``, best effort, after ``version`` was published; a file
    reached through a symbolic link under the root is left alone."""
    for location in locations:
        try:
            if symlink_within(location, root_uri) is not None:
                _log.warning("table %s, version %d: %s is reached through a symbolic link: not deleted",
                             table, version, location)
                continue
            io.delete(location)
        except FileNotFoundError:
            pass  # deleted already (a REST client deletes them too, after the response)
        except Exception:  # noqa: BLE001 - best effort: expiration reclaims what stays (OM2)
            _log.warning("table %s, version %d: could not delete the old metadata file %s",
                         table, version, location, exc_info=True)


def deletion_prefixes(metadata: Iterable[TableMetadata]) -> set[str]:
    """OM5: the directories of the tables among ``metadata`` (readable metadata files of
    MANAGED tables) that enable delete-after-commit."""
    found: set[str] = set()
    for each in metadata:
        if deletes_old_metadata(each.properties):
            found.update(metadata_prefixes(each))
    return found


def explains_missing(location: str, prefixes: Iterable[str]) -> bool:
    """OM5: whether the missing metadata file ``location`` was deleted after a commit."""
    canonical = canonical_location(location)
    return is_metadata_file(location) and any(canonical.startswith(p) for p in prefixes)
