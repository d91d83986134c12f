"""Fixtures for the dialect's own tests: a fresh local lakehouse per test.

(The SQLAlchemy compliance suite, with its plugin, is in suite/ and has its own conftest.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
import sqlalchemy as sa


@pytest.fixture
def lake_path(tmp_path: Path) -> Path:
    return tmp_path / "lake"


@pytest.fixture
def lake_url(lake_path: Path) -> str:
    """``trinitylake:////abs/path?create=true`` for a new lakehouse."""
    return f"trinitylake:///{lake_path}?create=true"


@pytest.fixture
def engine(lake_url: str) -> Iterator[sa.Engine]:
    """An engine on a new lakehouse, which has the namespace ``default`` (where
    unqualified names live), and the namespace ``ns``."""
    eng = sa.create_engine(lake_url)
    with eng.begin() as conn:
        conn.exec_driver_sql("CREATE NAMESPACE ns COMMENT 'for tests'")
    yield eng
    eng.dispose()

