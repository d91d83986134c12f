"""Versions and transactions of a lakehouse (SPEC 7).

A lakehouse is a chain of root node files ``_<version bits>.arrow``, each pointing at
its predecessor through ``previous_root``. This module finds the latest version, opens
any version (by number, time or exported snapshot name), and commits transactions.

Commit protocol. A transaction that began at version v:

  C1. writes every new definition file and non-root node file (unique names, plain
      writes: nothing refers to them until C2 succeeds);
  C2. exclusively creates root v+1 (``previous_root`` = root v). Exactly one of several
      racing writers succeeds; that instant is the commit point;
  C3. overwrites ``_latest_hint.txt`` with v+1, best effort (it is only a hint);
  C4. if root v+1 already exists, reads every version v+1..w that won meanwhile. A
      version conflicts when it changed a key this transaction wrote or guarded, or,
      under SERIALIZABLE, a key (or a key in a range) it read; a rollback version
      conflicts with everything. No conflict: the messages are applied again on w and
      C2 is retried at w+1 (bounded, with jittered backoff). Conflict: the transaction
      fails with a SerializationError naming the object and the version.
  C5. a commit that fails (a conflict, a storage error, C6) removes every file it wrote,
      best effort, before the error reaches the caller: a failed statement leaves no
      file behind unless the removal itself fails (then expiration removes them once
      they are older than its grace period). The one exception is a commit whose
      outcome is unknown (CommitOutcomeUnknownError): its files may be a version now.
  C6. version 2^32-1 (paths.MAX_VERSION) is the last: root names hold 32 bits (SPEC 2).
      A commit or rollback that would create version 2^32 fails with CommitFailedError
      before it writes any file (check_version_limit).

The keys version u changed are exactly the messages tagged ``txn == str(u)`` in root
u's buffer (tree invariant T5). The transaction id written into the ``txn`` column is
therefore the version the transaction commits as; a replay re-tags its messages.

Because nothing is visible before C2 and C2 is atomic, a crash or storage failure at any
step leaves the lakehouse at the old version or the new one; files a crashed writer
left are unreferenced and are removed by expiration.

History. H0: root v > 0 names root v-1 as its ``previous_root`` (C2 writes it so); a
root that names anything else was not written by a commit and is a CorruptFileError
naming it when read, so no commit is ever built on top of it.
H1: ``created_at_millis`` never decreases from a version to the next (a commit or
rollback stamps max(now, its base's time)), so the version at a time is found by
bisection. H2: expiration deletes old roots only, keeping exported ones, so the
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
      commit fail with a SerializationError: it cannot be checked).

Why D1 and D3 are safe: expiration deletes a root only EXPIRED_ROOT_DELETE_DELAY_S
(> FRESH_LATEST_S) after a listing that showed it (maintenance rule E7). If root v+1 was
missing at t, any v+1 is created after t, so it cannot be listed and then deleted
before t + EXPIRED_ROOT_DELETE_DELAY_S: within the window a missing v+1 was never
created, and v itself is kept (expiration deletes only roots that have a newer one).
Without E7, a process that last saw v, while v+1..w were committed and expired, would
take v for the latest and create "v+1" inside the hole, forking the history and
losing that commit. The argument compares durations on monotonic clocks only, never
wall-clock times of different machines.

Guards. Snapshot isolation would let two transactions each keep an invariant the other
breaks (creating a table in a namespace that a concurrent transaction drops). The
catalog therefore *guards* the keys and ranges its integrity depends on; guards are
checked like writes, at every isolation level.
"""

from __future__ import annotations

import bisect
import enum
import random
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from .errors import (
    CommitFailedError,
    CommitOutcomeUnknownError,
    Error,
    CorruptFileError,
    MissingFileError,
    ObjectExistsError,
    ObjectNotFoundError,
    ReadOnlyError,
    SerializationError,
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
from .format.nodefile import NodeFile, decode_node_file, encode_node_file
from .storage import Storage
from .tree import NodeStore, Tree, TreeConfig, empty_root

#: D1/D3: how long an observation of the latest version is trusted to have no
#: expiration hole after it (module docstring).
FRESH_LATEST_S = 0.25
#: E7: expiration waits this long after the listing that showed a root before deleting
#: it. Must exceed FRESH_LATEST_S; the difference is the margin for a process pausing
#: between its freshness check and its request.
EXPIRED_ROOT_DELETE_DELAY_S = 1.0
#: Commit attempts before giving up on a lakehouse under constant contention.
MAX_COMMIT_ATTEMPTS = 64
_BACKOFF_BASE_S = 0.0005
_BACKOFF_MAX_S = 0.25
#: Buffers are flushed once they exceed this (SPEC 6 allows flushing before the
#: capacity): a commit rewrites the root, so its size is the cost of every commit. On
#: local disk (and in memory) bytes cost fsync time. Measured in docs/performance.md.
FLUSH_THRESHOLD_BYTES: int | None = 16 * 1024
#: On object storage a request costs as much as ~2 MB of transfer (20 ms against
#: 100 MB/s), so buffers four times larger, whose flushes move more messages per node
#: PUT, are cheaper: at 1,000,000 tables 4.25 requests per commit instead of 4.88.
OBJECT_STORE_FLUSH_THRESHOLD_BYTES: int | None = 64 * 1024


def flush_threshold(storage: Storage) -> int | None:
    """The flush threshold for a lakehouse on ``storage`` (see the two constants)."""
    if storage.protocol in ("file", "memory"):
        return FLUSH_THRESHOLD_BYTES
    return OBJECT_STORE_FLUSH_THRESHOLD_BYTES


def now_millis() -> int:
    return int(time.time() * 1000)


class Isolation(enum.Enum):
    """Transaction isolation levels (SPEC 7)."""

    SNAPSHOT = "SNAPSHOT"
    SERIALIZABLE = "SERIALIZABLE"

    @classmethod
    def parse(cls, value: "str | Isolation | None") -> "Isolation":
        """``None`` means SNAPSHOT; text is matched case-insensitively."""
        if value is None:
            return cls.SNAPSHOT
        if isinstance(value, cls):
            return value
        text = " ".join(str(value).upper().replace("_", " ").split())
        aliases = {"SNAPSHOT": cls.SNAPSHOT, "SNAPSHOT ISOLATION": cls.SNAPSHOT,
                   "SERIALIZABLE": cls.SERIALIZABLE}
        if text not in aliases:
            from .errors import ProgrammingError

            raise ProgrammingError(
                f"unknown isolation level {value!r}; use SNAPSHOT or SERIALIZABLE"
            )
        return aliases[text]


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
        tag = str(self.version)
        seen: dict[str, None] = {}
        for message in self.root.buffer:
            if message.txn == tag:
                seen[message.key] = None
        return list(seen)


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
        #: The last observation (version, monotonic time; module docstring), one tuple
        #: so that threads never see a version with another version's time.
        self._observed: tuple[int, float] | None = None

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
        if not _create_root(self.storage, 0, encode_node_file(root)):
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
                return self._note_latest(self._probe_forward(known), started)
            hint = self._read_hint()  # D2
            if hint is not None and hint > known and self._root_exists(hint):
                return self._note_latest(self._probe_forward(hint), started)
            if self._root_exists(known):
                return self._note_latest(self._probe_forward(known), started)
        start = at_least if at_least is not None else self._read_hint()
        if start is not None and self._root_exists(start):
            return self._note_latest(self._probe_forward(start), started)
        if self._root_exists(0):
            return self._note_latest(self._probe_forward(0), started)
        # The hint points past the end or below expired versions: list the roots (they
        # live at the top level, so the node directories below it are not listed).
        top_level = self.storage.list("", recursive=False)
        versions = [v for v in map(paths.parse_root_node_path, top_level) if v is not None]
        if not versions:
            return None
        return self._note_latest(self._probe_forward(max(versions)), started)

    def _note_latest(self, version: int, observed_at: float) -> int:
        """Record an observation (module docstring) unless a newer one is recorded."""
        current = self._observed
        if current is None or version > current[0] or (version == current[0] and observed_at > current[1]):
            self._observed = (version, observed_at)
        return version

    def _discover(self) -> tuple[int, float]:
        """(latest version, time of this observation) for a transaction's base (D3)."""
        started = time.monotonic()
        latest = self.find_latest()
        if latest is None:
            raise ObjectNotFoundError(f"the lakehouse at {self.storage.root_uri!r} has no root")
        return latest, started

    def _ensure_still_latest(self, version: int, observed_at: float) -> None:
        """D3, right before a C2 built on ``version``: if that observation is no longer
        fresh, observe again; raise _BaseMoved if a newer version exists."""
        if time.monotonic() - observed_at > FRESH_LATEST_S and self._discover()[0] != version:
            raise _BaseMoved()

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
        return self._snapshot_of(version, decode_node_file(data, path))

    def _snapshot_of(self, version: int, probe: NodeFile) -> Snapshot:
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
        if len(self._snapshots) > 256:
            self._snapshots.pop(next(iter(self._snapshots)))
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

    def snapshot_at(self, millis: int) -> Snapshot:
        """The newest version created at or before ``millis`` (FOR SYSTEM_TIME AS OF),
        found by bisection over version numbers (H1, H2): O(log n) root reads."""
        latest = self.snapshot()
        if latest.created_at_millis <= millis:
            return latest
        low, high = 0, latest.version - 1  # the answer, if any, is in [low, high]
        found: Snapshot | None = None
        while low <= high:
            middle = (low + high) // 2
            try:
                candidate = self.snapshot(middle)
            except ObjectNotFoundError:
                low = middle + 1  # H2: a missing root is older than every kept one
                continue
            if candidate.created_at_millis <= millis:
                found, low = candidate, middle + 1
            else:
                high = middle - 1
        if found is None:  # older than every root of the chain: an exported snapshot?
            for version in reversed(self._exported_versions()):
                try:
                    candidate = self.snapshot(version)
                except ObjectNotFoundError:
                    continue
                if candidate.created_at_millis <= millis:
                    return candidate
            raise ObjectNotFoundError(f"no version of the lakehouse existed at {millis} ms since epoch")
        return found

    # -- transactions -----------------------------------------------------------------

    def begin(
        self,
        isolation: Isolation = Isolation.SNAPSHOT,
        version: int | None = None,
        read_only: bool = False,
    ) -> "Transaction":
        """A transaction on the latest version, or a read-only one on ``version``."""
        if version is not None:
            return Transaction(self, self.snapshot(version), isolation, read_only=True)
        latest, observed_at = self._discover()
        return Transaction(self, self.snapshot(latest), isolation, read_only=read_only, observed_at=observed_at)

    def _rebase_target(self, attempted: int) -> int:
        latest = self.find_latest(at_least=attempted)
        if latest is None or latest < attempted:  # pragma: no cover - roots never vanish
            raise CommitFailedError(f"root version {attempted} vanished during a commit")
        return latest


@dataclass
class _ReadSet:
    keys: set[str] = field(default_factory=set)
    ranges: list[tuple[str | None, str | None]] = field(default_factory=list)

    def hit(self, key: str) -> bool:
        if key in self.keys:
            return True
        return any((lo is None or key >= lo) and (hi is None or key < hi) for lo, hi in self.ranges)


class Transaction:
    """Reads at one version, buffers writes, and commits them as the next version.

    ``describe_key`` turns a key into words for error messages ("table ns.t").
    """

    def __init__(
        self,
        lakehouse: Lakehouse,
        base: Snapshot,
        isolation: Isolation,
        read_only: bool = False,
        observed_at: float | None = None,
    ) -> None:
        self.lakehouse = lakehouse
        self.base = base
        #: When ``base`` was observed to be the latest version (D3); None: unknown.
        self.observed_at = observed_at
        self.isolation = isolation
        self.read_only = read_only
        self.writes: dict[str, str | None] = {}
        self.files: dict[str, bytes] = {}
        self._unwritten: dict[str, bytes] = {}  # C1 files not written yet
        self.reads = _ReadSet()
        self.guards = _ReadSet()
        self.lakehouse_def_update: Callable[[LakehouseDef], LakehouseDef] | None = None
        self.describe_key: Callable[[str], str] = repr
        self.closed = False

    @property
    def version(self) -> int:
        return self.base.version

    @property
    def settings(self) -> LakehouseSettings:
        return self.base.settings

    @property
    def lakehouse_def_path(self) -> str:
        """The lakehouse definition file of the version this transaction reads."""
        return self.base.lakehouse_def_path

    @property
    def has_writes(self) -> bool:
        return bool(self.writes) or self.lakehouse_def_update is not None

    # -- reads --------------------------------------------------------------------

    def get(self, key: str, *, guard: bool = False) -> str | None:
        """The value of ``key`` as this transaction sees it (its own writes first)."""
        (self.guards if guard else self.reads).keys.add(key)
        if key in self.writes:
            return self.writes[key]
        return self.base.tree.get(key)

    def scan(
        self,
        lo: str | None,
        hi: str | None,
        *,
        guard: bool = False,
        derive: Callable[[Sequence[str]], list | None] | None = None,
    ) -> list | None:
        """(key, value) with lo <= key < hi, merged with this transaction's writes.

        With ``derive`` (see :meth:`Tree.scan`), the keys in range mapped through it, or
        None if it could not map them all."""
        (self.guards if guard else self.reads).ranges.append((lo, hi))
        found = self.base.tree.scan(lo, hi, derive)
        writes = self.writes
        if not writes:
            return found  # already in key order
        mine = [
            (key, value)
            for key, value in writes.items()
            if (lo is None or key >= lo) and (hi is None or key < hi)
        ]
        if not mine:
            return found
        if derive is not None:
            if found is None:
                return None
            mine.sort()
            derived = derive([key for key, _ in mine])
            if derived is None:
                return None
            for item, (_, value) in zip(derived, mine):
                at = bisect.bisect_left(found, item)
                present = at < len(found) and found[at] == item
                if value is None:
                    if present:
                        del found[at]
                elif not present:
                    found.insert(at, item)
            return found
        items = dict(found)
        for key, value in mine:
            if value is None:
                items.pop(key, None)
            else:
                items[key] = value
        return sorted(items.items())

    def read_file(self, path: str) -> bytes:
        """A definition file: staged by this transaction, or an immutable stored one."""
        staged = self.files.get(path)
        return staged if staged is not None else self.lakehouse.storage.read_immutable(path)

    # -- writes ----------------------------------------------------------------------

    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(
                f"this transaction reads version {self.version} and cannot write "
                "(time travel connections are read-only)"
            )
        if self.closed:
            raise CommitFailedError("the transaction is already finished")

    def put(self, key: str, value: str) -> None:
        self._check_writable()
        self.writes[key] = value

    def delete(self, key: str) -> None:
        self._check_writable()
        self.writes[key] = None

    def stage_file(self, path: str, data: bytes) -> None:
        """A new definition file to write at commit, before the root (C1)."""
        self._check_writable()
        self.files[path] = data

    def update_lakehouse_def(self, update: Callable[[LakehouseDef], LakehouseDef]) -> None:
        """Change the lakehouse definition in this commit; re-applied on every rebase."""
        self._check_writable()
        self.lakehouse_def_update = update

    # -- commit -----------------------------------------------------------------------

    def rollback(self) -> None:
        self.writes.clear()
        self.files.clear()
        self.lakehouse_def_update = None
        self.closed = True

    def commit(self) -> int:
        """Publish the writes as a new version (C1-C4); returns that version."""
        if self.closed:
            raise CommitFailedError("the transaction is already finished")
        if not self.has_writes:
            self.closed = True
            return self.version
        self._check_writable()
        referenced = set(self.writes.values())
        # C1: the definition files still referenced, written by the first attempt once
        # the tree has been read, so that a corrupt tree gets no file at all
        self._unwritten = {p: d for p, d in self.files.items() if p in referenced}
        self._written: list[str] = []  # definition files written, for C5
        try:
            return self._commit_attempts()
        except CommitOutcomeUnknownError:
            raise  # C5's exception: these files may belong to a version now
        except BaseException:
            _remove_best_effort(self.lakehouse.storage, self._written)  # C5
            raise

    def _commit_attempts(self) -> int:
        base = self.base
        observed_at = self.observed_at
        messages = list(self.writes.items())
        for attempt in range(MAX_COMMIT_ATTEMPTS):
            if observed_at is None or time.monotonic() - observed_at > FRESH_LATEST_S:  # D3
                latest, observed_at = self.lakehouse._discover()
                if latest != base.version:
                    self._check_conflicts(base.version + 1, latest)
                    base = self.lakehouse.snapshot(latest)
            version = base.version + 1
            check_version_limit(version)  # C6
            if self._try_commit(base, version, messages, observed_at):
                self.closed = True
                return version
            observed_at = time.monotonic()
            latest = self.lakehouse._rebase_target(version)
            self._check_conflicts(version, latest)
            base = self.lakehouse.snapshot(latest)
            time.sleep(min(_BACKOFF_MAX_S, _BACKOFF_BASE_S * 2**min(attempt, 8)) * random.random())
        raise CommitFailedError(
            f"gave up after {MAX_COMMIT_ATTEMPTS} attempts: other writers kept committing first"
        )

    def _try_commit(
        self, base: Snapshot, version: int, messages: list[tuple[str, str | None]], observed_at: float
    ) -> bool:
        """One attempt at C1-C3 on ``base``, observed to be the latest version at
        ``observed_at``; False if another writer took ``version`` (or committed after
        ``base`` while C1 ran, D3)."""
        storage = self.lakehouse.storage
        now = max(now_millis(), base.created_at_millis)
        update = base.tree.apply(messages, str(version), now)
        files = dict(self._unwritten)  # C1: definition files, then node files
        def_path = base.lakehouse_def_path
        new_def_path = None
        if self.lakehouse_def_update is not None:
            definition = LakehouseDef()
            definition.CopyFrom(base.lakehouse_def)
            definition = self.lakehouse_def_update(definition)
            new_def_path = def_path = paths.new_lakehouse_def_path()
            files[def_path] = encode(definition)
        files.update(update.files)
        # C1 runs while the root is encoded and written; it is done before C2 publishes.
        try:
            written = storage.write_many(files, new=True, background=True)
        except BaseException:
            _remove_best_effort(storage, files)  # C5: what C1 wrote before it failed
            raise

        def ready() -> None:
            written()
            self.lakehouse._ensure_still_latest(base.version, observed_at)  # D3: C1 may be slow

        try:
            root = _root_file(update.root, def_path, base.version, now)
            data = encode_node_file(root)
            issued_at = time.monotonic()
            try:
                created = _create_root(storage, version, data, ready=ready)
            except _BaseMoved:
                created = False
        except BaseException as error:
            try:
                written()  # let C1 end before the error leaves; this error is the one to report
            except Exception:  # noqa: BLE001 - secondary to the error being raised
                pass
            if not isinstance(error, CommitOutcomeUnknownError):
                _remove_best_effort(storage, files)  # C5
            raise
        self._written.extend(self._unwritten)
        self._unwritten = {}
        if created:  # C2
            self.lakehouse.write_hint(version)  # C3
            # The next transaction starts from this root: keep it instead of reading it back.
            self.lakehouse._note_latest(version, issued_at)
            try:
                self.lakehouse._snapshot_of(version, root)
            except (StorageError, CorruptFileError):
                pass  # only a cache: committed all the same, the root is read when needed
            return True
        # C4: lost the race. Our node files and definition are unreferenced: tidy up.
        _remove_best_effort(storage, list(update.files) + ([new_def_path] if new_def_path else []))
        return False

    def _check_conflicts(self, first: int, latest: int) -> None:
        """Raise SerializationError if a version first..latest conflicts (C4)."""
        for version in range(first, latest + 1):
            try:
                snapshot = self.lakehouse.snapshot(version)
            except ObjectNotFoundError:
                raise SerializationError(
                    f"version {version}, committed after version {first - 1} on which this "
                    "transaction was built, has expired, so it cannot be checked for "
                    "conflicts: retry the transaction"
                ) from None
            if snapshot.rollback_from_version is not None:
                raise SerializationError(
                    f"version {version}, committed concurrently, is a rollback; "
                    "it conflicts with every transaction: retry"
                )
            for key in snapshot.changed_keys():
                if key in self.writes or self.guards.hit(key):
                    raise SerializationError(
                        f"{self.describe_key(key)} was changed by version {version}, "
                        f"committed concurrently: retry the transaction"
                    )
                if self.isolation is Isolation.SERIALIZABLE and self.reads.hit(key):
                    raise SerializationError(
                        f"{self.describe_key(key)}, which this SERIALIZABLE transaction "
                        f"read, was changed by version {version}: retry the transaction"
                    )


class _BaseMoved(Error):
    """Raised by C2's ``ready`` when versions were committed after the base (D3); the
    attempt then ends like a lost race. An ``Error`` so that Storage lets it through."""


def _root_file(
    tree_root: NodeFile, lakehouse_def_path: str, previous: int, now: int, rollback: bool = False
) -> NodeFile:
    """The root node file of the version after ``previous``: the tree's new root plus the
    system rows SPEC 3 puts in a root (a rollback also names the root it rolled back from)."""
    system = {keyfmt.LAKEHOUSE_DEF: lakehouse_def_path, keyfmt.PREVIOUS_ROOT: paths.root_node_path(previous)}
    if rollback:
        system[keyfmt.ROLLBACK_FROM_ROOT] = paths.root_node_path(previous)
    system.update(tree_root.system)
    system[keyfmt.CREATED_AT_MILLIS] = str(now)
    return NodeFile(
        order=tree_root.order,
        system=system,
        keys=tree_root.keys,
        values=tree_root.values,
        children=tree_root.children,
        buffer=tree_root.buffer,
    )


def _create_root(
    storage: Storage, version: int, data: bytes, ready: Callable[[], None] | None = None
) -> bool:
    """C2, resolving an ambiguous failure: if the exclusive create raised but the root
    holds exactly our bytes (the request landed, the reply was lost), we committed.
    ``ready`` waits for C1 (see Storage.create_exclusive)."""
    path = paths.root_node_path(version)
    try:
        return storage.create_exclusive(path, data, ready=ready)
    except StorageError as failure:
        try:
            existing = storage.read(path)
        except MissingFileError:
            raise failure from None  # it did not land: not committed
        except StorageError as unreadable:
            raise CommitOutcomeUnknownError(
                f"commit of version {version}: the outcome is unknown: creating the root "
                f"file {storage.uri(path)!r} failed ({failure}) and reading it back failed "
                f"too ({unreadable}); reopen the lakehouse to see whether version {version} "
                "exists before retrying"
            ) from failure
        if existing == data:
            return True
        return False  # another writer's root: we lost the race (C4)


def _remove_best_effort(storage: Storage, files: Iterable[str]) -> None:
    """Delete files no root refers to (C4, C5); a failure leaves them to expiration."""
    files = list(files)
    if files:
        try:
            storage.delete_many(files)
        except StorageError:
            pass


def check_version_limit(version: int) -> None:
    """C6: CommitFailedError when ``version`` is past the last version a lakehouse can
    have; called before a commit writes anything."""
    if version > paths.MAX_VERSION:
        raise CommitFailedError(
            f"the lakehouse is at version {paths.MAX_VERSION}, the last one its root file "
            "names can hold (32 bits, SPEC 2): no further commit is possible; export the "
            "latest version to a new lakehouse (EXPORT SNAPSHOT) and continue there"
        )


def rollback_to(lakehouse: Lakehouse, target: int) -> int:
    """Commit version v+1 whose content equals version ``target`` (SPEC 7).

    The new root records ``rollback_from_root`` = root v. It keeps the latest lakehouse
    definition, so exported snapshot names survive the rollback. Fails with a
    SerializationError if another writer commits in between, rather than silently
    discarding that commit too.
    """
    goal = lakehouse.snapshot(target)
    if not lakehouse.storage.exists(paths.root_node_path(target)):
        # A snapshot cached before another connection expired the version: its files
        # may be gone, and a rollback to it would commit a version that points at them.
        raise ObjectNotFoundError(f"version {target} does not exist any more (expired)")
    latest_version, observed_at = lakehouse._discover()
    latest = lakehouse.snapshot(latest_version)
    if target == latest.version:
        raise ObjectExistsError(f"version {target} is already the latest version")
    version = latest.version + 1
    check_version_limit(version)  # C6
    tag = str(version)
    now = max(now_millis(), latest.created_at_millis)
    # Re-settle the target's root: its own transaction's messages may exceed the
    # buffer capacity, which only the version that wrote them may do (tree T5).
    update = goal.tree.apply([], tag, now)
    lakehouse.storage.write_many(update.files, new=True)
    root = _root_file(update.root, latest.lakehouse_def_path, latest.version, now, rollback=True)
    data = encode_node_file(root)
    issued_at = time.monotonic()
    try:
        created = _create_root(
            lakehouse.storage, version, data,
            ready=lambda: lakehouse._ensure_still_latest(latest.version, observed_at),  # D3
        )
    except _BaseMoved:
        created = False
    except CommitOutcomeUnknownError:
        raise
    except BaseException:
        _remove_best_effort(lakehouse.storage, update.files)  # C5
        raise
    if not created:
        _remove_best_effort(lakehouse.storage, update.files)  # C5
        raise SerializationError(
            f"version {version} was committed concurrently; the rollback to version "
            f"{target} did not happen: retry"
        )
    lakehouse.write_hint(version)
    lakehouse._note_latest(version, issued_at)
    return version
