"""pandas over the dialect (issue 6, acceptance 4; table data: issue 18, acceptance 3)."""

from __future__ import annotations

import datetime as dt
import decimal

import pandas as pd
import pytest
import sqlalchemy as sa

from trinitylake_sqlalchemy import types as tl


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


# -- table data (issue 18, acceptance 3) --------------------------------------------------

UTC = dt.timezone.utc
D = decimal.Decimal


def _every_type() -> tuple[pd.DataFrame, dict]:
    """A frame with a column of every supported type, and the dtype= that to_sql needs for
    the columns pandas would otherwise write as TEXT (Decimal, bytes, lists, dicts)."""
    frame = pd.DataFrame({
        "i8": [1, -2, 3],
        "f8": [1.5, 2.5, None],
        "f4": pd.Series([0.5, -1.25, None], dtype="float32"),
        "b": [True, False, True],
        "s": ["a", "b'c", None],
        "dec": [D("1.25"), D("-3.50"), None],
        "bin": [b"\x00\x01", b"", None],
        "fx": [b"abcd", b"\xff\xff\xff\xff", None],
        "d": [dt.date(2024, 1, 1), dt.date(1970, 2, 1), None],
        "t": [dt.time(10, 0, 0, 123456), dt.time(0, 0), None],
        "ts": pd.Series([dt.datetime(2024, 1, 1, 10, 0, 0, 123456), dt.datetime(1999, 12, 31), None],
                        dtype="datetime64[us]"),
        "tz": pd.Series([dt.datetime(2024, 1, 1, 10, 0, 0, 123456, tzinfo=UTC),
                         dt.datetime(2024, 2, 1, tzinfo=UTC), None], dtype="datetime64[us, UTC]"),
        "l": [[1, 2], [], None],
        "ll": [[["a"], ["b", None]], [], None],
        "m": [{"a": 1, "b": 2}, {}, None],
        "st": [{"x": 1, "y": "q"}, {"x": None, "y": None}, None],
        "ls": [[{"x": 1, "y": "q"}], [], []],  # not None: apache/iceberg-python#3833
    })  # fmt: skip
    dtype = {
        "f4": sa.REAL, "dec": sa.Numeric(10, 2), "bin": sa.LargeBinary, "fx": tl.FIXED(4),
        "t": sa.Time, "l": sa.ARRAY(sa.BigInteger), "ll": sa.ARRAY(sa.String, dimensions=2),
        "m": tl.MAP(sa.String, sa.BigInteger), "st": tl.STRUCT(("x", sa.Integer), ("y", sa.String)),
        "ls": sa.ARRAY(tl.STRUCT(("x", sa.Integer), ("y", sa.String))),
    }
    return frame, dtype


@pytest.mark.parametrize("method", [None, "multi"])
def test_to_sql_then_read_sql_table_returns_an_equal_frame(engine, method):
    frame, dtype = _every_type()
    assert frame.to_sql("every", engine, schema="ns", index=False, method=method, dtype=dtype) == 3
    back = pd.read_sql_table("every", engine, schema="ns", coerce_float=False)
    # pandas' rules, for every database: a float comes back as float64 (float32 values
    # here are exact), and read_sql_table turns DATE columns into datetime64 and NUMERIC
    # ones into float64.
    read = frame.assign(f4=frame["f4"].astype("float64"))
    pd.testing.assert_frame_equal(back, read.assign(
        d=frame["d"].astype("datetime64[s]"), dec=frame["dec"].astype("float64")))  # fmt: skip
    # read_sql_query keeps the driver's values (dates stay dates).
    query = pd.read_sql_query("SELECT * FROM ns.every", engine, coerce_float=False)
    pd.testing.assert_frame_equal(query, read)
    with engine.connect() as conn:
        types = dict(conn.exec_driver_sql(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'every'"
        ).fetchall())  # fmt: skip
    assert types == {
        "i8": "int8", "f8": "float8", "f4": "float4", "b": "boolean", "s": "varchar",
        "dec": "decimal(10,2)", "bin": "binary", "fx": "fixed(4)", "d": "date", "t": "time",
        "ts": "timestamp", "tz": "timestamptz", "l": "list<int8>", "ll": "list<list<varchar>>",
        "m": "map<varchar, int8>", "st": "struct<x: int4, y: varchar>",
        "ls": "list<struct<x: int4, y: varchar>>",
    }  # fmt: skip


def _snapshots(engine: sa.Engine, namespace: str, table: str) -> int:
    raw = engine.raw_connection()
    try:
        return len(raw.driver_connection.iceberg_catalog().load_table((namespace, table)).snapshots())
    finally:
        raw.close()


def _versions(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return conn.exec_driver_sql("SELECT count(*) FROM system.versions").scalar()


@pytest.mark.slow  # 100,000 rows (~2.1 s of CPU): the full run only
def test_to_sql_of_100000_rows_is_one_append_per_chunk(engine):
    n = 100_000
    frame = pd.DataFrame({"id": range(n), "x": [i / 4 for i in range(n)],
                          "s": [f"row {i}" for i in range(n)]})  # fmt: skip
    before = _versions(engine)
    assert frame.to_sql("big", engine, schema="ns", index=False, chunksize=25_000) == n
    # pandas writes in one transaction: one lakehouse version (CREATE TABLE and the four
    # appends) and four Iceberg snapshots, one per chunk.
    assert _versions(engine) == before + 1
    assert _snapshots(engine, "ns", "big") == 4
    back = pd.read_sql_table("big", engine, schema="ns").sort_values("id", ignore_index=True)
    pd.testing.assert_frame_equal(back, frame)
    # method="multi": one INSERT of several rows per chunk, also one append each.
    frame.head(3_000).to_sql("small", engine, schema="ns", index=False, method="multi", chunksize=1_000)
    assert _snapshots(engine, "ns", "small") == 3


def test_to_sql_if_exists(engine):
    one = pd.DataFrame({"k": ["a", "b"], "v": [1, 2]})
    one.to_sql("t", engine, schema="ns", index=False)
    with pytest.raises(ValueError, match="already exists"):
        one.to_sql("t", engine, schema="ns", index=False, if_exists="fail")
    one.to_sql("t", engine, schema="ns", index=False, if_exists="append")
    assert pd.read_sql_query("SELECT k, count(*) AS n FROM ns.t GROUP BY k ORDER BY k", engine).to_dict(
        "records") == [{"k": "a", "n": 2}, {"k": "b", "n": 2}]  # fmt: skip
    other = pd.DataFrame({"w": [dt.date(2024, 1, 1)]})
    other.to_sql("t", engine, schema="ns", index=False, if_exists="replace")
    assert [c["name"] for c in sa.inspect(engine).get_columns("t", schema="ns")] == ["w"]
    assert pd.read_sql_query("SELECT * FROM ns.t", engine).to_dict("records") == [{"w": dt.date(2024, 1, 1)}]
    # Unqualified names live in the default namespace.
    one.to_sql("plain", engine, index=False)
    assert pd.read_sql_table("plain", engine).equals(one)
