"""Crashes: writer processes SIGKILLed at random moments and at every mutating os call
of a commit; after each kill the lakehouse reopens, verifies cleanly, shows every
acknowledged commit at its version, and takes new commits (issue 9, point 2).

A commit is *acknowledged* when ``commit()`` returned and the writer logged it (JSON
line, fsynced). A writer killed between the two leaves a version nobody acknowledged:
allowed (the caller never heard back), as long as the history stays valid.
"""

from __future__ import annotations

import os
import random
import signal
import time
from typing import Any

import pytest

from reliability_helpers import SMALL_TREE, local_files
from reliability_workers import holds, read_log
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.storage import RESERVED_PREFIX
from trinitylake_dbapi.verify import verify
from zygote import Zygote

# Slow: writer processes killed in rounds (scripts/test --quick leaves it out).
pytestmark = pytest.mark.slow


def check_after_crash(location: str, acknowledged: list[tuple[int, tuple]]) -> LakehouseCatalog:
    """Reopen, verify, find every acknowledged commit at its version, commit again."""
    catalog = LakehouseCatalog(location)
    report = verify(catalog.storage)
    assert report.ok, report.text()
    latest = catalog.latest_version()
    versions = [v for v, _ in acknowledged]
    assert len(versions) == len(set(versions))
    for version, op in acknowledged:
        assert version <= latest
        assert holds(catalog.begin(version=version), op), (version, op)
    txn = catalog.begin()
    txn.create_namespace(f"after{latest}", if_not_exists=True)
    txn.drop_namespace(f"after{latest}")
    assert txn.commit() in (latest, latest + 1)  # a no-op commit returns its base version
    return catalog


#: Writer processes started, then killed, in each round of the random-moment test.
WRITERS = 3


def _new_lake(location: str) -> None:
    LakehouseCatalog(location, create=True, lakehouse_options=SMALL_TREE)


@pytest.fixture(scope="module")
def zygote() -> Any:
    with Zygote() as z:
        yield z


def test_writers_killed_at_random_moments(tmp_path: Any, zygote: Zygote) -> None:
    location = str(tmp_path / "lake")
    _new_lake(location)
    rng = random.Random(7)
    # Three writers a round, 12 rounds: 36 kills (issue 34 wants at least 30). The check
    # after each round verifies the whole history, which grows every round (~300 commits
    # a round with the lakehouse on tmpfs, as scripts/test keeps it), so its cost went
    # with the square of the rounds: two writers in 25 rounds (50 kills) took 13-14.5 s
    # of this process's CPU, 5.2-6.3 s now.
    rounds, kills, checked = 12, 0, 0
    for round_ in range(rounds):
        logs = [str(tmp_path / f"log-{round_}-{w}.jsonl") for w in range(WRITERS)]
        pids = [
            zygote.start("reliability_workers:writer", location, None, w, 10**6,
                         rng.randrange(10**9), log_path=logs[w], deadline=time.time() + 60)
            for w in range(WRITERS)
        ]
        # kill each writer at its own random moment
        for pid in sorted(pids, key=lambda _: rng.random()):
            time.sleep(rng.uniform(0.01, 0.2))
            os.kill(pid, signal.SIGKILL)
            kills += 1
        for pid in pids:
            assert zygote.wait(pid) == -signal.SIGKILL
        acknowledged = [item for log in logs for item in read_log(log)]
        checked += len(acknowledged)
        check_after_crash(location, acknowledged)
    temp = [f for f in local_files(location) if os.path.basename(f).startswith(RESERVED_PREFIX)]
    assert kills >= 30
    print(f"\n{rounds} rounds, {kills} kills, {checked} acknowledged commits all present; "
          f"{len(temp)} temp files left by killed writes")
    assert checked > rounds  # the writers did commit between kills


def test_a_writer_killed_at_every_mutating_os_call(tmp_path: Any, zygote: Zygote) -> None:
    location = str(tmp_path / "lake")
    _new_lake(location)
    k, survived = 0, False
    while not survived:
        k += 1
        log = str(tmp_path / f"log-{k}.jsonl")
        exitcode = zygote.wait(zygote.start("reliability_workers:crashing_writer",
                                            location, k, 3, 1000 + k, log))
        survived = exitcode == 0
        assert survived or exitcode == -signal.SIGKILL, exitcode
        check_after_crash(location, read_log(log))
        assert k < 500
    print(f"\nkilled at each of {k - 1} mutating os calls of 3 commits: verified after each")
    assert k > 20
