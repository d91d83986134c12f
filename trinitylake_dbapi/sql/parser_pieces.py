"""The small pieces of TrinityLake SQL's statements, read by the parser (:mod:`.parser`):
words, names, dotted names, strings, constants, property lists, IF [NOT] EXISTS, time
travel clauses, LIKE patterns and column definitions.

:class:`TrinityLakeParserPieces` is a mixin of :class:`~trinitylake_dbapi.sql.parser.TrinityLakeParser`:
its methods use the sqlglot parser's state (the current token, ``_match`` and the like)
and the parser's errors (``raise_error``, ``_tl_unsupported``).
"""

from __future__ import annotations

import re
import typing as t

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from trinitylake_dbapi.errors import NotSupportedError
from trinitylake_dbapi.format.types import canonical_kind
from trinitylake_dbapi.sql.compat import Expr

__all__ = ["TrinityLakeParserPieces"]

# Column constraints that exist in other engines but not in the format.
_ALLOWED_CONSTRAINTS = (
    exp.NotNullColumnConstraint,
    exp.CommentColumnConstraint,
    exp.PrimaryKeyColumnConstraint,
)


#: The text of a word token: one word, or several (sqlglot makes one token of keywords such
#: as PRIMARY KEY).
_PHRASE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?: [A-Za-z_][A-Za-z0-9_]*)*")


class TrinityLakeParserPieces:
    """The parser's methods that read one piece of a statement (see the module docstring)."""

    def _tl_word(self, tok: Token | None = None) -> str | None:
        """The upper-case text of a token that is a plain word (a keyword or an
        unquoted name), else None."""
        tok = self._curr if tok is None else tok
        if not tok or tok.token_type in self.TEXT_MATCH_EXCLUDED_TOKENS:
            return None
        return tok.text.upper() if _PHRASE.fullmatch(tok.text) else None

    def _tl_first_word(self) -> str:
        """The first word of the current token ("" if it is not a word)."""
        return (self._tl_word() or "").split(" ")[0]

    def _tl_expect(self, *words: str) -> None:
        if not self._match_text_seq(*words):
            self.raise_error(f"Expected {' '.join(words)}")

    def _tl_name(self, what: str) -> exp.Identifier:
        """One name part: a plain word or a quoted identifier (never a string or a
        parameter). Case is kept as written."""
        tok = self._curr
        if tok and (
            tok.token_type == TokenType.IDENTIFIER
            or tok.token_type == TokenType.VAR
            or (tok.token_type in self.ID_VAR_TOKENS and tok.token_type != TokenType.STRING)
        ):
            self._advance()
            ident = exp.Identifier(this=tok.text, quoted=tok.token_type == TokenType.IDENTIFIER)
            ident.update_positions(tok)
            return ident
        self.raise_error(f"Expected a {what} name")
        raise AssertionError("unreachable")

    def _tl_dotted(self, what: str, most: int) -> list[exp.Identifier]:
        parts = [self._tl_name(what)]
        while self._match(TokenType.DOT):
            parts.append(self._tl_name(what))
        if len(parts) > most:
            self.raise_error(
                f"A {what} name has at most {most} part{'s' if most > 1 else ''}",
                self._prev,
            )
        return parts

    def _tl_namespace(self) -> exp.Identifier:
        return self._tl_dotted("namespace", 1)[0]

    def _tl_table(self) -> exp.Table:
        parts = self._tl_dotted("table", 2)
        if len(parts) == 1:
            return exp.Table(this=parts[0])
        return exp.Table(this=parts[1], db=parts[0])

    def _tl_string(self, what: str) -> exp.Expr:
        """A string literal or a parameter."""
        value = self._parse_string()
        if value is None:
            self.raise_error(f"Expected {what} (a quoted string or a parameter)")
        return t.cast(Expr, value)

    def _tl_string_or_null(self, what: str) -> exp.Expr:
        if self._match(TokenType.NULL):
            return exp.Null()
        return self._tl_string(what)

    def _tl_value(self, what: str) -> exp.Expr:
        """One constant: a string, a number (optionally negative), TRUE, FALSE, NULL or
        a parameter."""
        tok = self._curr
        value: exp.Expr | None = None
        if tok and tok.token_type == TokenType.STRING:
            self._advance()
            value = exp.Literal.string(tok.text)
        elif tok and tok.token_type == TokenType.NUMBER:
            self._advance()
            value = exp.Literal.number(tok.text)
        elif self._match_pair(TokenType.DASH, TokenType.NUMBER, advance=False):
            self._advance(2)
            value = exp.Neg(this=exp.Literal.number(self._prev.text))
        elif self._match(TokenType.TRUE):
            value = exp.Boolean(this=True)
        elif self._match(TokenType.FALSE):
            value = exp.Boolean(this=False)
        elif self._match(TokenType.NULL):
            value = exp.Null()
        else:
            value = self._parse_placeholder()
        if value is None:
            self.raise_error(f"Expected {what}")
        return t.cast(Expr, value)

    def _tl_property_key(self) -> exp.Expr:
        """A property key: a string, or a dotted plain name written without quotes
        (``write.format = 'x'``), kept as one string."""
        tok = self._curr
        if tok and tok.token_type == TokenType.STRING:
            self._advance()
            key = exp.Literal.string(tok.text)
            key.update_positions(tok)
            return key
        parts = [self._tl_name("property")]
        while self._match(TokenType.DOT):
            parts.append(self._tl_name("property"))
        return exp.Literal.string(".".join(p.this for p in parts))

    def _tl_properties(self) -> list[exp.Property]:
        """``( key = value [, ...] )``."""

        def one() -> exp.Property:
            key = self._tl_property_key()
            self._match(TokenType.EQ)  # Spark allows `key value` without `=`
            value = self._tl_value("a property value")
            return exp.Property(this=key, value=value)

        self._tl_expect("(")
        props = [one()]
        while self._match(TokenType.COMMA):
            props.append(one())
        self._tl_expect(")")
        return props

    def _tl_keys(self) -> list[exp.Expr]:
        """``( key [, ...] )``."""
        self._tl_expect("(")
        keys = [self._tl_property_key()]
        while self._match(TokenType.COMMA):
            keys.append(self._tl_property_key())
        self._tl_expect(")")
        return keys

    def _tl_if_not_exists(self) -> bool:
        return self._match_text_seq("IF", "NOT", "EXISTS")

    def _tl_if_exists(self) -> bool:
        return self._match_text_seq("IF", "EXISTS")

    def _tl_version(self) -> exp.Version | None:
        """An optional time travel clause; only ``AS OF`` is supported."""
        if not self._curr:
            return None
        start = self._curr
        version = self._parse_version()
        if version is not None and version.args.get("kind") != "AS OF":
            self._retreat(self._tokens.index(start))
            self._tl_unsupported(0, f"FOR ... {version.args.get('kind')} (time travel ranges)")
        if version is not None and version.expression is None:
            self.raise_error("Expected a version or a timestamp after AS OF")
        return version

    def _tl_like(self) -> exp.Expr | None:
        if self._match(TokenType.LIKE):
            return self._tl_string("a LIKE pattern")
        return None

    def _tl_column_def(self) -> exp.ColumnDef:
        start = self._curr
        name = self._tl_name("column")
        column = self._parse_column_def(name)
        if not isinstance(column, exp.ColumnDef) or column.args.get("kind") is None:
            tok = self._curr
            if tok and tok.token_type == TokenType.VAR:  # a word, but not a type
                canonical_kind(tok.text, column=name.this)  # raises "unknown type ..."
            self.raise_error("Expected a column type", self._curr or start)
        for constraint in column.args.get("constraints") or []:
            kind = constraint
            if isinstance(constraint, exp.ColumnConstraint):
                kind = constraint.args.get("kind")
            if not isinstance(kind, _ALLOWED_CONSTRAINTS):
                raise NotSupportedError(
                    f"column {name.this!r}: constraint {constraint.sql(dialect=self.dialect)!r} "
                    "is not supported; a column takes NOT NULL, COMMENT and PRIMARY KEY"
                )
        return t.cast(exp.ColumnDef, column)

