"""Longer runs of the reliability tests: ``scripts/soak --duration SECONDS``.

The time is shared between the parts asked for (all by default):

  races    rounds of N writer processes on a fresh local lakehouse (and on the moto S3
           server with --s3), each round checked for linearizability and verified;
  crashes  writers SIGKILLed at random moments, the lakehouse reopened, verified and
           every acknowledged commit found after every kill;
  faults   the S3 workload under random transient faults (500, 503 SlowDown, 409,
           timeouts), and persistent faults from a random request of a commit on;
  fuzz     the SQL grammar fuzzer with fresh randomness, the lakehouse verified at the
           end.

Prints one line per part and a JSON summary (``--json FILE`` writes it too). Exit status
1 if anything was lost or invalid: the first failure stops the run with its traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import tempfile
import time
from collections import Counter
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
for path in (HERE, os.path.dirname(HERE)):
    if path not in sys.path:
        sys.path.insert(0, path)


def races(seconds: float, writers: int, s3: Any | None) -> dict:
    import multiprocessing

    from reliability_helpers import SMALL_TREE
    from reliability_workers import check_linearizable, writer
    from trinitylake_dbapi.catalog import LakehouseCatalog

    stats: Counter = Counter()
    end = time.time() + seconds
    context = multiprocessing.get_context("spawn")
    with context.Pool(writers) as pool:
        while time.time() < end:
            for backend in (["local", "s3"] if s3 is not None else ["local"]):
                with tempfile.TemporaryDirectory() as tmp:
                    if backend == "local":
                        location, options = os.path.join(tmp, "lake"), None
                    else:
                        location, options = f"s3://{s3.create_bucket()}/lake", dict(s3.storage_options)
                    catalog = LakehouseCatalog(location, create=True, storage_options=options,
                                               lakehouse_options=SMALL_TREE)
                    start = catalog.latest_version()
                    # rounds of at most 20 s of writing, at least 5 s after the workers start
                    deadline = max(min(end, time.time() + 20), time.time() + 5) + 2
                    results = pool.starmap(writer, [
                        (location, options, w, 10**9, random.randrange(10**9), 3, 4, None, deadline)
                        for w in range(writers)
                    ])
                    acknowledged = [item for r in results for item in r["acknowledged"]]
                    check_linearizable(catalog, start, acknowledged)
                    stats[f"{backend} rounds"] += 1
                    stats[f"{backend} commits"] += len(acknowledged)
                    for r in results:
                        for kind, n in r["failures"].items():
                            stats[f"{backend} refused {kind}"] += n
    return dict(stats)


def crashes(seconds: float, writers: int) -> dict:
    from reliability_helpers import SMALL_TREE
    from reliability_workers import read_log
    from test_crashes import check_after_crash
    from trinitylake_dbapi.catalog import LakehouseCatalog
    from zygote import Zygote

    stats: Counter = Counter()
    end = time.time() + seconds
    with tempfile.TemporaryDirectory() as tmp, Zygote() as zygote:
        location = os.path.join(tmp, "lake")
        LakehouseCatalog(location, create=True, lakehouse_options=SMALL_TREE)
        round_ = 0
        while time.time() < end:
            round_ += 1
            logs = [os.path.join(tmp, f"log-{round_}-{w}.jsonl") for w in range(writers)]
            pids = [zygote.start("reliability_workers:writer", location, None, w, 10**9,
                                 random.randrange(10**9), log_path=logs[w],
                                 deadline=time.time() + 60)
                    for w in range(writers)]
            for pid in random.sample(pids, len(pids)):
                time.sleep(random.uniform(0.005, 0.5))
                os.kill(pid, signal.SIGKILL)
            for pid in pids:
                assert zygote.wait(pid) == -signal.SIGKILL
                stats["kills"] += 1
            acknowledged = [item for log in logs for item in read_log(log)]
            check_after_crash(location, acknowledged)
            stats["rounds"] += 1
            stats["acknowledged commits checked"] += len(acknowledged)
        stats["versions"] = LakehouseCatalog(location).latest_version()
    return dict(stats)


def faults(seconds: float, s3: Any) -> dict:
    import pytest

    from botocore.retries.standard import ExponentialBackoff

    import test_s3_faults as t
    from s3_faults import Fault, faults as injecting, from_request, in_bucket

    ExponentialBackoff.delay_amount = lambda self, context: 0.005  # type: ignore[method-assign]
    stats: Counter = Counter()
    end = time.time() + seconds
    kinds = t.MIXED
    while time.time() < end:
        bucket = s3.create_bucket()
        root = f"s3://{bucket}/lake"
        limit = random.randint(5, 30)
        with injecting(in_bucket(bucket, t.round_robin(kinds, limit))) as plan:
            final = t.workload(root, s3)
        assert final == t.EXPECTED, final
        stats["transient workloads"] += 1
        stats.update({f"injected {k}": v for k, v in plan.injected.items()})
        report = t.verify(root, storage_options=s3.storage_options, all_versions=True)
        assert report.ok, report.text()
        # one persistent fault from a random request of a commit
        checker = t.LakehouseCatalog(root, storage_options=s3.storage_options)
        old = checker.latest_version()
        when = random.choice(["before", "after"])
        with injecting(in_bucket(bucket, from_request(random.randint(1, 25), Fault("InternalError", when)))):
            try:
                t._commit_one(root, s3, f"p{stats['persistent']}")
                error = None
            except t.Error as e:
                error = e
        latest = checker.latest_version()
        assert latest in (old, old + 1)
        if latest == old:
            assert error is not None
        elif error is not None:
            assert "outcome is unknown" in str(error), str(error)
            stats["persistent: outcome unknown, reported"] += 1
        stats["persistent"] += 1
        assert t.verify(root, storage_options=s3.storage_options).ok
    del pytest
    return dict(stats)


def fuzz(seconds: float) -> dict:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    import test_sql_fuzz as f
    from trinitylake_dbapi.verify import verify

    end = time.time() + seconds
    lakehouse = f.FuzzLakehouse()

    @settings(max_examples=200, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(program=st.lists(f.OPERATION, min_size=1, max_size=8), autocommit=st.booleans())
    def chunk(program: list, autocommit: bool) -> None:
        lakehouse.run(program, autocommit)

    chunks = 0
    while time.time() < end:
        chunk()
        chunks += 1
    lakehouse.close()
    report = verify(lakehouse.location, all_versions=True)
    assert report.ok, report.text()
    return {"cases": chunks * 200, **lakehouse.stats, "versions": len(report.versions)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/soak", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=300, metavar="SECONDS",
                        help="total time, shared between the parts (default 300)")
    parser.add_argument("--parts", default="races,crashes,faults,fuzz",
                        help="comma-separated: races, crashes, faults, fuzz")
    parser.add_argument("--writers", type=int, default=4, help="writer processes (default 4)")
    parser.add_argument("--s3", action="store_true", help="also race on the moto S3 server")
    parser.add_argument("--json", metavar="FILE", help="also write the summary here")
    args = parser.parse_args(argv)
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = set(parts) - {"races", "crashes", "faults", "fuzz"}
    if unknown:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
    share = args.duration / len(parts)
    summary: dict[str, Any] = {"duration_s": args.duration, "writers": args.writers}
    needs_s3 = "faults" in parts or args.s3
    from contextlib import ExitStack

    with ExitStack() as stack:
        s3 = None
        if needs_s3:
            from s3_server import running_s3_server

            s3 = stack.enter_context(running_s3_server())
        runs: dict[str, Callable[[], dict]] = {
            "races": lambda: races(share, args.writers, s3 if args.s3 else None),
            "crashes": lambda: crashes(share, min(args.writers, 2)),
            "faults": lambda: faults(share, s3),
            "fuzz": lambda: fuzz(share),
        }
        for part in parts:
            started = time.time()
            result = runs[part]()
            result["seconds"] = round(time.time() - started, 1)
            summary[part] = result
            print(f"{part}: " + ", ".join(f"{k} {v}" for k, v in sorted(result.items())), flush=True)
    summary["result"] = "nothing lost, every check passed"
    print(json.dumps(summary, indent=2, sort_keys=True))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(summary, out, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
