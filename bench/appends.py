"""Small appends (issue 34): one row per commit, ``commits`` commits to one table, side
by side with PyIceberg 0.12's ``SqlCatalog`` (SQLite) at its defaults.

Sides (bench/data.py's, plus SQL):

* ``trinitylake``: this project's PyIceberg catalog, ``table.append`` of a one-row Arrow
  table through a table object that stays open (one Iceberg snapshot and one durable
  lakehouse version per append; manifests merged, iceberg.writing W5);
* ``trinitylake-dbapi``: ``INSERT INTO ns.t VALUES (?, ?, ?, ?, ?)`` on one autocommit
  connection (the same commit, reached through SQL);
* ``pyiceberg``: SqlCatalog's ``table.append`` of the same one-row table (PyIceberg's
  FileIO never fsyncs; fast append, its default);
* ``pyiceberg-fsync``: the same with this project's FileIO and the same fsyncs.

Per repetition each side gets a fresh directory and the commits run in ``chunks``
chunks alternating between the sides (order reversed every chunk). Reported: median
milliseconds per commit over the whole build, per side; the speedup is the peer's total
time over ours, per repetition (median of repetitions); and the manifests the last
snapshot lists.
"""

from __future__ import annotations

import datetime
import decimal
import os
import statistics
import time
from typing import Any, Callable

from .targets import at_least

#: Issue 34: one-row appends at least this many times faster than SqlCatalog's.
SPEEDUP_MIN = 3.0

COLUMNS_SQL = "id BIGINT, name STRING, amount DOUBLE, day DATE, price DECIMAL(10,2)"


def _row(i: int) -> tuple:
    return (i, f"name {i}", i * 1.5, datetime.date(2026, 1, 1), decimal.Decimal("1.25"))


def _arrow(i: int, schema: Any) -> Any:
    import pyarrow as pa

    return pa.Table.from_pylist([dict(zip(schema.names, _row(i)))], schema=schema)


class _Catalog:
    """A PyIceberg catalog side: one table object kept open, ``append`` per commit."""

    def __init__(self, maker: Callable[[str], Callable[[], Any]], directory: str) -> None:
        import pyarrow as pa

        self.schema = pa.schema([
            pa.field("id", pa.int64()), pa.field("name", pa.string()), pa.field("amount", pa.float64()),
            pa.field("day", pa.date32()), pa.field("price", pa.decimal128(10, 2)),
        ])  # fmt: skip
        catalog = maker(directory)()
        catalog.create_namespace("ns")
        self.table = catalog.create_table("ns.t", self.schema)

    def append(self, i: int) -> None:
        self.table.append(_arrow(i, self.schema))

    def manifests(self) -> int:
        self.table.refresh()
        return len(self.table.current_snapshot().manifests(self.table.io))

    def close(self) -> None:
        pass


class _Sql:
    """The DB-API side: one autocommit connection, a parameterised one-row INSERT."""

    def __init__(self, directory: str) -> None:
        import trinitylake_dbapi

        self.conn = trinitylake_dbapi.connect(os.path.join(directory, "lake"), create=True, autocommit=True)
        self.cur = self.conn.cursor()
        self.cur.execute("CREATE NAMESPACE ns")
        self.cur.execute(f"CREATE TABLE ns.t ({COLUMNS_SQL})")

    def append(self, i: int) -> None:
        self.cur.execute("INSERT INTO ns.t VALUES (?, ?, ?, ?, ?)", _row(i))

    def manifests(self) -> int:
        table = self.conn.iceberg_catalog().load_table("ns.t")
        return len(table.current_snapshot().manifests(table.io))

    def close(self) -> None:
        self.conn.close()


#: The sides, in order; ``appends(..., without=...)`` leaves some out.
NAMES = ("trinitylake", "trinitylake-dbapi", "pyiceberg", "pyiceberg-fsync")


def appends(workdir: str, commits: int, reps: int, chunks: int, log: Callable[[str], None],
            without: tuple[str, ...] = ()) -> dict:  # fmt: skip
    """The figures of the module docstring, ``reps`` repetitions of ``commits`` commits.
    ``without``: sides left out (``pyiceberg-fsync`` halves a 1,000-commit run: SqlCatalog's
    commit copies its whole table metadata about 19 times, so it grows with the history,
    ~0.6 s at 150 commits on a loaded host, and 1,000 commits take ~30 min per peer)."""
    from .data import SIDES

    unknown = set(without) - set(NAMES) | ({"trinitylake", "trinitylake-dbapi", "pyiceberg"} & set(without))
    if unknown:
        raise ValueError(f"appends: cannot leave out {sorted(unknown)}; only pyiceberg-fsync")
    names = [n for n in NAMES if n not in without]
    totals: dict[str, list[float]] = {n: [] for n in names}
    per_commit: dict[str, list[float]] = {n: [] for n in names}
    manifests: dict[str, int] = {}
    for rep in range(reps):
        sides: dict[str, Any] = {}
        for name in names:
            directory = os.path.join(workdir, "appends", f"rep{rep}", name)
            os.makedirs(directory, exist_ok=True)
            sides[name] = _Sql(directory) if name == "trinitylake-dbapi" else _Catalog(SIDES[name], directory)
        spent = {n: 0.0 for n in names}
        times: dict[str, list[float]] = {n: [] for n in names}
        size = -(-commits // chunks)
        for chunk in range(chunks):
            order = names if chunk % 2 == 0 else list(reversed(names))
            for name in order:
                for i in range(chunk * size, min(commits, (chunk + 1) * size)):
                    started = time.perf_counter()
                    sides[name].append(i)
                    elapsed = time.perf_counter() - started
                    spent[name] += elapsed
                    times[name].append(elapsed)
        for name in names:
            totals[name].append(spent[name])
            per_commit[name].append(statistics.median(times[name]))
            manifests[name] = sides[name].manifests()
            sides[name].close()
        log(f"appends: rep {rep + 1}/{reps}: " + ", ".join(f"{n} {spent[n]:.1f} s" for n in names))
    out: dict = {"commits": commits, "reps": reps, "sides": {}}
    for name in names:
        out["sides"][name] = {
            "median_ms_per_commit": statistics.median(per_commit[name]) * 1000,
            "mean_ms_per_commit": statistics.median(totals[name]) / commits * 1000,
            "manifests_at_end": manifests[name],
        }
    speedups = {}
    for ours in ("trinitylake", "trinitylake-dbapi"):
        for peer in [n for n in ("pyiceberg", "pyiceberg-fsync") if n in names]:
            speedups[f"{ours} vs {peer}"] = statistics.median(p / t for p, t in zip(totals[peer], totals[ours]))
    out["speedup"] = speedups
    out["targets"] = [
        at_least(f"one-row appends, {commits:,} commits: catalog API vs SqlCatalog",
                 speedups["trinitylake vs pyiceberg"], SPEEDUP_MIN),
        at_least(f"one-row appends, {commits:,} commits: SQL INSERT vs SqlCatalog",
                 speedups["trinitylake-dbapi vs pyiceberg"], SPEEDUP_MIN),
    ]  # fmt: skip
    return out


def render(c: dict) -> str:
    """Markdown of :func:`appends`' result."""
    lines = ["| side | ms per commit (median) | ms per commit (mean) | manifests at the end |", "|---|---|---|---|"]
    for name, s in c["sides"].items():
        lines.append(f"| {name} | {s['median_ms_per_commit']:.1f} | {s['mean_ms_per_commit']:.1f} | "
                     f"{s['manifests_at_end']} |")  # fmt: skip
    lines += ["", "| speedup (peer's total / ours, per repetition, median) | |", "|---|---|"]
    lines += [f"| {k} | {v:.2f}x |" for k, v in c["speedup"].items()]
    return "\n".join(lines)
