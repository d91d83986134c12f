"""``insert(t).on_conflict_do_update(...)`` and ``.on_conflict_do_nothing(...)`` through
the dialect (issue 36, "MERGE and upsert"; trinitylake_sqlalchemy.dml), as the
PostgreSQL and SQLite dialects offer them: Core, executemany, the ORM, and the errors."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from sqla_helpers import versions
from trinitylake_sqlalchemy import insert


def _users(engine: sa.Engine) -> sa.Table:
    metadata = sa.MetaData()
    table = sa.Table(
        "users", metadata,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(20)),
        sa.Column("visits", sa.Integer),
        schema="ns",
    )  # fmt: skip
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(table.insert(), [{"id": 1, "name": "ann", "visits": 1}, {"id": 2, "name": "bob", "visits": 1}])
    return table


def _rows(engine: sa.Engine, table: sa.Table) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.select(table).order_by(table.c.id))]


def test_on_conflict_do_update_with_excluded_and_where(engine: sa.Engine) -> None:
    users = _users(engine)
    before = len(versions(engine))
    stmt = insert(users).values([{"id": 1, "name": "ANN", "visits": 5}, {"id": 3, "name": "cy", "visits": 1}])
    stmt = stmt.on_conflict_do_update(
        index_elements=[users.c.id],
        set_={"name": stmt.excluded.name, "visits": users.c.visits + stmt.excluded.visits},
        where=users.c.visits < 10,
    )
    assert "ON CONFLICT (id) DO UPDATE SET" in str(stmt.compile(engine))
    with engine.begin() as conn:
        assert conn.execute(stmt).rowcount == 2
    assert _rows(engine, users) == [(1, "ANN", 6), (2, "bob", 1), (3, "cy", 1)]
    assert len(versions(engine)) == before + 1


def test_on_conflict_do_nothing_with_executemany(engine: sa.Engine) -> None:
    users = _users(engine)
    with engine.begin() as conn:
        result = conn.execute(
            insert(users).on_conflict_do_nothing(index_elements=["id"]),
            [{"id": 2, "name": "x", "visits": 0}, {"id": 4, "name": "dee", "visits": 0}],
        )
        conn.execute(insert(users).values(id=1, name="y", visits=0).on_conflict_do_nothing())
    assert _rows(engine, users) == [(1, "ann", 1), (2, "bob", 1), (4, "dee", 0)]
    assert result.rowcount == 1


def test_orm_session_upsert(engine: sa.Engine) -> None:
    class Base(orm.DeclarativeBase):
        pass

    class User(Base):
        __tablename__ = "users"
        __table_args__ = {"schema": "ns"}
        id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
        name: orm.Mapped[str] = orm.mapped_column(sa.String(20))
        visits: orm.Mapped[int]

    _users(engine)
    with orm.Session(engine) as session:
        stmt = insert(User).values([{"id": 2, "name": "BOB", "visits": 2}, {"id": 5, "name": "eve", "visits": 1}])
        session.execute(stmt.on_conflict_do_update(index_elements=["id"], set_={"name": stmt.excluded.name}))
        session.commit()
        assert [(u.id, u.name, u.visits) for u in session.scalars(sa.select(User).order_by(User.id))] == [
            (1, "ann", 1), (2, "BOB", 1), (5, "eve", 1),
        ]  # fmt: skip


def test_a_conflict_target_other_than_the_key_is_refused(engine: sa.Engine) -> None:
    users = _users(engine)
    with engine.begin() as conn, pytest.raises(sa.exc.ProgrammingError, match=r"ns\.users.*primary key \(id\)"):
        conn.execute(insert(users).values(id=1, name="z", visits=0).on_conflict_do_nothing(index_elements=["name"]))
    assert _rows(engine, users) == [(1, "ann", 1), (2, "bob", 1)]
