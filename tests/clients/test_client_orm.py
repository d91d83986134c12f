"""SQLAlchemy 2's ORM, as a user writes it: declarative models, a Session, bulk inserts,
relationships read through joins, rowcount, and what the ORM does that TrinityLake does
not (savepoints, keys filled by the database), with the damaged files and values whose
errors must name the file or column, never InternalError (issue 32)."""

from __future__ import annotations

import datetime as dt
from typing import Any
import decimal

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship, selectinload

from client_cases import (DATE_FUNCTIONS, assert_precise, check_date_row, corrupt_metadata,
                          delete_manifest_list, flip_parquet, read_only)  # fmt: skip
from orm_models import remap_each_test
from trinitylake_dbapi import errors


def _declare_models() -> dict[str, Any]:
    """The declarative base and the models of this module, newly mapped."""

    class Base(DeclarativeBase):
        pass

    class Customer(Base):
        __tablename__ = "customers"
        __table_args__ = {"schema": "shop"}
        id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=False)
        name: Mapped[str] = mapped_column(sa.String(50))
        orders: Mapped[list["Order"]] = relationship(back_populates="customer", order_by="Order.id")

    class Order(Base):
        __tablename__ = "orders"
        __table_args__ = {"schema": "shop"}
        id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=False)
        customer_id: Mapped[int] = mapped_column(sa.ForeignKey("shop.customers.id"))
        amount: Mapped[decimal.Decimal] = mapped_column(sa.Numeric(10, 2))
        qty: Mapped[int] = mapped_column(sa.Integer)
        note: Mapped[str | None] = mapped_column(sa.String, nullable=True)
        customer: Mapped[Customer] = relationship(back_populates="orders")

    class Plain(Base):
        """SQLAlchemy's default model shape: an Integer primary key left to the database."""

        __tablename__ = "plain"
        __table_args__ = {"schema": "shop"}
        id: Mapped[int] = mapped_column(sa.Integer, primary_key=True)
        name: Mapped[str] = mapped_column(sa.String)

    class Row(Base):
        """ns.t of client_cases.build, mapped."""

        __tablename__ = "t"
        __table_args__ = {"schema": "ns"}
        id: Mapped[int] = mapped_column(sa.Integer, primary_key=True)
        s: Mapped[str] = mapped_column(sa.String)
        n: Mapped[int] = mapped_column(sa.BigInteger)

    return {"Base": Base, "Customer": Customer, "Order": Order, "Plain": Plain, "Row": Row}


# orm_models: the compliance suite unmaps module-level models (orm.clear_mappers()).
_mapped_models = remap_each_test(globals(), _declare_models)


@pytest.fixture
def shop(engine: sa.Engine) -> sa.Engine:
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE NAMESPACE shop")
    Base.metadata.create_all(engine, tables=[Customer.__table__, Order.__table__, Plain.__table__])
    with Session(engine) as session, session.begin():
        session.add_all([Customer(id=1, name="ann"), Customer(id=2, name="bob")])
        session.execute(sa.insert(Order), [  # an ORM bulk INSERT: one executemany
            {"id": i, "customer_id": 1 + i % 2, "amount": decimal.Decimal(f"{i}.50"), "qty": i}
            for i in range(1, 11)
        ])  # fmt: skip
    return engine


def test_relationships_read_through_joins(shop: sa.Engine) -> None:
    with Session(shop) as session:
        rows = session.execute(
            sa.select(Customer.name, sa.func.count(Order.id), sa.func.sum(Order.qty), sa.func.sum(Order.amount))
            .join(Customer.orders).group_by(Customer.name).order_by(Customer.name)
        ).all()  # fmt: skip
        assert [tuple(r) for r in rows] == [("ann", 5, 30, decimal.Decimal("32.50")),
                                            ("bob", 5, 25, decimal.Decimal("27.50"))]  # fmt: skip
        assert all(type(r[2]) is int for r in rows)  # an integer sum stays an integer
        bob = session.scalars(sa.select(Customer).options(selectinload(Customer.orders)).where(Customer.id == 2)).one()
        assert [o.id for o in bob.orders] == [1, 3, 5, 7, 9]
        order = session.get(Order, 4)
        assert order is not None and order.customer.name == "ann"


def test_rowcount_of_orm_updates_and_deletes(shop: sa.Engine) -> None:
    with Session(shop) as session, session.begin():
        updated = session.execute(sa.update(Order).where(Order.qty > 7).values(note="big"))
        assert updated.rowcount == 3
        deleted = session.execute(sa.delete(Order).where(Order.id <= 2))
        assert deleted.rowcount == 2
    with Session(shop) as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(Order)) == 8
        assert session.scalar(sa.select(sa.func.count()).where(Order.note == "big")) == 3


def test_the_unit_of_work_inserts_updates_and_deletes(shop: sa.Engine) -> None:
    with Session(shop) as session:
        session.add(Order(id=11, customer_id=2, amount=decimal.Decimal("0.01"), qty=1))
        session.get(Order, 1).note = "changed"  # type: ignore[union-attr]
        session.delete(session.get(Order, 2))
        session.commit()
        assert session.scalars(sa.select(Order.id).order_by(Order.id)).all() == [1, *range(3, 12)]
        assert session.get(Order, 1).note == "changed"  # type: ignore[union-attr]


def test_begin_nested_says_savepoints_are_not_supported(shop: sa.Engine) -> None:
    with Session(shop) as session:
        session.add(Customer(id=3, name="cy"))
        with pytest.raises(sa.exc.DBAPIError) as raised:
            with session.begin_nested():
                session.add(Customer(id=4, name="di"))
        assert_precise(raised.value, errors.NotSupportedError, "savepoints are not supported")
        session.rollback()
        assert session.scalar(sa.select(sa.func.count()).select_from(Customer)) == 2


def test_a_key_left_to_the_database_says_there_is_no_autoincrement(shop: sa.Engine) -> None:
    with Session(shop) as session:
        session.add(Plain(name="x"))
        with pytest.raises(sa.exc.DBAPIError) as raised:
            session.commit()
        error = assert_precise(raised.value, errors.IntegrityError, "'id'", "autoincrement")
        assert "primary key" in str(error)
        session.rollback()
        session.add(Plain(id=1, name="x"))
        session.commit()
        assert session.scalars(sa.select(Plain.name)).all() == ["x"]


def test_date_functions_and_decimal_literals(engine: sa.Engine) -> None:
    with Session(engine) as session:
        check_date_row(dict(session.execute(sa.text(DATE_FUNCTIONS)).mappings().one()))
        row = session.execute(sa.select(sa.func.now(), sa.func.date_trunc("year", sa.func.current_date()))).one()
        assert isinstance(row[0], dt.datetime) and row[1].month == 1 and row[1].day == 1
        assert session.scalar(sa.text("SELECT 12.50")) == decimal.Decimal("12.50")


def test_another_drivers_markers_name_the_paramstyle(engine: sa.Engine) -> None:
    with Session(engine) as session:
        with pytest.raises(sa.exc.DBAPIError) as raised:
            session.connection().exec_driver_sql("SELECT * FROM ns.t WHERE id = %(id)s", {"id": 1})
        assert_precise(raised.value, errors.ProgrammingError, "%(id)s", "qmark")


# -- damaged files -------------------------------------------------------------------------


def test_corrupt_metadata(engine: sa.Engine, table: str) -> None:
    name = corrupt_metadata(table)
    with Session(engine) as session, pytest.raises(sa.exc.DBAPIError) as raised:
        session.scalars(sa.select(Row)).all()
    assert_precise(raised.value, errors.CorruptFileError, name)


def test_a_deleted_manifest_list(engine: sa.Engine, table: str) -> None:
    name = delete_manifest_list(table)
    with Session(engine) as session, pytest.raises(sa.exc.DBAPIError) as raised:
        session.add(Row(id=9, s="z", n=90))
        session.commit()
    assert_precise(raised.value, errors.MissingFileError, name)


def test_a_flipped_bit_in_a_data_file(engine: sa.Engine, table: str) -> None:
    name = flip_parquet(table)
    with Session(engine) as session, pytest.raises(sa.exc.DBAPIError) as raised:
        session.get(Row, 1)
    assert_precise(raised.value, errors.DatabaseError, name)


def test_a_read_only_lakehouse(engine: sa.Engine, location: str) -> None:
    with read_only(location), Session(engine) as session:
        assert session.scalar(sa.select(sa.func.sum(Row.n))) == 60
        with pytest.raises(sa.exc.DBAPIError) as raised:
            session.add(Row(id=9, s="z", n=90))
            session.commit()
        assert_precise(raised.value, errors.OperationalError, location)


# -- values no column holds ----------------------------------------------------------------


def test_values_no_column_holds_are_data_errors_naming_the_column(engine: sa.Engine) -> None:
    class Reading(Base):
        __tablename__ = "readings"
        __table_args__ = {"schema": "ns"}
        id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=False)
        value: Mapped[decimal.Decimal | None] = mapped_column(sa.Numeric(10, 2), nullable=True)
        label: Mapped[str | None] = mapped_column(sa.String, nullable=True)
        at: Mapped[dt.datetime | None] = mapped_column(sa.DateTime, nullable=True)

    Reading.__table__.create(engine)
    cases = [
        (Reading(id=1, value=decimal.Decimal("NaN")), "NaN"),
        (Reading(id=2, label=b"\xff\xfe"), "label"),  # type: ignore[arg-type]
    ]
    for reading, named in cases:
        with Session(engine) as session, pytest.raises(sa.exc.DBAPIError) as raised:
            session.add(reading)
            session.commit()
        assert_precise(raised.value, errors.DataError, named)
    with Session(engine) as session:
        with pytest.raises(sa.exc.DBAPIError) as raised:
            session.execute(sa.text(
                "INSERT INTO ns.readings (id, at) VALUES (3, TIMESTAMP '9999-12-31 23:00:00' + INTERVAL 2 HOUR)"))
        assert_precise(raised.value, errors.DataError, "at")
        session.rollback()
        assert session.scalar(sa.select(sa.func.count()).select_from(Reading)) == 0
