"""Everything the SQL layer needs from sqlglot that differs between its versions.

The package supports sqlglot from 28.10 (what Apache Superset 6.1 pins) to the current
30.x. The dialect (:mod:`.dialect`) and its parser (:mod:`.parser`) are built on sqlglot's
Spark dialect and use some of its parser internals; every place where those internals
changed between the supported versions is handled here, once, and the rest of the package
imports the names below instead of reaching into sqlglot itself:

============================  ==================================  =========================
what                          sqlglot 28.x                        sqlglot 30.x
============================  ==================================  =========================
base class of an expression   ``exp.Expression``                  ``exp.Expr``
type names                    ``exp.DataType.Type``               ``exp.DType`` (an alias)
the Spark parser class        ``sqlglot.dialects.spark``          ``sqlglot.parsers.spark``
                              (``Spark.Parser``)                  (``SparkParser``)
``Parser.expression``         ``(cls, token, **args)``; a token   ``(instance, token)``
                              also sets ``this`` to its text
time travel phrases           tokens (``VERSION AS OF`` is one    ``VERSION_PHRASES``, read
                              ``VERSION_SNAPSHOT`` token)         word by word
DuckDB's reserved words        77, some misspelt (``group_p``):    122: every word DuckDB
                              ``at``, ``group``... left unquoted  reserves is quoted
executor joins                no per-row hook                     ``_join_matches(row, ...)``
                                                                  per joined pair
text matching                 only strings are never matched as   ``TEXT_MATCH_EXCLUDED_
                              words                               TOKENS`` (quoted names too)
no-parenthesis functions      the Dialect metaclass drops         kept as the parser
                              ``LOCALTIME`` and ``LOCALTIMESTAMP`` declares them
                              from most dialects' parsers
============================  ==================================  =========================

:func:`keep_no_paren_functions` puts back, after the dialect class is made, the functions
without parentheses its parser declares (``LOCALTIME``, ``LOCALTIMESTAMP``).

:func:`duckdb_dialect` is the DuckDB dialect the data statements are written in
(:mod:`.query`): sqlglot's, quoting every word DuckDB reserves on every version.

:func:`executor_compat` returns the same for sqlglot's Python executor (the system tables'
queries, :mod:`.system_tables`): on 28.x its joins call ``_join_matches`` for every
pair of rows, as 30.x's do, so a join can be cancelled and bounded on both. (A function,
so that the executor is imported only by the first query over system tables.)

:class:`ParserCompat` is a mixin placed before the Spark parser in
:class:`~.parser.TrinityLakeParser`'s bases: on 30.x it adds nothing, on 28.x it supplies
the 30.x behaviour (time travel phrases read word by word, quoted names never matched as
words), so both versions parse TrinityLake SQL the same way. :func:`tokenizer_keywords`
drops 28.x's multi-word time travel tokens for the same reason.

Nothing else in the package may import from ``sqlglot.parsers``, name ``exp.DType`` or
use ``exp.Expr`` at run time (annotations are fine: they are never evaluated);
tests/sql/test_compat.py checks that, and that the names here work on the installed
sqlglot, and ``scripts/test`` runs the SQL tests on the oldest and the newest supported
versions.
"""

from __future__ import annotations

import collections
import functools
import inspect
import itertools
import typing as t

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import Token, TokenType

__all__ = [
    "SQLGLOT_VERSION",
    "Expr",
    "DType",
    "SparkParser",
    "Spark",
    "ParserCompat",
    "executor_compat",
    "EXECUTOR_DIFFERS",
    "duckdb_dialect",
    "build",
    "tokenizer_keywords",
    "keep_no_paren_functions",
]


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


#: The installed sqlglot's version, as a tuple of ints (e.g. ``(30, 30, 0)``).
SQLGLOT_VERSION = _version(getattr(sqlglot, "__version__", "0"))

#: The base class of every sqlglot expression node.
Expr: type = getattr(exp, "Expr", None) or exp.Expression
#: The enumeration of data type names (``exp.DType`` in 30.x, ``exp.DataType.Type`` in both).
DType = exp.DataType.Type

try:  # sqlglot >= 29: parsers live in their own modules
    from sqlglot.parsers.spark import SparkParser  # type: ignore[no-redef]
except ImportError:  # sqlglot 28
    SparkParser = Spark.Parser  # type: ignore[misc,assignment]

# Does Parser.expression take a built node (30.x) or a class and its arguments (28.x)?
_EXPRESSION_TAKES_INSTANCE = "instance" in inspect.signature(SparkParser.expression).parameters


def build(parser: t.Any, node: t.Any, token: Token | None = None) -> t.Any:
    """``node`` validated by ``parser`` and given ``token``'s source position (what
    ``Parser.expression`` does; its signature changed in sqlglot 29)."""
    if _EXPRESSION_TAKES_INSTANCE:
        return parser.expression(node, token)
    built = parser.expression(type(node), **node.args)
    if token is not None:
        built.update_positions(token)
    return built


#: Tokens never matched as a word by ``_match_texts``/``_match_text_seq`` (30.x's set).
_TEXT_MATCH_EXCLUDED_TOKENS = frozenset(
    getattr(TokenType, name)
    for name in (
        "BIT_STRING", "BYTE_STRING", "HEREDOC_STRING", "HEX_STRING", "IDENTIFIER",
        "NATIONAL_RAW_STRING", "NATIONAL_STRING", "RAW_STRING", "STRING", "UNICODE_STRING",
    )
    if hasattr(TokenType, name)
)  # fmt: skip

# 28.x tokenizes these phrases as one token each; 30.x reads them word by word.
_SNAPSHOT_TOKENS = frozenset(
    getattr(TokenType, name)
    for name in ("VERSION_SNAPSHOT", "TIMESTAMP_SNAPSHOT")
    if hasattr(TokenType, name)
)


def tokenizer_keywords(keywords: dict[str, t.Any]) -> dict[str, t.Any]:
    """A tokenizer's KEYWORDS without 28.x's multi-word time travel tokens (``FOR
    VERSION``, ``VERSION AS OF``, ...), so that the parser reads them word by word."""
    return {word: tok for word, tok in keywords.items() if tok not in _SNAPSHOT_TOKENS}


if hasattr(SparkParser, "VERSION_PHRASES"):

    class ParserCompat:
        """Nothing to add on this sqlglot."""

else:

    class ParserCompat:  # type: ignore[no-redef]
        """The parser behaviour of sqlglot 30.x that 28.x lacks (see the module
        docstring). Mixed in before sqlglot's parser class."""

        TEXT_MATCH_EXCLUDED_TOKENS: t.ClassVar[frozenset] = _TEXT_MATCH_EXCLUDED_TOKENS

        VERSION_PHRASES: t.ClassVar[dict[tuple[str, ...], str]] = {
            ("FOR", "SYSTEM_TIME"): "TIMESTAMP",
            ("FOR", "SYSTEM", "TIME"): "TIMESTAMP",
            ("FOR", "TIMESTAMP"): "TIMESTAMP",
            ("FOR", "VERSION"): "VERSION",
            ("TIMESTAMP", "AS", "OF"): "TIMESTAMP",
            ("VERSION", "AS", "OF"): "VERSION",
        }

        def _match_texts(self, texts, advance=True):  # type: ignore[no-untyped-def]
            curr = self._curr  # type: ignore[attr-defined]
            if (
                curr
                and curr.token_type not in self.TEXT_MATCH_EXCLUDED_TOKENS
                and curr.text.upper() in texts
            ):
                if advance:
                    self._advance()  # type: ignore[attr-defined]
                return True
            return False

        def _match_text_seq(self, *texts, advance=True):  # type: ignore[no-untyped-def]
            index = self._index  # type: ignore[attr-defined]
            for text in texts:
                curr = self._curr  # type: ignore[attr-defined]
                if (
                    curr
                    and curr.token_type not in self.TEXT_MATCH_EXCLUDED_TOKENS
                    and curr.text.upper() == text
                ):
                    self._advance()  # type: ignore[attr-defined]
                else:
                    self._retreat(index)  # type: ignore[attr-defined]
                    return False
            if not advance:
                self._retreat(index)  # type: ignore[attr-defined]
            return True

        def _parse_version(self):  # type: ignore[no-untyped-def]
            # 30.x's _parse_version: phrases read word by word, the value by _parse_bitwise.
            p: t.Any = self
            for phrase, this in p.VERSION_PHRASES.items():
                if p._match_text_seq(*phrase):
                    break
            else:
                return None
            if p._match_set((TokenType.FROM, TokenType.BETWEEN)):
                kind = p._prev.text.upper()
                start = p._parse_bitwise()
                p._match_texts(("TO", "AND"))
                end = p._parse_bitwise()
                expression = build(p, exp.Tuple(expressions=[start, end]))
            elif p._match_text_seq("CONTAINED", "IN"):
                kind = "CONTAINED IN"
                expression = build(p, exp.Tuple(expressions=p._parse_wrapped_csv(p._parse_bitwise)))
            elif p._match(TokenType.ALL):
                kind, expression = "ALL", None
            else:
                p._match_text_seq("AS", "OF")
                kind = "AS OF"
                expression = p._parse_bitwise()
            return build(p, exp.Version(this=this, expression=expression, kind=kind))


#: Nodes sqlglot's Python executor runs otherwise than DuckDB on this sqlglot (and 30.x
#: alike): on 28.x it has no ``||`` (DPIPE) or ILIKE function, ignores OFFSET and the
#: DISTINCT of ``count(DISTINCT x)``. A system query holding one runs in DuckDB (query
#: rule Q11; tests/sql/test_system_meaning.py, run on both versions by scripts/test).
EXECUTOR_DIFFERS: frozenset[type] = (
    frozenset({exp.DPipe, exp.ILike, exp.Offset, exp.Distinct}) if SQLGLOT_VERSION < (29,) else frozenset()
)


@functools.cache
def executor_compat() -> type:
    """A mixin for a subclass of sqlglot's ``PythonExecutor`` (placed before it): empty on
    30.x; on 28.x, joins that call ``_join_matches`` for every pair of rows."""
    from sqlglot.executor.python import PythonExecutor
    from sqlglot.executor.table import Table

    if hasattr(PythonExecutor, "_join_matches"):

        class ExecutorCompat:
            """Nothing to add on this sqlglot."""

    else:

        class ExecutorCompat:  # type: ignore[no-redef]
            """28.x's joins (the same rows, in the same order), calling ``_join_matches``
            for every pair of rows as 30.x's do. Mixed in before ``PythonExecutor``."""

            @staticmethod
            def _join_matches(row, condition, condition_context):  # type: ignore[no-untyped-def]
                return True  # 28.x filters by the join condition after the join

            def nested_loop_join(self, _join, source_context, join_context):  # type: ignore[no-untyped-def]
                table = Table(source_context.columns + join_context.columns)
                for reader_a, _ in source_context:
                    for reader_b, _ in join_context:
                        row = reader_a.row + reader_b.row
                        if self._join_matches(row, None, None):
                            table.append(row)
                return table

            def hash_join(self, join, source_context, join_context):  # type: ignore[no-untyped-def]
                p: t.Any = self
                source_key = p.generate_tuple(join["source_key"])
                join_key = p.generate_tuple(join["join_key"])
                left = join.get("side") == "LEFT"
                right = join.get("side") == "RIGHT"
                results: dict = collections.defaultdict(lambda: ([], []))
                for reader, ctx in source_context:
                    results[ctx.eval_tuple(source_key)][0].append(reader.row)
                for reader, ctx in join_context:
                    results[ctx.eval_tuple(join_key)][1].append(reader.row)
                table = Table(source_context.columns + join_context.columns)
                nulls = [(None,) * len(join_context.columns if left else source_context.columns)]
                for a_group, b_group in results.values():
                    if left:
                        b_group = b_group or nulls
                    elif right:
                        a_group = a_group or nulls
                    for a_row, b_row in itertools.product(a_group, b_group):
                        row = a_row + b_row
                        if self._join_matches(row, None, None):
                            table.append(row)
                return table

    return ExecutorCompat


# Words DuckDB reserves that sqlglot 28.x's DuckDB generator leaves unquoted (30.x quotes
# them): a column named ``at`` or ``group`` would be a syntax error in DuckDB.
_DUCKDB_RESERVED = frozenset("""
    anti asc asof at authorization binary by check collation columns concurrently create
    cross desc describe end false freeze full generated glob group ilike in inner is
    isnull join lambda lateral left like map natural notnull null outer overlaps pivot
    pivot_longer pivot_wider positional qualify right semi show similar struct summarize
    tablesample true try_cast tuple unpack unpivot verbose
""".split())


@functools.cache
def duckdb_dialect() -> t.Any:
    """sqlglot's DuckDB dialect (an instance, for ``node.sql(dialect=...)``), with every
    word DuckDB reserves quoted when it is used as a name, whatever the sqlglot version."""
    from sqlglot.dialects.duckdb import DuckDB

    reserved = DuckDB.Generator.RESERVED_KEYWORDS
    if _DUCKDB_RESERVED <= reserved:
        return DuckDB()

    class QuotingDuckDB(DuckDB):
        class Generator(DuckDB.Generator):
            RESERVED_KEYWORDS = reserved | _DUCKDB_RESERVED

    return QuotingDuckDB()


def keep_no_paren_functions(parser: t.Any, functions: dict) -> None:
    """``functions`` (token type -> expression class) in ``parser``'s
    NO_PAREN_FUNCTIONS: sqlglot 28's Dialect metaclass removes LOCALTIME and
    LOCALTIMESTAMP from the parser of a dialect made from most bases (30.x leaves them)."""
    missing = {token: node for token, node in functions.items() if parser.NO_PAREN_FUNCTIONS.get(token) is not node}
    if missing:
        parser.NO_PAREN_FUNCTIONS = {**parser.NO_PAREN_FUNCTIONS, **missing}
