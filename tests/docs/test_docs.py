"""Every code block of the documentation runs, and its shown output is what it prints.

Collected pages: README.md and every ``*.md`` under docs/ (sub-folders included). Each
page is one test; its blocks run in the order they are written, in a fresh temporary
directory of their own (the *page directory*), so a page reads like one session. Pages
share nothing and run concurrently (see ``page_runs``). A page that starts Spark is
marked ``slow``.

Code blocks, by their fence's language:

``python``
    Executed; all python blocks of a page share one namespace (one interpreter per
    page, started in the page directory). What it prints must equal the ``text`` block
    that follows it; without one it must print nothing. An exception fails the test.
``sql``
    Each statement runs through the ``trinitylake`` shell (its ``Shell`` class, on one
    autocommit connection of the page) against the page's own lakehouse ``lake`` in the
    page directory, created fresh by the first sql block. A script stops at its first
    error, as ``trinitylake -c`` does. The printed output (result tables, ``OK``,
    ``ERROR: ...`` lines) must equal the ``text`` block that follows; without one,
    every statement must succeed.
``console``
    Lines starting with ``$ `` are commands (a command whose quotes are not closed
    continues on the next lines, and a here-document ``<<'EOF'`` up to its ``EOF``
    line); the lines after a command, up to the next ``$ ``, are its expected output
    (standard output and standard error together). All console
    and bash blocks of a page run in one ``bash`` session in the page directory, with
    the project's ``.venv/bin`` first on PATH and a ``.venv`` link to it there, as in a
    checkout. A command must exit with status 0 unless its shown output has an
    ``ERROR`` line. ``trinitylake``, ``sqlacodegen`` and ``alembic`` there are bash functions that run the
    command in a process forked from a warm one with the package imported (tests/warm_cli.py: the
    same entry point, arguments, directory, environment and standard streams; a fresh
    interpreter's imports were most of the CPU of these pages).
``bash``
    Commands run in that same session and must exit with status 0; output is not
    compared. One exception, marked in the page by ``<!-- docs-test: not-run -->`` just
    before the block: a block made only of the repository's own entry points
    (``scripts/test`` is the suite running this test; ``scripts/quickstart`` installs
    packages). The test checks that each named script exists and is executable and
    that the block parses (``bash -n``).
``text``
    The output of the python or sql block just before it (only blank lines between).
no language
    Not code: a drawing (a diagram, a file layout) or a syntax summary (a statement's
    grammar, a function's signature).

Any other language fails the test, so no code block escapes it.

Normalisation. Only what truly varies between runs is normalised, in the shown and the
actual output alike: uuids (``<uuid>``), the hash prefix of SPEC 2 optimized paths
``bbbb/bbbb/bbbb/bbbbbbbb-`` (``<hash>-``), timestamps ``2026-01-02 03:04:05[.ffffff]``
and ``datetime.datetime(...)`` (``<timestamp>``), milliseconds since the epoch (13
digits, ``<millis>``), and in the actual output the page directory, shown as
``/tmp/demo``. When a block's output contains one of the varying values, column padding
and the dashes under table headers are compared loosely (runs of spaces and of dashes
count as one), because a value's width (e.g. a timestamp whose microseconds are 0)
changes the width of its column. Trailing spaces and trailing blank lines are ignored.
"""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import warm_cli
from deadlines import HANG_S

REPO = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("_worker.py")
VENV_BIN = Path(sys.executable).parent
SHOWN_PAGE_DIR = "/tmp/demo"

LANGUAGES = {"python", "sql", "console", "bash", "text", ""}
TIMEOUT_S = HANG_S  # tests/deadlines.py DL1


def pages() -> list[Path]:
    found = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return [p for p in found if p.is_file()]


# ---------------------------------------------------------------------------
# Collecting blocks
# ---------------------------------------------------------------------------

_FENCE = re.compile(r"^(\s*)(`{3,})\s*([\w+-]*)\s*$")
_DIRECTIVE = re.compile(r"^<!--\s*docs-test:\s*([\w-]+)\s*-->\s*$")


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    directive: str | None = None
    output: "Block | None" = None  # the text block showing this block's output

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def collect(page: Path) -> list[Block]:
    """The page's code blocks, each with its shown output attached."""
    lines = page.read_text(encoding="utf-8").split("\n")
    blocks: list[Block] = []
    previous_end = -10  # line index just after the previous block's closing fence
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.groups()
        start = i
        where = f"{page.relative_to(REPO)}:{start + 1}"
        assert not indent, f"{where}: indented code block; write fences at the line start"
        assert lang in LANGUAGES, (
            f"{where}: code block language {lang!r} is not one the docs test runs "
            f"({', '.join(sorted(LANGUAGES - {''}))}, or none for a drawing)"
        )
        i += 1
        while i < len(lines) and lines[i].rstrip() != indent + fence:
            i += 1
        assert i < len(lines), f"{where}: code block is not closed"
        code = "\n".join(lines[start + 1 : i]) + "\n"
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        d = _DIRECTIVE.match(lines[j]) if j >= 0 else None
        block = Block(page, start + 1, lang, code, d.group(1) if d else None)
        between = lines[previous_end:start]
        if lang == "text":
            owner = blocks[-1] if blocks else None
            assert (
                owner is not None
                and owner.lang in ("python", "sql")
                and owner.output is None
                and not any(s.strip() for s in between)
            ), f"{where}: a text block must directly follow the python or sql block it shows"
            owner.output = block
        else:
            blocks.append(block)
        i += 1
        previous_end = i
    return blocks


# ---------------------------------------------------------------------------
# Normalising and comparing output
# ---------------------------------------------------------------------------

_VARYING = [
    (re.compile(r"[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}"), "<uuid>"),
    (re.compile(r"\b[01]{4}/[01]{4}/[01]{4}/[01]{8}-"), "<hash>-"),
    (re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?"), "<timestamp>"),
    (re.compile(r"datetime\.datetime\(\d+(, \d+){2,6}\)"), "<timestamp>"),
    (re.compile(r"\b1\d{12}\b"), "<millis>"),
]


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def normalise(text: str) -> tuple[list[str], bool]:
    """The text's lines with varying values replaced, and whether any was."""
    varied = False
    for pattern, token in _VARYING:
        text, n = pattern.subn(token, text)
        varied = varied or n > 0
    return _lines(text), varied


def _loose(lines: list[str]) -> list[str]:
    return [re.sub(r"-{2,}", "-", re.sub(r" {2,}", " ", line)) for line in lines]


def same_output(shown: str, actual: str) -> bool:
    a, varied_a = normalise(shown)
    b, varied_b = normalise(actual)
    if varied_a or varied_b:
        return _loose(a) == _loose(b)
    return a == b


def explain(block: Block, shown: str, actual: str) -> str:
    return (
        f"{block.where}: the {block.lang} block's output differs from the text shown "
        f"(normalised as the module docstring says).\n--- shown\n{shown.rstrip()}\n"
        f"--- actual\n{actual.rstrip()}\n---"
    )


# ---------------------------------------------------------------------------
# Running: the page's python/sql worker and its bash session
# ---------------------------------------------------------------------------


def _read_line(stream: Any, deadline: float, what: str) -> bytes:
    fd = stream.fileno()
    chunks = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"{what} did not finish in {TIMEOUT_S} s")
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        byte = os.read(fd, 1)
        if not byte:
            raise EOFError(f"{what} exited unexpectedly")
        chunks.append(byte)
        if byte == b"\n":
            return b"".join(chunks)


class Worker:
    """The interpreter running a page's python and sql blocks (tests/docs/_worker.py):
    ``warm``, a process forked from one that has the package, SQLAlchemy and PyIceberg
    imported (tests/warm_cli.py: _worker.py as its ``__main__``, with the page's
    directory, environment and pipes; a fresh interpreter's imports were most of a
    page's CPU), else a fresh interpreter (a page that starts Spark)."""

    def __init__(self, directory: Path, env: dict[str, str], warm: bool = True) -> None:
        self.log = open(directory.parent / "worker-stderr.txt", "wb")
        argv = warm_cli.script(str(WORKER)) if warm else [sys.executable, str(WORKER)]
        self.proc = subprocess.Popen(
            argv, cwd=directory, env=warm_cli.env(env, bash_function=False) if warm else env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
        )  # fmt: skip

    def run(self, block: Block) -> tuple[str, str | None]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        request = {"kind": block.lang, "code": block.code, "where": block.where}
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()
        line = _read_line(self.proc.stdout, time.monotonic() + TIMEOUT_S, block.where)
        answer = json.loads(line)
        return answer["output"], answer["error"]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)  # then killed: not a deadline
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Bash:
    """One bash session for the page's console and bash blocks."""

    def __init__(self, directory: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"], cwd=directory, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"__docs_test_return() { return $1; }\n__docs_test_status=0\n")

    def run(self, command: str, where: str) -> tuple[str, int]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        marker = f"__docs_test_{uuid.uuid4().hex}__"
        # $? of the previous command is restored first, so `echo $?` works as typed.
        script = (
            f"__docs_test_return $__docs_test_status\n{{\n{command}\n}} </dev/null 2>&1\n"
            f"__docs_test_status=$?\nprintf '\\n{marker} %d\\n' $__docs_test_status\n"
        )
        self.proc.stdin.write(script.encode())
        self.proc.stdin.flush()
        deadline = time.monotonic() + TIMEOUT_S
        out = []
        while True:
            line = _read_line(self.proc.stdout, deadline, f"{where}: {command!r}").decode()
            if line.startswith(marker):
                status = int(line.split()[1])
                break
            out.append(line)
        text = "".join(out)
        return (text[:-1] if text.endswith("\n") else text), status

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)  # then killed: not a deadline
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")


def console_commands(block: Block) -> list[tuple[str, str]]:
    """(command, shown output) pairs of a console block."""
    pairs: list[tuple[str, list[str]]] = []
    lines = block.code.rstrip("\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            assert pairs, f"{block.where}: a console block starts with a '$ ' command"
            pairs[-1][1].append(line)
            i += 1
            continue
        command = line[2:]
        while True:
            try:
                shlex.split(command)
                break
            except ValueError:  # an open quote or a trailing backslash: continued
                i += 1
                assert i < len(lines), f"{block.where}: unterminated command {command!r}"
                command += "\n" + lines[i]
        for delimiter in _HEREDOC.findall(command):  # here-documents follow the command
            while True:
                i += 1
                assert i < len(lines), f"{block.where}: here-document {delimiter} is not closed"
                command += "\n" + lines[i]
                if lines[i] == delimiter:
                    break
        pairs.append((command, []))
        i += 1
    return [(command, "\n".join(out)) for command, out in pairs]


def check_not_run(block: Block) -> None:
    """A not-run block names only the repository's scripts, which must exist."""
    result = subprocess.run(["bash", "-n"], input=block.code.encode(), capture_output=True)
    assert result.returncode == 0, f"{block.where}: {result.stderr.decode()}"
    for raw in block.code.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = shlex.split(line)
        assert words[0].startswith("scripts/"), (
            f"{block.where}: a not-run block may only name scripts/*, not {line!r}"
        )
        script = REPO / words[0]
        assert script.is_file() and os.access(script, os.X_OK), (
            f"{block.where}: {words[0]} is missing or not executable"
        )


def run_page(page: Path, directory: Path) -> None:
    blocks = collect(page)
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    env["TRINITYLAKE_HISTORY"] = str(directory.parent / "history")
    env.pop("PYTHONSTARTUP", None)
    (directory / ".venv").symlink_to(VENV_BIN.parent)
    worker: Worker | None = None
    bash: Bash | None = None
    real = str(directory.resolve())

    def shown_paths(text: str) -> str:
        return text.replace(real, SHOWN_PAGE_DIR).replace(str(directory), SHOWN_PAGE_DIR)

    try:
        for block in blocks:
            if block.lang in ("python", "sql"):
                worker = worker or Worker(directory, env, warm=not _needs_spark(page))
                output, error = worker.run(block)
                assert error is None, f"{block.where}: the python block raised\n{error}"
                output = shown_paths(output)
                if block.output is not None:
                    if not same_output(block.output.code, output):
                        pytest.fail(explain(block, block.output.code, output), pytrace=False)
                elif block.lang == "python":
                    assert not output.strip(), (
                        f"{block.where}: the block prints but no text block shows it:\n{output}"
                    )
                else:
                    assert "ERROR:" not in output, f"{block.where}: a statement failed:\n{output}"
            elif block.directive == "not-run":
                assert block.lang == "bash", f"{block.where}: only bash blocks can be not-run"
                check_not_run(block)
            elif block.lang == "bash":
                bash = bash or Bash(directory, warm_cli.env(env))
                output, status = bash.run(block.code, block.where)
                assert status == 0, f"{block.where}: exit status {status}\n{output}"
            elif block.lang == "console":
                bash = bash or Bash(directory, warm_cli.env(env))
                for command, shown in console_commands(block):
                    output, status = bash.run(command, block.where)
                    output = shown_paths(output)
                    assert status == 0 or "ERROR" in shown, (
                        f"{block.where}: {command!r} exited with status {status}\n{output}"
                    )
                    if not same_output(shown, output):
                        pytest.fail(explain(block, shown, output), pytrace=False)
            # no language: a drawing, nothing to run
    finally:
        if worker is not None:
            worker.close()
        if bash is not None:
            bash.close()


def _needs_spark(page: Path) -> bool:
    try:
        return any(b.lang == "python" and "pyspark" in b.code for b in collect(page))
    except AssertionError:  # a malformed page: its own test reports it
        return False


def _page_params() -> list[Any]:
    params = []
    for page in pages():
        # A page that starts Spark takes tens of seconds (JVM, Python workers).
        marks = [pytest.mark.slow] if _needs_spark(page) else []
        params.append(pytest.param(page, id=str(page.relative_to(REPO)), marks=marks))
    return params


def _spark_missing() -> bool:
    try:
        import pyspark  # noqa: F401 - only whether it is installed
    except ImportError:
        return True
    return False


@pytest.fixture(scope="module")
def page_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Every selected page starts at once, each in its own processes (pages share
    nothing), so the module takes about as long as its slowest page.

    At once up to this process's share of the cores: every core under plain pytest,
    cores / workers under pytest-xdist, whose other workers keep running tests meanwhile.
    tests/conftest.py sends all pages to one xdist worker (each would otherwise run
    every selected page)."""
    selected = []
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if item.module is request.module and callspec is not None and "page" in callspec.params:
            selected.append(callspec.params["page"])
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    pool = ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 2) // workers))
    futures = {}
    for page in selected:
        if _needs_spark(page) and _spark_missing():
            continue
        directory = tmp_path_factory.mktemp("page") / "demo"
        directory.mkdir()
        futures[page] = pool.submit(run_page, page, directory)
    yield futures
    pool.shutdown(wait=True)


@pytest.mark.parametrize("page", _page_params())
def test_code_blocks_run_and_show_their_output(page: Path, page_runs: Any) -> None:
    if page not in page_runs:
        pytest.skip("the spark extra (pyspark) is not installed")
    page_runs[page].result()


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    """The site builds without a warning (what scripts/test runs too)."""
    mkdocs = shutil.which("mkdocs", path=str(VENV_BIN))
    if mkdocs is None:
        pytest.skip("mkdocs is not installed")
    result = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_normalisation_keeps_what_does_not_vary() -> None:
    """The convention above, on examples: varying values match, everything else must."""
    assert same_output(
        " v | created_at\n---+----------------------------\n 1 | 2026-11-20 23:05:47.735000\n",
        " v | created_at\n---+---------------------\n 1 | 2026-11-21 01:00:00\n",
    )
    assert not same_output(" v\n---\n 1\n", " v\n---\n 2\n")
    assert not same_output(" a | b\n", " a  | b\n")  # no varying value: padding counts
    assert same_output(
        "1100/1000/1010/11001000-table-t-ns-914bc2fb-db5a-45f0-bf8f-565a88d12760.binpb",
        "0001/0110/1110/00000001-table-t-ns-00000000-0000-4000-8000-000000000000.binpb",
    )
    root_0, root_1 = "_" + "0" * 32 + ".arrow", "_1" + "0" * 31 + ".arrow"
    assert not same_output(root_0, root_1)  # root file names are exact
