"""Shared fixtures.

Lakehouse locations
    ``lake`` (a fresh location on each storage backend: local, memory and S3),
    ``storage``, ``memory_lake``, ``conn`` and ``cur`` are in tests/lakes.py, which
    ``pytest_plugins`` below registers for every test directory.

S3
    ``s3_server`` (session): moto on 127.0.0.1 with serialized put handlers (see
    tests/s3_server.py). ``s3_storage_options``: s3fs options for it (a picklable dict).
    ``s3_bucket``: a fresh, empty bucket per test. ``s3_root``: "s3://<fresh bucket>/lake".
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

# Make tests/ importable as a plain directory (s3_server, and for spawned workers).
_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

from s3_server import S3Server, running_s3_server  # noqa: E402

# The lakehouse fixtures of tests/lakes.py, for every directory (instead of a conftest each).
pytest_plugins = ["lakes"]


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
