"""The TrinityLake sqlglot dialect: what parses into which node, syntax errors with
positions, unsupported statements, and the type mapping onto format/types.py."""

from __future__ import annotations

import threading

import pytest
from sqlglot import exp

from trinitylake_dbapi.errors import (
    InvalidDefinitionError,
    NotSupportedError,
    ProgrammingError,
    SQLSyntaxError,
)
from trinitylake_dbapi.format.types import ColumnSpec, TypeSpec, parse_type, type_to_sql
from trinitylake_dbapi.sql import dialect as d
from trinitylake_dbapi.sql import statements as st
from trinitylake_dbapi.sql.columns import column_specs
from trinitylake_dbapi.sql.dialect import quote_identifier as quote_name
from trinitylake_dbapi.sql.dialect import parse, parse_statement, split_statements


def one(sql: str) -> exp.Expr:
    return parse_statement(sql)


# ---------------------------------------------------------------------------
# Statements -> nodes
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql, node",
    [
        ("CREATE NAMESPACE n", st.CreateNamespace),
        ("create schema if not exists n comment 'c' with (a = 'b')", st.CreateNamespace),
        ("CREATE DATABASE n WITH DBPROPERTIES ('a' = 'b')", st.CreateNamespace),
        ("ALTER NAMESPACE n SET PROPERTIES ('a' = 'b')", st.AlterNamespace),
        ("ALTER SCHEMA n UNSET DBPROPERTIES ('a', b.c)", st.AlterNamespace),
        ("DROP NAMESPACE IF EXISTS n CASCADE", st.DropNamespace),
        ("DROP DATABASE n RESTRICT", st.DropNamespace),
        ("SHOW NAMESPACES LIKE 'a%'", st.ShowNamespaces),
        ("SHOW SCHEMAS", st.ShowNamespaces),
        ("SHOW DATABASES FOR SYSTEM_VERSION AS OF 3", st.ShowNamespaces),
        ("DESCRIBE NAMESPACE n", st.DescribeNamespace),
        ("DESC SCHEMA EXTENDED n", st.DescribeNamespace),
        ("CREATE TABLE n.t (a INT)", st.CreateTable),
        ("CREATE EXTERNAL TABLE t (a INT) LOCATION 's3://b/t'", st.CreateTable),
        ("ALTER TABLE n.t ADD COLUMN b INT", st.AddColumns),
        ("ALTER TABLE n.t ADD COLUMNS (b INT, c STRING COMMENT 'x')", st.AddColumns),
        ("ALTER TABLE n.t DROP COLUMN b", st.DropColumn),
        ("ALTER TABLE n.t RENAME COLUMN b TO c", st.RenameColumn),
        ("ALTER TABLE n.t RENAME TO u", st.RenameTable),
        ("ALTER TABLE n.t SET TBLPROPERTIES ('a' = 'b')", st.SetTableProperties),
        ("ALTER TABLE n.t UNSET TBLPROPERTIES IF EXISTS ('a')", st.UnsetTableProperties),
        ("ALTER TABLE n.t ALTER COLUMN c SET NOT NULL", st.AlterColumn),
        ("ALTER TABLE n.t CHANGE COLUMN c DROP NOT NULL", st.AlterColumn),
        ("ALTER TABLE n.t ALTER COLUMN c COMMENT 'x'", st.AlterColumn),
        ("DROP TABLE IF EXISTS n.t", st.DropTable),
        ("SHOW TABLES", st.ShowTables),
        ("SHOW TABLES IN n LIKE 'x%' FOR SYSTEM_TIME AS OF '2024-01-01'", st.ShowTables),
        ("SHOW TABLES FROM n", st.ShowTables),
        ("DESCRIBE n.t", st.DescribeTable),
        ("DESCRIBE TABLE n.t FOR SYSTEM_VERSION AS OF 'snap'", st.DescribeTable),
        ("SHOW CREATE TABLE n.t", st.ShowCreateTable),
        ("SHOW VERSIONS", st.ShowVersions),
        ("USE n", st.UseNamespace),
        ("USE NAMESPACE n", st.UseNamespace),
        ("BEGIN", st.Begin),
        ("BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE", st.Begin),
        ("START TRANSACTION", st.Begin),
        ("COMMIT", st.CommitWork),
        ("COMMIT WORK", st.CommitWork),
        ("ROLLBACK", st.RollbackWork),
        ("ROLLBACK TO VERSION 4", st.RollbackToVersion),
        ("EXPORT SNAPSHOT nightly", st.ExportSnapshot),
        ("EXPORT SNAPSHOT 'my snap' AS OF VERSION 2", st.ExportSnapshot),
        ("EXPIRE VERSIONS", st.ExpireVersions),
        ("EXPIRE VERSIONS RETAIN LAST 3 OLDER THAN '2024-01-01' DRY RUN", st.ExpireVersions),
        ("COMMENT ON TABLE n.t IS 'x'", st.CommentOn),
        ("COMMENT ON COLUMN n.t.c IS NULL", st.CommentOn),
        ("COMMENT ON SCHEMA n IS 'x'", st.CommentOn),
        ("SELECT 1", exp.Select),
        ("WITH x AS (SELECT 1 AS a) SELECT a FROM x", exp.Select),
        ("SELECT 1 UNION ALL SELECT 2", exp.Union),
    ],
)
def test_statement_nodes(sql: str, node: type) -> None:
    assert isinstance(one(sql), node)
    assert isinstance(one(sql + " ;"), node)


def test_names_keep_their_case_and_quotes() -> None:
    s = one('CREATE TABLE MyNs."My Table" (`Col A` INT, cOl INT)')
    assert s.this.text("db") == "MyNs"
    assert s.this.name == "My Table"
    assert [c.name for c in s.args["columns"]] == ["Col A", "cOl"]
    assert one("CREATE NAMESPACE `we``ird`").this.this == "we`ird"


def test_start_transaction_isolation_levels() -> None:
    assert one("START TRANSACTION ISOLATION LEVEL SERIALIZABLE").args["isolation"] == "SERIALIZABLE"
    assert one("BEGIN ISOLATION LEVEL SNAPSHOT").args["isolation"] == "SNAPSHOT"
    assert one("BEGIN").args.get("isolation") is None
    with pytest.raises(NotSupportedError, match="READ COMMITTED"):
        one("START TRANSACTION ISOLATION LEVEL READ COMMITTED")


def test_time_travel_clauses() -> None:
    v = one("SELECT * FROM information_schema.tables FOR SYSTEM_VERSION AS OF 3").find(exp.Version)
    assert v.this == "VERSION" and v.expression.this == "3"
    v = one("DESCRIBE n.t FOR SYSTEM_TIME AS OF TIMESTAMP '2024-01-01 00:00:00'").args["version"]
    assert v.this == "TIMESTAMP"
    with pytest.raises(NotSupportedError, match="BETWEEN"):
        one("DESCRIBE n.t FOR SYSTEM_VERSION BETWEEN 1 AND 2")


def test_placeholders_keep_their_position() -> None:
    s = one("SHOW TABLES IN n LIKE ? FOR SYSTEM_VERSION AS OF ?")
    holes = sorted(s.find_all(exp.Placeholder), key=lambda p: p.meta["start"])
    assert [p.meta["start"] for p in holes] == [22, 49]


@pytest.mark.parametrize(
    "sql",
    ["CREATE NAMESPACE ?", "CREATE TABLE ?.t (a INT)", "DROP TABLE :t", "USE ?",
     "CREATE TABLE t (? INT)"],
)  # fmt: skip
def test_names_cannot_be_parameters(sql: str) -> None:
    with pytest.raises(SQLSyntaxError, match="name"):
        one(sql)


# ---------------------------------------------------------------------------
# Syntax errors: line, column and text; never an exp.Command
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql, line, column, text",
    [
        ("CREATE TABLE t (a INT) garbage", 1, 24, "garbage"),
        ("CREATE TABLE n.t (\n  a INT,\n  b INT,,\n)", 3, 9, ","),
        ("SELECT 1 FROM", 1, 14, ""),
        ("SELECT 'abc", 1, 8, "'abc"),
        ("CREATE NAMESPACE n WITH DBPROPERTIES ('a' 'b' 'c')", 1, 47, "'c'"),
        ("DROP NAMESPACE n EXTRA", 1, 18, "EXTRA"),
        ("SHOW TABLES IN", 1, 15, ""),
        ("ROLLBACK TO VERSION", 1, 20, ""),
        ("CREATE TABLE t (a INT", 1, 22, ""),
        ("DESCRIBE a.b.c", 1, 14, "c"),
        ("SELECT /* not closed", 1, 8, "/*"),
        ("ALTER TABLE t ALTER COLUMN c", 1, 29, ""),
    ],
)
def test_syntax_error_positions(sql: str, line: int, column: int, text: str) -> None:
    with pytest.raises(SQLSyntaxError) as info:
        one(sql)
    e = info.value
    assert isinstance(e, ProgrammingError)
    assert (e.line, e.column) == (line, column), str(e)
    assert e.text.startswith(text)
    message = str(e)
    assert f"line {line}, column {column}" in message
    assert "\x1b" not in message  # no ANSI codes
    if text:
        assert text in message


@pytest.mark.parametrize(
    "sql, named",
    [
        ("CREATE VIEW v AS SELECT 1", "CREATE VIEW"),
        ("CREATE OR REPLACE TABLE t (a INT)", "CREATE OR REPLACE"),
        ("GRANT SELECT ON t TO u", "GRANT SELECT"),
        ("SHOW FUNCTIONS", "SHOW FUNCTIONS"),
        ("ALTER VIEW v AS SELECT 1", "ALTER VIEW"),
        ("DROP VIEW v", "DROP VIEW"),
        ("TRUNCATE TABLE t", "TRUNCATE TABLE"),
        ("SET x = 1", "SET"),
        ("CREATE TABLE t (a INT) CLUSTERED BY (a)", "CLUSTERED BY"),
        ("CREATE TABLE t (a INT DEFAULT 3)", "DEFAULT"),
        ("CREATE TABLE t (a INT, UNIQUE (a))", "UNIQUE"),
        ("ALTER TABLE t ALTER COLUMN a TYPE BIGINT", "TYPE"),
        ("ALTER TABLE t ADD CONSTRAINT c PRIMARY KEY (a)", "ADD CONSTRAINT"),
        ("ALTER TABLE t ADD PRIMARY KEY (a)", "ADD PRIMARY KEY"),
        ("CREATE NAMESPACE n LOCATION 's3://x'", "LOCATION"),
        ("ROLLBACK TO SAVEPOINT s", "SAVEPOINT"),
        ("EXPLAIN SELECT 1", "EXPLAIN"),
    ],
)
def test_unsupported_statements_are_named(sql: str, named: str) -> None:
    with pytest.raises(NotSupportedError) as info:
        one(sql)
    assert named in str(info.value)


def test_no_statement_becomes_a_command() -> None:
    for sql in ["SHOW TABLES", "ALTER NAMESPACE n SET DBPROPERTIES ('a'='b')",
                "ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS ('a')"]:  # fmt: skip
        assert not list(one(sql).find_all(exp.Command))


def test_statement_count() -> None:
    with pytest.raises(SQLSyntaxError, match="one statement at a time"):
        one("SELECT 1; SELECT 2")
    with pytest.raises(SQLSyntaxError, match="empty"):
        one("  -- just a comment\n")
    assert len(parse("SELECT 1; SHOW TABLES;")) == 2


def test_split_statements() -> None:
    script = "CREATE NAMESPACE a; -- x;\nSELECT ';' AS s, `a;b`; SHOW TABLES"
    done, rest = split_statements(script)
    assert done == ["CREATE NAMESPACE a", "-- x;\nSELECT ';' AS s, `a;b`"]
    assert rest == "SHOW TABLES"
    assert split_statements("SELECT 'unterminated;") == ([], "SELECT 'unterminated;")
    assert split_statements("SELECT 1; -- trailing comment") == (["SELECT 1"], "")


# ---------------------------------------------------------------------------
# Types: sqlglot nodes -> format/types.py
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "written, canonical",
    [
        ("boolean", "boolean"), ("bool", "boolean"),
        ("int2", "int2"), ("smallint", "int2"),
        ("int4", "int4"), ("int", "int4"), ("integer", "int4"),
        ("int8", "int8"), ("bigint", "int8"), ("long", "int8"),
        ("decimal", "decimal(10,0)"), ("decimal(12,3)", "decimal(12,3)"), ("numeric(5)", "decimal(5,0)"),
        ("float4", "float4"), ("real", "float4"),
        ("float8", "float8"), ("float", "float8"), ("double", "float8"),
        ("double precision", "float8"),
        ("char", "char(1)"), ("char(3)", "char(3)"), ("character(2)", "char(2)"),
        ("nchar(4)", "char(4)"), ("bpchar", "char(1)"),
        ("varchar", "varchar"), ("varchar(20)", "varchar(20)"),
        ("character varying(5)", "varchar(5)"), ("nvarchar(7)", "varchar(7)"),
        ("text", "varchar"), ("string", "varchar"),
        ("date", "date"), ("time", "time"), ("time(3)", "time(3)"),
        ("timetz", "timetz"), ("timetz(6)", "timetz(6)"),
        # Decision: TIMESTAMP has no time zone (Spark would read TIMESTAMPTZ).
        ("timestamp", "timestamp"), ("timestamp(3)", "timestamp(3)"),
        ("timestamptz", "timestamptz"), ("timestamptz(9)", "timestamptz(9)"),
        ("timestamp with time zone", "timestamptz"),
        ("fixed(16)", "fixed(16)"),
        ("binary", "binary"), ("binary(8)", "binary(8)"), ("varbinary(4)", "binary(4)"),
        ("varbyte", "binary"),
        ("array<int>", "list<int4>"), ("list<string>", "list<varchar>"),
        ("map<string, bigint>", "map<varchar, int8>"),
        ("struct<a: int, b string>", "struct<a: int4, b: varchar>"),
        ("row(a int, b double)", "struct<a: int4, b: float8>"),
        ("array<struct<x: map<string, array<decimal(5,2)>>>>",
         "list<struct<x: map<varchar, list<decimal(5,2)>>>>"),
        ("struct<a: int NOT NULL COMMENT 'it''s'>", "struct<a: int4 NOT NULL COMMENT 'it''s'>"),
        ("list<int4 NOT NULL COMMENT 'e'>", "list<int4 NOT NULL COMMENT 'e'>"),
        ("map<varchar COMMENT 'k', int4 NOT NULL>", "map<varchar COMMENT 'k', int4 NOT NULL>"),
    ],
)  # fmt: skip
def test_type_mapping(written: str, canonical: str) -> None:
    s = one(f"CREATE TABLE t (c {written})")
    [column], _ = column_specs(s.args["columns"])
    assert type_to_sql(column.type) == canonical
    # The same type through the format's own parser: one table, one answer.
    assert column.type == parse_type(canonical, column="c")


@pytest.mark.parametrize(
    "written, message",
    [
        ("tinyint", "unknown type 'TINYINT'"),
        ("json", "unknown type 'JSON'"),
        ("uuid", "unknown type 'UUID'"),
        ("interval", "unknown type 'INTERVAL'"),
        ("timestamp_ntz", "unknown type 'TIMESTAMP_NTZ'"),
        ("array<tinyint>", "unknown type 'TINYINT'"),
        ("decimal(50,2)", "precision must be between 1 and 38"),
        ("varchar(0)", "length must be between"),
        ("fixed", "fixed needs a length"),
        ("int(3)", "takes no parameters"),
        ("struct<a int, a string>", "duplicate struct field name 'a'"),
    ],
)
def test_unknown_and_invalid_types_name_the_column(written: str, message: str) -> None:
    s = one(f"CREATE TABLE t (col {written})")
    with pytest.raises(InvalidDefinitionError) as info:
        column_specs(s.args["columns"])
    assert "'col" in str(info.value)
    assert message in str(info.value)


def test_column_constraints_and_primary_key() -> None:
    s = one("CREATE TABLE t (a INT NOT NULL COMMENT 'x', b INT NULL, c STRING, PRIMARY KEY (c, a))")
    columns, key = column_specs(s.args["columns"], [i.this for i in s.args["primary_key"]])
    assert key == ["c", "a"]
    assert columns == [
        ColumnSpec("a", TypeSpec("int4"), False, "x"),
        ColumnSpec("b", TypeSpec("int4"), True),
        ColumnSpec("c", TypeSpec("varchar"), False),  # primary key columns are NOT NULL
    ]
    s = one("CREATE TABLE t (a INT PRIMARY KEY, b INT)")
    assert column_specs(s.args["columns"])[1] == ["a"]
    s = one("CREATE TABLE t (a INT PRIMARY KEY, b INT, PRIMARY KEY (b))")
    with pytest.raises(InvalidDefinitionError, match="both"):
        column_specs(s.args["columns"], ["b"])
    s = one("CREATE TABLE t (a INT, a STRING)")
    with pytest.raises(InvalidDefinitionError, match="duplicate column name 'a'"):
        column_specs(s.args["columns"])
    s = one("CREATE TABLE t (a INT, PRIMARY KEY (z))")
    with pytest.raises(InvalidDefinitionError, match="'z'"):
        column_specs(s.args["columns"], ["z"])


@pytest.mark.parametrize(
    "name, quoted",
    [("plain", "plain"), ("with space", "`with space`"), ("back`tick", "`back``tick`"),
     ("select", "`select`"), ("comment", "`comment`"), ("Mixed_1", "Mixed_1"),
     ("1abc", "`1abc`"), ("é", "`é`")],
)  # fmt: skip
def test_quote_name_reads_back(name: str, quoted: str) -> None:
    assert quote_name(name) == quoted
    assert one(f"CREATE TABLE {quoted}.{quoted} ({quoted} INT)").this.name == name


def test_messages_are_clean() -> None:
    with pytest.raises(SQLSyntaxError) as info:
        one("SELECT * FROM information_schema.tables WHERE")
    assert "incomplete WHERE: an expression is missing" in str(info.value)
    assert "<class" not in str(info.value) and "<Token" not in str(info.value)
    with pytest.raises(InvalidDefinitionError, match="column 'amount': unknown type 'MONEY'"):
        one("CREATE TABLE t (id INT, amount MONEY)")


def test_compiled_sqlglot_is_refused_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    """With sqlglotc (sqlglot[c]) installed, sqlglot's parser is a compiled class that
    refuses Python subclasses; the driver says so instead of failing obscurely."""
    import trinitylake_dbapi.errors as errors

    def compiled(**opts: object) -> None:
        raise TypeError("interpreted classes cannot inherit from compiled")

    monkeypatch.setattr(d._DIALECT, "parser", compiled)
    monkeypatch.setattr(d, "_SPARE", threading.local())
    with pytest.raises(errors.InterfaceError, match="pip uninstall sqlglotc"):
        d.parse_statement("SHOW NAMESPACES")
    # Also for a text that does not tokenize: sqlglotc's tokenizer gives no position for
    # an unterminated string, so a syntax error would point at the wrong place.
    with pytest.raises(errors.InterfaceError, match="pip uninstall sqlglotc"):
        d.parse_statement("SELECT 'abc")


@pytest.mark.parametrize(
    "sql, line, column, word, suggestion",
    [
        ("CREAT NAMESPACE x", 1, 1, "CREAT", "CREATE"),
        ("SELEC 1", 1, 1, "SELEC", "SELECT"),
        ("CREATE NAMSPACE x", 1, 8, "NAMSPACE", "NAMESPACE"),
        ("\n  DROPP TABLE n.t", 2, 3, "DROPP", "DROP"),
        ("SHOW NAMESPACS", 1, 6, "NAMESPACS", "NAMESPACES"),
        ("FROBNICATE n", 1, 1, "FROBNICATE", None),
    ],
)
def test_a_misspelled_statement_is_a_syntax_error_at_the_word(
    sql: str, line: int, column: int, word: str, suggestion: str | None
) -> None:
    # Issue 15, item 5: a typo is not an unsupported statement.
    with pytest.raises(SQLSyntaxError) as info:
        one(sql)
    assert (info.value.line, info.value.column, info.value.text) == (line, column, word)
    assert f"unknown word {word!r}" in str(info.value)
    if suggestion:
        assert f"did you mean {suggestion}?" in str(info.value)
    else:
        assert "a statement starts with ALTER" in str(info.value)


def test_a_misspelled_second_statement_of_a_script_is_found_too() -> None:
    from trinitylake_dbapi.sql.dialect import parse

    with pytest.raises(SQLSyntaxError, match="unknown word 'SELEC'; did you mean SELECT"):
        parse("SELECT 1; SELEC 2")


@pytest.mark.parametrize(
    "sql, column",
    [
        ("SELECT " + "(" * 5_000 + "1" + ")" * 5_000, 5_007),
        ("SELECT " + "NOT " * 20_000 + "TRUE", 80_004),
        ("SELECT 1 WHERE " + "NOT " * 300 + "TRUE", 1_212),
    ],
    ids=["parentheses", "nots", "nots-in-where"],
)
def test_deeply_nested_sql_is_a_syntax_error_at_its_deepest_point(sql: str, column: int) -> None:
    # Issue 15, item 7: a RecursionError from the parser was an InternalError.
    with pytest.raises(SQLSyntaxError, match="nested too deeply") as info:
        one(sql)
    assert (info.value.line, info.value.column) == (1, column)


def test_deep_types_in_sql_are_refused_before_anything_is_written() -> None:
    import trinitylake_dbapi

    conn = trinitylake_dbapi.connect("memory://deep-types", create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE n")
    cur.execute("CREATE TABLE n.t (a INT)")
    for opening, closing in (("ARRAY<", ">"), ("STRUCT<x: ", ">"), ("MAP<INT, ", ">")):
        deep = opening * 99 + "INT" + closing * 99
        with pytest.raises(InvalidDefinitionError, match="column 'a': the type nests 99 levels"):
            cur.execute(f"CREATE TABLE n.u (a {deep})")
        with pytest.raises(InvalidDefinitionError, match="column 'b': the type nests 99 levels"):
            cur.execute(f"ALTER TABLE n.t ADD COLUMN b {deep}")
    cur.execute("SHOW VERSIONS")
    assert len(cur.fetchall()) == 3  # version 0, the namespace, the table: nothing more
    other = trinitylake_dbapi.connect("memory://deep-types").cursor()
    other.execute("DESCRIBE TABLE n.t")
    assert [row[0] for row in other.fetchall()] == ["a"]
