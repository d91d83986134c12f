"""Copied, as ``tests/catalog/conftest.py``, beside PyIceberg's own released
``tests/catalog/test_catalog_behaviors.py`` (see tests/server/test_rest_pyiceberg_behaviors.py):
it overrides the suite's ``catalog`` and ``catalog_with_warehouse`` fixtures with
PyIceberg's RestCatalog talking to a ``trinitylake serve`` application over HTTP, on
127.0.0.1 (the server on a thread of the suite's process, a fresh lakehouse per test at
the test's ``tmp_path``, a bearer token), so every behaviour test runs through the REST
catalog API, unmodified.
"""

from __future__ import annotations

import secrets
from collections.abc import Generator
from pathlib import Path

import pytest
from pyiceberg.catalog.rest import RestCatalog

from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.server import ServerThread, Tokens


def _served(root: Path, warehouse: Path | None = None) -> Generator[RestCatalog, None, None]:
    token = secrets.token_urlsafe(24)
    location = f"file://{root}"
    lakehouse = LakehouseCatalog(location, create=True)
    properties = {"warehouse": f"file://{warehouse}"} if warehouse is not None else None
    server = ServerThread(lakehouse, location, Tokens([token]), properties=properties)
    try:
        yield RestCatalog("test_catalog", uri=server.url, token=token)
    finally:
        server.stop()
        lakehouse.close()


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """A directory inside the test's lakehouse (a managed table's files lie inside it)."""
    path = tmp_path / "warehouse"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(params=["trinitylake-rest"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Generator[RestCatalog, None, None]:
    yield from _served(tmp_path)


@pytest.fixture(params=["trinitylake-rest"])
def catalog_with_warehouse(warehouse: Path) -> Generator[RestCatalog, None, None]:
    """The server's catalog puts new tables under ``warehouse`` (a server setting: the
    client's ``warehouse`` would choose a lakehouse version, RS2)."""
    yield from _served(warehouse.parent, warehouse)
