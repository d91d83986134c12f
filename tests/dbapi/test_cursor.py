"""PEP 249 cursors: description, rowcount, fetching, executemany, closing."""

from __future__ import annotations

from typing import Any

import pytest

import trinitylake_dbapi as tl
from trinitylake_dbapi import errors


@pytest.fixture
def filled(conn: tl.Connection) -> Any:
    cur = conn.cursor()
    for n in ["a", "b", "c", "d", "e"]:
        cur.execute(f"CREATE NAMESPACE {n}")
    return cur


def test_ddl_has_no_result_set(cur: Any) -> None:
    assert cur.description is None and cur.rowcount == -1
    assert cur.execute("CREATE NAMESPACE a") is cur
    assert cur.description is None
    assert cur.rowcount == -1
    for fetch in (cur.fetchone, cur.fetchall, lambda: cur.fetchmany(2)):
        with pytest.raises(errors.ProgrammingError, match="no result set"):
            fetch()


def test_description_and_type_codes(filled: Any) -> None:
    filled.execute("CREATE TABLE a.t (x INT)")
    filled.execute("SHOW VERSIONS")
    assert [d[0] for d in filled.description] == [
        "version", "created_at", "previous_version", "rollback_from_version", "changes"
    ]
    assert all(len(d) == 7 for d in filled.description)
    codes = [d[1] for d in filled.description]
    assert codes[0] == tl.NUMBER and codes[0] != tl.STRING
    assert codes[1] == tl.DATETIME
    assert codes[4] == tl.STRING
    assert tl.STRING == "varchar" and tl.BINARY == "fixed" and tl.ROWID != "int8"
    filled.execute("DESCRIBE a.t")
    assert filled.description[2][1] == "boolean"
    assert {tl.STRING, tl.NUMBER, tl.DATETIME, tl.BINARY, tl.ROWID}  # hashable


def test_fetching(filled: Any) -> None:
    filled.execute("SHOW NAMESPACES")
    assert filled.rowcount == 6  # with default
    assert filled.rownumber == 0
    assert filled.fetchone() == ("a",)
    assert filled.fetchmany() == [("b",)]  # arraysize 1
    filled.arraysize = 2
    assert filled.fetchmany() == [("c",), ("d",)]
    assert filled.fetchmany(10) == [("default",), ("e",)]
    assert filled.fetchone() is None
    assert filled.fetchmany() == [] and filled.fetchall() == []
    filled.execute("SHOW NAMESPACES")
    assert list(filled) == [("a",), ("b",), ("c",), ("d",), ("default",), ("e",)]
    filled.execute("SHOW NAMESPACES LIKE 'z%'")
    assert filled.rowcount == 0 and filled.fetchall() == [] and filled.description is not None
    with pytest.raises(errors.ProgrammingError):
        filled.execute("SHOW NAMESPACES").fetchmany(-1)


def test_a_new_statement_resets_the_result(filled: Any) -> None:
    filled.execute("SHOW NAMESPACES")
    filled.fetchone()
    filled.execute("CREATE NAMESPACE f")
    assert filled.description is None and filled.rowcount == -1
    with pytest.raises(errors.ProgrammingError):
        filled.fetchone()
    with pytest.raises(errors.ObjectExistsError):
        filled.execute("CREATE NAMESPACE f")
    assert filled.description is None


def test_executemany(cur: Any) -> None:
    cur.executemany("CREATE NAMESPACE IF NOT EXISTS a COMMENT ?", [["x"], ["y"]])
    cur.executemany("CREATE NAMESPACE b WITH (k = :v)", [{"v": "1"}])
    cur.execute("CREATE TABLE a.t (x INT)")
    cur.executemany("COMMENT ON TABLE a.t IS ?", [("first",), ("second",)])
    assert cur.rowcount == -1 and cur.description is None
    cur.execute("SELECT comment FROM information_schema.tables")
    assert cur.fetchall() == [("second",)]
    cur.execute("DESCRIBE NAMESPACE a")
    assert cur.fetchall()[1] == ("comment", "x")
    with pytest.raises(errors.ProgrammingError, match="parameter"):
        cur.executemany("COMMENT ON TABLE a.t IS ?", [("ok",), ()])


def test_cursor_close_and_misc(conn: tl.Connection) -> None:
    cur = conn.cursor()
    assert cur.connection is conn
    assert cur.lastrowid is None
    cur.setinputsizes([10])
    cur.setoutputsize(100)
    cur.setoutputsize(100, 0)
    with conn.cursor() as other:
        other.execute("SHOW NAMESPACES")
    assert other.closed
    cur.close()
    cur.close()  # idempotent
    for call in (lambda: cur.execute("SHOW TABLES"), cur.fetchone, lambda: cur.connection):
        with pytest.raises(errors.InterfaceError, match="cursor is closed"):
            call()


def test_operation_must_be_a_string(cur: Any) -> None:
    with pytest.raises(errors.ProgrammingError, match="SQL string"):
        cur.execute(b"SHOW TABLES")


def test_errors_are_pep249_classes(cur: Any) -> None:
    cases = {
        "SHOW TABLES IN": errors.SQLSyntaxError,
        "INSERT INTO a VALUES (1)": errors.ObjectNotFoundError,
        "DROP NAMESPACE nope": errors.ProgrammingError,
        "SELECT nope()": errors.ProgrammingError,  # an unknown function (DuckDB says so)
    }
    for sql, cls in cases.items():
        with pytest.raises(cls) as info:
            cur.execute(sql)
        assert isinstance(info.value, errors.DatabaseError)
        assert "\x1b" not in str(info.value)


def test_cursors_of_one_connection_share_its_transaction(conn: tl.Connection) -> None:
    a, b = conn.cursor(), conn.cursor()
    a.execute("CREATE NAMESPACE shared")
    assert b.execute("SHOW NAMESPACES").fetchall() == [("default",), ("shared",)]


def test_parsed_statements_are_shared_but_never_changed(filled: Any) -> None:
    """Statements are cached by text; one with markers binds a copy each time, one
    without runs as parsed: repeating either gives the same answers."""
    sql = "SHOW NAMESPACES LIKE ?"
    assert filled.execute(sql, ["a"]).fetchall() == [("a",)]
    assert filled.execute(sql, ["b"]).fetchall() == [("b",)]
    assert filled.execute(sql, ("%",)).rowcount == 6
    with pytest.raises(errors.ProgrammingError) as info:
        filled.execute(sql)
    assert str(info.value) == "the statement has 1 parameter marker(s) but no parameters were given"
    with pytest.raises(errors.ProgrammingError) as info:
        filled.execute(sql, [])
    assert str(info.value) == "the statement has 1 parameter marker(s) but 0 parameter(s) were given"
    for params in (None, [], (), {}):
        assert filled.execute("SHOW NAMESPACES LIKE 'c'", params).fetchall() == [("c",)]
    with pytest.raises(errors.ProgrammingError) as info:
        filled.execute("SHOW NAMESPACES LIKE 'c'", ["c"])
    assert str(info.value) == "the statement has no parameter markers but parameters were given"
    with pytest.raises(errors.ProgrammingError) as info:
        filled.executemany("SHOW NAMESPACES LIKE 'c'", [["c"]])
    assert str(info.value) == "the statement has no parameter markers but parameters were given"
    filled.execute("CREATE TABLE a.t (x INT, s STRUCT<a: INT, b: STRING>)")
    filled.execute("DROP TABLE a.t")
    filled.execute("CREATE TABLE a.t (x INT, s STRUCT<a: INT, b: STRING>)")
    assert filled.execute("DESCRIBE TABLE a.t").fetchall() == filled.execute(
        "DESCRIBE TABLE a.t"
    ).fetchall()
    assert filled.execute("SHOW TABLES IN a").fetchall() == [("a", "t")]


def test_a_statement_is_kept_parsed_from_its_second_run(
    filled: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trinitylake_dbapi import driver_session as session_module

    parsed: list[str] = []
    real = session_module.parse_marked

    def counting(sql: str) -> Any:
        parsed.append(sql)
        return real(sql)

    monkeypatch.setattr(session_module, "parse_marked", counting)
    monkeypatch.setattr(session_module, "_PARSED", {})
    monkeypatch.setattr(session_module, "_SEEN", {})
    for _ in range(4):
        assert filled.execute("SHOW NAMESPACES LIKE ?", ["a"]).fetchall() == [("a",)]
    assert parsed == ["SHOW NAMESPACES LIKE ?"] * 2  # once, then kept
    for n in ["x1", "x2", "x3"]:  # one-off statements are parsed and not kept
        filled.execute(f"CREATE NAMESPACE {n}")
    assert len(session_module._PARSED) == 1
    with pytest.raises(errors.SQLSyntaxError):
        filled.execute("SHOW TABLES IN")
    with pytest.raises(errors.SQLSyntaxError):
        filled.execute("SHOW TABLES IN")
    assert len(session_module._PARSED) == 1
