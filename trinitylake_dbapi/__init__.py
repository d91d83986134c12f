"""trinitylake-dbapi: the TrinityLake lakehouse format for Python."""

from __future__ import annotations

__version__ = "0.1.0"
