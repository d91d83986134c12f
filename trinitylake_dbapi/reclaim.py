"""The handshake between a commit that publishes old files and an expiration that
deletes old orphans (issue 31 item 5; transaction C7, maintenance E9).

A transaction's data files, manifests and manifest lists are orphans until its commit
publishes them; an expiration deletes orphans older than its grace period. A commit
checks its old files exist right before it publishes (C7) and an expiration looks at
the versions committed since its plan right before it deletes (E9), but a commit could
still check, and publish, between expiration's last look and the end of its
deletions. Both sides therefore announce themselves in storage, each writing before it
reads, so that at least one of them sees the other (a Dekker-style handshake):

  G1. Markers live under ``_tl_sync/`` at the root (``SYNC_DIRECTORY``): no format
      file, no table location, nothing any reader lists (SPEC 2 names no such path;
      readers probe roots and follow pointers; expiration, verify and export consider
      only the format's files and table locations and skip this directory). Each is a
      small JSON object, created exclusively (never seen partly written):
      ``commits/<uuid>.json`` = {"files": [...]} (a commit's *intent*),
      ``expirations/<uuid>.json`` = {"files": [...]} (an expiration's *marker*), the
      files being paths relative to the root.
  G2. A commit that names a file old enough to be checked (C7: written before it, or
      by it, over PREWRITTEN_CHECK_AGE_S before its check) first creates its intent
      naming every file it names that was written before it and each of its own that
      is that old (``announce_commit``; a later attempt naming more of its own files
      creates a new intent), THEN lists the expiration markers. While a marker that is
      not stale (G4) names one of its files, it waits (polling, at most
      COMMIT_WAIT_S, then CommitFailedError naming the file and the marker: retry the
      transaction, whose retry writes new files no marker names). THEN it checks its
      files exist (C7), publishes, and removes its intent, whatever the outcome.
  G3. An expiration that would delete orphans or Iceberg files (maintenance E4, E8)
      first creates its marker naming them all (``Expiring``), THEN lists the intents
      and spares every file a non-stale one names (every file it names, if an intent
      cannot be read), THEN waits until its files are old enough that
      every commit naming one without announcing it has published (maintenance E13),
      THEN looks at the versions committed since its plan (E9), THEN deletes, then
      removes its marker. Why no commit that announced a file publishes it deleted:
      if the commit listed the markers after this marker was created, it waited until the marker was gone (the
      deletions done) and C7 then found the file missing. Otherwise its intent existed
      before this marker did: if the intent still existed when the intents were
      listed, the file was spared; if it was gone by then, the commit had published
      before that listing, and the E9 look, which follows it, sees the version that
      names the file and spares it.
  G4. Crashed processes leave markers behind; a lease bounds their effect. A marker or
      intent older than LEASE_S (by the storage's clock: its modification time
      against a fresh marker's of the reader) is stale: commits ignore stale markers,
      expirations ignore stale intents and delete both. To keep that safe, an
      expiration starts no deletion of a file it marks more than LEASE_S / 2 after it began
      creating its marker (the rest stays for its next run), and a commit publishes no
      later than LEASE_S / 2 after it began creating its intent (CommitFailedError
      otherwise): each holds its marker for at most half the lease, leaving the other
      half for one deletion call or for the clocks' rounding (S3 stamps whole
      seconds).
  G5. Cost: only commits that name files written at least PREWRITTEN_CHECK_AGE_S
      before (transaction C7) pay for the handshake: one exclusive create, one
      listing, one delete (and reads and stats while a marker names their files). An
      ordinary commit (an autocommit statement, whose files are younger) makes no
      extra storage call; an expiration with no orphan and no Iceberg file to delete
      neither.
  G6. Storage must be strongly consistent for listings after writes (local disk and S3
      are): a listing that starts after a create returned shows the file.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterable

from .errors import CommitFailedError, CorruptFileError, MissingFileError, StorageError
from .storage import Storage

#: G1: the directory of the handshake's markers, relative to the root.
SYNC_DIRECTORY = "_tl_sync"
COMMITS_DIRECTORY = SYNC_DIRECTORY + "/commits"
EXPIRATIONS_DIRECTORY = SYNC_DIRECTORY + "/expirations"
#: G4: a marker or intent older than this is left by a crashed process.
LEASE_S = 600.0
#: G2: how long a commit waits for an expiration that names its files.
COMMIT_WAIT_S = 60.0
_POLL_FIRST_S = 0.005
_POLL_MAX_S = 0.25


def is_sync_path(path: str) -> bool:
    """True for the handshake's own files (G1): never a format file nor a table's."""
    return path == SYNC_DIRECTORY or path.startswith(SYNC_DIRECTORY + "/")


def pause(seconds: float) -> None:
    """One wait of a commit for an expiration (G2); a seam for tests that need to know
    a commit is waiting."""
    time.sleep(seconds)


def _encode(files: Iterable[str]) -> bytes:
    return json.dumps({"files": sorted(set(files))}, separators=(",", ":")).encode()


def _decode(path: str, data: bytes) -> set[str]:
    """The files a marker names; CorruptFileError if it is not a G1 marker."""
    try:
        files = json.loads(data)["files"]
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise TypeError("files is not a list of paths")
    except (ValueError, KeyError, TypeError) as error:
        raise CorruptFileError(path, f"not a handshake marker (G1): {error}") from None
    return set(files)


@dataclass
class _Clock:
    """The storage's clock, as far as this process can tell (G4): the modification time
    of a file it created, plus the time elapsed on its monotonic clock since the create
    returned. A lower bound of the storage's present time (None if the store does not
    give modification times)."""

    storage: Storage
    path: str
    returned_at: float
    stamped: int | None = None
    asked: bool = False

    def now_millis(self) -> int | None:
        if not self.asked:
            self.asked = True
            self.stamped = self.storage.modified_millis(self.path)
        if self.stamped is None:
            return None
        return self.stamped + int((time.monotonic() - self.returned_at) * 1000)

    def is_stale(self, path: str) -> bool:
        """True if the marker at ``path`` is older than LEASE_S (G4); False when unknown
        or when it is gone (the caller finds it gone when it reads it)."""
        now = self.now_millis()
        if now is None:
            return False
        stamped = self.storage.modified_millis(path)
        return stamped is not None and now - stamped > LEASE_S * 1000


def _create(storage: Storage, directory: str, files: Iterable[str]) -> tuple[str, float, float]:
    """Create a new marker: (its path, the monotonic time before, after)."""
    path = f"{directory}/{uuid.uuid4().hex}.json"
    began = time.monotonic()
    if not storage.create_exclusive(path, _encode(files)):  # a uuid: never taken
        raise StorageError(f"handshake marker {storage.uri(path)!r} already exists")
    return path, began, time.monotonic()


def _remove(storage: Storage, path: str) -> None:
    try:
        storage.delete(path)
    except StorageError:
        pass  # left behind: stale after LEASE_S, removed by a later expiration (G4)


@dataclass
class Intent:
    """A commit's announcement (G2), from ``announce_commit`` until ``withdraw``."""

    storage: Storage
    path: str
    began: float  # time.monotonic() before its create
    files: frozenset[str] = frozenset()  # what it names

    def check_in_time(self) -> None:
        """G4: CommitFailedError if publishing now could outlive the intent's lease."""
        held = time.monotonic() - self.began
        if held > LEASE_S / 2:
            raise CommitFailedError(
                f"the commit held its expiration handshake {self.storage.uri(self.path)!r} "
                f"for {held:.0f} s, longer than {LEASE_S / 2:.0f} s: an expiration may "
                "no longer spare its files; nothing was committed: retry the transaction"
            )

    def withdraw(self) -> None:
        """Remove the intent (best effort): the commit published or gave up."""
        _remove(self.storage, self.path)


def announce_commit(storage: Storage, files: Iterable[str], owner: Callable[[str], str]) -> Intent:
    """G2: create the intent of a commit naming ``files`` (``owner(path)`` says what
    names one, for errors), then wait while a live expiration marker names
    one of them. The caller checks the files exist (C7), publishes, then withdraws."""
    files = set(files)
    path, began, returned = _create(storage, COMMITS_DIRECTORY, files)
    intent = Intent(storage, path, began, frozenset(files))
    try:
        _wait_for_expirations(storage, files, owner, _Clock(storage, path, returned), began)
    except BaseException:
        intent.withdraw()
        raise
    return intent


def _wait_for_expirations(
    storage: Storage, files: set[str], owner: Callable[[str], str], clock: _Clock, began: float
) -> None:
    known: dict[str, set[str]] = {}  # markers are immutable: each is read once
    poll = _POLL_FIRST_S
    while True:
        blocking = None
        for marker in storage.list(EXPIRATIONS_DIRECTORY):
            if marker not in known:
                try:
                    known[marker] = _decode(marker, storage.read(marker))
                except MissingFileError:
                    continue  # the expiration ended meanwhile
                except CorruptFileError:
                    known[marker] = files  # unreadable: it may name any of them
            hit = known[marker] & files
            if hit and not clock.is_stale(marker):
                blocking = (marker, min(hit))
                break
        if blocking is None:
            return
        if time.monotonic() - began > COMMIT_WAIT_S:
            marker, path = blocking
            raise CommitFailedError(
                f"{owner(path)} names {storage.uri(path)!r}, which a version expiration "
                f"({storage.uri(marker)!r}) has been deleting for over {COMMIT_WAIT_S:.0f} s "
                "as an orphan older than its grace period; nothing was committed: retry the "
                "transaction (its retry writes new files)"
            )
        pause(poll)
        poll = min(poll * 2, _POLL_MAX_S)


@dataclass
class Expiring:
    """An expiration's marker (G3), created by ``Expiring.begin`` before it looks at
    intents and versions, removed by ``end`` after its deletions."""

    storage: Storage
    path: str
    began: float  # time.monotonic() before its create
    clock: _Clock
    removed: list[str] = field(default_factory=list)  # stale markers removed (G4)

    @classmethod
    def begin(cls, storage: Storage, files: Iterable[str]) -> "Expiring":
        """Create the marker naming every orphan and Iceberg file this run may delete."""
        path, began, returned = _create(storage, EXPIRATIONS_DIRECTORY, files)
        return cls(storage, path, began, _Clock(storage, path, returned))

    def spared(self) -> set[str] | None:
        """The files live intents name (G3), read after the marker was created; None
        when an intent cannot be read (what it names is unknown: spare everything).
        Stale intents and other expirations' stale markers are removed (G4)."""
        storage = self.storage
        spared: set[str] = set()
        for intent in storage.list(COMMITS_DIRECTORY):
            try:
                files = _decode(intent, storage.read(intent))
            except MissingFileError:
                continue  # its commit ended
            except CorruptFileError:
                if self.clock.is_stale(intent):
                    self._remove_stale(intent)
                    continue
                return None
            if self.clock.is_stale(intent):
                self._remove_stale(intent)
                continue
            spared |= files
        for marker in storage.list(EXPIRATIONS_DIRECTORY):
            if marker != self.path and self.clock.is_stale(marker):
                self._remove_stale(marker)
        return spared

    def _remove_stale(self, path: str) -> None:
        _remove(self.storage, path)
        self.removed.append(path)

    def seconds_left(self) -> float:
        """G4: the seconds within which a deletion may still start (half the lease
        after the marker's create began); zero or less: no more."""
        return LEASE_S / 2 - (time.monotonic() - self.began)

    def storage_now_millis(self) -> int | None:
        """A lower bound of the storage's present time (G4's clock: the marker's
        modification time plus the time elapsed since its create returned); None if
        the store gives no modification times."""
        return self.clock.now_millis()

    def end(self) -> None:
        """Remove the marker (best effort; stale after LEASE_S otherwise)."""
        _remove(self.storage, self.path)


__all__ = [
    "COMMITS_DIRECTORY", "COMMIT_WAIT_S", "EXPIRATIONS_DIRECTORY", "Expiring", "Intent", "LEASE_S",
    "SYNC_DIRECTORY", "announce_commit", "is_sync_path", "pause",
]
