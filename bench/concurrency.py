"""Concurrent writers (issue 8, item 4; issue 21's target): 1, 2 and 4 processes creating
distinct tables in one lakehouse, one commit each. Reports aggregate commits/s, retries
per commit (lost exclusive-create races, from Storage's counters) and failures (must be
0); the summary's "targets" row judges 4 writers against one (bench/targets.py)."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from typing import Callable

from . import targets
from .timing import median


def _writer(uri: str, worker: int, commits: int, barrier, queue) -> None:  # type: ignore[no-untyped-def]
    from trinitylake_dbapi.catalog import LakehouseCatalog
    from trinitylake_dbapi.format.types import ColumnSpec, parse_type

    from .sides import COLUMNS

    columns = [ColumnSpec(n, parse_type(t, column=n)) for n, t in COLUMNS]
    catalog = LakehouseCatalog(uri)
    barrier.wait()
    start = time.time()
    done = failures = 0
    errors: list[str] = []
    before = catalog.storage.counters.snapshot()
    for i in range(commits):
        try:
            txn = catalog.begin()
            txn.create_table("ns", f"w{worker}_t{i:05d}", columns)
            txn.commit()
            done += 1
        except Exception as exc:  # noqa: BLE001 - counted and reported
            failures += 1
            if len(errors) < 3:
                errors.append(f"{type(exc).__name__}: {exc}")
    end = time.time()
    delta = catalog.storage.counters - before
    queue.put({"worker": worker, "start": start, "end": end, "commits": done, "failures": failures,
               "creates": delta.exclusive_creates, "errors": errors})


def run_writers(directory: str, writers: int, commits: int) -> dict:
    from trinitylake_dbapi.catalog import LakehouseCatalog

    from .sides import lake_uri

    uri = lake_uri(directory)
    catalog = LakehouseCatalog(uri, create=True)
    txn = catalog.begin()
    txn.create_namespace("ns")
    txn.commit()
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(writers)
    queue = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(uri, w, commits, barrier, queue)) for w in range(writers)]
    for p in procs:
        p.start()
    reports = [queue.get(timeout=3600) for _ in procs]
    for p in procs:
        p.join()
    span = max(r["end"] for r in reports) - min(r["start"] for r in reports)
    total = sum(r["commits"] for r in reports)
    creates = sum(r["creates"] for r in reports)
    listed = catalog.begin().list_tables("ns")
    return {
        "writers": writers,
        "commits": total,
        "seconds": span,
        "commits_per_s": total / span if span > 0 else float("nan"),
        "retries_per_commit": (creates - total) / total if total else float("nan"),
        "failures": sum(r["failures"] for r in reports),
        "errors": [e for r in reports for e in r["errors"]],
        "tables_listed": len(listed),
    }


def concurrency(workdir: str, writer_counts: list[int], commits: int, reps: int,
                log: Callable[[str], None]) -> dict:
    """Interleaved over reps: each rep runs every writer count once, in rotating order."""
    runs: dict[int, list[dict]] = {w: [] for w in writer_counts}
    for rep in range(reps):
        order = writer_counts[rep % len(writer_counts):] + writer_counts[: rep % len(writer_counts)]
        for writers in order:
            result = run_writers(os.path.join(workdir, f"conc-rep{rep}-w{writers}"), writers, commits)
            runs[writers].append(result)
            log(f"  rep {rep + 1}/{reps} {writers} writer(s): {result['commits_per_s']:.0f} commits/s, "
                f"{result['retries_per_commit']:.2f} retries/commit, {result['failures']} failures")
    summary: dict = {}
    for writers, results in runs.items():
        summary[writers] = {
            "commits_per_s": median(r["commits_per_s"] for r in results),
            "retries_per_commit": median(r["retries_per_commit"] for r in results),
            "failures": sum(r["failures"] for r in results),
            "errors": [e for r in results for e in r["errors"]][:5],
            "runs": results,
        }
    summary["targets"] = targets.concurrency(summary)
    return summary
