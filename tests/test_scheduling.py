"""The order in which pytest-xdist's workers get the suite's units (tests/conftest.py):
the long ones first, and never more than WAITING_AT_ONCE workers on units that mostly
wait, so the cores stay busy (issue 33 item 8: the lanes' time budgets)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace


def _root_conftest() -> ModuleType:
    """tests/conftest.py: ``import conftest`` gives whichever conftest.py pytest imported
    last under that name, tests/sqlalchemy/conftest.py when the whole suite is collected
    (then this module failed to import, and the collection of every run with it). A copy
    of it, loaded from its file, when it is not the one there."""
    path = Path(__file__).with_name("conftest.py")
    loaded = sys.modules.get("conftest")
    if loaded is not None and Path(getattr(loaded, "__file__", "")) == path:
        return loaded
    spec = importlib.util.spec_from_file_location("tests_root_conftest", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


conftest = _root_conftest()
WAITING, WAITING_AT_ONCE, _LongFirstQueue = conftest.WAITING, conftest.WAITING_AT_ONCE, conftest._LongFirstQueue


def queue_of(*scopes: str) -> _LongFirstQueue:
    queue = _LongFirstQueue()
    for scope in scopes:
        queue[scope] = {scope: False}
    return queue


def pop(queue: _LongFirstQueue, waiting_now: int = 0) -> str:
    queue.waiting_now = waiting_now
    return queue.popitem(last=False)[0]


SPARK = "spark"  # the name of the tests/spark group
KILL = "tests/reliability/test_mor_crashes.py::test_kill"
WAIT_A = WAITING[0] + "::test_a"
WAIT_B = WAITING[1] + "::test_b"
OTHER_A = "tests/sql/test_data.py::test_a"
OTHER_B = "tests/sql/test_data.py::test_b"


def test_groups_come_first_then_waiting_units_then_long_ones_then_the_rest() -> None:
    queue = queue_of(OTHER_A, WAIT_A, KILL, OTHER_B, SPARK, WAIT_B)
    assert [pop(queue) for _ in range(6)] == [SPARK, WAIT_A, WAIT_B, KILL, OTHER_A, OTHER_B]


def test_waiting_units_wait_for_a_free_slot_and_come_last_when_none_frees() -> None:
    queue = queue_of(OTHER_A, WAIT_A, KILL, OTHER_B, WAIT_B)
    busy = WAITING_AT_ONCE
    assert pop(queue, busy) == KILL
    assert pop(queue, busy) == OTHER_A
    assert pop(queue, busy - 1) == WAIT_A
    assert pop(queue, busy) == OTHER_B
    assert pop(queue, busy) == WAIT_B  # nothing else is left
    assert not queue


def test_the_last_unit_of_a_queue_is_popped_as_xdist_pops_it() -> None:
    queue = queue_of(OTHER_A, OTHER_B)
    assert queue.popitem()[0] == OTHER_B  # xdist's popitem() from the end is untouched
    assert conftest.xdist_scope("tests/spark/test_x.py::test_y") == SPARK


class FakeWorker:
    """What the scheduler uses of an xdist worker: the tests sent to it, in order."""

    def __init__(self, name: str) -> None:
        self.name, self.sent, self.shutting_down = name, [], False
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


class FakeConfig:
    def __init__(self, workers: int) -> None:
        self.values = {"dist": "load", "tx": [f"{workers}*popen"]}
        self.option = SimpleNamespace(loadscopereorder=True)

    def getvalue(self, name: str):  # type: ignore[no-untyped-def]
        return self.values[name]


#: Units of one test and of several (a class's methods), WAITING's and LONG_FIRST's too.
COLLECTION = [
    OTHER_A, OTHER_B, WAIT_A, KILL, "tests/sql/test_data.py::TestK::test_1",
    "tests/sql/test_data.py::TestK::test_2", "tests/sql/test_data.py::TestK::test_3",
    WAIT_B, *(f"tests/sql/test_x.py::test_{i}" for i in range(20)),
]


def scheduler_with(workers: list[FakeWorker]):  # type: ignore[no-untyped-def]
    scheduling = conftest.pytest_xdist_make_scheduler(FakeConfig(len(workers)), None)
    for worker in workers:
        scheduling.add_node(worker)
        scheduling.add_node_collection(worker, list(COLLECTION))
    scheduling.schedule()
    return scheduling


def run_all(scheduling, workers: list[FakeWorker], done: list[str]) -> None:  # type: ignore[no-untyped-def]
    """Each worker reports its tests done, in turn, until none is left to send."""
    progress = True
    while progress:
        progress = False
        for worker in workers:
            if worker.sent:
                index = worker.sent.pop(0)
                done.append(scheduling.registered_collections[worker][index])
                scheduling.mark_test_complete(worker, index)
                progress = True


def test_every_test_runs_once_and_finished_units_leave_the_books() -> None:
    """The scheduler drops a unit from ``assigned_work`` once its tests are all done
    (xdist counted the pending tests of every unit a worker ever ran, at every test):
    every test is still sent once, to one worker, and the run ends."""
    workers = [FakeWorker("gw0"), FakeWorker("gw1")]
    scheduling = scheduler_with(workers)
    done: list[str] = []
    run_all(scheduling, workers, done)
    assert sorted(done) == sorted(COLLECTION)
    assert scheduling.tests_finished and not scheduling.has_pending
    assert all(units == {} for units in scheduling.assigned_work.values())


def test_a_crashed_workers_unfinished_tests_go_to_another_worker() -> None:
    """A worker that dies with tests left: the test it was running is named, and its
    unfinished tests (none of its finished ones) are sent to the other worker."""
    crashing, other = FakeWorker("gw0"), FakeWorker("gw1")
    scheduling = scheduler_with([crashing, other])
    done: list[str] = []
    index = crashing.sent.pop(0)  # the crashing worker finishes one test, then dies
    done.append(scheduling.registered_collections[crashing][index])
    scheduling.mark_test_complete(crashing, index)
    lost = [scheduling.registered_collections[crashing][i] for i in crashing.sent]
    assert lost  # it had tests left
    assert scheduling.remove_node(crashing) == lost[0]
    run_all(scheduling, [other], done)
    assert sorted(done) == sorted(COLLECTION)
    assert scheduling.tests_finished and not scheduling.has_pending
