"""Shared fixtures.

Storage backends
    ``storage_location`` is parametrized over ``local`` (a tmp_path directory),
    ``memory`` (a unique memory:// root) and ``s3`` (a fresh bucket on the moto server;
    marked ``s3``, so ``-m "not s3"`` skips it without starting moto). It gives a
    ``StorageLocation``: ``root_uri``, ``storage_options`` and ``open(**kwargs)`` for a
    new ``Storage`` on the same root (e.g. two "connections"). ``storage`` is
    ``storage_location.open()``.

S3
    ``s3_server`` (session): moto on 127.0.0.1 with serialized put handlers (see
    tests/s3_server.py). ``s3_storage_options``: s3fs options for it (a picklable dict).
    ``s3_bucket``: a fresh, empty bucket per test. ``s3_root``: "s3://<fresh bucket>/lake".
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

# Make tests/ importable as a plain directory (s3_server, and for spawned workers).
_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

from s3_server import S3Server, running_s3_server  # noqa: E402

# The lakehouse fixtures of tests/lakes.py, for every directory (instead of a conftest each).
pytest_plugins = ["lakes"]

from trinitylake_dbapi.storage import Storage  # noqa: E402


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
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


@dataclass
class StorageLocation:
    """A root URI and its storage options; ``open()`` makes a new Storage on it."""

    backend: str
    root_uri: str
    storage_options: dict[str, Any] = field(default_factory=dict)

    def open(self, **kwargs: Any) -> Storage:
        return Storage(self.root_uri, dict(self.storage_options) or None, **kwargs)


BACKENDS = ["local", "memory", pytest.param("s3", marks=pytest.mark.s3)]


@pytest.fixture(params=BACKENDS)
def storage_location(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[StorageLocation]:
    backend = request.param
    if backend == "local":
        yield StorageLocation("local", str(tmp_path / "lake"))
    elif backend == "memory":
        loc = StorageLocation("memory", f"memory://test-{uuid.uuid4().hex}/lake")
        yield loc
        cleanup = loc.open()
        cleanup.delete_many(cleanup.list())
    else:
        server: S3Server = request.getfixturevalue("s3_server")
        yield StorageLocation("s3", f"s3://{server.create_bucket()}/lake",
                              dict(server.storage_options))


@pytest.fixture
def storage(storage_location: StorageLocation) -> Storage:
    return storage_location.open()
