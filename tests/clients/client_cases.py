"""The cases of issue 32 that every client script runs (tests/clients/test_client_*.py).

Each client module runs them through its client as a user would (pandas, polars,
SQLAlchemy's ORM, jupysql, the ``trinitylake`` command); this module only builds the
lakehouse, damages its files as disks and people do, and says what a precise error is:
a PEP 249 error of the expected class, never InternalError, whose message names the
file, column or marker. Items not yet fixed on main are marked with :data:`PENDING`.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
from typing import Any, Callable, Iterator

import pytest

import trinitylake_dbapi as tl
from trinitylake_dbapi.iceberg import planning
from trinitylake_dbapi import errors

#: The rows of ns.t (id INT, s STRING, n BIGINT) that :func:`build` writes.
ROWS = [(1, "a", 10), (2, "b", 20), (3, "c", 30)]


def pending(item: int, why: str) -> Any:
    """The mark of a case whose fix (issue 32 item ``item``) has not landed yet: it must
    fail until it does (strict), so the mark is removed with the fix."""
    return pytest.mark.xfail(strict=True, reason=f"issue 32 item {item}: {why}")


def build(location: str) -> str:
    """A local lakehouse with ns.t holding ROWS in one data file; the table's folder."""
    with tl.connect(location, create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE ns")
        cur.execute("CREATE TABLE ns.t (id INT, s STRING, n BIGINT)")
        cur.execute("INSERT INTO ns.t VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)")
    (table,) = glob.glob(os.path.join(location, "tables", "ns", "t-*"))
    # The tests damage files as if between processes: a process keeps what it decoded
    # before a file was damaged (iceberg.planning PC2, Iceberg files never change), and
    # a later process meets the damage on its first read. Forget the decoded files, as
    # a new process would have none.
    planning.clear_cache()
    return table


def _one(pattern: str) -> str:
    (found,) = glob.glob(pattern)
    return found


def _rewrite(path: str, change: Callable[[bytes], bytes]) -> None:
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(change(data))


def _flip_footer(data: bytes) -> bytes:
    """The last byte of a Parquet file's footer (its Thrift metadata) flipped: DuckDB's
    reader fails with "don't know what type:", naming no file."""
    out = bytearray(data)
    out[len(data) - 9] ^= 0xFF
    return bytes(out)


def corrupt_metadata(table: str) -> str:
    """The table's current metadata JSON made garbage; its file name."""
    path = sorted(glob.glob(os.path.join(table, "metadata", "*.metadata.json")))[-1]
    _rewrite(path, lambda data: b"{not json")
    return os.path.basename(path)


def delete_manifest_list(table: str) -> str:
    """The current snapshot's manifest list deleted; its file name."""
    path = _one(os.path.join(table, "metadata", "snap-*.avro"))
    os.remove(path)
    return os.path.basename(path)


def flip_parquet(table: str) -> str:
    """A bit flipped in the footer of the table's data file; its file name."""
    path = _one(os.path.join(table, "data", "*.parquet"))
    _rewrite(path, _flip_footer)
    return os.path.basename(path)


@contextlib.contextmanager
def read_only(location: str) -> Iterator[str]:
    """The lakehouse made immutable (``chattr +i``: root ignores permission bits, not the
    immutable attribute) while the block runs; yields the location."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    made = subprocess.run(["chattr", "-R", "+i", location], capture_output=True, text=True)
    if made.returncode != 0:
        subprocess.run(["chattr", "-R", "-i", location], capture_output=True)
        pytest.skip(f"this file system has no immutable attribute: {made.stderr.strip()}")
    try:
        yield location
    finally:
        subprocess.run(["chattr", "-R", "-i", location], check=True)


def driver_error(raised: BaseException) -> errors.Error:
    """The driver's error behind what a client raised: a client wraps it (SQLAlchemy's
    ``DBAPIError.orig``, jupysql's ``raise ... from``), never replaces it."""
    seen: BaseException | None = raised
    while seen is not None:
        if isinstance(seen, errors.Error):
            return seen
        orig = getattr(seen, "orig", None)
        seen = orig if isinstance(orig, BaseException) else (seen.__cause__ or seen.__context__)
    raise AssertionError(f"no driver error behind {type(raised).__name__}: {raised}")


def assert_precise(raised: BaseException, kind: type[errors.Error], *names: str) -> errors.Error:
    """The driver error behind ``raised`` is a ``kind`` (never InternalError) whose
    message names each of ``names``; the text the user sees names them too."""
    error = driver_error(raised)
    assert not isinstance(error, errors.InternalError), f"InternalError reached the user: {error}"
    assert isinstance(error, kind), f"{type(error).__name__} (wanted {kind.__name__}): {error}"
    for name in names:
        assert name in str(error), f"{name!r} not in: {error}"
        assert name in str(raised), f"{name!r} not in what the client shows: {raised}"
    return error


#: Date and time functions users type (item 5), each with a check of its value.
DATE_FUNCTIONS = (
    "SELECT now() AS now, today() AS today, current_date AS cd, "
    "date_trunc('month', DATE '2024-05-17') AS month, "
    "extract(year FROM DATE '2024-05-17') AS year"
)


def check_date_row(row: dict[str, Any]) -> None:
    """The values of :data:`DATE_FUNCTIONS`' one row (as a client hands them over)."""
    import datetime as dt

    import pandas as pd

    now = pd.Timestamp(row["now"])
    assert abs(now.tz_convert("UTC") - pd.Timestamp.now(tz="UTC")) < pd.Timedelta(days=1)
    assert pd.Timestamp(row["today"]).date() == pd.Timestamp(row["cd"]).date()
    assert pd.Timestamp(row["month"]).date() == dt.date(2024, 5, 1)
    assert int(row["year"]) == 2024
