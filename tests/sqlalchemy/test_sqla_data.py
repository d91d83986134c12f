"""select, insert, update and delete through the dialect; information_schema as a schema;
a BI-style session checked against DuckDB on the same rows (issue 18)."""

from __future__ import annotations

import datetime as dt
import decimal
import random

import duckdb
import sqlalchemy as sa

from sqla_helpers import versions
from trinitylake_sqlalchemy import types as tl
from trinitylake_sqlalchemy.base import TrinityLakeDialect

D = decimal.Decimal


def _sales(engine: sa.Engine) -> sa.Table:
    metadata = sa.MetaData()
    table = sa.Table(
        "sales", metadata,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("day", sa.Date, nullable=False),
        sa.Column("region", sa.String(10)),
        sa.Column("amount", sa.Numeric(10, 2)),
        schema="ns",
    )  # fmt: skip
    metadata.create_all(engine)
    return table


def _snapshots(engine: sa.Engine, table: str) -> int:
    raw = engine.raw_connection()
    try:
        return len(raw.driver_connection.iceberg_catalog().load_table(("ns", table)).snapshots())
    finally:
        raw.close()


def test_the_dialect_says_what_it_does():
    dialect = TrinityLakeDialect()
    assert dialect.supports_statement_cache is True
    assert dialect.supports_multivalues_insert is True
    assert dialect.use_insertmanyvalues is False  # executemany: one INSERT, one append
    assert dialect.insert_executemany_returning is False
    assert dialect.insert_returning is False and dialect.postfetch_lastrowid is False
    assert dialect.supports_sane_rowcount is True
    assert dialect.supports_sane_multi_rowcount is True  # executemany: the total


def test_compiled_sql_is_what_trinitylake_sql_reads(engine):
    t = _sales(engine)
    dialect = engine.dialect
    query = sa.select(t.c.id, t.c.amount).where(t.c.region == "n").order_by(t.c.id).limit(5).offset(2)
    assert str(query.compile(dialect=dialect)) == (
        "SELECT ns.sales.id, ns.sales.amount \nFROM ns.sales \n"
        "WHERE ns.sales.region = ? ORDER BY ns.sales.id\n LIMIT ? OFFSET ?"
    )
    assert str(t.update().where(t.c.id == 1).values(region="s").compile(dialect=dialect)) == (
        "UPDATE ns.sales SET region=? WHERE ns.sales.id = ?"
    )
    assert str(t.delete().where(t.c.id > 1).compile(dialect=dialect)) == (
        "DELETE FROM ns.sales WHERE ns.sales.id > ?"
    )
    month = sa.func.date_trunc("month", t.c.day)
    assert str(sa.select(month).group_by(month).compile(dialect=dialect)) == (
        "SELECT date_trunc('month', ns.sales.day) AS date_trunc_1 \nFROM ns.sales "
        "GROUP BY date_trunc('month', ns.sales.day)"
    )
    assert str(t.insert().compile(dialect=dialect)) == (
        "INSERT INTO ns.sales (id, day, region, amount) VALUES (?, ?, ?, ?)"
    )


def test_insert_select_update_delete(engine):
    t = _sales(engine)
    rows = [{"id": i, "day": dt.date(2024, 1 + i % 3, 1 + i), "region": "ns"[i % 2],
             "amount": D(i) / 4} for i in range(10)]  # fmt: skip
    before = len(versions(engine))
    with engine.begin() as conn:
        conn.execute(t.insert(), rows)  # executemany: one INSERT, one append
    assert len(versions(engine)) == before + 1 and _snapshots(engine, "sales") == 1
    with engine.begin() as conn:  # several rows in one INSERT: one append
        conn.execute(t.insert().values([
            {"id": 10, "day": dt.date(2024, 5, 1), "region": "n", "amount": D("1.50")},
            {"id": 11, "day": dt.date(2024, 5, 2), "region": None, "amount": None},
        ]))  # fmt: skip
    assert _snapshots(engine, "sales") == 2
    with engine.connect() as conn:
        got = conn.execute(sa.select(t.c.id).where(t.c.id > 3).order_by(t.c.id.desc()).limit(3).offset(1))
        assert got.scalars().all() == [10, 9, 8]
        assert conn.execute(sa.select(sa.func.count()).select_from(t)).scalar() == 12
        assert conn.execute(sa.select(t).where(t.c.id == 2)).one() == (2, dt.date(2024, 3, 3), "n", D("0.50"))
    with engine.begin() as conn:
        assert conn.execute(t.update().where(t.c.region == "s").values(amount=t.c.amount * 2)).rowcount == 5
        assert conn.execute(t.update().where(t.c.id == 99).values(amount=0)).rowcount == 0
        assert conn.execute(t.delete().where(t.c.region.is_(None))).rowcount == 1
    with engine.connect() as conn:
        total = conn.execute(sa.select(sa.func.sum(t.c.amount))).scalar()
    assert total == sum(r["amount"] * (2 if r["region"] == "s" else 1) for r in rows) + D("1.50")


def test_a_transaction_that_fails_writes_nothing(engine):
    t = _sales(engine)
    before = len(versions(engine))
    try:
        with engine.begin() as conn:
            conn.execute(t.insert(), [{"id": 1, "day": dt.date(2024, 1, 1)}])
            conn.execute(t.insert(), [{"id": 2, "day": None}])  # NOT NULL
    except sa.exc.IntegrityError:
        pass
    else:
        raise AssertionError("expected IntegrityError")
    assert len(versions(engine)) == before
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(t)).scalar() == 0


def test_information_schema_reflects_as_a_schema(engine):
    _sales(engine)
    insp = sa.inspect(engine)
    assert insp.has_schema("information_schema") and insp.has_schema("system")
    assert insp.get_table_names(schema="information_schema") == ["columns", "schemata", "tables"]
    assert insp.get_table_names(schema="system") == ["versions"]
    assert insp.has_table("columns", schema="information_schema")
    assert not insp.has_table("sales", schema="information_schema")
    columns = insp.get_columns("versions", schema="system")
    assert [(c["name"], type(c["type"])) for c in columns] == [
        ("version", sa.BIGINT), ("created_at", tl.TIMESTAMP), ("previous_version", sa.BIGINT),
        ("rollback_from_version", sa.BIGINT), ("changes", sa.VARCHAR),
    ]  # fmt: skip
    assert insp.get_pk_constraint("tables", schema="information_schema")["constrained_columns"] == []
    # Listed schemas are the lakehouse's namespaces only (Alembic and sqlacodegen reflect them all).
    assert "information_schema" not in insp.get_schema_names()
    # A reflected system table is queried like any other.
    tables = sa.Table("tables", sa.MetaData(), schema="information_schema", autoload_with=engine)
    with engine.connect() as conn:
        query = sa.select(tables.c.table_name).where(tables.c.table_schema == "ns")
        assert conn.execute(query).scalars().all() == ["sales"]
    try:
        insp.get_columns("nope", schema="information_schema")
    except sa.exc.NoSuchTableError:
        pass
    else:
        raise AssertionError("expected NoSuchTableError")


def test_a_bi_session_agrees_with_duckdb(engine):
    t = _sales(engine)
    rng = random.Random(18)
    rows = [(i, dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(366)),
             rng.choice(["north", "south", None]), D(rng.randrange(-10_000, 100_000)) / 100)
            for i in range(2_000)]  # fmt: skip
    with engine.begin() as conn:
        conn.execute(t.insert(), [dict(zip(("id", "day", "region", "amount"), r)) for r in rows])
    oracle = duckdb.connect()
    oracle.execute("CREATE TABLE sales (id INT, day DATE, region VARCHAR, amount DECIMAL(10,2))")
    oracle.executemany("INSERT INTO sales VALUES (?, ?, ?, ?)", rows)

    # What a BI tool does: look around, preview, count, then chart a monthly total.
    insp = sa.inspect(engine)
    assert "sales" in insp.get_table_names(schema="ns")
    sales = sa.Table("sales", sa.MetaData(), schema="ns", autoload_with=engine)
    assert [c["name"] for c in insp.get_columns("sales", schema="ns")] == ["id", "day", "region", "amount"]
    month = sa.func.date_trunc("month", sales.c.day).label("month")
    with engine.connect() as conn:
        preview = conn.execute(sa.select(sales).limit(100)).fetchall()
        count = conn.execute(sa.select(sa.func.count()).select_from(sales)).scalar()
        monthly = conn.execute(
            sa.select(month, sales.c.region, sa.func.sum(sales.c.amount).label("total"),
                      sa.func.count().label("n"))
            .group_by(month, sales.c.region).order_by(month, sales.c.region.nulls_first())
        ).fetchall()  # fmt: skip
    assert len(preview) == 100 and set(preview) <= set(rows)
    assert count == 2_000
    expected = oracle.execute(
        "SELECT date_trunc('month', day) AS month, region, sum(amount), count(*) FROM sales "
        "GROUP BY ALL ORDER BY month, region NULLS FIRST"
    ).fetchall()
    assert [tuple(r) for r in monthly] == expected
    assert len(monthly) == 36 and all(isinstance(r.total, D) for r in monthly)
    assert sum(r.total for r in monthly) == sum(r[3] for r in rows)
