"""Compilers: SQLAlchemy constructs -> TrinityLake SQL (issue 5).

DDL
    ``CREATE TABLE [IF NOT EXISTS] ns.t (c TYPE [NOT NULL] [COMMENT '..'], ..,
    PRIMARY KEY (..)) [PARTITIONED BY (..)] [COMMENT '..']``; comments are written inline
    (``inline_comments``), later changes as ``COMMENT ON TABLE | COLUMN .. IS ..``.
    ``Table(..., trinitylake_partitioned_by="day(ts), region")`` (a string or a list of
    partition fields, in TrinityLake SQL's syntax) is written as ``PARTITIONED BY``
    and reflected by ``get_table_options``.
    The format has no foreign keys, unique or check constraints and no indexes: they are
    accepted and left out of CREATE TABLE, and CREATE/DROP INDEX and ALTER TABLE ADD/DROP
    CONSTRAINT compile to an empty statement that the dialect does not send
    (:meth:`.base.TrinityLakeDialect.do_execute`). Server defaults, computed and identity
    columns have no place in the format and raise CompileError.

Types
    Every generic SQLAlchemy type is written as a SPEC 5 name (table in :mod:`.types`).
    Uuid, JSON and Interval have no SPEC 5 type that reads back as them: CompileError,
    naming the column, rather than a column that reflects as another type.

Settings
    :class:`TrinityLakeSQL` is the dialect's part that writes SQL (these compilers and
    the settings they read). The dialect of :mod:`.base` is built on it, and
    :func:`.types.type_text` compiles with it: nothing here or in :mod:`.types` imports
    :mod:`.base`.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import exc, types as sqltypes
from sqlalchemy.dialects.sqlite import base as _sqlite_base
from sqlalchemy.engine import default
from sqlalchemy.sql import compiler, elements
from sqlalchemy.sql import schema as _sa_schema
from sqlalchemy.sql.schema import PrimaryKeyConstraint as _PrimaryKey

from trinitylake_dbapi import KEYWORDS

from .compat import SQLALCHEMY_2, type_compiler

# The compilers visit the dialect's types (.types: FIXED, MAP, STRUCT) by name and read
# their attributes: no import needed, and none is made (.types imports this module).

#: Words written quoted when used as names: SQL's reserved words (SQLAlchemy's list) and
#: the words that cannot stand plain as a name in TrinityLake SQL, which the driver says
#: (``trinitylake_dbapi.KEYWORDS``, part of the words its own quote_identifier quotes).
RESERVED_WORDS = set(compiler.RESERVED_WORDS) | {w.lower() for w in KEYWORDS}


class TrinityLakeIdentifierPreparer(compiler.IdentifierPreparer):
    """ANSI double quotes (a quote inside a name is doubled); case is kept as written."""

    reserved_words = RESERVED_WORDS
    #: ASCII only and case-sensitive: SQLAlchemy's default (``[A-Z0-9_$]`` with
    #: IGNORECASE) also takes letters such as U+0131 (dotless i) for plain ones, which
    #: the type parser (and other SQL engines) read as something else.
    legal_characters = re.compile(r"^[A-Za-z0-9_]+$")

    def __init__(self, dialect: Any, **kw: Any) -> None:
        super().__init__(dialect, initial_quote='"', escape_quote='"', **kw)


class TrinityLakeTypeCompiler(compiler.GenericTypeCompiler):
    """Generic and dialect types -> SPEC 5 type names."""

    # -- numbers -----------------------------------------------------------------

    def visit_BOOLEAN(self, type_: Any, **kw: Any) -> str:
        return "BOOLEAN"

    def visit_SMALLINT(self, type_: Any, **kw: Any) -> str:
        return "SMALLINT"

    def visit_INTEGER(self, type_: Any, **kw: Any) -> str:
        return "INT"

    def visit_BIGINT(self, type_: Any, **kw: Any) -> str:
        return "BIGINT"

    def _decimal(self, type_: Any) -> str:
        if type_.precision is None:
            return "DECIMAL" if type_.scale is None else f"DECIMAL(10,{type_.scale})"
        if type_.scale is None:
            return f"DECIMAL({type_.precision})"
        return f"DECIMAL({type_.precision},{type_.scale})"

    def visit_NUMERIC(self, type_: Any, **kw: Any) -> str:
        return self._decimal(type_)

    def visit_DECIMAL(self, type_: Any, **kw: Any) -> str:
        return self._decimal(type_)

    def visit_FLOAT(self, type_: Any, **kw: Any) -> str:
        # Float(precision) counts binary digits: up to 24 fit in a 4-byte float.
        precision = getattr(type_, "precision", None)
        return "FLOAT4" if precision is not None and precision <= 24 else "FLOAT8"

    def visit_REAL(self, type_: Any, **kw: Any) -> str:
        return "FLOAT4"

    def visit_DOUBLE(self, type_: Any, **kw: Any) -> str:
        return "FLOAT8"

    def visit_DOUBLE_PRECISION(self, type_: Any, **kw: Any) -> str:
        return "FLOAT8"

    # -- text --------------------------------------------------------------------

    def _string(self, name: str, type_: Any) -> str:
        if getattr(type_, "collation", None):
            raise exc.CompileError("TrinityLake has no collations")
        length = getattr(type_, "length", None)
        return f"{name}({length})" if length else name

    def visit_VARCHAR(self, type_: Any, **kw: Any) -> str:
        return self._string("VARCHAR", type_)

    def visit_NVARCHAR(self, type_: Any, **kw: Any) -> str:
        return self._string("VARCHAR", type_)

    def visit_TEXT(self, type_: Any, **kw: Any) -> str:
        return self._string("VARCHAR", type_)

    def visit_CLOB(self, type_: Any, **kw: Any) -> str:
        return self._string("VARCHAR", type_)

    def visit_CHAR(self, type_: Any, **kw: Any) -> str:
        return self._string("CHAR", type_)

    def visit_NCHAR(self, type_: Any, **kw: Any) -> str:
        return self._string("CHAR", type_)

    # -- time --------------------------------------------------------------------

    def _time(self, name: str, type_: Any) -> str:
        if getattr(type_, "timezone", False):
            name += "TZ"
        precision = getattr(type_, "precision", None)
        return name if precision is None else f"{name}({precision})"

    def visit_DATE(self, type_: Any, **kw: Any) -> str:
        return "DATE"

    def visit_TIME(self, type_: Any, **kw: Any) -> str:
        return self._time("TIME", type_)

    def visit_DATETIME(self, type_: Any, **kw: Any) -> str:
        return self._time("TIMESTAMP", type_)

    def visit_TIMESTAMP(self, type_: Any, **kw: Any) -> str:
        return self._time("TIMESTAMP", type_)

    # -- binary ------------------------------------------------------------------

    def visit_BLOB(self, type_: Any, **kw: Any) -> str:  # LargeBinary
        return self._string("BINARY", type_)

    def visit_VARBINARY(self, type_: Any, **kw: Any) -> str:
        return self._string("BINARY", type_)

    def visit_BINARY(self, type_: Any, **kw: Any) -> str:
        # SQL's BINARY(n) is fixed length, which is SPEC 5 fixed(n).
        return f"FIXED({type_.length})" if type_.length else "BINARY"

    def visit_FIXED(self, type_: Any, **kw: Any) -> str:
        return f"FIXED({type_.length})"

    # -- nested ------------------------------------------------------------------

    def visit_ARRAY(self, type_: sqltypes.ARRAY, **kw: Any) -> str:
        inner = self.process(type_.item_type, **kw)
        for _ in range((type_.dimensions or 1)):
            inner = f"ARRAY<{inner}>"
        return inner

    def visit_MAP(self, type_: Any, **kw: Any) -> str:
        value = self.process(type_.value_type, **kw)
        if not type_.value_nullable:
            value += " NOT NULL"
        return f"MAP<{self.process(type_.key_type, **kw)}, {value}>"

    def _field(self, field: Any, **kw: Any) -> str:
        text = f"{self.dialect.identifier_preparer.quote(field.name)}: "
        text += self.process(field.type, **kw)
        if not field.nullable:
            text += " NOT NULL"
        if field.comment is not None:
            text += " COMMENT " + string_literal(field.comment)
        return text

    def visit_STRUCT(self, type_: Any, **kw: Any) -> str:
        return "STRUCT<" + ", ".join(self._field(f, **kw) for f in type_.fields) + ">"

    # -- what the format cannot store: refused, naming the column -------------------------

    def _refuse(self, name: str, instead: str, **kw: Any) -> str:
        # In CREATE TABLE, SQLAlchemy prefixes the message with the table and column.
        raise exc.CompileError(f"TrinityLake has no {name} type; {instead}")

    def visit_uuid(self, type_: Any, **kw: Any) -> str:
        # SQLAlchemy would write CHAR(32), which reads back as a string, not a Uuid.
        return self._refuse("UUID", "store it as FIXED(16) or CHAR(36)", **kw)

    def visit_UUID(self, type_: Any, **kw: Any) -> str:
        return self.visit_uuid(type_, **kw)

    def visit_JSON(self, type_: Any, **kw: Any) -> str:
        return self._refuse("JSON", "use VARCHAR, or MAP / STRUCT / ARRAY for structure", **kw)

    def visit_type_decorator(self, type_: Any, **kw: Any) -> str:
        if isinstance(type_, sqltypes.Interval):
            # SQLAlchemy would write it as a TIMESTAMP since the epoch.
            return self._refuse("INTERVAL", "store a number of seconds or microseconds", **kw)
        return super().visit_type_decorator(type_, **kw)



def string_literal(text: str) -> str:
    """An ANSI string literal: quotes doubled, everything else (backslashes, newlines)
    as it is."""
    return "'" + text.replace("'", "''") + "'"


#: ``Table.info`` key marking Alembic's version table, whose "rows" (the heads) are kept
#: in its comment, separated by spaces (see alembic_impl.py).
HEADS_KEY = "trinitylake_alembic_heads"


def _heads_table(statement: Any) -> Any:
    froms = statement.get_final_froms()
    if len(froms) == 1 and getattr(froms[0], "info", {}).get(HEADS_KEY):
        return froms[0]
    return None


class TrinityLakeCompiler(compiler.SQLCompiler):
    """Queries: SQLAlchemy's generic SELECT, INSERT, UPDATE and DELETE, written as
    TrinityLake SQL reads them (``ns.t.column``, ``LIMIT ? OFFSET ?``, ``?`` markers).

    The one special case: a SELECT or DELETE of Alembic's version table (HEADS_KEY)
    reads or clears that table's comment.
    """

    #: Set when the statement reads Alembic's heads; the execution context splits the
    #: comment into one row per head.
    split_heads = False

    def visit_select(self, select_stmt: Any, **kw: Any) -> str:
        table = _heads_table(select_stmt) if not self.stack else None
        if table is None:
            return super().visit_select(select_stmt, **kw)
        self.split_heads = True
        schema = table.schema if table.schema is not None else self.dialect.default_schema_name
        return (
            "SELECT comment AS version_num FROM information_schema.tables "
            f"WHERE table_schema = {string_literal(schema)} "
            f"AND table_name = {string_literal(table.name)}"
        )

    def visit_delete(self, delete_stmt: Any, **kw: Any) -> str:
        table = delete_stmt.table
        if not getattr(table, "info", {}).get(HEADS_KEY):
            return super().visit_delete(delete_stmt, **kw)
        if delete_stmt.whereclause is not None:
            raise exc.CompileError("Alembic's heads are changed through its TrinityLake impl")
        return "COMMENT ON TABLE %s IS NULL" % self.preparer.format_table(table)

    # INSERT ... ON CONFLICT (.dml.Insert): written as SQLite's compiler writes it, which
    # is the syntax TrinityLake SQL reads (the same functions, on this compiler).
    _on_conflict_target = _sqlite_base.SQLiteCompiler._on_conflict_target
    visit_on_conflict_do_nothing = _sqlite_base.SQLiteCompiler.visit_on_conflict_do_nothing
    visit_on_conflict_do_update = _sqlite_base.SQLiteCompiler.visit_on_conflict_do_update

    def visit_date_trunc_func(self, fn: Any, **kw: Any) -> str:
        # The unit is written as a literal: TrinityLake SQL reads date_trunc's first
        # argument as a unit name, not as an expression a parameter could stand for (and a
        # GROUP BY of date_trunc('month', d) must repeat the SELECT's expression).
        unit, *rest = fn.clauses.clauses
        if isinstance(unit, elements.BindParameter) and isinstance(unit.value, str):
            unit_sql = string_literal(unit.value)
        else:
            unit_sql = self.process(unit, **kw)
        return "date_trunc(%s)" % ", ".join([unit_sql, *(self.process(c, **kw) for c in rest)])

    def render_literal_value(self, value: Any, type_: Any) -> str:
        if isinstance(value, str):
            return string_literal(value)
        return super().render_literal_value(value, type_)

    def limit_clause(self, select: Any, **kw: Any) -> str:
        # OFFSET stands alone when there is no LIMIT (SQLAlchemy's default writes LIMIT -1).
        text = ""
        if select._limit_clause is not None:
            text += "\n LIMIT " + self.process(select._limit_clause, **kw)
        if select._offset_clause is not None:
            text += (" " if text else "\n ") + "OFFSET " + self.process(select._offset_clause, **kw)
        return text


class TrinityLakeDDLCompiler(compiler.DDLCompiler):
    def get_column_specification(self, column: Any, **kw: Any) -> str:
        if column.server_default is not None or column.computed is not None:
            raise exc.CompileError(
                f"column {column.name!r}: TrinityLake columns have no server defaults "
                "or computed values"
            )
        if column.identity is not None:
            raise exc.CompileError(f"column {column.name!r}: TrinityLake has no identity columns")
        spec = (
            self.preparer.format_column(column)
            + " "
            + type_compiler(self.dialect).process(column.type, type_expression=column)
        )
        if not column.nullable:
            spec += " NOT NULL"
        if column.comment is not None:
            spec += " COMMENT " + string_literal(column.comment)
        return spec

    def create_table_constraints(self, table: Any, **kw: Any) -> str:
        # Only the primary key: foreign keys, unique and check constraints are skipped.
        pk = table.primary_key
        if pk is None or not pk.columns:
            return ""
        return self.process(pk)

    def visit_primary_key_constraint(self, constraint: Any, **kw: Any) -> str:
        # No constraint name: the format stores a primary key as a list of column ids.
        if not constraint.columns:
            return ""
        return "PRIMARY KEY (%s)" % ", ".join(self.preparer.quote(c.name) for c in constraint.columns)

    def post_create_table(self, table: Any) -> str:
        text = ""
        partitioned_by = partition_fields(table.dialect_options["trinitylake"].get("partitioned_by"))
        if partitioned_by:
            text += f" PARTITIONED BY ({partitioned_by})"
        if table.comment is not None:
            text += " COMMENT " + string_literal(table.comment)
        return text

    # -- comments ----------------------------------------------------------------

    def visit_set_table_comment(self, create: Any, **kw: Any) -> str:
        return "COMMENT ON TABLE %s IS %s" % (
            self.preparer.format_table(create.element),
            string_literal(create.element.comment),
        )

    def visit_drop_table_comment(self, drop: Any, **kw: Any) -> str:
        return "COMMENT ON TABLE %s IS NULL" % self.preparer.format_table(drop.element)

    def visit_set_column_comment(self, create: Any, **kw: Any) -> str:
        return "COMMENT ON COLUMN %s IS %s" % (
            self.preparer.format_column(create.element, use_table=True, use_schema=True),
            string_literal(create.element.comment),
        )

    def visit_drop_column_comment(self, drop: Any, **kw: Any) -> str:
        return "COMMENT ON COLUMN %s IS NULL" % self.preparer.format_column(
            drop.element, use_table=True, use_schema=True
        )

    # -- what the format does not have: skipped -------------------------------------

    def visit_create_index(self, create: Any, **kw: Any) -> str:
        return ""

    def visit_drop_index(self, drop: Any, **kw: Any) -> str:
        return ""

    def visit_add_constraint(self, create: Any, **kw: Any) -> str:
        if isinstance(create.element, _PrimaryKey):
            raise exc.CompileError("TrinityLake cannot add a primary key to an existing table")
        return ""

    def visit_drop_constraint(self, drop: Any, **kw: Any) -> str:
        if isinstance(drop.element, _PrimaryKey):
            raise exc.CompileError("TrinityLake cannot drop the primary key of a table")
        return ""

    def visit_create_sequence(self, create: Any, **kw: Any) -> str:
        raise exc.CompileError("TrinityLake has no sequences")


def partition_fields(value: Any) -> str:
    """The ``trinitylake_partitioned_by`` option as PARTITIONED BY's fields: a string as
    it is, a list or tuple of fields joined with ", " ("" for none)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return ", ".join(v.strip() for v in value)
    raise exc.ArgumentError(
        f"trinitylake_partitioned_by takes a string or a list of strings "
        f"(e.g. \"day(ts), region\"), not {value!r}"
    )


class TrinityLakeSQL(default.DefaultDialect):
    """How the dialect writes SQL: its name, the compilers above and the settings they
    read. :class:`.base.TrinityLakeDialect` is this plus connecting, executing and
    reflection; :func:`.types.type_text` compiles a type with this alone, so that the
    types never import the dialect that is built on them."""

    name = "trinitylake"

    statement_compiler = TrinityLakeCompiler
    ddl_compiler = TrinityLakeDDLCompiler
    type_compiler_cls = TrinityLakeTypeCompiler
    if not SQLALCHEMY_2:  # 1.4 reads the class from type_compiler (2.x: type_compiler_cls)
        type_compiler = TrinityLakeTypeCompiler
    preparer = TrinityLakeIdentifierPreparer

    supports_statement_cache = True
    default_paramstyle = "qmark"

    #: Dialect keywords: ``Table(..., trinitylake_partitioned_by=...)``.
    construct_arguments = [(_sa_schema.Table, {"partitioned_by": None})]

    # Names of namespaces and tables are limited to 100 bytes by default (SPEC 5).
    max_identifier_length = 100
    requires_name_normalize = False

    supports_comments = True
    inline_comments = True
    supports_alter = False  # no foreign keys: nothing is ever added by ALTER
    supports_native_boolean = True
    supports_native_decimal = True
    supports_native_enum = False
    supports_native_uuid = False
    supports_sequences = False
    supports_default_values = False
    supports_default_metavalue = False
    supports_empty_insert = False
    # insert(t).values([{...}, {...}]) is one INSERT of several rows (pandas'
    # method="multi"), which the driver writes as one append.
    supports_multivalues_insert = True
    insert_returning = update_returning = delete_returning = False
    insert_executemany_returning = False
    # An executemany of insert(t) goes to the driver's executemany as one
    # INSERT ... VALUES (?, ...), which it writes as one append: no batches of
    # "insertmanyvalues" (several appends).
    use_insertmanyvalues = False
    postfetch_lastrowid = False
    supports_simple_order_by_label = True
    supports_is_distinct_from = False
