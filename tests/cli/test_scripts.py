"""Shell commands in scripts (-c, -f, standard input), the --csv/--json/--markdown and
--no-headers flags, .headers, .output and .once (shell.py SH1-SH3, dotcommands.py DOT1-DOT3),
and the output formats against the stdlib's own readers (output.py OUT2-OUT4)."""

from __future__ import annotations

import csv
import decimal
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import warm_cli
from deadlines import HANG_S
from trinitylake_dbapi.cli import format_csv, format_json, format_markdown, format_table, main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def lake(tmp_path: Path) -> str:
    location = str(tmp_path / "lake")
    assert main([location, "--create", "-c",
                 "CREATE NAMESPACE s; CREATE TABLE s.t (id BIGINT NOT NULL, name STRING, "
                 "price DECIMAL(10, 2), PRIMARY KEY (id)); "
                 "INSERT INTO s.t VALUES (1, 'a|b', 1.50), (2, 'say \"hi\", then go', NULL)"]) == 0  # fmt: skip
    return location


QUERY = "SELECT id, name, price FROM s.t ORDER BY id"
CSV = 'id,name,price\n1,a|b,1.50\n2,"say ""hi"", then go",\n'
JSON = '[{"id":1,"name":"a|b","price":"1.50"},\n{"id":2,"name":"say \\"hi\\", then go","price":null}]\n'
MARKDOWN = (
    "| id  | name              | price |\n"
    "|----:|-------------------|------:|\n"
    "|   1 | a\\|b              |  1.50 |\n"
    "|   2 | say \"hi\", then go |  NULL |\n"
)


def shell(lake: str, *args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The command in a process of its own (as users run it), forked from a warm one that
    has the package imported (tests/warm_cli.py), with pipes for its standard streams."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return warm_cli.run(lake, *args, stdin=stdin, cwd=cwd, environment=env)


@pytest.mark.slow
@pytest.mark.parametrize("mode, expected", [("csv", CSV), ("json", JSON), ("markdown", MARKDOWN)])
def test_mode_in_c_f_and_piped_scripts(lake: str, tmp_path: Path, mode: str, expected: str,
                                       capsys: Any) -> None:  # fmt: skip
    script = f".mode {mode}\n{QUERY};\n"
    assert main([lake, "-c", script]) == 0
    assert capsys.readouterr().out == expected
    assert main([lake, "-c", f".mode {mode}; {QUERY}"]) == 0  # a ';' ends the command (DOT1)
    assert capsys.readouterr().out == expected
    path = tmp_path / "script.sql"
    path.write_text(script)
    assert main([lake, "-f", str(path)]) == 0
    assert capsys.readouterr().out == expected
    done = shell(lake, stdin=script)  # piped standard input
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, "")
    done = shell(lake, "-f", "-", stdin=script)
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, "")


@pytest.mark.parametrize("flag, expected", [("--csv", CSV), ("--json", JSON), ("--markdown", MARKDOWN)])
def test_mode_flags(lake: str, flag: str, expected: str, capsys: Any) -> None:
    assert main([lake, flag, "-c", QUERY]) == 0
    assert capsys.readouterr().out == expected
    # A .mode in the script changes it from there on.
    assert main([lake, flag, "-c", "SELECT 1 AS one;\n.mode table\nSELECT 1 AS one"]) == 0
    assert capsys.readouterr().out.endswith(" one\n-----\n   1\n(1 row)\n")


def test_flags_and_headers(lake: str, capsys: Any) -> None:
    assert main([lake, "--csv", "--no-headers", "-c", QUERY]) == 0
    assert capsys.readouterr().out == CSV.split("\n", 1)[1]
    assert main([lake, "--no-headers", "-c", QUERY]) == 0  # table: rows only, no count
    assert capsys.readouterr().out == " 1 | a|b               | 1.50\n 2 | say \"hi\", then go | NULL\n"
    assert main([lake, "-c", f".headers off\n.mode csv\n{QUERY};\n.headers on\nSELECT 1 AS n"]) == 0
    assert capsys.readouterr().out == CSV.split("\n", 1)[1] + "n\n1\n"
    assert main([lake, "--json", "--no-headers", "-c", QUERY]) == 0  # JSON keeps its keys (OUT4)
    assert capsys.readouterr().out == JSON
    assert main([lake, "-c", ".headers\n.mode"]) == 0
    assert capsys.readouterr().out == "headers are on\ncurrent output mode: table\n"
    with pytest.raises(SystemExit):
        main([lake, "--csv", "--json", "-c", QUERY])
    assert "not allowed with argument" in capsys.readouterr().err


def test_output_and_once(lake: str, tmp_path: Path, capsys: Any) -> None:
    out, once = tmp_path / "out.csv", tmp_path / "once.json"
    out.write_text("old content\n")
    script = (f".mode csv\n.output {out}\n{QUERY};\nSELECT 1 AS n;\n"
              f".once {once}\n.mode json\n{QUERY};\nSELECT 2 AS n;\n.output\nSELECT 3 AS n;\n")  # fmt: skip
    assert main([lake, "-c", script]) == 0
    assert capsys.readouterr().out == '[{"n":3}]\n'  # after .output: the terminal again
    assert out.read_text() == CSV + "n\n1\n" + '[{"n":2}]\n'  # replaced, then appended
    assert once.read_text() == JSON  # the next result only
    rows = list(csv.reader(io.StringIO(out.read_text().split("n\n1")[0])))
    assert rows == [["id", "name", "price"], ["1", "a|b", "1.50"], ["2", 'say "hi", then go', ""]]
    # .once takes the outcome of a statement without rows too, and a .tables.
    assert main([lake, "-c", f".once {once}\nCREATE NAMESPACE x;\n.once {out}\n.tables x"]) == 0
    assert once.read_text() == "OK\n" and capsys.readouterr().out == ""
    assert out.read_text() == " namespace | table_name\n-----------+------------\n(0 rows)\n"
    # Relative names are the working directory's.
    done = shell(lake, "-c", ".once rel.txt\nSELECT 7 AS seven", cwd=tmp_path)
    assert done.returncode == 0 and (tmp_path / "rel.txt").read_text() == " seven\n-------\n     7\n(1 row)\n"


@pytest.mark.parametrize("script, error", [
    (".mode xml\nSELECT 1", "ERROR: .mode: unknown mode 'xml'; the modes are table, csv, json, markdown"),
    (".headers maybe\nSELECT 1", "ERROR: .headers: expected on or off, not 'maybe'"),
    (".output /nonexistent-dir/x.csv\nSELECT 1",
     "ERROR: .output: cannot write '/nonexistent-dir/x.csv': No such file or directory"),
    (".once\nSELECT 1", "ERROR: .once takes one file name, not 0 words"),
    (".once a b\nSELECT 1", "ERROR: .once takes one file name, not 2 words"),
    (".nope\nSELECT 1", "ERROR: unknown shell command '.nope'; .help lists the shell commands "
                        "(SQL statements end with ';')"),
    ("\\dt\nSELECT 1", "ERROR: unknown shell command '\\dt'; .help lists the shell commands "
                       "(SQL statements end with ';')"),
])  # fmt: skip
def test_a_failing_command_stops_the_script(lake: str, script: str, error: str, capsys: Any) -> None:
    assert main([lake, "-c", script]) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", error + "\n")


def test_quit_ends_a_script_successfully(lake: str, capsys: Any) -> None:
    assert main([lake, "-c", "SELECT 1 AS n;\n.quit\nSELECT 2 AS n"]) == 0
    assert capsys.readouterr().out == " n\n---\n 1\n(1 row)\n"


def test_commands_inside_statements_and_literals(lake: str, capsys: Any) -> None:
    # In the middle of a statement: the command runs, the statement stays pending (SH2).
    assert main([lake, "-c", "SELECT 1\n.mode csv\nAS n;"]) == 0
    assert capsys.readouterr().out == "n\n1\n"
    # Inside a string or a comment: text, not a command.
    assert main([lake, "--csv", "-c", "SELECT 'x\n.mode json\ny' AS s /* and\n.mode table\n */;"]) == 0
    assert capsys.readouterr().out == 's\n"x\n.mode json\ny"\n'
    # Statements before a command run before it, in order.
    assert main([lake, "-c", "SELECT 1 AS a; SELECT 2 AS b;\n.mode csv\nSELECT 3 AS c"]) == 0
    assert capsys.readouterr().out == " a\n---\n 1\n(1 row)\n b\n---\n 2\n(1 row)\nc\n3\n"


def test_a_plain_script_with_commands_imports_no_sqlglot(lake: str) -> None:
    """SH2: a DESCRIBE with shell commands around it stays off the SQL parser."""
    code = ("import sys\nfrom trinitylake_dbapi.cli import main\n"
            f"status = main([{lake!r}, '-c', '.mode csv\\n.headers off\\nDESCRIBE s.t'])\n"
            "assert status == 0, status\nprint(sorted(m for m in sys.modules if m.startswith('sqlglot')))\n")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["id,int8,false,", "name,varchar,true,",
                                        "price,\"decimal(10,2)\",true,", "[]"]  # fmt: skip


def test_python_dash_m_runs_the_command(lake: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "trinitylake_dbapi.cli", lake, "--json", "-c", "SELECT 1 AS n"],
                          capture_output=True, text=True, env=env, timeout=HANG_S)  # a fresh interpreter  # fmt: skip
    assert (done.returncode, done.stdout) == (0, '[{"n":1}]\n')


# ---------------------------------------------------------------------------
# The formats against the stdlib's readers
# ---------------------------------------------------------------------------

VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
    st.decimals(allow_nan=False, allow_infinity=False, places=2, min_value=-10**6, max_value=10**6),
)  # fmt: skip
TABLES = st.integers(1, 4).flatmap(lambda n: st.tuples(
    st.lists(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6), min_size=n, max_size=n),
    st.lists(st.lists(VALUES, min_size=n, max_size=n), max_size=5),
))  # fmt: skip


def _shown(value: Any) -> str:
    return {None: "", True: "true", False: "false"}.get(value, str(value)) if not isinstance(value, (int, decimal.Decimal)) or isinstance(value, bool) else str(value)


@given(TABLES)
def test_csv_reads_back_with_the_csv_module(table: Any) -> None:
    columns, rows = table
    for headers in (True, False):
        text = format_csv(columns, rows, headers=headers)
        read = list(csv.reader(io.StringIO(text, newline="")))
        expected = ([list(columns)] if headers else []) + [[_shown(v) for v in row] for row in rows]
        # An empty record (one column, an empty field) is a blank line to the reader.
        assert [r if r else [""] for r in read] == [r for r in expected]


@given(TABLES)
def test_json_reads_back_with_the_json_module(table: Any) -> None:
    columns, rows = table
    read = json.loads(format_json(columns, rows), object_pairs_hook=list)
    assert len(read) == len(rows)
    for pairs, row in zip(read, rows):
        assert [k for k, _ in pairs] == list(columns)
        for (_, got), value in zip(pairs, row):
            assert got == (str(value) if isinstance(value, decimal.Decimal) else value)


@given(TABLES)
def test_markdown_rows_keep_their_cells(table: Any) -> None:
    columns, rows = table
    lines = format_markdown(columns, rows).split("\n")
    assert len(lines) == 2 + len(rows)  # every line break of a value is a <br>
    for line in lines:
        # Cells: split at the | that are not escaped (a \\ before it is an escaped \\).
        cells, cell, escaped = [], "", False
        for ch in line[1:-1]:
            if ch == "|" and not escaped:
                cells.append(cell)
                cell = ""
            else:
                cell += ch
            escaped = ch == "\\" and not escaped
        cells.append(cell)
        assert len(cells) == len(columns), line


def test_table_without_headers_is_the_rows_only() -> None:
    assert format_table(["a", "b"], [(1, "x")], headers=False) == " 1 | x"
    assert format_table(["a"], [], headers=False) == ""
