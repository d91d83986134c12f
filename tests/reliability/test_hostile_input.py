"""Hostile input: names, parameters, root URIs and time-travel connections (issue 9,
point 5). Names are refused before anything is written, or stored exactly and safely:
no file ever lands outside the root, no path component is longer than 255 bytes."""

from __future__ import annotations

import os
from typing import Any

import pytest

import trinitylake_dbapi
from reliability_helpers import columns, local_files
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.errors import (
    DatabaseError,
    InvalidLocationError,
    InvalidNameError,
    ProgrammingError,
    ReadOnlyError,
)
from trinitylake_dbapi.format.keys import validate_new_name
from trinitylake_dbapi.verify import verify

MAX = 100  # the default name limits, in bytes

HOSTILE_NAMES = [
    "a/b", "/abs", "..", "../escape", "../../../../etc/passwd", ".", "...", "a/../b",
    "a\\b", "C:\\x", "\\\\server\\share", "~", "~root", "$HOME", "%2e%2e%2f", "a%00b",
    "*", "?", "[ab]", "{a,b}", "a|b", "a;b", "a&b", "`rm`", "$(rm)", "'", '"', "a'b",
    "-rf", "--", "con", "nul", "aux", "com1", ".git", ".tl-tmp-x", "_latest_hint.txt",
    "_00000000000000000000000000000000.arrow", "node-x.arrow",
    "a b", " lead", "trail ", "tab\tx", "new\nline", "cr\rx", "nul\x00x", "del\x7fx",
    "esc\x1bx", "bell\x07", "", "\u00a0nbsp", "\u200bzero-width", "\u202eRTL", "\ufeffbom",
    "e\u0301", "é" * 50, "é" * 51, "名" * 33, "名" * 34, "😀" * 25, "😀" * 26,
    "a" * MAX, "a" * (MAX + 1), "\ud800lone", "x\udfff",
]


def _valid(name: str) -> bool:
    try:
        validate_new_name(name, MAX, "name")  # the rule for names this library writes (N2)
        return True
    except InvalidNameError:
        return False


@pytest.fixture
def box(tmp_path: Any) -> Any:
    """A directory holding only the lakehouse, to see any file written beside it."""
    (tmp_path / "box").mkdir()
    return tmp_path / "box"


def _check_confined(box: Any) -> None:
    lake = os.path.realpath(box / "lake")
    for dirpath, dirs, files in os.walk(box):
        for name in dirs + files:
            full = os.path.realpath(os.path.join(dirpath, name))
            assert full == lake or full.startswith(lake + os.sep), full
            assert len(name.encode("utf-8", "surrogateescape")) <= 255, name


def test_hostile_names_through_the_catalog(box: Any) -> None:
    location = str(box / "lake")
    catalog = LakehouseCatalog(location, create=True)
    txn = catalog.begin()
    txn.create_namespace("ns")
    txn.commit()
    stored, refused = [], 0
    for name in HOSTILE_NAMES:
        before = local_files(location)
        for create in (lambda t: t.create_namespace(name),
                       lambda t: t.create_table("ns", name, columns("id"))):
            txn = catalog.begin()
            if _valid(name):
                create(txn)
                txn.commit()
            else:
                with pytest.raises(InvalidNameError):
                    create(txn)
                assert not txn.has_writes
        if _valid(name):
            stored.append(name)
        else:
            refused += 1
            assert local_files(location) == before, name
    _check_confined(box)
    view = catalog.begin()
    namespaces = set(view.list_namespaces())
    tables = {t for _, t in view.list_tables("ns")}
    assert namespaces == set(stored) | {"ns", "default"}
    assert tables == set(stored)
    for name in stored:  # exactly the name given, through its definition
        assert view.describe_namespace(name).name == name
        assert view.describe_table("ns", name).name == name
    assert verify(location, all_versions=True).ok
    assert refused > 15 and len(stored) > 30


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def test_hostile_names_through_sql(box: Any) -> None:
    location = str(box / "lake")
    conn = trinitylake_dbapi.connect(location, create=True, autocommit=True)
    cur = conn.cursor()
    stored = []
    for name in HOSTILE_NAMES:
        if "\x00" in name or any(0xD800 <= ord(c) <= 0xDFFF for c in name):
            continue  # not representable in SQL text; covered through the catalog
        sql = f"CREATE NAMESPACE {_quote(name)}"
        if _valid(name):
            cur.execute(sql)
            stored.append(name)
        else:
            with pytest.raises(ProgrammingError):
                cur.execute(sql)
    assert sorted(r[0] for r in cur.execute("SHOW NAMESPACES").fetchall()) == sorted([*stored, "default"])
    conn.close()
    _check_confined(box)


def test_parameters_cannot_change_a_statement(tmp_path: Any) -> None:
    location = str(tmp_path / "lake")
    conn = trinitylake_dbapi.connect(location, create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    payloads = [
        "x'; DROP NAMESPACE ns; --",
        "x\"; DROP NAMESPACE ns; --",
        "`; DROP NAMESPACE ns; --",
        "?", "??", ":name", "%s", "\\'", "'' OR ''=''", "\x00", "é😀",
        "a" * 10000,
    ]
    for i, payload in enumerate(payloads):
        cur.execute(f"CREATE NAMESPACE n{i} COMMENT ?", [payload])
        (comment,) = [r for r in cur.execute("SHOW NAMESPACES").fetchall() if r[0] == f"n{i}"]
        assert conn.lakehouse.begin().describe_namespace(f"n{i}").comment == payload
    names = {r[0] for r in cur.execute("SHOW NAMESPACES").fetchall()}
    assert names == {"ns", "default"} | {f"n{i}" for i in range(len(payloads))}
    for params in ([], ["a", "b"]):
        with pytest.raises(ProgrammingError):
            cur.execute("CREATE NAMESPACE z COMMENT ?", params)
    with pytest.raises(ProgrammingError):  # a parameter is a value, never a name
        cur.execute("CREATE NAMESPACE ?", ["evil"])
    assert "z" not in {r[0] for r in cur.execute("SHOW NAMESPACES").fetchall()}
    conn.close()


UNQUALIFIED = [
    "s3://bucket/x/../y", "s3://bucket/./x", "s3://bucket//x", "file:///a/./b",
    "file:///tmp/../etc", "/tmp/a//b", "/tmp/a/../b", "memory://../x", "memory://lake/..",
    "lake/../../x", " lake", "lake\n", "lake\x00", "s3:/bucket/x", "s3://", "file://rel/x",
    "", "s3:///x",
]


@pytest.mark.parametrize("uri", UNQUALIFIED)
def test_unqualified_root_uris_are_refused(uri: str, tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidLocationError):
        trinitylake_dbapi.connect(uri, create=True)
    assert os.listdir(tmp_path) == []


def test_time_travel_connections_are_read_only(tmp_path: Any) -> None:
    location = str(tmp_path / "lake")
    conn = trinitylake_dbapi.connect(location, create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute("CREATE TABLE ns.t (id BIGINT)")
    cur.execute("EXPORT SNAPSHOT first")
    conn.close()
    before = {f: os.path.getsize(os.path.join(location, f)) for f in local_files(location)}
    writes = [
        "CREATE NAMESPACE x", "DROP NAMESPACE ns CASCADE", "CREATE TABLE ns.u (id BIGINT)",
        "DROP TABLE ns.t", "ALTER TABLE ns.t ADD COLUMN z BIGINT",
        "ALTER TABLE ns.t RENAME TO ns.v", "ROLLBACK TO VERSION 1", "EXPORT SNAPSHOT second",
        "EXPIRE VERSIONS RETAIN LAST 1",
    ]
    for version in (1, 2, "first"):
        for autocommit in (False, True):
            pinned = trinitylake_dbapi.connect(location, version=version, autocommit=autocommit)
            cur = pinned.cursor()
            for sql in writes:
                with pytest.raises(DatabaseError) as raised:
                    cur.execute(sql)
                    pinned.commit()
                assert isinstance(raised.value, (ReadOnlyError, ProgrammingError)), (sql, raised.value)
            pinned.close()
    after = {f: os.path.getsize(os.path.join(location, f)) for f in local_files(location)}
    assert after == before
