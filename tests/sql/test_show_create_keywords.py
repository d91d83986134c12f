"""SHOW CREATE TABLE output runs, whatever the names (issue 15, item 13).

For every word sqlglot knows as a keyword (its tokenizer's keyword table and the words its
Spark parser matches by text: constraints, properties, clauses) used as a namespace, table, column and struct field name, the text SHOW
CREATE TABLE prints re-creates a table that DESCRIBE shows exactly as the original.
"""

from __future__ import annotations

import re

import pytest
from sqlglot.tokens import Tokenizer

import trinitylake_dbapi
from trinitylake_dbapi.sql.compat import SparkParser

def sqlglot_keywords() -> list[str]:
    words = set(Tokenizer.KEYWORDS)
    for name in dir(SparkParser):
        table = getattr(SparkParser, name)
        if name != "FUNCTIONS" and isinstance(table, (dict, set, frozenset)):
            words.update(w for key in table if isinstance(key, str) for w in key.split())
    return sorted({w.upper() for w in words if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", w)})


KEYWORDS = sqlglot_keywords()


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def describe(cur, table: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    cur.execute(f"DESCRIBE TABLE {table}")
    return cur.fetchall()


def test_there_are_many_keywords() -> None:
    assert len(KEYWORDS) > 200 and {"KEY", "CHECK", "FOREIGN", "SELECT", "TABLE"} <= set(KEYWORDS)


@pytest.mark.parametrize("case", [str.upper, str.lower], ids=["upper", "lower"])
def test_show_create_table_recreates_the_table_for_every_keyword_as_every_name(case) -> None:  # type: ignore[no-untyped-def]
    conn = trinitylake_dbapi.connect(f"memory://keywords-{case.__name__}", create=True, autocommit=True)
    cur = conn.cursor()
    failures = []
    for word in map(case, KEYWORDS):
        ns, table = quoted(word), f"{quoted(word)}.{quoted(word)}"
        cur.execute(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
        cur.execute(
            f"CREATE TABLE {table} ({quoted(word)} INT NOT NULL COMMENT 'c', "
            f"other STRUCT<{quoted(word)}: INT, x: MAP<STRING, ARRAY<STRUCT<{quoted(word)}: BIGINT>>>>, "
            f"PRIMARY KEY ({quoted(word)}))"
        )
        before = describe(cur, table)
        cur.execute(f"SHOW CREATE TABLE {table}")
        text = cur.fetchone()[0]
        cur.execute(f"DROP TABLE {table}")
        try:
            cur.execute(text)
            after = describe(cur, table)
        except trinitylake_dbapi.Error as error:
            failures.append((word, text, str(error)))
            continue
        if after != before:
            failures.append((word, text, "describes differently"))
        cur.execute(f"DROP TABLE {table}")
    assert failures == []
