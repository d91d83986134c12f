"""Exclusive create under real races: local disk and S3 (moto, put handlers serialized).

Each round, 8 writer processes create the same new file at once, each with its own
256 KiB payload (writer id, round, sha256 trailer), while a reader process polls the
path. Checked: exactly one writer gets True; every read the reader gets is one complete
payload, always the same one within a round (no partial file, no overwrite); the file
finally holds the winner's payload.

Also: a store that ignores If-None-Match is refused; 409 conflicts are retried.
"""

from __future__ import annotations

import errno
import hashlib
import os
import queue
import time
import traceback
from typing import Any

import pytest

import warm_processes
from deadlines import HANG_S
from trinitylake_dbapi.errors import MissingFileError, StorageError
from lakes import Lake
from trinitylake_dbapi.storage import Storage

N_WRITERS = 8
PAYLOAD_BYTES = 256 * 1024
LOCAL_ROUNDS = 200
#: Fewer on S3: moto runs the put handlers one at a time (tests/s3_server.py), so every
#: round is the same sequence at the store (one PUT lands, 7 are refused and read back);
#: only the clients' timing varies. A round costs ~0.3 s of moto's request handling
#: (8 PUTs and 7 GETs of 256 KiB, plus the reader's), so 100 rounds took 30 s.
S3_ROUNDS = 40
BARRIER_TIMEOUT_S = HANG_S  # tests/deadlines.py DL1


def _payload(writer: int, rnd: int) -> bytes:
    header = f"writer={writer:02d} round={rnd:05d};".encode()
    body = header + os.urandom(PAYLOAD_BYTES - len(header) - 32)
    return body + hashlib.sha256(body).digest()


def _writer_of(data: bytes) -> int | None:
    """The writer id of a complete payload, None for anything partial or corrupt."""
    if len(data) != PAYLOAD_BYTES:
        return None
    body, digest = data[:-32], data[-32:]
    if hashlib.sha256(body).digest() != digest or not body.startswith(b"writer="):
        return None
    return int(body[7:9])


def _round_path(rnd: int) -> str:
    return f"race/{rnd:05d}/_00000000000000000000000000000001.arrow"


def _writer(writer: int, root: str, options: Any, rounds: int, barrier: Any, out: Any) -> None:
    try:
        storage = Storage(root, options)
        for rnd in range(rounds):
            data = _payload(writer, rnd)
            barrier.wait(BARRIER_TIMEOUT_S)
            won = storage.create_exclusive(_round_path(rnd), data)
            out.put(("result", rnd, writer, won))
        out.put(("done", writer, None, None))
    except BaseException:  # noqa: BLE001 - report to the parent, then unblock everyone
        out.put(("error", writer, traceback.format_exc(), None))
        barrier.abort()


def _reader(root: str, options: Any, rounds: int, barrier: Any, out: Any) -> None:
    stats = {"reads": 0, "missing": 0, "complete": 0, "partial": 0, "changed": 0}
    try:
        storage = Storage(root, options)
        for rnd in range(rounds):
            path = _round_path(rnd)
            barrier.wait(BARRIER_TIMEOUT_S)
            seen: int | None = None
            complete_reads = 0
            deadline = time.monotonic() + HANG_S
            # Poll through the race; after the file appears, read it 3 more times.
            while complete_reads < 4:
                try:
                    data = storage.read(path)
                except MissingFileError:
                    stats["missing"] += 1
                    if time.monotonic() > deadline:
                        raise AssertionError(f"round {rnd}: file never appeared") from None
                    continue
                stats["reads"] += 1
                writer = _writer_of(data)
                if writer is None:
                    stats["partial"] += 1
                    continue
                stats["complete"] += 1
                complete_reads += 1
                if seen is not None and writer != seen:
                    stats["changed"] += 1
                seen = writer
        out.put(("reader", None, stats, None))
    except BaseException:  # noqa: BLE001
        out.put(("error", "reader", traceback.format_exc(), None))
        barrier.abort()


def _race(root: str, options: Any, rounds: int) -> dict[str, Any]:
    ctx = warm_processes.context(_writer.__module__)  # spawn's imports were most of the run
    barrier = ctx.Barrier(N_WRITERS + 1)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(w, root, options, rounds, barrier, out), daemon=True)
        for w in range(N_WRITERS)
    ]
    procs.append(ctx.Process(target=_reader, args=(root, options, rounds, barrier, out),
                             daemon=True))
    started = time.monotonic()
    for p in procs:
        p.start()
    winners: dict[int, list[int]] = {r: [] for r in range(rounds)}
    results = 0
    reader_stats: dict[str, int] | None = None
    done = 0
    errors: list[str] = []
    try:
        while done < N_WRITERS or reader_stats is None:
            try:
                kind, a, b, c = out.get(timeout=HANG_S)
            except queue.Empty:
                raise AssertionError("race timed out") from None
            if kind == "result":
                results += 1
                if c:
                    winners[a].append(b)
            elif kind == "done":
                done += 1
            elif kind == "reader":
                reader_stats = b
            else:
                errors.append(f"{a}: {b}")
                break
    finally:
        for p in procs:
            p.join(timeout=30)  # then killed: not a deadline
            if p.is_alive():
                p.kill()
    assert not errors, "\n".join(errors)
    assert results == N_WRITERS * rounds
    return {"winners": winners, "reader": reader_stats, "seconds": time.monotonic() - started}


def _check(storage: Storage, outcome: dict[str, Any], rounds: int, label: str) -> None:
    winners = outcome["winners"]
    bad = {r: w for r, w in winners.items() if len(w) != 1}
    assert not bad, f"rounds without exactly one winner: {bad}"
    for rnd in range(rounds):
        assert _writer_of(storage.read(_round_path(rnd))) == winners[rnd][0]
    stats = outcome["reader"]
    assert stats["partial"] == 0, stats
    assert stats["changed"] == 0, stats
    assert stats["complete"] >= 4 * rounds, stats
    # Only the round files remain: no temp or probe file is visible.
    assert storage.list() == [_round_path(r) for r in range(rounds)]
    lost = sum(1 for r in range(rounds) for w in range(N_WRITERS) if w not in winners[r])
    print(f"\n{label}: {rounds} rounds x {N_WRITERS} writers, one winner each ({lost} lost races); "
          f"reader: {stats}; {outcome['seconds']:.1f} s")


@pytest.mark.slow
def test_race_on_local_disk(tmp_path: Any) -> None:
    root = str(tmp_path / "lake")
    outcome = _race(root, None, LOCAL_ROUNDS)
    _check(Storage(root), outcome, LOCAL_ROUNDS, "local")
    leftovers = [f for _d, _s, fs in os.walk(tmp_path) for f in fs if f.startswith(".tl-")]
    assert leftovers == []


@pytest.mark.slow
def test_race_on_object_stores(object_lake: Lake) -> None:
    """S3 on moto, GCS on fake-gcs-server: the same races through each one's
    conditional write (storage.schemes SC1)."""
    outcome = _race(object_lake.location, object_lake.storage_options, S3_ROUNDS)
    _check(object_lake.open(), outcome, S3_ROUNDS, object_lake.backend)


# --- stores that misbehave ----------------------------------------------------------


def _s3fs_class() -> Any:
    s3fs = pytest.importorskip("s3fs")
    return s3fs.S3FileSystem


@pytest.mark.s3
def test_store_ignoring_if_none_match_is_refused(
    s3_root: str, s3_storage_options: dict[str, Any]
) -> None:
    base = _s3fs_class()

    class IgnoresIfNoneMatch(base):  # type: ignore[misc, valid-type]
        async def _pipe_file(self, path: str, data: bytes, mode: str = "overwrite",
                             **kwargs: Any) -> Any:
            return await super()._pipe_file(path, data, mode="overwrite", **kwargs)

    fs = IgnoresIfNoneMatch(**s3_storage_options)
    storage = Storage(s3_root, filesystem=fs)
    with pytest.raises(StorageError) as info:
        storage.create_exclusive("_root.arrow", b"x")
    message = str(info.value)
    assert "If-None-Match" in message and "does not honour" in message
    assert s3_root in message
    # Nothing was written, and the probe object was removed.
    assert fs.find(s3_root) == []
    # The honest store is accepted on the same bucket.
    honest = Storage(s3_root, s3_storage_options)
    assert honest.create_exclusive("_root.arrow", b"x") is True
    assert honest.create_exclusive("_root.arrow", b"y") is False


def _conflict_error() -> OSError:
    from botocore.exceptions import ClientError
    from s3fs.errors import translate_boto_error

    err = ClientError(
        {"Error": {"Code": "ConditionalRequestConflict",
                   "Message": "A conflicting conditional operation is in progress"},
         "ResponseMetadata": {"HTTPStatusCode": 409}},
        "PutObject",
    )
    exc = translate_boto_error(err)
    assert type(exc) is OSError and exc.errno == errno.EIO  # what s3fs really raises
    return exc


@pytest.mark.s3
def test_409_conflicts_are_retried(s3_root: str, s3_storage_options: dict[str, Any]) -> None:
    base = _s3fs_class()

    class Conflicting(base):  # type: ignore[misc, valid-type]
        conflicts_left = 2
        attempts = 0

        async def _pipe_file(self, path: str, data: bytes, mode: str = "overwrite",
                             **kwargs: Any) -> Any:
            if mode == "create" and "/.tl-" not in path:
                type(self).attempts += 1
                if type(self).conflicts_left > 0:
                    type(self).conflicts_left -= 1
                    raise _conflict_error()
            return await super()._pipe_file(path, data, mode=mode, **kwargs)

    storage = Storage(s3_root, filesystem=Conflicting(**s3_storage_options))
    assert storage.create_exclusive("_r", b"data") is True
    assert Conflicting.attempts == 3
    assert storage.read("_r") == b"data"
    assert storage.counters.exclusive_creates == 1

    # A conflict that never clears fails after a bounded number of retries.
    Conflicting.conflicts_left = 10**6
    Conflicting.attempts = 0
    with pytest.raises(StorageError) as info:
        storage.create_exclusive("_other", b"data")
    assert "_other" in str(info.value)
    assert 2 <= Conflicting.attempts <= 16  # bounded by a count (O3), not by a clock
    assert not storage.exists("_other")


@pytest.mark.s3
def test_lost_reply_of_a_successful_create_still_wins(
    s3_root: str, s3_storage_options: dict[str, Any]
) -> None:
    """A PUT that landed but whose reply was lost is retried and refused: ours anyway."""
    base = _s3fs_class()

    class LostReply(base):  # type: ignore[misc, valid-type]
        async def _pipe_file(self, path: str, data: bytes, mode: str = "overwrite",
                             **kwargs: Any) -> Any:
            out = await super()._pipe_file(path, data, mode=mode, **kwargs)
            if mode == "create" and "/.tl-" not in path:
                raise FileExistsError(path)  # as a retry of the landed PUT would see
            return out

    storage = Storage(s3_root, filesystem=LostReply(**s3_storage_options))
    assert storage.create_exclusive("_r", b"mine") is True
    other = Storage(s3_root, s3_storage_options)
    assert other.create_exclusive("_r", b"theirs") is False
    assert other.read("_r") == b"mine"
