"""Primary keys through SQLAlchemy and pandas (issue 36; iceberg.keys PK2): a second ORM
object with a key the table holds, a Core executemany or a pandas ``to_sql`` that would
duplicate a key fails with ``sqlalchemy.exc.IntegrityError`` (pandas wraps it in its DatabaseError) (the driver's PEP 249
IntegrityError, naming the table, the key and the value) and writes nothing."""

from __future__ import annotations

import pandas as pd
import pytest
import sqlalchemy as sa
from sqlalchemy import orm


from tests.orm_models import remap_each_test


def _declare_models() -> dict:
    class Base(orm.DeclarativeBase):
        pass

    class User(Base):
        __tablename__ = "users"
        __table_args__ = {"schema": "ns"}
        id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True, autoincrement=False)
        name: orm.Mapped[str] = orm.mapped_column(sa.String(50))

    return {"Base": Base, "User": User}


# orm_models: the compliance suite unmaps module-level models (orm.clear_mappers()).
_mapped_models = remap_each_test(globals(), _declare_models)


def names(engine: sa.Engine) -> list[tuple]:
    with engine.connect() as conn:
        return sorted(conn.execute(sa.text("SELECT id, name FROM ns.users")).all())


def test_a_second_orm_object_with_the_same_key_is_refused(engine: sa.Engine) -> None:
    Base.metadata.create_all(engine)
    with orm.Session(engine) as session:
        session.add(User(id=1, name="first"))
        session.commit()
    with orm.Session(engine) as session:
        session.add(User(id=1, name="second"))
        with pytest.raises(sa.exc.IntegrityError, match=r"ns\.users already holds key \(id\) = \(1\)"):
            session.commit()
    with orm.Session(engine) as session:  # two new objects with one key, in one flush
        session.add_all([User(id=2, name="a"), User(id=3, name="b")])
        session.commit()
        session.add_all([User(id=4, name="c"), User(id=5, name="d")])
        session.flush()
        session.commit()
    assert names(engine) == [(1, "first"), (2, "a"), (3, "b"), (4, "c"), (5, "d")]


def test_an_orm_key_change_onto_another_row_is_refused(engine: sa.Engine) -> None:
    Base.metadata.create_all(engine)
    with orm.Session(engine) as session:
        session.add_all([User(id=1, name="a"), User(id=2, name="b")])
        session.commit()
        user = session.get(User, 2)
        user.id = 1
        with pytest.raises(sa.exc.IntegrityError, match=r"\(id\) = \(1\)"):
            session.commit()
    assert names(engine) == [(1, "a"), (2, "b")]


def test_core_executemany_and_pandas_to_sql(engine: sa.Engine) -> None:
    Base.metadata.create_all(engine)
    users = User.__table__
    with engine.begin() as conn:
        conn.execute(users.insert(), [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])
    with pytest.raises(sa.exc.IntegrityError, match=r"\(id\) = \(7\) more than once"):
        with engine.begin() as conn:
            conn.execute(users.insert(), [{"id": 7, "name": "x"}, {"id": 7, "name": "y"}])
    frame = pd.DataFrame({"id": [3, 2], "name": ["c", "again"]})
    with pytest.raises(pd.errors.DatabaseError, match=r"already holds key \(id\) = \(2\)") as e:
        frame.to_sql("users", engine, schema="ns", if_exists="append", index=False)
    assert isinstance(e.value.__cause__, sa.exc.IntegrityError)  # pandas wraps SQLAlchemy's error
    pd.DataFrame({"id": [3, 4], "name": ["c", "d"]}).to_sql("users", engine, schema="ns", if_exists="append",
                                                             index=False)  # fmt: skip
    assert names(engine) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
