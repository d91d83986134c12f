"""Writer processes of the concurrent-writer tests (issue 31 item 7): SQL through the
DB-API, as applications, pandas ``to_sql`` and SQLAlchemy sessions write.

Each worker sends its file descriptor 2 to a file of its own before it imports or does
anything, and returns what was written there: the tests assert that it is empty (no
PyIceberg "Commit failed ... retrying" line, no warning).
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

from deadlines import HANG_S

#: Ids of worker w's rows: (w + 1) * ID_STRIDE + n (never 1 or 2, the counters' ids).
ID_STRIDE = 1_000_000


def _with_stderr_captured(path: str, work: Callable[[], Any]) -> tuple[Any, str]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 2)
    os.close(fd)
    result = work()
    with open(path, encoding="utf-8", errors="replace") as f:
        return result, f.read()


def inserter(location: str, worker: int, transactions: int, rows: int, stderr_path: str,
             autocommit: bool = False) -> tuple[dict, str]:
    """``transactions`` explicit transactions (connect() without autocommit): each INSERTs
    ``rows`` rows (one execute, then one executemany, as pandas ``to_sql`` does) and
    commits. Returns the ids of the committed transactions and the errors by class."""

    def work() -> dict:
        import trinitylake_dbapi

        committed: list[int] = []
        errors: dict[str, int] = {}
        conn = trinitylake_dbapi.connect(location, autocommit=autocommit)
        cur = conn.cursor()
        for n in range(transactions):
            ids = [(worker + 1) * ID_STRIDE + n * rows + k for k in range(rows)]
            try:
                if autocommit:
                    cur.execute("BEGIN")
                cur.execute("INSERT INTO default.t VALUES (?, ?)", (ids[0], worker))
                cur.executemany("INSERT INTO default.t VALUES (?, ?)", [(i, worker) for i in ids[1:]])
                if autocommit:
                    cur.execute("COMMIT")
                else:
                    conn.commit()
                committed += ids
            except trinitylake_dbapi.Error as e:
                errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
                errors.setdefault("first", str(e))  # type: ignore[arg-type]
                conn.rollback()
        conn.close()
        return {"committed": committed, "errors": errors}

    return _with_stderr_captured(stderr_path, work)


def incrementer(location: str, worker: int, increments: int, stderr_path: str, table: str = "default.counters",
                explicit_retries: bool = False, column: str = "v") -> tuple[dict, str]:
    """``increments`` times ``UPDATE counters SET v = v + 1 WHERE id = 1`` (or of ``table``
    and ``column``): under autocommit
    each must succeed (run again on the latest version when it loses, connection CN6); with
    ``explicit_retries``, in explicit transactions, retrying on SerializationError as an
    application does. Returns the increments acknowledged and the errors by class."""

    def work() -> dict:
        import trinitylake_dbapi

        done = 0
        errors: dict[str, Any] = {}
        conn = trinitylake_dbapi.connect(location, autocommit=not explicit_retries)
        cur = conn.cursor()
        for _ in range(increments):
            while True:
                try:
                    cur.execute(f"UPDATE {table} SET {column} = {column} + 1 WHERE id = 1")
                    if explicit_retries:
                        conn.commit()
                    done += 1
                    break
                except trinitylake_dbapi.Error as e:
                    errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
                    errors.setdefault("first", f"{type(e).__name__}: {e}")
                    if not (explicit_retries and isinstance(e, trinitylake_dbapi.OperationalError)):
                        break
                    conn.rollback()
                    time.sleep(0.01)
        conn.close()
        return {"done": done, "errors": errors}

    return _with_stderr_captured(stderr_path, work)


# -- long transactions racing expiration (issue 31 item 5) ---------------------------------


def expirer(location: str, grace_ms: int, cycles_path: str, stop_path: str, stderr_path: str) -> tuple[dict, str]:
    """Expire every version but the newest two, with ``grace_ms``, as fast as it can
    until ``stop_path`` exists; after each run append "start end" (wall clock) to
    ``cycles_path``. Returns the runs and the files deleted."""

    def work() -> dict:
        from trinitylake_dbapi.catalog import LakehouseCatalog
        from trinitylake_dbapi.maintenance import expire_versions

        catalog = LakehouseCatalog(location)
        runs = deleted = 0
        while not os.path.exists(stop_path):
            started = time.time()
            deleted += len(expire_versions(catalog, retain_last=2, older_than_millis=2**62,
                                           orphan_grace_millis=grace_ms).files)
            runs += 1
            with open(cycles_path, "a", encoding="utf-8") as f:
                f.write(f"{started} {time.time()}\n")
        return {"runs": runs, "deleted": deleted}

    return _with_stderr_captured(stderr_path, work)


def _cycle_done_after(cycles_path: str, moment: float, deadline: float) -> None:
    """Wait until an expiration run that started after ``moment`` has ended."""
    while time.time() < deadline:
        if os.path.exists(cycles_path):
            with open(cycles_path, encoding="utf-8") as f:
                if any(float(line.split()[0]) > moment for line in f if line.strip()):
                    return
        time.sleep(0.05)
    raise TimeoutError("no expiration run ended: hang")


def long_writer(location: str, worker: int, transactions: int, grace_ms: int, cycles_path: str,
                stderr_path: str) -> tuple[dict, str]:
    """Explicit transactions of one INSERT each, of three kinds in turn: "young" (commit at
    once), "old" (commit after an expiration run that began when the transaction's files
    were older than the grace has ended: C7 must refuse it) and "racing" (commit as soon
    as the files are older than the grace, while expiration runs). A refused transaction
    is retried as an application does. Returns the ids committed and the outcomes."""

    def work() -> dict:
        import trinitylake_dbapi
        from trinitylake_dbapi.errors import MissingFileError

        committed: list[int] = []
        outcomes: dict[str, int] = {}
        messages: dict[str, str] = {}
        conn = trinitylake_dbapi.connect(location)
        cur = conn.cursor()
        grace_s = grace_ms / 1000
        for n in range(transactions):
            kind = ("young", "old", "racing")[n % 3]
            row = (worker + 1) * ID_STRIDE + n
            for attempt in range(20):
                cur.execute("INSERT INTO default.t VALUES (?, ?)", (row, worker))
                written = time.time()
                if kind != "young" and attempt == 0:
                    time.sleep(grace_s + 0.3)
                if kind == "old" and attempt == 0:
                    _cycle_done_after(cycles_path, written + grace_s + 0.2, time.time() + HANG_S)
                try:
                    conn.commit()
                except MissingFileError as e:
                    key = f"{kind}: MissingFileError"
                    outcomes[key] = outcomes.get(key, 0) + 1
                    messages.setdefault(kind, str(e))
                    conn.rollback()
                    continue
                outcomes[f"{kind}: committed"] = outcomes.get(f"{kind}: committed", 0) + 1
                committed.append(row)
                break
        conn.close()
        return {"committed": committed, "outcomes": outcomes, "messages": messages}

    return _with_stderr_captured(stderr_path, work)
