"""Connections and ``os.fork`` (iceberg.duckdb_fork DF1-DF3, sql.query.engine QX4).

A child forked from a process that ran statements must neither hang nor touch the
parent's DuckDB databases: collecting the parent's garbage there, using or closing an
inherited connection, and checking a primary key all work, and the parent's connections
go on working. Each child runs under a deadline that only catches the hang (it hung for
ever before: the destructor of an inherited database joined live threads of the child's
own databases).
"""

from __future__ import annotations

import gc
import os
import signal
import time
from pathlib import Path
from typing import Any, Callable

import pytest

import trinitylake_dbapi as tl
from deadlines import HANG_S


class _Cycle:
    """Garbage only the cyclic collector frees, holding what it is given."""

    def __init__(self, held: Any) -> None:
        self.held = held
        self.me = self


def _in_child(work: Callable[[], str]) -> str:
    """``work()`` in a forked child (its result through a pipe); the child's exit status
    is checked, and a child still running after HANG_S is killed and fails the test."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read_end)
        code = 0
        try:
            result = work()
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            result, code = f"{type(e).__name__}: {e}", 1
        os.write(write_end, result.encode())
        os._exit(code)
    os.close(write_end)
    deadline = time.monotonic() + HANG_S
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"the forked child hung for {HANG_S} s")
        time.sleep(0.05)
    with os.fdopen(read_end, "rb") as pipe:
        result = pipe.read().decode()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, result
    return result


def _lake(tmp_path: Path) -> tl.Connection:
    conn = tl.connect(str(tmp_path / "lake"), create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.t (id INT PRIMARY KEY, v VARCHAR)")
    cur.execute("INSERT INTO default.t VALUES (1, 'a'), (2, 'b')")
    return conn


def _rows(conn: tl.Connection) -> list[tuple]:
    cur = conn.cursor()
    cur.execute("SELECT id, v FROM default.t ORDER BY id")
    return cur.fetchall()


def test_the_parents_garbage_is_collected_in_a_child_without_hanging(tmp_path: Path) -> None:
    """DF2: a connection the parent dropped into a reference cycle (its DuckDB databases
    still alive at the fork) is collected in a child that opened databases of its own."""
    conn = _lake(tmp_path)
    garbage = tl.connect(str(tmp_path / "lake"), autocommit=True)
    _rows(garbage)
    _Cycle(garbage)
    del garbage
    gc.disable()  # keep the cycle for the child to collect
    try:
        def work() -> str:
            own = tl.connect(str(tmp_path / "lake"), autocommit=True)
            rows = _rows(own)  # the child's databases start threads (on the parent's old stacks)
            gc.collect()
            own.close()
            return repr(rows)

        assert _in_child(work) == repr([(1, "a"), (2, "b")])
    finally:
        gc.enable()
        gc.collect()
    assert _rows(conn) == [(1, "a"), (2, "b")]


def test_an_inherited_connection_works_in_the_child_and_closes_there(tmp_path: Path) -> None:
    """QX4: the child's statements on a connection opened by the parent run on a database
    of the child's own; closing it there closes none of the parent's databases."""
    conn = _lake(tmp_path)
    assert _rows(conn) == [(1, "a"), (2, "b")]  # the parent's database holds a view of the table (QX3)

    def work() -> str:
        rows = _rows(conn)
        conn.cursor().execute("INSERT INTO default.t VALUES (3, 'c')")
        conn.close()
        gc.collect()
        return repr(rows)

    assert _in_child(work) == repr([(1, "a"), (2, "b")])
    assert _rows(conn) == [(1, "a"), (2, "b"), (3, "c")]  # the parent's own database still works
    conn.close()


def test_a_key_checked_in_the_parent_is_checked_in_the_child(tmp_path: Path) -> None:
    """DF3 for the primary-key check's database: the child opens its own, refuses a
    duplicate key, and the parent's check goes on working."""
    conn = _lake(tmp_path)

    def work() -> str:
        own = tl.connect(str(tmp_path / "lake"), autocommit=True)
        try:
            own.cursor().execute("INSERT INTO default.t VALUES (1, 'again')")
        except tl.IntegrityError:
            outcome = "duplicate"
        else:
            outcome = "inserted"
        own.cursor().execute("INSERT INTO default.t VALUES (4, 'd')")
        own.close()
        gc.collect()
        return outcome

    assert _in_child(work) == "duplicate"
    with pytest.raises(tl.IntegrityError):
        conn.cursor().execute("INSERT INTO default.t VALUES (4, 'dup')")
    assert _rows(conn) == [(1, "a"), (2, "b"), (4, "d")]
