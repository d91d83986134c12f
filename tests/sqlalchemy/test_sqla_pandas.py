"""pandas over the dialect (issue 6, acceptance 4)."""

from __future__ import annotations

import pandas as pd
import sqlalchemy as sa


def _tables(engine: sa.Engine) -> None:
    metadata = sa.MetaData()
    for name in ("alpha", "beta"):
        sa.Table(name, metadata, sa.Column("id", sa.Integer, primary_key=True),
                 sa.Column("v", sa.Numeric(10, 2)), schema="ns", comment=f"{name} table")  # fmt: skip
    metadata.create_all(engine)


def test_show_tables_into_a_dataframe(engine):
    _tables(engine)
    df = pd.read_sql_query("SHOW TABLES IN ns", engine)
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["namespace", "table_name"]
    assert df.to_dict("records") == [
        {"namespace": "ns", "table_name": "alpha"},
        {"namespace": "ns", "table_name": "beta"},
    ]


def test_information_schema_with_bound_parameters(engine):
    _tables(engine)
    query = sa.text(
        "SELECT table_name, column_name, data_type, is_nullable "
        "FROM information_schema.columns "
        "WHERE table_schema = :ns AND table_name = :t ORDER BY ordinal_position"
    )
    df = pd.read_sql_query(query, engine, params={"ns": "ns", "t": "beta"})
    assert df.to_dict("records") == [
        {"table_name": "beta", "column_name": "id", "data_type": "int4", "is_nullable": "NO"},
        {"table_name": "beta", "column_name": "v", "data_type": "decimal(10,2)",
         "is_nullable": "YES"},
    ]
    # A parameter holding quotes stays a value.
    df = pd.read_sql_query(
        sa.text("SELECT table_name, comment FROM information_schema.tables WHERE comment = :c"),
        engine,
        params={"c": "alpha table' OR '1'='1"},
    )
    assert df.empty and list(df.columns) == ["table_name", "comment"]


def test_show_versions_into_a_dataframe(engine):
    _tables(engine)
    df = pd.read_sql_query("SHOW VERSIONS", engine)
    assert list(df.columns) == ["version", "created_at", "previous_version",
                                "rollback_from_version", "changes"]  # fmt: skip
    assert sorted(df["version"]) == [0, 1, 2]
