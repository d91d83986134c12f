"""Version expiration and garbage collection, planned once and executed anywhere.

A plan is a pure function of the lakehouse's state: the same inputs give the same
versions and files, whether the plan is executed, printed as a dry run, or distributed
over Spark executors (``spark.maintenance`` splits the same computation).

Rules (SPEC 7):

  E1 A version expires when it is older than the cutoff (``older_than_millis``, or by
     default its maximum age from the lakehouse definition, overrides applied).
  E2 Never expired: the newest ``max(retain_last, minimum_versions_to_keep)`` versions
     and every exported snapshot.
  E3 A file is deleted when no kept root reaches it: roots of expired versions, node and
     definition files only they reach, lakehouse definitions no kept root names.
  E4 Orphans (files no root at all reaches: an attempt that lost its commit race, a
     crashed writer, a commit still in flight, and this library's ``.tl-*`` temp
     files, which no root ever names) are deleted only when older than
     ``orphan_grace_millis``, and then only through E10 and E13, so the files of a
     commit in flight are never taken from under it, whatever the grace (0 included).
     A root is never an orphan: the root of a version newer than the plan's latest
     (published between the plan's read of the latest version and its listing) is a
     version, kept with every file it reaches (E9).
  E5 Roots are deleted first, oldest first; a crash part-way leaves a shorter history
     and unreferenced files, never a kept version with a missing file. Before and after
     the deletions the hint names the latest version, so it never points into a hole,
     and a process that knew a version before the hole finds the end through it.
  E6 Only files named by the format and this library's temp files are considered;
     anything else under the root (an external table's data, a user's file) is never
     touched.
  E8 (SPEC 8) Iceberg files: a file under a lakehouse-owned table location (the
     default ``tables/`` directory under the root, and the location of every MANAGED
     table any existing version names), never under an EXTERNAL table's location, is
     deleted when no kept version's metadata reaches it (iceberg.reach R1) and it is
     older than ``orphan_grace_millis``, whether or not an expired version reached it:
     data files of a commit in flight are reached by nothing yet. If a metadata file a
     kept version names cannot be read, no Iceberg file is deleted (CorruptFileError
     naming it): what it reaches is unknown; except a metadata file deleted after a
     later commit by ``write.metadata.delete-after-commit.enabled`` (iceberg.oldmetadata
     OM5): its table cannot be read at that version any more, and it reaches nothing. Tables located outside the lakehouse root
     are not reclaimed (their files are never listed). Locations are compared in
     their canonical form (storage U1-U4, iceberg.reach R4): a live file a manifest
     spells ``file:/x`` or ``/a/./x`` is the listing's file, and stays.
  E9 (SPEC 8) Commits published since the plan: right before deleting orphans (E4)
     and Iceberg files (E8), the latest version is read again (fresh, never the
     cached view); the files that versions committed since the plan reach are taken
     off the list: their node and definition files (their trees, below the subtrees
     the kept versions already reach) and the Iceberg files the tables their own
     transactions changed reach; and again until no version came meanwhile (at most
     E9_ROUNDS rounds; after that no orphan and no Iceberg file is deleted by this
     run). What this leaves (a commit whose check precedes the deletion and whose root
     follows that last read) is closed by E10 and E13.
  E10 (reclaim G3) Before that look, an expiration that would delete orphans or
     Iceberg files creates its marker naming them all, then reads the intents of
     commits in flight and spares every file they name (every such file if one cannot
     be read); then E13, then E9; then it deletes, in batches of DELETE_BATCH,
     starting none later than half the handshake's lease after the marker (the rest
     waits for the next run), and removes the marker. A commit naming one of the
     files (an Iceberg file written before it, or a file of its own written over
     PREWRITTEN_CHECK_AGE_S before its check: transaction C7) waits for the marker
     to go before its check (G2), so it never publishes a file this run deletes.
     Files only expired versions reach (E3) need no marker: no commit names them (a
     commit builds on the latest version, which is kept, or loses its race); a
     rollback to an expired version does (E14). The
     handshake's files (``_tl_sync/``) are not Iceberg files; those older than the
     lease (left by crashed processes, G4) are deleted after the rest.
  E13 Young files. A commit checks the files it names only when they are older than
     ``transaction.PREWRITTEN_CHECK_AGE_S`` (C7), and publishes within moments of its
     check. So after the intents are read, the expiration waits until every orphan
     and Iceberg file it would delete is at least ``in_flight_millis`` old by the
     storage's clock (the marker's modification time plus the time elapsed since:
     reclaim G4's clock, so no host's clock is compared with the store's), and only
     then makes E9's look: a commit that names such a file without checking it has
     published by then, and the look sees its version. The margin above the check
     age covers the time from a check to its publication and stores that stamp whole
     seconds (S3). An expiration whose files are all older waits for nothing: with
     the default grace (an hour) E13 never waits.
  E11 (iceberg.retention RT7) Before the plan, every managed Iceberg table drops the
     snapshots its retention properties (``history.expire.max-snapshot-age-ms``,
     ``history.expire.min-snapshots-to-keep``) no longer keep, in one ordinary
     commit (none in a dry run, which lists what it would drop): the new latest
     version then no longer reaches what only dropped snapshots reached, so this
     same run reclaims it once the older versions that reach it expire. The commit
     adds no file, so E4 and E8-E10 protect commits in flight exactly as before.
  E12 (iceberg.tables M6) Iceberg metadata files (named as Iceberg's writers name
     metadata files, manifest lists and manifests: ``*.metadata.json``,
     ``snap-*.avro``, ``*-m<n>.avro``) under
     the ``write.metadata.path`` of a MANAGED table that any existing version names
     (inside the root, outside its reserved area) are Iceberg files E8 reclaims as
     those under table locations: deleted when no kept version of ANY table reaches
     them, so tables that share the directory keep each other's files. Other files
     there are never touched (E6), nor anything under an EXTERNAL table's location,
     ``write.metadata.path`` or the directory of its metadata file. Spark's
     distributed expiration lists these directories too and keeps exactly these
     files (the same ``TableLocations``, the same ``unreadable_kept_metadata``).
  E14 A rollback (transaction RB1) publishes a version naming its target's files, which
     may be files only expired versions reach (E3): it checks that its target's root
     still exists right before it publishes, and publishes within moments. Roots go
     first (E5), so a rollback whose check found its target's root published before
     PUBLISH_MARGIN_MILLIS after the roots were deleted; then, and only then, the
     latest version is read again, and the files that versions committed since the
     plan reach are spared. Later versions cannot name them: a rollback to a target
     whose root is gone is refused.
  E7 A root is deleted no sooner than EXPIRED_ROOT_DELETE_DELAY_S after the listing that
     showed it (measured on this process's monotonic clock). A root that was missing
     when a writer last looked therefore cannot appear and vanish within that writer's
     window of trust (``lakehouse`` D1/D3): no commit lands in an expiration hole.

``expire_versions`` plans and executes an expiration on a ``LakehouseCatalog`` (EXPIRE
VERSIONS runs it). It sits here, above the catalog and the Iceberg layer, because it
reclaims the files of both: the catalog never calls up into it.

Full snapshot export (SPEC 7) copies exactly the files E3 counts as reachable from one
root, the root last (``export_snapshot_files``). ``spark.maintenance`` runs both on
Spark with the same pieces: ``existing_versions``, ``classify_versions``,
``check_export_target``, ``export_order``/``finish_export``.
"""

from __future__ import annotations

import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .errors import CorruptFileError, InvalidLocationError, ObjectExistsError
from .format import paths
from .format.definitions import LakehouseSettings, TableDef, decode_table_def
from .format.paths import METADATA_LOCATION, TABLES_DIRECTORY
from .storage import Storage, is_reserved_name
from .storage.locations import location_within
from .reclaim import LEASE_S, Expiring, is_sync_path
# tree TW2, also for spark.maintenance (Spark never imports the tree: architecture A2)
from .tree import node_references  # noqa: F401
from . import transaction
from .catalog import LakehouseCatalog
from .lakehouse import EXPIRED_ROOT_DELETE_DELAY_S, Lakehouse
from .lakehouse import now_millis as millis_now

#: Files written by a commit become reachable within seconds; an hour is generous.
DEFAULT_ORPHAN_GRACE_MILLIS = 3_600_000
#: E9: rounds of "versions committed since the plan" before Iceberg files are spared.
E9_ROUNDS = 16
#: E10: files per deletion call (S3 deletes at most 1000 keys per request).
DELETE_BATCH = 1000
#: E13: the margin above transaction C7's check age for the time from a check to its
#: publication (the check is the last step before C2 that may touch storage).
PUBLISH_MARGIN_MILLIS = 1000
#: E13: object stores stamp modification times in whole seconds (S3, Azure Blob).
STAMP_ROUNDING_MILLIS = 1000


def in_flight_millis(storage: Storage) -> int:
    """E13: how old (by the storage's clock) an orphan or Iceberg file must be before an
    expiration looks at the versions for the last time and deletes it."""
    rounding = STAMP_ROUNDING_MILLIS if storage.scheme.object_store else 0
    return int(transaction.PREWRITTEN_CHECK_AGE_S * 1000) + PUBLISH_MARGIN_MILLIS + rounding


def is_format_file(path: str) -> bool:
    """True for exactly the files the format names (E6, paths rule FP1): roots,
    definitions, nodes; never a user's file that only looks like one."""
    return paths.parse_format_path(path) is not None


def is_expirable_file(path: str) -> bool:
    """The files expiration considers (E6): the format's files and this library's
    leftover temp files (always orphans, E4)."""
    return is_format_file(path) or is_reserved_name(path)


def wait_before_deleting_roots(listed_at: float) -> None:
    """E7: sleep until EXPIRED_ROOT_DELETE_DELAY_S have passed since ``listed_at`` (the
    ``time.monotonic()`` at which the listing that showed the roots returned)."""
    remaining = listed_at + EXPIRED_ROOT_DELETE_DELAY_S - time.monotonic()
    if remaining > 0:
        time.sleep(remaining)


@dataclass
class ExpirationPlan:
    latest: int
    kept: list[int]
    versions: list[int] = field(default_factory=list)  # expired, oldest first
    files: list[str] = field(default_factory=list)  # every file to delete, roots first
    listed_at: float = 0.0  # time.monotonic() when the listing returned (E7)
    storage_options: dict | None = None  # reach the tables' Iceberg files (E9)
    stale_markers: list[str] = field(default_factory=list)  # E10: left by crashed processes
    #: E4, E8: the orphans and Iceberg files among ``files``, with their modification
    #: times (milliseconds, the storage's clock): deleted only through E10, E13 and E9
    guarded: dict[str, int] = field(default_factory=dict)
    #: E9: the files the kept versions reach (their subtrees are not walked again)
    kept_files: set[str] = field(default_factory=set)

    def execute(self, lakehouse: Lakehouse) -> None:
        storage = lakehouse.storage
        roots = [paths.root_node_path(v) for v in self.versions]
        if roots:
            lakehouse.write_hint(max(self.latest, lakehouse.latest_version()))  # E5
            wait_before_deleting_roots(self.listed_at)  # E7
        storage.delete_many(roots)  # E5: roots first, oldest first
        roots_gone_at = time.monotonic()
        rest = [f for f in self.files if f not in set(roots)]
        with guarded_deletion(lakehouse, self.guarded, self.latest, self.storage_options, self.kept_files) as (
            allowed, seconds_left,
        ):
            for start in range(0, len(allowed), DELETE_BATCH):
                if seconds_left() <= 0:  # E10, reclaim G4: the rest waits for the next run
                    break
                storage.delete_many(allowed[start:start + DELETE_BATCH])
        expired_only = [f for f in rest if f not in self.guarded]  # E3: only expired versions reach them
        if expired_only:
            reached = reached_after_roots(lakehouse, self.latest, roots_gone_at, self.kept_files)  # E14
            storage.delete_many([f for f in expired_only if f not in reached])
        if self.stale_markers:
            storage.delete_many(self.stale_markers)  # E10, reclaim G4
        lakehouse.write_hint(max(self.latest, lakehouse.latest_version()))


@contextmanager
def guarded_deletion(
    lakehouse: Lakehouse,
    guarded: Mapping[str, int],
    seen: int,
    storage_options: dict | None,
    kept_files: set[str] | None = None,
) -> Iterator[tuple[list[str], Callable[[], float]]]:
    """E10, E13, E9 around the deletion of ``guarded`` files (path -> modification
    time by the storage's clock), planned when version ``seen`` was the latest: yields
    (the files that may be deleted, sorted; a callable giving the seconds within which
    a deletion may still start, reclaim G4) and removes the marker afterwards. No
    guarded file, no marker (reclaim G5). Local and Spark expiration both delete
    orphans and Iceberg files through it."""
    if not guarded:
        yield [], lambda: float("inf")
        return
    expiring = Expiring.begin(lakehouse.storage, guarded)
    try:
        spared = expiring.spared()  # reclaim G3: intents read after the marker
        allowed = [] if spared is None else [f for f in guarded if f not in spared]
        if allowed:
            settled_at = in_flight_millis(lakehouse.storage)
            wait_until_settled(expiring, [guarded[f] for f in allowed], settled_at)  # E13
            allowed = not_reached_since(lakehouse, allowed, seen, storage_options, kept_files)  # E9
        yield sorted(allowed), expiring.seconds_left
    finally:
        expiring.end()


def reached_after_roots(
    lakehouse: Lakehouse, seen: int, roots_gone_at: float, kept_files: set[str] | None = None
) -> set[str]:
    """E14: the files versions committed since version ``seen`` reach (below the
    subtrees of ``kept_files``), looked at once PUBLISH_MARGIN_MILLIS after the expired
    roots were deleted (at ``roots_gone_at``, monotonic). Local and Spark expiration
    spare them among the files only expired versions reach."""
    remaining = roots_gone_at + PUBLISH_MARGIN_MILLIS / 1000 - time.monotonic()
    if remaining > 0:
        time.sleep(remaining)
    latest = lakehouse.find_latest(at_least=seen)  # fresh: probes past ``seen``
    if latest is None or latest <= seen:
        return set()
    return reachable_files(lakehouse, range(seen + 1, latest + 1), set(kept_files or ()))


def wait_until_settled(expiring: Expiring, modified: Iterable[int], age_millis: int) -> None:
    """E13: sleep until the newest of ``modified`` (storage modification times) is
    ``age_millis`` old by the storage's clock, as the marker tells it."""
    newest = max(modified, default=None)
    while newest is not None:
        now = expiring.storage_now_millis()
        remaining = newest + age_millis - now if now is not None else 0
        if remaining <= 0:
            return
        time.sleep(remaining / 1000)


def not_reached_since(
    lakehouse: Lakehouse, files: list[str], seen: int, storage_options: dict | None, kept_files: set[str] | None = None
) -> list[str]:
    """E9: ``files`` without those that versions committed after version ``seen`` (the
    plan's latest) reach: their roots, nodes and definition files (below the subtrees
    ``kept_files`` already holds) and the Iceberg files of the tables they changed;
    nothing at all if versions keep coming. Local and Spark expiration both look again
    through this."""
    walked = set(kept_files or ())
    for _ in range(E9_ROUNDS):
        latest = lakehouse.find_latest(at_least=seen)  # fresh: probes past ``seen``
        if latest is None or latest <= seen:
            return files
        versions = range(seen + 1, latest + 1)
        reached = reachable_files(lakehouse, versions, walked)
        if any(not is_expirable_file(f) for f in files):
            iceberg = iceberg_files_reached(lakehouse, versions, storage_options)
            if iceberg is None:  # what they reach is unknown: spare every Iceberg file
                files = [f for f in files if is_expirable_file(f)]
            else:
                reached |= iceberg
        files = [f for f in files if f not in reached]
        seen = latest
    return []


def reachable_files(lakehouse: Lakehouse, versions: Iterable[int], seen: set[str] | None = None) -> set[str]:
    """Every file the roots of ``versions`` reach: roots, definitions, nodes (E3)."""
    seen = set() if seen is None else seen
    reached: set[str] = set()
    for version in versions:
        snapshot = lakehouse.snapshot(version)
        reached.add(paths.root_node_path(version))
        reached.add(snapshot.lakehouse_def_path)
        reached.update(snapshot.tree.files(seen))  # tree TW2
    return reached


def existing_versions(listing: Iterable[str], latest: int) -> list[int]:
    """Versions whose root file is in ``listing``, up to ``latest``, newest first."""
    return sorted(
        (v for v in (paths.parse_root_node_path(p) for p in listing) if v is not None and v <= latest),
        reverse=True,
    )


def _always_kept(settings: LakehouseSettings, retain_last: int | None) -> tuple[int, set[int | None]]:
    """E2: how many newest versions are kept, and the exported snapshots' versions."""
    keep_newest = max(settings.minimum_versions_to_keep, retain_last or 0)
    exported = {paths.parse_root_node_path(p) for p in settings.exported_snapshots.values()}
    return keep_newest, exported


def versions_needing_age(existing: Sequence[int], settings: LakehouseSettings, retain_last: int | None) -> list[int]:
    """The versions of ``existing`` (newest first) whose creation time decides whether
    they expire: all but the newest kept ones and the exported snapshots (E2)."""
    keep_newest, exported = _always_kept(settings, retain_last)
    return [v for rank, v in enumerate(existing) if rank >= keep_newest and v not in exported]


def classify_versions(
    existing: Sequence[int],
    settings: LakehouseSettings,
    retain_last: int | None,
    older_than_millis: int | None,
    now_millis: int,
    created_at_millis: Callable[[int], int],
) -> tuple[list[int], list[int]]:
    """(kept, expired) for ``existing`` versions, newest first (E1, E2).

    ``settings`` are the latest version's; ``created_at_millis(v)`` is asked only for
    the versions :func:`versions_needing_age` names. Pure: local and Spark expiration
    both decide here.
    """
    keep_newest, exported = _always_kept(settings, retain_last)
    kept: list[int] = []
    expired: list[int] = []
    for rank, version in enumerate(existing):
        if rank < keep_newest or version in exported:
            kept.append(version)
            continue
        created = created_at_millis(version)
        if older_than_millis is not None:
            old = created < older_than_millis
        else:
            old = now_millis - created > settings.max_version_age_millis(version)
        (expired if old else kept).append(version)
    return kept, expired


def plan_expiration(
    lakehouse: Lakehouse,
    retain_last: int | None,
    older_than_millis: int | None,
    now_millis: int,
    orphan_grace_millis: int = DEFAULT_ORPHAN_GRACE_MILLIS,
    storage_options: dict | None = None,
) -> ExpirationPlan:
    """Decide which versions expire and which files go (E1-E8). ``storage_options``
    reach the tables' Iceberg files (as the lakehouse's own)."""
    # The latest version is read before the listing: a version published in between is
    # then after the plan's latest, where E9 looks again. (Read after, it was the plan's
    # latest without its root in the listing: neither kept nor looked at again, so the
    # files of a transaction committed at that moment were deleted as orphans.)
    latest = lakehouse.snapshot()
    everything = lakehouse.storage.list("", include_reserved=True)
    listing = [p for p in everything if is_expirable_file(p)]
    listed_at = time.monotonic()
    existing = existing_versions(listing, latest.version)
    kept, expired = classify_versions(
        existing,
        latest.settings,
        retain_last,
        older_than_millis,
        now_millis,
        lambda version: lakehouse.snapshot(version).created_at_millis,
    )

    seen: set[str] = set()
    keep_files = reachable_files(lakehouse, kept, seen)
    expired_files = reachable_files(lakehouse, expired, set(seen)) - keep_files
    guarded = iceberg_files_to_delete(
        lakehouse, everything, kept, keep_files | expired_files, now_millis, orphan_grace_millis, storage_options
    )
    doomed = []
    for path in listing:
        version = paths.parse_root_node_path(path)
        if path in keep_files or version in kept or (version is not None and version > latest.version):
            continue  # E4: a root newer than the plan's latest is a version, not an orphan
        if path in expired_files:
            doomed.append(path)
            continue
        modified = lakehouse.storage.modified_millis(path)
        if modified is not None and now_millis - modified >= orphan_grace_millis:
            guarded[path] = modified  # E4
    expired.sort()
    roots = [paths.root_node_path(v) for v in expired]
    rest = sorted((set(doomed) | set(guarded)) - set(roots))
    stale = [p for p in everything if is_sync_path(p) and _older_than_lease(lakehouse.storage, p, now_millis)]
    return ExpirationPlan(
        latest.version, sorted(kept), expired, roots + rest, listed_at, storage_options, stale, guarded, keep_files
    )


def _older_than_lease(storage: Storage, path: str, now_millis: int) -> bool:
    """E10: a handshake file older than the lease (reclaim G4), left by a crashed process."""
    modified = storage.modified_millis(path)
    return modified is not None and now_millis - modified > LEASE_S * 1000


@dataclass(frozen=True)
class ExpireResult:
    """What :func:`expire_versions` deleted (or, in a dry run, would delete)."""

    versions: list[int]  # expired, oldest first
    files: list[str]  # every file deleted, roots first
    #: E11: "namespace.table" -> the Iceberg snapshots dropped (or, dry run, to drop)
    snapshots: dict[str, list[int]] = field(default_factory=dict)


def expire_versions(
    catalog: LakehouseCatalog,
    retain_last: int | None = None,
    older_than_millis: int | None = None,
    dry_run: bool = False,
    orphan_grace_millis: int | None = None,
) -> ExpireResult:
    """Delete old versions of the lakehouse ``catalog`` is opened on, and every file no
    kept version reaches (SPEC 7; E1-E8), Iceberg files included.

    A version expires when it is older than ``older_than_millis`` (default: its
    maximum age from the lakehouse definition), unless it is among the newest
    ``max(retain_last, minimum_versions_to_keep)`` or an exported snapshot. The dry
    run computes exactly the same lists and deletes nothing. Unreferenced files
    younger than ``orphan_grace_millis`` (default one hour) are left alone: they may
    belong to a commit in flight.
    """
    grace = DEFAULT_ORPHAN_GRACE_MILLIS if orphan_grace_millis is None else orphan_grace_millis
    lakehouse = catalog.lakehouse
    snapshots = expire_table_snapshots(catalog, dry_run)  # E11
    plan = plan_expiration(
        lakehouse, retain_last, older_than_millis, millis_now(), grace, catalog.storage_options
    )
    if not dry_run:
        plan.execute(lakehouse)
        lakehouse.forget_versions(plan.versions)
    return ExpireResult(plan.versions, plan.files, snapshots)


def expire_table_snapshots(catalog: LakehouseCatalog, dry_run: bool = False) -> dict[str, list[int]]:
    """E11: every managed Iceberg table drops the snapshots its retention properties
    no longer keep (iceberg.retention RT6, RT7), in one commit, before the plan; a
    lakehouse with no table metadata imports nothing of the Iceberg layer."""
    txn = catalog.begin()
    try:
        any_table = bool(txn.list_tables())
    finally:
        txn.rollback()
    if not any_table:
        return {}
    from .iceberg.retention import apply_retention

    return apply_retention(catalog, millis_now(), dry_run=dry_run, storage_options=catalog.storage_options)


def table_definitions(lakehouse: Lakehouse, files: Iterable[str]) -> list[TableDef]:
    """The table definitions among ``files`` (paths the format names)."""
    found = []
    for path in sorted(set(files)):
        kind = paths.parse_format_path(path)
        if kind is not None and kind.kind == "table":
            found.append(decode_table_def(lakehouse.storage.read_immutable(path), path))
    return found


def current_definition_files(
    lakehouse: Lakehouse, versions: Iterable[int], lo: str | None = None, hi: str | None = None
) -> set[str]:
    """The definition files the keys in [lo, hi) of ``versions`` name (the newest
    message of each key, not the older ones a node's buffer may still hold: E8)."""
    found: set[str] = set()
    for version in versions:
        for _, value in lakehouse.snapshot(version).tree.scan(lo, hi) or ():
            if value is not None:
                found.add(value)
    return found


def metadata_pointers(tables: Iterable[TableDef]) -> list[tuple[str, bool]]:
    """(metadata location, is EXTERNAL) of the Iceberg tables among ``tables``."""
    return [
        (t.format_properties[METADATA_LOCATION], t.table_type == "EXTERNAL")
        for t in tables
        if t.format_properties.get(METADATA_LOCATION)
    ]


#: E12: the names Iceberg writers give metadata files, manifest lists and manifests.
_METADATA_FILE_NAME = re.compile(r".*\.metadata\.json(\.gz)?|.*\.gz\.metadata\.json|snap-.*\.avro|.*-m\d+\.avro")


@dataclass(frozen=True)
class TableLocations:
    """E8's prefixes under the root: where Iceberg files may be deleted (``owned``),
    where only Iceberg metadata files may be (``metadata``, E12), and where never
    (``foreign``, EXTERNAL tables' locations and metadata directories)."""

    owned: tuple[str, ...]
    foreign: tuple[str, ...]
    metadata: tuple[str, ...] = ()

    @classmethod
    def of(
        cls, root_uri: str, tables: Iterable[tuple[str, bool]], metadata_paths: Iterable[tuple[str, bool]] = ()
    ) -> "TableLocations":
        """From (table location, is EXTERNAL) pairs, every version's tables (the tables
        only expired versions name included: what they owned goes with them), and the
        (``write.metadata.path``, is EXTERNAL) pairs of their metadata (E12)."""
        owned, foreign, metadata = {TABLES_DIRECTORY + "/"}, set(), set()
        for location, external in tables:
            relative = location_within(location, root_uri)
            if relative is not None:
                (foreign if external else owned).add(relative.rstrip("/") + "/")
        for location, external in metadata_paths:
            relative = location_within(location, root_uri)
            if relative is not None and relative.strip("/") and not paths.in_reserved_area(relative):
                (foreign if external else metadata).add(relative.rstrip("/") + "/")
        return cls(tuple(sorted(owned)), tuple(sorted(foreign)), tuple(sorted(metadata)))

    def holds(self, path: str) -> bool:
        """True if expiration may delete ``path`` when nothing kept reaches it (E8, E12)."""
        if is_expirable_file(path) or is_sync_path(path) or any(path.startswith(p) for p in self.foreign):
            return False
        if any(path.startswith(p) for p in self.owned):
            return True
        name = path.rsplit("/", 1)[-1]
        return _METADATA_FILE_NAME.fullmatch(name) is not None and any(path.startswith(p) for p in self.metadata)


def iceberg_files_reached(
    lakehouse: Lakehouse, versions: Iterable[int], storage_options: dict | None
) -> set[str] | None:
    """E9: the Iceberg files under the root that the tables ``versions`` changed reach
    (through each table definition their own transactions wrote); None when a metadata
    file they name cannot be read (what it reaches is unknown)."""
    definitions: set[str] = set()
    for version in versions:
        snapshot = lakehouse.snapshot(version)
        for key in snapshot.changed_keys():
            value = snapshot.tree.get(key)
            if value is not None:
                definitions.add(value)
    pointers = metadata_pointers(table_definitions(lakehouse, definitions))
    if not pointers:
        return set()
    from .iceberg.reach import IcebergReach

    reached = IcebergReach(storage_options).reach(location for location, _ in pointers)
    if reached.missing:
        return None
    root = lakehouse.storage.root_uri
    return {relative for relative in (location_within(f, root) for f in reached.files) if relative is not None}


def unreadable_kept_metadata(reached: Any, deleted: Iterable[str]) -> list[CorruptFileError]:
    """E8: what stops an expiration among the metadata files kept versions name that
    ``reached`` (an ``iceberg.reach.Reached``) could not read, one error each, sorted by
    location; none for a file deleted after a later commit (iceberg.oldmetadata OM5: it
    does not exist and lies under one of the ``deleted`` directories, those of the tables
    any existing version names that delete their old metadata): it reaches nothing.
    Local and Spark expiration both judge here."""
    if not reached.missing:
        return []
    from .iceberg.oldmetadata import explains_missing

    deleted = set(deleted)
    return [
        CorruptFileError(location, f"Iceberg metadata named by a kept version {reason}; no Iceberg file is deleted")
        for location, reason in sorted(reached.missing.items())
        if location not in reached.absent or not explains_missing(location, deleted)
    ]


def iceberg_files_to_delete(
    lakehouse: Lakehouse,
    listing: Sequence[str],
    kept: Sequence[int],
    every_definition: set[str],
    now_millis: int,
    orphan_grace_millis: int,
    storage_options: dict | None,
) -> dict[str, int]:
    """E8: the Iceberg files (paths under the root) that expiration deletes, with their
    modification times, given the ``kept`` versions and ``every_definition`` file any
    existing version reaches."""
    if all(is_expirable_file(p) or p == paths.LATEST_HINT_PATH for p in listing):
        return {}  # no file but the format's own: no definition is read, nothing imported
    pointers = metadata_pointers(table_definitions(lakehouse, every_definition))
    from .iceberg.reach import IcebergReach

    root = lakehouse.storage.root_uri
    kept_pointers = metadata_pointers(table_definitions(lakehouse, current_definition_files(lakehouse, kept)))
    reach = IcebergReach(storage_options)
    live_files = reach.reach(location for location, _ in kept_pointers)
    if live_files.missing:
        problems = unreadable_kept_metadata(live_files, reach.deletion_prefixes(pointers))  # OM5
        if problems:
            raise problems[0]
    locations = TableLocations.of(root, reach.table_locations(pointers), reach.metadata_paths(pointers))
    live = {relative for relative in (location_within(f, root) for f in live_files.files) if relative is not None}
    doomed: dict[str, int] = {}
    for path in listing:
        if path in live or not locations.holds(path):
            continue
        modified = lakehouse.storage.modified_millis(path)
        if modified is not None and now_millis - modified >= orphan_grace_millis:
            doomed[path] = modified
    return doomed


# ---------------------------------------------------------------------------
# Full snapshot export (SPEC 7)
# ---------------------------------------------------------------------------


def check_export_target(source: Storage, target: Storage) -> None:
    """Refuse an export target that overlaps the source root or already holds a lakehouse."""
    a, b = source.root_uri, target.root_uri
    if a.startswith(b) or b.startswith(a):
        raise InvalidLocationError(
            f"export target {b!r} overlaps the lakehouse {a!r}; export to a separate location"
        )
    if Lakehouse(target).find_latest() is not None:
        raise ObjectExistsError(f"export target {b!r} already holds a lakehouse")


def export_order(files: Iterable[str], version: int) -> list[str]:
    """Files of a full export in copy order: everything else sorted, the root last, so
    the target becomes a lakehouse only once all the files it needs are there."""
    root = paths.root_node_path(version)
    return sorted(f for f in set(files) if f != root) + [root]


def finish_export(source: Storage, target: Storage, version: int) -> None:
    """Last step of a full export: create the root file (exclusively) and the hint."""
    root = paths.root_node_path(version)
    if not target.create_exclusive(root, source.read(root)):
        raise ObjectExistsError(f"export target {target.root_uri!r} already holds version {version}")
    target.write(paths.LATEST_HINT_PATH, paths.encode_hint(version))


def export_snapshot_files(lakehouse: Lakehouse, target: Storage, version: int) -> list[str]:
    """Full export: copy every file root ``version`` reaches (E3's reachability: the root,
    its lakehouse definition, nodes and object definitions) to ``target``, byte for
    byte under the same relative paths, root last, then write the target's hint. The
    target then opens as a lakehouse whose latest version is ``version``.

    Recording a name for the snapshot is the catalog's job (``export_snapshot``).
    Returns the copied files in copy order.
    """
    check_export_target(lakehouse.storage, target)
    files = export_order(reachable_files(lakehouse, [version]), version)
    for path in files[:-1]:
        target.write(path, lakehouse.storage.read(path))
    finish_export(lakehouse.storage, target, version)
    return files
