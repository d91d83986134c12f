"""The shell's own commands: a line that starts with ``.`` or ``\\`` (``.mode csv``).

Rules:

DOT1. A command is one line, up to its first ``;`` if any: its name and words separated
      by blanks (what follows the ``;`` is SQL: ``.mode csv; SELECT 1``). It is recognised at the terminal and
      in scripts (``-c``, ``-f``, standard input) alike, where a statement may start
      (see the shell's SH2).
DOT2. A command that does not exist, or is given wrong arguments, is one ``ERROR:`` line
      naming it; it never becomes part of a statement.
DOT3. A command writes its result (``.tables``, ``.schema``) where a statement's result
      goes (``.output``, ``.once``, the pager); anything else it says goes to the
      terminal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, TextIO

import trinitylake_dbapi
from trinitylake_dbapi import errors
from trinitylake_dbapi.cli.output import FORMATTERS, Formatter

__all__ = ["MetaCommand", "META_COMMANDS", "META_BY_NAME", "HELP", "meta_line", "ShellState"]


class ShellState(Protocol):
    """What the shell commands use of the shell (cli.shell's Shell is one): its cursor,
    its settings and where its output goes. A protocol, so this module needs nothing of
    the shell module, which imports it."""

    cur: Any
    out: TextIO
    mode: str
    headers: bool
    timer: bool

    @property
    def formatter(self) -> Formatter: ...

    def show(self, text: str) -> None: ...

    def send_output_to(self, path: str | None) -> None: ...

    def send_next_output_to(self, path: str) -> None: ...

    def matching_tables(self, pattern: str | None) -> list[tuple[str, str]]: ...


@dataclass(frozen=True)
class MetaCommand:
    """One shell command: its names (the first is shown), its arguments, what it does."""

    names: tuple[str, ...]
    usage: str
    summary: str
    run: Callable[[ShellState, list[str]], bool]  # False: quit the shell
    #: It prints a result (DOT3): a pending ``.once`` is used, and ends, with it.
    prints_result: bool = False


def _on_off(name: str, args: list[str]) -> bool:
    if len(args) != 1 or args[0].lower() not in ("on", "off"):
        raise errors.ProgrammingError(f"{name}: expected on or off, not '{' '.join(args)}'")
    return args[0].lower() == "on"


def _meta_help(shell: ShellState, args: list[str]) -> bool:
    print(HELP, file=shell.out)
    return True


def _meta_quit(shell: ShellState, args: list[str]) -> bool:
    return False


def _meta_tables(shell: ShellState, args: list[str]) -> bool:
    if len(args) > 1:
        raise errors.ProgrammingError(".tables takes one pattern at most")
    names = shell.matching_tables(args[0] if args else None)
    shell.show(shell.formatter(["namespace", "table_name"], names, headers=shell.headers))
    return True


def _meta_schema(shell: ShellState, args: list[str]) -> bool:
    if len(args) > 1:
        raise errors.ProgrammingError(".schema takes one table or pattern at most")
    names = shell.matching_tables(args[0] if args else None)
    if args and not names:
        raise errors.ProgrammingError(f".schema: no table matches '{args[0]}'")
    statements = []
    for namespace, table in names:
        quote = trinitylake_dbapi.quote_identifier  # the SQL dialect (sqlglot): when first needed
        shell.cur.execute(f"SHOW CREATE TABLE {quote(namespace)}.{quote(table)}")
        statements.extend(statement + ";" for (statement,) in shell.cur.fetchall())
    if statements:
        shell.show("\n".join(statements))
    return True


def _meta_mode(shell: ShellState, args: list[str]) -> bool:
    if not args:
        print(f"current output mode: {shell.mode}", file=shell.out)
        return True
    if len(args) > 1 or args[0].lower() not in FORMATTERS:
        raise errors.ProgrammingError(
            f".mode: unknown mode '{' '.join(args)}'; the modes are {', '.join(FORMATTERS)}"
        )
    shell.mode = args[0].lower()
    return True


def _toggle(shell: ShellState, setting: str, verb: str, args: list[str]) -> bool:
    """``.headers`` / ``.timer``: without an argument, say whether the setting is on
    ("headers are on"); with ``on`` or ``off``, set it."""
    if not args:
        print(f"{setting} {verb} {'on' if getattr(shell, setting) else 'off'}", file=shell.out)
    else:
        setattr(shell, setting, _on_off(f".{setting}", args))
    return True


def _meta_headers(shell: ShellState, args: list[str]) -> bool:
    return _toggle(shell, "headers", "are", args)


def _one_file(name: str, args: list[str]) -> str:
    if len(args) != 1:
        raise errors.ProgrammingError(f"{name} takes one file name, not {len(args)} words")
    return args[0]


def _meta_output(shell: ShellState, args: list[str]) -> bool:
    shell.send_output_to(_one_file(".output", args) if args else None)
    return True


def _meta_once(shell: ShellState, args: list[str]) -> bool:
    shell.send_next_output_to(_one_file(".once", args))
    return True


def _meta_timer(shell: ShellState, args: list[str]) -> bool:
    return _toggle(shell, "timer", "is", args)


#: The shell commands, in the order ``.help`` lists them.
META_COMMANDS: tuple[MetaCommand, ...] = (
    MetaCommand((".tables",), "[PATTERN]",
                "list the tables whose namespace, name or ns.name is LIKE PATTERN (% and _)",
                _meta_tables, prints_result=True),
    MetaCommand((".schema",), "[TABLE|PATTERN]",
                "print SHOW CREATE TABLE of every table (or the matching ones)",
                _meta_schema, prints_result=True),
    MetaCommand((".mode",), "[table|csv|json|markdown]", "how results print (default: table)",
                _meta_mode),
    MetaCommand((".headers", ".header"), "[on|off]",
                "column names above table and csv results (default: on)", _meta_headers),
    MetaCommand((".output",), "[FILE]", "write results to FILE (replaced); without FILE, "
                "to the terminal again", _meta_output),
    MetaCommand((".once",), "FILE", "write the next result only to FILE (replaced)", _meta_once),
    MetaCommand((".timer",), "[on|off]", "print each statement's run time", _meta_timer),
    MetaCommand((".help", "\\?", "\\h"), "", "this help", _meta_help),
    MetaCommand((".quit", ".exit", "\\q"), "", "quit, as Ctrl-D does", _meta_quit),
)  # fmt: skip
META_BY_NAME = {name: command for command in META_COMMANDS for name in command.names}

HELP = (
    """\
Statements end with ';' and may span several lines. Examples:
  CREATE NAMESPACE ns;   CREATE TABLE ns.t (id BIGINT NOT NULL, name STRING, PRIMARY KEY (id));
  INSERT INTO ns.t VALUES (1, 'a');   SELECT * FROM ns.t;   UPDATE ...;   DELETE ...;
  SHOW NAMESPACES;   SHOW TABLES [IN ns];   DESCRIBE ns.t;   SHOW CREATE TABLE ns.t;
  SHOW VERSIONS;   SELECT * FROM ns.t FOR SYSTEM_VERSION AS OF 3;   ROLLBACK TO VERSION 3;
  BEGIN; ...; COMMIT;   (otherwise every statement commits on its own)
Shell commands (at the start of a line; in scripts too):
"""
    + "\n".join(
        f"  {(' '.join([c.names[0], c.usage]) if c.usage else c.names[0]):34} {c.summary}"
        + (f" (also {', '.join(c.names[1:])})" if len(c.names) > 1 else "")
        for c in META_COMMANDS
    )
    + "\nTab completes keywords, namespaces, tables and the columns of the tables named."
)


def meta_line(line: str) -> tuple[str, list[str]] | None:
    """(command name, arguments) when ``line`` is a shell command (DOT1), else None."""
    words = line.strip().rstrip(";").split()
    if not words or not words[0].startswith((".", "\\")):
        return None
    return words[0], words[1:]
