"""Worker functions for the Iceberg crash tests (run in processes forked by the zygote).

Importing this module imports PyIceberg's writer, so forked children start warm.
"""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pyiceberg.io.pyarrow  # noqa: F401 - warm import for the zygote's children
import pyiceberg.table  # noqa: F401

from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

SCHEMA = pa.schema([("id", pa.int64()), ("worker", pa.int32())])


def appender(location: str, table: str, worker: int, log_path: str, deadline: float, pause: float = 0.0,
             ready_path: str | None = None) -> None:
    """Append batches of 3 rows with ids unique to this worker until ``deadline``; after
    each append returns, log its ids (one JSON line, fsynced): an acknowledged append.
    ``pause``: seconds between appends. ``ready_path``: a file created when the table is
    loaded, just before the first append (a killer waiting for it kills inside appends,
    not in the start-up)."""
    catalog = TrinityLakeCatalog("crash", uri=location)
    target = catalog.load_table(table)
    if ready_path is not None:
        open(ready_path, "x").close()
    with open(log_path, "a", encoding="utf-8") as log:
        n = 0
        while time.time() < deadline:
            ids = [worker * 1_000_000 + n * 3 + k for k in range(3)]
            target.append(pa.table({"id": pa.array(ids, pa.int64()), "worker": pa.array([worker] * 3, pa.int32())}))
            log.write(json.dumps(ids) + "\n")
            log.flush()
            os.fsync(log.fileno())
            n += 1
            time.sleep(pause)


def read_ids(path: str) -> list[int]:
    """Every id an append log acknowledges (a torn last line is ignored)."""
    out: list[int] = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    out += json.loads(line)
                except ValueError:
                    continue
    return out


def compactor(location: str, table: str, log_path: str, deadline: float, idle_pause: float = 0.0) -> None:
    """Compact ``table`` again and again until ``deadline`` (iceberg.compaction),
    logging (one fsynced JSON line each, with the time) ``["begin", t]`` before each
    compaction and ``["done", rewritten, added, t]`` after one that committed
    (``["idle", t]``: nothing to compact, ``["lost", t]``: a lost race): a kill whose
    log ends at "begin" landed inside a compaction (:func:`compaction_log`).
    ``idle_pause``: seconds to wait after an "idle" one (0: none; a test whose kills
    must land in compactions, idle ones included, keeps 0)."""
    catalog = TrinityLakeCatalog("crash", uri=location)
    with open(log_path, "a", encoding="utf-8") as log:

        def note(*entry: object) -> None:
            log.write(json.dumps([*entry, time.time()]) + "\n")
            log.flush()
            os.fsync(log.fileno())

        while time.time() < deadline:
            note("begin")
            try:
                done = catalog.optimize_table(table)
            except Exception as e:  # noqa: BLE001 - a lost race with an appender (CP5) is fine
                if "CommitFailed" not in type(e).__name__ and "Serialization" not in type(e).__name__:
                    raise
                note("lost")
                continue
            if done.snapshot_id is not None:
                note("done", done.rewritten_data_files, done.added_data_files)
            else:
                note("idle")
                time.sleep(idle_pause)


def compaction_log(path: str) -> tuple[list[float], bool]:
    """From a compactor's log: the durations (s) of the compactions that committed, and
    whether the log ends inside a compaction (its last whole line is "begin": the kill
    landed between the start of a compaction and its end). A torn last line is
    ignored."""
    entries: list[list] = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    entries.append(json.loads(line))
                except ValueError:
                    continue
    durations = [e[-1] - b[-1] for b, e in zip(entries, entries[1:]) if b[0] == "begin" and e[0] == "done"]
    return durations, bool(entries) and entries[-1][0] == "begin"
