"""Storage faults at every call of an append (issue 17, acceptance 4): the table shows
the old data or the new, never a pointer to a missing file, and the next append works."""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import fsspec
import pyarrow as pa
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog
from trinitylake_dbapi.verify import verify

SCHEMA = pa.schema([("id", pa.int64())])


class FaultyMemory(MemoryFileSystem):
    """The real memory file system, failing at its k-th call once armed: before the call
    (a refused request) or after it (the call took effect, the reply was lost)."""

    protocol = ("memory",)
    calls = 0
    fail_at: int | None = None
    when = "before"

    @classmethod
    def arm(cls, fail_at: int | None, when: str = "before") -> None:
        cls.calls, cls.fail_at, cls.when = 0, fail_at, when

    def _call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        cls = type(self)
        cls.calls += 1
        failing = cls.fail_at is not None and cls.calls == cls.fail_at
        if failing and cls.when == "before":
            raise OSError(f"injected fault at call {cls.calls}")
        result = method(*args, **kwargs)
        if failing:
            raise OSError(f"injected fault after call {cls.calls}")
        return result


for _name in ("cat_file", "pipe_file", "info", "exists", "find", "rm_file", "_open", "ls", "mkdir", "makedirs"):
    setattr(FaultyMemory, _name, (lambda n: lambda self, *a, **k: self._call(getattr(MemoryFileSystem, n).__get__(self), *a, **k))(_name))


@pytest.fixture
def faulty_memory() -> Iterator[type[FaultyMemory]]:
    fsspec.register_implementation("memory", FaultyMemory, clobber=True)
    FaultyMemory.clear_instance_cache()
    FaultyMemory.arm(None)
    try:
        yield FaultyMemory
    finally:
        FaultyMemory.arm(None)
        fsspec.register_implementation("memory", MemoryFileSystem, clobber=True)
        MemoryFileSystem.clear_instance_cache()


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())}, schema=SCHEMA)


def ids_of(location: str) -> list[int]:
    table = TrinityLakeCatalog("check", uri=location).load_table("default.t")
    return sorted(table.scan().to_arrow()["id"].to_pylist())


def new_lake() -> str:
    location = f"memory://iceberg-faults-{uuid.uuid4().hex}/lake"
    catalog = TrinityLakeCatalog("setup", uri=location, create="true")
    catalog.create_table("default.t", SCHEMA).append(rows(1, 2))
    return location


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_fault_at_any_call_of_an_append_leaves_old_or_new_data(faulty_memory: type[FaultyMemory], when: str) -> None:
    location = new_lake()
    table = TrinityLakeCatalog("w", uri=location).load_table("default.t")
    faulty_memory.arm(None)
    table.append(rows(3))
    calls = faulty_memory.calls
    assert calls > 5
    outcomes = {"old": 0, "new": 0}
    for k in range(1, calls + 1):
        location = new_lake()
        table = TrinityLakeCatalog("w", uri=location).load_table("default.t")
        faulty_memory.arm(k, when)
        try:
            table.append(rows(3))
        except Exception:  # noqa: BLE001 - any error: what counts is what the lakehouse shows
            pass
        faulty_memory.arm(None)
        got = ids_of(location)
        assert got in ([1, 2], [1, 2, 3]), (k, got)
        outcomes["old" if got == [1, 2] else "new"] += 1
        report = verify(location, data=True)
        assert report.ok, (k, report.text())
        TrinityLakeCatalog("again", uri=location).load_table("default.t").append(rows(4))
        assert ids_of(location) == sorted(got + [4])
    assert outcomes["old"] > 0
