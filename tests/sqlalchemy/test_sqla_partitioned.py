"""The dialect's ``trinitylake_partitioned_by`` (issue 36): written in CREATE TABLE,
reflected by get_table_options and ``Table(autoload_with=...)``."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa
from sqlalchemy.schema import CreateTable

from trinitylake_sqlalchemy.base import TrinityLakeDialect


def events(metadata: sa.MetaData, partitioned_by: object) -> sa.Table:
    return sa.Table(
        "events", metadata,
        sa.Column("id", sa.BigInteger, primary_key=True), sa.Column("ts", sa.DateTime),
        sa.Column("region", sa.String), schema="ns", comment="clicks",
        trinitylake_partitioned_by=partitioned_by,
    )  # fmt: skip


@pytest.mark.parametrize("given", ["day(ts), region", ["day(ts)", "region"], ("day(ts)", " region ")])
def test_create_table_writes_partitioned_by(given: object) -> None:
    text = str(CreateTable(events(sa.MetaData(), given)).compile(dialect=TrinityLakeDialect()))
    assert text.rstrip().endswith("PARTITIONED BY (day(ts), region) COMMENT 'clicks'")


def test_no_partitioning_writes_no_clause() -> None:
    table = sa.Table("t", sa.MetaData(), sa.Column("id", sa.Integer))
    assert "PARTITIONED" not in str(CreateTable(table).compile(dialect=TrinityLakeDialect()))


def test_a_bad_option_value_is_an_argument_error() -> None:
    with pytest.raises(sa.exc.ArgumentError, match="trinitylake_partitioned_by"):
        str(CreateTable(events(sa.MetaData(), 5)).compile(dialect=TrinityLakeDialect()))


def test_an_unknown_dialect_keyword_is_refused() -> None:
    with pytest.raises(sa.exc.ArgumentError, match="trinitylake_partition_by"):
        sa.Table("t", sa.MetaData(), sa.Column("id", sa.Integer), trinitylake_partition_by="id")


def test_create_insert_reflect_round_trip(engine: sa.Engine) -> None:
    metadata = sa.MetaData()
    table = events(metadata, "day(ts), bucket(4, id)")
    metadata.create_all(engine)
    with engine.begin() as c:
        c.execute(table.insert(), [{"id": i, "ts": dt.datetime(2024, 1, 1 + i % 3), "region": "eu"} for i in range(9)])
    options = sa.inspect(engine).get_table_options("events", schema="ns")
    assert options == {"trinitylake_partitioned_by": "day(ts), bucket(4, id)"}
    reflected = sa.Table("events", sa.MetaData(), schema="ns", autoload_with=engine)
    assert reflected.dialect_options["trinitylake"]["partitioned_by"] == "day(ts), bucket(4, id)"
    with engine.connect() as c:
        partitions = c.exec_driver_sql("SHOW PARTITIONS ns.events").fetchall()
        assert len(partitions) > 3 and sum(p[2] for p in partitions) == 9
        assert c.execute(sa.select(sa.func.count()).select_from(reflected)).scalar() == 9
    # The reflected table creates the same partitioning again.
    copy = reflected.to_metadata(sa.MetaData(), schema="default")
    copy.create(engine)
    assert sa.inspect(engine).get_table_options("events", schema="default") == options


def test_an_unpartitioned_table_has_no_options(engine: sa.Engine) -> None:
    metadata = sa.MetaData()
    sa.Table("plain", metadata, sa.Column("id", sa.Integer), schema="ns")
    metadata.create_all(engine)
    assert sa.inspect(engine).get_table_options("plain", schema="ns") == {}
    with pytest.raises(sa.exc.NoSuchTableError):
        sa.inspect(engine).get_table_options("missing", schema="ns")
