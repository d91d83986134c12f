"""Lakehouse locations for the tests, one fixture over every storage backend.

``lake`` is parametrised over ``local`` (a tmp_path directory), ``memory`` (a unique
memory:// root), ``s3`` (a fresh bucket on the moto server; marked ``s3``, so
``-m "not s3"`` skips it without starting moto), ``gs`` (a fresh bucket on
fake-gcs-server, tests/gcs_server.py; marked ``gcs``) and ``az`` (a fresh container on
Azurite, tests/azurite_server.py; marked ``azure``); ``@local_and_memory`` keeps a test to
the first two. It gives a :class:`Lake` with nothing there yet: its ``location`` and
``storage_options``, ``open(**kwargs)`` for a new ``Storage`` on it (two of them act as
two "connections"), ``connect(**kwargs)`` for a DB-API connection (creating the
lakehouse unless told otherwise) and ``files()`` for every file in it (to check that bad
input writes nothing).

The others build on it: ``storage`` is ``lake.open()``; ``memory_lake`` is one memory://
location, for tests that do not depend on the backend; ``conn`` is an open connection on
a new memory:// lakehouse and ``cur`` its cursor.

Every test directory gets these fixtures: tests/conftest.py names this module in
``pytest_plugins``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Iterator

import pytest

import trinitylake_dbapi
from trinitylake_dbapi.storage import Storage

#: The storage backends ``lake`` runs a test on.
BACKENDS = [
    "local",
    "memory",
    pytest.param("s3", marks=pytest.mark.s3),
    pytest.param("gs", marks=pytest.mark.gcs),
    pytest.param("az", marks=pytest.mark.azure),
]
#: The object stores among them, each on its emulator (for tests of one of them at a time).
OBJECT_STORES = [p for p in BACKENDS if not isinstance(p, str)]

#: Written above a test that runs on local disk and memory:// only (because it names the
#: location without the storage options S3 needs, or S3 on moto would only add time).
local_and_memory = pytest.mark.parametrize("lake", ["local", "memory"], indirect=True)


@dataclass
class Lake:
    """A lakehouse location on one backend, with the storage options it needs."""

    backend: str
    location: str
    storage_options: dict[str, Any] = field(default_factory=dict)

    def open(self, **kwargs: Any) -> Storage:
        """A new Storage on the location (``kwargs`` as Storage takes them)."""
        return Storage(self.location, dict(self.storage_options) or None, **kwargs)

    def connect(self, **kwargs: Any) -> trinitylake_dbapi.Connection:
        """A DB-API connection on the location; ``create=True`` unless given."""
        kwargs.setdefault("create", True)
        if self.storage_options:
            kwargs.setdefault("storage_options", dict(self.storage_options))
        return trinitylake_dbapi.connect(self.location, **kwargs)

    def files(self) -> set[str]:
        """Every file under the location, relative to it."""
        return set(self.open().list())


def new_lake(backend: str, request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Lake]:
    """A fresh location on ``backend``, removed afterwards where the test run would not
    (memory:// lives as long as the process)."""
    if backend == "local":
        yield Lake("local", str(tmp_path / "lake"))
    elif backend == "memory":
        lake = Lake("memory", f"memory://test-{uuid.uuid4().hex}/lake")
        yield lake
        storage = lake.open()
        storage.delete_many(storage.list())
    elif backend == "s3":
        server = request.getfixturevalue("s3_server")
        yield Lake("s3", f"s3://{server.create_bucket()}/lake", dict(server.storage_options))
    elif backend == "gs":
        gcs = request.getfixturevalue("gcs_server")
        yield Lake("gs", f"gs://{gcs.create_bucket()}/lake", dict(gcs.storage_options))
    elif backend == "az":
        azurite = request.getfixturevalue("azurite_server")
        yield Lake("az", f"az://{azurite.create_container()}/lake", dict(azurite.storage_options))
    else:
        raise ValueError(f"no such backend {backend!r}")


@pytest.fixture(scope="session")
def gcs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """fake-gcs-server on 127.0.0.1 for the session (tests/gcs_server.py), its log in the
    run's basetemp; fails, never skips, when it cannot start."""
    from gcs_server import running_gcs_server

    with running_gcs_server(tmp_path_factory.mktemp("fake-gcs")) as server:
        yield server


@pytest.fixture(params=BACKENDS)
def lake(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Lake]:
    """A location on each backend, with nothing there yet."""
    yield from new_lake(request.param, request, tmp_path)


@pytest.fixture(scope="session")
def azurite_server() -> Iterator[Any]:
    """Azurite's blob service on 127.0.0.1 for the session (tests/azurite_server.py);
    fails, never skips, when it cannot be installed or started."""
    from azurite_server import running_azurite

    with running_azurite() as server:
        yield server


@pytest.fixture(params=OBJECT_STORES)
def object_lake(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Lake]:
    """A location on each object store (S3, GCS, Azure), with nothing there yet: for the tests
    of what only a store other processes share can show (races between processes)."""
    yield from new_lake(request.param, request, tmp_path)


@pytest.fixture
def storage(lake: Lake) -> Storage:
    """A Storage on each backend's fresh location."""
    return lake.open()


@pytest.fixture
def memory_lake(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Lake]:
    """One memory:// location (for tests that do not depend on the backend)."""
    yield from new_lake("memory", request, tmp_path)


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
