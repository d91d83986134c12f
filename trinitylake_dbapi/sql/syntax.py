"""Syntax errors with positions: the line, column and text of what failed in a
statement, for the parser (:mod:`.parser`) and the dialect's entry points (:mod:`.dialect`).
"""

from __future__ import annotations

from trinitylake_dbapi.errors import SQLSyntaxError

__all__ = ["line_col", "syntax_error"]


def line_col(sql: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    offset = max(0, min(offset, len(sql)))
    line = sql.count("\n", 0, offset) + 1
    col = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    return line, col


def _shorten(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def syntax_error(
    sql: str, message: str, start: int, end: int, at_end: bool = False
) -> SQLSyntaxError:
    """The SQLSyntaxError for the text ``sql[start:end + 1]`` (or the end of the statement):
    its line and column, the text quoted, and the statement around it, so a user sees
    what was wrong and where without counting characters."""
    line, col = line_col(sql, start)
    if at_end or start >= len(sql) or not sql.strip():
        near = "the end of the statement"
        text = ""
    else:
        text = sql[start : end + 1]
        near = repr(_shorten(text))
    begin = max(0, start - 30)
    if begin > 0:  # start the excerpt at a word boundary
        space = sql.find(" ", begin, start)
        begin = space + 1 if space >= 0 else begin
    context = ("..." if begin > 0 else "") + _shorten(sql[begin : end + 31], 80)
    return SQLSyntaxError(
        f"syntax error at line {line}, column {col} near {near}: {message} (in: {context})",
        line=line,
        column=col,
        text=text,
    )
