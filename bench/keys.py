"""The cost of enforced primary keys (issue 36; iceberg.keys PK5): INSERTs through the
DB-API (autocommit) into a table of ``rows`` rows, with a PRIMARY KEY and without one
(the same columns and rows; the difference is the check).

Workloads, each a new set of keys per repetition:

* **bulk, new keys above**: ``insert_rows`` keys greater than every key of the table
  (``executemany``, one append): the key bounds prune every existing file;
* **bulk, new keys among**: ``insert_rows`` odd keys spread over the whole range of the
  table's even keys: every existing file might hold one, so their key columns are read
  (the filter is the keys' range: PK5) and joined in DuckDB;
* **one row among**: one odd key inside the range (a point: bounds prune to the files
  whose range holds it, row groups by the same filter).

Before the repetitions each side inserts 100 negative keys, untimed (imports, the
check's DuckDB connection, caches). The table is built once per side by PyIceberg appends of 100,000 rows through the
project's catalog (so the keyed side's build is checked too). Reported: median ms per
statement on each side and the keyed side's overhead.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Callable

BUILD_BATCH = 100_000


def _build(location: str, keyed: bool, rows: int) -> float:
    import pyarrow as pa

    import trinitylake_dbapi

    started = time.perf_counter()
    conn = trinitylake_dbapi.connect(location, create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute(f"CREATE TABLE ns.t (id BIGINT{' PRIMARY KEY' if keyed else ''}, name STRING, amount DOUBLE)")
    table = conn.iceberg_catalog().load_table("ns.t")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=not keyed), ("name", pa.string()),
                        ("amount", pa.float64())])  # fmt: skip
    for start in range(0, rows, BUILD_BATCH):
        ids = list(range(2 * start, 2 * min(rows, start + BUILD_BATCH), 2))  # even keys
        table.append(pa.table({"id": ids, "name": [f"n{i}" for i in ids], "amount": [i * 0.5 for i in ids]},
                              schema=schema))  # fmt: skip
    conn.close()
    return time.perf_counter() - started


def keys(workdir: str, rows: int, insert_rows: int, reps: int, log: Callable[[str], None]) -> dict:
    """The workloads of the module docstring, ``reps`` interleaved repetitions."""
    import trinitylake_dbapi

    sides = {"keyed": True, "no key": False}
    connections = {}
    build = {}
    for name, keyed in sides.items():
        location = os.path.join(workdir, "keys", name.replace(" ", "-"))
        log(f"keys: building {rows:,} rows ({name})")
        build[name] = _build(location, keyed, rows)
        connections[name] = trinitylake_dbapi.connect(location, autocommit=True)
    for i, c in enumerate(connections.values()):  # warm-up, untimed: imports, DuckDB connections, caches
        c.cursor().executemany("INSERT INTO ns.t VALUES (?, ?, ?)", [(-1 - k, "warm", 0.0) for k in range(100)])
    top = 2 * rows
    sql = "INSERT INTO ns.t VALUES (?, ?, ?)"
    times: dict[str, dict[str, list[float]]] = {w: {s: [] for s in sides} for w in ("above", "among", "one")}
    for rep in range(reps):
        above = [top + 2 * (rep * insert_rows + i) for i in range(insert_rows)]  # later reps above earlier ones
        # odd keys: 1 mod 4 spread over the range, 3 mod 4 for the one row; 4 * rep apart per rep
        stride = max(4 * reps, (top // insert_rows) // (4 * reps) * (4 * reps))
        among = [k for k in (1 + 4 * rep + stride * i for i in range(insert_rows)) if k < top]
        one = 3 + 4 * rep + stride * (insert_rows // 2)
        for name in (list(sides) if rep % 2 == 0 else list(reversed(list(sides)))):
            cur = connections[name].cursor()
            for workload, params in (("above", above), ("among", among), ("one", [one])):
                rows_ = [(k, f"n{k}", k * 0.5) for k in params]
                started = time.perf_counter()
                cur.executemany(sql, rows_)
                times[workload][name].append(time.perf_counter() - started)
        log(f"  keys rep {rep + 1}/{reps}")
    for c in connections.values():
        c.close()
    result: dict = {"rows": rows, "insert_rows": insert_rows, "reps": reps, "build_s": build, "workloads": {}}
    for workload, by_side in times.items():
        keyed_ms = statistics.median(by_side["keyed"]) * 1000
        plain_ms = statistics.median(by_side["no key"]) * 1000
        result["workloads"][workload] = {"keyed_ms": keyed_ms, "no_key_ms": plain_ms, "overhead_ms": keyed_ms - plain_ms}
    return result


LABELS = {
    "above": "INSERT {n:,} new keys above the table's (executemany)",
    "among": "INSERT {n:,} new keys spread among the table's (executemany)",
    "one": "INSERT one new key inside the table's range",
}


def render(result: dict) -> str:
    """The section's Markdown table."""
    lines = ["| statement | PRIMARY KEY | no key | check's cost |", "|---|---|---|---|"]
    for workload, w in result["workloads"].items():
        lines.append(f"| {LABELS[workload].format(n=result['insert_rows'])} | {w['keyed_ms']:.1f} ms | "
                     f"{w['no_key_ms']:.1f} ms | {w['overhead_ms']:+.1f} ms |")  # fmt: skip
    build = ", ".join(f"{k} {v:.1f} s" for k, v in result["build_s"].items())
    lines += ["", f"Table of {result['rows']:,} rows built by appends of {BUILD_BATCH:,} ({build}); medians of "
              f"{result['reps']} interleaved repetitions, autocommit (one commit per statement)."]
    return "\n".join(lines)
