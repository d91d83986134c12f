"""Lakehouses for the SQL, DB-API and shell tests: ``lake`` is a fresh local (tmp_path)
or memory:// lakehouse location; ``lake.connect(**kw)`` opens a connection on it and
``lake.files()`` lists every file in it (to check that bad input writes nothing).

Registered for every test directory by ``pytest_plugins`` in tests/conftest.py.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Iterator

import pytest

import trinitylake_dbapi
from trinitylake_dbapi.storage import Storage


@dataclass
class Lake:
    backend: str
    location: str
    storage_options: dict[str, Any] = field(default_factory=dict)

    def connect(self, **kwargs: Any) -> trinitylake_dbapi.Connection:
        kwargs.setdefault("create", True)
        if self.storage_options:
            kwargs.setdefault("storage_options", dict(self.storage_options))
        return trinitylake_dbapi.connect(self.location, **kwargs)

    def files(self) -> set[str]:
        return set(Storage(self.location, dict(self.storage_options) or None).list())


def _lake(backend: str, tmp_path: Any) -> Iterator[Lake]:
    if backend == "local":
        yield Lake("local", str(tmp_path / "lake"))
    else:
        lake = Lake("memory", f"memory://sqltest-{uuid.uuid4().hex}/lake")
        yield lake
        storage = Storage(lake.location)
        storage.delete_many(storage.list())


@pytest.fixture(params=["local", "memory"])
def lake(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Lake]:
    """A location on each backend, with nothing there yet."""
    yield from _lake(request.param, tmp_path)


@pytest.fixture
def memory_lake(tmp_path: Any) -> Iterator[Lake]:
    """One memory:// location (for tests that do not depend on the backend)."""
    yield from _lake("memory", tmp_path)


@pytest.fixture
def conn(memory_lake: Lake) -> Iterator[trinitylake_dbapi.Connection]:
    """An open connection on a new memory:// lakehouse."""
    c = memory_lake.connect()
    yield c
    if not c.closed:
        c.close()


@pytest.fixture
def cur(conn: trinitylake_dbapi.Connection) -> Any:
    return conn.cursor()
