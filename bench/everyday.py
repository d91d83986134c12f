"""Issue 34's workloads against DuckLake: the everyday DB-API workload (small commits,
then reads by key) and DML over a million rows, side by side and interleaved.

Both sides run through SQL: ours is the DB-API in this process (autocommit,
``lakeworker.TrinityLakeEngine``), DuckLake 1.0 runs in its own venv and worker process
(bench/ducklake.py builds both; ``lakeworker.DuckLakeEngine``, duckdb 1.5.5 at its
defaults: small inserts are inlined in its catalog). Each engine times every statement
itself (``each``: one ``perf_counter`` around a statement and the fetch of its rows), so
no pipe round trip is in a number. Same disk, one directory per side.

Workloads (the rows of issue 34's table), each statement its own commit:

* ``insert``: one-row ``INSERT INTO small VALUES (?, ?, ?, ?)`` (BIGINT, VARCHAR,
  DOUBLE, DATE), ``commits`` times, in chunks alternating between the sides;
* ``count``: ``SELECT count(*), sum(amount)`` over that table (same connection);
* ``lookup``: ``SELECT id, name FROM small WHERE id = ?``, a new key each time;
* over ``rows`` rows made by the same ``CREATE TABLE AS SELECT`` on both sides (id,
  k = id % 100, v): the GROUP BY of bench/queries.py, a selective range filter
  (``WHERE id >= a AND id < a + 1000``, a new ``a`` each time), ``UPDATE ... SET v = v +
  1 WHERE id % 100 = k`` (1 % of the rows, a new k each repetition), ``DELETE ... WHERE
  id % 100 = k`` (another 1 %), and the GROUP BY again after them.

Per repetition the sides alternate which goes first. Reported: the median seconds per
statement of each side, and ratio = DuckLake's time / ours per repetition, median
(> 1: we are faster); both sides' answers are checked equal.
"""

from __future__ import annotations

import datetime
import os
import statistics
from typing import Any, Callable

from . import targets

#: Issue 34: every workload at least as fast as DuckLake at its defaults (bench/targets.py).
SPEEDUP_MIN = targets.EVERYDAY_MIN
OURS, PEER = "trinitylake-dbapi", "ducklake"

SQL = {
    OURS: {"schema": "CREATE NAMESPACE ns", "small": "ns.small", "big": "ns.big", "varchar": "STRING"},
    PEER: {"schema": "CREATE SCHEMA lake.ns", "small": "lake.ns.small", "big": "lake.ns.big", "varchar": "VARCHAR"},
}  # fmt: skip
AGGREGATE = "SELECT k, count(*), sum(v), min(id) FROM {big} GROUP BY k"
LABELS = {
    "insert": "one-row INSERT ... VALUES (?, ?, ?, ?), one commit each",
    "count": "SELECT count(*), sum(amount) after the one-row commits",
    "lookup": "SELECT id, name ... WHERE id = ? after the one-row commits",
    "group_by": "GROUP BY over {rows:,} rows",
    "range": "selective range filter (1,000 rows) over {rows:,} rows",
    "update": "UPDATE 1% of {rows:,} rows (WHERE id % 100 = k)",
    "delete": "DELETE 1% of {rows:,} rows (WHERE id % 100 = k)",
    "group_by_after": "the GROUP BY after those UPDATEs and DELETEs",
}


def _row(i: int) -> tuple:
    return (i, f"name {i}", i * 1.5, datetime.date(2026, 1, 1) + datetime.timedelta(days=i % 365))


def _normalized(rows: Any) -> list:
    return sorted(tuple(float(v) if isinstance(v, float) or type(v).__name__ == "Decimal" else v for v in r)
                  for r in rows or [])  # fmt: skip


def everyday(workdir: str, python: str, commits: int, rows: int, reps: int, queries: int, chunks: int,
             log: Callable[[str], None]) -> dict:  # fmt: skip
    """The workloads of the module docstring: ``commits`` one-row INSERTs in ``chunks``
    alternating chunks, ``queries`` counts and lookups per repetition, ``reps``
    repetitions of the million-row workloads (``rows`` rows)."""
    from .ducklake import InProcess, Worker

    sides: dict[str, Any] = {}
    times: dict[str, dict[str, list[float]]] = {w: {OURS: [], PEER: []} for w in LABELS}
    try:
        sides[OURS] = InProcess(os.path.join(workdir, "everyday", "tl-dbapi"))
        sides[PEER] = Worker(python, "ducklake", os.path.join(workdir, "everyday", "ducklake"))
        for name, side in sides.items():
            s = SQL[name]
            side.call("execute", s["schema"])
            side.call("execute", f"CREATE TABLE {s['small']} (id BIGINT, name {s['varchar']}, amount DOUBLE, day DATE)")
            side.call("execute", f"CREATE TABLE {s['big']} AS SELECT range AS id, range % 100 AS k, "
                                 f"(range % 997) * 1.5 AS v FROM range({rows})")  # fmt: skip

        def order(i: int) -> list[str]:
            return [OURS, PEER] if i % 2 == 0 else [PEER, OURS]

        def each(name: str, sql: str, params: list, workload: str) -> list:
            _, (seconds, answers) = sides[name].call("each", sql.format(**SQL[name]), params)
            times[workload][name].append(statistics.median(seconds))
            return answers

        per_chunk = max(1, commits // chunks)
        for chunk in range(chunks):
            batch = [_row(i) for i in range(chunk * per_chunk, (chunk + 1) * per_chunk)]
            for name in order(chunk):
                each(name, "INSERT INTO {small} VALUES (?, ?, ?, ?)", batch, "insert")
        log(f"everyday: {chunks * per_chunk} one-row commits per side")
        inserted = chunks * per_chunk
        answers: dict[str, dict[str, list]] = {OURS: {}, PEER: {}}
        for rep in range(reps):
            keys = [((rep * queries + j) * 7919) % inserted for j in range(queries)]
            starts = [((rep * queries + j) * 104_729) % max(1, rows - 1000) for j in range(queries)]
            for name in order(rep):
                got = answers[name]
                got["count"] = each(name, "SELECT count(*), sum(amount) FROM {small}", [()] * queries, "count")
                got.setdefault("lookup", []).extend(
                    each(name, "SELECT id, name FROM {small} WHERE id = ?", [(k,) for k in keys], "lookup"))
                got["group_by"] = each(name, AGGREGATE, [()], "group_by")
                got.setdefault("range", []).extend(each(
                    name, "SELECT id, k, v FROM {big} WHERE id >= ? AND id < ? + 1000",
                    [(a, a) for a in starts], "range"))
                each(name, "UPDATE {big} SET v = v + 1 WHERE id % 100 = ?", [(1 + rep,)], "update")
                each(name, "DELETE FROM {big} WHERE id % 100 = ?", [(50 + rep,)], "delete")
                got["group_by_after"] = each(name, AGGREGATE, [()], "group_by_after")
            log(f"everyday: rep {rep + 1}/{reps}")
        for workload in answers[OURS]:
            ours = [_normalized(a) for a in answers[OURS][workload]]
            peer = [_normalized(a) for a in answers[PEER][workload]]
            if ours != peer:
                raise AssertionError(f"everyday: {workload} answers differ between the sides")
    finally:
        for side in sides.values():
            side.close()
    out: dict = {"commits": inserted, "rows": rows, "reps": reps, "queries": queries, "workloads": {}}
    for workload, per_side in times.items():
        label = LABELS[workload].format(rows=rows)
        ratio = statistics.median(p / o for o, p in zip(per_side[OURS], per_side[PEER]))
        out["workloads"][label] = {"median_seconds": {n: statistics.median(t) for n, t in per_side.items()},
                                   "speedup": ratio}  # fmt: skip
    out["targets"] = targets.everyday(out)
    return out


def render(summary: dict) -> str:
    """The section's table (ms per statement, medians; ratio = DuckLake / ours)."""
    if "skipped" in summary:
        return f"Not measured: {summary['skipped']}."
    lines = ["| workload | TrinityLake DB-API | DuckLake | ratio | target |", "|---|---|---|---|---|"]
    for label, w in summary["workloads"].items():
        m = w["median_seconds"]
        mark = " ✓" if w["speedup"] >= SPEEDUP_MIN else " ✗"
        lines.append(f"| {label} | {m[OURS] * 1000:.1f} ms | {m[PEER] * 1000:.1f} ms | {w['speedup']:.2f}x{mark} "
                     f"| >= {SPEEDUP_MIN:g}x |")  # fmt: skip
    return "\n".join(lines)
