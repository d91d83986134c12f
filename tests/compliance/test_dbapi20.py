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

Re-expressed, because TrinityLake tables hold no rows: the suite's ``insert into T values
(name[, drink])`` becomes creating a table ``T_row<k>`` with ``COMMENT name`` (and
``LOCATION drink``), and ``select name[, drink] from T`` becomes a SELECT of those
comments and locations from ``information_schema.tables``. The assertions are the
suite's own, line for line: cursor_isolation, description, rowcount, fetchone,
fetchmany, fetchall, mixedfetch, None, and _paraminsert (quotes, ``%s``, ``:may``, ``?``
and ``:1e`` inside literals and parameters). executemany inserts by exporting a snapshot
per parameter set (the only statement whose parameter names a new object) and reads the
names back by time travel.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

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

    # -- rows, re-expressed ------------------------------------------------------------------

    def _insert(self, table: str, name_sql: str, drink_sql: str | None = None) -> str:
        """``insert into <table> values (name[, drink])`` as a statement of TrinityLake."""
        self._rows += 1
        sql = f"CREATE TABLE {self.table_prefix}{table}_row{self._rows} (x INT) COMMENT {name_sql}"
        if drink_sql is not None:
            sql += f" LOCATION {drink_sql}"
        return sql

    def _select(self, table: str, drink: bool = False) -> str:
        """``select name[, drink] from <table>``."""
        return (
            "SELECT comment AS name" + (", location AS drink" if drink else "")
            + f" FROM information_schema.tables WHERE table_name LIKE '{self.table_prefix}{table}_row%'"
        )  # fmt: skip

    def _populate(self) -> list[str]:
        return [self._insert("booze", f"'{s}'") for s in self.samples]

    def _paraminsert(self, cur: Any) -> None:
        self.executeDDL2(cur)
        trouble_sql = "'thi%s :may ca%(u)se? troub:1e'"
        cur.execute(self._insert("barflys", "'Victoria Bitter'", trouble_sql))
        self.assertIn(cur.rowcount, (-1, 1))
        assert self.driver.paramstyle == "qmark"
        cur.execute(self._insert("barflys", "?", trouble_sql), ("Cooper's",))
        self.assertIn(cur.rowcount, (-1, 1))
        cur.execute(self._select("barflys", drink=True))
        res = cur.fetchall()
        self.assertEqual(len(res), 2, "cursor.fetchall returned too few rows")
        beers = sorted([res[0][0], res[1][0]])
        self.assertEqual(beers[0], "Cooper's")
        self.assertEqual(beers[1], "Victoria Bitter")
        trouble = "thi%s :may ca%(u)se? troub:1e"
        self.assertEqual(res[0][1], trouble)
        self.assertEqual(res[1][1], trouble)

    def test_cursor_isolation(self) -> None:
        con = self._connect()
        try:
            cur1 = con.cursor()
            cur2 = con.cursor()
            self.executeDDL1(cur1)
            cur1.execute(self._insert("booze", "'Victoria Bitter'"))
            cur2.execute(self._select("booze"))
            booze = cur2.fetchall()
            self.assertEqual(len(booze), 1)
            self.assertEqual(len(booze[0]), 1)
            self.assertEqual(booze[0][0], "Victoria Bitter")
        finally:
            con.close()

    def test_description(self) -> None:
        con = self._connect()
        try:
            cur = con.cursor()
            self.executeDDL1(cur)
            self.assertEqual(cur.description, None)
            cur.execute(self._select("booze"))
            self.assertEqual(len(cur.description), 1)
            self.assertEqual(len(cur.description[0]), 7)
            self.assertEqual(cur.description[0][0].lower(), "name")
            self.assertEqual(cur.description[0][1], self.driver.STRING)
            self.executeDDL2(cur)
            self.assertEqual(cur.description, None)
        finally:
            con.close()

    def test_rowcount(self) -> None:
        con = self._connect()
        try:
            cur = con.cursor()
            self.executeDDL1(cur)
            self.assertIn(cur.rowcount, (-1, 0))
            cur.execute(self._insert("booze", "'Victoria Bitter'"))
            self.assertIn(cur.rowcount, (-1, 1))
            cur.execute(self._select("booze"))
            self.assertIn(cur.rowcount, (-1, 1))
            self.assertEqual(cur.rowcount, 1)
            self.executeDDL2(cur)
            self.assertIn(cur.rowcount, (-1, 0))
        finally:
            con.close()

    def test_executemany(self) -> None:
        con = self._connect()
        try:
            cur = con.cursor()
            self.executeDDL1(cur)
            con.commit()  # EXPORT SNAPSHOT commits on its own
            largs = [("Cooper's",), ("Boag's",)]
            cur.executemany("EXPORT SNAPSHOT ?", largs)
            self.assertIn(cur.rowcount, (-1, 2))
            for (beer,) in largs:  # "select name from booze": each name names a version
                cur.execute("SHOW TABLES IN default FOR SYSTEM_VERSION AS OF ?", (beer,))
                self.assertEqual(cur.fetchall(), [("default", f"{self.table_prefix}booze")])
            cur.execute("SELECT count(*) FROM system.versions WHERE changes = 'lakehouse definition'")
            self.assertEqual(cur.fetchall(), [(2,)])
            margs = [{"beer": "Cooper's"}]
            with self.assertRaises(self.driver.ProgrammingError):  # the names are taken
                cur.executemany("EXPORT SNAPSHOT :beer", margs)
        finally:
            con.close()

    def test_fetchone(self) -> None:
        con = self._connect()
        try:
            cur = con.cursor()
            self.assertRaises(self.driver.Error, cur.fetchone)
            self.executeDDL1(cur)
            self.assertRaises(self.driver.Error, cur.fetchone)
            cur.execute(self._select("booze"))
            self.assertEqual(cur.fetchone(), None)
            self.assertIn(cur.rowcount, (-1, 0))
            cur.execute(self._insert("booze", "'Victoria Bitter'"))
            self.assertRaises(self.driver.Error, cur.fetchone)
            cur.execute(self._select("booze"))
            r = cur.fetchone()
            self.assertEqual(len(r), 1)
            self.assertEqual(r[0], "Victoria Bitter")
            self.assertEqual(cur.fetchone(), None)
            self.assertIn(cur.rowcount, (-1, 1))
        finally:
            con.close()

    def test_fetchmany(self) -> None:
        con = self._connect()
        try:
            cur = con.cursor()
            self.assertRaises(self.driver.Error, cur.fetchmany, 4)
            self.executeDDL1(cur)
            for sql in self._populate():
                cur.execute(sql)
            cur.execute(self._select("booze"))
            r = cur.fetchmany()
            self.assertEqual(len(r), 1, "default of arraysize is one")
            cur.arraysize = 10
            self.assertEqual(len(cur.fetchmany(3)), 3)
            self.assertEqual(len(cur.fetchmany(4)), 2)
            self.assertEqual(len(cur.fetchmany(4)), 0)
            self.assertIn(cur.rowcount, (-1, 6))
            cur.arraysize = 4
            cur.execute(self._select("booze"))
            self.assertEqual(len(cur.fetchmany()), 4)
            self.assertEqual(len(cur.fetchmany()), 2)
            self.assertEqual(len(cur.fetchmany()), 0)
            self.assertIn(cur.rowcount, (-1, 6))
            cur.arraysize = 6
            cur.execute(self._select("booze"))
            rows = cur.fetchmany()
            self.assertIn(cur.rowcount, (-1, 6))
            self.assertEqual(len(rows), 6)
            rows = sorted(r[0] for r in rows)
            for i in range(6):
                self.assertEqual(rows[i], self.samples[i])
            self.assertEqual(len(cur.fetchmany()), 0)
            self.assertIn(cur.rowcount, (-1, 6))
            self.executeDDL2(cur)
            cur.execute(self._select("barflys"))
            self.assertEqual(len(cur.fetchmany()), 0)
            self.assertIn(cur.rowcount, (-1, 0))
        finally:
            con.close()

    def test_fetchall(self) -> None:
        con = self._connect()
        try:
            cur = con.cursor()
            self.assertRaises(self.driver.Error, cur.fetchall)
            self.executeDDL1(cur)
            for sql in self._populate():
                cur.execute(sql)
            self.assertRaises(self.driver.Error, cur.fetchall)
            cur.execute(self._select("booze"))
            rows = cur.fetchall()
            self.assertIn(cur.rowcount, (-1, len(self.samples)))
            self.assertEqual(len(rows), len(self.samples))
            rows = sorted(r[0] for r in rows)
            for i in range(len(self.samples)):
                self.assertEqual(rows[i], self.samples[i])
            self.assertEqual(len(cur.fetchall()), 0)
            self.assertIn(cur.rowcount, (-1, len(self.samples)))
            self.executeDDL2(cur)
            cur.execute(self._select("barflys"))
            rows = cur.fetchall()
            self.assertIn(cur.rowcount, (-1, 0))
            self.assertEqual(len(rows), 0)
        finally:
            con.close()

    def test_mixedfetch(self) -> None:
        con = self._connect()
        try:
            cur = con.cursor()
            self.executeDDL1(cur)
            for sql in self._populate():
                cur.execute(sql)
            cur.execute(self._select("booze"))
            rows1 = cur.fetchone()
            rows23 = cur.fetchmany(2)
            rows4 = cur.fetchone()
            rows56 = cur.fetchall()
            self.assertIn(cur.rowcount, (-1, 6))
            self.assertEqual(len(rows23), 2)
            self.assertEqual(len(rows56), 2)
            rows = [rows1[0], rows23[0][0], rows23[1][0], rows4[0], rows56[0][0], rows56[1][0]]
            rows.sort()
            for i in range(len(self.samples)):
                self.assertEqual(rows[i], self.samples[i])
        finally:
            con.close()

    def test_None(self) -> None:  # noqa: N802 - the suite's name
        con = self._connect()
        try:
            cur = con.cursor()
            self.executeDDL2(cur)
            cur.execute(self._insert("barflys", "'a'"))  # drink NULL
            cur.execute("SELECT location AS drink FROM information_schema.tables "
                        f"WHERE table_name LIKE '{self.table_prefix}barflys_row%'")  # fmt: skip
            r = cur.fetchall()
            self.assertEqual(len(r), 1)
            self.assertEqual(len(r[0]), 1)
            self.assertEqual(r[0][0], None, "NULL value not returned as None")
        finally:
            con.close()
