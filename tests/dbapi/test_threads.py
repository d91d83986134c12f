"""One connection shared between threads (issue 15, item 14; connection.py CN1-CN3).

Sharing a connection once lost 15 of 312 acknowledged commits: a thread's statement
joined a transaction that another thread's commit had already taken. Each test counts
every acknowledged commit in the lakehouse afterwards, read by a fresh connection.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import pytest

import trinitylake_dbapi as tl

THREADS, EACH = 8, 25


def run_threads(work: Callable[[int], None]) -> None:
    failures: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def body(index: int) -> None:
        try:
            start.wait()
            work(index)
        except BaseException as e:  # noqa: BLE001 - reported below
            failures.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def committed_namespaces(location: str) -> set[str]:
    with tl.connect(location) as conn:
        return {row[0] for row in conn.cursor().execute("SHOW NAMESPACES").fetchall()} - {"default"}


@pytest.fixture
def location(tmp_path: Any) -> str:
    return str(tmp_path / "lake")


def test_autocommit_statements_from_many_threads_are_all_committed(location: str) -> None:
    shared = tl.connect(location, create=True, autocommit=True)
    acknowledged: list[str] = []

    def work(index: int) -> None:
        cur = shared.cursor()  # a cursor per thread; the connection is shared
        for i in range(EACH):
            name = f"t{index}_{i}"
            cur.execute(f"CREATE NAMESPACE {name}")
            acknowledged.append(name)

    run_threads(work)
    shared.close()
    assert committed_namespaces(location) == set(acknowledged)
    assert len(acknowledged) == THREADS * EACH
    with tl.connect(location) as conn:
        versions = conn.cursor().execute("SHOW VERSIONS").fetchall()
    assert len(versions) == THREADS * EACH + 1  # one version per statement, and version 0


def test_explicit_commits_from_many_threads_lose_nothing(location: str) -> None:
    shared = tl.connect(location, create=True)
    acknowledged: list[str] = []

    def work(index: int) -> None:
        cur = shared.cursor()
        for i in range(EACH):
            name = f"t{index}_{i}"
            with shared.serialized():  # this thread's statement and its commit, together
                cur.execute(f"CREATE NAMESPACE {name}")
                shared.commit()
            acknowledged.append(name)

    run_threads(work)
    shared.close()
    assert committed_namespaces(location) == set(acknowledged)


def test_statements_and_commits_interleaved_freely_lose_no_acknowledged_work(location: str) -> None:
    # Without serialized(): a commit may publish other threads' statements too (CN3), but
    # a statement that returned before a commit that returned is never lost (CN2).
    shared = tl.connect(location, create=True)
    done_before_commit: list[str] = []
    lock = threading.Lock()

    def work(index: int) -> None:
        cur = shared.cursor()
        for i in range(EACH):
            name = f"t{index}_{i}"
            cur.execute(f"CREATE NAMESPACE {name}")
            with lock:
                mine = name
            shared.commit()
            with lock:
                done_before_commit.append(mine)

    run_threads(work)
    shared.close()
    assert set(done_before_commit) <= committed_namespaces(location)
    assert len(done_before_commit) == THREADS * EACH
