"""The ``trinitylake`` shell: -c, -f, scripts on stdin, and interactive use (pexpect)."""

from __future__ import annotations

import io
import os
import signal
import sys
from typing import Any

import pexpect
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deadlines import HANG_S

from trinitylake_dbapi.cli import SUBCOMMANDS, format_table, main, split_script


def run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_command_runs_statements_and_prints_tables(tmp_path: Any, capsys: Any) -> None:
    lake = str(tmp_path / "lake")
    status, out, err = run(
        capsys, lake, "--create", "-c",
        "CREATE NAMESPACE sales; CREATE TABLE sales.orders (id BIGINT NOT NULL, total "
        "DECIMAL(10,2) COMMENT 'with; semicolon', PRIMARY KEY (id)); SHOW TABLES; DESCRIBE sales.orders",
    )  # fmt: skip
    assert (status, err) == (0, "")
    assert out == (
        "OK\nOK\n"
        " namespace | table_name\n"
        "-----------+------------\n"
        " sales     | orders\n"
        "(1 row)\n"
        " col_name | data_type     | nullable | comment\n"
        "----------+---------------+----------+-----------------\n"
        " id       | int8          | false    | NULL\n"
        " total    | decimal(10,2) | true     | with; semicolon\n"
        "(2 rows)\n"
    )
    # Committed: a new process sees it.
    status, out, _ = run(capsys, lake, "-c", "SELECT count(*) AS n FROM information_schema.tables")
    assert status == 0 and " 1\n(1 row)" in out


def test_errors_are_one_line_and_stop_with_status_1(tmp_path: Any, capsys: Any) -> None:
    lake = str(tmp_path / "lake")
    status, out, err = run(capsys, lake, "--create", "-c",
                           "CREATE NAMESPACE a; CREATE TABLE a.t (x INT) garbage; CREATE NAMESPACE b")  # fmt: skip
    assert status == 1
    assert out == "OK\n"
    assert err.count("\n") == 1 and err.startswith("ERROR: syntax error at line 1, column 26")
    assert "Traceback" not in err
    status, out, _ = run(capsys, lake, "-c", "SHOW NAMESPACES")
    assert out.splitlines()[2:] == [" a", " default", "(2 rows)"]  # b never ran
    status, out, err = run(capsys, lake, "-c", "INSERT INTO a.t VALUES (1)")
    assert status == 1 and err.startswith("ERROR: table 'a'.'t' does not exist (at line 1, column 13)")


def test_missing_lakehouse_and_bad_arguments(tmp_path: Any, capsys: Any) -> None:
    status, out, err = run(capsys, str(tmp_path / "none"), "-c", "SHOW TABLES")
    assert status == 1 and "no lakehouse at" in err and "--create" in err
    assert not (tmp_path / "none").exists()
    with pytest.raises(SystemExit) as info:
        main(["lake", "-c", "x", "-f", "y"])
    assert info.value.code == 2
    assert "usage: trinitylake" in capsys.readouterr().err
    status, out, err = run(capsys, str(tmp_path / "l"), "--create", "-f", str(tmp_path / "missing.sql"))
    assert status == 1 and err.startswith("ERROR: cannot read")


def test_file_and_stdin_scripts(tmp_path: Any, capsys: Any, monkeypatch: Any) -> None:
    lake = str(tmp_path / "lake")
    script = tmp_path / "setup.sql"
    script.write_text(
        "-- a comment; with a semicolon\n"
        "CREATE NAMESPACE hr\n  COMMENT 'people';\n"
        "CREATE TABLE hr.people (\n  name STRING NOT NULL\n);\n"
        "SHOW TABLES IN hr  -- no final semicolon\n"
    )
    status, out, err = run(capsys, lake, "--create", "-f", str(script))
    assert (status, err) == (0, "")
    assert out.startswith("OK\nOK\n namespace | table_name")
    monkeypatch.setattr(sys, "stdin", io.StringIO("DESCRIBE NAMESPACE hr;\n"))
    status, out, err = run(capsys, lake, "-f", "-")
    assert status == 0 and " comment   | people" in out
    monkeypatch.setattr(sys, "stdin", io.StringIO("SHOW VERSIONS; DROP TABLE hr.nope;"))
    status, out, err = run(capsys, lake)  # stdin that is not a terminal is a script
    assert status == 1 and "(3 rows)" in out and "ERROR: table 'hr'.'nope' does not exist" in err


def test_no_autocommit_and_read_only_versions(tmp_path: Any, capsys: Any) -> None:
    lake = str(tmp_path / "lake")
    status, _, err = run(capsys, lake, "--create", "--no-autocommit", "-c", "CREATE NAMESPACE gone")
    assert status == 0 and "rolled back" in err
    run(capsys, lake, "--no-autocommit", "-c", "CREATE NAMESPACE kept; COMMIT")
    status, out, err = run(capsys, lake, "--at", "0", "-c", "SHOW NAMESPACES; CREATE NAMESPACE x")
    assert status == 1 and " default\n(1 row)" in out and "read-only" in err
    status, out, _ = run(capsys, lake, "-c", "SHOW NAMESPACES")
    assert " kept" in out and "gone" not in out


def test_storage_options_and_subcommand_room(capsys: Any) -> None:
    status, out, err = run(capsys, "memory://cli-opts/lake", "--create",
                           "--storage-option", "skip_instance_cache=true", "-c", "SELECT 1 AS one")  # fmt: skip
    assert status == 0 and " one\n-----\n   1\n(1 row)\n" == out
    SUBCOMMANDS["echo-test"] = lambda argv: len(argv)
    try:
        assert main(["echo-test", "a", "b"]) == 2
    finally:
        del SUBCOMMANDS["echo-test"]


def test_format_table() -> None:
    assert format_table(["a", "bb"], [(1, None), (22, "x\ny")]) == (
        " a  | bb\n"
        "----+------\n"
        "  1 | NULL\n"
        " 22 | x\n"
        "    | y\n"
        "(2 rows)"
    )
    assert format_table(["empty"], []) == " empty\n-------\n(0 rows)"


def _ctrl_c_interrupts() -> None:
    """In the shell's process, before it starts: Ctrl-C interrupts, as at a terminal. A
    test run started in the background (``scripts/test &``) has SIGINT ignored, and a
    program keeps an ignored SIGINT ignored, as it should."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_interactive_shell(tmp_path: Any) -> None:
    env = dict(os.environ, TRINITYLAKE_HISTORY=str(tmp_path / "history"), TERM="dumb",
               PYTHONUNBUFFERED="1")  # fmt: skip
    lake = str(tmp_path / "lake")
    child = pexpect.spawn(sys.executable, ["-m", "trinitylake_dbapi.cli", lake, "--create"],
                          env=env, encoding="utf-8", timeout=HANG_S,
                          preexec_fn=_ctrl_c_interrupts)  # fmt: skip
    try:
        child.expect_exact(".quit to quit.")
        child.expect_exact("trinitylake> ")
        child.sendline("CREATE NAMESPACE")  # a statement over several lines
        child.expect_exact("...> ")
        child.sendline("  sales COMMENT 'multi")
        child.expect_exact("...> ")
        child.sendline("line';")
        child.expect_exact("OK")
        child.expect_exact("trinitylake> ")
        child.sendline("SHOW NAMESPACES; SELECT 'two' AS n;")
        child.expect(r" default\r\n sales\r\n\(2 rows\)")
        child.expect(r" two\s*\r\n\(1 row\)")
        child.expect_exact("trinitylake> ")
        child.sendline("SHOW TABLES IN nope;")
        child.expect_exact("ERROR: namespace 'nope' does not exist")
        child.expect_exact("trinitylake> ")
        child.sendline("SELEC 1;")
        child.expect_exact("ERROR: ")
        child.expect_exact("trinitylake> ")
        assert "Traceback" not in child.before
        child.sendline("\\?")
        child.expect_exact("Shell commands")
        child.expect_exact("trinitylake> ")
        child.sendline("SHOW TABLES IN sales")
        child.expect_exact("...> ")
        child.sendintr()  # Ctrl-C drops the unfinished statement
        child.expect_exact("trinitylake> ")
        child.sendline("DESCRIBE NAMESPACE sales;")
        child.expect(r"comment\s+\| multi")
        child.expect_exact("trinitylake> ")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    history = (tmp_path / "history").read_text()
    assert "DESCRIBE NAMESPACE sales;" in history
    # History comes back in a new session: arrow up recalls the last statement.
    child = pexpect.spawn(sys.executable, ["-m", "trinitylake_dbapi.cli", lake],
                          env=env, encoding="utf-8", timeout=HANG_S)  # fmt: skip
    try:
        child.expect_exact("trinitylake> ")
        child.send("\x1b[A")
        child.send("\r")
        child.expect(r"comment\s+\| multi")
        child.expect_exact("trinitylake> ")
        child.sendline("\\q")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


def test_a_closed_pipe_ends_the_shell_quietly(tmp_path: Any) -> None:
    import subprocess

    lake = str(tmp_path / "lake")
    statements = ";".join(f"CREATE NAMESPACE n{i}" for i in range(200))
    assert main([lake, "--create", "-c", statements]) == 0
    trinitylake = os.path.join(os.path.dirname(sys.executable), "trinitylake")
    run = subprocess.run(
        f"{trinitylake} {lake} -c 'SHOW VERSIONS' | head -2",
        shell=True, capture_output=True, text=True, timeout=HANG_S,
    )
    assert run.stdout.count("\n") == 2
    assert run.stderr == ""


def test_timestamps_print_with_a_fixed_width() -> None:
    import datetime as dt

    from trinitylake_dbapi.cli.output import cell_text as _cell

    whole = dt.datetime(2026, 1, 2, 3, 4, 5)
    millis = dt.datetime(2026, 1, 2, 3, 4, 5, 120_000)
    assert _cell(whole) == "2026-01-02 03:04:05.000"
    assert len(_cell(whole)) == len(_cell(millis))


def test_the_command_exits_with_its_status_all_its_output_and_a_frozen_heap(tmp_path: Any) -> None:
    """``trinitylake`` as a process (cli.run): the exit status of main, every line of
    output written before exit, and the heap frozen when the interpreter shuts down (so
    its shutdown does not walk the imported libraries' objects)."""
    import subprocess

    lake = str(tmp_path / "lake")
    probe = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen:', gc.get_freeze_count() > 0, file=sys.stderr))\n"
        "from trinitylake_dbapi.cli import run\n"
        "sys.argv = ['trinitylake', *sys.argv[1:]]\n"
        "run()\n"
    )
    statements = "CREATE NAMESPACE sales; CREATE TABLE sales.t (id INT); SELECT count(*) AS n FROM sales.t"
    ok = subprocess.run([sys.executable, "-c", probe, lake, "--create", "-c", statements],
                        capture_output=True, text=True, timeout=HANG_S)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[-3:] == ["---", " 0", "(1 row)"]
    assert ok.stderr == "frozen: True\n"
    failed = subprocess.run([sys.executable, "-c", probe, lake, "-c", "SHOW TABLES IN nowhere"],
                            capture_output=True, text=True, timeout=HANG_S)  # fmt: skip
    assert failed.returncode == 1
    assert failed.stderr.splitlines()[0].startswith("ERROR:") and "nowhere" in failed.stderr
    assert failed.stderr.splitlines()[-1] == "frozen: True"


_SCRIPT_PIECES = ["DESCRIBE ns.t", "SHOW TABLES", "select 1", ";", ";", " ", "\n", "\t", "  ", "x", "-1",
                  "a/b", "'a;b'", "\"q;\"", "`n;`", "-- c;\n", "/* c; */", "#", "$$", "'open", "é", ";;"]  # fmt: skip


@given(st.lists(st.sampled_from(_SCRIPT_PIECES), max_size=12))
@settings(max_examples=400, deadline=None)
def test_a_script_is_split_as_the_sql_tokenizer_splits_it(pieces: list[str]) -> None:
    """cli.split_script splits plain ASCII texts itself (no sqlglot import) and gives what
    trinitylake_dbapi.split_statements gives for every text."""
    import trinitylake_dbapi

    text = "".join(pieces)
    assert split_script(text) == trinitylake_dbapi.split_statements(text), text


def test_the_command_runs_plain_statements_without_importing_sqlglot(tmp_path: Any) -> None:
    """``trinitylake LAKE -c "DESCRIBE t; SHOW TABLES"`` in a new process: the plain
    statements (sql.plain) and the script's split need no parser."""
    import json
    import subprocess

    lake = str(tmp_path / "lake")
    assert main([lake, "--create", "-c", "CREATE NAMESPACE sales; CREATE TABLE sales.t (id INT)"]) == 0
    probe = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps(sorted(m for m in sys.modules if m.startswith('sqlglot'))),"
        " file=sys.stderr))\n"
        "from trinitylake_dbapi.cli import run\n"
        "sys.argv = ['trinitylake', *sys.argv[1:]]\n"
        "run()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, lake, "-c", "DESCRIBE sales.t; SHOW TABLES;"],
                          capture_output=True, text=True, timeout=HANG_S)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert " id       | int4      | true     | NULL" in done.stdout and " sales     | t" in done.stdout
    assert json.loads(done.stderr.splitlines()[-1]) == []
