"""Writers racing to insert overlapping primary keys (issue 36 acceptance 3; iceberg.keys
PK2): N processes, under autocommit (a lost commit is rebased, P3) and in explicit
transactions (replayed at commit, P4), insert batches of keys from one small range. The
committed keys have no duplicate; every refused batch got IntegrityError or
SerializationError; every batch acknowledged is there, whole, and nothing else is.
Deadlines only catch hangs.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import trinitylake_dbapi
import warm_processes
from deadlines import HANG_S
from key_race_workers import key_inserter

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("explicit", [False, True, "mixed"], ids=["autocommit", "transactions", "with-pyiceberg"])
def test_racing_inserts_of_overlapping_keys(tmp_path: Any, explicit: bool | str) -> None:
    """``mixed``: two SQL workers (one autocommit, one in transactions) and two PyIceberg
    appenders through the project's catalog (a refused append: IntegrityError, or
    CommitFailedException when other writers kept winning)."""
    location = str(tmp_path / "lake")
    with trinitylake_dbapi.connect(location, create=True, autocommit=True) as conn:
        conn.cursor().execute("CREATE TABLE default.k (id INT PRIMARY KEY, w INT)")
    workers, batches, key_range = 4, 10, 30
    context = warm_processes.context("key_race_workers")
    with context.Pool(workers) as pool:
        pending = [
            pool.apply_async(key_inserter, (location, w, batches, key_range,
                                            [False, True, "pyiceberg", "pyiceberg"][w] if explicit == "mixed"
                                            else explicit, str(tmp_path / f"err{w}")))  # fmt: skip
            for w in range(workers)
        ]
        results = [p.get(timeout=HANG_S) for p in pending]
    with trinitylake_dbapi.connect(location) as conn:
        cur = conn.cursor()
        cur.execute("SELECT id, w FROM default.k")
        stored = cur.fetchall()
    counts = Counter(k for k, _ in stored)
    assert all(n == 1 for n in counts.values()), [k for k, n in counts.items() if n > 1]
    owner = dict(stored)
    acknowledged: set[int] = set()
    refused = 0
    for w, (outcomes, stderr) in enumerate(results):
        assert stderr == "", stderr
        for keys, outcome in outcomes:
            if outcome == "ok":
                assert all(owner.get(k) == w for k in keys), (w, keys, outcome)  # there, whole, its own
                acknowledged |= set(keys)
                continue
            refused += 1
            assert outcome.startswith(("IntegrityError: PRIMARY KEY", "SerializationError", "CommitFailedException")), outcome
            if outcome.startswith("IntegrityError"):
                # refused for a key another batch committed: it names one of the stored keys
                assert any(k in owner for k in keys), (keys, outcome)
                assert "default.k" in outcome and "(id)" in outcome
    assert set(owner) == acknowledged  # nothing lost, nothing that was refused
    assert refused > 0  # the race did collide (30 keys, 4 x 10 batches of up to 3)
    from trinitylake_dbapi.verify import verify

    report = verify(location, all_versions=True, data=True)
    assert report.ok, report.problems
