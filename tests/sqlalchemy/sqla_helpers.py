"""Helpers of the dialect's tests."""

from __future__ import annotations

import sqlalchemy as sa


def versions(engine: sa.Engine) -> list[tuple]:
    """SHOW VERSIONS, oldest first: (version, previous_version, changes)."""
    with engine.connect() as conn:
        rows = conn.exec_driver_sql("SHOW VERSIONS").fetchall()
    return sorted((r.version, r.previous_version, r.changes) for r in rows)
