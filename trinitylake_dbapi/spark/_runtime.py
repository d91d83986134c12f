"""Plumbing shared by the data source and the maintenance jobs.

Executors never receive a Storage or a catalog object: tasks carry a :class:`Location`
(root URI + storage options, picklable) and open what they need through the per-process
caches here. Spark reuses its Python workers, so one worker opens a lakehouse once and
keeps its decoded, immutable node files across tasks.

Memory filesystems (``memory://``) live inside one process and cannot be shared with
Spark's Python workers; use a local path or an object store.

Rules:

  WK1 A reused Python worker does not walk what it has loaded after every task. PySpark's
      daemon runs a full ``gc.collect()`` in a worker after each task it reuses it for;
      with PySpark, pyarrow, PyIceberg and this package loaded that walked ~80,000
      objects, 40-66 ms of CPU per task (372 tasks of tests/spark/test_datasource.py:
      15 s of its 18 s in the workers). :func:`settle`, called where a task opens what
      it needs (:func:`storage`, :func:`catalog`, the table data's FileIO), collects once
      and moves every object then alive into the permanent generation (``gc.freeze``)
      whenever modules were imported since it last did, so the collections after tasks
      walk only what later tasks made. Only in a Spark task of a reused worker
      (``SPARK_REUSE_WORKER``, a ``TaskContext``): never in the driver, a planner process
      or a worker used once. Frozen objects are never freed: what a task holds when a
      settle runs (its own function and partition) stays, a few objects per new import.
"""

from __future__ import annotations

import gc
import itertools
import os
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, TypeVar

from ..catalog import LakehouseCatalog
from ..errors import InvalidLocationError
from ..storage import Storage
from ..storage.schemes import scheme_of_location

_T = TypeVar("_T")
_R = TypeVar("_R")

#: Concurrent storage calls per task (reads, copies, deletes, stats): object stores
#: answer in tens of milliseconds, so one task keeps several requests in flight.
IO_THREADS = 8
#: Read cache of a worker's Storage (immutable files only).
_WORKER_CACHE_BYTES = 64 * 2**20



@dataclass(frozen=True, eq=False)
class Location:
    """A lakehouse root as tasks carry it: root URI and storage options."""

    uri: str
    options: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, uri: str, storage_options: dict | None = None) -> "Location":
        if not isinstance(uri, str):
            raise InvalidLocationError(f"location {uri!r} is not a string")
        if not scheme_of_location(uri).shared:
            raise InvalidLocationError(
                f"location {uri!r}: a memory filesystem lives in one process and Spark's "
                "Python workers cannot see it; use a local path or an object store"
            )
        storage = Storage(uri, dict(storage_options or {}) or None)  # validates the URI
        return cls(storage.root_uri, tuple(sorted((storage_options or {}).items())))

    @property
    def storage_options(self) -> dict | None:
        return dict(self.options) or None

    @property
    def key(self) -> tuple[str, str]:
        """A hashable identity (option values may be unhashable, e.g. dicts)."""
        return self.uri, repr(self.options)


_LOCK = threading.Lock()
_STORAGES: dict[tuple[str, str], Storage] = {}
_CATALOGS: dict[tuple[str, str], LakehouseCatalog] = {}


#: len(sys.modules) when :func:`settle` last looked (WK1).
_SETTLED_MODULES = 0


def in_reused_worker() -> bool:
    """Whether this process runs a Spark task in a Python worker that Spark reuses (WK1)."""
    if not os.environ.get("SPARK_REUSE_WORKER"):
        return False
    try:
        from pyspark import TaskContext
    except ImportError:  # pragma: no cover - no PySpark, no Spark task
        return False
    return TaskContext.get() is not None


def settle() -> None:
    """WK1: in a reused Spark worker, after new imports, collect once and freeze what is
    alive, so the collection PySpark runs after every task skips the loaded modules.
    Cheap when nothing was imported since the last call (one length compared)."""
    global _SETTLED_MODULES
    loaded = len(sys.modules)
    if loaded == _SETTLED_MODULES:
        return
    with _LOCK:
        if loaded == _SETTLED_MODULES:
            return
        _SETTLED_MODULES = loaded
        if in_reused_worker():
            gc.collect()
            gc.freeze()


def storage(location: Location) -> Storage:
    """This process's Storage for ``location`` (cached)."""
    settle()
    with _LOCK:
        found = _STORAGES.get(location.key)
        if found is None:
            found = Storage(location.uri, location.storage_options, cache_bytes=_WORKER_CACHE_BYTES)
            _STORAGES[location.key] = found
        return found


def catalog(location: Location) -> LakehouseCatalog:
    """This process's LakehouseCatalog for ``location`` (cached; versions are immutable,
    so a cached snapshot of version v stays right)."""
    settle()
    with _LOCK:
        found = _CATALOGS.get(location.key)
    if found is None:
        found = LakehouseCatalog(location.uri, storage=storage(location))
        with _LOCK:
            found = _CATALOGS.setdefault(location.key, found)
    return found


def chunks(items: Iterable[_T], size: int) -> Iterator[list[_T]]:
    iterator = iter(items)
    while True:
        chunk = list(itertools.islice(iterator, size))
        if not chunk:
            return
        yield chunk


def thread_map(fn: Callable[[_T], _R], items: Iterable[_T], threads: int = IO_THREADS) -> Iterator[_R]:
    """``map(fn, items)`` with up to ``threads`` calls in flight, in order, reading
    ``items`` lazily in bounded chunks (a task never holds its whole partition)."""
    if threads <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(threads) as pool:
        for chunk in chunks(items, threads * 32):
            yield from pool.map(fn, chunk)


def version_ranges(versions: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted versions compressed to inclusive ranges: [1,2,3,7] -> [(1,3),(7,7)]."""
    out: list[tuple[int, int]] = []
    for v in sorted(set(versions)):
        if out and out[-1][1] == v - 1:
            out[-1] = (out[-1][0], v)
        else:
            out.append((v, v))
    return out


def split_ranges(ranges: list[tuple[int, int]], pieces: int) -> list[tuple[int, int]]:
    """The same versions as ``ranges`` in at least ``pieces`` ranges where possible, so
    a long contiguous history is spread over several tasks."""
    total = sum(b - a + 1 for a, b in ranges)
    if total == 0:
        return []
    size = max(1, -(-total // max(1, pieces)))
    out = []
    for a, b in ranges:
        while a <= b:
            end = min(b, a + size - 1)
            out.append((a, end))
            a = end + 1
    return out


# ---------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------


@dataclass
class Progress:
    """Names every Spark job of one operation and reports each step.

    All jobs run in one job group (``trinitylake-<operation>-<id>``, so
    ``sparkContext.cancelJobGroup`` stops them) and carry a job description
    "trinitylake <operation> [step] <what>" that the Spark UI and the status tracker
    show. ``report``: a callable gets each description; True prints a progress line to
    stderr; None does that only on a local master with stderr on a terminal.
    """

    spark: Any
    operation: str
    report: Any = None
    steps: int = 0
    started: float = field(default_factory=time.monotonic)
    group: str = ""
    _saved: dict = field(default_factory=dict)

    def __enter__(self) -> "Progress":
        self.group = f"trinitylake-{self.operation}-{uuid.uuid4().hex[:8]}"
        sc = self._context()
        if sc is not None:
            for key in ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel"):
                self._saved[key] = sc.getLocalProperty(key)
            sc.setJobGroup(self.group, f"trinitylake {self.operation}")
        if self.report is None:
            master = sc.master if sc is not None else ""
            self.report = bool(master.startswith("local") and sys.stderr.isatty())
        return self

    def __exit__(self, *exc: Any) -> None:
        sc = self._context()
        if sc is not None:
            for key, value in self._saved.items():
                sc.setLocalProperty(key, value)
        if self.report is True and self.steps:
            sys.stderr.write(
                f"\rtrinitylake {self.operation}: {'failed' if exc[0] else 'done'} after "
                f"{self.steps} steps, {time.monotonic() - self.started:.1f} s\n"
            )
            sys.stderr.flush()

    def _context(self) -> Any:
        try:
            return self.spark.sparkContext
        except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
            return None

    def step(self, what: str) -> None:
        self.steps += 1
        description = f"trinitylake {self.operation} [{self.steps}] {what}"
        sc = self._context()
        if sc is not None:
            sc.setJobDescription(description)
        if callable(self.report):
            self.report(description)
        elif self.report:
            elapsed = time.monotonic() - self.started
            bar = "#" * min(self.steps, 30)
            sys.stderr.write(f"\r[{bar:<30}] {elapsed:6.1f} s  {description[:100]:<100}")
            sys.stderr.flush()
