"""Fixtures of the client scripts: a local lakehouse with ns.t (client_cases.build) and a
SQLAlchemy engine on it."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from client_cases import build


@pytest.fixture
def location(tmp_path: Path) -> str:
    """A local lakehouse holding ns.t (client_cases.ROWS)."""
    path = str(tmp_path / "lake")
    build(path)
    return path


@pytest.fixture
def table(location: str) -> str:
    """The folder of ns.t's files."""
    import glob
    import os

    (found,) = glob.glob(os.path.join(location, "tables", "ns", "t-*"))
    return found


@pytest.fixture
def engine(location: str) -> Iterator["sqlalchemy.Engine"]:  # noqa: F821
    """A SQLAlchemy engine on the lakehouse, as users create one."""
    import sqlalchemy as sa

    eng = sa.create_engine(f"trinitylake:///{location}")
    yield eng
    eng.dispose()
