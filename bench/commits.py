"""Reads after many small commits (issue 34, first item): a table built by N one-row
INSERT commits through the DB-API (autocommit, one durable commit each), then:

* **count, new process**: ``SELECT count(*), sum(amount)`` as the first statement after
  the process's planning cache is emptied (every manifest decoded once);
* **count, new connection**: the same on a new connection of a process that planned
  the table before (the planning cache is process-wide, iceberg.planning PC1);
* **point lookup**: ``SELECT id, name FROM t WHERE id = ?`` with a new key value each
  time, on one connection (each value plans again: pruning by the bound value).

Each figure at N commits is compared with the same at 1 commit: the targets are a
point lookup and a count within 2x of their time after 1 commit, and planning a table
of N commits within 100 MB (the planning cache's estimated bytes, ``cache_info()``; the
views a connection keeps, ``shared_view_info()`` of its engine, are reported beside it).
"""

from __future__ import annotations

import datetime
import decimal
import os
import statistics
import time
from typing import Callable

from . import targets

#: Issue 34: after many commits, at most this many times the time after 1 commit.
SLOWDOWN_MAX = 2.0
#: Issue 34: a table of many commits plans in at most this many MB.
PLAN_MB_MAX = 100.0

COUNT = "SELECT count(*), sum(amount) FROM ns.t"
LOOKUP = "SELECT id, name FROM ns.t WHERE id = ?"


def _build(location: str, commits: int, log: Callable[[str], None], auto_compact: int | None = None) -> float:
    import trinitylake_dbapi

    started = time.perf_counter()
    conn = trinitylake_dbapi.connect(location, create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    properties = "" if auto_compact is None else f" TBLPROPERTIES ('compaction.auto.min-small-files' = '{auto_compact}')"
    cur.execute("CREATE TABLE ns.t (id BIGINT, name STRING, amount DOUBLE, day DATE, price DECIMAL(10,2))" + properties)
    for i in range(commits):
        cur.execute("INSERT INTO ns.t VALUES (?, ?, ?, ?, ?)",
                    (i, f"name {i}", i * 1.5, datetime.date(2026, 1, 1), decimal.Decimal("1.25")))  # fmt: skip
        if (i + 1) % 1000 == 0:
            log(f"  commits: {i + 1:,} of {commits:,}, {time.perf_counter() - started:.0f} s")
    conn.close()
    return time.perf_counter() - started


def _measure(location: str, commits: int, reps: int, lookups: int) -> dict:
    import trinitylake_dbapi
    from trinitylake_dbapi.iceberg import planning

    expected = (commits, sum(i * 1.5 for i in range(commits)))
    planning.clear_cache()
    conn = trinitylake_dbapi.connect(location, autocommit=True)
    start = time.perf_counter()
    assert tuple(conn.cursor().execute(COUNT).fetchone()) == expected
    first = time.perf_counter() - start
    conn.close()
    cache = planning.cache_info()
    counts, points = [], []
    for rep in range(reps):
        conn = trinitylake_dbapi.connect(location, autocommit=True)
        cur = conn.cursor()
        start = time.perf_counter()
        assert tuple(cur.execute(COUNT).fetchone()) == expected
        counts.append(time.perf_counter() - start)
        for j in range(lookups):
            key = (rep * lookups + j) * 7919 % commits
            start = time.perf_counter()
            assert cur.execute(LOOKUP, (key,)).fetchall() == [(key, f"name {key}")]
            points.append(time.perf_counter() - start)
        views = conn.session.data_engine().shared_view_info()  # sql.query.engine QX3
        conn.close()
    return {
        "count_new_process_ms": first * 1000,
        "count_new_connection_ms": statistics.median(counts) * 1000,
        "point_lookup_ms": statistics.median(points) * 1000,
        "cache_entries": cache["entries"],
        "cache_mb": cache["bytes"] / 2**20,
        # The views one connection keeps for later statements (QX3): their number and
        # the text they hold (the file lists), after the count and the lookups.
        "view_cache_views": views["views"],
        "view_cache_mb": views["chars"] / 2**20,
    }


def _optimize(location: str) -> float:
    """OPTIMIZE the table (iceberg.compaction): seconds taken."""
    import trinitylake_dbapi

    conn = trinitylake_dbapi.connect(location, autocommit=True)
    start = time.perf_counter()
    conn.cursor().execute("OPTIMIZE ns.t")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def commits(workdir: str, counts: list[int], reps: int, lookups: int, log: Callable[[str], None],
            auto_compact: int | None = None) -> dict:  # fmt: skip
    """The figures of the module docstring at each of ``counts`` (the first is the
    baseline, normally 1), medians of ``reps`` new connections, ``lookups`` each.
    ``auto_compact``: the tables are created with ``compaction.auto.min-small-files``
    set to it (iceberg.compaction CP6), so that the INSERT that leaves that many small
    files compacts the table."""
    points: dict[str, dict] = {}
    for n in counts:
        location = os.path.join(workdir, "commits", f"lake-{n}")
        log(f"commits: building a table of {n:,} one-row commits"
            + ("" if auto_compact is None else f" (compaction.auto.min-small-files = {auto_compact})"))
        build_s = _build(location, n, log, auto_compact)
        points[str(n)] = {"build_s": build_s, **_measure(location, n, reps, lookups)}
        log(f"  {n:,} commits: {points[str(n)]}")
    if len(counts) > 1:  # issue 34's compaction: the same reads after OPTIMIZE of the last table
        location = os.path.join(workdir, "commits", f"lake-{counts[-1]}")
        optimize_s = _optimize(location)
        points["optimized"] = {"optimize_s": optimize_s, **_measure(location, counts[-1], reps, lookups)}
        log(f"  {counts[-1]:,} commits, then OPTIMIZE: {points['optimized']}")
    base, last = points[str(counts[0])], points[str(counts[-1])]
    result: dict = {"counts": counts, "reps": reps, "lookups": lookups, "points": points,
                    "auto_compact": auto_compact}
    if len(counts) > 1:
        at = f"{counts[-1]:,} one-row commits"
        result["targets"] = [
            targets.at_most(f"point lookup after {at} / after {counts[0]:,}",
                            last["point_lookup_ms"] / base["point_lookup_ms"], SLOWDOWN_MAX, "x"),
            targets.at_most(f"count(*), sum() (new connection) after {at} / after {counts[0]:,}",
                            last["count_new_connection_ms"] / base["count_new_connection_ms"], SLOWDOWN_MAX, "x"),
            targets.at_most(f"planning cache after {at}", last["cache_mb"], PLAN_MB_MAX, " MB"),
            targets.at_most(f"point lookup after {at} and OPTIMIZE / after {counts[0]:,}",
                            points["optimized"]["point_lookup_ms"] / base["point_lookup_ms"], SLOWDOWN_MAX, "x"),
            targets.at_most(f"count(*), sum() (new connection) after {at} and OPTIMIZE / after {counts[0]:,}",
                            points["optimized"]["count_new_connection_ms"] / base["count_new_connection_ms"],
                            SLOWDOWN_MAX, "x"),
        ]  # fmt: skip
    return result
