"""The interactive ``trinitylake`` shell in a pseudo-terminal (pexpect): whole-statement
history, shell commands (``.tables``, ``.schema``, ``.mode``, ``.timer``, ``.help``,
``.quit``), unknown commands, quitting or Ctrl-D with a pending statement, and Tab
completion; plus the output formats on their own."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest
from hypothesis import given
from hypothesis import strategies as st

import warm_cli
from deadlines import HANG_S

import trinitylake_dbapi
from trinitylake_dbapi.cli import (
    CONTINUATION, META_COMMANDS, PROMPT, History, format_csv, format_json, format_markdown, main,
)  # fmt: skip
from trinitylake_dbapi.cli.history import escape_entry as _escape_entry
from trinitylake_dbapi.cli.history import unescape_entry as _unescape_entry

UP_ARROW = "\x1b[A"


class Session:
    """One ``trinitylake`` process on a pseudo-terminal. :meth:`line` types a line and
    returns what the shell printed before its next prompt (the echo left out)."""

    def __init__(self, tmp_path: Path, lake: str, *args: str, fresh: bool = False, **environ: str | None) -> None:
        self.history = tmp_path / "history"
        # No pager unless a test asks for one (the pager tests below).
        env = dict(os.environ, TRINITYLAKE_HISTORY=str(self.history), TERM="dumb",
                   PYTHONUNBUFFERED="1", TRINITYLAKE_PAGER="")  # fmt: skip
        env.pop("COLUMNS", None)
        env.pop("LINES", None)
        for name, value in environ.items():  # None: unset
            env.pop(name, None)
            if value is not None:
                env[name] = value
        # Forked from a warm process with the package imported (tests/warm_cli.py: the
        # terminal's descriptors passed on, signals forwarded; a fresh interpreter's imports
        # were most of these tests' CPU), unless ``fresh``: less needs the terminal as its
        # controlling one, which a forked command does not have.
        if fresh:
            argv = [sys.executable, "-m", "trinitylake_dbapi.cli", lake, *args]
        else:
            argv, env = [*warm_cli.command(), lake, *args], warm_cli.env(env, bash_function=False)
        self.child = pexpect.spawn(
            argv[0], argv[1:], env=env, encoding="utf-8", timeout=HANG_S, dimensions=(24, 250),
        )  # fmt: skip
        self.child.expect_exact(PROMPT)
        self.continued = False

    def _next_prompt(self) -> str:
        self.continued = self.child.expect_exact([PROMPT, CONTINUATION]) == 1
        return self.child.before.replace("\r\n", "\n")

    def line(self, text: str) -> str:
        self.child.sendline(text)
        echo_and_output = self._next_prompt()
        return echo_and_output.split("\n", 1)[1] if "\n" in echo_and_output else ""

    def keys(self, keys: str) -> str:
        """Type ``keys`` (arrows, Tab) then Enter; everything shown before the next prompt."""
        self.child.send(keys)
        self.child.send("\r")
        return self._next_prompt()

    def end(self, keys: str | None = None) -> tuple[str, int]:
        """Send ``keys`` + Enter (or Ctrl-D without keys); the output up to the process's
        end (the echo left out) and its exit status."""
        if keys is None:
            self.child.sendeof()
        else:
            self.child.sendline(keys)
        self.child.expect(pexpect.EOF)
        output = self.child.before.replace("\r\n", "\n")
        if keys is not None:
            echo, _, output = output.partition("\n")
            assert echo == keys
        self.child.close()
        return output, self.child.exitstatus

    def close(self) -> None:
        if self.child.isalive():
            self.child.close(force=True)


@pytest.fixture
def lake(tmp_path: Path) -> str:
    location = str(tmp_path / "lake")
    assert main([location, "--create", "-c",
                 "CREATE NAMESPACE sales; CREATE TABLE sales.orders (id BIGINT NOT NULL, "
                 "total DECIMAL(10,2), PRIMARY KEY (id)); CREATE NAMESPACE hr; "
                 "CREATE TABLE hr.people (name STRING)"]) == 0  # fmt: skip
    return location


@pytest.fixture
def session(tmp_path: Path, lake: str) -> Any:
    opened = Session(tmp_path, lake)
    yield opened
    opened.close()


def namespaces(lake: str) -> list[str]:
    with trinitylake_dbapi.connect(lake) as conn:
        cur = conn.cursor()
        cur.execute("SHOW NAMESPACES")
        return [row[0] for row in cur.fetchall()]


# ---------------------------------------------------------------------------
# History
# ---------------------------------------------------------------------------


def test_the_up_arrow_recalls_a_multi_line_statement_whole(tmp_path: Path, lake: str) -> None:
    session = Session(tmp_path, lake)
    try:
        assert session.line("SELECT") == "" and session.continued
        session.line("  'multi' AS word")
        assert session.line(";") == " word\n-------\n multi\n(1 row)\n"
        shown = session.keys(UP_ARROW)  # the whole statement, run again
        assert shown.endswith(" word\n-------\n multi\n(1 row)\n") and not session.continued
        output, status = session.end(".quit")
    finally:
        session.close()
    assert status == 0
    # One entry, its line breaks escaped; a new session recalls it whole.
    assert session.history.read_text().splitlines() == ["SELECT\\n  'multi' AS word\\n;", ".quit"]
    session = Session(tmp_path, lake)
    try:
        shown = session.keys(UP_ARROW + UP_ARROW)
        assert shown.endswith(" word\n-------\n multi\n(1 row)\n") and not session.continued
        session.end("\\q")
    finally:
        session.close()


@given(st.text(st.characters(codec=None, exclude_categories=())))
def test_history_entries_are_one_line_each(entry: str) -> None:
    line = _escape_entry(entry)
    assert "\n" not in line and "\r" not in line
    assert _unescape_entry(line) == entry


def test_history_entries_survive_the_file(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("TRINITYLAKE_HISTORY", str(tmp_path / "history"))
    entries = ["SELECT 1\n  AS x;", "\\q", "SELECT 'a\\nb\\'", "not UTF-8: \udcff\udcfe",
               "a\rreturn", "Grüße, 東京", "-- comment\nSHOW TABLES;"]  # fmt: skip
    history = History.open()
    assert history.readline is not None
    for entry in entries:
        history.add(entry)
    history.add(entries[-1])  # a repeat is one entry
    history.save()
    assert History.open().entries() == entries


def test_history_written_by_older_shells_reads_back_as_it_was() -> None:
    assert _unescape_entry("\\q") == "\\q"
    assert _unescape_entry("SELECT 'a\\b'") == "SELECT 'a\\b'"


# ---------------------------------------------------------------------------
# Shell commands
# ---------------------------------------------------------------------------


def test_tables_and_schema(session: Session, lake: str) -> None:
    everything = (
        " namespace | table_name\n-----------+------------\n hr        | people\n"
        " sales     | orders\n(2 rows)\n"
    )
    assert session.line(".tables") == everything
    assert session.line(".tables;") == everything
    assert session.line(".tables sales") == (
        " namespace | table_name\n-----------+------------\n sales     | orders\n(1 row)\n"
    )
    assert session.line(".tables %eo%") == (
        " namespace | table_name\n-----------+------------\n hr        | people\n(1 row)\n"
    )
    assert session.line(".tables hr.p%") == session.line(".tables %eo%")
    assert session.line(".tables nothing%").endswith("(0 rows)\n")
    with trinitylake_dbapi.connect(lake) as conn:
        cur = conn.cursor()
        cur.execute("SHOW CREATE TABLE sales.orders")
        orders = cur.fetchone()[0] + ";\n"
        cur.execute("SHOW CREATE TABLE hr.people")
        people = cur.fetchone()[0] + ";\n"
    assert orders.startswith("CREATE TABLE sales.orders (")
    assert session.line(".schema sales.orders") == orders
    assert session.line(".schema") == people + orders
    assert session.line(".schema nope") == "ERROR: .schema: no table matches 'nope'\n"
    assert session.line(".tables a b") == "ERROR: .tables takes one pattern at most\n"
    assert not session.continued


def test_mode_timer_help_and_exit(session: Session) -> None:
    assert session.line(".mode") == "current output mode: table\n"
    assert session.line(".mode xml") == (
        "ERROR: .mode: unknown mode 'xml'; the modes are table, csv, json, markdown\n"
    )
    assert session.line(".timer") == "timer is off\n"
    assert session.line(".timer on") == ""
    assert re.fullmatch(r" one\n-----\n   1\n\(1 row\)\nRun Time \(s\): real \d+\.\d{3}\n",
                        session.line("SELECT 1 AS one;"))  # fmt: skip
    assert session.line(".timer off") == ""
    assert session.line("SELECT 1 AS one;") == " one\n-----\n   1\n(1 row)\n"
    assert session.line(".timer maybe") == "ERROR: .timer: expected on or off, not 'maybe'\n"
    shown = session.line(".help")
    for command in META_COMMANDS:
        for name in command.names:
            assert name in shown
    assert session.line("\\?") == shown
    output, status = session.end(".exit")
    assert (output, status) == ("", 0)


def test_output_modes(session: Session) -> None:
    query = "SELECT 1 AS n, 'a,b|c' AS s, NULL AS z, TRUE AS t;"
    assert session.line(".mode csv") == ""
    assert session.line(query) == 'n,s,z,t\n1,"a,b|c",,true\n'
    session.line(".mode json")
    assert session.line(query) == '[{"n":1,"s":"a,b|c","z":null,"t":true}]\n'
    shown = session.line(
        "SELECT table_schema, table_name FROM information_schema.tables ORDER BY 1;"
    )
    assert json.loads(shown) == [{"table_schema": "hr", "table_name": "people"},
                                 {"table_schema": "sales", "table_name": "orders"}]  # fmt: skip
    assert shown.count("\n") == 2  # one row a line
    session.line(".mode markdown")
    assert session.line(query) == (
        "| n   | s      | z    | t    |\n"
        "|----:|--------|------|------|\n"
        "|   1 | a,b\\|c | NULL | true |\n"
    )
    assert session.line(".mode csv") == ""
    assert session.line(".tables sales") == "namespace,table_name\nsales,orders\n"
    assert session.line(".mode TABLE") == ""
    assert session.line("SELECT 1 AS one;") == " one\n-----\n   1\n(1 row)\n"


# ---------------------------------------------------------------------------
# Unknown commands, quitting, end of input
# ---------------------------------------------------------------------------


def test_unknown_shell_commands_are_errors_and_never_sql(session: Session) -> None:
    hint = ".help lists the shell commands (SQL statements end with ';')"
    assert session.line("\\dt") == f"ERROR: unknown shell command '\\dt'; {hint}\n"
    assert not session.continued
    assert session.line(".foo bar") == f"ERROR: unknown shell command '.foo'; {hint}\n"
    assert not session.continued
    # At a continuation prompt too; the pending statement stays pending, untouched.
    session.line("SELECT 'kept'")
    assert session.line("\\dt") == f"ERROR: unknown shell command '\\dt'; {hint}\n"
    assert session.continued
    assert session.line(".tables hr") == (
        " namespace | table_name\n-----------+------------\n hr        | people\n(1 row)\n"
    )
    assert session.continued
    assert session.line("AS word;") == " word\n------\n kept\n(1 row)\n"
    # Inside a string, a line starting with '.' is text.
    session.line("SELECT 'a")
    assert session.line(".tables") == "" and session.continued
    assert session.line("' AS word;") == " word\n---------\n a\n .tables\n \n(1 row)\n"


@pytest.mark.parametrize("command", ["\\q", ".quit"])
def test_quitting_at_a_continuation_prompt_says_the_statement_was_discarded(
    tmp_path: Path, lake: str, command: str
) -> None:
    session = Session(tmp_path, lake)
    try:
        session.line("CREATE NAMESPACE never")
        assert session.continued
        output, status = session.end(command)
    finally:
        session.close()
    assert status == 0
    assert output == (
        f"NOTICE: discarded the unfinished statement, not run ({command} came before its ';'); "
        "it is kept in the history: CREATE NAMESPACE never\n"
    )
    assert "never" not in namespaces(lake)
    assert session.history.read_text().splitlines()[-1] == "CREATE NAMESPACE never"


def test_end_of_input_with_a_pending_statement_says_it_was_discarded(
    session: Session, lake: str
) -> None:
    session.line("CREATE NAMESPACE")
    session.line("  never")
    output, status = session.end()
    assert status == 0
    assert output == (
        "\nNOTICE: discarded the unfinished statement, not run (the input ended before its "
        "';'); it is kept in the history: CREATE NAMESPACE never\n"
    )
    assert "never" not in namespaces(lake)
    assert session.history.read_text().splitlines()[-1] == "CREATE NAMESPACE\\n  never"


def test_scripts_run_shell_commands(lake: str, capsys: Any) -> None:
    """-c, -f and piped input run shell commands too (tests/cli/test_scripts.py has the rest)."""
    assert main([lake, "-c", ".tables sales"]) == 0
    assert capsys.readouterr().out == " namespace | table_name\n-----------+------------\n sales     | orders\n(1 row)\n"


# ---------------------------------------------------------------------------
# Completion
# ---------------------------------------------------------------------------


def test_tab_completes_namespaces_tables_columns_and_keywords(session: Session) -> None:
    shown = session.keys("SHOW TABLES IN sa\t;")  # namespace
    assert "SHOW TABLES IN sales;" in shown and " sales     | orders\n(1 row)" in shown
    shown = session.keys("DESCRIBE sales.or\t;")  # namespace.table
    assert "DESCRIBE sales.orders;" in shown and " total    | decimal(10,2)" in shown
    shown = session.keys("ALTER TABLE sales.orders RENAME COLUMN tot\t TO amount;")  # column
    assert "RENAME COLUMN total TO amount;" in shown and shown.endswith("OK\n")
    # A new version: the cache is refreshed, the new names complete.
    session.line("CREATE TABLE sales.returns (reason STRING);")
    shown = session.keys("COMMENT ON COLUMN sales.ret\t.rea\t IS 'why';")
    assert "COMMENT ON COLUMN sales.returns.reason IS 'why';" in shown and shown.endswith("OK\n")
    # Columns of a table named on an earlier line of the pending statement.
    session.line("SELECT column_name FROM information_schema.columns")
    shown = session.keys("WHERE table_na\t = 'returns';")
    assert "WHERE table_name = 'returns';" in shown and " reason\n(1 row)" in shown
    # Keywords, in the case they are typed.
    shown = session.keys("sele\t1 AS k;")
    assert "select 1 AS k;" in shown and " k\n---\n 1\n(1 row)" in shown
    shown = session.keys(".mo\tcs\t")
    assert ".mode csv" in shown
    assert session.line("SELECT 1 AS k;") == "k\n1\n"


# ---------------------------------------------------------------------------
# The formats on their own
# ---------------------------------------------------------------------------


ROWS = [
    (1, decimal.Decimal("12.50"), "two\nlines", None),
    (22, decimal.Decimal("-0.01"), "a|b,\"c\"", b"\x00\xff"),
]


def test_csv_format() -> None:
    assert format_csv(["n", "d", "s", "b"], ROWS) == (
        'n,d,s,b\n1,12.50,"two\nlines",\n22,-0.01,"a|b,""c""",0x00ff'
    )
    assert format_csv(["empty"], []) == "empty"


def test_json_format() -> None:
    text = format_json(["n", "d", "s", "b"], ROWS)
    assert json.loads(text) == [
        {"n": 1, "d": "12.50", "s": "two\nlines", "b": None},
        {"n": 22, "d": "-0.01", "s": 'a|b,"c"', "b": "0x00ff"},
    ]
    assert text.count("\n") == 1
    assert format_json(["x"], []) == "[]"
    moment = dt.datetime(2026, 1, 2, 3, 4, 5)
    text = format_json(["t", "f", "m", "l"], [(moment, float("nan"), {"k": 1}, [1.5])])
    assert json.loads(text) == [{"t": "2026-01-02T03:04:05", "f": "nan", "m": {"k": 1}, "l": [1.5]}]
    assert format_json(["a", "a"], [(1, 2)]) == '[{"a":1,"a":2}]'


def test_markdown_format() -> None:
    assert format_markdown(["n", "d", "s", "b"], ROWS) == (
        "| n   | d     | s            | b      |\n"
        "|----:|------:|--------------|--------|\n"
        "|   1 | 12.50 | two<br>lines | NULL   |\n"
        "|  22 | -0.01 | a\\|b,\"c\"     | 0x00ff |"
    )


# ---------------------------------------------------------------------------
# The pager (output.py OUT5)
# ---------------------------------------------------------------------------


def _forty_people(session: Session) -> None:
    values = ", ".join(f"('person-{i:02d}')" for i in range(1, 41))
    assert session.line(f"INSERT INTO hr.people VALUES {values};") == "OK, 40 rows\n"


TALL = "SELECT name FROM hr.people ORDER BY name;"


def test_a_result_taller_or_wider_than_the_terminal_goes_through_the_pager(tmp_path: Path, lake: str) -> None:
    # A pager that marks what it shows (sed), so what went through it can be told apart.
    session = Session(tmp_path, lake, TRINITYLAKE_PAGER="sed -e s/^/PAGED:/")
    try:
        _forty_people(session)
        shown = session.line(TALL)  # 43 lines on a 24-line terminal
        lines = shown.splitlines()
        assert len(lines) == 43 and all(line.startswith("PAGED:") for line in lines)
        assert lines[-2:] == ["PAGED: person-40", "PAGED:(40 rows)"]
        # Fits: printed at once, not paged.
        assert session.line("SELECT 1 AS one;") == " one\n-----\n   1\n(1 row)\n"
        # Wider than the 250 columns: paged.
        shown = session.line(f"SELECT '{'x' * 300}' AS wide;")
        assert shown.startswith("PAGED: wide") and "x" * 300 in shown
        # Results written to a file are never paged (nor cut).
        target = tmp_path / "all.txt"
        assert session.line(f".once {target}") == ""
        assert session.line(TALL) == ""
        assert target.read_text().splitlines()[-1] == "(40 rows)"
        assert "PAGED" not in target.read_text()
    finally:
        session.close()


@pytest.mark.slow  # a shell process (~2.8 s of CPU): the full run only
def test_without_a_pager_a_tall_result_is_cut_with_a_notice(tmp_path: Path, lake: str) -> None:
    # No pager variable, and no less or more on PATH.
    empty = tmp_path / "bin"
    empty.mkdir()
    session = Session(tmp_path, lake, TRINITYLAKE_PAGER=None, PAGER=None, PATH=str(empty))
    try:
        _forty_people(session)
        lines = session.line(TALL).splitlines()
        assert len(lines) == 23  # 22 lines of the result, then the notice
        assert lines[:3] == [" name", "-----------", " person-01"]
        assert lines[21] == " person-20"
        assert lines[22].startswith("NOTICE: 21 more lines not shown: no pager was found")
        # The empty pager variable means: no pager and no cut.
    finally:
        session.close()
    session = Session(tmp_path, lake, PAGER="", PATH=str(empty))
    try:
        assert session.line(TALL).splitlines()[-1] == "(40 rows)"
    finally:
        session.close()


@pytest.mark.skipif(not __import__("shutil").which("less"), reason="less is not installed")
def test_the_default_pager_is_less(tmp_path: Path, lake: str) -> None:
    session = Session(tmp_path, lake, fresh=True, TRINITYLAKE_PAGER=None, PAGER=None, TERM="vt100", LESS=None)
    try:
        _forty_people(session)
        session.child.sendline(TALL)
        session.child.expect_exact("person-01")
        session.child.expect_exact("person-20")  # the first screen, then less waits
        session.child.send("q")
        session.child.expect_exact(PROMPT)
        assert "person-40" not in session.child.before  # never shown: the user quit less
        assert session.line("SELECT 2 AS two;").endswith("(1 row)\n")  # the shell goes on
    finally:
        session.close()
