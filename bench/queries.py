"""SQL over table data through the DB-API, side by side with its peers (issue 18, point 7).

Two workloads, each run interleaved (the order of the sides reversed every repetition),
medians reported, and ratios taken per repetition:

* **aggregate**: ``SELECT k, count(*), sum(v), min(id) FROM ns.t GROUP BY k`` over a
  table of ``rows`` rows (ids, 100 groups, a DOUBLE), fetched to the end. The DB-API
  resolves the table at the latest lakehouse version and runs the query in DuckDB over
  the Iceberg snapshot's data files. Its peers run the same query in DuckDB (the same
  duckdb in this venv, one persistent connection) over the same data files:
  ``duckdb`` with the file list known in advance (``read_parquet`` only: a floor), and
  ``pyiceberg+duckdb`` planning the files from the table's Iceberg metadata on each
  query (PyIceberg ``plan_files`` on a table loaded once, then ``read_parquet``), which
  is what DuckDB's iceberg extension does per query (the extension only loads into
  duckdb 1.5.5, not the 2.x this project uses).
* **insert**: ``insert_rows`` rows per commit (5 columns: BIGINT, STRING, DOUBLE, DATE,
  DECIMAL(10,2)) from the same Python rows: the DB-API's ``executemany`` of
  ``INSERT ... VALUES (?, ...)`` in autocommit (one append, one lakehouse version) vs
  PyIceberg 0.12 ``SqlCatalog`` (SQLite) ``append`` of an Arrow table built from those
  rows (the conversion is timed with it), with PyIceberg's FileIO (no fsync) and with
  this project's FileIO and the same fsyncs ("pyiceberg-fsync", as in bench/data.py).
  Beside them, the DB-API's ``execute`` of the same rows as one multi-row
  ``INSERT ... VALUES (?, ...), (?, ...), ...`` with every value a parameter (what
  pandas' ``to_sql(method="multi")`` sends), its text new on every repetition so that
  no parse is reused: ``multi_vs_executemany`` is its time / ``executemany``'s (issue 32
  item 10: at most MULTI_ROW_MAX).

DuckLake (duckdb 1.5.5 with its extension, in a venv of its own) is measured in bench/ducklake.py.
"""

from __future__ import annotations

import datetime
import decimal
import os
import statistics
import time
from typing import Any, Callable

from .targets import at_most

AGGREGATE = "SELECT k, count(*), sum(v), min(id) FROM {table} GROUP BY k"
INSERT_COLUMNS = "id BIGINT, name STRING, amount DOUBLE, day DATE, price DECIMAL(10,2)"
#: Issue 32 item 10: a multi-row VALUES insert takes at most this many times executemany's time.
MULTI_ROW_MAX = 1.5


#: The side that inserts the rows as one multi-row VALUES statement.
MULTI_SIDE = "trinitylake-dbapi-multi-row"


def rows_for_insert(count: int, offset: int) -> list[tuple]:
    """``count`` rows of INSERT_COLUMNS, ids from ``offset`` (the same rows on every side)."""
    day = datetime.date(2026, 1, 1)
    return [
        (i, f"name-{i}", i * 0.25, day + datetime.timedelta(days=i % 365), decimal.Decimal(i % 100_000) / 100)
        for i in range(offset, offset + count)
    ]


def _arrow(rows: list[tuple]) -> Any:
    import pyarrow as pa

    columns = list(zip(*rows))
    return pa.table({
        "id": pa.array(columns[0], pa.int64()), "name": pa.array(columns[1], pa.string()),
        "amount": pa.array(columns[2], pa.float64()), "day": pa.array(columns[3], pa.date32()),
        "price": pa.array(columns[4], pa.decimal128(10, 2)),
    })  # fmt: skip


def _median_ratio(peer: list[float], ours: list[float]) -> float:
    return statistics.median(o / p for o, p in zip(ours, peer))


def aggregate(workdir: str, rows: int, reps: int, log: Callable[[str], None]) -> dict:
    import duckdb

    import trinitylake_dbapi
    from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

    location = os.path.join(workdir, "queries", "lake")
    conn = trinitylake_dbapi.connect(location, create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute(f"CREATE TABLE ns.t AS SELECT range AS id, range % 100 AS k, (range % 997) * 1.5 AS v "
                f"FROM range({rows})")  # fmt: skip
    table = TrinityLakeCatalog("bench", uri=location).load_table(("ns", "t"))

    def files() -> list[str]:
        return [task.file.file_path.removeprefix("file://") for task in table.scan().plan_files()]

    known = files()
    peer = duckdb.connect()

    def dbapi() -> list:
        c = conn.cursor()
        c.execute(AGGREGATE.format(table="ns.t"))
        out = c.fetchall()
        c.close()
        return out

    def direct(paths: list[str]) -> list:
        return peer.execute(AGGREGATE.format(table=f"read_parquet({paths!r})")).fetchall()

    sides: dict[str, Callable[[], list]] = {
        "trinitylake-dbapi": dbapi,
        "duckdb": lambda: direct(known),
        "pyiceberg+duckdb": lambda: direct(files()),
    }
    expected = sorted(sides["duckdb"]())
    for name, run in sides.items():  # warm: imports, caches, and the same answer everywhere
        assert sorted(run()) == expected, name
    timings: dict[str, list[float]] = {name: [] for name in sides}
    for rep in range(reps):
        order = list(sides) if rep % 2 == 0 else list(reversed(sides))
        for name in order:
            started = time.perf_counter()
            sides[name]()
            timings[name].append(time.perf_counter() - started)
        log(f"queries: aggregate rep {rep + 1}/{reps}")
    conn.close()
    peer.close()
    return {
        "rows": rows,
        "data_files": len(known),
        "median_seconds": {n: statistics.median(t) for n, t in timings.items()},
        "ratio": {p: _median_ratio(timings[p], timings["trinitylake-dbapi"]) for p in sides if p != "trinitylake-dbapi"},
    }


def insert(workdir: str, rows: int, reps: int, log: Callable[[str], None]) -> dict:
    import trinitylake_dbapi

    from .data import SIDES

    location = os.path.join(workdir, "queries", "insert-lake")
    conn = trinitylake_dbapi.connect(location, create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute(f"CREATE TABLE ns.t ({INSERT_COLUMNS})")
    sql = "INSERT INTO ns.t VALUES (?, ?, ?, ?, ?)"
    tables = {}
    for name in ("pyiceberg", "pyiceberg-fsync"):
        catalog = SIDES[name](os.path.join(workdir, "queries", name))()
        catalog.create_namespace("ns")
        tables[name] = catalog.create_table("ns.t", _arrow(rows_for_insert(1, 0)).schema)

    def dbapi(batch: list[tuple]) -> None:
        cur.executemany(sql, batch)

    texts = iter(range(1_000_000))

    def dbapi_multi(batch: list[tuple]) -> None:
        # A text never seen before (trailing spaces differ), so no parse is reused.
        multi = "INSERT INTO ns.t VALUES " + ", ".join(["(?, ?, ?, ?, ?)"] * len(batch)) + " " * next(texts)
        cur.execute(multi, [v for row in batch for v in row])

    def pyiceberg(name: str) -> Callable[[list[tuple]], None]:
        return lambda batch: tables[name].append(_arrow(batch))

    sides: dict[str, Callable[[list[tuple]], None]] = {
        "trinitylake-dbapi": dbapi,
        MULTI_SIDE: dbapi_multi,
        "pyiceberg": pyiceberg("pyiceberg"),
        "pyiceberg-fsync": pyiceberg("pyiceberg-fsync"),
    }
    for run in sides.values():  # warm
        run(rows_for_insert(rows, 0))
    timings: dict[str, list[float]] = {name: [] for name in sides}
    for rep in range(reps):
        batch = rows_for_insert(rows, (rep + 1) * rows)
        order = list(sides) if rep % 2 == 0 else list(reversed(sides))
        for name in order:
            started = time.perf_counter()
            sides[name](batch)
            timings[name].append(time.perf_counter() - started)
        log(f"queries: insert rep {rep + 1}/{reps}")
    cur.execute("SELECT count(*), sum(id) FROM ns.t")
    ours = cur.fetchone()
    conn.close()
    for name, t in tables.items():
        arrow = t.refresh().scan().to_arrow()
        count, total = arrow.num_rows, sum(arrow["id"].to_pylist())
        assert (count * 2, total * 2) == ours, name  # the same rows, inserted twice (executemany, multi)
    multi_ratio = _median_ratio(timings["trinitylake-dbapi"], timings[MULTI_SIDE])
    return {
        "rows": rows,
        "median_seconds": {n: statistics.median(t) for n, t in timings.items()},
        "ratio": {p: _median_ratio(timings[p], timings["trinitylake-dbapi"])
                  for p in sides if p not in ("trinitylake-dbapi", MULTI_SIDE)},  # fmt: skip
        "multi_vs_executemany": multi_ratio,
        "targets": [at_most(f"multi-row VALUES INSERT of {rows:,} rows / executemany", multi_ratio, MULTI_ROW_MAX, "x")],
    }


def queries(workdir: str, rows: int, insert_rows: int, reps: int, log: Callable[[str], None]) -> dict:
    """Both workloads; ``ratio`` is DB-API time / peer time (per repetition, median)."""
    aggregated = aggregate(workdir, rows, reps, log)
    inserted = insert(workdir, insert_rows, reps, log)
    return {
        "reps": reps,
        "aggregate": aggregated,
        "insert": inserted,
        "targets": inserted.pop("targets"),
    }
