"""Upserts (issue 36): ``upsert_rows`` rows (half updating existing keys spread over the
table, half new keys) into a table of ``rows`` rows (id BIGINT, k BIGINT, v DOUBLE),
each upsert one commit, side by side:

* ``trinitylake-merge``: ``MERGE INTO big USING src ON big.id = src.id WHEN MATCHED
  THEN UPDATE SET k = src.k, v = src.v WHEN NOT MATCHED THEN INSERT VALUES (...)``
  through the DB-API (autocommit), the source a table of the same lakehouse;
* ``trinitylake-on-conflict``: ``INSERT INTO big SELECT * FROM src ON CONFLICT (id) DO
  UPDATE SET k = excluded.k, v = excluded.v`` on a table declaring ``PRIMARY KEY (id)``
  (so its key is also enforced at the commit, iceberg.keys);
* ``trinitylake-pyiceberg``: PyIceberg's ``table.upsert(df, join_cols=["id"])`` through
  this project's catalog (TrinityLakeCatalog);
* ``pyiceberg``: the same ``upsert`` through PyIceberg 0.12's SqlCatalog (SQLite);
* ``ducklake``: the same MERGE on DuckLake (duckdb 1.5.5, bench/ducklake.py's venv and
  worker), when that venv is built.

The source rows are made before the clock starts (a table for the SQL sides, an Arrow
table for the PyIceberg sides), a new set per repetition (other existing keys, other
new keys). Reported: the median seconds per upsert of each side, and each peer's time
over ours (the MERGE) per repetition, median (> 1: we are faster); the sides' row
counts and sums after the last repetition are checked equal.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any, Callable

OURS = "trinitylake-merge"
MERGE = (
    "MERGE INTO {big} AS t USING {src} AS s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET k = s.k, v = s.v "
    "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.k, s.v)"
)


def _source_sql(rows: int, n: int, rep: int) -> str:
    """SELECT of repetition ``rep``'s source rows: ``n // 2`` existing keys spread over
    the table (a different offset per repetition) and ``n - n // 2`` new keys."""
    half = n // 2
    stride = max(1, rows // max(1, half))
    return (
        f"SELECT CASE WHEN i < {half} THEN i * {stride} + {rep + 1} ELSE {rows} + {rep * n} + i END AS id, "
        f"CAST({rep + 100} AS BIGINT) AS k, i * 0.5 AS v FROM (SELECT range AS i FROM range({n})) r"
    )


def _arrow(sql: str) -> Any:
    import duckdb
    import pyarrow as pa

    table = duckdb.sql(sql).arrow()
    table = table.read_all() if hasattr(table, "read_all") else table
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.int64()), ("v", pa.float64())])
    return table.cast(schema)


class _Sql:
    """A SQL side (ours in process, DuckLake in its worker)."""

    def __init__(self, side: Any, names: dict[str, str]) -> None:
        self.side, self.names = side, names

    def build(self, rows: int) -> None:
        self.side.call("execute", self.names["schema"])
        self.side.call("execute", f"CREATE TABLE {self.names['big']} AS SELECT range AS id, range % 100 AS k, "
                                  f"(range % 997) * 1.5 AS v FROM range({rows})")  # fmt: skip

    def prepare(self, rows: int, n: int, rep: int) -> None:
        self.side.call("execute", f"CREATE TABLE {self.names['src']}{rep} AS {_source_sql(rows, n, rep)}")

    def upsert(self, rep: int) -> float:
        seconds, _ = self.side.call("execute", MERGE.format(big=self.names["big"], src=f"{self.names['src']}{rep}"))
        return seconds

    def totals(self) -> tuple:
        _, rows = self.side.call("execute", f"SELECT count(*), sum(k), sum(v) FROM {self.names['big']}")
        return tuple(float(x) for x in rows[0])

    def close(self) -> None:
        self.side.close()


class _OnConflict(_Sql):
    """Ours, on a keyed table: INSERT ... ON CONFLICT DO UPDATE."""

    def build(self, rows: int) -> None:
        self.side.call("execute", self.names["schema"])
        self.side.call("execute", f"CREATE TABLE {self.names['big']} (id BIGINT NOT NULL, k BIGINT, v DECIMAL(21, 1), "
                                  "PRIMARY KEY (id))")  # fmt: skip
        self.side.call("execute", f"INSERT INTO {self.names['big']} SELECT range, range % 100, (range % 997) * 1.5 "
                                  f"FROM range({rows})")  # fmt: skip

    def upsert(self, rep: int) -> float:
        seconds, _ = self.side.call(
            "execute", f"INSERT INTO {self.names['big']} SELECT * FROM {self.names['src']}{rep} "
                       "ON CONFLICT (id) DO UPDATE SET k = excluded.k, v = excluded.v")  # fmt: skip
        return seconds


class _PyIceberg:
    """A PyIceberg catalog side: ``table.upsert``."""

    def __init__(self, maker: Callable[[str], Callable[[], Any]], directory: str) -> None:
        self.catalog = maker(directory)()
        self.sources: dict[int, Any] = {}

    def build(self, rows: int) -> None:
        data = _arrow(f"SELECT range AS id, range % 100 AS k, (range % 997) * 1.5 AS v FROM range({rows})")
        self.catalog.create_namespace("ns")
        self.table = self.catalog.create_table("ns.big", data.schema)
        self.table.append(data)

    def prepare(self, rows: int, n: int, rep: int) -> None:
        self.sources[rep] = _arrow(_source_sql(rows, n, rep))

    def upsert(self, rep: int) -> float:
        started = time.perf_counter()
        self.table.upsert(self.sources[rep], join_cols=["id"])
        return time.perf_counter() - started

    def totals(self) -> tuple:
        import pyarrow.compute as pc

        data = self.table.refresh().scan().to_arrow()
        return (float(data.num_rows), float(pc.sum(data["k"]).as_py()), float(pc.sum(data["v"]).as_py()))

    def close(self) -> None:
        pass


def upsert(workdir: str, python: str | None, rows: int, upsert_rows: int, reps: int,
           log: Callable[[str], None]) -> dict:  # fmt: skip
    """The figures of the module docstring (``python``: the DuckLake venv's, or None)."""
    from .data import SIDES
    from .ducklake import InProcess, Worker

    base = os.path.join(workdir, "upsert")
    sides: dict[str, Any] = {}
    try:
        sides[OURS] = _Sql(InProcess(os.path.join(base, "tl-merge")),
                           {"schema": "CREATE NAMESPACE ns", "big": "ns.big", "src": "ns.src"})  # fmt: skip
        sides["trinitylake-on-conflict"] = _OnConflict(
            InProcess(os.path.join(base, "tl-on-conflict")), {"schema": "CREATE NAMESPACE ns", "big": "ns.big", "src": "ns.src"}
        )
        for name in ("trinitylake", "pyiceberg"):
            directory = os.path.join(base, name)
            os.makedirs(directory, exist_ok=True)
            sides[f"{name}-pyiceberg" if name == "trinitylake" else name] = _PyIceberg(SIDES[name], directory)
        if python is not None:
            sides["ducklake"] = _Sql(Worker(python, "ducklake", os.path.join(base, "ducklake")),
                                     {"schema": "CREATE SCHEMA lake.ns", "big": "lake.ns.big", "src": "lake.ns.src"})
        for name, side in sides.items():
            started = time.perf_counter()
            side.build(rows)
            log(f"upsert: {name} built {rows:,} rows in {time.perf_counter() - started:.1f} s")
        times: dict[str, list[float]] = {n: [] for n in sides}
        for rep in range(reps):
            order = list(sides) if rep % 2 == 0 else list(reversed(sides))
            for name in order:
                sides[name].prepare(rows, upsert_rows, rep)
                times[name].append(sides[name].upsert(rep))
            log(f"upsert: rep {rep + 1}/{reps}: " + ", ".join(f"{n} {times[n][-1]:.2f} s" for n in sides))
        totals = {name: side.totals() for name, side in sides.items()}
        first = totals[OURS]
        for name, found in totals.items():
            if any(abs(a - b) > 1e-6 * max(1.0, abs(a)) for a, b in zip(found, first)):
                raise AssertionError(f"upsert: {name} holds {found} after the upserts, {OURS} {first}")
    finally:
        for side in sides.values():
            side.close()
    out: dict = {"rows": rows, "upsert_rows": upsert_rows, "reps": reps, "sides": {}}
    for name, spent in times.items():
        out["sides"][name] = {
            "median_seconds": statistics.median(spent),
            "peer_over_ours": statistics.median(p / o for p, o in zip(spent, times[OURS])),
        }
    if python is None:
        out["ducklake_skipped"] = "the DuckLake venv is not built (run `python -m bench --only ducklake` once)"
    return out


def render(c: dict) -> str:
    """Markdown of :func:`upsert`'s result."""
    lines = ["| side | seconds per upsert (median) | its time / MERGE's (median) |", "|---|---|---|"]
    for name, s in c["sides"].items():
        lines.append(f"| {name} | {s['median_seconds']:.3f} | {s['peer_over_ours']:.2f}x |")
    if c.get("ducklake_skipped"):
        lines += ["", f"DuckLake not measured: {c['ducklake_skipped']}."]
    return "\n".join(lines)
