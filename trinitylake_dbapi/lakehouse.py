"""Versions of a lakehouse (SPEC 7): discovery, the hint, snapshots, history.

A lakehouse is a chain of root node files ``_<version bits>.arrow``, each pointing at
its predecessor through ``previous_root``. This module finds the latest version, opens
any version (by number, time or exported snapshot name), walks the history, creates
version 0, and publishes a root by exclusive create (the commit point of
:mod:`.transaction`, C2) in two explicit halves, :func:`prepare_root` and
:func:`publish_root`, between which the transaction waits for its files (C1) and checks
its base (D3, :meth:`Lakehouse.is_still_latest`).

History. H0: root v > 0 names root v-1 as its ``previous_root`` (C2 writes it so); a
root that names anything else was not written by a commit and is a CorruptFileError
naming it when read, so no commit is ever built on top of it.
H1: ``created_at_millis`` never decreases from a version to the next (a commit or
rollback stamps max(now, its base's time)), so the version at a time is found by
bisection over version numbers: about log2(n) roots, of each of which only the system
rows are read (``nodefile.decode_system_rows``: a tenth of a millisecond, not half of
one, for a root of a lakehouse of 50,000 versions); only the answer is opened whole, and
the times seen are remembered (roots are immutable), so later searches of the same
process skip the first steps. H2: expiration deletes old roots only, keeping exported ones, so the
missing roots below the latest are older than every kept one except those snapshots;
bisection treats a missing root as too old and looks at the exported snapshots last.
H3: the history is read lazily, one root at a time, newest first (memory stays
bounded however many versions there are).

Version discovery (SPEC 7: the hint is a starting point, a missing root is the end).
An *observation* is "version v was the latest at time t": t is the monotonic time taken
before the request that showed it (the probe that found root v+1 missing, or the C2
that created root v).

  D1. Within FRESH_LATEST_S of its last observation, a process probes forward from the
      observed version: one existence check (root v+1) in steady state.
  D2. Later, it starts at the hint when the hint is further on (expiration writes the
      hint before it deletes roots), else at the observed version if its root still
      exists, else at the hint, version 0, or a listing of the top level.
  D3. C2 is issued within FRESH_LATEST_S of the observation its base came from. A
      transaction older than that rediscovers the latest version first (D1/D2); versions
      committed meanwhile are checked as in C4 (one that has since expired makes the
      commit fail with a SerializationError: it cannot be checked). The check is the
      last step before the root is published (after C1 and after the root's own file
      is prepared, both of which may be slow); if the base is no longer the latest,
      the prepared root is discarded and the attempt ends as a lost race does.
  D4. A process that lost a race (C4) within CONTENDED_S re-observes the latest version
      (D1: one existence check) when a transaction starts to commit, however fresh its
      base: under contention the base a transaction began on is usually taken while it
      runs, and a commit built on it is a lost race (its node files written and its root
      prepared for nothing). A process that has not lost a race trusts a fresh base, so
      a lone writer makes no extra request (the S3 budgets of docs/performance.md).

Why D1 and D3 are safe: expiration deletes a root only EXPIRED_ROOT_DELETE_DELAY_S
(> FRESH_LATEST_S) after a listing that showed it (maintenance rule E7). If root v+1 was
missing at t, any v+1 is created after t, so it cannot be listed and then deleted
before t + EXPIRED_ROOT_DELETE_DELAY_S: within the window a missing v+1 was never
created, and v itself is kept (expiration deletes only roots that have a newer one).
Without E7, a process that last saw v, while v+1..w were committed and expired, would
take v for the latest and create "v+1" inside the hole, forking the history and
losing that commit. The argument compares durations on monotonic clocks only, never
wall-clock times of different machines.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Sequence

from .errors import (
    CommitFailedError,
    CommitOutcomeUnknownError,
    CorruptFileError,
    MissingFileError,
    ObjectNotFoundError,
    StorageError,
)
from .format import keys as keyfmt
from .format import paths
from .format.definitions import (
    LakehouseDef,
    LakehouseSettings,
    decode_lakehouse_def,
    encode,
)
from .format.nodefile import NodeFile, decode_node_file, decode_system_rows, encode_node_file
from .storage import PreparedCreate, Storage
from .tree import NodeStore, Tree, TreeConfig, empty_root, own_messages

#: D1/D3: how long an observation of the latest version is trusted to have no
#: expiration hole after it (module docstring).
FRESH_LATEST_S = 0.25
#: E7: expiration waits this long after the listing that showed a root before deleting
#: it. Must exceed FRESH_LATEST_S; the difference is the margin for a process pausing
#: between its freshness check and its request.
EXPIRED_ROOT_DELETE_DELAY_S = 1.0
#: D4: for this long after a lost race, a process re-observes before each commit.
CONTENDED_S = 2.0
#: Buffers are flushed once they exceed this (SPEC 6 allows flushing before the
#: capacity): a commit rewrites the root, so its size is the cost of every commit. On
#: local disk (and in memory) bytes cost fsync time. Measured in docs/performance.md.
FLUSH_THRESHOLD_BYTES: int | None = 16 * 1024
#: Roots whose creation time a process remembers (immutable: a root is never rewritten).
_REMEMBERED_TIMES = 65536
#: On object storage a request costs as much as ~2 MB of transfer (20 ms against
#: 100 MB/s), so buffers four times larger, whose flushes move more messages per node
#: PUT, are cheaper: at 1,000,000 tables 4.25 requests per commit instead of 4.88.
OBJECT_STORE_FLUSH_THRESHOLD_BYTES: int | None = 64 * 1024


def flush_threshold(storage: Storage) -> int | None:
    """The flush threshold for a lakehouse on ``storage`` (see the two constants)."""
    if not storage.scheme.object_store:
        return FLUSH_THRESHOLD_BYTES
    return OBJECT_STORE_FLUSH_THRESHOLD_BYTES


def now_millis() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Snapshot:
    """One version of the lakehouse, read-only."""

    version: int
    root: NodeFile
    tree: Tree
    lakehouse_def_path: str
    lakehouse_def: LakehouseDef
    settings: LakehouseSettings

    @property
    def created_at_millis(self) -> int:
        return int(self.root.system.get(keyfmt.CREATED_AT_MILLIS, "0"))

    @property
    def previous_version(self) -> int | None:
        previous = self.root.system.get(keyfmt.PREVIOUS_ROOT)
        return None if previous is None else paths.parse_root_node_path(previous)

    @property
    def rollback_from_version(self) -> int | None:
        origin = self.root.system.get(keyfmt.ROLLBACK_FROM_ROOT)
        return None if origin is None else paths.parse_root_node_path(origin)

    def changed_keys(self) -> list[str]:
        """The keys this version's own transaction wrote (tree invariant T5)."""
        return list(dict.fromkeys(m.key for m in own_messages(self.root, str(self.version))))


class Lakehouse:
    """An opened lakehouse: version discovery, snapshots and commits.

    Thread-safe for reads; each Transaction belongs to one thread.
    """

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.store: NodeStore | None = None
        self._defs: dict[str, LakehouseDef] = {}
        self._settings: dict[str, tuple[LakehouseSettings, TreeConfig]] = {}
        self._snapshots: dict[int, Snapshot] = {}
        #: created_at_millis of roots the timestamp search looked at (H1), by version.
        self._times: dict[int, int] = {}
        #: The last observation (version, monotonic time; module docstring), one tuple
        #: so that threads never see a version with another version's time.
        self._observed: tuple[int, float] | None = None
        #: When a commit of this process last lost a race (monotonic; D4).
        self._lost_race_at: float | None = None

    # -- opening ------------------------------------------------------------------

    @classmethod
    def open(cls, storage: Storage) -> "Lakehouse":
        """Open the existing lakehouse at ``storage``; opening never writes."""
        lakehouse = cls(storage)
        if lakehouse.find_latest() is None:
            raise ObjectNotFoundError(
                f"no lakehouse at {storage.root_uri!r} (no root node file found); "
                "pass create=True to create one"
            )
        return lakehouse

    @classmethod
    def create(
        cls,
        storage: Storage,
        definition: LakehouseDef,
        files: Mapping[str, bytes] | None = None,
        entries: Sequence[tuple[str, str]] = (),
    ) -> "Lakehouse":
        """Open the lakehouse at ``storage``, creating it first if there is none.

        Version 0 holds ``definition`` and the keys ``entries`` (key, value), whose
        values may name the new ``files``; they are written as a commit's are (C1, then
        the root by exclusive create). If another process creates the lakehouse first,
        its version 0 wins and what this call wrote is removed again.
        """
        lakehouse = cls(storage)
        if lakehouse.find_latest() is None:
            lakehouse._create(definition, dict(files or {}), entries)
        return lakehouse

    def _create(
        self, definition: LakehouseDef, files: dict[str, bytes], entries: Sequence[tuple[str, str]]
    ) -> None:
        def_path = paths.new_lakehouse_def_path()
        files[def_path] = encode(definition)
        settings = LakehouseSettings.from_proto(definition)
        now = now_millis()
        empty = empty_root(settings.order, now)
        config = TreeConfig(settings.order, settings.buffer_capacity_bytes, flush_threshold(self.storage))
        update = Tree(NodeStore(self.storage, settings.order), empty, config).apply(entries, "0", now)
        files.update(update.files)
        self.storage.write_many(files, new=True)
        root = NodeFile(
            order=update.root.order,
            system={keyfmt.LAKEHOUSE_DEF: def_path, **update.root.system},
            keys=update.root.keys,
            values=update.root.values,
            children=update.root.children,
            buffer=update.root.buffer,
        )
        if not create_root(self.storage, 0, encode_node_file(root)):
            # Another process created the lakehouse first: use theirs.
            self.storage.delete_many(files)
            return
        self.write_hint(0)

    # -- versions -------------------------------------------------------------------

    def _read_hint(self) -> int | None:
        try:
            return paths.decode_hint(self.storage.read(paths.LATEST_HINT_PATH))
        except MissingFileError:
            return None

    def write_hint(self, version: int) -> None:
        """Overwrite ``_latest_hint.txt`` with ``version``, best effort (C3; expiration
        writes it too before it deletes roots, E5). Never raises a storage error."""
        try:
            self.storage.write(paths.LATEST_HINT_PATH, paths.encode_hint(version), durable=False)
        except StorageError:
            pass  # C3 is best effort: readers never trust the hint alone

    def _root_exists(self, version: int) -> bool:
        return 0 <= version <= paths.MAX_VERSION and self.storage.exists(paths.root_node_path(version))

    def _probe_forward(self, known: int) -> int:
        """Latest version given that ``known`` exists: gallop, then bisect."""
        step = 1
        low = known  # exists
        high = None  # first known missing
        while high is None:
            candidate = low + step
            if candidate > paths.MAX_VERSION or not self._root_exists(candidate):
                high = candidate
            else:
                low = candidate
                step *= 2
        while high - low > 1:
            middle = (low + high) // 2
            if self._root_exists(middle):
                low = middle
            else:
                high = middle
        return low

    def find_latest(self, at_least: int | None = None) -> int | None:
        """The latest version, or None if there is no lakehouse (SPEC 7, D1/D2).

        The hint is a starting point only: missing, unparsable, stale or ahead of
        reality, the answer is the same. ``at_least``: a version known to exist.
        """
        started = time.monotonic()
        observed = self._observed
        if at_least is None and observed is not None:
            known, observed_at = observed
            if started - observed_at <= FRESH_LATEST_S:  # D1
                return self.note_latest(self._probe_forward(known), started)
            hint = self._read_hint()  # D2
            if hint is not None and hint > known and self._root_exists(hint):
                return self.note_latest(self._probe_forward(hint), started)
            if self._root_exists(known):
                return self.note_latest(self._probe_forward(known), started)
        start = at_least if at_least is not None else self._read_hint()
        if start is not None and self._root_exists(start):
            return self.note_latest(self._probe_forward(start), started)
        if self._root_exists(0):
            return self.note_latest(self._probe_forward(0), started)
        # The hint points past the end or below expired versions: list the roots (they
        # live at the top level, so the node directories below it are not listed).
        top_level = self.storage.list("", recursive=False)
        versions = [v for v in map(paths.parse_root_node_path, top_level) if v is not None]
        if not versions:
            return None
        return self.note_latest(self._probe_forward(max(versions)), started)

    def note_latest(self, version: int, observed_at: float) -> int:
        """Record an observation (module docstring) unless a newer one is recorded."""
        current = self._observed
        if current is None or version > current[0] or (version == current[0] and observed_at > current[1]):
            self._observed = (version, observed_at)
        return version

    def discover(self) -> tuple[int, float]:
        """(latest version, time of this observation) for a transaction's base (D3)."""
        started = time.monotonic()
        latest = self.find_latest()
        if latest is None:
            raise ObjectNotFoundError(f"the lakehouse at {self.storage.root_uri!r} has no root")
        return latest, started

    def is_fresh(self, observed_at: float) -> bool:
        """D1/D3: an observation made at ``observed_at`` (monotonic) is still trusted."""
        return time.monotonic() - observed_at <= FRESH_LATEST_S

    def note_lost_race(self) -> None:
        """D4: a commit of this process lost a race (C4)."""
        self._lost_race_at = time.monotonic()

    def is_contended(self) -> bool:
        """D4: this process lost a race within CONTENDED_S, so a fresh base is not trusted."""
        seen = self._lost_race_at
        return seen is not None and time.monotonic() - seen <= CONTENDED_S

    def is_still_latest(self, version: int, observed_at: float) -> bool:
        """D3, right before a C2 built on ``version``, observed to be the latest at
        ``observed_at``: True while that observation is fresh, else observe again."""
        return self.is_fresh(observed_at) or self.discover()[0] == version

    def latest_version(self) -> int:
        latest = self.find_latest()
        if latest is None:
            raise ObjectNotFoundError(f"the lakehouse at {self.storage.root_uri!r} has no root")
        return latest

    # -- snapshots ------------------------------------------------------------------

    def _lakehouse_def(self, path: str) -> LakehouseDef:
        definition = self._defs.get(path)
        if definition is None:
            try:
                data = self.storage.read_immutable(path)
            except MissingFileError:
                raise CorruptFileError(path, "the lakehouse definition file is missing") from None
            definition = decode_lakehouse_def(data, path)
            self._defs[path] = definition
        return definition

    def snapshot(self, version: int | None = None) -> Snapshot:
        """The given version (default: the latest); ObjectNotFoundError if it does not exist."""
        if version is None:
            version = self.latest_version()
        cached = self._snapshots.get(version)
        if cached is not None:
            return cached
        if not isinstance(version, int) or not 0 <= version <= paths.MAX_VERSION:
            raise ObjectNotFoundError(f"version {version!r} does not exist")
        path = paths.root_node_path(version)
        try:
            data = self.storage.read(path)
        except MissingFileError:
            raise ObjectNotFoundError(
                f"version {version} does not exist in {self.storage.root_uri!r}"
            ) from None
        return self.remember_snapshot(version, decode_node_file(data, path))

    def remember_snapshot(self, version: int, probe: NodeFile) -> Snapshot:
        """Cache and return the snapshot of root ``version``, given its decoded file."""
        path = paths.root_node_path(version)
        def_path = probe.system.get(keyfmt.LAKEHOUSE_DEF)
        if def_path is None:
            raise CorruptFileError(path, "root node without a lakehouse_def system row")
        definition = self._lakehouse_def(def_path)
        settings, config = self._settings_of(def_path, definition)
        if probe.order != settings.order:
            raise CorruptFileError(
                path, f"node key table has {probe.order} rows, the tree order is {settings.order}"
            )
        previous = probe.system.get(keyfmt.PREVIOUS_ROOT)
        if version > 0 and previous != paths.root_node_path(version - 1):  # H0
            raise CorruptFileError(
                path, f"previous_root is {previous!r}, but root {version} must name the root of "
                f"version {version - 1} ({paths.root_node_path(version - 1)!r})"
            )
        if self.store is None:
            self.store = NodeStore(self.storage, settings.order)
        snapshot = Snapshot(version, probe, Tree(self.store, probe, config, path), def_path, definition, settings)
        self._snapshots[version] = snapshot
        while len(self._snapshots) > 256:  # threads may evict at once: the oldest may be gone
            try:
                self._snapshots.pop(next(iter(self._snapshots)), None)
            except (StopIteration, RuntimeError):  # emptied, or resized by another thread
                break
        return snapshot

    def _settings_of(self, def_path: str, definition: LakehouseDef) -> tuple[LakehouseSettings, TreeConfig]:
        """The settings and tree configuration of a lakehouse definition file (immutable:
        computed once per file, not once per version)."""
        found = self._settings.get(def_path)
        if found is None:
            settings = LakehouseSettings.from_proto(definition)
            config = TreeConfig(settings.order, settings.buffer_capacity_bytes, flush_threshold(self.storage))
            found = self._settings[def_path] = (settings, config)
        return found

    def forget_versions(self, versions: Iterable[int]) -> None:
        """Drop cached snapshots of versions that were just expired (deleted)."""
        for version in versions:
            self._snapshots.pop(version, None)
            self._times.pop(version, None)

    def snapshot_named(self, name: str) -> Snapshot:
        """An exported snapshot by name (SPEC 7)."""
        latest = self.snapshot()
        root_path = latest.settings.exported_snapshots.get(name)
        if root_path is None:
            raise ObjectNotFoundError(f"no exported snapshot named {name!r}")
        version = paths.parse_root_node_path(root_path)
        if version is None:
            raise CorruptFileError(latest.lakehouse_def_path, f"snapshot {name!r} points at {root_path!r}")
        return self.snapshot(version)

    def history(self, start: int | None = None, oldest: int = 0) -> Iterator[Snapshot]:
        """Versions from ``start`` (default latest) down to ``oldest``, newest first, read
        one root at a time (H3): back along previous_root, and past a gap that
        expiration left, on with the exported snapshots below it."""
        snapshot: Snapshot | None = self.snapshot(start)
        exported: list[int] | None = None
        while snapshot is not None and snapshot.version >= oldest:
            yield snapshot
            previous = snapshot.previous_version
            if previous is None:
                return
            try:
                snapshot = self.snapshot(previous)
                continue
            except ObjectNotFoundError:
                pass
            if exported is None:
                exported = self._exported_versions()
            below = [v for v in exported if v < snapshot.version]
            snapshot = None
            while below and snapshot is None:
                try:
                    snapshot = self.snapshot(below.pop())
                except ObjectNotFoundError:
                    pass

    def _exported_versions(self) -> list[int]:
        """Versions of the exported snapshots of the latest definition, ascending."""
        found = {paths.parse_root_node_path(p) for p in self.snapshot().settings.exported_snapshots.values()}
        return sorted(v for v in found if v is not None)

    def created_at(self, version: int) -> int | None:
        """``created_at_millis`` of root ``version``, None if it does not exist; reads
        only the root's system rows (remembered: roots are immutable)."""
        known = self._times.get(version)
        if known is not None:
            return known
        cached = self._snapshots.get(version)
        if cached is not None:
            return cached.created_at_millis
        path = paths.root_node_path(version)
        try:
            data = self.storage.read(path)
        except MissingFileError:
            return None
        millis = int(decode_system_rows(data, path).get(keyfmt.CREATED_AT_MILLIS, "0"))
        if len(self._times) >= _REMEMBERED_TIMES:
            self._times.clear()
        self._times[version] = millis
        return millis

    def snapshot_at(self, millis: int) -> Snapshot:
        """The newest version created at or before ``millis`` (FOR SYSTEM_TIME AS OF),
        found by bisection over version numbers (H1, H2): O(log n) root reads."""
        latest = self.snapshot()
        if latest.created_at_millis <= millis:
            return latest
        found = self._version_at(millis, latest.version)
        if found is not None:
            try:
                return self.snapshot(found)
            except ObjectNotFoundError:  # expired since its time was remembered: look again
                self._times.clear()
                found = self._version_at(millis, latest.version)
                if found is not None:
                    return self.snapshot(found)
        # Older than every root of the chain: an exported snapshot?
        for version in reversed(self._exported_versions()):
            try:
                candidate = self.snapshot(version)
            except ObjectNotFoundError:
                continue
            if candidate.created_at_millis <= millis:
                return candidate
        raise ObjectNotFoundError(f"no version of the lakehouse existed at {millis} ms since epoch")

    def _version_at(self, millis: int, newer: int) -> int | None:
        """The newest version below ``newer`` created at or before ``millis``, by
        bisection; None if every existing one is newer (H1). A missing root counts as
        too old (H2)."""
        low, high = 0, newer - 1  # the answer, if any, is in [low, high]
        found: int | None = None
        while low <= high:
            middle = (low + high) // 2
            at = self.created_at(middle)
            if at is None:
                low = middle + 1  # H2: a missing root is older than every kept one
            elif at <= millis:
                found, low = middle, middle + 1
            else:
                high = middle - 1
        return found

    # -- transactions -----------------------------------------------------------------

    def rebase_target(self, attempted: int) -> int:
        latest = self.find_latest(at_least=attempted)
        if latest is None or latest < attempted:  # pragma: no cover - roots never vanish
            raise CommitFailedError(f"root version {attempted} vanished during a commit")
        return latest


def prepare_root(storage: Storage, version: int, data: bytes) -> PreparedCreate:
    """The first half of C2: root ``version`` made ready to publish, nothing visible yet
    (Storage.prepare_exclusive). The caller publishes it with :func:`publish_root` once
    its C1 files are written and its base is checked (D3), or discards it."""
    return storage.prepare_exclusive(paths.root_node_path(version), data)


def publish_root(storage: Storage, prepared: PreparedCreate) -> bool:
    """C2, the commit point: False if another writer's root took the name. An ambiguous
    failure is resolved: if the exclusive create raised but the root holds exactly our
    bytes (the request landed, the reply was lost), we committed; if the root cannot
    even be read back, CommitOutcomeUnknownError."""
    path, data = prepared.path, prepared.data
    try:
        return storage.publish(prepared)
    except StorageError as failure:
        try:
            existing = storage.read(path)
        except MissingFileError:
            raise failure from None  # it did not land: not committed
        except StorageError as unreadable:
            version = paths.parse_root_node_path(path)
            raise CommitOutcomeUnknownError(
                f"commit of version {version}: the outcome is unknown: creating the root "
                f"file {storage.uri(path)!r} failed ({failure}) and reading it back failed "
                f"too ({unreadable}); reopen the lakehouse to see whether version {version} "
                "exists before retrying"
            ) from failure
        if existing == data:
            return True
        return False  # another writer's root: we lost the race (C4)


def create_root(storage: Storage, version: int, data: bytes) -> bool:
    """C2 with nothing to do between its two halves (version 0 of a new lakehouse)."""
    with prepare_root(storage, version, data) as prepared:
        return publish_root(storage, prepared)
