"""PEP 249 compliance: the ``dbapi-compliance`` suite (``dbapi20.DatabaseAPI20Test``).

Each test runs on a new local lakehouse holding an empty namespace ``default`` (where the
suite's unqualified ``create table dbapi20test_booze`` goes).

Unchanged (inherited as they are): connect, apilevel, threadsafety, paramstyle,
Exceptions, ExceptionsAsConnectionAttributes, commit, rollback, cursor, callproc (the
driver has no callproc, which PEP 249 allows), close, non_idempotent_close, arraysize,
Date, Time, Timestamp, Binary, STRING, BINARY, NUMBER, DATETIME, ROWID; and execute,
setinputsizes and setoutputsize_basic, which run the re-expressed ``_paraminsert``.

The two tests the suite leaves to drivers: nextset (the optional method is absent) and
setoutputsize (accepted and ignored).

Everything else runs as the suite wrote it, on real rows: its ``create table``,
``insert into ... values``, ``select``, ``executemany`` and ``drop table``
(cursor_isolation, description, rowcount, fetchone, fetchmany, fetchall, mixedfetch,
None, and _paraminsert with quotes, ``%s``, ``:may``, ``?`` and ``:1e`` inside literals
and parameters).
"""

from __future__ import annotations

import shutil
import tempfile

import dbapi20

import trinitylake_dbapi


class TestTrinityLakeDBAPI20(dbapi20.DatabaseAPI20Test):
    driver = trinitylake_dbapi
    connect_args: tuple = ()
    connect_kw_args: dict = {}

    def setUp(self) -> None:
        super().setUp()
        self._dir = tempfile.mkdtemp(prefix="dbapi20-")
        location = f"{self._dir}/lake"
        trinitylake_dbapi.connect(location, create=True).close()  # has the namespace default
        self.connect_args = (location,)
        self._rows = 0

    def tearDown(self) -> None:
        super().tearDown()
        shutil.rmtree(self._dir, ignore_errors=True)

    # -- the two tests left to drivers --------------------------------------------------

    def test_nextset(self) -> None:
        con = self._connect()
        try:
            self.assertFalse(hasattr(con.cursor(), "nextset"))  # optional in PEP 249
        finally:
            con.close()

    def test_setoutputsize(self) -> None:
        con = self._connect()
        try:
            cur = con.cursor()
            cur.setoutputsize(1000)
            cur.setoutputsize(2000, 0)
            self._paraminsert(cur)
        finally:
            con.close()
