"""The SQLAlchemy ORM and pandas as a new user drives them (issue 32, items 5, 6, 9, 10):
what is not supported says so, and what is works with the types users expect."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import orm

import trinitylake_dbapi as tl
from orm_models import remap_each_test


def _declare_models() -> dict[str, Any]:
    """The declarative base and the models of this module, newly mapped."""

    class Base(orm.DeclarativeBase):
        pass

    class Item(Base):
        """SQLAlchemy's default model shape: an Integer primary key the database would fill."""

        __tablename__ = "items"
        id = sa.Column(sa.Integer, primary_key=True)
        name = sa.Column(sa.String(50))
        qty = sa.Column(sa.Integer)

    return {"Base": Base, "Item": Item}


# orm_models: the compliance suite unmaps module-level models (orm.clear_mappers()).
_mapped_models = remap_each_test(globals(), _declare_models)


@pytest.fixture
def items(engine: sa.Engine) -> sa.Engine:
    Base.metadata.create_all(engine)
    with orm.Session(engine) as session, session.begin():
        session.add_all([Item(id=1, name="a", qty=3), Item(id=2, name="b", qty=4)])
    return engine


# -- item 5: savepoints ----------------------------------------------------------------------

@pytest.mark.parametrize("sql", ["SAVEPOINT sa_1", "RELEASE SAVEPOINT sa_1", "release sa_1",
                                 "ROLLBACK TO SAVEPOINT sa_1", "ROLLBACK TO sa_1",
                                 "ROLLBACK WORK TO SAVEPOINT sa_1"])
def test_savepoint_statements_say_savepoints_are_not_supported(items: sa.Engine, sql: str) -> None:
    with items.connect() as conn, pytest.raises(sa.exc.NotSupportedError) as raised:
        conn.exec_driver_sql(sql)
    assert isinstance(raised.value.orig, tl.NotSupportedError)
    assert "savepoints are not supported" in str(raised.value.orig)
    assert "line 1, column " in str(raised.value.orig)


def test_session_begin_nested_says_savepoints_are_not_supported(items: sa.Engine) -> None:
    with orm.Session(items) as session:
        session.add(Item(id=3, name="c", qty=1))
        with pytest.raises(sa.exc.NotSupportedError, match="savepoints are not supported"):
            with session.begin_nested():
                session.add(Item(id=4, name="d", qty=1))
        session.rollback()
        assert session.scalar(sa.select(sa.func.count()).select_from(Item)) == 2


# -- item 6: an integer primary key left empty -------------------------------------------------

def test_an_empty_integer_primary_key_says_there_is_no_autoincrement(items: sa.Engine) -> None:
    with orm.Session(items) as session:
        session.add(Item(name="no id", qty=1))  # SQLAlchemy leaves the key to the database
        with pytest.raises(sa.exc.IntegrityError) as raised:
            session.commit()
    message = str(raised.value.orig)
    assert isinstance(raised.value.orig, tl.IntegrityError)
    assert "column 'id' of table default.items" in message
    assert "no autoincrement or identity" in message and "supply" in message
    with orm.Session(items) as session, session.begin():
        session.add(Item(id=3, name="with id", qty=1))  # what the message says to do works
    with items.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM items").scalar() == 3


@pytest.mark.parametrize("sql, parameters", [
    ("INSERT INTO items (name, qty) VALUES (?, ?)", ("x", 1)),
    ("INSERT INTO items VALUES (?, ?, ?)", (None, "x", 1)),
    ("INSERT INTO items (id, name) SELECT NULL, 'x'", ()),
])  # fmt: skip
def test_the_message_for_every_way_of_leaving_the_key_empty(items: sa.Engine, sql: str, parameters: Any) -> None:
    with items.connect() as conn:
        cur = conn.connection.dbapi_connection.cursor()
        with pytest.raises(tl.IntegrityError, match="NOT NULL constraint failed.*'id'.*no autoincrement or identity"):
            cur.execute(sql, parameters)
        with pytest.raises(tl.IntegrityError, match="no autoincrement or identity"):
            cur.executemany(sql, [parameters, parameters]) if parameters else cur.execute(sql)
        # A NOT NULL column outside the key keeps the plain message.
        cur.execute("CREATE TABLE plain (k INT NOT NULL, v INT)")
        with pytest.raises(tl.IntegrityError) as raised:
            cur.execute("INSERT INTO plain (v) VALUES (1)")
        assert "autoincrement" not in str(raised.value)
        conn.rollback()


# -- item 9: a column of numpy arrays from pandas (what polars' write_database sends) ----------

@pytest.mark.parametrize("method", [None, "multi"])
def test_pandas_to_sql_of_a_column_of_numpy_arrays(engine: sa.Engine, method: Any) -> None:
    pd = pytest.importorskip("pandas")
    np = pytest.importorskip("numpy")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE lists (id BIGINT, xs LIST<BIGINT>, tags ARRAY<STRING>)")
    frame = pd.DataFrame({
        "id": [1, 2, 3],
        "xs": [np.array([1, 2]), np.array([], dtype=np.int64), None],
        "tags": [np.array(["a"], dtype=object), np.array(["b", "c"]), np.array([], dtype=object)],
    })  # fmt: skip
    assert frame.to_sql("lists", engine, if_exists="append", index=False, method=method) == 3
    with engine.connect() as conn:
        got = [tuple(r) for r in conn.exec_driver_sql("SELECT id, xs, tags FROM lists ORDER BY id")]
    assert got == [(1, [1, 2], ["a"]), (2, [], ["b", "c"]), (3, None, [])]


@pytest.mark.parametrize("method", [None, "multi"])
def test_pandas_to_sql_of_an_arrow_list_column(engine: sa.Engine, method: Any) -> None:
    """polars' write_database: ``to_pandas(use_pyarrow_extension_array=True).to_sql(...)``;
    pandas hands each list over as a numpy array. It used to fail ("cannot bind a value
    of type ndarray") after pandas had created the table, leaving it empty."""
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    frame = pd.DataFrame({
        "id": pd.Series([1, 2, 3], dtype=pd.ArrowDtype(pa.int64())),
        "xs": pd.Series([[1, 2], [], None], dtype=pd.ArrowDtype(pa.list_(pa.int64()))),
    })  # fmt: skip
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE typed (id BIGINT, xs LIST<BIGINT>)")
    assert frame.to_sql("typed", engine, if_exists="append", index=False, method=method) == 3
    # A table pandas creates itself: pandas declares an extension column as TEXT.
    assert frame.to_sql("created", engine, if_exists="append", index=False, method=method) == 3
    with engine.connect() as conn:
        typed = [tuple(r) for r in conn.exec_driver_sql("SELECT id, xs FROM typed ORDER BY id")]
        created = [tuple(r) for r in conn.exec_driver_sql("SELECT id, xs FROM created ORDER BY id")]
    assert typed == [(1, [1, 2]), (2, []), (3, None)]
    assert created == [(1, "[1, 2]"), (2, "[]"), (3, None)]


def test_polars_write_database_of_a_list_column(engine: sa.Engine) -> None:
    pl = pytest.importorskip("polars")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE plists (id BIGINT, xs LIST<BIGINT>)")
    frame = pl.DataFrame({"id": [1, 2], "xs": [[1, 2], []]})
    frame.write_database("plists", engine, if_table_exists="append")
    with engine.connect() as conn:
        got = [tuple(r) for r in conn.exec_driver_sql("SELECT id, xs FROM plists ORDER BY id")]
    assert got == [(1, [1, 2]), (2, [])]


# -- item 8: rowcount through SQLAlchemy --------------------------------------------------------

def test_executemany_rowcount_through_sqlalchemy(items: sa.Engine) -> None:
    table = Item.__table__
    with items.begin() as conn:
        update = table.update().where(table.c.id == sa.bindparam("key")).values(qty=sa.bindparam("new"))
        result = conn.execute(update, [{"key": 1, "new": 30}, {"key": 2, "new": 40}, {"key": 9, "new": 0}])
        assert result.rowcount == 2
        result = conn.execute(table.insert(), [{"id": 5, "name": "e", "qty": 1}, {"id": 6, "name": "f", "qty": 1}])
        assert result.rowcount == 2
    with orm.Session(items) as session, session.begin():  # the ORM's bulk UPDATE by primary key
        session.execute(sa.update(Item), [{"id": 5, "qty": 50}, {"id": 6, "qty": 60}])
    with items.connect() as conn:
        assert conn.execute(sa.select(table.c.qty).order_by(table.c.id)).scalars().all() == [30, 40, 50, 60]
