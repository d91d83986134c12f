"""Distributed maintenance on Spark: version expiration and full snapshot export
(``verify`` is in :mod:`.verification`).

Each operation computes exactly what the local code computes
(:mod:`trinitylake_dbapi.maintenance`: the same rules E1-E8, the same version
classification function, the same reachability), with the work split so that no list
of file paths ever has to fit in the driver:

* The driver opens the lakehouse (latest version, settings), lists the root directory
  one level deep (root node files, lakehouse definitions) and plans: which versions are
  kept and which expire (``maintenance.classify_versions``) - version numbers, not
  paths.
* Executors list the lakehouse by the 256 directories ``bbbb/bbbb`` of SPEC 2's
  optimized paths (node and object definition files all live under them), read root
  files by version ranges, and walk the trees level by level, kept and expired
  versions together: each level's node files are a DataFrame, hash-partitioned by
  path, deduplicated against every node already expanded, read by executors (several
  reads in flight per task) and expanded into children and definition paths. One
  Spark job per tree level: the deduplication is a stage of the job that reads, and
  the nodes it read come out of that job marked as expanded, so no separate job
  materializes the frontier or the set of visited nodes. A level's plan reads only
  local checkpoints (the level above and each earlier level's expanded nodes): its
  lineage grows with the tree's depth, never with the lakehouse's size or history.
* Set operations (reachable from kept versions, reachable only from expired ones,
  listed but unreachable) are DataFrame joins; every result read more than once is a
  local checkpoint, so nothing is listed or read twice. Whether an executor met an
  unreadable file is counted in an accumulator, so a walk with no error runs no job
  to look for error rows.
* Expiration takes part in the commit-expiration handshake as the local one does
  (``maintenance`` E9/E10, ``reclaim`` G3/G4): after the roots, the driver collects the
  doomed Iceberg files (only those: the marker names them), creates its marker, reads
  the commits' intents and spares what they name, looks at the versions committed
  since the plan (E9), drops the spared files from the doomed frame, and only then do
  executors delete (no Iceberg file once half the marker's lease has passed, by
  ``time.time()`` on the executors); the marker is removed after the deletions.
* Executors copy and delete files. Expired roots are deleted first, oldest first, by
  the driver (E5: a crash part-way leaves a shorter history, never a kept version with
  a missing file), then executors delete the rest.

Every Spark job is named (job group ``trinitylake-<operation>-<id>``, description
"trinitylake <operation> [step] <what>"), and a progress line is printed on a local
master when stderr is a terminal (``progress=``).

A failure to read a file the walk needs (missing, corrupt) stops the operation before
anything is deleted or recorded, with the same error the local code raises; a kept
version's Iceberg metadata file deleted after a later commit (iceberg.oldmetadata OM5)
reaches nothing, as locally. Iceberg files are those of ``maintenance.TableLocations``
(E8, E12): under MANAGED tables' locations, and Iceberg metadata files under their
``write.metadata.path`` inside the root, never under an EXTERNAL table's location,
``write.metadata.path`` or metadata directory.

Needs classic Spark (the jobs use ``sparkContext``; Spark Connect has none) and a
location every executor can reach (a local path on one machine, or an object store;
``memory://`` is refused).
"""

from __future__ import annotations

import datetime as _dt
import functools
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import maintenance as local
from ..catalog import LakehouseCatalog
from ..errors import (
    CorruptFileError,
    Error,
    InvalidNameError,
    MissingFileError,
    ObjectExistsError,
    ObjectNotFoundError,
    ProgrammingError,
    StorageError,
)
from ..format import paths
from ..format.nodefile import NodeFile, decode_node_file
from ..storage import Storage
from ..storage.locations import location_within
from ..lakehouse import Lakehouse, now_millis
from . import _runtime as rt

__all__ = [
    "expire_versions",
    "export_snapshot",
    "SparkExpireResult",
    "SparkExportResult",
]

_PATH = T.StructType([T.StructField("path", T.StringType(), False)])
_REACH = T.StructType(
    [
        T.StructField("path", T.StringType(), False),
        T.StructField("kind", T.StringType(), False),  # root | lakehouse_def | node | definition | error | expanded
        T.StructField("detail", T.StringType(), True),
        T.StructField("group", T.IntegerType(), False),  # which set of roots reached it
    ]
)
_POINTERS = T.StructType(
    [T.StructField("metadata_location", T.StringType(), False), T.StructField("external", T.BooleanType(), False)]
)
_DOOMED = T.StructType(
    [T.StructField("path", T.StringType(), False), T.StructField("expired", T.BooleanType(), False)]
)
#: maintenance E4, E8, E13: a doomed file, whether only expired versions reach it, and
#: (for the orphans and Iceberg files, which the driver guards) its modification time
_DOOMED_AT = T.StructType([*_DOOMED.fields, T.StructField("modified", T.LongType(), True)])
_CREATED = T.StructType(
    [T.StructField("version", T.LongType(), False), T.StructField("created_at_millis", T.LongType(), False)]
)
_DELETE_BATCH = 1000


# ---------------------------------------------------------------------------
# Errors raised on executors, re-raised on the driver
# ---------------------------------------------------------------------------


def _error_row(path: str, error: Exception) -> tuple[str, str, str]:
    reason = getattr(error, "reason", None)
    return (path, "error", "\x1f".join([type(error).__name__, getattr(error, "path", path), reason or str(error)]))


def _in_group(rows: list[tuple], group: int) -> list[tuple]:
    return [(*row, group) for row in rows]


def _raise_remote(detail: str) -> None:
    name, path, reason = (detail.split("\x1f", 2) + ["", ""])[:3]
    if name == "MissingFileError":
        raise MissingFileError(path, reason)
    if name == "CorruptFileError":
        raise CorruptFileError(path, reason)
    if name == "ObjectNotFoundError":
        raise ObjectNotFoundError(reason)
    raise StorageError(f"{name}: {reason}")


def _check_errors(frame: DataFrame) -> None:
    found = frame.filter(F.col("kind") == "error").limit(1).collect()
    if found:
        _raise_remote(found[0]["detail"])


# ---------------------------------------------------------------------------
# Executor functions (module level: pickled by reference, importable by workers)
# ---------------------------------------------------------------------------


def _refs(node: NodeFile) -> list[tuple[str, str, None]]:
    """What one node points at (tree TW2, as ``Tree.files`` counts it for the local
    expiration): children, and the definition file of every entry with a value."""
    references = local.node_references(node)
    rows: list[tuple[str, str, None]] = [(child, "node", None) for child in references.children]
    rows += [(value, "definition", None) for _, value in references.definitions]
    return rows


def _expand_roots(location: rt.Location, errors: Any) -> Callable[[Iterable[tuple[int, int, int]]], Iterator[tuple]]:
    def run(ranges: Iterable[tuple[int, int, int]]) -> Iterator[tuple]:
        lakehouse = rt.catalog(location).lakehouse

        def one(version: int) -> list[tuple]:
            path = paths.root_node_path(version)
            try:
                snapshot = lakehouse.snapshot(version)  # the local code path: def, order
            except Error as e:
                errors.add(1)
                return [_error_row(path, e)]
            return [(path, "root", None), (snapshot.lakehouse_def_path, "lakehouse_def", None),
                    *_refs(snapshot.root)]

        for low, high, group in ranges:
            for rows in rt.thread_map(one, range(low, high + 1)):
                yield from _in_group(rows, group)

    return run


def _expand_nodes(
    location: rt.Location, order: int, counter: Any, errors: Any
) -> Callable[[Iterable[Any]], Iterator[tuple]]:
    """Reads each (path, group) node; emits what it points at and an ``expanded`` row
    for the node itself (the next levels' deduplication reads those)."""

    def run(rows: Iterable[Any]) -> Iterator[tuple]:
        store = rt.storage(location)

        def one(row: Any) -> list[tuple]:
            counter.add(1)
            path, group = row[0], row[1]
            done = (path, "expanded", None, group)
            try:
                node = decode_node_file(store.read(path), path, order)
            except Error as e:
                errors.add(1)
                return [done, *_in_group([_error_row(path, e)], group)]
            return [done, *_in_group(_refs(node), group)]

        for out in rt.thread_map(one, rows):
            yield from out

    return run


def _list_prefixes(location: rt.Location) -> Callable[[Iterable[str]], Iterator[tuple[str]]]:
    def run(prefixes: Iterable[str]) -> Iterator[tuple[str]]:
        store = rt.storage(location)
        for listed in rt.thread_map(functools.partial(store.list, include_reserved=True), prefixes):
            for path in listed:
                if local.is_expirable_file(path):
                    yield (path,)

    return run


def _read_created(location: rt.Location) -> Callable[[Iterable[tuple[int, int]]], Iterator[tuple[int, int]]]:
    def run(ranges: Iterable[tuple[int, int]]) -> Iterator[tuple[int, int]]:
        lakehouse = rt.catalog(location).lakehouse

        def one(version: int) -> tuple[int, int]:
            return version, lakehouse.snapshot(version).created_at_millis

        for low, high, *_ in ranges:
            yield from rt.thread_map(one, range(low, high + 1))

    return run


def _doomed(
    location: rt.Location, now: int, grace: int, latest: int
) -> Callable[[Iterable[Any]], Iterator[tuple[str, bool, int | None]]]:
    """E3/E4 for files no kept root reaches: reached only by expired versions, or an
    orphan older than the grace period (with its modification time, E13); never the
    root of a version newer than the plan's ``latest`` (E4)."""

    def run(rows: Iterable[Any]) -> Iterator[tuple[str, bool, int | None]]:
        store = rt.storage(location)

        def one(row: Any) -> tuple[str, bool, int | None] | None:
            path, expired = row[0], bool(row[1])
            if expired:
                return path, True, None
            version = paths.parse_root_node_path(path)
            if version is not None and version > latest:
                return None
            modified = store.modified_millis(path)
            if modified is not None and now - modified >= grace:
                return path, False, modified
            return None

        for out in rt.thread_map(one, rows):
            if out is not None:
                yield out

    return run


def _kept_metadata(location: rt.Location) -> Callable[[Iterable[Any]], Iterator[tuple[str]]]:
    """E8 on executors: the metadata locations the current table definitions of
    (version, lo, hi) key ranges of kept versions name."""

    def run(rows: Iterable[Any]) -> Iterator[tuple[str]]:
        lakehouse = rt.catalog(location).lakehouse
        for version, lo, hi in rows:
            files = local.current_definition_files(lakehouse, [version], lo, hi)
            for metadata_location, _ in local.metadata_pointers(local.table_definitions(lakehouse, files)):
                yield (metadata_location,)

    return run


def _pointers(location: rt.Location, counter: Any) -> Callable[[Iterable[Any]], Iterator[tuple[str, bool]]]:
    """E8 on executors: (metadata location, is EXTERNAL) of table definition files,
    counted in ``counter``."""

    def run(rows: Iterable[Any]) -> Iterator[tuple[str, bool]]:
        lakehouse = rt.catalog(location).lakehouse
        for pointer in local.metadata_pointers(local.table_definitions(lakehouse, (row[0] for row in rows))):
            counter.add(1)
            yield pointer

    return run


def _table_facts(location: rt.Location) -> Callable[[Iterable[Any]], Iterator[tuple[str, str, bool]]]:
    """E8, E12, OM5 on executors, from (metadata location, is EXTERNAL) pointers of every
    existing version's tables, as ``maintenance.iceberg_files_to_delete`` computes them:
    ("table", table location, flag), ("metadata", ``write.metadata.path`` or an EXTERNAL
    table's metadata directory, flag) and ("deletes", directory of a MANAGED table that
    deletes its old metadata, False) rows."""

    def run(rows: Iterable[Any]) -> Iterator[tuple[str, str, bool]]:
        from ..iceberg.reach import IcebergReach

        pointers = [(row[0], bool(row[1])) for row in rows]
        reach = IcebergReach(location.storage_options)
        for where, flag in reach.table_locations(pointers):
            yield "table", where, flag
        for where, flag in reach.metadata_paths(pointers):
            yield "metadata", where, flag
        for where in sorted(reach.deletion_prefixes(pointers)):
            yield "deletes", where, False

    return run


def _live_files(location: rt.Location, deleted: frozenset[str]) -> Callable[[Iterable[Any]], Iterator[tuple]]:
    """E8 on executors: the files under the root that kept metadata files reach
    (iceberg.reach R1, R4: canonical locations, compared with the root as the local
    expiration does), or an error row for one that cannot be read, unless it was
    deleted after a later commit under one of the ``deleted`` directories (OM5:
    ``maintenance.unreadable_kept_metadata`` judges, as for the local expiration)."""

    def run(rows: Iterable[Any]) -> Iterator[tuple]:
        from ..iceberg.reach import IcebergReach

        reached = IcebergReach(location.storage_options).reach(row[0] for row in rows)
        for error in local.unreadable_kept_metadata(reached, deleted):
            yield (*_error_row(error.path, error), 0)
        for file in reached.files:
            relative = location_within(file, location.uri)  # canonical forms (storage U4)
            if relative is not None:
                yield relative, "file", None, 0

    return run


def _list_owned(location: rt.Location, owned: local.TableLocations) -> Callable[[Iterable[str]], Iterator[tuple[str]]]:
    def run(prefixes: Iterable[str]) -> Iterator[tuple[str]]:
        store = rt.storage(location)
        for listed in rt.thread_map(store.list, prefixes):
            for path in listed:
                if owned.holds(path):
                    yield (path,)

    return run


def _delete_files(location: rt.Location, deadline: float | None = None) -> Callable[[Iterable[Any]], None]:
    """Delete the doomed rows' files (expired roots excepted: the driver deleted them).
    Past ``deadline`` (``time.time()``; reclaim G4, half the marker's lease) only files
    that only expired versions reach are deleted: the rest waits for the next run."""

    def run(rows: Iterable[Any]) -> None:
        store = rt.storage(location)
        todo = (
            row[0] for row in rows
            if not (row[1] and paths.parse_root_node_path(row[0]) is not None)
            and (deadline is None or time.time() < deadline or row[1])
        )
        list(rt.thread_map(store.delete_many, rt.chunks(todo, _DELETE_BATCH), threads=4))

    return run


def _copy_files(source: rt.Location, target: rt.Location) -> Callable[[Iterable[Any]], None]:
    def run(rows: Iterable[Any]) -> None:
        src, dst = rt.storage(source), rt.storage(target)

        def one(path: str) -> None:
            dst.write(path, src.read(path))

        for _ in rt.thread_map(one, (row[0] for row in rows)):
            pass

    return run


# ---------------------------------------------------------------------------
# Driver-side building blocks
# ---------------------------------------------------------------------------


class _Job:
    """One maintenance operation: the Spark session, the lakehouse, progress."""

    def __init__(self, spark: SparkSession, location: rt.Location, progress: Progress) -> None:
        self.spark = spark
        self.sc = spark.sparkContext
        self.location = location
        self.progress = progress
        self.parallelism = max(2, self.sc.defaultParallelism)

    def frame(self, rdd: Any, schema: T.StructType) -> DataFrame:
        return self.spark.createDataFrame(rdd, schema)

    def empty(self, schema: T.StructType) -> DataFrame:
        return self.spark.createDataFrame([], schema)

    def version_rdd(self, versions: Iterable[int], group: int = 0) -> Any:
        return self.groups_rdd([versions], groups=[group])

    def groups_rdd(self, version_sets: list[Iterable[int]], groups: list[int] | None = None) -> Any:
        """(low, high, group) version ranges, spread over tasks."""
        groups = list(range(len(version_sets))) if groups is None else groups
        ranges = [
            (low, high, group)
            for versions, group in zip(version_sets, groups)
            for low, high in rt.split_ranges(rt.version_ranges(versions), self.parallelism * 2)
        ]
        return self.sc.parallelize(ranges, max(1, min(len(ranges), self.parallelism * 4)))

    def listing(self, top_level: list[str]) -> DataFrame:
        """Every file expiration considers (``maintenance.is_expirable_file``) under
        the root, as a DataFrame: the root directory's own files (listed by the
        driver) plus the optimized-path directories, listed by executors."""
        self.progress.step(f"listing {len(paths.PREFIX_DIRECTORIES)} path-prefix directories")
        prefixes = self.sc.parallelize(
            paths.PREFIX_DIRECTORIES, min(len(paths.PREFIX_DIRECTORIES), self.parallelism * 4)
        )
        listed = self.frame(prefixes.mapPartitions(_list_prefixes(self.location)), _PATH)
        top = self.spark.createDataFrame([(p,) for p in top_level if local.is_expirable_file(p)], _PATH)
        return listed.union(top).localCheckpoint(eager=True)

    def iceberg_candidates(self, lakehouse: Lakehouse, kept: list[int], reached: DataFrame) -> DataFrame:
        """E8, E12 (``maintenance.iceberg_files_to_delete``, split over executors): the
        Iceberg files under lakehouse-owned table locations, and the Iceberg metadata
        files under managed tables' ``write.metadata.path``, that no kept version's
        metadata reaches (never under an EXTERNAL table's location or metadata
        directory: ``maintenance.TableLocations``), as (path, expired=False) rows for
        ``_doomed``'s age check. A kept version's metadata file deleted after a later
        commit (iceberg.oldmetadata OM5) reaches nothing; any other that cannot be read
        stops the expiration."""
        self.progress.step("finding the tables' Iceberg files no kept version reaches")
        # Table definition files (the executors check each name exactly, paths rule FP1).
        table_defs = reached.filter(F.col("path").contains("-table-") & F.col("path").endswith(".binpb"))
        table_defs = table_defs.select("path").distinct()
        found = self.sc.accumulator(0)
        pointers = self.frame(table_defs.rdd.mapPartitions(_pointers(self.location, found)), _POINTERS)
        pointers = pointers.distinct().localCheckpoint(eager=True)
        if found.value == 0:
            # No definition any version reaches names Iceberg metadata, so neither does a
            # kept version's current one: nothing to read, no table location owns a file.
            return self.empty(_DOOMED)
        ranges = []
        for version in kept:
            pivots = list(lakehouse.snapshot(version).tree.root.keys)
            bounds = [None, *pivots, None]
            ranges += [(version, lo, hi) for lo, hi in zip(bounds, bounds[1:])]
        parts = max(1, min(len(ranges), self.parallelism * 4))
        kept_metadata = self.frame(
            self.sc.parallelize(ranges, parts).mapPartitions(_kept_metadata(self.location)), _PATH
        ).distinct()
        # Pointers of every existing version (kept and expired), as locally: a table only
        # expired versions name owns its files still, and may explain a deleted file (OM5).
        facts = pointers.rdd.mapPartitions(_table_facts(self.location)).distinct().collect()
        owned = local.TableLocations.of(
            self.location.uri,
            [(where, flag) for kind, where, flag in facts if kind == "table"],
            [(where, flag) for kind, where, flag in facts if kind == "metadata"],
        )
        deleted = frozenset(where for kind, where, _ in facts if kind == "deletes")
        live = self.frame(kept_metadata.rdd.mapPartitions(_live_files(self.location, deleted)), _REACH)
        live = live.localCheckpoint(eager=True)
        _check_errors(live)
        # E12: the metadata directories are listed too (holds() keeps only Iceberg
        # metadata names there); a directory inside another listed one is listed once.
        where = sorted(set(owned.owned) | set(owned.metadata))
        where = [p for p in where if not any(p != q and p.startswith(q) for q in where)]
        prefixes = self.sc.parallelize(where, max(1, len(where)))
        listed = self.frame(prefixes.mapPartitions(_list_owned(self.location, owned)), _PATH)
        return listed.join(live.select("path"), "path", "left_anti").select(
            "path", F.lit(False).alias("expired")
        )

    def reach(self, version_sets: list[list[int]], order: int, label: str = "") -> DataFrame:
        """Every file the roots of each set of versions reach (as
        ``maintenance.reachable_files``), as a DataFrame (``path``, ``group``): group i
        holds what the roots of ``version_sets[i]`` reach.

        The sets are walked together, level by level, one job per level. A node that an
        earlier set reaches (already, or at this level) is not expanded again for a
        later set: like the local code's ``seen``, this skips work whose files the
        earlier set holds anyway, so "reached by a later set and not by an earlier one"
        is exact.
        """
        total = sum(len(v) for v in version_sets)
        self.progress.step(f"reading {total} root file(s){label}")
        errors = self.sc.accumulator(0)
        emitted = self.frame(self.groups_rdd(version_sets).mapPartitions(_expand_roots(self.location, errors)), _REACH)
        emitted = emitted.localCheckpoint(eager=True)
        parts = [emitted]
        expanded: list[DataFrame] = []  # each earlier level's nodes read, (path, group)
        depth = 1
        while True:
            # This level's children, less every node expanded before for its set or an
            # earlier one, read in the same job; its accumulator says whether there
            # were any.
            frontier = emitted.filter(F.col("kind") == "node").groupBy("path").agg(F.min("group").alias("group"))
            if expanded:
                visited = functools.reduce(DataFrame.union, expanded)
                done = visited.groupBy("path").agg(F.min("group").alias("done"))
                frontier = (
                    frontier.join(done, "path", "left")
                    .filter(F.col("done").isNull() | (F.col("group") < F.col("done")))
                    .select("path", "group")
                )
            read = self.sc.accumulator(0)
            self.progress.step(f"reading the node files at depth {depth}{label}")
            emitted = self.frame(frontier.rdd.mapPartitions(_expand_nodes(self.location, order, read, errors)), _REACH)
            emitted = emitted.localCheckpoint(eager=True)
            if read.value == 0:
                break
            parts.append(emitted)
            expanded.append(emitted.filter(F.col("kind") == "expanded").select("path", "group"))
            depth += 1
        everything = functools.reduce(DataFrame.union, parts)
        if errors.value:
            _check_errors(everything)  # a missing or corrupt file: stop, as the local walk does
        everything = everything.filter(F.col("kind") != "expanded")
        return everything.select("path", "group").distinct().localCheckpoint(eager=True)

Progress = rt.Progress


def _millis(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ProgrammingError(f"{what} must be a datetime or milliseconds since the epoch, not {value!r}")
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.astimezone()  # naive: local time, like datetime.timestamp()
        return int(value.timestamp() * 1000)
    if isinstance(value, int):
        return value
    raise ProgrammingError(f"{what} must be a datetime or milliseconds since the epoch, not {value!r}")


def _open(location: str, storage_options: dict | None) -> tuple[rt.Location, Storage, Lakehouse]:
    loc = rt.Location.of(location, storage_options)
    storage = Storage(loc.uri, loc.storage_options)
    return loc, storage, Lakehouse.open(storage)


# ---------------------------------------------------------------------------
# Version expiration
# ---------------------------------------------------------------------------


@dataclass
class SparkExpireResult:
    """What :func:`expire_versions` deleted (or, in a dry run, would delete).

    ``versions`` and ``kept`` are the local ExpireResult's lists (expired oldest first;
    kept ascending). ``files`` is a DataFrame with one ``path`` column: every file
    deleted, expired roots included, held in a local checkpoint (it stays readable
    after the files are gone). :meth:`file_list` collects it in the local order.
    """

    versions: list[int]
    kept: list[int]
    latest: int
    files: DataFrame
    file_count: int
    dry_run: bool
    #: maintenance E11: "namespace.table" -> the Iceberg snapshots dropped (dry run: to drop)
    snapshots: dict[str, list[int]] = field(default_factory=dict)

    def file_list(self) -> list[str]:
        """The files on the driver, in ``ExpireResult.files`` order: expired roots
        oldest first, then the rest sorted. Only for lakehouses whose garbage fits in
        the driver's memory (tests, small lakehouses)."""
        roots = [paths.root_node_path(v) for v in self.versions]
        rest = sorted({row["path"] for row in self.files.collect()} - set(roots))
        return roots + rest


def expire_versions(
    spark: SparkSession,
    location: str,
    retain_last: int | None = None,
    older_than: Any = None,
    dry_run: bool = False,
    *,
    orphan_grace_millis: int | None = None,
    storage_options: dict | None = None,
    progress: Any = None,
) -> SparkExpireResult:
    """Expire old versions and delete every file no kept version reaches, on Spark.

    The same decision as ``maintenance.expire_versions`` (rules E1-E8 of
    :mod:`trinitylake_dbapi.maintenance`): a version expires when it is older than
    ``older_than`` (a datetime, or milliseconds since the epoch; default: its maximum
    age from the lakehouse definition), unless it is among the newest
    ``max(retain_last, minimum_versions_to_keep)`` or an exported snapshot. Orphans
    younger than ``orphan_grace_millis`` (default one hour) are left alone. A dry run
    computes the same result and deletes nothing. First, as locally (E11), every
    managed Iceberg table drops the snapshots its retention properties no longer keep
    (one commit, on the driver; ``snapshots`` says which).

    ``progress``: a callable receiving each step's description, True to print progress
    to stderr, False for silence; by default progress is printed on a local master when
    stderr is a terminal.
    """
    older_than_millis = _millis(older_than, "older_than")
    grace = local.DEFAULT_ORPHAN_GRACE_MILLIS if orphan_grace_millis is None else orphan_grace_millis
    if retain_last is not None and (isinstance(retain_last, bool) or not isinstance(retain_last, int) or retain_last < 0):
        raise ProgrammingError(f"retain_last must be a non-negative integer, not {retain_last!r}")
    loc, storage, lakehouse = _open(location, storage_options)
    # E11 on the driver (one metadata file per table): each table's own snapshot retention
    snapshots = local.expire_table_snapshots(LakehouseCatalog(loc.uri, storage_options=loc.storage_options), dry_run)
    now = now_millis()
    with Progress(spark, "expire_versions", progress) as progress_:
        job = _Job(spark, loc, progress_)
        progress_.step("listing the root directory and planning")
        latest = lakehouse.snapshot()  # before the listing, as maintenance.plan_expiration
        top_level = storage.list("", recursive=False, include_reserved=True)
        listed_at = time.monotonic()
        settings = latest.settings
        existing = local.existing_versions(top_level, latest.version)
        need_age = local.versions_needing_age(existing, settings, retain_last)
        created: dict[int, int] = {}
        if need_age:
            progress_.step(f"reading the creation time of {len(need_age)} version(s)")
            rows = job.version_rdd(need_age).mapPartitions(_read_created(loc)).collect()
            created = dict(rows)
        kept, expired = local.classify_versions(
            existing, settings, retain_last, older_than_millis, now, created.__getitem__
        )
        order = settings.order
        reached = job.reach([kept, expired], order, label=" of kept (0) and expired (1) versions")
        keep_files = reached.filter(F.col("group") == 0).select("path")
        expired_files = reached.filter(F.col("group") == 1).select("path").join(keep_files, "path", "left_anti")
        listing = job.listing(top_level)
        progress_.step("finding unreachable files")
        candidates = listing.join(keep_files, "path", "left_anti").join(
            expired_files.withColumn("expired", F.lit(True)), "path", "left"
        ).select("path", F.coalesce(F.col("expired"), F.lit(False)).alias("expired"))
        candidates = candidates.union(job.iceberg_candidates(lakehouse, kept, reached))
        doomed = job.frame(
            candidates.rdd.mapPartitions(_doomed(loc, now, grace, latest.version)), _DOOMED_AT
        )
        doomed = doomed.localCheckpoint(eager=True)
        # Counted from the checkpoint: an accumulator updated in a transformation counts a
        # retried task twice (Spark applies such updates once only inside actions).
        count = doomed.count()
        expired.sort()
        if not dry_run:
            progress_.step(f"deleting {len(expired)} expired root file(s), oldest first")
            if expired:
                lakehouse.write_hint(max(latest.version, lakehouse.latest_version()))  # E5
                local.wait_before_deleting_roots(listed_at)  # E7
            for chunk in rt.chunks(expired, _DELETE_BATCH):
                storage.delete_many([paths.root_node_path(v) for v in chunk])  # E5
            roots_gone_at = time.monotonic()
            # E4, E8: the orphans and Iceberg files go through the driver's guard (E10, E13, E9)
            orphans = doomed.filter(~F.col("expired")).select("path", "modified").collect()
            guarded = {row[0]: row[1] for row in orphans}
            with local.guarded_deletion(lakehouse, guarded, latest.version, storage_options) as (
                allowed, seconds_left,
            ):
                keep = set(guarded) - set(allowed)
                if expired:  # E14: what a rollback published meanwhile reaches stays
                    keep |= local.reached_after_roots(lakehouse, latest.version, roots_gone_at)
                if keep:
                    spare = job.frame(spark.sparkContext.parallelize([(f,) for f in sorted(keep)], 1), _PATH)
                    doomed = doomed.join(F.broadcast(spare), "path", "left_anti").localCheckpoint(eager=True)
                    count = doomed.count()
                deadline = time.time() + max(0.0, seconds_left()) if guarded else None
                progress_.step(f"deleting {count - len(expired)} unreachable file(s)")
                doomed.rdd.foreachPartition(_delete_files(loc, deadline))
            lakehouse.write_hint(max(latest.version, lakehouse.latest_version()))
    return SparkExpireResult(
        versions=expired,
        kept=sorted(kept),
        latest=latest.version,
        files=doomed.select("path"),
        file_count=count,
        dry_run=dry_run,
        snapshots=snapshots,
    )


# ---------------------------------------------------------------------------
# Snapshot export
# ---------------------------------------------------------------------------


@dataclass
class SparkExportResult:
    """What :func:`export_snapshot` did.

    ``version``: the exported version; ``name`` and ``recorded_in_version``: the name
    recorded in the source's lakehouse definition and the source version that records
    it (None without a name); ``target``: the target root URI (None for a minimal
    export without a target); ``files``: a DataFrame (``path``) of the files copied;
    ``file_count``: how many.
    """

    version: int
    name: str | None
    recorded_in_version: int | None
    target: str | None
    files: DataFrame
    file_count: int


def export_snapshot(
    spark: SparkSession,
    location: str,
    target: str | None,
    name: str | None = None,
    version: int | str | None = None,
    full: bool = True,
    *,
    storage_options: dict | None = None,
    target_storage_options: dict | None = None,
    progress: Any = None,
) -> SparkExportResult:
    """Export a version of the lakehouse (SPEC 7), copying on Spark executors.

    ``version``: a version number, an exported snapshot name, or None for the latest.
    Full export (default): every file the version's root reaches is copied byte for
    byte to the ``target`` root (which must not hold a lakehouse and must not overlap
    the source), the root file last and then the hint, so the target opens as a
    lakehouse whose latest version is ``version`` - the same files as the local
    ``maintenance.export_snapshot_files``. Minimal export (``full=False``): only the
    root file is copied (when a target is given); the name is what pins the version.
    With ``name``, the name is recorded in the source's lakehouse definition (a new
    source version) after the copy succeeded.
    """
    if name is not None and (not isinstance(name, str) or not name):
        raise InvalidNameError("a snapshot name must be a non-empty string")
    if not full and name is None:
        raise ProgrammingError("a minimal export (full=False) needs a name to record")
    if full and target is None:
        raise ProgrammingError("a full export needs a target location")
    loc, storage, _ = _open(location, storage_options)
    catalog = LakehouseCatalog(loc.uri, storage=storage)
    lakehouse = catalog.lakehouse
    snapshot = lakehouse.snapshot(catalog.resolve_version(version) if version is not None else None)
    if name is not None and name in lakehouse.snapshot().settings.exported_snapshots:
        raise ObjectExistsError(f"an exported snapshot named {name!r} already exists")
    target_loc: rt.Location | None = None
    target_storage: Storage | None = None
    if target is not None:
        target_loc = rt.Location.of(target, target_storage_options)
        target_storage = Storage(target_loc.uri, target_loc.storage_options)
        local.check_export_target(storage, target_storage)
    with Progress(spark, "export_snapshot", progress) as progress_:
        job = _Job(spark, loc, progress_)
        root = paths.root_node_path(snapshot.version)
        if full:
            assert target_loc is not None and target_storage is not None
            files = job.reach([[snapshot.version]], snapshot.settings.order).select("path")
            count = files.count()
            progress_.step(f"copying {count - 1} file(s) to {target_loc.uri}")
            files.filter(F.col("path") != root).rdd.foreachPartition(_copy_files(loc, target_loc))
            progress_.step("copying the root file and writing the hint")
            local.finish_export(storage, target_storage, snapshot.version)
        else:
            files = spark.createDataFrame([(root,)] if target_storage is not None else [], _PATH)
            count = 1 if target_storage is not None else 0
            if target_storage is not None:
                progress_.step("copying the root file")
                target_storage.write(root, storage.read(root))
        recorded = None
        if name is not None:
            progress_.step(f"recording snapshot name {name!r}")
            recorded = catalog.export_snapshot(name, snapshot.version)
    return SparkExportResult(
        version=snapshot.version,
        name=name,
        recorded_in_version=recorded,
        target=target_loc.uri if target_loc is not None else None,
        files=files,
        file_count=count,
    )
