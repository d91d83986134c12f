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


#: Keywords per transaction. The test used to autocommit each of its ~7 statements per
#: keyword (a commit each, a third of its time); what it checks happens inside the
#: transaction alike: SHOW CREATE prints the table the transaction sees, and the printed
#: text re-creates it after the DROP.
BATCH = 50


@pytest.mark.slow  # every keyword, twice (~5 s of CPU): the full run only
@pytest.mark.parametrize("case", [str.upper, str.lower], ids=["upper", "lower"])
def test_show_create_table_recreates_the_table_for_every_keyword_as_every_name(case) -> None:  # type: ignore[no-untyped-def]
    conn = trinitylake_dbapi.connect(f"memory://keywords-{case.__name__}", create=True, autocommit=False)
    cur = conn.cursor()
    failures = []
    words = list(map(case, KEYWORDS))
    for n, word in enumerate(words, 1):
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
            conn.rollback()  # a clean transaction for the next keyword
            continue
        if after != before:
            failures.append((word, text, "describes differently"))
        cur.execute(f"DROP TABLE {table}")
        if n % BATCH == 0 or n == len(words):
            conn.commit()
    assert failures == []
    conn.close()
