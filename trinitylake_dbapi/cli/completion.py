"""Tab completion at the shell's prompt.

Rules:

CMP1. Tab completes shell command names at the start of a line and their arguments;
      elsewhere SQL keywords (in the case typed), namespaces, ``namespace.table`` and the
      columns of the tables the pending statement names.
CMP2. Names are read through the connection's catalog API at one version (the latest
      committed one, or the version of a time travel connection) and cached until that
      version changes. A completer never raises: a lakehouse that cannot be read
      completes nothing.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import trinitylake_dbapi
from trinitylake_dbapi import errors, system_tables
from trinitylake_dbapi.catalog import CatalogTransaction
from trinitylake_dbapi.cli.dotcommands import META_BY_NAME, meta_line
from trinitylake_dbapi.cli.output import FORMATTERS

__all__ = ["KEYWORDS", "COMPLETER_DELIMS", "Completions", "Completer"]


#: The words Tab completes besides names: the statements of the SQL reference, query
#: clauses and the type names of SPEC 5 with their aliases.
KEYWORDS: tuple[str, ...] = tuple(sorted(set("""
    ADD ALL ALTER AND ANY AS ASC BEGIN BETWEEN BY CASCADE CASE CAST COLUMN COLUMNS COMMENT
    COMMIT CONSTRAINT CREATE CROSS DATABASE DATABASES DBPROPERTIES DESC DESCRIBE DISTINCT DROP
    ELSE END EXCEPT EXISTS EXPIRE EXPORT EXTENDED EXTERNAL FALSE FOR FROM FULL GROUP HAVING IF
    IN INNER INTERSECT INTO IS JOIN KEY LEFT LIKE LIMIT LOCATION NAMESPACE NAMESPACES NOT NULL
    OF OFFSET ON OR ORDER OUTER PRIMARY PROPERTIES RENAME RESTRICT RIGHT ROLLBACK SCHEMA
    SCHEMAS SELECT SET SHOW SNAPSHOT SYSTEM_TIME SYSTEM_VERSION TABLE TABLES TBLPROPERTIES THEN
    TIMESTAMP TO TRUE UNION UNSET USE USING VERSION VERSIONS WHEN WHERE WITH
    BOOLEAN BOOL SMALLINT INT INTEGER BIGINT LONG INT2 INT4 INT8 DECIMAL NUMERIC REAL FLOAT
    FLOAT4 FLOAT8 DOUBLE CHAR CHARACTER VARCHAR STRING TEXT DATE TIME TIMETZ TIMESTAMPTZ FIXED
    BINARY VARBINARY VARBYTE STRUCT MAP LIST ARRAY ROW
""".split())))

#: Characters that end a word for completion: ``.`` is not one, so ``ns.ta`` is one word.
COMPLETER_DELIMS = " \t\n()[],;=<>+-*/|'!"

_QUALIFIED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Completions:
    """The names Tab offers, read through the connection's catalog API at one version
    (the latest, or the version of a time travel connection) and cached until that
    version changes. Lists are read lazily: namespaces once per version, a namespace's
    tables and a table's columns when first asked for."""

    def __init__(self, conn: trinitylake_dbapi.Connection) -> None:
        self.conn = conn
        self.version: int | None = None
        self._catalog: CatalogTransaction | None = None
        self._namespaces: list[str] | None = None
        self._tables: dict[str, list[str]] = {}
        self._columns: dict[tuple[str, str], list[str]] = {}

    def refresh(self) -> None:
        """Start a fresh cache when the lakehouse moved to another version."""
        version = self.conn.version if self.conn.read_only else self.conn.lakehouse.latest_version()
        if version == self.version:
            return
        self.close()
        self._catalog = self.conn.lakehouse.begin(version=version)
        self.version = version

    def close(self) -> None:
        catalog, self._catalog = self._catalog, None
        self.version, self._namespaces = None, None
        self._tables.clear()
        self._columns.clear()
        if catalog is not None:
            catalog.rollback()

    def namespaces(self) -> list[str]:
        """User namespaces, then the system ones (information_schema, system)."""
        if self._namespaces is None:
            assert self._catalog is not None
            system = sorted({ns for ns, _ in system_tables()})
            self._namespaces = self._catalog.list_namespaces() + system
        return self._namespaces

    def tables(self, namespace: str) -> list[str]:
        if namespace not in self._tables:
            assert self._catalog is not None
            system = [t for ns, t in system_tables() if ns == namespace]
            if system:
                self._tables[namespace] = system
            elif namespace in self.namespaces():
                self._tables[namespace] = [t for _, t in self._catalog.list_tables(namespace)]
            else:
                self._tables[namespace] = []
        return self._tables[namespace]

    def columns(self, namespace: str, table: str) -> list[str]:
        key = (namespace, table)
        if key not in self._columns:
            assert self._catalog is not None
            columns = system_tables().get(key)
            if columns is not None:
                self._columns[key] = list(columns)
            elif table in self.tables(namespace):
                info = self._catalog.describe_table(namespace, table)
                self._columns[key] = [c.name for c in info.columns]
            else:
                self._columns[key] = []
        return self._columns[key]

    def tables_named_in(self, text: str) -> list[tuple[str, str]]:
        """The tables ``text`` names, as ``ns.table`` or unqualified in the current
        namespace (``USE``; else ``default``), in the order they appear."""
        found: list[tuple[str, str]] = []
        for match in _QUALIFIED.finditer(text):
            ns, table = match.group(1), match.group(2)
            if ns in self.namespaces() and table in self.tables(ns) and (ns, table) not in found:
                found.append((ns, table))
        current = self.conn.current_namespace or "default"
        if current in self.namespaces():
            local = set(self.tables(current))
            for match in _WORD.finditer(text):
                key = (current, match.group(0))
                if match.group(0) in local and key not in found:
                    found.append(key)
        return found

    def candidates(self, word: str, context: str) -> list[str]:
        """Completions of ``word``, the word before the cursor; ``context`` is the whole
        pending statement (the tables it names give the columns)."""
        head, dot, tail = word.rpartition(".")
        if dot:
            names: list[str] = []
            if head in self.namespaces():
                names += [f"{head}.{t}" for t in self.tables(head)]
            for ns, table in self.tables_named_in(context):
                if head in (table, f"{ns}.{table}"):
                    names += [f"{head}.{c}" for c in self.columns(ns, table)]
            return sorted({n for n in names if n.startswith(word)})
        lowered = word.lower()
        names = list(self.namespaces())
        current = self.conn.current_namespace or "default"
        names += self.tables(current) if current in self.namespaces() else []
        for ns, table in self.tables_named_in(context):
            names += self.columns(ns, table)
        found = {n for n in names if n.lower().startswith(lowered)}
        keyword_case = str.lower if word and word == word.lower() else str.upper
        found |= {keyword_case(k) + " " for k in KEYWORDS if k.lower().startswith(lowered)}
        return sorted(found)


class Completer:
    """The readline completer function: shell command names at the start of a line,
    their arguments, else :meth:`Completions.candidates`. Never raises (readline would
    swallow it anyway): a lakehouse that cannot be read completes nothing."""

    def __init__(self, conn: trinitylake_dbapi.Connection, pending: Callable[[], str], readline: Any) -> None:
        #: The text of the statement being typed before this line (the shell's).
        self.pending = pending
        self.readline = readline
        self.completions = Completions(conn)
        self._matches: list[str] = []

    def __call__(self, text: str, state: int) -> str | None:
        if state == 0:
            try:
                self._matches = self._compute(text)
            except Exception:  # noqa: BLE001 - a completer must not break the prompt
                self._matches = []
        return self._matches[state] if state < len(self._matches) else None

    def _compute(self, text: str) -> list[str]:
        line = self.readline.get_line_buffer()
        before = line[: self.readline.get_begidx()]
        if not before.strip() and text.startswith((".", "\\")):
            return sorted(n + " " for n in META_BY_NAME if n.startswith(text))
        command = meta_line(before) if before.strip() else None
        if command is not None:
            name = command[0]
            if name == ".mode":
                return [m for m in FORMATTERS if m.startswith(text)]
            if name in (".timer", ".headers", ".header"):
                return [v for v in ("on", "off") if v.startswith(text)]
            if name not in (".tables", ".schema"):
                return []
        self.completions.refresh()
        return self.completions.candidates(text, self.pending() + "\n" + line)

    def close(self) -> None:
        try:
            self.completions.close()
        except errors.Error:
            pass

