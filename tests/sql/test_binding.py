"""Parameters are bound into the syntax tree: hostile values stay values."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import uuid

import pytest
from sqlglot import exp

from trinitylake_dbapi.errors import DataError, ProgrammingError
from trinitylake_dbapi.sql.binding import bind, constant, to_node
from trinitylake_dbapi.sql.dialect import parse_marked, parse_statement

HOSTILE = [
    "it's",
    "'; DROP NAMESPACE sales; --",
    "a ? b :name ?",
    "/* comment */ -- line",
    'double "quotes" and `backquotes`',
    "back\\slash\\",
    "",
    "multi\nline;\n",
    "ünïcödé ✓",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_strings_stay_values(value: str) -> None:
    s = bind(parse_statement("SHOW TABLES IN n LIKE ?"), [value])
    assert constant(s.args["like"], "x") == value
    s = bind(parse_statement("SHOW TABLES IN n LIKE :p"), {"p": value})
    assert constant(s.args["like"], "x") == value
    # Nothing else changed: the namespace is still the identifier written.
    assert s.args["namespace"].this == "n"


def test_bind_does_not_touch_the_parsed_statement() -> None:
    parsed = parse_statement("SELECT ?, ?")
    bind(parsed, [1, 2])
    assert len(list(parsed.find_all(exp.Placeholder))) == 2


def test_parameters_bind_in_written_order() -> None:
    s = bind(parse_statement("CREATE NAMESPACE n COMMENT ? WITH (a = ?, b = ?)"), ["c", "x", "y"])
    assert constant(s.args["comment"], "") == "c"
    assert [constant(p.args["value"], "") for p in s.args["properties"]] == ["x", "y"]


def test_named_parameters_repeat() -> None:
    s = bind(parse_statement("SELECT :a AS x, :b AS y, :a AS z"), {"a": 1, "b": "two"})
    assert [constant(e.this, "") for e in s.selects] == [1, "two", 1]


@pytest.mark.parametrize(
    "value",
    [None, True, False, 0, -7, 2**70, 1.5, -0.25, decimal.Decimal("-12.340"), "s", b"\x00\xff",
     dt.datetime(2024, 5, 1, 12, 30, 1, 500), dt.date(2024, 2, 29), dt.time(23, 59, 58),
     dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))],
)  # fmt: skip
def test_values_round_trip(value: object) -> None:
    assert constant(to_node(value), "x") == value


def test_special_floats_and_uuid() -> None:
    assert math.isnan(constant(to_node(float("nan")), "x"))
    assert constant(to_node(float("inf")), "x") == float("inf")
    assert constant(to_node(float("-inf")), "x") == float("-inf")
    u = uuid.uuid4()
    assert constant(to_node(u), "x") == str(u)
    with pytest.raises(DataError, match="decimal"):  # the value's fault, not the SQL's (issue 32)
        to_node(decimal.Decimal("NaN"))
    with pytest.raises(ProgrammingError, match="cannot bind a value of type object"):
        to_node(object(), "#1")


@pytest.mark.parametrize(
    "sql, params, message",
    [
        ("SELECT ?", None, "no parameters were given"),
        ("SELECT ?", [], "1 parameter marker"),
        ("SELECT ?, ?", [1], "2 parameter marker"),
        ("SELECT ?", [1, 2], "2 parameter"),
        ("SELECT 1", [1], "no parameter markers"),
        ("SELECT ?", {"a": 1}, "sequence"),
        ("SELECT ?", "x", "sequence"),
        ("SELECT :a", [1], "mapping"),
        ("SELECT :a", {"b": 1}, "no value for parameter :a"),
        ("SELECT :a, ?", {"a": 1}, "not both"),
    ],
)
def test_parameter_mismatches(sql: str, params: object, message: str) -> None:
    with pytest.raises(ProgrammingError, match=message):
        bind(parse_statement(sql), params)


def test_no_parameters_is_fine_either_way() -> None:
    for params in (None, [], (), {}):
        assert bind(parse_statement("SELECT 1"), params).sql() == "SELECT 1"


def test_constant_refuses_expressions() -> None:
    with pytest.raises(ProgrammingError, match="constant"):
        constant(parse_statement("SELECT a + 1").selects[0], "the value")


@pytest.mark.parametrize(
    "sql",
    [
        "SHOW TABLES IN n LIKE ?",
        "SHOW TABLES IN n LIKE :p",
        "SELECT ?, ?",
        "CREATE NAMESPACE n COMMENT ? WITH (a = ?)",
        "ROLLBACK TO VERSION ?",
        "SELECT @x",
        "SELECT * FROM system.tables WHERE table_name = :name AND namespace LIKE ?",
    ],
)
def test_statements_with_markers_are_marked(sql: str) -> None:
    statement, markers = parse_marked(sql)
    assert markers is True
    # The flag agrees with the tree (the flag is what lets binding skip the walk).
    assert statement.find(exp.Placeholder, exp.Parameter) is not None


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE n.t (a BIGINT, s STRUCT<a: INT, b: STRING>, m MAP<STRING, INT>)",
        "SHOW TABLES IN n LIKE 'a?b:c'",
        "DESCRIBE TABLE n.t",
        "DROP TABLE n.t",
        "SELECT ':x', '?' FROM system.tables",
        "COMMENT ON TABLE n.t IS 'what? :this'",
    ],
)
def test_statements_without_markers_are_not_marked(sql: str) -> None:
    statement, markers = parse_marked(sql)
    assert markers is False
    assert statement.find(exp.Placeholder, exp.Parameter) is None
    # Without markers, binding returns the parsed statement itself (no copy) ...
    assert bind(statement, None, markers=False) is statement
    for params in ([], (), {}):
        assert bind(statement, params, markers=False) is statement
    # ... and refuses parameters exactly as the full path does.
    for params in ([1], {"a": 1}, "x"):
        with pytest.raises(ProgrammingError) as fast:
            bind(statement, params, markers=False)
        with pytest.raises(ProgrammingError) as full:
            bind(statement, params)
        assert str(fast.value) == str(full.value) == (
            "the statement has no parameter markers but parameters were given"
        )


@pytest.mark.parametrize(
    "sql, params, message",
    [
        ("COMMENT ON NAMESPACE n IS ?", ["a\ud800b"], r"parameter #1 \(line 1, column 27\): .* U\+D800 at index 1"),
        ("ALTER NAMESPACE n SET PROPERTIES ('k' = :v)", {"v": "\udc00"}, r"parameter :v \(line 1, column 42\): .* U\+DC00"),
        ("EXPORT SNAPSHOT ? AS OF VERSION 0", ["s\ud800"], r"parameter #1 .* U\+D800"),
        ("CREATE NAMESPACE m COMMENT 'x\ud83d'", None, r"the comment: .* U\+D83D at index 1"),
    ],
)  # fmt: skip
def test_a_lone_surrogate_is_a_data_error_and_writes_nothing(sql: str, params: object, message: str) -> None:
    # Issue 15, item 12: it was an InternalError (UnicodeEncodeError) from deep inside.
    import trinitylake_dbapi
    from trinitylake_dbapi.errors import DataError

    conn = trinitylake_dbapi.connect("memory://surrogates", create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE IF NOT EXISTS n")
    cur.execute("SHOW VERSIONS")
    versions = cur.fetchall()
    with pytest.raises(DataError, match=message):
        cur.execute(sql, params)
    cur.execute("SHOW VERSIONS")
    assert cur.fetchall() == versions


@pytest.mark.parametrize("value", ["5", 1.5, True, -1, None, b"1"])
@pytest.mark.parametrize("clause", ["LIMIT ?", "LIMIT 1 OFFSET ?"])
def test_limit_and_offset_parameters_take_non_negative_integers(clause: str, value: object) -> None:
    # Issue 15, item 12: a non-integer was an InternalError from the executor.
    import trinitylake_dbapi

    cur = trinitylake_dbapi.connect("memory://limits", create=True).cursor()
    word = clause.split()[-2]
    with pytest.raises(ProgrammingError, match=rf"parameter #1 \(line 1, column \d+\): {word} takes a non-negative integer, got {value!r}"):
        cur.execute(f"SELECT 1 {clause}", [value])
    cur.execute(f"SELECT 1 {clause}", [0])
    assert cur.fetchall() == ([] if word == "LIMIT" else [(1,)])
