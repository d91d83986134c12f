"""``insert(table).on_conflict_do_update(...)`` and ``.on_conflict_do_nothing(...)``:
TrinityLake SQL's ``INSERT ... ON CONFLICT`` (trinitylake_dbapi.sql.query.merge MG3),
offered as the PostgreSQL and SQLite dialects offer it.

The construct is SQLAlchemy's SQLite one (same arguments: ``index_elements``,
``set_``, ``where``, and ``stmt.excluded`` for the row proposed for insertion), because
TrinityLake SQL writes ON CONFLICT as SQLite does; the dialect's compiler renders its
clauses (:class:`.compiler.TrinityLakeCompiler`). ``index_where`` has no meaning here:
the conflict target is the table's primary key (the driver refuses any other target).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects.sqlite import dml as sqlite_dml

__all__ = ["Insert", "insert"]


class Insert(sqlite_dml.Insert):
    """INSERT with ON CONFLICT for the ``trinitylake`` dialect (see the module)."""

    stringify_dialect = "trinitylake"
    inherit_cache = True


def insert(table: Any) -> Insert:
    """An :class:`Insert` into ``table`` (a Table, an ORM class or an alias), with
    ``on_conflict_do_update(index_elements=[...], set_={...}, where=...)`` and
    ``on_conflict_do_nothing(index_elements=[...])``."""
    return Insert(table)
