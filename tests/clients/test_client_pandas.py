"""pandas over the dialect, as a user writes it: the cases of issue 32 that pandas
reaches (read_sql, to_sql, to_sql(method='multi'), list columns), and the damaged files
and values whose errors must name the file or column, never InternalError."""

from __future__ import annotations

import datetime as dt
import decimal

import pandas as pd
import pyarrow as pa
import pytest
import sqlalchemy as sa

from client_cases import (DATE_FUNCTIONS, assert_precise, check_date_row, corrupt_metadata,
                          delete_manifest_list, flip_parquet, pending, read_only)  # fmt: skip
from trinitylake_dbapi import errors


def test_read_sql_of_data_and_date_functions(engine: sa.Engine) -> None:
    df = pd.read_sql("SELECT id, s, n FROM ns.t ORDER BY id", engine)
    assert df.to_dict("list") == {"id": [1, 2, 3], "s": ["a", "b", "c"], "n": [10, 20, 30]}
    check_date_row(pd.read_sql(DATE_FUNCTIONS, engine).iloc[0].to_dict())


def test_an_integer_sum_is_int64_and_a_decimal_literal_a_decimal(engine: sa.Engine) -> None:
    df = pd.read_sql("SELECT sum(id) AS ids, sum(n) AS ns, count(*) AS c FROM ns.t", engine)
    assert [str(t) for t in df.dtypes] == ["int64", "int64", "int64"]
    assert df.iloc[0].tolist() == [6, 60, 3]
    df = pd.read_sql("SELECT 12.50 AS price, CAST(3 AS DECIMAL(10,2)) AS three", engine)
    assert df.iloc[0].tolist() == [decimal.Decimal("12.50"), decimal.Decimal("3.00")]


@pytest.mark.parametrize("method", [None, "multi"])
def test_to_sql_appends_and_counts_rows(engine: sa.Engine, method: str | None) -> None:
    frame = pd.DataFrame({"id": range(100, 400), "s": [f"r{i}" for i in range(300)], "n": range(300)})
    written = frame.to_sql("t", engine, schema="ns", if_exists="append", index=False, method=method,
                           chunksize=120)  # fmt: skip
    assert written == 300
    assert pd.read_sql("SELECT count(*) AS c FROM ns.t", engine)["c"][0] == 303
    with engine.begin() as conn:
        assert conn.execute(sa.text("DELETE FROM ns.t WHERE id >= 100")).rowcount == 300


def test_to_sql_of_list_columns(engine: sa.Engine) -> None:
    """A list column as pandas holds it: pyarrow-backed (what polars hands over; values
    reach the driver as numpy arrays) and plain Python lists."""
    frame = pd.DataFrame({
        "id": [1, 2, 3],
        "tags": pd.Series([["a", "b"], [], None], dtype=pd.ArrowDtype(pa.list_(pa.string()))),
        "nums": [[1, 2], [3], []],
    })  # fmt: skip
    frame.to_sql("lists", engine, schema="ns", index=False,
                 dtype={"tags": sa.ARRAY(sa.String), "nums": sa.ARRAY(sa.BigInteger)})  # fmt: skip
    back = pd.read_sql("SELECT id, tags, nums FROM ns.lists ORDER BY id", engine)
    assert [None if v is None else list(v) for v in back["tags"]] == [["a", "b"], [], None]
    assert [list(v) for v in back["nums"]] == [[1, 2], [3], []]


def test_another_drivers_markers_name_the_paramstyle(engine: sa.Engine) -> None:
    with pytest.raises(Exception) as raised:
        pd.read_sql("SELECT * FROM ns.t WHERE id = %(id)s", engine, params={"id": 1})
    error = assert_precise(raised.value, errors.ProgrammingError, "%(id)s", "qmark")
    assert ":id" in str(error)


# -- damaged files -------------------------------------------------------------------------


def test_corrupt_metadata_is_a_corrupt_file_error_naming_it(engine: sa.Engine, table: str) -> None:
    name = corrupt_metadata(table)
    with pytest.raises(Exception) as raised:
        pd.read_sql("SELECT * FROM ns.t", engine)
    assert_precise(raised.value, errors.CorruptFileError, name)


def test_a_deleted_manifest_list_is_a_missing_file_error_naming_it(engine: sa.Engine, table: str) -> None:
    name = delete_manifest_list(table)
    frame = pd.DataFrame({"id": [9], "s": ["z"], "n": [90]})
    with pytest.raises(Exception) as raised:
        frame.to_sql("t", engine, schema="ns", if_exists="append", index=False)
    assert_precise(raised.value, errors.MissingFileError, name)


def test_a_flipped_bit_in_a_data_file_names_it(engine: sa.Engine, table: str) -> None:
    name = flip_parquet(table)
    with pytest.raises(Exception) as raised:
        pd.read_sql("SELECT * FROM ns.t", engine)
    assert_precise(raised.value, errors.DatabaseError, name)


def test_to_sql_into_a_read_only_lakehouse_names_the_path(engine: sa.Engine, location: str) -> None:
    frame = pd.DataFrame({"id": [9], "s": ["z"], "n": [90]})
    with read_only(location):
        assert pd.read_sql("SELECT count(*) AS c FROM ns.t", engine)["c"][0] == 3
        with pytest.raises(Exception) as raised:
            frame.to_sql("t", engine, schema="ns", if_exists="append", index=False)
        assert_precise(raised.value, errors.OperationalError, location)


# -- values no column holds ----------------------------------------------------------------


def test_a_timestamp_past_year_9999_is_a_data_error_naming_the_column(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE ns.events (id INT, at TIMESTAMP)")
    with pytest.raises(Exception) as raised:
        with engine.begin() as conn:
            conn.exec_driver_sql("INSERT INTO ns.events VALUES (1, TIMESTAMP '9999-12-31 23:00:00' + INTERVAL 2 HOUR)")
    assert_precise(raised.value, errors.DataError, "at")
    with pytest.raises(Exception) as raised:
        pd.read_sql("SELECT TIMESTAMP '9999-12-31 23:00:00' + INTERVAL 2 HOUR AS later", engine)
    assert_precise(raised.value, errors.DataError, "later")


def test_a_decimal_nan_is_a_data_error(engine: sa.Engine) -> None:
    """pandas takes Decimal('NaN') for a missing value, so to_sql stores NULL; bound as a
    parameter it reaches the driver, which no DECIMAL holds."""
    frame = pd.DataFrame({"id": [1, 2], "price": [decimal.Decimal("1.50"), decimal.Decimal("NaN")]})
    frame.to_sql("prices", engine, schema="ns", index=False, dtype={"price": sa.Numeric(10, 2)})
    assert pd.read_sql("SELECT price FROM ns.prices ORDER BY id", engine, coerce_float=False)["price"].tolist() == [
        decimal.Decimal("1.50"), None]
    with pytest.raises(Exception) as raised:
        pd.read_sql(sa.text("SELECT * FROM ns.prices WHERE price = :p"), engine,
                    params={"p": decimal.Decimal("NaN")})  # fmt: skip
    assert_precise(raised.value, errors.DataError, "NaN")


def test_to_sql_of_bytes_that_are_not_utf8_is_a_data_error_naming_the_column(engine: sa.Engine) -> None:
    frame = pd.DataFrame({"id": [1, 2], "blob": [b"ok", b"\xff\xfe"]})
    with pytest.raises(Exception) as raised:
        frame.to_sql("blobs", engine, schema="ns", index=False)
    assert_precise(raised.value, errors.DataError, "blob")
    with engine.connect() as conn:
        assert not sa.inspect(conn).has_table("blobs", schema="ns") or conn.exec_driver_sql(
            "SELECT count(*) FROM ns.blobs").scalar() == 0


def test_dates_round_trip(engine: sa.Engine) -> None:
    frame = pd.DataFrame({"d": [dt.date(2024, 2, 29)], "ts": [pd.Timestamp("2024-05-01 12:30")]})
    frame.to_sql("days", engine, schema="ns", index=False)
    back = pd.read_sql("SELECT d, ts, date_trunc('day', ts) AS day FROM ns.days", engine)
    assert back["d"][0] == dt.date(2024, 2, 29)
    assert pd.Timestamp(back["day"][0]) == pd.Timestamp("2024-05-01")
