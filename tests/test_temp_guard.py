"""tests/temp_guard.py: each pytest process's temporary files go to its basetemp (TMP1)
and a file a test leaves there fails the run, naming the file and the test (TMP2).
Each case runs pytest in a child on a few generated tests, with the guard as its only
plugin of ours."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import temp_guard  # the plugin's module (tests/ is on sys.path): see SYSTEM_TEMP_DIR

from tests.deadlines import HANG_S

_TESTS = Path(__file__).resolve().parent

_CONFTEST = '''
import os, subprocess, sys, tempfile
import pytest

pytest_plugins = ["temp_guard"]

@pytest.fixture(scope="session")
def server():
    yield
    if os.environ.get("LEAK_AT_TEARDOWN"):
        tempfile.mkstemp(prefix="at-teardown-")  # a session fixture leaking as it stops
'''

_TESTS_FILE = '''
import os, subprocess, sys, tempfile

def test_clean(tmp_path, server):
    with tempfile.TemporaryDirectory(prefix="removed-") as d:
        open(os.path.join(d, "x"), "w").close()
    tempfile.TemporaryFile().close()
    (tmp_path / "kept").write_text("x")

def test_where_tempfile_and_children_write(tmp_path):
    base = os.path.realpath(tmp_path.parents[1])
    here = os.path.realpath(tempfile.gettempdir())
    child = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert os.environ["TMPDIR"] == tempfile.gettempdir()
    assert here.startswith(base + os.sep) and os.path.realpath(child) == here, (base, here, child)
'''

_LEAKS_FILE = '''
import subprocess, sys, tempfile

def test_leaks_a_directory():
    tempfile.mkdtemp(prefix="agree-")

def test_a_child_leaks_a_file():
    subprocess.run([sys.executable, "-c",
                    "import tempfile; tempfile.NamedTemporaryFile(prefix='fake-gcs-', suffix='.log', delete=False)"],
                   check=True)

def test_fails_and_leaks():
    tempfile.mkstemp(prefix="failing-")
    assert False
'''

_FORKSERVER_FILE = '''
import multiprocessing

def test_a_forkserver_process():
    process = multiprocessing.get_context("forkserver").Process(target=print)
    process.start()
    process.join()
    assert process.exitcode == 0
'''


@pytest.fixture
def base() -> Iterator[Path]:
    """The child's basetemp: a short path (its workers' temp directories must hold a
    forkserver's socket, MAX_TEMP_DIR), so in the system's temp directory; removed after."""
    short = Path(tempfile.mkdtemp(prefix="g-", dir=temp_guard.SYSTEM_TEMP_DIR))
    try:
        yield short / "b"
    finally:
        shutil.rmtree(short)


def _pytest(tmp_path: Path, base: Path, files: dict[str, str], *args: str,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """pytest in a child, on ``files`` written into ``tmp_path/run``, with the basetemp
    ``base``; its plugins: the guard and those ``args`` name."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "pytest.ini").write_text("[pytest]\n")
    (run / "conftest.py").write_text(_CONFTEST)
    for name, text in files.items():
        (run / name).write_text(text)
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join([str(_TESTS), os.environ.get("PYTHONPATH", "")]),
                   PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", **(env or {}))
    environ.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", f"--basetemp={base}", *args],
        cwd=run, env=environ, capture_output=True, text=True, timeout=HANG_S,
    )  # fmt: skip


def _leftovers(base: Path) -> list[str]:
    return sorted(p.name for p in base.rglob("*") if p.parent.name == "tmp")


def test_temporary_files_go_to_the_basetemp_and_a_clean_run_passes(tmp_path: Path, base: Path) -> None:
    done = _pytest(tmp_path, base, {"test_clean.py": _TESTS_FILE})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout and "error" not in done.stdout.lower(), done.stdout
    assert (base / "tmp").is_dir() and _leftovers(base) == []


def test_each_leak_fails_the_run_and_is_named_with_its_test(tmp_path: Path, base: Path) -> None:
    done = _pytest(tmp_path, base, {"test_clean.py": _TESTS_FILE, "test_leaks.py": _LEAKS_FILE},
                   env={"LEAK_AT_TEARDOWN": "1"})
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "1 failed, 4 passed, 1 error" in out, out
    left = _leftovers(base)
    assert [n.split("-")[0] for n in left] == ["agree", "at", "failing", "fake"], left
    assert "tests left 4 entries in their temp directory" in out, out
    for name, where in zip(left, ["test_leaks.py::test_leaks_a_directory",
                                  "test_leaks.py::test_fails_and_leaks, in its teardown or the session fixtures'",
                                  "test_leaks.py::test_fails_and_leaks", "test_leaks.py::test_a_child_leaks_a_file"]):
        assert f"{name}{'/' if name.startswith('agree') else ''} (first seen after {where})" in out, (name, out)


def test_each_xdist_worker_has_its_own_directory_and_reports_its_leaks(tmp_path: Path, base: Path) -> None:
    done = _pytest(tmp_path, base, {"test_clean.py": _TESTS_FILE, "test_leaks.py": _LEAKS_FILE},
                   "-p", "xdist.plugin", "-n", "2")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert sorted(p.parent.name for p in base.glob("popen-gw*/tmp")) == ["popen-gw0", "popen-gw1"]
    assert not (base / "tmp").exists()  # the controller runs no test
    left = _leftovers(base)
    assert [n.split("-")[0] for n in left] == ["agree", "failing", "fake"], left
    for name in left:
        assert name in out, (name, out)


@pytest.mark.parametrize("long_basetemp", [False, True])
def test_multiprocessing_s_own_directory_is_not_a_leak(tmp_path: Path, base: Path, long_basetemp: bool) -> None:
    """A forkserver binds a socket in its directory: a basetemp too long for that gets
    a directory of the system's temp directory instead, removed at the exit."""
    if long_basetemp:
        base = base.parent / ("b" * temp_guard.MAX_TEMP_DIR)  # (pytest makes only the last directory)
    system = base.parent / "s"  # the system's temp directory, for the child
    system.mkdir()
    done = _pytest(tmp_path, base, {"test_forkserver.py": _FORKSERVER_FILE}, env={"TMPDIR": str(system)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout and "error" not in done.stdout.lower(), done.stdout
    assert (base / "tmp").is_dir() != long_basetemp
    assert list(system.iterdir()) == []
