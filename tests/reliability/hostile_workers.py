"""Worker processes of the hostile run of issue 31 (test_issue31_hostile.py), forked by
the zygote: SQL DML through the DB-API, each statement logged before it runs (its
intent) and after it returns (its outcome), every line fsynced, so a SIGKILL at any
moment leaves a log that says exactly which statements were acknowledged and which one,
at most, was in flight.

A worker only touches rows it inserted itself (ids ``worker * STRIDE + n``), so what its
rows hold follows from its own log alone: :func:`apply` of the acknowledged operations,
plus or minus the one in flight. Importing this module warms the zygote's children
(DuckDB, PyIceberg's writer).
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import Any

import duckdb  # noqa: F401 - warm import for the zygote's children
import pyiceberg.io.pyarrow  # noqa: F401
import pyiceberg.table  # noqa: F401

import trinitylake_dbapi
import trinitylake_dbapi.sql.query  # noqa: F401

#: Ids of worker w: w * STRIDE + n.
STRIDE = 1_000_000
#: The tables the DML workers write (both ``(id BIGINT, v BIGINT)``).
TABLES = ("a", "b")

# An operation (JSON-able):
#   ["insert", table, [[id, v], ...]]      one multi-row INSERT
#   ["add", table, [id, ...], d]           UPDATE ... SET v = v + d WHERE id IN (...)
#   ["delete", table, [id, ...]]           DELETE ... WHERE id IN (...)
#   ["txn", [op, ...]]                     BEGIN; the ops; COMMIT (all or nothing)
Op = list

Model = dict[str, dict[int, int]]


def apply(model: Model, op: Op) -> Model:
    """The rows after ``op`` (a new model; ``model`` unchanged)."""
    out = {t: dict(rows) for t, rows in model.items()}
    _apply_in_place(out, op)
    return out


def _apply_in_place(model: Model, op: Op) -> None:
    kind = op[0]
    if kind == "insert":
        for row_id, v in op[2]:
            model[op[1]][row_id] = v
    elif kind == "add":
        for row_id in op[2]:
            model[op[1]][row_id] += op[3]
    elif kind == "delete":
        for row_id in op[2]:
            del model[op[1]][row_id]
    elif kind == "txn":
        for inner in op[1]:
            _apply_in_place(model, inner)
    else:
        raise ValueError(op)


def _sql(op: Op) -> list[tuple[str, tuple]]:
    kind, table = op[0], f"default.{op[1]}"
    if kind == "insert":
        values = ", ".join("(?, ?)" for _ in op[2])
        return [(f"INSERT INTO {table} VALUES {values}", tuple(x for row in op[2] for x in row))]
    marks = ", ".join("?" for _ in op[2])
    if kind == "add":
        return [(f"UPDATE {table} SET v = v + ? WHERE id IN ({marks})", (op[3], *op[2]))]
    return [(f"DELETE FROM {table} WHERE id IN ({marks})", tuple(op[2]))]


def random_op(rng: random.Random, model: Model, next_id: int, *, in_txn: bool = False) -> tuple[Op, int]:
    """A random operation on the worker's own rows; (op, the next unused id)."""
    choices = ["insert", "insert", "add", "add", "delete"] + ([] if in_txn else ["txn"])
    kind = rng.choice(choices)
    table = rng.choice(TABLES)
    own = sorted(model[table])
    if kind in ("add", "delete") and not own:
        kind = "insert"
    if kind == "insert":
        rows = [[next_id + k, rng.randrange(100)] for k in range(rng.randint(1, 3))]
        return ["insert", table, rows], next_id + len(rows)
    if kind == "add":
        return ["add", table, rng.sample(own, min(len(own), rng.randint(1, 3))), rng.randint(1, 9)], next_id
    if kind == "delete":
        return ["delete", table, rng.sample(own, 1)], next_id
    ops: list[Op] = []
    scratch = apply(model, ["txn", []])
    for _ in range(rng.randint(2, 3)):
        inner, next_id = random_op(rng, scratch, next_id, in_txn=True)
        _apply_in_place(scratch, inner)
        ops.append(inner)
    return ["txn", ops], next_id


def _log(f: Any, record: dict) -> None:
    f.write(json.dumps(record) + "\n")
    f.flush()
    os.fsync(f.fileno())


def dml_worker(location: str, worker: int, seed: int, log_path: str, deadline: float) -> None:
    """Random INSERT/UPDATE/DELETE statements and two-table transactions on the worker's
    own rows of default.a and default.b, in autocommit, until ``deadline`` (or a
    SIGKILL). Each logs ``{"seq", "op"}`` before it runs and ``{"seq", "outcome"}``
    ("ack" or the error's class and message) after."""
    rng = random.Random(seed)
    model: Model = {t: {} for t in TABLES}
    next_id = worker * STRIDE
    conn = trinitylake_dbapi.connect(location, autocommit=True)
    cur = conn.cursor()
    with open(log_path, "a", encoding="utf-8") as log:
        seq = 0
        while time.time() < deadline:
            op, next_id = random_op(rng, model, next_id)
            _log(log, {"seq": seq, "op": op})
            try:
                if op[0] == "txn":
                    cur.execute("BEGIN")
                    for inner in op[1]:
                        for sql, params in _sql(inner):
                            cur.execute(sql, params)
                    cur.execute("COMMIT")
                else:
                    for sql, params in _sql(op):
                        cur.execute(sql, params)
                outcome = "ack"
            except trinitylake_dbapi.Error as e:
                outcome = f"{type(e).__name__}: {e}"
                if op[0] == "txn":
                    try:
                        cur.execute("ROLLBACK")
                    except trinitylake_dbapi.Error:
                        pass
            _log(log, {"seq": seq, "outcome": outcome})
            if outcome == "ack":
                model = apply(model, op)
            seq += 1
    conn.close()


def read_log(path: str) -> tuple[list[Op], Op | None, list[tuple[Op, str]]]:
    """(acknowledged operations in order, the one in flight or None, failed operations
    with their outcome). A torn last line (killed mid-write) is ignored: its statement
    had not run yet (the intent line is written before the statement) or had returned
    (the outcome line is written after it)."""
    acked: list[Op] = []
    failed: list[tuple[Op, str]] = []
    pending: dict[int, Op] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if "op" in record:
                pending[record["seq"]] = record["op"]
            else:
                op = pending.pop(record["seq"])
                if record["outcome"] == "ack":
                    acked.append(op)
                else:
                    failed.append((op, record["outcome"]))
    assert len(pending) <= 1, pending
    return acked, next(iter(pending.values()), None), failed


# -- racing writers with long transactions (shapes 2 and 3) ---------------------------------


def racer(location: str, worker: int, seed: int, ops: int, hold_s: float, log_path: str, stderr_path: str) -> None:
    """``ops`` random writes to default.r (appends of own ids) and default.counters
    (``v = v + 1`` of one of three counters), in autocommit or in explicit transactions
    (BEGIN ... COMMIT) of both or of appends only, some held open ``hold_s`` (longer
    than expiration's grace) before COMMIT.
    Logs each outcome as ``{"op", "outcome"}``. fd 2 goes to ``stderr_path``."""
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 2)
    os.close(fd)
    rng = random.Random(seed)
    next_id = worker * STRIDE
    conn = trinitylake_dbapi.connect(location, autocommit=True)
    cur = conn.cursor()
    with open(log_path, "a", encoding="utf-8") as log:
        for _ in range(ops):
            kind = rng.choice(["append", "increment", "txn", "long txn", "long append txn"])
            ids = [next_id + k for k in range(rng.randint(1, 4))]
            counter = rng.randint(1, 3)
            op = {
                "kind": kind,
                "ids": ids if kind != "increment" else [],
                "counter": counter if kind not in ("append", "long append txn") else None,
            }
            next_id += len(ids)
            try:
                if "txn" in kind:
                    cur.execute("BEGIN")
                if op["ids"]:
                    cur.executemany("INSERT INTO default.r VALUES (?, ?)", [(i, worker) for i in ids])
                if op["counter"] is not None:
                    cur.execute("UPDATE default.counters SET v = v + 1 WHERE id = ?", (counter,))
                if kind.startswith("long"):
                    time.sleep(hold_s)
                if "txn" in kind:
                    cur.execute("COMMIT")
                outcome = "ack"
            except trinitylake_dbapi.Error as e:
                outcome = f"{type(e).__name__}: {e}"
                if "txn" in kind:
                    try:
                        cur.execute("ROLLBACK")
                    except trinitylake_dbapi.Error:
                        pass
            _log(log, {"op": op, "outcome": outcome})
    conn.close()
