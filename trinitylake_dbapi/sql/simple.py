"""The catalog's everyday statements, parsed without the tokenizer.

``DESCRIBE [TABLE] t``, ``SHOW TABLES [IN ns] [LIKE 'pattern']`` and
``DROP TABLE [IF EXISTS] t`` are what a catalog client sends most, and for them sqlglot's
tokenizer and parser take most of the time of the statement (a DESCRIBE from a warm
connection is ~0.1 ms of catalog work after ~0.2 ms of parsing). :func:`parse_simple`
recognises the plainest spelling of each with one regular expression and builds the
node the parser would build.

Rules:

  FP1 Same result: when :func:`parse_simple` returns a node, it is equal to the parser's
     node for the same text, the source positions of its names and literal included
     (errors point at them). tests/sql/test_simple_parse.py checks this on generated
     statements.
  FP2 Only the plainest spelling: one line, names that are unquoted ASCII words and none
     of the words the tokenizer or the parser gives a meaning to, a pattern without
     quotes or backslashes, no comment, no parameter, no time travel. Anything else
     returns None and goes to the parser, which also gives every error.
"""

from __future__ import annotations

import re

from sqlglot import exp

from trinitylake_dbapi.sql.statements import DescribeTable, DropTable, ShowTables

__all__ = ["parse_simple"]

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_END = r" *(?:;[ \t\r\n]*)?\Z"
_DESCRIBE = re.compile(rf"( *)DESCRIBE +(?:TABLE +)?({_NAME})(?:\.({_NAME}))?{_END}", re.IGNORECASE | re.ASCII)
_SHOW_TABLES = re.compile(rf" *SHOW +TABLES(?: +IN +({_NAME}))?(?: +LIKE +('[^'\\\r\n]*'))?{_END}", re.IGNORECASE | re.ASCII)
_DROP_TABLE = re.compile(rf" *DROP +TABLE +(IF +EXISTS +)?({_NAME})(?:\.({_NAME}))?{_END}", re.IGNORECASE | re.ASCII)


def _name(match: re.Match, group: int) -> exp.Identifier | None:
    text = match.group(group)
    if text is None:
        return None
    node = exp.Identifier(this=text, quoted=False)
    start, end = match.start(group), match.end(group) - 1
    node.meta.update(line=1, col=end + 1, start=start, end=end)
    return node


def _table(match: re.Match, first: int) -> exp.Table:
    one, two = _name(match, first), _name(match, first + 1)
    return exp.Table(this=one) if two is None else exp.Table(this=two, db=one)


def _names_allowed(match: re.Match, reserved: frozenset[str], *groups: int) -> bool:
    return all(match.group(g) is None or match.group(g).upper() not in reserved for g in groups)


def parse_simple(sql: str, reserved: frozenset[str]) -> exp.Expr | None:
    """The node of ``sql`` if it is one of this module's statements in its plainest
    spelling (FP2), else None (then the parser decides). ``reserved``: the upper-case
    words a name may not be here (the dialect's RESERVED_WORDS: every word the tokenizer
    or the parser gives a meaning to)."""
    head = sql.lstrip(" ")[:4].upper()
    if head == "DESC":
        match = _DESCRIBE.match(sql)
        if match is None or not _names_allowed(match, reserved, 2, 3):
            return None
        return DescribeTable(this=_table(match, 2), version=None)
    if head == "SHOW":
        match = _SHOW_TABLES.match(sql)
        if match is None or not _names_allowed(match, reserved, 1):
            return None
        like = None
        if match.group(2) is not None:
            like = exp.Literal.string(match.group(2)[1:-1])
            start, end = match.start(2), match.end(2) - 1
            like.meta.update(line=1, col=end + 1, start=start, end=end)
        return ShowTables(namespace=_name(match, 1), like=like, version=None)
    if head == "DROP":
        match = _DROP_TABLE.match(sql)
        if match is None or not _names_allowed(match, reserved, 2, 3):
            return None
        return DropTable(this=_table(match, 2), exists=match.group(1) is not None)
    return None
