"""Transactions of a lakehouse (SPEC 7): begin, read, write, commit, rollback.

A transaction reads one version (a Snapshot of :mod:`.lakehouse`) and commits as the
next one. The versions themselves (discovery, the hint, snapshots, history) are
:mod:`.lakehouse`'s.

Commit protocol. A transaction that began at version v:

  C1. writes every new definition file still referenced by a write, the files staged
      with it (its *companions*: a table's new Iceberg metadata file, SPEC 8 C0), and
      every non-root node file (unique names, plain writes: nothing refers to them until
      C2 succeeds); a rolled back transaction writes none of them;
  C2. exclusively creates root v+1 (``previous_root`` = root v). Exactly one of several
      racing writers succeeds; that instant is the commit point. Explicit steps, in
      this order: the root is prepared (``lakehouse.prepare_root``: on local disk
      written and fsynced under no name yet) while C1's writes finish; C1 is awaited;
      the base is checked (D3: if versions were committed after it, the prepared root
      is discarded and the attempt ends as a lost race, C4); the root is published
      (``lakehouse.publish_root``). Nothing below calls back up into this protocol.
      A writer that lost a race lately observes the latest version before it builds the
      root (lakehouse D4);
  C3. overwrites ``_latest_hint.txt`` with v+1, best effort (it is only a hint);
  C4. if root v+1 already exists, reads every version v+1..w that won meanwhile. A
      version conflicts when it changed a key this transaction wrote or guarded, or,
      under SERIALIZABLE, a key (or a key in a range) it read; a rollback version
      conflicts with everything. No conflict: the messages are applied again on w and
      C2 is retried at w+1 (bounded, with jittered backoff). After the backoff the
      latest version is observed again (D1) before the retry: other writers commit
      during it, and a retry aimed at the version seen before it lost again and again
      (a writer gave up after 64 lost races among 4 writers). Conflict: the transaction
      fails with a SerializationError naming the object and the version.
  C5. a commit that fails (a conflict, a storage error, C6) removes every file it wrote,
      best effort, before the error reaches the caller: a failed statement leaves no
      file behind unless the removal itself fails (then expiration removes them once
      they are older than its grace period). The one exception is a commit whose
      outcome is unknown (CommitOutcomeUnknownError): its files may be a version now.
  C6. version 2^32-1 (paths.MAX_VERSION) is the last: root names hold 32 bits (SPEC 2).
      A commit or rollback that would create version 2^32 fails with CommitFailedError
      before it writes any file (check_version_limit).

  C7. Files a commit names that are orphans until C2: those written before the commit
      began (``expect_files``: a table's data files, manifests and manifest lists,
      written by the statements of the transaction, or by PyIceberg before it
      committed) and its own C1 files (node and definition files; a retried attempt
      still names the definition files the first attempt wrote). Version expiration
      deletes an orphan once it is older than its grace period (maintenance E4, E8),
      with any grace, 0 included. So, after C1 is awaited and right before C2, each
      such file older than PREWRITTEN_CHECK_AGE_S (by the moment its writing began on
      this host, iceberg.io F4), or of unknown age, is checked to exist; a missing one
      fails the commit with MissingFileError (an OperationalError) naming the file and
      what names it, nothing is published, and a retry of the whole transaction
      writes its files again. (Not a SerializationError: retrying the commit alone, as
      a lost race is retried, would fail the same way.) Before that check, the commit
      creates an intent naming those files (reclaim G2; anew when a later attempt names
      more of its own), then waits while an expiration marker names one of them (at
      most reclaim.COMMIT_WAIT_S, then CommitFailedError); an expiration creates its
      marker before it reads the intents, and spares what they name (G3). The intent
      is removed when the commit ends, whatever its outcome. Why no interleaving
      publishes a deleted file: a file the commit checks is covered by the handshake
      (G3's argument); a file younger than PREWRITTEN_CHECK_AGE_S at the check is
      published moments later, and an expiration waits until every file it would
      delete is older than that plus a margin before it looks at the versions a last
      time (maintenance E13), so that look sees the version naming it. Commits whose
      files are all younger make no extra storage call (G5): an autocommit statement
      on a responsive store; a slow commit (a bulk load, a long retry) pays one
      create, one listing, one delete and an existence check of each old file.
  C8. Work registered with ``after_commit`` (iceberg.oldmetadata OM2: deleting the
      metadata files a commit dropped from a table's metadata log) runs only once the
      version is published (after C2 and C3), in registration order, with the version,
      each best effort: what it raises is logged, never raised, since the commit
      happened. A commit that fails, is rolled back or has an unknown outcome runs none.

The keys version u changed are exactly the messages tagged ``txn == str(u)`` in root
u's buffer (tree invariant T5). The transaction id written into the ``txn`` column is
therefore the version the transaction commits as; a replay re-tags its messages.

Because nothing is visible before C2 and C2 is atomic, a crash or storage failure at any
step leaves the lakehouse at the old version or the new one; files a crashed writer
left are unreferenced and are removed by expiration.

Guards. Snapshot isolation would let two transactions each keep an invariant the other
breaks (creating a table in a namespace that a concurrent transaction drops). The
catalog therefore *guards* the keys and ranges its integrity depends on; guards are
checked like writes, at every isolation level.
"""

from __future__ import annotations

import bisect
import enum
import logging
import random
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from .errors import (
    CommitFailedError,
    CommitOutcomeUnknownError,
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
from .format.definitions import LakehouseDef, LakehouseSettings, encode
from .format.nodefile import NodeFile, encode_node_file
from .lakehouse import Lakehouse, Snapshot, now_millis, prepare_root, publish_root
from .reclaim import Intent, announce_commit
from .storage import Storage

#: Commit attempts before giving up on a lakehouse under constant contention.
MAX_COMMIT_ATTEMPTS = 64
_log = logging.getLogger(__name__)

#: C7: files a commit names that were written at least this long before it are checked.
PREWRITTEN_CHECK_AGE_S = 1.0
_BACKOFF_BASE_S = 0.0005
_BACKOFF_MAX_S = 0.25


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


def begin(
    lakehouse: Lakehouse,
    isolation: Isolation = Isolation.SNAPSHOT,
    version: int | None = None,
    read_only: bool = False,
) -> "Transaction":
    """A transaction on the latest version, or a read-only one on ``version``."""
    if version is not None:
        return Transaction(lakehouse, lakehouse.snapshot(version), isolation, read_only=True)
    latest, observed_at = lakehouse.discover()
    return Transaction(
        lakehouse, lakehouse.snapshot(latest), isolation, read_only=read_only, observed_at=observed_at
    )


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

    A conflict (C4) names the object in words ("table 'ns'.'t'") through :attr:`codec`,
    the key codec of the name limits of the version it reads: the format is the one
    home of the key layout, so nothing above this layer is called back for words.
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
        #: Companion files by the definition file they belong to (C1).
        self.companions: dict[str, dict[str, bytes]] = {}
        #: C7: files written before the commit that it names: path -> (the monotonic
        #: moment its writing began, None if unknown; what names it, for the error).
        self.expected: dict[str, tuple[float | None, str]] = {}
        self._unwritten: dict[str, bytes] = {}  # C1 files not written yet
        self._intent: Intent | None = None  # C7, reclaim G2: from the check to the end
        #: C8: work to run once the version is published, with the version.
        self.after_published: list[Callable[[int], None]] = []
        self.reads = _ReadSet()
        self.guards = _ReadSet()
        self.lakehouse_def_update: Callable[[LakehouseDef], LakehouseDef] | None = None
        #: How many writes (put, delete, staged file, definition update) were made: a
        #: caller that replays its own units of work on a newer version (iceberg.catalog
        #: P4) checks with it that every write came from one of them.
        self.changes = 0
        settings = base.settings
        #: Object keys <-> names under the name limits of the version it reads.
        self.codec = keyfmt.KeyCodec(
            settings.namespace_name_max_size_bytes, settings.table_name_max_size_bytes
        )
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
        """A definition file or a companion: staged by this transaction, or an immutable
        stored one."""
        staged = self.files.get(path)
        if staged is None:
            staged = next((files[path] for files in self.companions.values() if path in files), None)
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
        self.changes += 1

    def delete(self, key: str) -> None:
        self._check_writable()
        self.writes[key] = None
        self.changes += 1

    def stage_file(self, path: str, data: bytes, *, companion_of: str | None = None) -> None:
        """A new definition file to write at commit, before the root (C1); with
        ``companion_of``, a file written exactly when that definition file is."""
        self._check_writable()
        self.changes += 1
        if companion_of is None:
            self.files[path] = data
        else:
            self.companions.setdefault(companion_of, {})[path] = data

    def expect_files(self, files: dict[str, float | None], owner: str) -> None:
        """C7: ``files`` (paths under the root, each with the ``time.monotonic()`` at which
        its writing began, None if unknown), written before this commit, are named by it
        (``owner`` says by what, e.g. "table 'ns'.'t'"): checked to exist before C2."""
        self._check_writable()
        for path, written_at in files.items():
            self.expected[path] = (written_at, owner)

    def after_commit(self, work: Callable[[int], None]) -> None:
        """C8: run ``work(version)`` once this transaction is published as ``version``;
        never if it fails or is rolled back. Best effort: what it raises is logged."""
        self._check_writable()
        self.after_published.append(work)

    def update_lakehouse_def(self, update: Callable[[LakehouseDef], LakehouseDef]) -> None:
        """Change the lakehouse definition in this commit; re-applied on every rebase."""
        self._check_writable()
        self.lakehouse_def_update = update
        self.changes += 1

    # -- commit -----------------------------------------------------------------------

    def rollback(self) -> None:
        self.writes.clear()
        self.files.clear()
        self.expected.clear()
        self.companions.clear()
        self.after_published.clear()
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
        for owner in referenced & self.companions.keys():
            self._unwritten.update(self.companions[owner])
        self._written: list[str] = []  # definition files written, for C5
        self._written_at: float | None = None  # C7: when the first attempt began writing them
        try:
            version = self._commit_attempts()
        except CommitOutcomeUnknownError:
            raise  # C5's exception: these files may belong to a version now
        except BaseException:
            _remove_best_effort(self.lakehouse.storage, self._written)  # C5
            raise
        finally:
            if self._intent is not None:  # reclaim G2: published or given up
                self._intent.withdraw()
                self._intent = None
        self._run_after_published(version)
        return version

    def _run_after_published(self, version: int) -> None:
        """C8: the work registered with ``after_commit``, each best effort."""
        work, self.after_published = self.after_published, []
        for each in work:
            try:
                each(version)
            except Exception:  # noqa: BLE001 - the commit happened; what follows is best effort
                _log.warning("work after the commit of version %d failed", version, exc_info=True)

    def _commit_attempts(self) -> int:
        base = self.base
        observed_at = self.observed_at
        messages = list(self.writes.items())
        for attempt in range(MAX_COMMIT_ATTEMPTS):
            if observed_at is None or not self.lakehouse.is_fresh(observed_at) or self.lakehouse.is_contended():
                latest, observed_at = self.lakehouse.discover()  # D3, D4
                if latest != base.version:
                    self._check_conflicts(base.version + 1, latest)
                    base = self.lakehouse.snapshot(latest)
            version = base.version + 1
            check_version_limit(version)  # C6
            if self._try_commit(base, version, messages, observed_at):
                self.closed = True
                return version
            observed_at = time.monotonic()
            self.lakehouse.note_lost_race()  # D4
            latest = self.lakehouse.rebase_target(version)
            self._check_conflicts(version, latest)
            base = self.lakehouse.snapshot(latest)
            time.sleep(min(_BACKOFF_MAX_S, _BACKOFF_BASE_S * 2**min(attempt, 8)) * random.random())
            observed_at = None  # C4: the view from before the backoff is not trusted after it
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
        began = time.monotonic()
        if self._written_at is None:
            self._written_at = began
        own = {path: began for path in files}  # C7: this attempt's files ...
        own.update((path, self._written_at) for path in self._written)  # ... and the first attempt's
        try:
            written = storage.write_many(files, new=True, background=True)
        except BaseException:
            _remove_best_effort(storage, files)  # C5: what C1 wrote before it failed
            raise

        try:
            root = _root_file(update.root, def_path, base.version, now)
            data = encode_node_file(root)
            issued_at = time.monotonic()
            with prepare_root(storage, version, data) as prepared:  # C2, while C1 runs
                written()  # C1 is done
                if self.lakehouse.is_still_latest(base.version, observed_at):  # D3: C1 may be slow
                    self._check_expected_files(own)  # C7, right before C2
                    if self._intent is not None:
                        self._intent.check_in_time()  # reclaim G4
                    created = publish_root(storage, prepared)  # C2, the commit point
                else:
                    created = False  # versions came after the base: as a lost race (C4)
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
            self.lakehouse.note_latest(version, issued_at)
            try:
                self.lakehouse.remember_snapshot(version, root)
            except (StorageError, CorruptFileError):
                pass  # only a cache: committed all the same, the root is read when needed
            return True
        # C4: lost the race. Our node files and definition are unreferenced: tidy up.
        _remove_best_effort(storage, list(update.files) + ([new_def_path] if new_def_path else []))
        return False

    def _check_expected_files(self, own: Mapping[str, float]) -> None:
        """C7: MissingFileError if a file named by this commit and written before its
        check, old enough for expiration to have taken it, no longer exists: one
        written before the commit (``expect_files``) or one of its own (``own``: path
        -> when its writing began)."""
        now = time.monotonic()
        named = {path: at for path, (at, _) in self.expected.items()}
        named.update(own)
        old = sorted(path for path, at in named.items() if at is None or now - at >= PREWRITTEN_CHECK_AGE_S)
        if not old:
            return
        announced = set(self.expected) | set(old)
        if self._intent is None or not announced <= self._intent.files:  # reclaim G2
            if self._intent is not None:
                self._intent.withdraw()
                self._intent = None
            self._intent = announce_commit(self.lakehouse.storage, announced, self._owner)
        exists = self.lakehouse.storage.exists
        if len(old) == 1:
            found = [exists(old[0])]
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(16, len(old)), thread_name_prefix="tl-c7") as pool:
                found = list(pool.map(exists, old))
        for path, present in zip(old, found):
            if not present:
                at = named[path]
                written = "" if at is None else f" {now - at:.1f} s before this commit's check"
                raise MissingFileError(path, (
                    f"{self._owner(path)} names this file, written{written}, and it no longer "
                    "exists: version expiration (with an orphan grace period shorter than the "
                    "transaction) deleted it; nothing was committed: retry the transaction"
                ))

    def _owner(self, path: str) -> str:
        """What names ``path`` in this commit, for C7's errors."""
        expected = self.expected.get(path)
        return expected[1] if expected is not None else "this commit"

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
                        f"{self.codec.describe_key(key)} was changed by version {version}, "
                        f"committed concurrently: retry the transaction"
                    )
                if self.isolation is Isolation.SERIALIZABLE and self.reads.hit(key):
                    raise SerializationError(
                        f"{self.codec.describe_key(key)}, which this SERIALIZABLE transaction "
                        f"read, was changed by version {version}: retry the transaction"
                    )


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


def rollback_to(lakehouse: Lakehouse, target: int, expect_files: Mapping[str, str] | None = None) -> int:
    """Commit version v+1 whose content equals version ``target`` (SPEC 7).

    RB1: right before it publishes, the rollback checks that ``target``'s root still
    exists (ObjectNotFoundError otherwise, nothing published): an expiration deletes
    a version's root before the files only it reaches, and spares those a version
    published within moments of the root's deletion reaches (maintenance E14).

    The new root records ``rollback_from_root`` = root v. It keeps the latest lakehouse
    definition, so exported snapshot names survive the rollback. Fails with a
    SerializationError if another writer commits in between, rather than silently
    discarding that commit too. ``expect_files`` (path under the root -> what names it):
    files the target version names that must still exist; each is checked right before
    the root is published (as C7 checks a commit's), MissingFileError naming the file
    and its owner otherwise, and nothing is published.
    """
    goal = lakehouse.snapshot(target)
    if not lakehouse.storage.exists(paths.root_node_path(target)):
        # A snapshot cached before another connection expired the version: its files
        # may be gone, and a rollback to it would commit a version that points at them.
        raise ObjectNotFoundError(f"version {target} does not exist any more (expired)")
    latest_version, observed_at = lakehouse.discover()
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
        with prepare_root(lakehouse.storage, version, data) as prepared:
            for path, owner in sorted((expect_files or {}).items()):  # as C7, right before C2
                if not lakehouse.storage.exists(path):
                    raise MissingFileError(
                        path, f"{owner}, which version {target} names, does not exist any more: "
                        f"the rollback to version {target} would publish a version naming a missing file"
                    )
            if lakehouse.is_still_latest(latest.version, observed_at):  # D3
                if not lakehouse.storage.exists(paths.root_node_path(target)):  # RB1, right before C2
                    raise ObjectNotFoundError(f"version {target} does not exist any more (expired)")
                created = publish_root(lakehouse.storage, prepared)  # C2
            else:
                created = False  # versions came after the base: as a lost race
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
    lakehouse.note_latest(version, issued_at)
    return version
