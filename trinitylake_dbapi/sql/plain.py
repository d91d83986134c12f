"""The catalog's everyday statements, recognised and run without sqlglot.

``DESCRIBE [TABLE] t``, ``SHOW TABLES [IN ns] [LIKE 'pattern']`` and
``DROP TABLE [IF EXISTS] t`` are what a catalog client sends most. In their plainest
spelling :func:`recognise` reads them with one regular expression into a
:class:`PlainStatement`, which runs straight on the catalog: no tokenizer, no parser, no
syntax tree. A warm DESCRIBE is then mostly the catalog's own work, and a new process
that runs only such statements (a BI tool's metadata probe, ``trinitylake LAKE -c
"DESCRIBE t"``) never imports sqlglot, which is about 0.1 s of its start.

Rules:

  PS1 Same meaning: when :func:`recognise` returns a statement, the parser reads the same
     text as the same statement (kind, names, LIKE pattern, IF EXISTS) without
     parameter markers. tests/sql/test_plain.py checks it on generated statements.
  PS2 Only the plainest spelling: one line, names that are unquoted ASCII words and
     none of the words the tokenizer or the parser gives a meaning to (sql.words), a
     pattern without quotes or backslashes, no comment, no parameter marker, no time
     travel. Anything else returns None and goes to the parser, which also gives every
     syntax error.
  PS3 One implementation: this module registers the handlers of these three kinds in
     sql.registry, and the parser's nodes of them are prepared into the same
     :class:`PlainStatement` (sql.execute), so rows, errors and read-only refusals
     cannot differ between the two paths.
  PS4 No sqlglot: neither this module nor anything it imports imports sqlglot (checked
     in a new process by tests/sql/test_plain.py).
  PS5 (issue 36) ``DESCRIBE [TABLE] EXTENDED t`` (the parser's) shows the column rows,
     then, for a partitioned Iceberg table, ``# Partitioning`` and a ``Part <n>`` row per
     field of its current spec (the field as PARTITIONED BY writes it), as Spark lays
     it out. Plain DESCRIBE reads no Iceberg metadata and shows the columns only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from trinitylake_dbapi.catalog import CatalogTransaction
from trinitylake_dbapi.errors import InvalidNameError
from trinitylake_dbapi.format.types import ColumnSpec, type_to_sql
from trinitylake_dbapi.sql.like import like_filter, like_literal
from trinitylake_dbapi.sql.registry import CATALOG, register
from trinitylake_dbapi.sql.session import (
    EMPTY_RESULT,
    Result,
    Session,
    reading,
    refuse_write,
    resolve_table,
    rows_result,
)
from trinitylake_dbapi.sql.words import PLAIN_REFUSED_WORDS

__all__ = [
    "PlainStatement",
    "DESCRIBE",
    "SHOW_TABLES",
    "DROP_TABLE",
    "recognise",
    "describe_table",
    "show_tables",
    "drop_table",
    "DESCRIBE_COLUMNS",
    "SHOW_TABLES_COLUMNS",
]

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_END = r" *(?:;[ \t\r\n]*)?\Z"
_DESCRIBE = re.compile(rf" *DESCRIBE +(?:TABLE +)?({_NAME})(?:\.({_NAME}))?{_END}", re.IGNORECASE | re.ASCII)
_SHOW_TABLES = re.compile(rf" *SHOW +TABLES(?: +IN +({_NAME}))?(?: +LIKE +'([^'\\\r\n]*)')?{_END}", re.IGNORECASE | re.ASCII)
_DROP_TABLE = re.compile(rf" *DROP +TABLE +(IF +EXISTS +)?({_NAME})(?:\.({_NAME}))?{_END}", re.IGNORECASE | re.ASCII)

#: The kinds of PlainStatement (each also the statement's title in errors).
DESCRIBE = "DESCRIBE TABLE"
SHOW_TABLES = "SHOW TABLES"
DROP_TABLE = "DROP TABLE"


@dataclass(frozen=True)
class PlainStatement:
    """One statement of this module's kinds, recognised here or prepared from the
    parser's node (PS3). ``kind``: DESCRIBE, SHOW_TABLES or DROP_TABLE (its kind in
    sql.registry). ``namespace``: as written (None when the name is unqualified, or
    SHOW TABLES names none); ``name``: the table (None for SHOW TABLES); ``pattern``:
    SHOW TABLES' LIKE pattern without its quotes; ``if_exists``: DROP TABLE IF EXISTS;
    ``version``: the parser's time travel clause of a DESCRIBE or SHOW TABLES (never
    recognised here, PS2)."""

    kind: str
    namespace: str | None
    name: str | None = None
    pattern: str | None = None
    if_exists: bool = False
    version: Any = None
    #: DESCRIBE EXTENDED: the column rows, then the table's partitioning (PS5).
    extended: bool = False


@register(DESCRIBE, CATALOG)
def _run_describe(s: PlainStatement, session: Session, parameter_rows: Any = None) -> Result:
    assert s.name is not None
    with reading(session, s.version) as catalog:
        result = describe_table(session, catalog, *resolve_table(session, s.namespace, s.name))
        if s.extended:
            result = _with_partitioning(session, catalog, result, *resolve_table(session, s.namespace, s.name))
        return result


def _with_partitioning(session: Session, catalog: CatalogTransaction, result: Result, namespace: str, name: str) -> Result:
    """PS5: DESCRIBE EXTENDED of a partitioned Iceberg table: after the columns, a row
    ``# Partitioning`` and one per partition field, ``Part <n>`` and the field as
    PARTITIONED BY writes it (Spark's layout); the columns alone otherwise."""
    from trinitylake_dbapi.format.paths import METADATA_LOCATION

    info = catalog.describe_table(namespace, name)
    if info.table_format.upper() != "ICEBERG" or METADATA_LOCATION not in info.format_properties:
        return result
    from trinitylake_dbapi.iceberg.partitioning import field_sql

    def quote_identifier(name: str) -> str:  # PS4: not the dialect's (sqlglot); names as SQL reads them
        return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else "`" + name.replace("`", "``") + "`"

    _, metadata, _ = session.table_states().state(catalog, namespace, name)
    fields = [f for f in metadata.spec().fields if str(f.transform) != "void"]
    if not fields:
        return result
    rows = list(result.rows) + [("# Partitioning", "", None, None)]
    rows += [(f"Part {i}", field_sql(metadata.schema(), f, quote_identifier), None, None) for i, f in enumerate(fields)]
    return rows_result(DESCRIBE_COLUMNS, rows)


@register(SHOW_TABLES, CATALOG)
def _run_show_tables(s: PlainStatement, session: Session, parameter_rows: Any = None) -> Result:
    namespace = s.namespace if s.namespace is not None else session.current_namespace
    with reading(session, s.version) as catalog:
        return show_tables(catalog, namespace, s.pattern)


@register(DROP_TABLE, CATALOG, writes=True)
def _run_drop_table(s: PlainStatement, session: Session, parameter_rows: Any = None) -> Result:
    assert s.name is not None
    return drop_table(session, *resolve_table(session, s.namespace, s.name), if_exists=s.if_exists)


def _allowed(*names: str | None) -> bool:
    return all(n is None or n.upper() not in PLAIN_REFUSED_WORDS for n in names)


def recognise(sql: str) -> PlainStatement | None:
    """The statement ``sql`` is, if it is one of this module's in its plainest spelling
    (PS2); else None, and the parser decides."""
    head = sql[:12].lstrip(" ")[:4].upper()
    if head == "DESC":
        match = _DESCRIBE.match(sql)
        if match is None:
            return None
        one, two = match.groups()
        if not _allowed(one, two):
            return None
        return PlainStatement(DESCRIBE, None, one) if two is None else PlainStatement(DESCRIBE, one, two)
    if head == "SHOW":
        match = _SHOW_TABLES.match(sql)
        if match is None or not _allowed(match.group(1)):
            return None
        return PlainStatement(SHOW_TABLES, match.group(1), pattern=match.group(2))
    if head == "DROP":
        match = _DROP_TABLE.match(sql)
        if match is None:
            return None
        exists, one, two = match.groups()
        if not _allowed(one, two):
            return None
        if two is None:
            return PlainStatement(DROP_TABLE, None, one, if_exists=exists is not None)
        return PlainStatement(DROP_TABLE, one, two, if_exists=exists is not None)
    return None


# ---------------------------------------------------------------------------
# Running them (PS3): the parser's handlers call these too
# ---------------------------------------------------------------------------

DESCRIBE_COLUMNS = (
    ("col_name", "varchar"), ("data_type", "varchar"), ("nullable", "boolean"),
    ("comment", "varchar"),
)  # fmt: skip
SHOW_TABLES_COLUMNS = (("namespace", "varchar"), ("table_name", "varchar"))


def describe_table(session: Session, catalog: CatalogTransaction, namespace: str, name: str) -> Result:
    """DESCRIBE TABLE: a row per column (name, SQL type, nullable, comment) of the table
    as ``catalog`` sees it (the transaction, or a time travel's read-only catalog)."""
    info = catalog.describe_table(namespace, name)
    # The rows depend on the table's definition file alone (immutable): rendered once
    # per file, kept by the catalog's cache of definition files.
    rows = session.lakehouse.definitions.derived(
        info.definition_path, "DESCRIBE rows", lambda: _describe_rows(info.columns)
    )
    return rows_result(DESCRIBE_COLUMNS, list(rows))


def _describe_rows(columns: Sequence[ColumnSpec]) -> tuple[tuple, ...]:
    return tuple((c.name, type_to_sql(c.type), c.nullable, c.comment) for c in columns)


def show_tables(catalog: CatalogTransaction, namespace: str | None, pattern: str | None) -> Result:
    """SHOW TABLES: (namespace, table) of the tables of ``namespace`` (every namespace's
    for None) whose name matches the LIKE ``pattern`` (every table for None)."""
    name = None if pattern is None or namespace is None else like_literal(pattern)
    tables = None if name is None or namespace is None else _table_named(catalog, namespace, name)
    if tables is None:
        tables = catalog.list_tables(namespace, like_filter(pattern))
    return rows_result(SHOW_TABLES_COLUMNS, tables)


def _table_named(catalog: CatalogTransaction, namespace: str, name: str) -> list[tuple[str, str]] | None:
    """SHOW TABLES IN ns LIKE 'name' without wildcards (the usual existence check), as
    one key lookup instead of listing the namespace: the rows and errors of the listing,
    or None to let the listing answer (an invalid name, which the lookup refuses)."""
    try:
        if catalog.table_exists(namespace, name):
            return [(namespace, name)]
    except InvalidNameError:
        return None
    catalog.describe_namespace(namespace)  # the listing's error when it does not exist
    return []


def drop_table(session: Session, namespace: str, name: str, *, if_exists: bool) -> Result:
    """DROP TABLE [IF EXISTS] in the session's transaction; refused on a read-only one."""
    refuse_write(session, DROP_TABLE)
    session.transaction().drop_table(namespace, name, if_exists=if_exists)
    return EMPTY_RESULT
