"""Tables that hold data: append and load_table, side by side with PyIceberg's SqlCatalog.

Both sides get the same data (a 10-column batch of ``rows`` rows, written as Parquet by
PyIceberg itself) and run interleaved (order reversed every repetition). The TrinityLake
side is the PyIceberg catalog of this project, whose FileIO fsyncs every file a commit
references before the root that publishes it. The peer is PyIceberg 0.12's
``SqlCatalog`` on a SQLite file, twice: with PyIceberg's own FileIO (which never
fsyncs: the durability differs, in its favour), and with this project's FileIO and the
same fsyncs around its commit ("pyiceberg-fsync": the same durability).

Measured per repetition: one ``append`` of the batch through a table object that stays
open, as a pipeline's does (a new Iceberg snapshot and, on our side, a new lakehouse
version), and one ``load_table`` of the table from a fresh catalog object in this
process (what a query does first).
"""

from __future__ import annotations

import datetime
import decimal
import os
import statistics
import time
from typing import Any, Callable

import pyarrow as pa


def batch(rows: int, offset: int) -> pa.Table:
    """``rows`` rows of the benchmark's 10-column schema (COLUMNS in sides.py)."""
    ids = range(offset, offset + rows)
    return pa.table({
        "c_long": pa.array(ids, pa.int64()),
        "c_str": [f"name-{i}" for i in ids],
        "c_dbl": [i * 0.5 for i in ids],
        "c_ts": [datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=i) for i in ids],
        "c_dec": pa.array([decimal.Decimal(i % 10_000) / 100 for i in ids], pa.decimal128(10, 2)),
        "c_bool": [i % 2 == 0 for i in ids],
        "c_date": [datetime.date(2026, 1, 1) + datetime.timedelta(days=i % 365) for i in ids],
        "c_list": [[f"t{i % 7}"] for i in ids],
        "c_map": pa.array([[("k", i % 100)] for i in ids], pa.map_(pa.string(), pa.int32())),
        "c_struct": [{"a": i % 1000, "b": "x"} for i in ids],
    })  # fmt: skip


def _trinitylake(directory: str) -> Callable[[], Any]:
    from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

    uri = os.path.join(directory, "lake")
    TrinityLakeCatalog("bench", uri=uri, create="true")
    return lambda: TrinityLakeCatalog("bench", uri=uri)


def _sql_catalog_properties(directory: str) -> dict[str, str]:
    os.makedirs(os.path.join(directory, "warehouse"), exist_ok=True)
    return {
        "uri": f"sqlite:///{os.path.join(directory, 'catalog.db')}",
        "warehouse": "file://" + os.path.abspath(os.path.join(directory, "warehouse")),
    }


def _pyiceberg(directory: str) -> Callable[[], Any]:
    from pyiceberg.catalog.sql import SqlCatalog

    properties = _sql_catalog_properties(directory)
    return lambda: SqlCatalog("bench", **properties)


def _pyiceberg_durable(directory: str) -> Callable[[], Any]:
    """The peer with our durability: this project's FileIO, and every file it wrote
    fsynced before SQLite commits the new metadata location (as our commit does)."""
    from pyiceberg.catalog.sql import SqlCatalog

    from trinitylake_dbapi.iceberg.io import DurableFileIO

    class DurableSqlCatalog(SqlCatalog):
        def commit_table(self, table: Any, requirements: Any, updates: Any) -> Any:
            sync = getattr(table.io, "sync_written", None)
            if sync is not None:
                sync()  # data, manifests, manifest list
            response = super().commit_table(table, requirements, updates)  # writes the metadata file
            if sync is not None:
                sync()  # the metadata file (after the row that names it: SQLite commits first)
            return response

    properties = {**_sql_catalog_properties(directory), "py-io-impl": f"{DurableFileIO.__module__}.DurableFileIO"}
    return lambda: DurableSqlCatalog("bench", **properties)


SIDES = {"trinitylake": _trinitylake, "pyiceberg": _pyiceberg, "pyiceberg-fsync": _pyiceberg_durable}


def data(workdir: str, rows: int, reps: int, log: Callable[[str], None]) -> dict:
    """Median seconds of ``append`` and ``load_table`` per side, over ``reps`` interleaved
    repetitions, plus the ratio PyIceberg / TrinityLake."""
    opens = {}
    tables = {}
    for name, maker in SIDES.items():
        opens[name] = maker(os.path.join(workdir, "data", name))
        catalog = opens[name]()
        catalog.create_namespace("ns")
        tables[name] = catalog.create_table("ns.t", batch(1, 0).schema)
        tables[name].append(batch(rows, 0))  # warm: first-use imports and caches
    timings: dict[str, dict[str, list[float]]] = {n: {"append": [], "load_table": []} for n in SIDES}
    for rep in range(reps):
        order = list(SIDES) if rep % 2 == 0 else list(reversed(SIDES))
        for name in order:
            data_batch = batch(rows, (rep + 1) * rows)
            started = time.perf_counter()
            tables[name].append(data_batch)
            timings[name]["append"].append(time.perf_counter() - started)
            fresh = opens[name]()  # a new catalog object: no cached metadata
            started = time.perf_counter()
            fresh.load_table("ns.t")
            timings[name]["load_table"].append(time.perf_counter() - started)
        log(f"data: rep {rep + 1}/{reps}")
    out: dict = {"rows": rows, "reps": reps, "operations": {}}
    for op in ("append", "load_table"):
        sides = {n: statistics.median(timings[n][op]) for n in SIDES}
        speedups = {
            peer: statistics.median(p / t for p, t in zip(timings[peer][op], timings["trinitylake"][op]))
            for peer in SIDES
            if peer != "trinitylake"
        }
        out["operations"][op] = {"median_seconds": sides, "speedup": speedups}
    counts = {n: opens[n]().load_table("ns.t").scan().to_arrow().num_rows for n in SIDES}
    assert len(set(counts.values())) == 1, counts  # the same data on both sides
    out["rows_in_table"] = counts["trinitylake"]
    return out
