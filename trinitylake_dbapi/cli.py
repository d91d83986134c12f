"""``trinitylake``: an SQL shell on a lakehouse.

Usage::

    trinitylake LOCATION [--create] [-c SQL | -f FILE] [--at VERSION] [--no-autocommit]
                         [--storage-option KEY=VALUE ...]
    trinitylake verify LOCATION [--all-versions] [--data]   (see trinitylake_dbapi.verify)

With ``-c`` or ``-f`` (``-`` is standard input) the statements run in order and the
shell stops at the first error with exit status 1. Standard input that is not a terminal
is read as a script. Scripts are SQL only: shell commands are for the terminal.

Without them it reads from the terminal, like the sqlite3 and duckdb shells:

* A statement ends with ``;`` and may span lines. The history holds whole inputs: the
  lines that completed a statement are one entry, recalled whole with the up arrow. It
  is kept in ``~/.trinitylake_history`` (``TRINITYLAKE_HISTORY`` overrides), one entry a
  line, with ``\\`` written ``\\\\`` and a line break written ``\\n``.
* A line that starts with ``.`` or ``\\`` is a shell command (:data:`META_COMMANDS`),
  even at a continuation prompt (unless the pending text is inside a string or a
  comment); it never becomes part of a statement. An unknown one is an error naming it.
  ``.quit``, ``.exit`` and ``\\q`` at a continuation prompt quit, and say that the
  pending statement was not run; other commands leave it pending.
* End of input (Ctrl-D) with a pending statement does not run it: the shell says so and
  keeps it in the history. Ctrl-C drops the pending statement.
* Tab completes keywords, namespaces, ``namespace.table`` and the columns of the tables
  named in the pending statement, read through ``Connection.lakehouse`` (the committed
  state; cached until the lakehouse's latest version changes).

Statements autocommit unless ``--no-autocommit`` is given or a ``BEGIN`` is open.
Results print as aligned tables (``.mode`` chooses csv, json or markdown instead);
errors print as one line, ``ERROR: <message>``, on standard error, without a traceback.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import decimal
import gc
import io
import json
import math
import os
import re
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, NoReturn, Sequence, TextIO

import trinitylake_dbapi
from trinitylake_dbapi import errors
from trinitylake_dbapi.catalog import CatalogTransaction
from trinitylake_dbapi import like_to_regex, system_tables

__all__ = [
    "main", "run", "SUBCOMMANDS", "META_COMMANDS", "FORMATTERS", "format_table", "format_csv",
    "format_json", "format_markdown", "Shell",
]  # fmt: skip

PROMPT = "trinitylake> "
CONTINUATION = "         ...> "

#: Subcommands: name -> function(argv) -> exit status. ``trinitylake NAME ...`` runs one
#: (a location cannot be spelled like a subcommand name).
SUBCOMMANDS: dict[str, Callable[[Sequence[str]], int]] = {}


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        # Fixed width: isoformat drops a zero fraction, which would jitter the columns.
        millis_only = value.microsecond % 1000 == 0
        return value.isoformat(sep=" ", timespec="milliseconds" if millis_only else "microseconds")
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) or (
        type(value).__name__ == "Decimal"
    )


def format_table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """An aligned table with a header and a row count, psql style. Numbers align right;
    a cell with line breaks spans several lines."""
    rows = list(rows)
    cells = [[_cell(v).split("\n") for v in row] for row in rows]
    widths = [len(c) for c in columns]
    for row in cells:
        for i, lines in enumerate(row):
            widths[i] = max(widths[i], *(len(line) for line in lines))
    out = [" " + " | ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip()]
    out.append("-" + "-+-".join("-" * w for w in widths) + "-")
    for raw, row in zip(rows, cells):
        height = max((len(lines) for lines in row), default=1)
        for k in range(height):
            parts = []
            for i, lines in enumerate(row):
                text = lines[k] if k < len(lines) else ""
                parts.append(text.rjust(widths[i]) if _is_number(raw[i]) else text.ljust(widths[i]))
            out.append(" " + " | ".join(parts).rstrip())
    n = len(rows)
    out.append(f"({n} row{'' if n == 1 else 's'})")
    return "\n".join(out)


def format_csv(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """RFC 4180 CSV (the stdlib's ``csv``): a header line, then one line per row; NULL is
    an empty field, other values are written as the table mode shows them."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(["" if v is None else _cell(v) for v in row] for row in rows)
    return buffer.getvalue().rstrip("\n")


def _json_value(value: Any) -> Any:
    """A JSON-ready value: numbers stay numbers except decimals (written as strings, so
    no digit is lost) and non-finite floats; times are ISO 8601; bytes are 0x-hex."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return str(value)


def format_json(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A JSON array with one object per row (one row a line), as duckdb's ``.mode json``;
    the keys are the column names in order (a repeated name is kept, not merged)."""

    def text(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    keys = [text(c) for c in columns]
    objects = [",".join(f"{k}:{text(_json_value(v))}" for k, v in zip(keys, row)) for row in rows]
    return "[" + ",\n".join("{" + o + "}" for o in objects) + "]"


def _markdown_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", "<br>")


def format_markdown(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table: ``|`` escaped, line breaks as ``<br>``, numeric
    columns right-aligned."""
    rows = list(rows)
    header = [_markdown_cell(c) for c in columns]
    cells = [[_markdown_cell(_cell(v)) for v in row] for row in rows]
    numeric = [
        any(_is_number(row[i]) for row in rows)
        and all(row[i] is None or _is_number(row[i]) for row in rows)
        for i in range(len(columns))
    ]
    widths = [max([3, len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(header)]

    def line(parts: Sequence[str]) -> str:
        return "| " + " | ".join(parts) + " |"

    out = [line([h.ljust(w) for h, w in zip(header, widths)])]
    rules = ["-" * (w + 1) + ":" if num else "-" * (w + 2) for w, num in zip(widths, numeric)]
    out.append("|" + "|".join(rules) + "|")
    for row in cells:
        out.append(line([c.rjust(w) if n else c.ljust(w) for c, w, n in zip(row, widths, numeric)]))
    return "\n".join(out)


#: ``.mode`` name -> formatter(column names, rows) -> text.
FORMATTERS: dict[str, Callable[[Sequence[str], Iterable[Sequence[Any]]], str]] = {
    "table": format_table,
    "csv": format_csv,
    "json": format_json,
    "markdown": format_markdown,
}


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"ERROR: {text}" if text else f"ERROR: {type(error).__name__}"


def _abridged(sql: str, limit: int = 60) -> str:
    """A statement on one line, cut to ``limit`` characters, for a notice."""
    text = " ".join(sql.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------
# Shell commands
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MetaCommand:
    """One shell command: its names (the first is shown), its arguments, what it does."""

    names: tuple[str, ...]
    usage: str
    summary: str
    run: Callable[["Shell", list[str]], bool]  # False: quit the shell


def _meta_help(shell: "Shell", args: list[str]) -> bool:
    print(HELP, file=shell.out)
    return True


def _meta_quit(shell: "Shell", args: list[str]) -> bool:
    return False


def _meta_tables(shell: "Shell", args: list[str]) -> bool:
    if len(args) > 1:
        raise errors.ProgrammingError(".tables takes one pattern at most")
    names = shell.matching_tables(args[0] if args else None)
    print(shell.formatter(["namespace", "table_name"], names), file=shell.out)
    return True


def _meta_schema(shell: "Shell", args: list[str]) -> bool:
    if len(args) > 1:
        raise errors.ProgrammingError(".schema takes one table or pattern at most")
    names = shell.matching_tables(args[0] if args else None)
    if args and not names:
        raise errors.ProgrammingError(f".schema: no table matches '{args[0]}'")
    for namespace, table in names:
        quote = trinitylake_dbapi.quote_identifier  # the SQL dialect (sqlglot): when first needed
        shell.cur.execute(f"SHOW CREATE TABLE {quote(namespace)}.{quote(table)}")
        for (statement,) in shell.cur.fetchall():
            print(statement + ";", file=shell.out)
    return True


def _meta_mode(shell: "Shell", args: list[str]) -> bool:
    if not args:
        print(f"current output mode: {shell.mode}", file=shell.out)
        return True
    if len(args) > 1 or args[0].lower() not in FORMATTERS:
        raise errors.ProgrammingError(
            f".mode: unknown mode '{' '.join(args)}'; the modes are {', '.join(FORMATTERS)}"
        )
    shell.mode = args[0].lower()
    return True


def _meta_timer(shell: "Shell", args: list[str]) -> bool:
    if not args:
        print(f"timer is {'on' if shell.timer else 'off'}", file=shell.out)
        return True
    if len(args) > 1 or args[0].lower() not in ("on", "off"):
        raise errors.ProgrammingError(f".timer: expected on or off, not '{' '.join(args)}'")
    shell.timer = args[0].lower() == "on"
    return True


#: The shell commands, in the order ``.help`` lists them.
META_COMMANDS: tuple[MetaCommand, ...] = (
    MetaCommand((".tables",), "[PATTERN]",
                "list the tables whose namespace, name or ns.name is LIKE PATTERN (% and _)",
                _meta_tables),
    MetaCommand((".schema",), "[TABLE|PATTERN]",
                "print SHOW CREATE TABLE of every table (or the matching ones)",
                _meta_schema),
    MetaCommand((".mode",), "[table|csv|json|markdown]", "how results print (default: table)",
                _meta_mode),
    MetaCommand((".timer",), "[on|off]", "print each statement's run time", _meta_timer),
    MetaCommand((".help", "\\?", "\\h"), "", "this help", _meta_help),
    MetaCommand((".quit", ".exit", "\\q"), "", "quit, as Ctrl-D does", _meta_quit),
)  # fmt: skip
_META_BY_NAME = {name: command for command in META_COMMANDS for name in command.names}

HELP = (
    """\
Statements end with ';' and may span several lines. Examples:
  SHOW NAMESPACES;   SHOW TABLES [IN ns];   DESCRIBE ns.t;   SHOW CREATE TABLE ns.t;
  CREATE NAMESPACE ns;   CREATE TABLE ns.t (id BIGINT NOT NULL, name STRING, PRIMARY KEY (id));
  SHOW VERSIONS;   SHOW TABLES FOR SYSTEM_VERSION AS OF 3;   ROLLBACK TO VERSION 3;
  SELECT * FROM information_schema.columns WHERE table_schema = 'ns';
  BEGIN; ...; COMMIT;   (otherwise every statement commits on its own)
Shell commands (at the start of a line):
"""
    + "\n".join(
        f"  {(' '.join([c.names[0], c.usage]) if c.usage else c.names[0]):34} {c.summary}"
        + (f" (also {', '.join(c.names[1:])})" if len(c.names) > 1 else "")
        for c in META_COMMANDS
    )
    + "\nTab completes keywords, namespaces, tables and the columns of the tables named."
)


def _meta_line(line: str) -> tuple[str, list[str]] | None:
    """(command name, arguments) when ``line`` is a shell command (it starts with ``.`` or
    ``\\``), else None. A trailing ``;`` is tolerated (``.tables;``), a habit from SQL."""
    words = line.strip().rstrip(";").split()
    if not words or not words[0].startswith((".", "\\")):
        return None
    return words[0], words[1:]


#: What only the SQL tokenizer can tell apart from a statement-ending ``;``: a quote of
#: a string or a name, a comment, a dollar-quoted string.
_NEEDS_TOKENIZER = re.compile(r"""['"`$#]|--|/\*""")


def split_script(text: str) -> tuple[list[str], str]:
    """``trinitylake_dbapi.split_statements(text)``: the complete statements and the
    unfinished rest. A text of ASCII without quotes or comments, in which every ``;``
    ends a statement, is split here without the tokenizer, which imports sqlglot: a
    ``-c "DESCRIBE t"`` process never needs it (sql.plain)."""
    if text.isascii() and _NEEDS_TOKENIZER.search(text) is None:
        *done, rest = text.split(";")
        return [part.strip() for part in done if part.strip()], rest.strip()
    return trinitylake_dbapi.split_statements(text)


def _inside_literal(pending: str) -> bool:
    """True when ``pending`` ends inside a string, a quoted name or a block comment: a
    ``;`` appended to it is not a statement end."""
    statements, rest = split_script(pending + "\n;")
    return bool(rest)


# ---------------------------------------------------------------------------
# History and completion
# ---------------------------------------------------------------------------


def _history_path() -> str:
    return os.environ.get("TRINITYLAKE_HISTORY") or os.path.join(
        os.path.expanduser("~"), ".trinitylake_history"
    )


HISTORY_LENGTH = 1000


def _escape_entry(entry: str) -> str:
    return entry.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


_ESCAPES = re.compile(r"\\(.)", re.DOTALL)


def _unescape_entry(line: str) -> str:
    """The inverse of :func:`_escape_entry`; an unknown escape (``\\q`` written by an older
    shell that stored lines raw) stays as it is."""
    return _ESCAPES.sub(
        lambda m: {"\\": "\\", "n": "\n", "r": "\r"}.get(m.group(1), m.group(0)), line
    )


class History:
    """Whole-input history on top of readline: ``input()`` adds nothing by itself
    (auto-history off); the shell adds one entry per complete input, which may span
    lines. Persisted by :meth:`save` in a file of one escaped entry a line (readline's
    own file format splits entries at line breaks)."""

    def __init__(self, readline: Any | None, path: str) -> None:
        self.readline = readline
        self.path = path

    @classmethod
    def open(cls) -> "History":
        """Load the history file into readline (nothing happens without readline)."""
        try:
            import readline
        except ImportError:  # pragma: no cover - platforms without readline
            return cls(None, _history_path())
        history = cls(readline, _history_path())
        readline.set_auto_history(False)
        readline.clear_history()
        try:
            with open(history.path, encoding="utf-8", errors="surrogateescape") as f:
                entries = [_unescape_entry(line.rstrip("\n")) for line in f if line.strip()]
        except OSError:
            entries = []
        for entry in entries[-HISTORY_LENGTH:]:
            readline.add_history(entry)
        return history

    def entries(self) -> list[str]:
        if self.readline is None:
            return []
        n = self.readline.get_current_history_length()
        return [self.readline.get_history_item(i) or "" for i in range(1, n + 1)]

    def add(self, entry: str) -> None:
        """Add one entry (a whole statement, line breaks included); a repeat of the last
        entry is not added twice."""
        entry = entry.strip("\n")
        if self.readline is None or not entry.strip():
            return
        n = self.readline.get_current_history_length()
        if n and self.readline.get_history_item(n) == entry:
            return
        self.readline.add_history(entry)

    def save(self) -> None:
        """Write the last :data:`HISTORY_LENGTH` entries (best effort: a read-only home
        directory only loses the history). Bytes typed that are not UTF-8 (readline
        gives them as lone surrogates) are written back as they were typed."""
        if self.readline is None:
            return
        text = "".join(_escape_entry(e) + "\n" for e in self.entries()[-HISTORY_LENGTH:])
        temporary = f"{self.path}.tmp{os.getpid()}"
        try:
            with open(temporary, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text)
            os.replace(temporary, self.path)
        except OSError:
            try:
                os.unlink(temporary)
            except OSError:
                pass


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

    def __init__(self, shell: "Shell", readline: Any) -> None:
        self.shell = shell
        self.readline = readline
        self.completions = Completions(shell.conn)
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
            return sorted(n + " " for n in _META_BY_NAME if n.startswith(text))
        command = _meta_line(before) if before.strip() else None
        if command is not None:
            name = command[0]
            if name == ".mode":
                return [m for m in FORMATTERS if m.startswith(text)]
            if name == ".timer":
                return [v for v in ("on", "off") if v.startswith(text)]
            if name not in (".tables", ".schema"):
                return []
        self.completions.refresh()
        return self.completions.candidates(text, self.shell.pending + "\n" + line)

    def close(self) -> None:
        try:
            self.completions.close()
        except errors.Error:
            pass


# ---------------------------------------------------------------------------
# Running statements
# ---------------------------------------------------------------------------


class Shell:
    """Runs statements on one connection and prints their outcome; :meth:`script` for
    ``-c``/``-f``/piped input, :meth:`interactive` for a terminal."""

    def __init__(self, conn: trinitylake_dbapi.Connection, out: TextIO, err: TextIO) -> None:
        self.conn = conn
        self.cur = conn.cursor()
        self.out = out
        self.err = err
        #: How results print: a key of FORMATTERS (``.mode``).
        self.mode = "table"
        #: Print each statement's run time (``.timer``).
        self.timer = False
        #: The text of the statement being typed (lines without their ``;`` yet).
        self.pending = ""

    @property
    def formatter(self) -> Callable[[Sequence[str], Iterable[Sequence[Any]]], str]:
        return FORMATTERS[self.mode]

    def run(self, sql: str) -> bool:
        """Run one statement and print its outcome; False after an error."""
        started = time.perf_counter()
        try:
            self.cur.execute(sql)
            if self.cur.description is None:
                count = self.cur.rowcount
                print("OK" if count < 0 else f"OK, {count} row{'' if count == 1 else 's'}", file=self.out)
            else:
                names = [d[0] for d in self.cur.description]
                print(self.formatter(names, self.cur.fetchall()), file=self.out)
            return True
        except BrokenPipeError:
            raise  # the reader went away (`| head`): main() exits quietly
        except errors.Error as e:
            print(_one_line(e), file=self.err)
        except Exception as e:  # noqa: BLE001 - the shell never shows a traceback
            print(_one_line(errors.InternalError(f"{type(e).__name__}: {e}")), file=self.err)
        finally:
            if self.timer:
                print(f"Run Time (s): real {time.perf_counter() - started:.3f}", file=self.out)
        return False

    def script(self, text: str) -> bool:
        """Run every statement of a script; stop at the first error."""
        statements, rest = split_script(text)
        if rest:
            statements.append(rest)
        for sql in statements:
            if not self.run(sql):
                return False
        return True

    def matching_tables(self, pattern: str | None) -> list[tuple[str, str]]:
        """(namespace, table) of every table, in name order, whose namespace, name or
        ``namespace.name`` matches the LIKE ``pattern`` (all tables without one). Read
        with SQL on the shell's connection, so it sees what its statements see."""
        self.cur.execute(
            "SELECT table_schema, table_name FROM information_schema.tables ORDER BY 1, 2"
        )
        rows = [(ns, table) for ns, table in self.cur.fetchall()]
        if pattern is None:
            return rows
        regex = like_to_regex(pattern)
        return [
            (ns, table) for ns, table in rows
            if regex.fullmatch(ns) or regex.fullmatch(table) or regex.fullmatch(f"{ns}.{table}")
        ]  # fmt: skip

    def meta(self, name: str, args: list[str]) -> bool:
        """Run one shell command; False when it quits the shell. An unknown command or a
        failing one prints one ``ERROR:`` line."""
        command = _META_BY_NAME.get(name)
        if command is None:
            print(
                f"ERROR: unknown shell command '{name}'; .help lists the shell commands "
                "(SQL statements end with ';')",
                file=self.err,
            )
            return True
        try:
            return command.run(self, args)
        except BrokenPipeError:
            raise
        except errors.Error as e:
            print(_one_line(e), file=self.err)
        except Exception as e:  # noqa: BLE001 - the shell never shows a traceback
            print(_one_line(errors.InternalError(f"{type(e).__name__}: {e}")), file=self.err)
        return True

    def interactive(self, stdin: TextIO) -> None:
        """Read statements and shell commands from the terminal until ``.quit`` or end
        of input (see the module docstring for the rules)."""
        history = History.open()
        completer = None
        if history.readline is not None:
            completer = Completer(self, history.readline)
            history.readline.set_completer(completer)
            history.readline.set_completer_delims(COMPLETER_DELIMS)
            history.readline.parse_and_bind("tab: complete")
        print(
            f"trinitylake {trinitylake_dbapi.__version__} on {self.conn.location}"
            + (f" (read-only, version {self.conn.version})" if self.conn.read_only else "")
            + ". End statements with ';', .help for help, .quit to quit.",
            file=self.out,
        )
        lines: list[str] = []  # the pending input, as typed
        try:
            while True:
                self.pending = "\n".join(lines)
                try:
                    line = input(CONTINUATION if lines else PROMPT)
                except EOFError:
                    print(file=self.out)
                    if lines:
                        self._not_run(history, "the input ended before its ';'")
                    break
                except KeyboardInterrupt:
                    print("^C", file=self.out)
                    lines = []
                    continue
                command = _meta_line(line)
                if command is not None and not (lines and _inside_literal(self.pending)):
                    history.add(line.strip())
                    if not self.meta(*command):
                        if lines:
                            self._not_run(history, f"{command[0]} came before its ';'")
                        break
                    continue
                if not lines and line.strip().lower() in ("quit", "exit", "quit;", "exit;"):
                    break
                if not lines and line.strip().lower() in ("help", "help;"):
                    print(HELP, file=self.out)
                    continue
                lines.append(line)
                statements, rest = split_script("\n".join(lines) + "\n")
                if statements:
                    history.add("\n".join(lines))
                    lines = [rest] if rest else []
                elif not rest:
                    lines = []  # blank lines or comments only
                for sql in statements:
                    try:
                        self.run(sql)
                    except KeyboardInterrupt:
                        print("^C", file=self.out)
        finally:
            self.pending = ""
            if completer is not None:
                completer.close()
            history.save()

    def _not_run(self, history: History, why: str) -> None:
        """Say that the pending statement was not run, and keep it in the history."""
        history.add(self.pending)
        print(
            f"NOTICE: discarded the unfinished statement, not run ({why}); it is kept "
            f"in the history: {_abridged(self.pending)}",
            file=self.err,
        )


# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------


def _storage_option(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def _version(text: str) -> int | str:
    return int(text) if text.isdigit() else text


def _shell_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="trinitylake",
        description="SQL shell on a TrinityLake lakehouse. Subcommands: "
        + (", ".join(sorted(SUBCOMMANDS)) or "none yet") + ".",
        epilog="Locations: /path, file:///path, s3://bucket/lake, memory://name.",
    )
    p.add_argument("location", help="the lakehouse location")
    p.add_argument("--create", action="store_true", help="create the lakehouse if missing")
    source = p.add_mutually_exclusive_group()
    source.add_argument("-c", "--command", metavar="SQL", help="run these statements and exit")
    source.add_argument("-f", "--file", metavar="FILE", help="run a script ('-' = stdin) and exit")
    p.add_argument("--at", metavar="VERSION", type=_version,
                   help="open read-only at a version number or exported snapshot name")  # fmt: skip
    p.add_argument("--no-autocommit", action="store_true",
                   help="run statements in a transaction; COMMIT publishes it")  # fmt: skip
    p.add_argument("--storage-option", metavar="KEY=VALUE", type=_storage_option,
                   action="append", default=[], help="fsspec storage option (repeatable)")  # fmt: skip
    return p


def _shell(argv: Sequence[str]) -> int:
    args = _shell_parser().parse_args(list(argv))
    out, err = sys.stdout, sys.stderr
    try:
        conn = trinitylake_dbapi.connect(
            args.location,
            create=args.create,
            storage_options=dict(args.storage_option) or None,
            autocommit=not args.no_autocommit,
            version=args.at,
        )
    except errors.Error as e:
        hint = " (use --create)" if isinstance(e, errors.ObjectNotFoundError) and not args.create else ""
        print(_one_line(e) + hint, file=err)
        return 1
    status = 0
    try:
        shell = Shell(conn, out, err)
        if args.command is not None:
            status = 0 if shell.script(args.command) else 1
        elif args.file is not None:
            try:
                if args.file == "-":
                    text = sys.stdin.read()
                else:
                    with open(args.file, encoding="utf-8") as f:
                        text = f.read()
            except OSError as e:
                print(f"ERROR: cannot read {args.file!r}: {e.strerror or e}", file=err)
                return 1
            status = 0 if shell.script(text) else 1
        elif sys.stdin.isatty():
            shell.interactive(sys.stdin)
        else:
            status = 0 if shell.script(sys.stdin.read()) else 1
    finally:
        if conn.in_transaction:
            print("NOTICE: the open transaction was rolled back", file=err)
        try:
            conn.close()
        except errors.Error as e:
            print(_one_line(e), file=err)
            status = 1
    return status


def _verify(argv: Sequence[str]) -> int:
    """``trinitylake verify LOCATION [--all-versions] [--data] [--storage-option KEY=VALUE ...]``.

    Prints every problem, then a summary line. Exit status: 0 when the lakehouse is
    valid (warnings such as orphan files allowed), 1 on a violation, 2 when it could
    not be verified (a bad location, a storage failure).
    """
    from trinitylake_dbapi.verify import verify

    parser = argparse.ArgumentParser(
        prog="trinitylake verify",
        description="Check every SPEC rule on every file of a lakehouse and list orphan "
        "files. Exit status 0: valid; 1: violations; 2: could not verify.",
    )
    parser.add_argument("location", help="the lakehouse location")
    parser.add_argument("--all-versions", action="store_true",
                        help="parse every version's definitions and check K3 per version")
    parser.add_argument("--data", action="store_true",
                        help="also check the tables' Iceberg metadata and that every file it "
                        "reaches (manifests, data files) exists")
    parser.add_argument("--storage-option", metavar="KEY=VALUE", type=_storage_option,
                        action="append", default=[], help="fsspec storage option (repeatable)")
    args = parser.parse_args(list(argv))
    try:
        report = verify(args.location, all_versions=args.all_versions, data=args.data,
                        storage_options=dict(args.storage_option) or None)
    except errors.Error as e:
        print(_one_line(e), file=sys.stderr)
        return 2
    print(report.text())
    return 0 if report.ok else 1


SUBCOMMANDS["verify"] = _verify


def main(argv: Sequence[str] | None = None) -> int:
    """The ``trinitylake`` command's work; returns the exit status (tests call it in
    their own process; the command itself runs :func:`run`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        return SUBCOMMANDS[argv[0]](argv[1:])
    try:
        return _shell(argv)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Standard output was closed early (`trinitylake lake -c ... | head`): stop
        # quietly, and keep Python from complaining when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def run() -> NoReturn:
    """Entry point of the ``trinitylake`` command: :func:`main` in a process of its own,
    which then exits without collecting its garbage.

    When main returns, the connection is closed and the output written; what remains
    are the objects of the libraries the command imported (PyIceberg's models, sqlglot's,
    DuckDB's), which the interpreter's shutdown walks with the cyclic garbage collector
    before exiting: 0.1-0.3 s of a one-statement command (docs/performance.md). Frozen,
    they are out of the collector's reach, and their memory goes back with the process.
    ``atexit`` handlers (fsspec's sessions, for one) still run."""
    status = main()
    gc.freeze()
    sys.exit(status)


if __name__ == "__main__":
    run()
