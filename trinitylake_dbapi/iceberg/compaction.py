"""Compaction: small data files (and the position deletes that apply to them) rewritten
into files of the table's target size, and the manifests rewritten, as one Iceberg
``replace`` snapshot (issue 34). SQL's ``OPTIMIZE`` and the catalog APIs call
:func:`compact`.

Rules:

  CP1 Selection, per partition (spec id and partition value), as Iceberg's
      ``rewrite_data_files`` decides with its defaults: a data file is a candidate when
      it is smaller than ``min_file_size`` (75 % of the target,
      ``write.target-file-size-bytes``) or has position delete files applying to it. A
      partition's candidates are rewritten when one of them has deletes, or when there
      are at least two and rewriting them makes fewer files (the ceiling of their
      total size over the target is smaller than their count). So compacting a
      compacted table changes nothing (no new snapshot, no new lakehouse version).
  CP2 Rows are read as every reader reads them (PyIceberg's ArrowScan: the table's
      current schema, position deletes applied) and written in the order read, cut
      into files of about the target size on disk: the bytes per row are measured by
      writing a sample of the rows with the table's Parquet codec and the
      encodings writing W10 chooses (iceberg.encodings PE1, PE3), again on one file's
      rows when a file holds fewer rows than the sample (a small file compresses
      less and carries its own footer), and the rows are split evenly into the fewest
      files that keep each within the target. Files are
      written in the table's current partition spec, through the table's FileIO
      (durable before the commit publishes them: io F1).
  CP3 A position delete file is removed with the rewrite when every data file it
      names was rewritten (its rows are then gone from the new files); one that also
      names a kept file stays, unchanged. A live position delete file that applies to
      no live data file (its files were replaced by a copy-on-write UPDATE or DELETE,
      or by PyIceberg's overwrite, which keep delete manifests) is removed too, and is
      reason enough for a compaction.
  CP4 The snapshot (operation ``replace``) lists every live file of its parent in
      rewritten manifests (at most ``MANIFEST_ENTRIES`` entries each, data and delete
      manifests apart, per partition spec): kept files as EXISTING entries with their
      own sequence numbers, rewritten ones as DELETED, new ones as ADDED. Its summary
      carries Iceberg's counts and totals. Older snapshots are dropped from the new
      metadata (those no other branch or tag references): the table's history is the
      lakehouse's versions, and a version from before the compaction still names the
      metadata file that lists them (time travel reads the old files, unchanged);
      version expiration reclaims the replaced files once no kept version's metadata
      reaches them (maintenance E8).
  CP5 A compaction that loses its commit to other writers of the table is rebased
      (iceberg.catalog P3) when every snapshot committed since its parent is an append
      of new data files (operation ``append``, no delete file): the snapshot is built
      again on the new head, whose appended files stay as they are. Anything else
      (an overwrite, a delete, another compaction, a rollback) is a conflict:
      CommitFailedException naming the table, and under SQL the statement runs again
      on the latest version (connection CN6).
  CP6 Automatic compaction, by table property, ON by default: after SQL commits to a
      table (INSERT, UPDATE, DELETE; :func:`auto_compact` for any writer), the table is
      compacted with CP7's selection when the data files committed since its last
      ``replace`` snapshot (summed from the summaries of the snapshots after it, or
      since the first) number at least N = ``compaction.auto.min-small-files``
      (``AUTO_MIN_SMALL_FILES_DEFAULT`` when the property is unset; ``0`` turns it
      off) and average under CP7's finished size, or when the snapshot counts at least
      ``compaction.auto.min-delete-files`` delete files (unset: never). The check reads
      only summaries (no manifest). A snapshot with no delete file and fewer than N data
      files is never due: CP7 could choose nothing there (no tier holds N files), and
      planning it read every manifest after each write (a copy-on-write UPDATE adds a
      file and removes one, so the files committed since the last ``replace`` grew past
      N on a table of one file). The compaction is always its own replace commit,
      never part of the writer's transaction: under autocommit it runs right after the
      write (the next version); in a transaction (no autocommit, or BEGIN) the write
      only notes the table, and once the transaction has committed the noted tables
      still due are compacted, each as its own version (catalog.session_scope SS4; in
      the transaction the replace would be replayed at COMMIT and could conflict with
      another writer's compaction, failing the transaction). It never fails or delays
      the write or the COMMIT with an error: a compaction that loses to another
      writer, or fails in any other way, is skipped (the next commit checks again).
      Only writes run it, so a read-only or time-travel connection (which cannot
      write) never compacts. The default (neither property set) applies only to
      MANAGED tables: an EXTERNAL table (registered from existing metadata:
      ``register_table``, CREATE EXTERNAL TABLE) is compacted only when one of the properties asks for it, since
      the lakehouse does not own its files (SPEC 8). A catalog that cannot defer (its
      own transaction block) skips the default in a transaction and compacts a table
      that sets a property inside it, at the risk above.
  CP7 The automatic policy's selection is tiered (OPTIMIZE keeps CP1's): per partition,
      a data file of at least half the target size is finished and never chosen; an
      unfinished file with r live rows is in tier floor(log_F(r)), F = max(2, N // 2).
      Tiers are visited upwards; a tier whose files (with the file the merge of the
      lower chosen tiers makes, when its rows fall in this tier and it is unfinished)
      number at least N is chosen, and its rows join that merge. Files with delete
      files are chosen too (as CP1), their rows starting the merge. So, since N >= F, a rewrite moves each of its rows
      up at least one tier (N files of >= F**k rows make >= F**(k+1)) or into finished
      files (CP2 splits only merges above the target, into pieces over half of it):
      ignoring rewrites caused by deletes, a row is rewritten at most
      log_F(rows of the table) + 1 times, a file is never rewritten because smaller ones
      arrived, and after each automatic compaction every tier of a partition holds
      fewer than N unfinished files (tests/iceberg/test_auto_tiers.py checks both).
  CP9 A group whose files have no delete files and were written in the table's
      current schema (the same Iceberg schema read from every file's Parquet footer,
      one Arrow schema for all) is read as those Parquet files are (:func:`read_plain`),
      which gives ArrowScan's rows without its per-file schema work (~1.5 ms a file);
      any other group is read through ArrowScan (CP2). A file whose rows this process
      kept when it wrote it (writing W13) is not read: its kept rows are what a read
      gives. A piece of up to 16 MiB is
      handed to the writer as one record batch (the same rows, in order), not one per
      file read.
  CP8 Planning decodes each manifest of the snapshot once (the reader tree reused:
      manifests MF1) and builds the scan tasks as PyIceberg's DataScan plans them without
      a filter (every live data file with the position deletes its DeleteFileIndex
      applies to it; equality deletes refused as PyIceberg refuses them), with a managed
      table's files checked as its ConfinedScan checks them (tables M6, M7), each before
      it is read; the commit's manifests reuse those decoded entries. (PyIceberg's
      planning resolved every manifest's Avro schema again: 29 of an automatic
      compaction's 71 ms CPU after one-row commits.)
"""

from __future__ import annotations

import io as _bytes_io
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable

from pyiceberg.exceptions import CommitFailedException
from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from pyiceberg.table import TableProperties
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.snapshots import Operation, Snapshot, SnapshotSummaryCollector, Summary, update_snapshot_summaries
from pyiceberg.table.update import (
    AddSnapshotUpdate,
    AssertRefSnapshotId,
    AssertTableUUID,
    RemoveSnapshotsUpdate,
    SetSnapshotRefUpdate,
    TableRequirement,
    TableUpdate,
)
from pyiceberg.utils.properties import property_as_int

from .manifest_writers import ManifestWriterV2, write_manifest, write_manifest_list
from .manifests import manifest_entries, snapshot_manifests

__all__ = ["AUTO_MIN_DELETE_FILES", "AUTO_MIN_SMALL_FILES", "AUTO_MIN_SMALL_FILES_DEFAULT", "choose_tiered", "auto_min_files",
           "tier_factor", "CompactionPlan", "CompactionResult", "DeleteManifestWriter",
           "auto_compact",
           "auto_compaction_due", "commit_compaction", "plan_compaction", "read_plain", "rewrite_group", "MANIFEST_ENTRIES", "MIN_FILE_SIZE_RATIO", "compact", "is_replace", "rebased_replace"]

#: CP1: a data file smaller than this share of the target size is a candidate.
MIN_FILE_SIZE_RATIO = 0.75
#: CP4: entries per rewritten manifest, at most (about 8 MiB of Avro with statistics).
MANIFEST_ENTRIES = 10_000
#: CP6: table properties of the automatic policy.
AUTO_MIN_SMALL_FILES = "compaction.auto.min-small-files"
#: CP6: N when ``compaction.auto.min-small-files`` is unset (measured: docs/performance.md).
AUTO_MIN_SMALL_FILES_DEFAULT = 16
#: CP7: a file of at least this share of the target is finished (never auto-chosen).
FINISHED_RATIO = 0.5
AUTO_MIN_DELETE_FILES = "compaction.auto.min-delete-files"
#: CP9: files above this size are decoded on pyarrow's threads (below, the pool costs more).
_THREADED_READ = 1 << 20
#: CP9: a piece of a rewrite up to this size is written as one batch (PyIceberg projects
#: each batch to the file schema apart: ~0.15 ms a batch, and a read gives one per file).
_COMBINE_BYTES = 16 << 20
#: CP2: rows written to measure the bytes per row.
SAMPLE_ROWS = 20_000


@dataclass
class CompactionResult:
    """What one compaction did (all zero and ``snapshot_id`` None: nothing to do)."""

    rewritten_data_files: int = 0
    added_data_files: int = 0
    removed_delete_files: int = 0
    rewritten_bytes: int = 0
    added_bytes: int = 0
    rewritten_manifests: int = 0
    snapshot_id: int | None = None
    metadata_location: str | None = None
    added: list[str] = field(default_factory=list)


def target_file_size(properties: dict[str, str], override: int | None = None) -> int:
    """The table's ``write.target-file-size-bytes`` (or ``override``), in bytes."""
    value = override if override is not None else int(properties.get(
        TableProperties.WRITE_TARGET_FILE_SIZE_BYTES, TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT
    ))  # fmt: skip
    if value <= 0:
        raise ValueError(f"the target file size must be positive, not {value}")
    return value


@dataclass
class CompactionPlan:
    """CP1's choice on one snapshot: the groups of scan tasks to rewrite (one partition
    each; FileScanTasks pickle, so groups can go to other processes), and what the
    commit needs."""

    metadata: TableMetadata
    snapshot: Snapshot
    target: int
    tasks: list[Any]
    groups: list[list[Any]]
    manifests: int
    write_uuid: uuid.UUID = field(default_factory=uuid.uuid4)
    #: CP3: live position delete files that apply to no live data file (path -> DataFile).
    dangling: dict[str, DataFile] = field(default_factory=dict)
    #: CP8: the live entries of ``snapshot``'s manifests as planning decoded them (by
    #: manifest path), for the commit's manifests; not sent with the plan (pickling).
    entries: dict[str, list[ManifestEntry]] | None = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "entries": None}

    @property
    def chosen(self) -> list[Any]:
        return [task for group in self.groups for task in group]


def plan_compaction(table: Any, target_size: int | None = None, tiered: int | None = None) -> CompactionPlan | None:
    """CP1 on ``table``'s current snapshot (CP7 with N = ``tiered`` when given): the
    plan, or None when there is nothing to do (no data file to rewrite, and, for CP1,
    manifests already as few as CP4 writes)."""
    metadata: TableMetadata = table.metadata
    snapshot = metadata.current_snapshot()
    if snapshot is None:
        return None
    target = target_file_size(metadata.properties, target_size)
    manifests, entries, tasks = _scan_tasks(table, snapshot)
    chosen = _choose(tasks, target) if tiered is None else choose_tiered(tasks, target, tiered)
    if tiered is not None and not chosen:
        return None  # CP7: no tier is full; the manifests are left to OPTIMIZE
    live_entries = sum((m.added_files_count or 0) + (m.existing_files_count or 0) for m in manifests)
    needed = max(1, math.ceil(live_entries / MANIFEST_ENTRIES))
    needed += 1 if any(m.content == ManifestContent.DELETES for m in manifests) else 0
    dangling = _dangling_deletes(table.io, manifests, tasks, entries)
    if not chosen and not dangling and len(manifests) <= needed:
        return None
    groups: dict[tuple, list[Any]] = {}
    for task in chosen:
        groups.setdefault((task.file.spec_id, _partition_key(task.file.partition)), []).append(task)
    return CompactionPlan(metadata, snapshot, target, tasks, list(groups.values()), len(manifests),
                          dangling=dangling, entries=entries)  # fmt: skip


def _scan_tasks(table: Any, snapshot: Snapshot) -> tuple[list[ManifestFile], dict[str, list[ManifestEntry]], list[Any]]:
    """CP8: the scan tasks of ``snapshot`` (every live data file with the position
    deletes that apply to it), as PyIceberg's DataScan plans them without a filter, and
    the manifests and live entries they came from. A managed table's manifest list,
    manifests, data and delete files are checked (tables M6, M7) as its ConfinedScan
    checks them, each before it is read."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.manifest import INITIAL_SEQUENCE_NUMBER
    from pyiceberg.table import FileScanTask
    from pyiceberg.table.delete_file_index import DeleteFileIndex

    io: FileIO = table.io
    confinement = getattr(table.scan(), "confinement", None)
    if confinement is not None:
        confinement.check(snapshot.manifest_list, "manifest list")
    manifests = snapshot_manifests(io, snapshot)
    if confinement is not None:
        for manifest in manifests:
            confinement.check(manifest.manifest_path, "manifest")
    min_sequence = min((m.min_sequence_number or INITIAL_SEQUENCE_NUMBER for m in manifests
                        if m.content == ManifestContent.DATA), default=INITIAL_SEQUENCE_NUMBER)  # fmt: skip
    entries: dict[str, list[ManifestEntry]] = {}
    data: list[ManifestEntry] = []
    index = DeleteFileIndex()
    for manifest in manifests:
        live = entries[manifest.manifest_path] = manifest_entries(io, manifest)
        if manifest.content == ManifestContent.DELETES and (manifest.sequence_number or INITIAL_SEQUENCE_NUMBER) < min_sequence:
            continue  # as PyIceberg's planning: deletes older than every data file apply to none
        for entry in live:
            content = entry.data_file.content
            if content == DataFileContent.DATA:
                data.append(entry)
            elif content == DataFileContent.POSITION_DELETES:
                index.add_delete_file(entry, partition_key=entry.data_file.partition)
            else:
                raise ValueError("PyIceberg does not yet support equality deletes: "
                                 "https://github.com/apache/iceberg/issues/6568")  # fmt: skip
    tasks = [
        FileScanTask(
            e.data_file,
            delete_files=index.for_data_file(e.sequence_number or INITIAL_SEQUENCE_NUMBER, e.data_file,
                                             partition_key=e.data_file.partition),
            residual=AlwaysTrue(),
        )
        for e in data
    ]  # fmt: skip
    if confinement is not None:
        for task in tasks:
            confinement.check_task(task)
    return manifests, entries, tasks


def rewrite_group(io: FileIO, plan: CompactionPlan, index: int) -> list[DataFile]:
    """CP2: the rows of ``plan``'s group ``index`` (deletes applied) written as data
    files of the target size through ``io``; file names are unique per group. The
    caller makes them durable (io F1) before they are committed."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan

    metadata = plan.metadata
    rows = read_plain(io, metadata, plan.groups[index])
    if rows is None:
        rows = ArrowScan(metadata, io, metadata.schema(), AlwaysTrue()).to_table(plan.groups[index])
    return _write(io, metadata, rows, plan.target, plan.write_uuid, index * 100_000)


def read_plain(io: FileIO, metadata: TableMetadata, tasks: list[Any]) -> Any:
    """CP9: the rows of ``tasks`` read as Parquet files as they are, in order, when
    that is what PyIceberg's ArrowScan reads from them: no task has delete files, every
    file is Parquet with one and the same Arrow schema, and that schema, read as
    ArrowScan reads a file's (field ids, no name mapping), is the table's current
    schema (same field ids, names, types, requiredness and order). None otherwise (the
    caller reads through ArrowScan). The values are ArrowScan's; the Arrow types may
    be the file's (``string`` where ArrowScan makes ``large_string``), which the
    writer casts to the table's anyway."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.io.pyarrow import pyarrow_to_schema
    from pyiceberg.manifest import FileFormat

    if not tasks or any(t.delete_files or t.file.file_format != FileFormat.PARQUET for t in tasks):
        return None
    from .writing import kept_rows

    tables = []
    for task in tasks:
        kept = kept_rows(task.file.file_path, task.file.file_size_in_bytes)  # writing W13
        if kept is not None:
            tables.append(kept)
            continue
        with io.new_input(task.file.file_path).open() as stream:
            tables.append(pq.ParquetFile(stream).read(use_threads=task.file.file_size_in_bytes > _THREADED_READ))
    arrow_schema = tables[0].schema
    if any(not t.schema.equals(arrow_schema, check_metadata=True) for t in tables[1:]):
        return None
    try:
        file_schema = pyarrow_to_schema(arrow_schema, None, downcast_ns_timestamp_to_us=metadata.format_version <= 2,
                                        format_version=metadata.format_version)  # fmt: skip
    except Exception:  # noqa: BLE001 - CP9: no field ids, or a type only ArrowScan converts
        return None
    if file_schema.as_struct() != metadata.schema().as_struct():
        return None
    return pa.concat_tables(tables)


def commit_compaction(table: Any, plan: CompactionPlan, added: list[DataFile]) -> CompactionResult:
    """CP3-CP5: the replace snapshot of ``plan`` adding ``added``, committed through the
    table's catalog (rebased there when appends came first); the table object is
    refreshed with the committed metadata."""
    io: FileIO = table.io
    metadata, snapshot = plan.metadata, plan.snapshot
    chosen = plan.chosen
    removed_data = {t.file.file_path: t.file for t in chosen}
    removed_deletes = {**_removable_deletes(io, chosen, set(removed_data), plan.tasks), **plan.dangling}
    snapshot_id = metadata.new_snapshot_id()
    updates = replace_updates(metadata, io, snapshot, snapshot_id, added, set(removed_data) | set(removed_deletes),
                              plan.entries)  # fmt: skip
    requirements: tuple[TableRequirement, ...] = (
        AssertTableUUID(uuid=metadata.table_uuid),
        AssertRefSnapshotId(ref=MAIN_BRANCH, snapshot_id=snapshot.snapshot_id),
    )
    response = table.catalog.commit_table(table, requirements, updates)
    table.metadata = response.metadata
    table.metadata_location = response.metadata_location
    return CompactionResult(
        rewritten_data_files=len(removed_data),
        added_data_files=len(added),
        removed_delete_files=len(removed_deletes),
        rewritten_bytes=sum(f.file_size_in_bytes for f in removed_data.values()),
        added_bytes=sum(f.file_size_in_bytes for f in added),
        rewritten_manifests=plan.manifests,
        snapshot_id=snapshot_id,
        metadata_location=response.metadata_location,
        added=[f.file_path for f in added],
    )


def compact(table: Any, *, target_size: int | None = None, tiered: int | None = None) -> CompactionResult:
    """Compact ``table`` (a PyIceberg Table of this package's catalog, or any catalog
    that commits Iceberg updates) as CP1-CP4 say, in this process, and commit the
    replace snapshot through its catalog (CP5). Spark runs the same three steps with
    the groups rewritten on its executors (spark.compaction)."""
    plan = plan_compaction(table, target_size, tiered)
    if plan is None:
        return CompactionResult()
    added: list[DataFile] = []
    for index in range(len(plan.groups)):
        added += rewrite_group(table.io, plan, index)
    return commit_compaction(table, plan, added)


def auto_min_files(properties: dict[str, str]) -> int:
    """CP6: the table's N (0: the small-files policy is off)."""
    value = properties.get(AUTO_MIN_SMALL_FILES)
    if value is None:
        return AUTO_MIN_SMALL_FILES_DEFAULT
    try:
        number = int(value)
    except ValueError:
        return AUTO_MIN_SMALL_FILES_DEFAULT
    return 0 if number <= 0 else max(2, number)


def tier_factor(min_files: int) -> int:
    """CP7: the row-count factor F between tiers for N = ``min_files``."""
    return max(2, min_files // 2)


def auto_compaction_due(metadata: TableMetadata) -> bool:
    """CP6: whether the table's properties ask for a compaction of its current snapshot
    (read from the snapshots' summaries alone)."""
    properties = metadata.properties
    min_small = auto_min_files(properties)
    min_deletes = properties.get(AUTO_MIN_DELETE_FILES)
    snapshot = metadata.current_snapshot()
    if snapshot is None or snapshot.summary is None:
        return False

    def count(summary: Any, key: str) -> int:
        try:
            return int((summary.additional_properties if summary is not None else {}).get(key, "0"))
        except ValueError:
            return 0

    if min_deletes is not None:
        try:
            if count(snapshot.summary, "total-delete-files") >= max(1, int(min_deletes)):
                return True
        except ValueError:
            pass
    if not min_small or count(snapshot.summary, "total-data-files") < 2:
        return False
    totals = snapshot.summary.additional_properties
    if "total-delete-files" in totals and count(snapshot.summary, "total-delete-files") == 0 \
            and count(snapshot.summary, "total-data-files") < min_small:
        return False  # CP6: CP7 chooses nothing (no file with deletes, no tier of N files)
    by_id = {s.snapshot_id: s for s in metadata.snapshots}
    files = size = 0
    at: Snapshot | None = snapshot
    while at is not None and at.summary is not None and at.summary.operation != Operation.REPLACE:
        files += count(at.summary, "added-data-files")
        size += count(at.summary, "added-files-size")
        at = by_id.get(at.parent_snapshot_id) if at.parent_snapshot_id is not None else None
    return files >= min_small and size / files < target_file_size(properties) * FINISHED_RATIO


def auto_compact(table: Any) -> CompactionResult | None:
    """CP6: compact ``table`` (refreshed after a commit) with CP7's selection if its
    properties ask for it; None when they do not, or when the compaction did not
    happen (lost to another writer, or failed: never the write's failure)."""
    if not auto_compaction_due(table.metadata):
        return None
    properties = table.metadata.properties
    explicit = AUTO_MIN_SMALL_FILES in properties or AUTO_MIN_DELETE_FILES in properties
    if not explicit and getattr(table, "lakehouse_root", "") is None:
        return None  # CP6: an EXTERNAL table (LakehouseTable without a root) only when asked
    staged = getattr(table.catalog, "commits_each_call", None)
    if staged is not None and not staged():
        defer = getattr(table.catalog, "defer_compaction", None)
        if defer is not None and defer(table.name()):
            return None  # CP6: compacted after the transaction commits, as its own version
        if not explicit:
            return None  # CP6: where nothing can defer it, the default runs only per version
    try:
        return compact(table, tiered=max(2, auto_min_files(table.metadata.properties) or AUTO_MIN_SMALL_FILES_DEFAULT))
    except Exception:  # noqa: BLE001 - CP6: the write committed; the next commit checks again
        return None


def _partition_key(partition: Any) -> tuple:
    """A hashable form of a partition record."""
    return tuple(partition) if partition is not None else ()


def _choose(tasks: list[Any], target: int) -> list[Any]:
    """CP1: the scan tasks whose data files are to be rewritten."""
    min_size = int(target * MIN_FILE_SIZE_RATIO)
    groups: dict[tuple, list[Any]] = {}
    for task in tasks:
        if task.file.file_size_in_bytes < min_size or task.delete_files:
            groups.setdefault((task.file.spec_id, _partition_key(task.file.partition)), []).append(task)
    chosen: list[Any] = []
    for candidates in groups.values():
        size = sum(t.file.file_size_in_bytes for t in candidates)
        if any(t.delete_files for t in candidates) or (
            len(candidates) >= 2 and math.ceil(size / target) < len(candidates)
        ):
            chosen += candidates
    return chosen


def choose_tiered(tasks: list[Any], target: int, min_files: int) -> list[Any]:
    """CP7: the scan tasks the automatic policy rewrites, with N = ``min_files``.
    ``tasks`` need only ``.file`` (``file_size_in_bytes``, ``record_count``,
    ``spec_id``, ``partition``) and ``.delete_files``."""
    factor = tier_factor(min_files)
    finished = target * FINISHED_RATIO

    def tier(rows: int) -> int:
        level, bound = 0, factor
        while rows >= bound:
            level, bound = level + 1, bound * factor
        return level

    partitions: dict[tuple, list[Any]] = {}
    for task in tasks:
        partitions.setdefault((task.file.spec_id, _partition_key(task.file.partition)), []).append(task)
    chosen: list[Any] = []
    for members in partitions.values():
        tiers: dict[int, list[Any]] = {}
        merged_rows = merged_bytes = 0
        for task in members:
            if task.delete_files:
                chosen.append(task)  # CP7: as CP1; its rows start the merge
                merged_rows += task.file.record_count
                merged_bytes += task.file.file_size_in_bytes
            elif task.file.file_size_in_bytes < finished:
                tiers.setdefault(tier(task.file.record_count), []).append(task)
        level = 0
        top = max(max(tiers, default=-1), tier(merged_rows) if merged_rows else -1)
        while level <= top:
            files = tiers.get(level, [])
            carried = bool(merged_rows) and merged_bytes < finished and tier(merged_rows) == level
            if files and len(files) + carried >= min_files:
                chosen += files
                merged_rows += sum(t.file.record_count for t in files)
                merged_bytes += sum(t.file.file_size_in_bytes for t in files)
                top = max(top, tier(merged_rows))
            level += 1
    return chosen


def _write(io: FileIO, metadata: TableMetadata, rows: Any, target: int, write_uuid: uuid.UUID, first: int) -> list[DataFile]:
    """CP2: ``rows`` (one partition's) as data files of about ``target`` bytes each."""
    from pyiceberg.io.pyarrow import _determine_partitions
    from pyiceberg.table import WriteTask

    from .writing import for_writing, write_files

    if not rows.num_rows:
        return []
    spec = metadata.spec()
    schema = metadata.schema()
    parts = (
        [(None, rows)] if spec.is_unpartitioned()
        else [(p.partition_key, p.arrow_table_partition) for p in _determine_partitions(spec, schema, rows)]
    )  # fmt: skip
    tasks = []
    task_id = first
    for key, part in parts:
        files = max(1, math.ceil(part.num_rows * _bytes_per_row(part, metadata.properties) / target))
        per = math.ceil(part.num_rows / files)
        if per < min(part.num_rows, SAMPLE_ROWS):  # a file holds fewer rows than the sample: measure one
            files = max(files, math.ceil(part.num_rows * _bytes_per_row(part.slice(0, per), metadata.properties) / target))
            per = math.ceil(part.num_rows / files)
        for start in range(0, part.num_rows, per):
            piece = part.slice(start, per)
            if piece.nbytes <= _COMBINE_BYTES:  # CP9: one batch, not one per file read
                piece = piece.combine_chunks()
            tasks.append(WriteTask(
                write_uuid=write_uuid, task_id=task_id, schema=schema,
                record_batches=piece.to_batches(), partition_key=key,
            ))  # fmt: skip
            task_id += 1
    return list(write_files(io, for_writing(metadata), iter(tasks)))  # writing W9


def _bytes_per_row(rows: Any, properties: dict[str, str]) -> float:
    """CP2: the Parquet bytes per row of a sample of ``rows``, with the table's codec."""
    import pyarrow.parquet as pq

    from .encodings import column_options, delta_integers

    sample = rows.slice(0, min(rows.num_rows, SAMPLE_ROWS))
    codec = properties.get(TableProperties.PARQUET_COMPRESSION, TableProperties.PARQUET_COMPRESSION_DEFAULT)
    page_rows = property_as_int(
        properties, TableProperties.PARQUET_PAGE_ROW_LIMIT, TableProperties.PARQUET_PAGE_ROW_LIMIT_DEFAULT)
    page_bytes = property_as_int(
        properties, TableProperties.PARQUET_PAGE_SIZE_BYTES, TableProperties.PARQUET_PAGE_SIZE_BYTES_DEFAULT)
    options = column_options(sample, page_rows, delta_integers(properties), page_bytes)  # writing W10's
    sink = _bytes_io.BytesIO()
    pq.write_table(sample, sink, compression=None if codec == "uncompressed" else codec, **options)
    return sink.tell() / max(1, sample.num_rows)


def _referenced(io: FileIO, delete_file: DataFile) -> set[str] | None:
    """The data files a position delete file names (None: unknown, keep the file)."""
    referenced = getattr(delete_file, "referenced_data_file", None)
    if referenced:
        return {referenced}
    if delete_file.content != DataFileContent.POSITION_DELETES or not delete_file.file_path.endswith(".parquet"):
        return None
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    with io.new_input(delete_file.file_path).open() as stream:
        column = pq.read_table(stream, columns=["file_path"]).column("file_path")
    return {str(v) for v in pc.unique(column).to_pylist()}


def _dangling_deletes(
    io: FileIO, manifests: list[ManifestFile], tasks: list[Any], decoded: dict[str, list[ManifestEntry]]
) -> dict[str, DataFile]:
    """CP3: the live position delete files of a snapshot (its delete manifests) that no
    scan task applies to any live data file: left by a copy-on-write rewrite or a
    PyIceberg overwrite of the files they name (PyIceberg keeps delete manifests).
    ``decoded``: live entries by manifest path, as planning read them."""
    used = {d.file_path for t in tasks for d in t.delete_files}
    found: dict[str, DataFile] = {}
    for manifest in manifests:
        if manifest.content != ManifestContent.DELETES:
            continue
        for entry in decoded[manifest.manifest_path]:
            data_file = entry.data_file
            if data_file.content == DataFileContent.POSITION_DELETES and data_file.file_path not in used:
                found[data_file.file_path] = data_file
    return found


def _removable_deletes(io: FileIO, chosen: list[Any], rewritten: set[str], tasks: list[Any]) -> dict[str, DataFile]:
    """CP3: the delete files of rewritten data files that name no kept data file."""
    candidates = {d.file_path: d for t in chosen for d in t.delete_files}
    kept_uses = {d.file_path for t in tasks if t.file.file_path not in rewritten for d in t.delete_files}
    removable = {}
    for path, delete_file in candidates.items():
        if path in kept_uses:
            continue
        named = _referenced(io, delete_file)
        if named is not None and named <= rewritten:
            removable[path] = delete_file
    return removable


class DeleteManifestWriter(ManifestWriterV2):
    """PyIceberg 0.12's v2 manifest writer for delete files (content ``deletes``): CP4's
    rewritten delete manifests and merge-on-read's new ones (iceberg.deletes RD3); its
    Avro set-up built once (manifest_writers MW1)."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


def replace_updates(
    metadata: TableMetadata,
    io: FileIO,
    parent: Snapshot,
    snapshot_id: int,
    added: list[DataFile],
    removed: set[str],
    decoded: dict[str, list[ManifestEntry]] | None = None,
) -> tuple[TableUpdate, ...]:
    """CP4: the updates of a replace snapshot on ``parent`` (the head of main in
    ``metadata``) that adds ``added`` and removes the live files at ``removed``;
    CommitFailedException when one of ``removed`` is not live in ``parent``.
    ``decoded``: the live entries of ``parent``'s manifests by path (CP8), if known."""
    provider = load_location_provider(metadata.location, metadata.properties)
    commit_uuid = uuid.uuid4()
    schema = metadata.schema()
    specs = metadata.specs()
    collector = SnapshotSummaryCollector()
    by_group: dict[tuple[ManifestContent, int], list[tuple[str, ManifestEntry]]] = {}
    found: set[str] = set()
    for manifest in snapshot_manifests(io, parent):
        live = decoded.get(manifest.manifest_path) if decoded is not None else None
        for entry in manifest_entries(io, manifest, discard_deleted=True) if live is None else live:
            path = entry.data_file.file_path
            if path in removed:
                found.add(path)
                status = "delete"
                collector.remove_file(entry.data_file, schema, specs[manifest.partition_spec_id])
            else:
                status = "existing"
            by_group.setdefault((manifest.content, manifest.partition_spec_id), []).append((status, entry))
    if found != removed:
        missing = sorted(removed - found)
        raise CommitFailedException(
            f"the compaction's files are no longer live in snapshot {parent.snapshot_id}: {missing[:3]}"
        )
    for data_file in added:  # CP2: written in the current spec
        spec_id = metadata.default_spec_id
        entry = ManifestEntry.from_args(
            status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id, sequence_number=None,
            file_sequence_number=None, data_file=data_file,
        )  # fmt: skip
        collector.add_file(data_file, schema, specs[spec_id])
        by_group.setdefault((ManifestContent.DATA, spec_id), []).append(("add", entry))
    written: list[ManifestFile] = []
    count = 0
    for (content, spec_id), entries in by_group.items():
        for start in range(0, len(entries), MANIFEST_ENTRIES):
            location = provider.new_metadata_location(f"{commit_uuid}-m{count}.avro")
            count += 1
            output = io.new_output(location)
            if content == ManifestContent.DELETES:
                writer: Any = DeleteManifestWriter(specs[spec_id], schema, output, snapshot_id, "deflate")
            else:
                writer = write_manifest(metadata.format_version, specs[spec_id], schema, output, snapshot_id, "deflate")
            with writer:
                for status, entry in entries[start:start + MANIFEST_ENTRIES]:
                    getattr(writer, status)(entry)
            written.append(writer.to_manifest_file())
    sequence_number = metadata.next_sequence_number()
    manifest_list = provider.new_metadata_location(f"snap-{snapshot_id}-0-{commit_uuid}.avro")
    with write_manifest_list(
        format_version=metadata.format_version,
        output_file=io.new_output(manifest_list),
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent.snapshot_id,
        sequence_number=sequence_number,
        avro_compression="deflate",
    ) as list_writer:
        list_writer.add_manifests(written)
    totals = update_snapshot_summaries(
        Summary(Operation.OVERWRITE, **collector.build()),
        previous_summary=parent.summary.additional_properties if parent.summary else None,
    )
    summary = Summary(Operation.REPLACE, **totals.additional_properties)
    snapshot = Snapshot(
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent.snapshot_id,
        sequence_number=sequence_number,
        timestamp_ms=max(int(time.time() * 1000), metadata.last_updated_ms + 1),
        manifest_list=manifest_list,
        summary=summary,
        schema_id=metadata.current_schema_id,
    )
    referenced = {ref.snapshot_id for name, ref in metadata.refs.items() if name != MAIN_BRANCH}
    dropped = [s.snapshot_id for s in metadata.snapshots if s.snapshot_id not in referenced]
    updates: list[TableUpdate] = [
        AddSnapshotUpdate(snapshot=snapshot),
        SetSnapshotRefUpdate(ref_name=MAIN_BRANCH, type=SnapshotRefType.BRANCH, snapshot_id=snapshot_id),
    ]
    if dropped:
        updates.append(RemoveSnapshotsUpdate(snapshot_ids=dropped))
    return tuple(updates)


def is_replace(updates: tuple[TableUpdate, ...]) -> bool:
    """True for the updates :func:`replace_updates` makes (a compaction's commit)."""
    if len(updates) not in (2, 3) or not isinstance(updates[0], AddSnapshotUpdate):
        return False
    summary = updates[0].snapshot.summary
    return (
        isinstance(updates[1], SetSnapshotRefUpdate)
        and updates[1].snapshot_id == updates[0].snapshot.snapshot_id
        and summary is not None
        and summary.operation == Operation.REPLACE
        and all(isinstance(u, RemoveSnapshotsUpdate) for u in updates[2:])
    )


def rebased_replace(
    current: TableMetadata, requirements: Iterable[TableRequirement], updates: tuple[TableUpdate, ...], io: FileIO
) -> tuple[TableUpdate, ...] | None:
    """CP5: a compaction's updates built again on the head of ``current``, or None when
    they are not a compaction's; CommitFailedException when something other than
    appends of data files was committed since its parent."""
    if not is_replace(updates):
        return None
    for requirement in requirements:
        if not isinstance(requirement, AssertRefSnapshotId):
            requirement.validate(current)
    snapshot = updates[0].snapshot  # type: ignore[attr-defined]
    base = snapshot.parent_snapshot_id
    head = current.current_snapshot()
    if head is None or current.snapshot_by_id(snapshot.snapshot_id) is not None:
        raise CommitFailedException("the table changed under the compaction (its head is gone or already replaced)")
    at = head
    while at.snapshot_id != base:
        summary = at.summary
        if (
            summary is None or summary.operation != Operation.APPEND
            or int(summary.additional_properties.get("added-delete-files", "0") or 0)
        ):
            raise CommitFailedException(
                f"snapshot {at.snapshot_id} ({summary.operation.value if summary else 'unknown'}) was committed "
                "since the compaction began and is not an append of new data files"
            )
        parent = current.snapshot_by_id(at.parent_snapshot_id) if at.parent_snapshot_id is not None else None
        if parent is None:
            raise CommitFailedException("the compaction's parent snapshot is not an ancestor of the table's head")
        at = parent
    added: list[DataFile] = []
    removed: set[str] = set()
    for manifest in snapshot_manifests(io, snapshot):
        for entry in manifest_entries(io, manifest, discard_deleted=False):
            if entry.snapshot_id != snapshot.snapshot_id:
                continue
            if entry.status == ManifestEntryStatus.ADDED:
                added.append(entry.data_file)
            elif entry.status == ManifestEntryStatus.DELETED:
                removed.add(entry.data_file.file_path)
    return replace_updates(current, io, head, snapshot.snapshot_id, added, removed)
