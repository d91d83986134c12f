"""Copied, as ``tests/catalog/conftest.py``, beside PyIceberg's own released
``tests/catalog/test_catalog_behaviors.py`` (see tests/iceberg/test_pyiceberg_behaviors.py):
it overrides the suite's ``catalog`` and ``catalog_with_warehouse`` fixtures (defined in
PyIceberg's ``tests/conftest.py``, parametrised over its InMemoryCatalog and SqlCatalog)
with a TrinityLakeCatalog on a fresh local lakehouse, so every behaviour test runs
against ours, unmodified. A fixture of a nearer conftest wins over one of a farther one.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest

from trinitylake_dbapi.iceberg import TrinityLakeCatalog


def _trinitylake_catalog(name: str, root: Path) -> TrinityLakeCatalog:
    return TrinityLakeCatalog(name, uri=f"file://{root}", create="true")


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """PyIceberg's ``warehouse`` (one directory for the session) is here a directory
    inside the test's lakehouse: a managed table's files, its metadata files included,
    lie inside the lakehouse root (tables M6), and the suite writes to ``warehouse``
    paths (``write.metadata.path``, a table ``location``)."""
    path = tmp_path / "warehouse"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(params=["trinitylake"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Generator[TrinityLakeCatalog, None, None]:
    """A fresh lakehouse whose root is the test's ``tmp_path``: the suite's own locations
    (``f"file://{tmp_path}/new_location"``) lie inside it."""
    cat = _trinitylake_catalog("test_catalog", tmp_path)
    yield cat
    cat.close()


@pytest.fixture(params=["trinitylake"])
def catalog_with_warehouse(warehouse: Path) -> Generator[TrinityLakeCatalog, None, None]:
    """The lakehouse at ``tmp_path`` with its ``warehouse`` property set to the
    ``warehouse`` fixture's directory: new tables go there."""
    cat = TrinityLakeCatalog("test_catalog", uri=f"file://{warehouse.parent}", create="true",
                             warehouse=f"file://{warehouse}")
    yield cat
    cat.close()
