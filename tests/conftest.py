"""Shared fixtures.

Lakehouse locations
    ``lake`` (a fresh location on each storage backend: local, memory and S3),
    ``storage``, ``memory_lake``, ``conn`` and ``cur`` are in tests/lakes.py, which
    ``pytest_plugins`` below registers for every test directory.

S3
    ``s3_server`` (session): moto on 127.0.0.1 with serialized put handlers (see
    tests/s3_server.py). ``s3_storage_options``: s3fs options for it (a picklable dict).
    ``s3_bucket``: a fresh, empty bucket per test. ``s3_root``: "s3://<fresh bucket>/lake".

Parallel runs (pytest-xdist; ``scripts/test`` passes ``-n`` with one worker more than cores)
    Each worker is its own process with its own session fixtures (a moto server on a free
    port, a SparkSession, memory:// filesystems) and its own tmp_path tree. Tests go to
    the workers one by one, except those that share an expensive set-up, which go to one
    worker together (see :func:`xdist_scope`): tests/spark (one SparkSession, one JVM),
    the pages of tests/docs (started together by one fixture), a test class, and the
    modules in ``WHOLE_MODULES``. xdist's own ``--dist loadgroup`` does not group on
    pytest 9.2 (pytest-xdist issue 1386: it renames node ids, which pytest 9.2 no longer
    lets it do), so the grouping is done here, from the node ids, by the scheduler.

Temporary files
    Each pytest process's temp directory is in its basetemp, and a test that leaves a
    file there fails the run: tests/temp_guard.py (TMP1, TMP2).
"""

from __future__ import annotations

import os
import sys
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import pytest

# Make tests/ importable as a plain directory (s3_server, and for spawned workers).
_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

from s3_server import S3Server, running_s3_server, share_botocore_models  # noqa: E402

# No wall-clock limits on Hypothesis' examples (tests/deadlines.py DL3): the per-example
# deadline and the too_slow health check fail a test on a loaded host, not a slow code path.
# Explicit @settings(...) in a test inherit these unless they name the setting.
from hypothesis import HealthCheck, settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("trinitylake", deadline=None,
                                      suppress_health_check=[HealthCheck.too_slow])
_hypothesis_settings.load_profile("trinitylake")

# The lakehouse fixtures of tests/lakes.py, for every directory (instead of a conftest each),
# and the temp directory's guard.
pytest_plugins = ["lakes", "temp_guard"]

#: Node id prefixes whose tests run on one pytest-xdist worker, with the group's name.
GROUPS = {
    # One SparkSession (tests/spark/conftest.py): a second worker would start a second JVM.
    "tests/spark/": "spark",
    # page_runs starts every page this process selected: on two workers each would run
    # every page.
    "tests/docs/test_docs.py::test_code_blocks_run_and_show_their_output": "docs",
}

#: Exceptions to GROUPS: tests under a grouped prefix that share nothing with the group
#: (tests/spark/test_install.py starts its own Spark in a subprocess, so it runs beside
#: the group's JVM rather than after it).
UNGROUPED = ("tests/spark/test_install.py",)

#: Modules whose tests share a module-scoped fixture that takes seconds to build: kept
#: on one worker so it is built once. (Leaving one out costs time, never correctness.)
WHOLE_MODULES = (
    # One `python -m bench --quick` run (~29 s of CPU) for the module's two tests: on two
    # workers each ran it (measured: 28.1 s and 30.1 s of CPU, on gw1 and gw0).
    "tests/bench/test_bench_smoke.py",
    # One child pytest runs PyIceberg's whole suite for the module's tests.
    "tests/iceberg/test_pyiceberg_behaviors.py",
    "tests/reliability/test_corruption.py",
    "tests/reliability/test_crashes.py",
    "tests/reliability/test_iceberg_crashes.py",
    "tests/reliability/test_sql_fuzz.py",
    "tests/reliability/test_verify_lakehouse.py",
    "tests/sql/test_bounds.py",
    # A module fixture (the TPC-H tables, ~1.1 s of CPU) built once, not on every worker.
    "tests/sql/test_tpch.py",
    # Each parses every module once per process for all its checks.
    "tests/test_architecture.py",
    "tests/test_deadlines.py",
    # One `trinitylake serve` per module (tests/server/conftest.py), and one child pytest
    # for PyIceberg's suite through REST.
    "tests/server/test_rest.py",
    "tests/server/test_rest_duckdb.py",
    "tests/server/test_rest_pyiceberg_behaviors.py",
)


def xdist_scope(nodeid: str) -> str:
    """The unit of work a test belongs to: one worker runs a unit's tests in order."""
    for prefix, group in GROUPS.items():
        if nodeid.startswith(prefix) and not nodeid.startswith(UNGROUPED):
            return group
    module, _, rest = nodeid.partition("::")
    if module in WHOLE_MODULES:
        return module
    if "::" in rest:  # a method: its class (class-scoped fixtures, setup_class)
        return module + "::" + rest.split("::", 1)[0]
    return nodeid


#: What ``--quick`` (``scripts/test --quick``) leaves out: the markers of tests that need a
#: JVM, a storage server, the documentation build, or minutes of their own.
QUICK_EXCLUDES = ("spark", "s3", "gcs", "azure", "docs", "slow")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--quick", action="store_true", default=False,
        help="the fast lane for the edit-test loop: deselect the tests marked "
             + ", ".join(QUICK_EXCLUDES) + " (tests/conftest.py marks most of them by path and fixture)",
    )  # fmt: skip
    parser.addoption(
        "--examples-share", type=int, default=None, metavar="N",
        help="each Hypothesis test runs 1/N of its examples (at least QUICK_MIN_EXAMPLES); "
             f"--quick implies {QUICK_EXAMPLES_SHARE}. scripts/test's side runs use it: they repeat "
             "the main run's properties on other versions of a dependency",
    )  # fmt: skip


def auto_markers(item: pytest.Item) -> set[str]:
    """The markers a test gets from where it is and what it uses, so that no test has to
    be listed anywhere: ``spark`` (under tests/spark/, or the ``spark`` session fixture),
    ``s3`` (the moto server, through any fixture that needs ``s3_server``), ``gcs``
    (fake-gcs-server, through ``gcs_server``), ``docs``
    (under tests/docs/: the site build and the pages' code blocks), ``slow`` for
    SQLAlchemy's compliance suite (tests/sqlalchemy/suite/: about a thousand tests). Any
    other ``slow`` is written on the test itself (``@pytest.mark.slow``)."""
    fixtures = set(getattr(item, "fixturenames", ()))
    found = {marker for prefix, marker in PATH_MARKERS.items() if item.nodeid.startswith(prefix)}
    if "spark" in fixtures:
        found.add("spark")
    if "s3_server" in fixtures:
        found.add("s3")
    if "gcs_server" in fixtures:
        found.add("gcs")
    if "azurite_server" in fixtures:
        found.add("azure")
    return found


#: Folders whose every test gets a marker (see :func:`auto_markers`).
PATH_MARKERS = {
    "tests/spark/": "spark",
    "tests/docs/": "docs",
    "tests/sqlalchemy/suite/": "slow",  # SQLAlchemy's compliance suite: a thousand tests
}


def pytest_ignore_collect(collection_path: Any, config: pytest.Config) -> bool | None:
    """Under ``--quick``, a folder of PATH_MARKERS whose marker the lane leaves out is not
    even collected: its tests would all be deselected, and importing them (PySpark,
    SQLAlchemy's plugin) costs every worker seconds."""
    if not config.getoption("quick"):
        return None
    try:
        relative = collection_path.relative_to(config.rootpath).as_posix() + "/"
    except ValueError:
        return None
    for prefix, marker in PATH_MARKERS.items():
        if marker in QUICK_EXCLUDES and relative.startswith(prefix):
            return True
    return None


#: Under ``--quick``, a Hypothesis test runs this share of its examples (its own
#: ``max_examples``, or the profile's 100), at least QUICK_MIN_EXAMPLES (a test asking for
#: fewer keeps its count): the edit-test loop checks every property on fewer inputs, and
#: the full run (``scripts/test``) searches as deep as each test asks. Examples that
#: failed before are replayed first either way (Hypothesis' example database).
QUICK_EXAMPLES_SHARE = 3
QUICK_MIN_EXAMPLES = 10


def quick_examples(items: list[pytest.Item], share: int = QUICK_EXAMPLES_SHARE) -> None:
    """Give each Hypothesis test among ``items`` (``@given``, or a state machine's
    TestCase) ``max_examples`` divided by ``share``, at least QUICK_MIN_EXAMPLES; once
    per test function (a parametrised test's items share it)."""
    from hypothesis import settings as Settings

    done: set[int] = set()
    for item in items:
        function = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        if getattr(function, "_hypothesis_state_machine_class", None) is not None and item.cls is not None:
            holder, name = item.cls, "settings"  # RuleBasedStateMachine.TestCase: runTest reads self.settings
        elif getattr(function, "is_hypothesis_test", False) and hasattr(function, "_hypothesis_internal_use_settings"):
            holder, name = function, "_hypothesis_internal_use_settings"  # @given reads it at each call
        else:
            continue
        if id(holder) in done:
            continue
        done.add(id(holder))
        current = getattr(holder, name)
        fewer = max(QUICK_MIN_EXAMPLES, current.max_examples // share)
        if fewer < current.max_examples:
            setattr(holder, name, Settings(current, max_examples=fewer))


def add_auto_markers(item: pytest.Item) -> None:
    for name in sorted(auto_markers(item) - {mark.name for mark in item.iter_markers()}):
        item.add_marker(name)


def pytest_itemcollected(item: pytest.Item) -> None:
    """Add :func:`auto_markers` as each test is collected, before ``-m`` selects (so
    ``-m "not s3"`` and the like see them too)."""
    add_auto_markers(item)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--quick``, deselect the tests carrying a marker of QUICK_EXCLUDES. The
    markers are added again first: SQLAlchemy's plugin (tests/sqlalchemy/suite) replaces
    its items after they were collected. Then tell tests/warm_processes.py whether any
    selected test uses S3."""
    for item in items:
        add_auto_markers(item)
    if config.getoption("quick"):
        kept, dropped = [], []
        for item in items:
            names = {mark.name for mark in item.iter_markers()}
            (dropped if names.intersection(QUICK_EXCLUDES) else kept).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
    share = config.getoption("examples_share") or (QUICK_EXAMPLES_SHARE if config.getoption("quick") else 1)
    if share > 1:
        quick_examples(items, share)
    # The tests' forkservers preload s3fs only in a session that runs S3 tests
    # (tests/warm_processes.py S3_PRELOAD: ~0.9 s of CPU per server otherwise wasted).
    import warm_processes

    warm_processes.preload_s3 = any(item.get_closest_marker("s3") is not None for item in items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Once the tests are collected, what the process holds then (the imported modules,
    the collected items: ~265,000 objects after the whole suite's collection) is moved
    out of the cyclic garbage collector's reach (``gc.freeze``): they live as long as the
    process, and each full collection during the tests walked them all again (tests/iceberg,
    tests/sql and tests/format files in one process: the collector's CPU during the tests
    0.74-0.81 s -> 0.19-0.23 s of ~25 s). Garbage the tests make is collected as before,
    only this set is never scanned; what collection left behind is collected first."""
    import gc

    gc.collect()
    gc.freeze()


#: ``TL_TEST_CPU_LOG=FILE``: each test's wall seconds, CPU seconds of its process (every
#: thread) and of the child processes it waited for, its worker and its start (Unix
#: time), appended to FILE as one tab-separated line (how the lanes' budgets are measured on a shared host, where
#: wall time says little: scripts/test's header).
CPU_LOG = os.environ.get("TL_TEST_CPU_LOG")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Iterator[None]:
    if not CPU_LOG:
        yield
        return
    import resource
    import time

    def cpu() -> tuple[float, float]:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime

    start, (own0, children0) = time.monotonic(), cpu()
    yield
    own1, children1 = cpu()
    with open(CPU_LOG, "a") as log:
        log.write(f"{item.nodeid}\t{time.monotonic() - start:.3f}\t{own1 - own0:.3f}\t{children1 - children0:.3f}"
                  f"\t{os.environ.get('PYTEST_XDIST_WORKER', '-')}\t{time.time() - (time.monotonic() - start):.3f}\n")


#: Units that take minutes each (a JVM, child processes, kill rounds, an emulator's
#: hundreds of requests), as node-id prefixes: started before every other unit, in this
#: order. xdist orders units by their number of tests, so a one-test unit of minutes (the
#: hostile run, 32 SIGKILL rounds of compaction, an Azure fault variant) used to start
#: last, when the other workers had nothing left to do, and made the run's tail.
LONG_FIRST = (
    "tests/spark/",  # the "spark" group: every Spark test, one JVM
    "tests/docs/test_docs.py::test_code_blocks_run_and_show_their_output",  # the "docs" group
    *WHOLE_MODULES,
    "tests/reliability/",
    "tests/transaction/test_fault_injection.py",
    "tests/iceberg/test_compaction.py::test_a_fault_at_any",
    "tests/storage/test_exclusive_race.py",
    "tests/docs/",
)

#: Modules whose tests wait far more than they compute (expirations waiting out a grace,
#: a publish margin or the storage clock of E13; races with delays): their wall time
#: is 5-30 times their CPU. Handed out together, every worker waited at once and the
#: cores sat idle (quick lane, quiet host, 2be721d: 60-77 % idle from 20 to 40 s into
#: the run, /proc/stat sampled every 5 s), so at most WAITING_AT_ONCE workers run their
#: units at a time, and they come before the other units while they may (see
#: :class:`_LongFirstQueue`). Found with TL_TEST_CPU_LOG (wall over 3 times CPU).
WAITING = (
    "tests/reliability/test_expiration_handshake.py",
    "tests/reliability/test_long_transactions.py",
    "tests/reliability/test_expiration_in_flight.py",
    "tests/reliability/test_expired_targets.py",
    "tests/reliability/test_expiration_races.py",
    "tests/iceberg/test_retention.py",
    "tests/iceberg/test_locations.py",
    "tests/iceberg/test_expiration.py",
    "tests/iceberg/test_metadata_path.py",
    "tests/transaction/test_transactions.py",
)
#: Where LONG_FIRST's groups and WHOLE_MODULES end.
GROUPS_END = LONG_FIRST.index("tests/reliability/")
#: How many workers may have units of WAITING at once: the others keep the cores busy.
WAITING_AT_ONCE = 2


def _long_rank(scope: str) -> int | None:
    """The place of a unit in LONG_FIRST (its first test's node id, or its group's
    name), or None for every other unit."""
    for rank, prefix in enumerate(LONG_FIRST):
        if scope.startswith(prefix) or any(prefix.startswith(group) and scope == name for group, name in GROUPS.items()):
            return rank
    return None


def _waits(scope: str) -> bool:
    """Whether a unit is of a WAITING module."""
    return scope.startswith(WAITING)


class _LongFirstQueue(OrderedDict):  # type: ignore[type-arg]
    """xdist's work queue (an OrderedDict it pops from the front): the units of
    LONG_FIRST come out first, in its order, except those of WAITING, which come out
    right after its groups and WHOLE_MODULES whenever fewer than WAITING_AT_ONCE other
    workers have one to run (``waiting_now``, set by the scheduler before each pop) and
    after every other unit otherwise; then the others, in xdist's order. (The long and
    waiting units are found once, at the first pop, when xdist has filled the queue.)"""

    _long: list[str] | None = None  # the long units not handed out yet, the next one last
    _groups: list[str] = []  # the same for those of LONG_FIRST's groups and WHOLE_MODULES
    _waiting: list[str] = []  # the same for the units of WAITING
    waiting_now = 0

    def popitem(self, last: bool = True) -> Any:
        if last or not self:
            return super().popitem(last)
        if self._long is None:
            ranked = sorted((rank, i, scope) for i, scope in enumerate(self) if (rank := _long_rank(scope)) is not None)
            self._groups = [scope for rank, _, scope in reversed(ranked) if rank < GROUPS_END]
            self._long = [scope for rank, _, scope in reversed(ranked) if rank >= GROUPS_END and not _waits(scope)]
            self._waiting = [scope for scope in reversed(self) if _waits(scope)]
        self._waiting = [scope for scope in self._waiting if scope in self]
        for queue in [self._groups] + ([self._waiting] if self.waiting_now < WAITING_AT_ONCE else []) + [self._long]:
            while queue:
                scope = queue.pop()
                if scope in self:
                    return scope, self.pop(scope)
        waiting = set(self._waiting)
        scope = next((scope for scope in self if scope not in waiting), None) or self._waiting.pop()
        return scope, self.pop(scope)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``-n``: distribute the units of :func:`xdist_scope`, the long ones
    (LONG_FIRST) first, then the largest first."""
    if config.getvalue("dist") not in ("load", "loadgroup", "loadscope"):
        return None  # --dist each / loadfile / worksteal: as asked
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        """xdist's LoadScopeScheduling with :func:`xdist_scope`'s units, handed out by
        :class:`_LongFirstQueue`, and a unit dropped from ``assigned_work`` once all its
        tests are done. xdist keeps every unit a worker ever ran there and, at each test
        that ends, counts the pending tests of all of them (``_pending_of``, and our
        ``waiting_now`` at each unit handed out looked at every test of them too): work
        quadratic in the number of units (~2,700 in the quick lane): the controller's
        CPU 2.4 -> 1.65 s in the quick lane (its tests under ``--setup-plan``), and each
        unit's node ids are no longer looked up by a scan of the collection (~5,000
        names). What xdist reads in ``assigned_work`` (pending
        tests: more work for a worker, the end of the run, a crashed worker's tests to
        hand out again) is only ever about units with tests left."""

        def __init__(self, config: pytest.Config, log: Any) -> None:
            super().__init__(config, log)
            self.workqueue = _LongFirstQueue()
            self._left: dict[tuple[Any, str], int] = {}  # (worker, unit): its tests not done
            self._index: dict[Any, dict[str, int]] = {}  # worker: node id -> its index there

        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            # The other workers that have a unit of WAITING to run or running (every unit
            # in assigned_work has tests left).
            self.workqueue.waiting_now = sum(
                1 for other, units in self.assigned_work.items() if other is not node and any(map(_waits, units)))
            # xdist's, with the worker's node ids indexed once (it looked each up in the
            # collection's list: a scan per test).
            scope, work_unit = self.workqueue.popitem(last=False)
            self.assigned_work.setdefault(node, {})[scope] = work_unit
            index = self._index.get(node)
            if index is None:
                index = self._index[node] = {nodeid: i for i, nodeid in enumerate(self.registered_collections[node])}
            pending = [index[nodeid] for nodeid, completed in work_unit.items() if not completed]
            self._left[node, scope] = len(pending)
            node.send_runtest_some(pending)

        def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
            nodeid = self.registered_collections[node][item_index]
            scope = self._split_scope(nodeid)
            self.assigned_work[node][scope][nodeid] = True
            self._left[node, scope] -= 1
            if self._left[node, scope] == 0:
                del self.assigned_work[node][scope], self._left[node, scope]
            self._reschedule(node)

    return Scheduling(config, log)


#: memory:// directories shared by the whole session, which the clean-up below keeps:
#: SQLAlchemy's suite runs on one lakehouse (setup.cfg) whose schemas it creates once.
SHARED_MEMORY_ROOTS = ("/sqlalchemy-suite/",)


@pytest.fixture(autouse=True, scope="module")
def memory_filesystem_left_as_found() -> Iterator[None]:
    """Remove the memory:// files a test module leaves behind.

    fsspec's memory filesystem is one dict per process, and listing or probing a
    directory in it scans every key: files left by earlier tests made a later tree test
    70 times slower (6 s alone, 450 s after 300,000 leftover files). Per module, not per
    test: a module's tests may share files (SQLAlchemy's suite creates a class's tables
    while its first test runs). Files that existed before the module stay, and so do
    those under SHARED_MEMORY_ROOTS."""
    memory = sys.modules.get("fsspec.implementations.memory")
    before = set(memory.MemoryFileSystem.store) if memory else set()
    dirs_before = set(memory.MemoryFileSystem.pseudo_dirs) if memory else set()
    yield
    memory = sys.modules.get("fsspec.implementations.memory")
    if memory is None:
        return
    store, dirs = memory.MemoryFileSystem.store, memory.MemoryFileSystem.pseudo_dirs
    for key in [k for k in store if k not in before and not k.startswith(SHARED_MEMORY_ROOTS)]:
        store.pop(key, None)
    dirs[:] = [d for d in dirs if d in dirs_before or d == "" or (d + "/").startswith(SHARED_MEMORY_ROOTS)]


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    share_botocore_models()  # botocore's JSON parsed once per process (tests/s3_server.py)
    with running_s3_server() as server:
        yield server


@pytest.fixture
def s3_storage_options(s3_server: S3Server) -> dict[str, Any]:
    return dict(s3_server.storage_options)


@pytest.fixture
def s3_bucket(s3_server: S3Server) -> str:
    return s3_server.create_bucket()


@pytest.fixture
def s3_root(s3_bucket: str) -> str:
    return f"s3://{s3_bucket}/lake"
