"""sql.simple: DESCRIBE, SHOW TABLES and DROP TABLE without the tokenizer (rules FP1, FP2).

Generated statements, plain and not, each parsed both ways: whenever the fast path gives
a node, the parser gives the same node (names, literal, positions, every argument);
whenever the parser refuses the text, the fast path does not take it."""

from __future__ import annotations

import random
from typing import Any

import pytest
from sqlglot import exp

from trinitylake_dbapi.errors import Error
from trinitylake_dbapi.sql.dialect import RESERVED_WORDS, parse_marked
from trinitylake_dbapi.sql import simple
from trinitylake_dbapi.sql.compat import Expr


def parse_simple(sql: str) -> exp.Expr | None:
    return simple.parse_simple(sql, RESERVED_WORDS)

NAMES = ["t", "ns00", "t0001", "Ns", "_x", "a1_b", "T_2", "tables", "version", "table", "like", "in", "if",
         "exists", "select", "from", "namespace", "schema", "extended", "for", "as", "of", "timestamp",
         "system_time", "system_version", "drop", "show", "describe", "partitioned", "row", "1a", "a-b", "`q`",
         '"q"', "é", "a b", "?", ":p", "x--c", "/*c*/x"]  # fmt: skip
PATTERNS = ["'t'", "'t%'", "'t_1'", "''", "'it''s'", "'a\\'b'", "?", "t", "'x'", "\"t\""]
SPACES = [" ", " ", " ", "  ", "\t", "\n"]


def _dump(node: Any) -> Any:
    """Everything equality and error positions depend on: type, source position, args."""
    if isinstance(node, Expr):  # exp.Expression on sqlglot 28
        args = {k: _dump(v) for k, v in sorted(node.args.items())}
        return (type(node).__name__, dict(node.meta), args)
    if isinstance(node, list):
        return [_dump(v) for v in node]
    return node


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


@pytest.mark.parametrize("seed", range(4))
def test_the_fast_path_gives_the_parsers_node(seed: int) -> None:
    rng = random.Random(seed)
    taken = 0
    for _ in range(400):
        sql = _statement(rng)
        fast = parse_simple(sql)
        try:
            full, markers = parse_marked(sql, simple=False)
        except Error:
            assert fast is None, sql
            continue
        if fast is None:
            continue
        taken += 1
        assert not markers, sql
        assert fast == full, sql
        assert _dump(fast) == _dump(full), sql
        assert parse_marked(sql) == (fast, False)
    assert taken >= 60  # the fast path is exercised, not only refused


@pytest.mark.parametrize("sql", [
    "DESCRIBE TABLE ns00.t0001", "describe t", "SHOW TABLES IN ns00 LIKE 't0001'", "SHOW TABLES",
    "show tables in ns", "DROP TABLE ns00.t0001", "DROP TABLE IF EXISTS a.b;", "  DESCRIBE  a.b ; ",
])  # fmt: skip
def test_the_plain_spellings_take_the_fast_path(sql: str) -> None:
    assert parse_simple(sql) is not None


@pytest.mark.parametrize("sql", [
    "DESCRIBE TABLE `a`.b", "DESCRIBE select.t", "DESCRIBE t VERSION AS OF 3", "DESCRIBE\nt",
    "SHOW TABLES IN ns LIKE 'a\\'b'", "SHOW TABLES LIKE ?", "DROP TABLE a.b.c", "DROP TABLE t -- c",
    "DESCRIBE NAMESPACE ns", "DESCRIBE EXTENDED t", "DESCRIBE \u212aelvin", "DROP TABLE \u017ft",
])  # fmt: skip
def test_other_spellings_go_to_the_parser(sql: str) -> None:
    assert parse_simple(sql) is None
