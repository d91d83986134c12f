"""The parser of TrinityLake SQL: tokens in, one typed statement node out.

A table of handlers (:attr:`TrinityLakeParser.TL_STATEMENTS`, by first word) parses every
statement into a node of :mod:`.statements`, or hands a query (``SELECT`` / ``WITH``) to
sqlglot's Spark parser. Nothing ever becomes an ``exp.Command``: a statement outside the
list raises :class:`~trinitylake_dbapi.errors.NotSupportedError` naming it, and anything
that does not parse raises :class:`~trinitylake_dbapi.errors.SQLSyntaxError` with the
line, the column and the offending text (built by :func:`.syntax.syntax_error`, also used
by the entry points in :mod:`.dialect` for what fails before or around the parser). The
small pieces of statements (names, strings, constants, properties, column definitions)
are read by the methods of :class:`.parser_pieces.TrinityLakeParserPieces`, a mixin.

Parameters (``?`` and ``:name``) are ``exp.Placeholder`` nodes that carry their source
position; :mod:`.binding` replaces them with literals. They are accepted only where a
value is (comments, property values, patterns, versions, timestamps), never as a name.
:meth:`TrinityLakeParser.parse_with_markers` also tells whether a statement can hold one.

Type names follow SPEC 5 (see :mod:`.dialect` for the tokenizer's side); a column
definition may also write ``NOT NULL`` and ``COMMENT`` after the element, key and value
types of ``list<...>`` and ``map<...>``, as SPEC 5's canonical type text does.

The dialect (:class:`~trinitylake_dbapi.sql.dialect.TrinityLake`) uses this class as its
``Parser``. It depends on sqlglot parser internals; what differs between the supported sqlglot
versions is handled in :mod:`.compat`.
"""

from __future__ import annotations

import difflib
import re
import typing as t

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from trinitylake_dbapi.errors import NotSupportedError, SQLSyntaxError
from trinitylake_dbapi.sql.compat import ParserCompat, SparkParser, build
from trinitylake_dbapi.sql.parser_pieces import TrinityLakeParserPieces
from trinitylake_dbapi.sql.statements import (
    SUPPORTED,
    AddColumns,
    AddPartitionField,
    AlterColumn,
    AlterNamespace,
    Begin,
    CommentOn,
    CommitWork,
    CreateNamespace,
    CreateTable,
    DescribeNamespace,
    DescribeTable,
    DropColumn,
    DropNamespace,
    DropPartitionField,
    DropTable,
    ExpireVersions,
    ExportSnapshot,
    OptimizeTable,
    ExpireSnapshots,
    PartitionField,
    RenameColumn,
    RenameTable,
    RollbackToVersion,
    RollbackWork,
    SetTableProperties,
    ShowCreateTable,
    ShowPartitions,
    ShowNamespaces,
    ShowTables,
    ShowVersions,
    UnsetTableProperties,
    UseNamespace,
)
from trinitylake_dbapi.sql.syntax import line_col, syntax_error

__all__ = ["TrinityLakeParser", "TEXT_KEYWORDS", "VOCABULARY"]

_NAMESPACE_WORDS = ("NAMESPACE", "SCHEMA", "DATABASE")
_NAMESPACES_WORDS = ("NAMESPACES", "SCHEMAS", "DATABASES")
_ISOLATION_LEVELS = {"SNAPSHOT": "SNAPSHOT", "SERIALIZABLE": "SERIALIZABLE"}
# Words after which a clause is recognised but refused (instead of a syntax error).
_UNSUPPORTED_TABLE_CLAUSES = {
    "CLUSTERED": "CLUSTERED BY",
    "STORED": "STORED AS",
    "OPTIONS": "OPTIONS",
    "ROW": "ROW FORMAT",
    "SORTED": "SORTED BY",
    "LIKE": "CREATE TABLE LIKE",
}
# Table constraints other than PRIMARY KEY (refused).
_TABLE_CONSTRAINTS = frozenset(("FOREIGN", "UNIQUE", "CHECK", "INDEX", "KEY"))
# ALTER TABLE ADD <word> that is not a column.
_UNSUPPORTED_ADD = ("CONSTRAINT", "PRIMARY", "PARTITION", "FOREIGN", "UNIQUE", "CHECK", "INDEX")
# Words that start a clause of CREATE TABLE after its name or column list.
_TABLE_CLAUSE_WORDS = ("AS", "USING", "COMMENT", "TBLPROPERTIES", "LOCATION", "PARTITIONED")
#: Words this parser reads by their text where a name could also stand (a kind of object,
#: a clause, a constraint): a name spelled as one of them must be quoted.
TEXT_KEYWORDS = frozenset({
    *_NAMESPACE_WORDS, *_NAMESPACES_WORDS, *_UNSUPPORTED_TABLE_CLAUSES, *_TABLE_CONSTRAINTS,
    *_UNSUPPORTED_ADD, "EXTENDED", "PARTITIONED",
})

# sqlglot's messages, reworded by raise_error.
_SQLGLOT_MISSING = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>")
_SQLGLOT_TOKEN_REPR = re.compile(r"\s*(but got|, got)?\s*<Token [^>]*>")


def _is_number(node: exp.Expr) -> bool:
    """Whether ``node`` is a number literal, or one negated."""
    node = node.this if isinstance(node, exp.Neg) else node
    return isinstance(node, exp.Literal) and not node.is_string


class TrinityLakeParser(TrinityLakeParserPieces, ParserCompat, SparkParser):
    """sqlglot's Spark parser with TrinityLake SQL's statements (see the module docstring)."""

    # CAST fails on a bad value (Spark's is a TRY_CAST); TRY_CAST stays available.
    STRICT_CAST = True

    FUNCTIONS = {
        **SparkParser.FUNCTIONS,
        # A parameter marker as DATE_TRUNC's unit stays a marker (Spark's builder makes
        # any first argument a unit name, so `?` became the unit "?").
        "DATE_TRUNC": lambda args: (
            exp.TimestampTrunc(this=args[1], unit=args[0])
            if len(args) == 2 and isinstance(args[0], exp.Placeholder)
            else SparkParser.FUNCTIONS["DATE_TRUNC"](args)
        ),
        # unix_timestamp(): the current time's seconds since the epoch (Spark's builder
        # made a parse of a missing string, which no engine runs).
        "UNIX_TIMESTAMP": lambda args: (
            exp.Cast(this=exp.TimeToUnix(this=exp.CurrentTimestamp()), to=exp.DataType.build("BIGINT"))
            if not args
            else SparkParser.FUNCTIONS["UNIX_TIMESTAMP"](args)
        ),
        # to_timestamp(number): seconds since the epoch (as in PostgreSQL and DuckDB);
        # Spark's builder casts, and no engine casts a number to a timestamp.
        "TO_TIMESTAMP": lambda args: (
            exp.UnixToTime(this=args[0])
            if len(args) == 1 and _is_number(args[0])
            else SparkParser.FUNCTIONS["TO_TIMESTAMP"](args)
        ),
    }

    # CURRENT_TIME, LOCALTIME and LOCALTIMESTAMP are the SQL standard's functions
    # without parentheses, like CURRENT_DATE (Spark reads them as column names).
    # (sql.compat.keep_no_paren_functions keeps them on sqlglot 28, whose dialects drop two.)
    TL_NO_PAREN_FUNCTIONS = {
        TokenType.CURRENT_TIME: exp.CurrentTime,
        **({TokenType.LOCALTIME: exp.Localtime} if hasattr(exp, "Localtime") and hasattr(TokenType, "LOCALTIME") else {}),
        **(
            {TokenType.LOCALTIMESTAMP: exp.Localtimestamp}
            if hasattr(exp, "Localtimestamp") and hasattr(TokenType, "LOCALTIMESTAMP")
            else {}
        ),
    }
    NO_PAREN_FUNCTIONS = {**SparkParser.NO_PAREN_FUNCTIONS, **TL_NO_PAREN_FUNCTIONS}

    VERSION_PHRASES = {
        ("FOR", "SYSTEM_VERSION"): "VERSION",
        ("FOR", "SYSTEM_TIME"): "TIMESTAMP",
        ("FOR", "SYSTEM", "VERSION"): "VERSION",
        ("FOR", "SYSTEM", "TIME"): "TIMESTAMP",
        ("VERSION", "AS", "OF"): "VERSION",
        ("TIMESTAMP", "AS", "OF"): "TIMESTAMP",
    }

    PLACEHOLDER_PARSERS = {
        **SparkParser.PLACEHOLDER_PARSERS,
        # Keep the source position, so parameters bind in the order they are written.
        TokenType.PLACEHOLDER: lambda self: build(self, exp.Placeholder(), self._prev),
        TokenType.COLON: lambda self: (
            build(self, exp.Placeholder(this=self._prev.text), self._prev)
            if self._match_set(self.COLON_PLACEHOLDER_TOKENS)
            else None
        ),
    }

    #: Set when the statement may contain a parameter marker (see parse_with_markers).
    _tl_markers = False

    def parse_with_markers(
        self, tokens: list[Token], sql: str
    ) -> tuple[list[exp.Expr | None], bool]:
        """``parse(tokens, sql)``, and whether the statements may contain parameter
        markers (False means none for certain: see ``_parse_placeholder``)."""
        self._tl_markers = False
        return self.parse(tokens, sql), self._tl_markers

    def _parse_placeholder(self) -> exp.Expr | None:
        # Every exp.Placeholder and exp.Parameter sqlglot builds comes from
        # PLACEHOLDER_PARSERS, which only this method calls: a parse that never got a
        # node here has no markers. (A marker parsed and then backtracked over only
        # makes the answer a conservative "maybe".)
        node = super()._parse_placeholder()
        if node is not None:
            self._tl_markers = True
        return node

    #: How many type parsers are running around the current one, counted from the
    #: innermost struct field (see _parse_types).
    _tl_type_depth = 0

    def _parse_types(
        self,
        check_func: bool = False,
        schema: bool = False,
        allow_identifiers: bool = True,
        **kwargs: t.Any,
    ) -> exp.Expr | None:
        """sqlglot's type parser, plus ``NOT NULL`` and ``COMMENT '..'`` after the
        element of ``list<...>`` and the key and value of ``map<...>`` in a column
        definition (the canonical type text of SPEC 5 writes them there). Such an
        element becomes an unnamed ``exp.ColumnDef`` holding the type and constraints.

        An element is a type parsed inside another type's parser (``_tl_type_depth``),
        but not a struct field's type, which is a column definition of its own
        (_parse_struct_types resets the depth). ``kwargs`` are passed on as they are
        (sqlglot 30 adds ``with_collation``).
        """
        self._tl_type_depth += 1
        try:
            this = super()._parse_types(check_func, schema, allow_identifiers, **kwargs)
        finally:
            self._tl_type_depth -= 1
        if not (schema and self._tl_type_depth and isinstance(this, exp.DataType)):
            return this
        constraints = []
        while True:
            start = self._curr
            if self._match_pair(TokenType.NOT, TokenType.NULL):
                kind: exp.Expr = exp.NotNullColumnConstraint()
            elif self._match(TokenType.COMMENT):
                kind = exp.CommentColumnConstraint(this=self._tl_string("a comment"))
            else:
                break
            constraint = exp.ColumnConstraint(kind=kind)
            constraint.update_positions(start)
            constraints.append(constraint)
        if not constraints:
            return this
        return exp.ColumnDef(this=exp.Identifier(this=""), kind=this, constraints=constraints)

    def _parse_struct_types(self, *args: t.Any, **kwargs: t.Any) -> exp.Expr | None:
        depth, self._tl_type_depth = self._tl_type_depth, 0
        try:
            return super()._parse_struct_types(*args, **kwargs)
        finally:
            self._tl_type_depth = depth

    # sqlglot reads the elements of ROLLUP, CUBE and GROUPING SETS as arithmetic only, so
    # ``GROUP BY ROLLUP (a, b IS NULL)`` (which Spark and DuckDB accept) was a syntax error.

    def _parse_cube_or_rollup(self, with_prefix: bool = False) -> exp.Cube | exp.Rollup | None:
        if with_prefix or not self._curr or self._curr.token_type not in (TokenType.CUBE, TokenType.ROLLUP):
            return super()._parse_cube_or_rollup(with_prefix)
        kind: type[exp.Cube | exp.Rollup] = exp.Cube if self._curr.token_type == TokenType.CUBE else exp.Rollup
        self._advance()
        return build(self, kind(expressions=self._parse_wrapped_csv(self._parse_disjunction)))

    def _parse_grouping_set(self) -> exp.Expr | None:
        return self._parse_grouping_sets() or self._parse_cube_or_rollup() or self._parse_disjunction()

    # -- errors ---------------------------------------------------------------

    def raise_error(self, message: str, token: Token | None = None) -> None:
        """Raise at once (never collect), with the token's *start* position."""
        message = _SQLGLOT_TOKEN_REPR.sub("", message)
        missing = _SQLGLOT_MISSING.fullmatch(message)
        if missing:
            what = "an expression" if missing.group(1) == "this" else missing.group(1)
            message = f"incomplete {missing.group(2).upper()}: {what} is missing"
        if token:
            raise syntax_error(self.sql, message, token.start, token.end)
        if self._curr:
            raise syntax_error(self.sql, message, self._curr.start, self._curr.end)
        end = self._prev.end + 1 if self._prev else len(self.sql)
        raise syntax_error(self.sql, message, end, end, at_end=True)

    def _parse_as_command(self, start: Token) -> exp.Command:
        self.raise_error("Unsupported syntax", start)
        raise AssertionError("unreachable")

    def _tl_unsupported(self, words: int, what: str | None = None) -> t.NoReturn:
        """Refuse the statement or clause starting at the current token, naming it by
        its first ``words`` words (or ``what``).

        A misspelling is a syntax error, not an unsupported statement: when one of
        those words is not an SQL keyword at all (an unknown first word, or a word
        close to one TrinityLake SQL uses), SQLSyntaxError points at it and suggests
        the closest word.
        """
        start = self._curr
        if what is None:
            taken = []
            for i in range(words):
                index = self._index + i
                tok = self._tokens[index] if index < len(self._tokens) else None
                word = self._tl_word(tok)
                if word is None:
                    break
                first = i == 0 and (index == 0 or self._tokens[index - 1].token_type == TokenType.SEMICOLON)
                self._tl_check_spelling(t.cast(Token, tok), first)
                taken.append(word)
            what = " ".join(taken) or start.text
        line, col = line_col(self.sql, start.start)
        raise NotSupportedError(
            f"{what} is not supported (line {line}, column {col}); TrinityLake SQL "
            f"supports {SUPPORTED}"
        )

    def _tl_check_spelling(self, tok: Token, first: bool) -> None:
        """SQLSyntaxError for a word that is no SQL keyword and is either a statement's
        first word or close to a word of TrinityLake SQL (a misspelling)."""
        if tok.token_type != TokenType.VAR:
            return  # a keyword: real SQL that TrinityLake does not support
        word = tok.text.upper()
        close = difflib.get_close_matches(word, VOCABULARY, n=1, cutoff=0.7)
        if not first and not close:
            return
        hint = f"; did you mean {close[0]}?" if close else f"; a statement starts with {_FIRST_WORDS}"
        raise syntax_error(self.sql, f"unknown word {tok.text!r}{hint}", tok.start, tok.end)

    # -- statements -----------------------------------------------------------

    def _parse_statement(self) -> exp.Expr | None:
        if not self._curr:
            return None
        # TL_STATEMENTS by first word (what _match_text_seq of it would match).
        if self._curr.token_type not in self.TEXT_MATCH_EXCLUDED_TOKENS:
            handler = _TL_BY_WORD.get(self._curr.text.upper())
            if handler is not None:
                self._advance()
                return handler(self)
            if self._curr.text.upper() in ("SAVEPOINT", "RELEASE"):
                self._tl_savepoints()
        if self._curr.token_type in (TokenType.SELECT, TokenType.WITH, TokenType.L_PAREN):
            start = self._curr
            query = super()._parse_statement()
            if not isinstance(query, exp.Query):
                self.raise_error("Expected a query", start)
            return query
        if self._curr.token_type in _DATA_STATEMENTS:
            start = self._curr
            data = super()._parse_statement()
            if not isinstance(data, _DATA_STATEMENTS[start.token_type]):
                self.raise_error(f"Expected {start.text.upper()} ...", start)
            return data
        self._tl_unsupported(2)

    def _tl_create(self) -> exp.Expr:
        if self._match_texts(_NAMESPACE_WORDS):
            return self._tl_create_namespace()
        external = self._match_text_seq("EXTERNAL")
        if self._match(TokenType.TABLE):
            return self._tl_create_table(external)
        self._retreat(self._index - 1 - external)
        self._tl_unsupported(3 if self._tokens[self._index + 1].text.upper() == "OR" else 2)

    def _tl_create_namespace(self) -> CreateNamespace:
        exists = self._tl_if_not_exists()
        name = self._tl_namespace()
        comment = properties = None
        while self._curr:
            if comment is None and self._match(TokenType.COMMENT):
                comment = self._tl_string("a comment")
            elif properties is None and self._match_text_seq("WITH", "DBPROPERTIES"):
                properties = self._tl_properties()
            elif properties is None and self._match_text_seq("WITH", "PROPERTIES"):
                properties = self._tl_properties()
            elif properties is None and self._match(TokenType.WITH):
                properties = self._tl_properties()
            elif self._match_text_seq("LOCATION", advance=False):
                self._tl_unsupported(0, "CREATE NAMESPACE ... LOCATION")
            else:
                self.raise_error("Expected COMMENT or WITH (properties)")
        return CreateNamespace(
            this=name, exists=exists, comment=comment, properties=properties or []
        )

    def _tl_create_table(self, external: bool) -> CreateTable:
        exists = self._tl_if_not_exists()
        table = self._tl_table()
        columns: list[exp.ColumnDef] = []
        primary_key: list[exp.Identifier] | None = None
        if self._curr and self._curr.text.upper().split(" ")[0] in _TABLE_CLAUSE_WORDS:
            return self._tl_table_clauses(table, exists, external, columns, primary_key)
        self._tl_expect("(")
        while True:
            if self._match(TokenType.CONSTRAINT):
                self._tl_name("constraint")  # the format keeps no constraint names
                if not self._match(TokenType.PRIMARY_KEY, advance=False):
                    self._tl_unsupported(2)
            if self._match(TokenType.PRIMARY_KEY):
                if primary_key is not None:
                    self.raise_error("A table has at most one PRIMARY KEY", self._prev)
                self._tl_expect("(")
                primary_key = [self._tl_name("column")]
                while self._match(TokenType.COMMA):
                    primary_key.append(self._tl_name("column"))
                self._tl_expect(")")
            elif (
                self._curr.text.split(" ")[0].upper() in _TABLE_CONSTRAINTS  # cheap first
                and self._tl_first_word() in _TABLE_CONSTRAINTS
            ):
                self._tl_unsupported(2)
            else:
                columns.append(self._tl_column_def())
            if not self._match(TokenType.COMMA):
                break
        self._tl_expect(")")
        return self._tl_table_clauses(table, exists, external, columns, primary_key)

    def _tl_table_clauses(
        self,
        table: exp.Table,
        exists: bool,
        external: bool,
        columns: list[exp.ColumnDef],
        primary_key: list[exp.Identifier] | None,
    ) -> CreateTable:
        """What follows CREATE TABLE's name and columns: USING, PARTITIONED BY, COMMENT,
        TBLPROPERTIES, LOCATION, and last ``AS <query>`` (only without a column list)."""
        seen: set[str] = set()
        using = comment = properties = location = query = partitioned_by = None
        while self._curr:
            word = self._curr.text.upper().split(" ")[0]
            if word in seen and word in _TABLE_CLAUSE_WORDS:
                self.raise_error(f"{word} is given twice")
            seen.add(word)
            if self._match_text_seq("USING"):
                using = self._tl_name("table format")
            elif self._tl_partitioned_by():
                self._tl_expect("(")
                partitioned_by = [self._tl_partition_field()]
                while self._match(TokenType.COMMA):
                    partitioned_by.append(self._tl_partition_field())
                self._tl_expect(")")
            elif self._match(TokenType.COMMENT):
                comment = self._tl_string("a comment")
            elif self._match_text_seq("TBLPROPERTIES"):
                properties = self._tl_properties()
            elif self._match_text_seq("LOCATION"):
                location = self._tl_string("a location")
            elif self._curr.token_type == TokenType.ALIAS:
                if columns or primary_key:
                    self.raise_error("CREATE TABLE ... AS SELECT takes its columns from the query, not a column list")
                if external:
                    self.raise_error("CREATE EXTERNAL TABLE cannot take AS SELECT")
                self._advance()
                start = self._curr
                query = super()._parse_statement() if self._curr else None
                if not isinstance(query, exp.Query):
                    self.raise_error("Expected a query after AS", start or self._prev)
                break
            elif self._tl_first_word() in _UNSUPPORTED_TABLE_CLAUSES:
                self._tl_unsupported(0, _UNSUPPORTED_TABLE_CLAUSES[self._tl_first_word()])
            else:
                self.raise_error("Expected USING, PARTITIONED BY, COMMENT, TBLPROPERTIES or LOCATION")
        if external and location is None:
            self.raise_error("CREATE EXTERNAL TABLE needs a LOCATION", self._prev)
        if query is None and not columns:
            self.raise_error("Expected ( and the columns, or AS and a query", self._prev)
        return CreateTable(
            this=table, exists=exists, columns=columns, primary_key=primary_key or [],
            using=using, comment=comment, properties=properties or [],
            location=location, external=external, query=query, partitioned_by=partitioned_by or [],
        )  # fmt: skip

    def _tl_partitioned_by(self) -> bool:
        """Whether the next words are PARTITIONED BY (one token to sqlglot's tokenizer),
        consumed."""
        if " ".join(self._curr.text.upper().split()) == "PARTITIONED BY":
            self._advance()
            return True
        return self._match_text_seq("PARTITIONED", "BY")

    def _tl_partition_field(self) -> PartitionField:
        """One partition field (iceberg.partitioning PT1): ``column``,
        ``transform(column)``, ``bucket(n, column)`` / ``truncate(width, column)`` (the
        number first or second), then optionally ``AS name``."""
        tok = self._curr
        following = self._tokens[self._index + 1] if self._index + 1 < len(self._tokens) else None
        if tok is not None and following is not None and following.token_type == TokenType.L_PAREN:
            transform = exp.Identifier(this=tok.text)
            transform.update_positions(tok)
            self._advance(2)
            column = argument = None
            for _ in range(2):
                if self._curr and self._curr.token_type == TokenType.NUMBER:
                    if argument is not None:
                        self.raise_error("Expected a column name")
                    argument = exp.Literal.number(self._curr.text)
                    self._advance()
                else:
                    if column is not None:
                        self.raise_error("Expected a number")
                    column = self._tl_name("column")
                if not self._match(TokenType.COMMA):
                    break
            self._tl_expect(")")
            if column is None:
                self.raise_error("Expected a column name", self._prev)
            field = PartitionField(this=transform, column=column, argument=argument)
        else:
            field = PartitionField(this=exp.Identifier(this="identity"), column=self._tl_name("partition column"))
        if self._match(TokenType.ALIAS):
            field.set("alias", self._tl_name("partition field"))
        return field

    def _tl_alter(self) -> exp.Expr:
        if self._match_texts(_NAMESPACE_WORDS):
            return self._tl_alter_namespace()
        if self._match(TokenType.TABLE):
            return self._tl_alter_table()
        self._retreat(self._index - 1)
        self._tl_unsupported(2)

    def _tl_alter_namespace(self) -> AlterNamespace:
        name = self._tl_namespace()
        if self._match(TokenType.SET):
            if not self._match_texts(("PROPERTIES", "DBPROPERTIES")):
                self.raise_error("Expected PROPERTIES or DBPROPERTIES")
            return AlterNamespace(this=name, set_properties=self._tl_properties())
        if self._match_text_seq("UNSET"):
            if not self._match_texts(("PROPERTIES", "DBPROPERTIES")):
                self.raise_error("Expected PROPERTIES or DBPROPERTIES")
            return AlterNamespace(this=name, unset_properties=self._tl_keys())
        if self._curr and self._curr.text.upper() in ("RENAME", "OWNER"):
            self._tl_unsupported(0, f"ALTER NAMESPACE ... {self._curr.text.upper()}")
        self.raise_error("Expected SET or UNSET")
        raise AssertionError("unreachable")

    def _tl_alter_table(self) -> exp.Expr:
        table = self._tl_table()
        if self._match_text_seq("ADD"):
            if self._match_text_seq("COLUMNS") or self._match_text_seq("COLUMN"):
                pass
            if self._match(TokenType.L_PAREN):
                columns = [self._tl_column_def()]
                while self._match(TokenType.COMMA):
                    columns.append(self._tl_column_def())
                self._tl_expect(")")
            else:
                if self._match_text_seq("PARTITION", "FIELD"):
                    return AddPartitionField(this=table, field=self._tl_partition_field())
                if self._tl_first_word() in _UNSUPPORTED_ADD:
                    self._tl_unsupported(0, f"ALTER TABLE ADD {self._tl_word()}")
                columns = [self._tl_column_def()]
                while self._match(TokenType.COMMA):
                    columns.append(self._tl_column_def())
            return AddColumns(this=table, columns=columns)
        if self._match(TokenType.DROP):
            if self._match_text_seq("PARTITION", "FIELD"):
                return DropPartitionField(this=table, field=self._tl_partition_field())
            if not self._match_text_seq("COLUMN"):
                if self._curr and self._curr.token_type not in self.TEXT_MATCH_EXCLUDED_TOKENS:
                    self._tl_unsupported(0, f"ALTER TABLE DROP {self._curr.text.upper()}")
                self.raise_error("Expected COLUMN")
            return DropColumn(this=table, column=self._tl_name("column"))
        if self._match_text_seq("RENAME", "COLUMN"):
            old = self._tl_name("column")
            self._tl_expect("TO")
            return RenameColumn(this=table, old=old, new=self._tl_name("column"))
        if self._match_text_seq("RENAME", "TO"):
            return RenameTable(this=table, to=self._tl_table())
        if self._match_text_seq("EXECUTE"):
            return self._tl_execute_procedure(table)
        if self._match_text_seq("SET", "TBLPROPERTIES"):
            return SetTableProperties(this=table, properties=self._tl_properties())
        if self._match_text_seq("UNSET", "TBLPROPERTIES"):
            exists = self._tl_if_exists()
            return UnsetTableProperties(this=table, keys=self._tl_keys(), exists=exists)
        if self._match_texts(("ALTER", "CHANGE")):
            self._match_text_seq("COLUMN")
            column = self._tl_name("column")
            if self._match_text_seq("SET", "NOT", "NULL"):
                return AlterColumn(this=table, column=column, nullable=False)
            if self._match_text_seq("DROP", "NOT", "NULL"):
                return AlterColumn(this=table, column=column, nullable=True)
            if self._match(TokenType.COMMENT):
                comment = self._tl_string_or_null("a comment")
                return AlterColumn(this=table, column=column, comment=comment)
            if self._tl_word() in ("TYPE", "SET", "DROP", "FIRST", "AFTER", "POSITION"):
                self._tl_unsupported(0, f"ALTER COLUMN ... {self._curr.text.upper()}")
            self.raise_error("Expected SET NOT NULL, DROP NOT NULL or COMMENT")
        if self._tl_word() is not None:
            self._tl_unsupported(0, f"ALTER TABLE ... {self._curr.text.upper()}")
        self.raise_error(
            "Expected ADD, DROP, RENAME, SET TBLPROPERTIES, UNSET TBLPROPERTIES or ALTER COLUMN"
        )
        raise AssertionError("unreachable")

    def _tl_execute_procedure(self, table: exp.Table) -> exp.Expr:
        """Trino's ``ALTER TABLE t EXECUTE optimize [()]``: the table procedure OPTIMIZE
        runs (the table's own target file size applies; Trino's arguments are refused)."""
        word = self._tl_word()
        if word == "EXPIRE_SNAPSHOTS":
            return self._tl_expire_snapshots(table)
        if word != "OPTIMIZE":
            self._tl_unsupported(0, f"ALTER TABLE ... EXECUTE {word or ''}".strip())
        self._advance()
        if self._match(TokenType.L_PAREN):
            if not self._match(TokenType.R_PAREN):
                self._tl_unsupported(0, "arguments of ALTER TABLE ... EXECUTE optimize (set the table property "
                                     "write.target-file-size-bytes instead)")
        return OptimizeTable(this=table)

    def _tl_expire_snapshots(self, table: exp.Table) -> exp.Expr:
        """``ALTER TABLE t EXECUTE expire_snapshots [( [older_than => ts] [, retain_last
        => n] )]``: Iceberg's snapshot expiration with Spark's argument names."""
        self._advance()
        args: dict[str, exp.Expr] = {}
        if self._match(TokenType.L_PAREN) and not self._match(TokenType.R_PAREN):
            while True:
                name = (self._tl_word() or "").lower()
                if name not in ("older_than", "retain_last") or name in args:
                    self.raise_error("Expected an argument older_than => ... or retain_last => ... (each once)")
                self._advance()
                if not self._match(TokenType.FARROW):
                    self.raise_error(f"Expected => after {name}")
                value = self._parse_bitwise()
                if value is None:
                    self.raise_error(f"Expected a value for {name}")
                args[name] = value
                if self._match(TokenType.R_PAREN):
                    break
                if not self._match(TokenType.COMMA):
                    self.raise_error("Expected , or )")
        return ExpireSnapshots(this=table, **args)

    def _tl_optimize(self) -> exp.Expr:
        """OPTIMIZE [TABLE] t (Delta Lake's and Databricks' spelling)."""
        self._match(TokenType.TABLE)
        return OptimizeTable(this=self._tl_table())

    def _tl_drop(self) -> exp.Expr:
        if self._match_texts(_NAMESPACE_WORDS):
            exists = self._tl_if_exists()
            name = self._tl_namespace()
            cascade = False
            if self._match_text_seq("CASCADE"):
                cascade = True
            else:
                self._match_text_seq("RESTRICT")
            return DropNamespace(this=name, exists=exists, cascade=cascade)
        if self._match(TokenType.TABLE):
            exists = self._tl_if_exists()
            return DropTable(this=self._tl_table(), exists=exists)
        self._retreat(self._index - 1)
        self._tl_unsupported(2)

    def _tl_show(self) -> exp.Expr:
        if self._match_texts(_NAMESPACES_WORDS):
            like = self._tl_like()
            return ShowNamespaces(like=like, version=self._tl_version())
        if self._match_text_seq("TABLES"):
            namespace = None
            if self._match_texts(("IN", "FROM")):
                namespace = self._tl_namespace()
            like = self._tl_like()
            return ShowTables(namespace=namespace, like=like, version=self._tl_version())
        if self._match_text_seq("CREATE", "TABLE"):
            table = self._tl_table()
            return ShowCreateTable(this=table, version=self._tl_version())
        if self._match_text_seq("PARTITIONS"):
            table = self._tl_table()
            return ShowPartitions(this=table, version=self._tl_version())
        if self._match_text_seq("VERSIONS"):
            limit = self._tl_value("a number of versions") if self._match(TokenType.LIMIT) else None
            return ShowVersions(limit=limit)
        self._retreat(self._index - 1)
        self._tl_unsupported(2)

    def _tl_describe(self) -> exp.Expr:
        if self._match_texts(_NAMESPACE_WORDS):
            self._match_text_seq("EXTENDED")
            name = self._tl_namespace()
            return DescribeNamespace(this=name, version=self._tl_version())
        self._match(TokenType.TABLE)
        extended = self._match_text_seq("EXTENDED")
        table = self._tl_table()
        return DescribeTable(this=table, version=self._tl_version(), extended=extended)

    def _tl_use(self) -> exp.Expr:
        self._match_texts(_NAMESPACE_WORDS)
        return UseNamespace(this=self._tl_namespace())

    def _tl_begin(self) -> exp.Expr:
        self._match_texts(("TRANSACTION", "WORK"))
        return self._tl_isolation()

    def _tl_start(self) -> exp.Expr:
        self._tl_expect("TRANSACTION")
        return self._tl_isolation()

    def _tl_isolation(self) -> Begin:
        if not self._match_text_seq("ISOLATION", "LEVEL"):
            return Begin()
        start = self._curr
        words = []
        while self._tl_word() is not None:
            words.append(self._tl_word())
            self._advance()
        level = " ".join(words)
        if not level:
            self.raise_error("Expected an isolation level (SNAPSHOT or SERIALIZABLE)")
        if level not in _ISOLATION_LEVELS:
            line, col = line_col(self.sql, start.start)
            raise NotSupportedError(
                f"isolation level {level} is not supported (line {line}, column {col}); "
                "use SNAPSHOT or SERIALIZABLE"
            )
        return Begin(isolation=_ISOLATION_LEVELS[level])

    def _tl_commit(self) -> exp.Expr:
        self._match_texts(("TRANSACTION", "WORK"))
        return CommitWork()

    def _tl_rollback(self) -> exp.Expr:
        if self._match_text_seq("TO", "VERSION"):
            return RollbackToVersion(this=self._tl_value("a version number"))
        self._match_texts(("TRANSACTION", "WORK"))
        if self._match_text_seq("TO", advance=False):
            self._tl_savepoints()
        return RollbackWork()

    def _tl_savepoints(self) -> t.NoReturn:
        """SAVEPOINT, RELEASE [SAVEPOINT] and ROLLBACK TO [SAVEPOINT] (the current token
        is the first word after ROLLBACK's): NotSupportedError saying so, and what to
        do instead (SQLAlchemy's ``begin_nested()`` sends these)."""
        start = self._prev if self._curr.text.upper() == "TO" and self._prev else self._curr
        line, col = line_col(self.sql, start.start)
        raise NotSupportedError(
            f"savepoints are not supported (SAVEPOINT, RELEASE SAVEPOINT and ROLLBACK TO "
            f"SAVEPOINT; line {line}, column {col}): a transaction commits or rolls back "
            "whole. SQLAlchemy's Session.begin_nested() and Connection.begin_nested() need "
            "savepoints; use a transaction of its own (Session.begin()) instead"
        )

    def _tl_export(self) -> exp.Expr:
        self._tl_expect("SNAPSHOT")
        tok = self._curr
        if tok and tok.token_type in (TokenType.STRING, TokenType.PLACEHOLDER, TokenType.COLON):
            name: exp.Expr = self._tl_string("a snapshot name")
        else:
            ident = self._tl_name("snapshot")
            name = exp.Literal.string(ident.this)
        version = None
        if self._match_text_seq("AS", "OF", "VERSION"):
            version = self._tl_value("a version number")
        return ExportSnapshot(this=name, version=version)

    def _tl_expire(self) -> exp.Expr:
        self._tl_expect("VERSIONS")
        retain = older = None
        dry_run = False
        while self._curr:
            if retain is None and self._match_text_seq("RETAIN", "LAST"):
                retain = self._tl_value("a number of versions")
            elif older is None and self._match_text_seq("OLDER", "THAN"):
                older = self._parse_bitwise()
                if older is None:
                    self.raise_error("Expected a timestamp")
            elif not dry_run and self._match_text_seq("DRY", "RUN"):
                dry_run = True
            else:
                self.raise_error("Expected RETAIN LAST, OLDER THAN or DRY RUN")
        return ExpireVersions(retain=retain, older_than=older, dry_run=dry_run)

    def _tl_comment_on(self) -> exp.Expr:
        self._tl_expect("ON")
        if self._match_texts(_NAMESPACE_WORDS):
            kind, this, column = "NAMESPACE", self._tl_namespace(), None
        elif self._match(TokenType.TABLE):
            kind, this, column = "TABLE", self._tl_table(), None
        elif self._match(TokenType.COLUMN):
            parts = self._tl_dotted("column", 3)
            if len(parts) < 2:
                self.raise_error("Expected table.column", self._prev)
            kind, column = "COLUMN", parts[-1]
            this = exp.Table(this=parts[-2], db=parts[0] if len(parts) == 3 else None)
        else:
            self._tl_unsupported(0, f"COMMENT ON {self._tl_word() or ''}".strip())
        self._tl_expect("IS")
        comment = self._tl_string_or_null("a comment")
        return CommentOn(kind=kind, this=this, column=column, comment=comment)

    TL_STATEMENTS: t.ClassVar[list[tuple[tuple[str, ...], t.Callable]]] = [
        (("CREATE",), _tl_create),
        (("ALTER",), _tl_alter),
        (("DROP",), _tl_drop),
        (("SHOW",), _tl_show),
        (("DESCRIBE",), _tl_describe),
        (("DESC",), _tl_describe),
        (("USE",), _tl_use),
        (("BEGIN",), _tl_begin),
        (("START",), _tl_start),
        (("COMMIT",), _tl_commit),
        (("ROLLBACK",), _tl_rollback),
        (("EXPORT",), _tl_export),
        (("EXPIRE",), _tl_expire),
        (("COMMENT",), _tl_comment_on),
        (("OPTIMIZE",), _tl_optimize),
    ]


# Data statements, parsed by sqlglot's Spark parser: first token -> the node expected.
_DATA_STATEMENTS = {
    TokenType.INSERT: exp.Insert, TokenType.UPDATE: exp.Update, TokenType.DELETE: exp.Delete, TokenType.MERGE: exp.Merge,
}  # fmt: skip

# Every statement starts with one word.
assert all(len(words) == 1 for words, _ in TrinityLakeParser.TL_STATEMENTS)
_TL_BY_WORD = {words[0]: handler for words, handler in TrinityLakeParser.TL_STATEMENTS}

#: The words statements of TrinityLake SQL are made of, for "did you mean" suggestions.
VOCABULARY = sorted(set(re.findall(r"[A-Z]+", SUPPORTED)) | set(_TL_BY_WORD) | {"WITH", "INSERT", "UPDATE", "DELETE", "MERGE"})
_FIRST_WORDS = ", ".join(sorted(set(_TL_BY_WORD) | {"SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "MERGE"}))
