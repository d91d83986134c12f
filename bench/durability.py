"""Fsyncs per commit, counted: each engine runs in a worker under ``strace -f``.

What a commit makes durable is part of what it costs, so each peer's durability is
stated by counting, not read from its documentation. The engine (bench/lakeworker.py)
runs under ``strace -f -e trace=fsync,fdatasync,sync_file_range,syncfs,openat`` (every
thread and child), and the driver cuts the trace into windows with marker ``openat``
calls: ``commits`` CREATE TABLE commits, ``commits`` INSERT commits of ``rows`` rows,
``commits`` DROP TABLE commits. Counted per window: the sync calls, and files opened
with ``O_SYNC`` / ``O_DSYNC`` (whose every write is durable; none of the engines here
opens one, and the count says so). Not counted: ``msync`` of mapped files and
``O_DIRECT`` writes (neither engine is known to use them).

Without strace, or where tracing is not permitted, the result says why and holds no
counts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from typing import Callable

from . import lakeworker

SYNC_CALLS = ("fsync", "fdatasync", "sync_file_range", "syncfs")
_CALL = re.compile(r"^(?:\[pid\s+)?\d+\]?\s+(\w+)\((.*)$")

#: Per engine: (statement creating the namespace ``ns``, a table's name in ``ns``).
_SQL = {
    "trinitylake": ("CREATE NAMESPACE ns", "ns.{t}"),
    "ducklake": ("CREATE SCHEMA lake.ns", "lake.ns.{t}"),
}


def strace_unavailable() -> str | None:
    """None if ``strace -f`` can trace a child here, else why not."""
    if shutil.which("strace") is None:
        return "strace is not installed"
    try:
        done = subprocess.run(["strace", "-f", "-qq", "-o", os.devnull, "-e", "trace=fsync", "true"],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"strace failed: {exc}"
    if done.returncode != 0:
        return f"strace cannot trace here: {done.stderr.strip()[:200]}"
    return None


def count_windows(trace: str) -> dict[str, dict[str, int]]:
    """Per marker label: the sync calls and synchronous opens after it, up to the next."""
    windows: dict[str, dict[str, int]] = {}
    current: dict[str, int] = {"syncs": 0, "sync_opens": 0}  # before the first marker: not reported
    for line in trace.splitlines():
        match = _CALL.match(line)
        if not match:
            continue  # "<... resumed>" halves and exits: the call was counted when it started
        call, rest = match.groups()
        if call == "openat" and lakeworker.MARK_PREFIX in rest:
            label = rest.split(lakeworker.MARK_PREFIX, 1)[1].split('"', 1)[0]
            current = windows.setdefault(label, {"syncs": 0, "sync_opens": 0})
        elif call in SYNC_CALLS:
            current["syncs"] += 1
        elif call == "openat" and ("O_SYNC" in rest or "O_DSYNC" in rest):
            current["sync_opens"] += 1
    return windows


Step = tuple[str, tuple]


def _plan(kind: str, rows: int) -> tuple[list[Step], dict[str, Callable[[int], Step]]]:
    """The setup steps and, per kind of commit, the worker request of its i-th commit:
    SQL for the SQL engines, PyIceberg's catalog calls for ``pyiceberg``."""
    from .ducklake import DUCKDB_COLUMNS_SQL
    from .queries import INSERT_COLUMNS, rows_for_insert
    from .sides import CREATE_TABLE_COLUMNS_SQL

    columns = [tuple(c.strip().split(" ", 1)) for c in INSERT_COLUMNS.split(", ")]

    def insert(table: str) -> Callable[[int], Step]:
        return lambda i: ("insert", (table, columns, rows_for_insert(rows, (i + 1) * rows)))

    if kind == "pyiceberg":
        setup = [("create_namespace", ("ns",)), ("create_table", ("ns.ins", columns))]
        return setup, {"create": lambda i: ("create_table", (f"ns.t{i:04d}", None)), "insert": insert("ns.ins"),
                       "drop": lambda i: ("drop_table", (f"ns.t{i:04d}",))}  # fmt: skip
    schema, naming = _SQL[kind]
    table_columns = CREATE_TABLE_COLUMNS_SQL if kind == "trinitylake" else DUCKDB_COLUMNS_SQL
    table = naming.format(t="ins")
    setup = [("execute", (schema,)), ("execute", (f"CREATE TABLE {table} ({INSERT_COLUMNS})",))]
    return setup, {
        "create": lambda i: ("execute", (f"CREATE TABLE {naming.format(t=f't{i:04d}')} ({table_columns})",)),
        "insert": insert(table),
        "drop": lambda i: ("execute", (f"DROP TABLE {naming.format(t=f't{i:04d}')}",)),
    }


def _count_engine(workdir: str, python: str, kind: str, commits: int, rows: int) -> dict[str, dict[str, float]]:
    from .ducklake import Worker

    setup, windows_plan = _plan(kind, rows)
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as log:
        wrap = ("strace", "-f", "-qq", "-o", log.name, "-e", "trace=" + ",".join((*SYNC_CALLS, "openat")))
        worker = Worker(python, kind, os.path.join(workdir, "fsyncs", kind), wrap=wrap)
        try:
            for operation, args in [*setup, windows_plan["insert"](-1)]:  # the insert warms imports
                worker.call(operation, *args)
            for label, step in windows_plan.items():
                worker.call("mark", label)
                for i in range(commits):
                    operation, args = step(i)
                    worker.call(operation, *args)
            worker.call("mark", "end")
        finally:
            worker.close()
        windows = count_windows(log.read())
    return {label: {key: value / commits for key, value in windows.get(label, {}).items()}
            for label in ("create", "insert", "drop")}  # fmt: skip


def fsyncs_per_commit(
    workdir: str, engines: dict[str, tuple[str, str]], commits: int, rows: int, log: Callable[[str], None]
) -> dict:
    """``{"commits": n, "engines": {side: {"create"|"insert"|"drop": {"syncs", "sync_opens"}}}}``
    for ``engines`` = {side: (python, lakeworker engine)}, or ``{"skipped": why}``."""
    why = strace_unavailable()
    if why:
        log(f"fsync counts skipped: {why}")
        return {"skipped": why}
    out: dict = {"commits": commits, "rows": rows, "engines": {}}
    for side, (python, kind) in engines.items():
        out["engines"][side] = _count_engine(workdir, python, kind, commits, rows)
        log(f"  {side}: {out['engines'][side]}")
    return out
