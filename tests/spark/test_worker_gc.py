"""A reused Spark Python worker freezes what it has loaded (spark._runtime WK1), so the
``gc.collect()`` PySpark's daemon runs after every task does not walk PySpark, pyarrow,
PyIceberg and this package each time; the driver never freezes anything."""

from __future__ import annotations

import gc
import os
from typing import Any, Iterable, Iterator

import pyarrow  # noqa: F401 - loaded in the driver as in a worker, so settle has imports to see

from trinitylake_dbapi.spark import _runtime as rt


def _probe(root: str) -> Any:
    """A task's function: open the lakehouse's Storage as tasks do, then report this
    worker's frozen and unfrozen (walked by the next collection) object counts."""

    def run(_: Iterable[int]) -> Iterator[tuple[int, int, int]]:
        rt.storage(rt.Location.of(root))
        yield os.getpid(), gc.get_freeze_count(), len(gc.get_objects())

    return run


def test_a_task_s_worker_freezes_what_is_loaded_and_the_driver_does_not(spark: Any, tmp_path: Any) -> None:
    assert rt.in_reused_worker() is False
    # tests/conftest.py freezes what the test process holds after collection (a test
    # harness's choice, not the driver's): undone here, so that a freeze by settle or by
    # the tasks in the driver would show.
    gc.unfreeze()
    rt.settle()
    assert gc.get_freeze_count() == 0  # the driver (pytest's process) never freezes
    # Two rounds: the first task of a worker may import more after its settle; the next
    # task's settle takes those too.
    rows: list[tuple[int, int, int]] = []
    for _ in range(2):
        rows = spark.sparkContext.parallelize(range(4), 4).mapPartitions(_probe(str(tmp_path))).collect()
    assert rows
    for pid, frozen, walked in rows:
        assert pid != os.getpid()
        # Tens of thousands of objects (PySpark, pyarrow, this package) frozen; what the
        # next collection walks is what tasks made since, a small part of it.
        assert frozen > 20_000 and walked < frozen // 4, (pid, frozen, walked)
    assert gc.get_freeze_count() == 0
