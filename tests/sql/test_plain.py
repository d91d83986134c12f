"""sql.plain: DESCRIBE, SHOW TABLES and DROP TABLE recognised and run without sqlglot
(rules PS1-PS4).

Generated statements, plain and not, each read both ways: whenever :func:`recognise`
takes a text, the parser reads it as the same statement; whenever the parser refuses
it, :func:`recognise` does not take it. Then both paths run the same statements on a
real lakehouse and give the same rows and the same errors, and a new process that runs
only plain statements never imports sqlglot."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from typing import Any

import pytest
from sqlglot import exp

import trinitylake_dbapi
from trinitylake_dbapi.errors import Error, ReadOnlyError
from trinitylake_dbapi.sql import plain, statements
from trinitylake_dbapi.sql.dialect import RESERVED_WORDS, parse_marked
from trinitylake_dbapi.sql.plain import PlainStatement, recognise
from trinitylake_dbapi.sql.words import PLAIN_REFUSED_WORDS

NAMES = ["t", "ns00", "t0001", "Ns", "_x", "a1_b", "T_2", "tables", "version", "table", "like", "in", "if",
         "exists", "select", "from", "namespace", "schema", "extended", "for", "as", "of", "timestamp",
         "system_time", "system_version", "drop", "show", "describe", "partitioned", "row", "1a", "a-b", "`q`",
         '"q"', "é", "a b", "?", ":p", "x--c", "/*c*/x"]  # fmt: skip
PATTERNS = ["'t'", "'t%'", "'t_1'", "''", "'it''s'", "'a\\'b'", "?", "t", "'x'", "\"t\""]
SPACES = [" ", " ", " ", "  ", "\t", "\n"]


def _statement(rng: random.Random) -> str:
    sp = lambda: rng.choice(SPACES)  # noqa: E731
    part = lambda: rng.choice(NAMES[:7] if rng.random() < 0.8 else NAMES)  # noqa: E731
    name = lambda: ".".join(part() for _ in range(rng.choice([1, 2, 2, 2, 3])))  # noqa: E731
    kind = rng.choice(["describe", "show", "drop"])
    if kind == "describe":
        words = [rng.choice(["DESCRIBE", "describe", "Describe", "DESC"])]
        words += [rng.choice(["TABLE", "table"])] if rng.random() < 0.6 else []
        words += [name()]
    elif kind == "show":
        words = [rng.choice(["SHOW", "show"]), rng.choice(["TABLES", "tables", "TABLE"])]
        if rng.random() < 0.7:
            words += [rng.choice(["IN", "in", "FROM"]), name()]
        if rng.random() < 0.6:
            words += [rng.choice(["LIKE", "like"]), rng.choice(PATTERNS)]
    else:
        words = [rng.choice(["DROP", "drop"]), rng.choice(["TABLE", "table", "NAMESPACE"])]
        words += [rng.choice(["IF EXISTS", "if exists", "IF  EXISTS"])] if rng.random() < 0.4 else []
        words += [name()]
    if rng.random() < 0.1:
        words.append(rng.choice(["VERSION AS OF 3", "FOR SYSTEM_VERSION AS OF 2", "x", "-- c"]))
    text = (" " * rng.choice([0, 0, 0, 1, 2])) + sp().join(words) if rng.random() < 0.9 else " ".join(words)
    return text + rng.choice(["", "", "", ";", " ;", " ", ";\n", "; x"])


def _as_plain(node: exp.Expr) -> PlainStatement | None:
    """The PlainStatement the parser's node stands for (None for any other statement)."""
    if isinstance(node, statements.DescribeTable) and node.args.get("version") is None:
        return PlainStatement(plain.DESCRIBE, node.this.text("db") or None, node.this.name)
    if isinstance(node, statements.ShowTables) and node.args.get("version") is None:
        namespace, like = node.args.get("namespace"), node.args.get("like")
        if like is not None and not (isinstance(like, exp.Literal) and like.is_string):
            return None
        return PlainStatement(plain.SHOW_TABLES, None if namespace is None else namespace.this,
                              pattern=None if like is None else like.this)
    if isinstance(node, statements.DropTable):
        return PlainStatement(plain.DROP_TABLE, node.this.text("db") or None, node.this.name,
                              if_exists=bool(node.args.get("exists")))
    return None


@pytest.mark.parametrize("seed", range(4))
def test_a_recognised_statement_is_the_parsers_statement(seed: int) -> None:
    """PS1."""
    rng = random.Random(seed)
    taken = 0
    for _ in range(400):
        sql = _statement(rng)
        fast = recognise(sql)
        try:
            full, markers = parse_marked(sql)
        except Error:
            assert fast is None, sql
            continue
        if fast is None:
            continue
        taken += 1
        assert not markers, sql
        assert _as_plain(full) == fast, sql
    assert taken >= 60  # the fast path is exercised, not only refused


@pytest.mark.parametrize("sql, expected", [
    ("DESCRIBE TABLE ns00.t0001", PlainStatement(plain.DESCRIBE, "ns00", "t0001")),
    ("describe t", PlainStatement(plain.DESCRIBE, None, "t")),
    ("  DESCRIBE  a.b ; ", PlainStatement(plain.DESCRIBE, "a", "b")),
    ("SHOW TABLES IN ns00 LIKE 't0001'", PlainStatement(plain.SHOW_TABLES, "ns00", pattern="t0001")),
    ("SHOW TABLES", PlainStatement(plain.SHOW_TABLES, None)),
    ("show tables like 't%'", PlainStatement(plain.SHOW_TABLES, None, pattern="t%")),
    ("DROP TABLE ns00.t0001", PlainStatement(plain.DROP_TABLE, "ns00", "t0001")),
    ("DROP TABLE IF EXISTS a.b;", PlainStatement(plain.DROP_TABLE, "a", "b", if_exists=True)),
])  # fmt: skip
def test_the_plain_spellings_are_recognised(sql: str, expected: PlainStatement) -> None:
    assert recognise(sql) == expected


@pytest.mark.parametrize("sql", [
    "DESCRIBE TABLE `a`.b", "DESCRIBE select.t", "DESCRIBE t VERSION AS OF 3", "DESCRIBE\nt",
    "SHOW TABLES IN ns LIKE 'a\\'b'", "SHOW TABLES LIKE ?", "DROP TABLE a.b.c", "DROP TABLE t -- c",
    "DESCRIBE NAMESPACE ns", "DESCRIBE EXTENDED t", "DESCRIBE \u212aelvin", "DROP TABLE \u017ft",
    "DROP TABLE ns.t FOR SYSTEM_VERSION AS OF 1", "SELECT 1", "", "DESC",
])  # fmt: skip
def test_other_spellings_go_to_the_parser(sql: str) -> None:
    assert recognise(sql) is None


def test_every_word_the_installed_sqlglot_reserves_is_refused_as_a_plain_name() -> None:
    """sql.words is a literal (PS4); it must hold the dialect's RESERVED_WORDS for this
    sqlglot (scripts/test also runs tests/sql on sqlglot 28)."""
    missing = sorted(RESERVED_WORDS - PLAIN_REFUSED_WORDS)
    assert not missing, f"add to PLAIN_REFUSED_WORDS in trinitylake_dbapi/sql/words.py: {' '.join(missing)}"


# -- running: the same rows and errors both ways (PS3) ----------------------------------------

RUN = [
    "DESCRIBE sales.orders", "DESCRIBE TABLE sales.orders", "DESCRIBE orders", "DESCRIBE sales.missing",
    "DESCRIBE nowhere.orders", "SHOW TABLES", "SHOW TABLES IN sales", "SHOW TABLES IN sales LIKE 'o%'",
    "SHOW TABLES IN sales LIKE 'orders'", "SHOW TABLES IN sales LIKE 'missing'", "SHOW TABLES LIKE 'orders'",
    "SHOW TABLES IN nowhere", "SHOW TABLES IN nowhere LIKE 'orders'", "DROP TABLE sales.missing",
    "DROP TABLE IF EXISTS sales.missing", "DROP TABLE nowhere.orders", "DROP TABLE IF EXISTS nowhere.t",
    "DROP TABLE IF EXISTS sales.orders",
]  # fmt: skip


def _outcome(run: Any) -> Any:
    try:
        result = run()
    except Error as e:
        return type(e).__name__, str(e)
    return result.columns, result.rows, result.rowcount


def _filled(lake: Any, **kwargs: Any) -> trinitylake_dbapi.Connection:
    conn = lake.connect(autocommit=True, **kwargs)
    cur = conn.cursor()
    for sql in ["CREATE NAMESPACE IF NOT EXISTS sales", "CREATE NAMESPACE IF NOT EXISTS other",
                "CREATE TABLE IF NOT EXISTS sales.orders (id BIGINT NOT NULL COMMENT 'key', total DECIMAL(12,2))",
                "CREATE TABLE IF NOT EXISTS sales.order_lines (id BIGINT, note STRING)",
                "CREATE TABLE IF NOT EXISTS other.orders (x MAP<STRING, ARRAY<INT>>)"]:  # fmt: skip
        cur.execute(sql)
    return conn


@pytest.mark.parametrize("use", [None, "other"])
def test_both_paths_give_the_same_rows_and_errors(memory_lake: Any, use: str | None) -> None:
    for sql in RUN:
        outcomes = []
        for fast in (True, False):
            conn = _filled(memory_lake)
            if use is not None:
                conn.cursor().execute(f"USE {use}")
            statement = recognise(sql) if fast else parse_marked(sql)[0]
            assert statement is not None, sql
            outcomes.append(_outcome(lambda: conn.session.run_statement(statement)))
            conn.close()
        assert outcomes[0] == outcomes[1], sql


def test_a_read_only_connection_refuses_a_plain_drop_as_the_parser_does(memory_lake: Any) -> None:
    _filled(memory_lake).close()
    conn = memory_lake.connect(version=1)
    for statement in (recognise("DROP TABLE sales.orders"), parse_marked("DROP TABLE sales.orders")[0]):
        with pytest.raises(ReadOnlyError, match="DROP TABLE refused"):
            conn.session.run_statement(statement)
    conn.close()


def test_the_cursor_takes_the_plain_path_only_without_parameters(memory_lake: Any) -> None:
    conn = _filled(memory_lake)
    cur = conn.cursor()
    for parameters in (None, (), [], {}):
        assert cur.execute("DESCRIBE sales.orders", parameters).fetchall() == [
            ("id", "int8", False, "key"), ("total", "decimal(12,2)", True, None)]  # fmt: skip
        assert cur.description[0][0] == "col_name" and cur.rowcount == 2
    with pytest.raises(trinitylake_dbapi.ProgrammingError, match="no parameter markers"):
        cur.execute("DESCRIBE sales.orders", (1,))
    conn.close()


# -- PS4: a process that runs only plain statements never imports sqlglot ----------------------

_CHILD = """
import json, sys
import trinitylake_dbapi
conn = trinitylake_dbapi.connect(sys.argv[1], autocommit=True)
cur = conn.cursor()
out = [cur.execute(sql).fetchall() if sql.startswith(("DESC", "SHOW")) else cur.execute(sql).rowcount
       for sql in ["DESCRIBE sales.orders", "SHOW TABLES IN sales LIKE 'o%'", "SHOW TABLES",
                   "DROP TABLE sales.order_lines", "SHOW TABLES IN sales"]]
try:
    cur.execute("DESCRIBE sales.missing")
except trinitylake_dbapi.ProgrammingError as e:
    out.append(type(e).__name__)
conn.close()
print(json.dumps({"out": out, "sqlglot": sorted(m for m in sys.modules if m.split(".")[0] == "sqlglot")}))
"""


def test_a_process_running_only_plain_statements_never_imports_sqlglot(tmp_path: Any) -> None:
    class Local:
        location = str(tmp_path / "lake")

        def connect(self, **kwargs: Any) -> trinitylake_dbapi.Connection:
            return trinitylake_dbapi.connect(self.location, create=True, **kwargs)

    _filled(Local()).close()
    done = subprocess.run([sys.executable, "-c", _CHILD, Local.location], capture_output=True, text=True,
                          check=True)  # fmt: skip
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["sqlglot"] == []
    assert report["out"] == [
        [["id", "int8", False, "key"], ["total", "decimal(12,2)", True, None]],
        [["sales", "order_lines"], ["sales", "orders"]],
        [["other", "orders"], ["sales", "order_lines"], ["sales", "orders"]],
        -1,
        [["sales", "orders"]],
        "ObjectNotFoundError",
    ]
