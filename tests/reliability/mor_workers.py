"""Worker functions for the merge-on-read crash test (run in processes forked by the
zygote): SQL INSERT, UPDATE and DELETE through the DB-API on rows of the worker's own,
each statement logged (fsynced) before it runs and acknowledged after it returns.

Importing this module imports the driver, its SQL engine (DuckDB, sqlglot: no thread
starts before a connection) and PyIceberg's writer, so children start warm.
"""

from __future__ import annotations

import collections
import json
import os
import random
import time
from typing import Any

import pyiceberg.io.pyarrow  # noqa: F401 - warm import for the zygote's children

import trinitylake_dbapi as tl
import trinitylake_dbapi.sql  # noqa: F401 - warm import (DuckDB, sqlglot): 0.05 s of CPU less per child
from trinitylake_dbapi.errors import SerializationError

#: ids of worker w are w * ID_SPAN + n.
ID_SPAN = 1_000_000


def dml(location: str, worker: int, log_path: str, deadline: float, seed: int) -> None:
    """Until ``deadline``: INSERT 5 new rows (20 the first time; val 0), UPDATE 2 of this worker's live rows
    (val = a new step) or DELETE 1, at random; before each statement log
    ``["intent", kind, ids, val]``, after it ``["ack"]`` (or ``["abort"]`` when it lost
    to another writer and changed nothing), each with the time appended. A rowcount
    other than the rows meant is an error (the process exits 1)."""
    rng = random.Random(seed)
    cur = tl.connect(location, autocommit=True).cursor()
    cur.execute("SELECT count(*) FROM t")  # the engine's start-up, before the first logged statement
    cur.fetchall()
    live: dict[int, int] = {}
    n = 0
    step = 0
    with open(log_path, "a", encoding="utf-8") as log:

        def note(entry: list[Any]) -> None:
            log.write(json.dumps([*entry, time.time()]) + "\n")
            log.flush()
            os.fsync(log.fileno())

        while time.time() < deadline:
            choice = rng.random()
            if choice < 0.2 or len(live) < 4:
                size = 5 if live else 20  # the first INSERT gives the UPDATEs and DELETEs rows to work on
                ids = [worker * ID_SPAN + n + k for k in range(size)]
                n += size
                kind, val = "insert", 0
                sql = "INSERT INTO t VALUES " + ", ".join(f"({i}, {worker}, 0)" for i in ids)
            elif choice < 0.75:
                step += 1
                ids = rng.sample(sorted(live), 2)
                kind, val = "update", step
                sql = f"UPDATE t SET val = {step} WHERE id IN ({', '.join(map(str, ids))})"
            else:
                ids = rng.sample(sorted(live), 1)
                kind, val = "delete", None
                sql = f"DELETE FROM t WHERE id = {ids[0]}"
            note(["intent", kind, ids, val])
            try:
                cur.execute(sql)
            except SerializationError:
                note(["abort"])
                continue
            if cur.rowcount != len(ids):
                raise AssertionError(f"{sql}: rowcount {cur.rowcount}, expected {len(ids)}")
            note(["ack"])
            for i in ids:
                if kind == "delete":
                    del live[i]
                else:
                    live[i] = val


def statement_seconds(log_path: str) -> list[float]:
    """From a dml log: how long each acknowledged UPDATE and DELETE took."""
    out: list[float] = []
    pending: list[Any] | None = None
    if os.path.exists(log_path):
        with open(log_path, encoding="utf-8") as f:
            for line in f:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if entry[0] == "intent":
                    pending = entry
                elif entry[0] == "ack" and pending is not None and pending[1] in ("update", "delete"):
                    out.append(entry[-1] - pending[-1])
    return out


#: Of the last log :func:`expected_states` read: acknowledged statements by kind.
acknowledged: collections.Counter = collections.Counter()


def expected_states(log_path: str) -> tuple[dict[int, int], dict[int, int] | None, str | None]:
    """From a dml log: the rows (id -> val) its acknowledged statements leave, the rows
    if its last, unacknowledged statement committed too (None: there is none), and that
    statement's kind (the one the kill interrupted). A torn last line is ignored."""
    state: dict[int, int] = {}
    pending: list[Any] | None = None
    acknowledged.clear()

    def applied(rows: dict[int, int], entry: list[Any]) -> dict[int, int]:
        out = dict(rows)
        _, kind, ids, val = entry[:4]
        for i in ids:
            if kind == "delete":
                out.pop(i, None)
            else:
                out[i] = val
        return out

    if os.path.exists(log_path):
        with open(log_path, encoding="utf-8") as f:
            for line in f:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if entry[0] == "intent":
                    pending = entry
                elif entry[0] == "ack" and pending is not None:
                    state = applied(state, pending)
                    acknowledged[pending[1]] += 1
                    pending = None
                elif entry[0] == "abort":
                    pending = None
    if pending is None:
        return state, None, None
    return state, applied(state, pending), pending[1]
