"""The TrinityLake SQL dialect and the entry points of the SQL layer: text in, statements out.

Base: sqlglot's ``spark`` dialect, so ``USING``, ``TBLPROPERTIES``, ``LOCATION``,
``COMMENT``, ``ARRAY<...>``, ``MAP<...>`` and ``STRUCT<...>`` parse as in Spark SQL. Changes:

* Quoting is ANSI: ``'...'`` is a string, ``"..."`` and ```...``` are identifiers (BI
  tools and SQLAlchemy quote identifiers with double quotes). Identifiers keep the case
  they are written in.
* Type names follow SPEC 5, not Spark: ``TIMESTAMP`` is a timestamp *without* time zone,
  ``FLOAT`` is an 8-byte float (``REAL``/``FLOAT4`` are 4-byte), ``INT8`` is a bigint,
  ``FIXED(n)`` is fixed-length binary, ``VARBYTE`` is binary, ``ROW`` is a struct.
* Statements are parsed by :class:`~.parser.TrinityLakeParser` into the typed nodes of
  :mod:`.statements` (or a query); nothing ever becomes an ``exp.Command``.

The SQL layer is split in three: :mod:`.statements` says what a statement is,
:mod:`.parser` how text becomes one, and this module holds the dialect (its tokenizer and
the parser it uses) with the functions the rest of the package calls: :func:`parse`,
:func:`parse_statement`, :func:`parse_marked`, :func:`tokenize`, :func:`split_statements`
and :func:`quote_identifier`. The statement classes are importable from here too.
"""

from __future__ import annotations

import re
import threading
import typing as t

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from trinitylake_dbapi.errors import InterfaceError, SQLSyntaxError
from trinitylake_dbapi.format.types import is_plain_name, quote_name
from trinitylake_dbapi.sql.compat import Spark, keep_no_paren_functions, tokenizer_keywords
from trinitylake_dbapi.sql.parser import TEXT_KEYWORDS, VOCABULARY, TrinityLakeParser
from trinitylake_dbapi.sql.syntax import syntax_error

__all__ = [
    "TrinityLake",
    "parse",
    "parse_statement",
    "parse_marked",
    "split_statements",
    "quote_identifier",
    "RESERVED_WORDS",
    "KEYWORDS",
]


class TrinityLake(Spark):
    """sqlglot dialect of TrinityLake SQL (see the module docstring)."""

    class Tokenizer(Spark.Tokenizer):
        QUOTES = ["'"]
        IDENTIFIERS = ["`", '"']
        # ANSI strings: a quote inside a string is doubled; a backslash is itself.
        STRING_ESCAPES = ["'"]
        RAW_STRINGS: t.ClassVar[list] = []
        STRING_ESCAPES_ALLOWED_IN_RAW_STRINGS = True
        # No statement is tokenized as a raw command string.
        COMMANDS: t.ClassVar[set[TokenType]] = set()
        KEYWORDS = {
            **tokenizer_keywords(Spark.Tokenizer.KEYWORDS),
            # SPEC 5 names, where Spark or sqlglot read them differently.
            "TIMESTAMP": TokenType.TIMESTAMP,
            "INT8": TokenType.BIGINT,
            "FLOAT": TokenType.DOUBLE,
            "FLOAT4": TokenType.FLOAT,
            "REAL": TokenType.FLOAT,
            "FIXED": TokenType.FIXEDSTRING,
            "VARBYTE": TokenType.VARBINARY,
            "ROW": TokenType.STRUCT,
        }

    Parser = TrinityLakeParser


keep_no_paren_functions(TrinityLakeParser, TrinityLakeParser.TL_NO_PAREN_FUNCTIONS)


def _reserved_words() -> frozenset[str]:
    """Every word that sqlglot or this dialect treats specially somewhere: the
    tokenizer's keywords and the words the parser matches by text (its string-keyed
    tables: constraints, properties, clauses...), upper-case. Function names are left
    out: a column named ``count`` reads back as a column."""
    words = {w.upper() for w in TrinityLake.Tokenizer.KEYWORDS}
    for name in dir(TrinityLake.Parser):
        table = getattr(TrinityLake.Parser, name)
        if name != "FUNCTIONS" and isinstance(table, (dict, set, frozenset)):
            words.update(w.upper() for k in table if isinstance(k, str) for w in k.split())
    words.update(VOCABULARY)
    return frozenset(w for w in words if is_plain_name(w))


def _keywords() -> frozenset[str]:
    """Every word that cannot stand plain where TrinityLake SQL expects a name: the
    tokenizer's keywords whose token no name position accepts (not among the parser's
    ID_VAR_TOKENS), and the words the parser reads by their text where a name could
    stand (TEXT_KEYWORDS), upper-case."""
    tokens = TrinityLake.Tokenizer.KEYWORDS
    names = TrinityLake.Parser.ID_VAR_TOKENS
    words = {w.upper() for w, token in tokens.items() if token not in names}
    return frozenset(w for w in words | TEXT_KEYWORDS if is_plain_name(w))


#: Words that cannot stand plain as a name: what the SQLAlchemy dialect quotes beyond
#: SQL's reserved words.
KEYWORDS = _keywords()
#: Words that SQL text written by this package always quotes when used as a name: the
#: KEYWORDS and, to be safe, every other word sqlglot or the parser gives a meaning to.
RESERVED_WORDS = _reserved_words() | KEYWORDS


def quote_identifier(name: str) -> str:
    """``name`` as SQL text that this dialect reads back as exactly that identifier:
    the format's quoting rule (``format.types.quote_name``: plain when it is one
    ordinary word, else in backquotes, backquotes doubled) with RESERVED_WORDS, so that
    no keyword stands plain. What the SQL layer writes (SHOW CREATE TABLE, struct field
    names in types) and the shell use it; the SQLAlchemy dialect quotes at least the
    KEYWORDS."""
    return quote_name(name, RESERVED_WORDS)


# ---------------------------------------------------------------------------
# Errors the parser itself cannot raise
# ---------------------------------------------------------------------------


def _too_deep(sql: str, tokens: list[Token]) -> SQLSyntaxError:
    """The syntax error for a statement nested deeper than the parser's recursion allows:
    it points at the token where the nesting (parentheses plus a run of NOT or other
    prefix operators) is deepest."""
    depth = run = deepest = 0
    where = tokens[0] if tokens else None
    for tok in tokens:
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            depth -= 1
        run = run + 1 if tok.token_type in _PREFIX_OPERATORS else 0
        if depth + run > deepest:
            deepest, where = depth + run, tok
    start = where.start if where else 0
    return syntax_error(
        sql,
        f"the statement is nested too deeply ({deepest} levels of parentheses or prefix "
        "operators here); simplify it",
        start,
        where.end if where else 0,
    )


_PREFIX_OPERATORS = frozenset((TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE))


def _token_error(sql: str, error: TokenError) -> SQLSyntaxError:
    cause = str(error.__cause__ or error)
    m = re.search(r"Missing (.) from \d+:(\d+)", cause)
    if m:
        offset = int(m.group(2))
        what = "string" if m.group(1) == "'" else "quoted identifier"
        return syntax_error(sql, f"unterminated {what}", offset, len(sql) - 1)
    opened = sql.rfind("/*")
    if opened >= 0 and sql.find("*/", opened) < 0:
        return syntax_error(sql, "unterminated comment", opened, opened + 1)
    return syntax_error(sql, f"cannot tokenize: {cause}", len(sql), len(sql))


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------

_DIALECT = TrinityLake()

# One tokenizer and one parser per thread, reused (both reset themselves on every call;
# building them costs more than tokenizing a short statement). Taken out while in use,
# so a nested call builds its own.
_SPARE = threading.local()


def _new_parser() -> TrinityLakeParser:
    try:
        return _DIALECT.parser()
    except TypeError as e:
        if "interpreted classes cannot inherit from compiled" not in str(e):
            raise
        # sqlglot's compiled build (the sqlglotc package, sqlglot[c]) refuses Python
        # subclasses of its parser and expression classes, which this dialect is made of.
        raise InterfaceError(
            "TrinityLake SQL needs the pure-Python build of sqlglot, but the compiled build "
            "(package sqlglotc, installed by sqlglot[c]) is installed and its classes cannot "
            "be subclassed; remove it with: pip uninstall sqlglotc"
        ) from e


def tokenize(sql: str) -> list[Token]:
    """The tokens of ``sql``; SQLSyntaxError for an unterminated string or comment."""
    tokenizer = getattr(_SPARE, "tokenizer", None) or _DIALECT.tokenizer()
    _SPARE.tokenizer = None
    try:
        return tokenizer.tokenize(sql)
    except TokenError as e:
        raise _token_error(sql, e) from None
    finally:
        _SPARE.tokenizer = tokenizer


def parse(sql: str) -> list[exp.Expr]:
    """Every statement of ``sql`` (separated by ``;``), empty ones left out.

    Raises SQLSyntaxError (a ProgrammingError) with line, column and text, or
    NotSupportedError naming a statement outside TrinityLake SQL.
    """
    return _parse(sql)[0]


def _parse(sql: str) -> tuple[list[exp.Expr], bool]:
    """The statements of ``sql`` and whether they may contain parameter markers."""
    if not isinstance(sql, str):
        raise SQLSyntaxError(
            f"SQL must be a str, not {type(sql).__name__}", line=0, column=0, text=""
        )
    # The parser first: with sqlglot's compiled build installed it cannot be made, and
    # that is the error to give for every text, even one that does not tokenize.
    parser = getattr(_SPARE, "parser", None) or _new_parser()
    _SPARE.parser = None
    tokens: list[Token] = []
    try:
        tokens = tokenize(sql)
        statements, markers = parser.parse_with_markers(tokens, sql)
    except RecursionError:
        raise _too_deep(sql, tokens) from None
    except ParseError as e:  # raised by sqlglot itself, not through raise_error
        err = e.errors[0] if e.errors else {}
        line, col = err.get("line") or 1, err.get("col") or 1
        raise SQLSyntaxError(
            f"syntax error at line {line}, column {col}: {err.get('description') or e}",
            line=line, column=col, text=err.get("highlight") or "",
        ) from None  # fmt: skip
    finally:
        _SPARE.parser = parser
    found = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
    return found, markers


def parse_statement(sql: str) -> exp.Expr:
    """Exactly one statement (a trailing ``;`` is allowed)."""
    return parse_marked(sql)[0]


def parse_marked(sql: str) -> tuple[exp.Expr, bool]:
    """:func:`parse_statement`, and whether the statement may contain parameter markers
    (``?``, ``:name`` or an unsupported kind). False means it has none for certain, so
    binding can be skipped when no parameters are given."""
    statements, markers = _parse(sql)
    if not statements:
        raise SQLSyntaxError("empty statement: there is no SQL to run", line=1, column=1, text="")
    if len(statements) > 1:
        raise SQLSyntaxError(
            f"one statement at a time: found {len(statements)} statements separated by ';'",
            line=1, column=1, text="",
        )  # fmt: skip
    return statements[0], markers


def split_statements(sql: str) -> tuple[list[str], str]:
    """Split a script at top-level semicolons (not those in strings, quoted names or
    comments). Returns the complete statements (without their ``;``, stripped, empty
    ones left out) and the text after the last ``;`` (an unfinished statement, stripped).

    Text that cannot be tokenized (e.g. an unterminated string) is returned whole as the
    unfinished part, so a shell can keep reading lines.
    """
    try:
        tokens = _DIALECT.tokenize(sql)
    except TokenError:
        return [], sql.strip()
    statements: list[str] = []
    begin = 0
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            text = sql[begin : tok.start].strip()
            if text and _has_tokens(text):
                statements.append(text)
            begin = tok.end + 1
    rest = sql[begin:].strip()
    if rest and not _has_tokens(rest):
        rest = ""
    return statements, rest


def _has_tokens(text: str) -> bool:
    """False for text that is only comments."""
    try:
        return bool(_DIALECT.tokenize(text))
    except TokenError:
        return True
