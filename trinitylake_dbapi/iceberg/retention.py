"""Iceberg snapshot retention: which snapshots a table's next metadata file drops.

Without it nothing but compaction ever removes a snapshot from a table's metadata, so
every data file an UPDATE, DELETE or compaction replaced stays reachable from the
latest version (SPEC 8: a metadata file reaches the files of EVERY snapshot it lists)
and version expiration never reclaims it. Iceberg's engines remove snapshots by an
explicit action (Spark's ``expire_snapshots`` procedure, Java's ``RemoveSnapshots``,
PyIceberg's ``table.maintenance.expire_snapshots()``); this module is that action, with
Iceberg's own rules and table properties, for SQL (``ALTER TABLE t EXECUTE
expire_snapshots(...)``), the catalog API (``TrinityLakeCatalog.expire_snapshots``) and
the lakehouse's ``EXPIRE VERSIONS`` (maintenance), which applies every table's
retention before it plans (docs/iceberg.md, "Snapshot retention").

Rules:

  RT1 Retention is an action, never a side effect of a write: a commit keeps every
      snapshot its base lists (as Iceberg's engines do), so snapshot time travel of
      Iceberg readers holds until someone expires. The action writes one new metadata
      file per table that drops snapshots (none when nothing is dropped) and is one
      lakehouse commit like any other: older lakehouse versions still name the older
      metadata files that list the dropped snapshots, so their files stay live until
      those versions expire (SPEC 7, 8).
  RT2 Which snapshots stay, as Iceberg's ``RemoveSnapshots`` decides: the head of every
      ref (branch or tag: the current snapshot is ``main``'s head); for each branch,
      its head's ancestors while fewer than ``min-snapshots-to-keep`` are kept or they
      are not older than ``now - max-snapshot-age-ms`` (the ref's own values when it
      has them, else the table properties ``history.expire.max-snapshot-age-ms``,
      default 5 days, and ``history.expire.min-snapshots-to-keep``, default 1; the
      action's ``older_than`` and ``retain_last`` replace the table properties); a
      snapshot no ref's history reaches, when it is not older than the cutoff. Refs
      are never dropped.
  RT3 The new metadata is PyIceberg's ``RemoveSnapshotsUpdate`` applied to the current
      metadata: the snapshots go, a kept snapshot whose parent went has no parent,
      the snapshot log loses the entries of the dropped snapshots and the statistics
      files of dropped snapshots go (partition statistics too), so every snapshot,
      ref, log entry and statistics file it names exists (PyIceberg and DuckDB read
      it).
  RT4 A removal is checked against the metadata it applies to, whoever sends it (our
      action or a PyIceberg client's ``expire_snapshots`` through the catalog): a
      snapshot that no longer exists, or that a ref names once the commit's own ref
      changes apply (a concurrent rollback or tag; a compaction's removal of the
      head it replaces is fine), is refused with CommitFailedException naming the table and snapshot,
      never a silent drop of a branch.
  RT5 A property that is not a whole number (or a negative age, or fewer than 1
      snapshot to keep) is InvalidDefinitionError naming the table and the property,
      before anything is written; so is ``retain_last`` < 1.
  RT6 Only MANAGED Iceberg tables whose definition names a metadata file are expired
      by ``EXPIRE VERSIONS``: an EXTERNAL table's files are never the lakehouse's to
      reclaim (maintenance E8), so its metadata is left as its owner wrote it. A
      table whose definition or metadata cannot be read (missing, damaged, outside the
      root) is left alone too: expiration then decides as it did without retention
      (E8 stops its Iceberg deletions when a kept version's metadata cannot be read;
      verify names the damaged file).
  RT7 ``EXPIRE VERSIONS`` applies retention (RT6) before it plans, in one lakehouse
      commit for every table (so one run drops the snapshots and reclaims what only
      expired versions reach), and never in a dry run. That commit is an ordinary one
      (transaction C1-C7): it adds no data file and changes only metadata, so the
      expiration rules that protect commits in flight (maintenance E4, E8-E10,
      reclaim G1-G6) hold unchanged; when it loses its race it is computed again on
      the latest version, a bounded number of times, then left to the next run.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterable

from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.update import (
    AddSnapshotUpdate,
    RemovePartitionStatisticsUpdate,
    RemoveSnapshotRefUpdate,
    RemoveSnapshotsUpdate,
    SetSnapshotRefUpdate,
    TableUpdate,
)

from ..catalog import MANAGED, CatalogTransaction, LakehouseCatalog
from ..errors import CorruptFileError, InvalidDefinitionError, MissingFileError, SerializationError
from ..format.paths import METADATA_LOCATION
from .tables import TableStates, apply_updates

__all__ = [
    "DEFAULT_MAX_SNAPSHOT_AGE_MS", "DEFAULT_MIN_SNAPSHOTS_TO_KEEP", "MAX_SNAPSHOT_AGE_MS", "MIN_SNAPSHOTS_TO_KEEP",
    "RETENTION_ATTEMPTS", "Retention", "apply_retention", "check_removals", "expire_table_snapshots",
    "expire_updates", "managed_tables", "retention_of", "snapshots_to_expire",
]

#: Iceberg's table properties (TableProperties.MAX_SNAPSHOT_AGE_MS, MIN_SNAPSHOTS_TO_KEEP).
MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
#: Iceberg's defaults: 5 days, 1 snapshot.
DEFAULT_MAX_SNAPSHOT_AGE_MS = 5 * 24 * 3600 * 1000
DEFAULT_MIN_SNAPSHOTS_TO_KEEP = 1


@dataclass(frozen=True)
class Retention:
    """A table's retention (RT2): snapshots older than ``max_age_ms`` go, but at least
    the newest ``min_keep`` of each branch's history stay."""

    max_age_ms: int
    min_keep: int


def _whole(table: str, name: str, text: str, least: int) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        value = None
    if value is None or value < least:
        raise InvalidDefinitionError(
            f"table {table}: property {name!r} = {text!r} is not a whole number >= {least}"
        )  # RT5
    return value


def retention_of(table: str, properties: dict[str, str]) -> Retention:
    """The retention the table properties say (RT2, RT5), Iceberg's defaults where
    they say nothing. ``table`` names the table in errors."""
    age = properties.get(MAX_SNAPSHOT_AGE_MS)
    keep = properties.get(MIN_SNAPSHOTS_TO_KEEP)
    return Retention(
        DEFAULT_MAX_SNAPSHOT_AGE_MS if age is None else _whole(table, MAX_SNAPSHOT_AGE_MS, age, 0),
        DEFAULT_MIN_SNAPSHOTS_TO_KEEP if keep is None else _whole(table, MIN_SNAPSHOTS_TO_KEEP, keep, 1),
    )


def _ancestors(metadata: TableMetadata, snapshot_id: int | None) -> Iterable:
    seen: set[int] = set()
    while snapshot_id is not None and snapshot_id not in seen:
        seen.add(snapshot_id)
        snapshot = metadata.snapshot_by_id(snapshot_id)
        if snapshot is None:
            return
        yield snapshot
        snapshot_id = snapshot.parent_snapshot_id


def _heads(metadata: TableMetadata) -> dict[str, tuple[int, bool, object]]:
    """name -> (snapshot id, is a branch, the ref); the current snapshot as ``main``
    when the metadata has no ref for it (format v1 written without refs)."""
    heads = {name: (ref.snapshot_id, ref.snapshot_ref_type == SnapshotRefType.BRANCH, ref)
             for name, ref in metadata.refs.items()}  # fmt: skip
    if metadata.current_snapshot_id is not None and "main" not in heads:
        heads["main"] = (metadata.current_snapshot_id, True, None)
    return heads


def snapshots_to_expire(
    table: str,
    metadata: TableMetadata,
    now_ms: int,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
) -> list[int]:
    """The ids of the snapshots ``metadata`` drops at ``now_ms`` (RT2), oldest first.

    ``older_than_ms`` (a timestamp) and ``retain_last`` replace the table properties'
    cutoff and minimum, as Spark's ``expire_snapshots(older_than, retain_last)`` does."""
    if retain_last is not None and retain_last < 1:
        raise InvalidDefinitionError(f"table {table}: retain_last must be at least 1, not {retain_last}")  # RT5
    if not metadata.snapshots:
        return []
    retention = retention_of(table, dict(metadata.properties))
    default_cutoff = now_ms - retention.max_age_ms if older_than_ms is None else older_than_ms
    default_keep = retention.min_keep if retain_last is None else retain_last
    heads = _heads(metadata)
    keep: set[int] = {snapshot_id for snapshot_id, _, _ in heads.values()}
    referenced: set[int] = set(keep)
    for snapshot_id, branch, ref in heads.values():
        if not branch:
            continue
        own_age = getattr(ref, "max_snapshot_age_ms", None)
        own_keep = getattr(ref, "min_snapshots_to_keep", None)
        cutoff = default_cutoff if own_age is None else now_ms - own_age
        minimum = default_keep if own_keep is None else own_keep
        kept_here = 0
        retaining = True
        for snapshot in _ancestors(metadata, snapshot_id):
            referenced.add(snapshot.snapshot_id)
            if retaining and (kept_here < minimum or snapshot.timestamp_ms >= cutoff):
                keep.add(snapshot.snapshot_id)
                kept_here += 1
            else:
                retaining = False
    for snapshot in metadata.snapshots:
        if snapshot.snapshot_id not in referenced and snapshot.timestamp_ms >= default_cutoff:
            keep.add(snapshot.snapshot_id)
    dropped = [s for s in metadata.snapshots if s.snapshot_id not in keep]
    return [s.snapshot_id for s in sorted(dropped, key=lambda s: (s.timestamp_ms, s.snapshot_id))]


def expire_updates(metadata: TableMetadata, snapshot_ids: list[int]) -> tuple[TableUpdate, ...]:
    """The updates that drop ``snapshot_ids`` from ``metadata`` (RT3): PyIceberg's
    ``RemoveSnapshotsUpdate`` (snapshots, their log entries, refs and statistics) and
    the removal of the dropped snapshots' partition statistics."""
    if not snapshot_ids:
        return ()
    dropped = set(snapshot_ids)
    partition_statistics = sorted(
        {p.snapshot_id for p in metadata.partition_statistics if p.snapshot_id in dropped}
    )
    return (
        RemoveSnapshotsUpdate(snapshot_ids=list(snapshot_ids)),
        *(RemovePartitionStatisticsUpdate(snapshot_id=s) for s in partition_statistics),
    )


def check_removals(table: str, current: TableMetadata, updates: tuple[TableUpdate, ...]) -> None:
    """RT4: refuse a removal of a snapshot that neither ``current`` nor ``updates`` add,
    or one a ref names once ``updates``' own ref changes apply (a compaction moves
    ``main`` off the snapshot it removes in the same commit): CommitFailedException
    naming ``table`` and the snapshot."""
    removed = [s for u in updates if isinstance(u, RemoveSnapshotsUpdate) for s in u.snapshot_ids]
    if not removed:
        return
    heads = {name: snapshot_id for name, (snapshot_id, _, _) in _heads(current).items()}
    added: set[int] = set()
    for update in updates:
        if isinstance(update, SetSnapshotRefUpdate):
            heads[update.ref_name] = update.snapshot_id
        elif isinstance(update, RemoveSnapshotRefUpdate):
            heads.pop(update.ref_name, None)
        elif isinstance(update, AddSnapshotUpdate):
            added.add(update.snapshot.snapshot_id)
    protected = {snapshot_id: name for name, snapshot_id in sorted(heads.items())}
    for snapshot_id in removed:
        if snapshot_id in protected:
            raise CommitFailedException(
                f"table {table}: snapshot {snapshot_id} is the head of ref {protected[snapshot_id]!r} "
                "and cannot be expired"
            )
        if current.snapshot_by_id(snapshot_id) is None and snapshot_id not in added:
            raise CommitFailedException(
                f"table {table}: snapshot {snapshot_id} does not exist (expired by another writer?)"
            )


def expire_table_snapshots(
    tables: TableStates,
    txn: CatalogTransaction,
    namespace: str,
    name: str,
    now_ms: int,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
) -> list[int]:
    """RT1-RT3 in ``txn``: drop the snapshots of table ``namespace.name`` that its
    retention (or ``older_than_ms`` / ``retain_last``) no longer keeps, as a new
    metadata file its definition names; returns the dropped ids, oldest first (none:
    nothing is written). A table without metadata or snapshots drops nothing."""
    table = f"{namespace}.{name}"
    info, current, location = tables.state(txn, namespace, name)
    if location is None or info.table_format.upper() != "ICEBERG":
        return []
    dropped = snapshots_to_expire(table, current, now_ms, older_than_ms, retain_last)
    if not dropped:
        return []
    updates = expire_updates(current, dropped)
    check_removals(table, current, updates)
    updated = apply_updates(current, updates, metadata_location=location)
    tables.publish(txn, info, updated, location, columns=info.columns, updates=updates)
    return dropped


def managed_tables(txn: CatalogTransaction) -> list[tuple[str, str]]:
    """RT6: (namespace, table) of every MANAGED Iceberg table ``txn`` sees whose
    definition names a metadata file (a definition that cannot be read is skipped)."""
    found = []
    for namespace, name in txn.list_tables():
        try:
            info = txn.describe_table(namespace, name)
        except (CorruptFileError, MissingFileError):
            continue  # a damaged definition: left to expiration's own rules and to verify
        if (info.table_type == MANAGED and info.table_format.upper() == "ICEBERG"
                and info.format_properties.get(METADATA_LOCATION)):
            found.append((namespace, name))
    return found


#: RT7: lakehouse commits of ``apply_retention`` tried before leaving it to the next run.
RETENTION_ATTEMPTS = 8


def apply_retention(
    catalog: LakehouseCatalog, now_ms: int, *, dry_run: bool = False, storage_options: dict | None = None
) -> dict[str, list[int]]:
    """RT6, RT7: every managed Iceberg table of the latest version drops the snapshots
    its own retention properties no longer keep, all in one lakehouse commit; returns
    ``"namespace.table"`` -> the dropped ids (only tables that drop any). With
    ``dry_run`` nothing is written: the same answer for the latest version. A commit
    that loses its race to other writers is computed again on the latest version,
    at most RETENTION_ATTEMPTS times; then nothing is dropped by this run."""
    from .io import DurableFileIO, file_io_properties

    root = catalog.storage.root_uri
    tables = TableStates(root, None, lambda: DurableFileIO(file_io_properties(storage_options, root)))
    for _ in range(RETENTION_ATTEMPTS):
        txn = catalog.begin()
        try:
            dropped: dict[str, list[int]] = {}
            for namespace, name in managed_tables(txn):
                try:
                    if dry_run:
                        _, current, _ = tables.state(txn, namespace, name)
                        ids = snapshots_to_expire(f"{namespace}.{name}", current, now_ms)
                    else:
                        ids = expire_table_snapshots(tables, txn, namespace, name, now_ms)
                except (CorruptFileError, MissingFileError):
                    continue  # RT6: a damaged table keeps its metadata; expiration's own rules decide
                if ids:
                    dropped[f"{namespace}.{name}"] = ids
            if dropped and not dry_run:
                txn.commit()
            else:
                txn.rollback()
            return dropped
        except SerializationError:
            with contextlib.suppress(Exception):
                txn.rollback()
            continue  # RT7: another writer changed a table meanwhile; look again
        except BaseException:
            txn.rollback()
            raise
    return {}
