"""Compactions SIGKILLed at random moments (issue 34, acceptance 3): an appender and a
compactor work on one table and are killed at random; after every kill the lakehouse
verifies cleanly (``verify --data``), every acknowledged append's rows are present
exactly once, and the table takes new appends and compactions."""

from __future__ import annotations

import collections
import os
import random
import signal
import time
from typing import Any

import pyarrow as pa
import pytest

from iceberg_workers import SCHEMA, read_ids
from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog
from trinitylake_dbapi.verify import verify
from zygote import Zygote

# Slow: processes killed in rounds (scripts/test --quick leaves it out).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def zygote() -> Any:
    with Zygote(preload=("reliability_workers", "iceberg_workers")) as z:
        yield z


def test_compactions_killed_at_random_moments(tmp_path: Any, zygote: Zygote) -> None:
    location = str(tmp_path / "lake")
    catalog = TrinityLakeCatalog("check", uri=location, create="true")
    catalog.create_table("default.t", SCHEMA, properties={"write.target-file-size-bytes": "4096"})
    rng = random.Random(34)
    rounds, compactor_kills, compactions = 32, 0, 0
    append_logs: list[str] = []
    for round_ in range(rounds):
        append_log = str(tmp_path / f"append-{round_}.jsonl")
        compact_log = str(tmp_path / f"compact-{round_}.jsonl")
        append_logs.append(append_log)
        deadline = time.time() + 30
        appender = zygote.start("iceberg_workers:appender", location, "default.t", round_ + 1, append_log, deadline)
        compactor = zygote.start("iceberg_workers:compactor", location, "default.t", compact_log, deadline)
        time.sleep(rng.uniform(0.5, 4.0))
        for pid in sorted([appender, compactor], key=lambda _: rng.random()):
            time.sleep(rng.uniform(0.0, 0.3))
            os.kill(pid, signal.SIGKILL)
        for pid in (appender, compactor):
            assert zygote.wait(pid) == -signal.SIGKILL
        compactor_kills += 1
        compactions += len(read_ids(compact_log)) // 2
        report = verify(location, data=True)
        assert report.ok, (round_, report.text())
        ids = TrinityLakeCatalog("check", uri=location).load_table("default.t").scan().to_arrow()["id"].to_pylist()
        duplicated = [i for i, n in collections.Counter(ids).items() if n > 1]
        assert not duplicated, (round_, duplicated[:10])
        wanted = {i for log in append_logs for i in read_ids(log)}
        assert wanted <= set(ids), (round_, sorted(wanted - set(ids))[:10])
    assert compactor_kills >= 30 and compactions > 0, (compactor_kills, compactions)
    table = catalog.load_table("default.t")
    table.append(pa.table({"id": pa.array([-1], pa.int64()), "worker": pa.array([0], pa.int32())}))
    catalog.optimize_table("default.t")
    assert verify(location, data=True).ok
    print(f"\n{rounds} rounds, {compactor_kills} compactor kills, {compactions} compactions committed")
