"""Writer processes of the primary-key race test (issue 36 acceptance 3; iceberg.keys
PK2): each inserts batches of keys drawn from a small shared range, so that workers
collide, and reports every statement's outcome by error class.

Each worker sends its file descriptor 2 to a file of its own before it does anything
(as sql_writer_workers), and returns what was written there.
"""

from __future__ import annotations

import os
import random
from typing import Any


def key_inserter(location: str, worker: int, batches: int, key_range: int, explicit: bool | str,
                 stderr_path: str) -> tuple[list[tuple[list[int], str]], str]:
    """``batches`` INSERTs of 1-3 keys in 0..``key_range``-1 into ``default.k`` (in
    explicit transactions committed one by one when ``explicit``, else autocommit; with
    ``explicit="pyiceberg"``, PyIceberg appends through the project's catalog).
    Returns each batch's keys with its outcome: "ok" or the error's class name."""
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 2)
    os.close(fd)
    import trinitylake_dbapi

    rng = random.Random(worker)
    outcomes: list[tuple[list[int], str]] = []
    if explicit == "pyiceberg":
        return _appender(location, worker, batches, key_range, rng), _read(stderr_path)
    conn = trinitylake_dbapi.connect(location, autocommit=not explicit)
    cur = conn.cursor()
    for _ in range(batches):
        keys = rng.sample(range(key_range), rng.randint(1, 3))
        try:
            cur.executemany("INSERT INTO default.k VALUES (?, ?)", [(k, worker) for k in keys])
            if explicit:
                conn.commit()
            outcomes.append((keys, "ok"))
        except trinitylake_dbapi.Error as e:
            outcomes.append((keys, f"{type(e).__name__}: {e}"))
            if explicit:
                conn.rollback()
    conn.close()
    return outcomes, _read(stderr_path)


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def _appender(location: str, worker: int, batches: int, key_range: int, rng: random.Random) -> list:
    """PyIceberg ``append`` of each batch (one commit each, P3's retries)."""
    import pyarrow as pa
    from pyiceberg.exceptions import CommitFailedException

    import trinitylake_dbapi
    from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("w", pa.int32())])
    table = TrinityLakeCatalog(f"w{worker}", uri=location).load_table("default.k")
    outcomes: list[tuple[list[int], str]] = []
    for _ in range(batches):
        keys = rng.sample(range(key_range), rng.randint(1, 3))
        try:
            table.append(pa.table({"id": keys, "w": [worker] * len(keys)}, schema=schema))
            outcomes.append((keys, "ok"))
        except (trinitylake_dbapi.Error, CommitFailedException) as e:
            outcomes.append((keys, f"{type(e).__name__}: {e}"))
        table.refresh()
    return outcomes
