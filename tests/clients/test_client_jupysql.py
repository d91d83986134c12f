"""jupysql in IPython's InteractiveShell, as a notebook user types it: %sql and %%sql over
an engine, results as DataFrames, and the damaged files and values whose errors must
name the file or column, never InternalError (issue 32)."""

from __future__ import annotations

import decimal
from typing import Any, Iterator

import pytest
import sqlalchemy as sa

from client_cases import (DATE_FUNCTIONS, assert_precise, check_date_row, corrupt_metadata,
                          delete_manifest_list, flip_parquet, read_only)  # fmt: skip
from trinitylake_dbapi import errors


@pytest.fixture
def ipython(engine: sa.Engine) -> Iterator[Any]:
    """An IPython shell with jupysql loaded and connected to the lakehouse. (jupysql and
    IPython are imported here, by the tests that use them, not when every xdist worker
    collects the module: ~0.75 s of CPU per collecting process.)"""
    pytest.importorskip("sql.magic", reason="jupysql is part of the test extra")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "sql")
    shell.user_ns["lake_engine"] = engine
    shell.run_line_magic("sql", "lake_engine")
    yield shell
    # Close jupysql's connections while the shell lives: its exit hook would otherwise
    # print a traceback from a shell already torn down.
    from sql.connection import ConnectionManager

    ConnectionManager.close_all(verbose=False)


def sql(shell: Any, text: str) -> Any:
    """``%sql text`` (a line) or ``%%sql`` (a cell, when the text has several lines)."""
    if "\n" in text:
        return shell.run_cell_magic("sql", "", text)
    return shell.run_line_magic("sql", text)


def test_queries_date_functions_and_sums(ipython: Any) -> None:
    assert sql(ipython, "SELECT id, s FROM ns.t ORDER BY id").DataFrame().to_dict("list") == {
        "id": [1, 2, 3], "s": ["a", "b", "c"]}  # fmt: skip
    check_date_row(sql(ipython, DATE_FUNCTIONS).DataFrame().iloc[0].to_dict())
    df = sql(ipython, "SELECT sum(n) AS total, 12.50 AS price FROM ns.t").DataFrame()
    assert str(df["total"].dtype) == "int64" and df["total"][0] == 60
    assert df["price"][0] == decimal.Decimal("12.50")


def test_a_cell_writes_and_reads_with_variables(ipython: Any) -> None:
    ipython.user_ns["low"] = 2
    sql(ipython, "INSERT INTO ns.t VALUES (4, 'd', 40);\nDELETE FROM ns.t WHERE id = 1")
    df = sql(ipython, "SELECT id FROM ns.t WHERE id >= {{low}} ORDER BY id").DataFrame()
    assert df["id"].tolist() == [2, 3, 4]
    df = sql(ipython, "SELECT date_trunc('month', DATE '2024-05-17') AS m, count(*) AS c\nFROM ns.t").DataFrame()
    assert df["c"][0] == 3


def test_savepoints_are_not_supported(ipython: Any) -> None:
    with pytest.raises(Exception) as raised:
        sql(ipython, "SAVEPOINT before_change")
    assert_precise(raised.value, errors.NotSupportedError, "savepoints are not supported")


# -- damaged files -------------------------------------------------------------------------


def test_corrupt_metadata(ipython: Any, table: str) -> None:
    name = corrupt_metadata(table)
    with pytest.raises(Exception) as raised:
        sql(ipython, "SELECT * FROM ns.t")
    assert_precise(raised.value, errors.CorruptFileError, name)


def test_a_deleted_manifest_list(ipython: Any, table: str) -> None:
    name = delete_manifest_list(table)
    with pytest.raises(Exception) as raised:
        sql(ipython, "INSERT INTO ns.t VALUES (9, 'z', 90)")
    assert_precise(raised.value, errors.MissingFileError, name)


def test_a_flipped_bit_in_a_data_file(ipython: Any, table: str) -> None:
    name = flip_parquet(table)
    with pytest.raises(Exception) as raised:
        sql(ipython, "SELECT count(*) FROM ns.t")
    assert_precise(raised.value, errors.DatabaseError, name)


def test_a_read_only_lakehouse(ipython: Any, location: str) -> None:
    with read_only(location):
        assert sql(ipython, "SELECT count(*) AS c FROM ns.t").DataFrame()["c"][0] == 3
        with pytest.raises(Exception) as raised:
            sql(ipython, "INSERT INTO ns.t VALUES (9, 'z', 90)")
        assert_precise(raised.value, errors.OperationalError, location)


def test_a_timestamp_past_year_9999(ipython: Any) -> None:
    sql(ipython, "CREATE TABLE ns.events (id INT, at TIMESTAMP)")
    with pytest.raises(Exception) as raised:
        sql(ipython, "INSERT INTO ns.events VALUES (1, TIMESTAMP '9999-12-31 23:00:00' + INTERVAL 2 HOUR)")
    assert_precise(raised.value, errors.DataError, "at")
    assert sql(ipython, "SELECT count(*) AS c FROM ns.events").DataFrame()["c"][0] == 0
