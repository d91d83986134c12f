"""The order in which pytest-xdist's workers get the suite's units (tests/conftest.py):
the long ones first, and never more than WAITING_AT_ONCE workers on units that mostly
wait, so the cores stay busy (issue 33 item 8: the lanes' time budgets)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


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
