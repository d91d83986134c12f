"""The shell's loop: statements and shell commands, from a script or the terminal.

Rules:

SH1. A statement's outcome is printed once: its result (in the ``.mode``, with or
     without ``.headers``) or ``OK`` / ``OK, n rows``; an error is one ``ERROR:`` line
     on standard error, never a traceback. A script (``-c``, ``-f``, standard input)
     stops at its first error, statement or shell command.
SH2. A line that starts with ``.`` or ``\\`` is a shell command (dotcommands.py) in a
     script as at the terminal, even in the middle of a statement, unless the pending
     text is inside a string, a quoted name or a comment; the pending statement stays
     pending. The command ends at the line's end or its first ``;``; what follows that
     ``;`` is SQL (``-c ".mode csv; SELECT 1"``). A script without such a line is split
     as it always was (split_script): a ``-c "DESCRIBE t"`` process never imports sqlglot.
SH3. Results go to the ``.once`` file (for the next statement or result-printing command
     only), else the ``.output`` file, else the terminal, through the pager at an
     interactive prompt (output.py OUT5). A file is replaced when opened and flushed
     after each result; the shell closes its files when it ends.
SH4. At the terminal the history holds whole inputs (history.py); end of input or
     ``.quit`` with a pending statement does not run it, says so and keeps it in the
     history; Ctrl-C drops it.
"""

from __future__ import annotations

import os
import re
import time
from typing import Iterable, TextIO

import trinitylake_dbapi
from trinitylake_dbapi import errors, like_to_regex
from trinitylake_dbapi.cli.completion import COMPLETER_DELIMS, Completer
from trinitylake_dbapi.cli.dotcommands import HELP, META_BY_NAME, meta_line
from trinitylake_dbapi.cli.history import History
from trinitylake_dbapi.cli.output import FORMATTERS, Formatter, Pager

__all__ = ["Shell", "PROMPT", "CONTINUATION", "split_script", "error_line"]

PROMPT = "trinitylake> "
CONTINUATION = "         ...> "

#: What only the SQL tokenizer can tell apart from a statement-ending ``;``: a quote of
#: a string or a name, a comment, a dollar-quoted string.
_NEEDS_TOKENIZER = re.compile(r"""['"`$#]|--|/\*""")
#: A line that may be a shell command (SH2).
_COMMAND_LINE = re.compile(r"^[ \t]*[.\\]", re.MULTILINE)


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


def error_line(error: BaseException) -> str:
    """An error as the one line the shell prints (SH1)."""
    text = " ".join(str(error).split())
    return f"ERROR: {text}" if text else f"ERROR: {type(error).__name__}"


def _abridged(sql: str, limit: int = 60) -> str:
    """A statement on one line, cut to ``limit`` characters, for a notice."""
    text = " ".join(sql.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _open_for_output(command: str, path: str) -> TextIO:
    try:
        return open(os.path.expanduser(path), "w", encoding="utf-8")
    except OSError as e:
        raise errors.OperationalError(f"{command}: cannot write {path!r}: {e.strerror or e}") from None


class Shell:
    """Runs statements on one connection and prints their outcome; :meth:`script` for
    ``-c``/``-f``/piped input, :meth:`interactive` for a terminal."""

    def __init__(self, conn: trinitylake_dbapi.Connection, out: TextIO, err: TextIO) -> None:
        self.conn = conn
        self.cur = conn.cursor()
        self.out = out
        self.err = err
        #: How results print: a key of FORMATTERS (``.mode``, ``--csv``, ...).
        self.mode = "table"
        #: Column names above table and CSV results (``.headers``, ``--no-headers``).
        self.headers = True
        #: Print each statement's run time (``.timer``).
        self.timer = False
        #: The text of the statement being typed (lines without their ``;`` yet).
        self.pending = ""
        #: Where results go (SH3): the ``.output`` file, the ``.once`` file, the pager.
        self.output: TextIO | None = None
        self.once: TextIO | None = None
        self.pager: Pager | None = None

    @property
    def formatter(self) -> Formatter:
        return FORMATTERS[self.mode]

    # -- where results go (SH3) ------------------------------------------------

    def show(self, text: str) -> None:
        """Print a result where results go now (SH3)."""
        target = self.once or self.output
        if target is not None:
            print(text, file=target, flush=True)
        elif self.pager is not None:
            self.pager.show(text)
        else:
            print(text, file=self.out)

    def send_output_to(self, path: str | None) -> None:
        """``.output [FILE]``: results to FILE from now on (None: the terminal again)."""
        opened = _open_for_output(".output", path) if path is not None else None
        if self.output is not None:
            self.output.close()
        self.output = opened

    def send_next_output_to(self, path: str) -> None:
        """``.once FILE``: the next result only to FILE."""
        opened = _open_for_output(".once", path)
        self.end_once()
        self.once = opened

    def end_once(self) -> None:
        if self.once is not None:
            self.once.close()
            self.once = None

    def close(self) -> None:
        """Close the output files (SH3)."""
        self.end_once()
        self.send_output_to(None)

    # -- statements and commands -------------------------------------------------

    def run(self, sql: str) -> bool:
        """Run one statement and print its outcome; False after an error."""
        started = time.perf_counter()
        try:
            self.cur.execute(sql)
            if self.cur.description is None:
                count = self.cur.rowcount
                self.show("OK" if count < 0 else f"OK, {count} row{'' if count == 1 else 's'}")
            else:
                names = [d[0] for d in self.cur.description]
                self.show(self.formatter(names, self.cur.fetchall(), headers=self.headers))
            return True
        except BrokenPipeError:
            raise  # the reader went away (`| head`): main() exits quietly
        except errors.Error as e:
            print(error_line(e), file=self.err)
        except Exception as e:  # noqa: BLE001 - the shell never shows a traceback
            print(error_line(errors.InternalError(f"{type(e).__name__}: {e}")), file=self.err)
        finally:
            self.end_once()
            if self.timer:
                print(f"Run Time (s): real {time.perf_counter() - started:.3f}", file=self.out)
        return False

    def command(self, name: str, args: list[str]) -> str:
        """Run one shell command: "ok", "quit", or "error" after printing one ``ERROR:``
        line (an unknown command, wrong arguments, a failure)."""
        command = META_BY_NAME.get(name)
        if command is None:
            print(
                f"ERROR: unknown shell command '{name}'; .help lists the shell commands "
                "(SQL statements end with ';')",
                file=self.err,
            )
            return "error"
        try:
            return "ok" if command.run(self, args) else "quit"
        except BrokenPipeError:
            raise
        except errors.Error as e:
            print(error_line(e), file=self.err)
        except Exception as e:  # noqa: BLE001 - the shell never shows a traceback
            print(error_line(errors.InternalError(f"{type(e).__name__}: {e}")), file=self.err)
        finally:
            if command.prints_result:
                self.end_once()
        return "error"

    def _statements(self, statements: Iterable[str]) -> bool:
        return all(self.run(sql) for sql in statements)

    def script(self, text: str) -> bool:
        """Run a script's statements and shell commands in order (SH2); stop at the first
        error. ``.quit`` ends it successfully."""
        if _COMMAND_LINE.search(text) is None:
            statements, rest = split_script(text)
            return self._statements([*statements, rest] if rest else statements)
        chunk: list[str] = []
        for line in text.split("\n"):
            command = meta_line(line)
            if command is not None:
                statements, rest = split_script("\n".join(chunk) + "\n") if chunk else ([], "")
                if not (rest and _inside_literal(rest)):
                    if not self._statements(statements):
                        return False
                    chunk = [rest] if rest else []
                    head, _, line = line.partition(";")
                    outcome = self.command(*(meta_line(head) or command))
                    if outcome != "ok":
                        return outcome == "quit"
                    if not line.strip():
                        continue
            chunk.append(line)
        statements, rest = split_script("\n".join(chunk))
        return self._statements([*statements, rest] if rest else statements)

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

    # -- the terminal (SH4) ------------------------------------------------------

    def interactive(self, stdin: TextIO) -> None:
        """Read statements and shell commands from the terminal until ``.quit`` or end
        of input (SH2, SH4)."""
        history = History.open()
        completer = None
        if history.readline is not None:
            completer = Completer(self.conn, lambda: self.pending, history.readline)
            history.readline.set_completer(completer)
            history.readline.set_completer_delims(COMPLETER_DELIMS)
            history.readline.parse_and_bind("tab: complete")
        if self.out.isatty():
            self.pager = Pager.for_terminal(self.out, self.err)
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
                command = meta_line(line)
                if command is not None and not (lines and _inside_literal(self.pending)):
                    history.add(line.strip())
                    head, _, line = line.partition(";")
                    if self.command(*(meta_line(head) or command)) == "quit":
                        if lines:
                            self._not_run(history, f"{command[0]} came before its ';'")
                        break
                    if not line.strip():
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
