"""The tests' temporary files stay in pytest's basetemp, and a leak fails the run.

A run of scripts/test used to leave, in the system's /tmp where nothing removed them, an
``agree-*`` directory per example of test_readers_agree, a DuckDB extension directory per
child reading with ``iceberg_scan`` (tests/iceberg) and the fake-gcs-server's log
(2026-11-27: 8, 9 and 3 of them). Registered for every test by tests/conftest.py.

  TMP1. Each pytest process that runs tests (an xdist worker, or the one process of
        ``-n 0``) has a temp directory of its own, ``tmp`` in its basetemp, from the
        start of its session (if that path leaves room for a Unix socket in it, else a
        directory of the system's, removed at the process's exit): ``tempfile.tempdir`` and ``TMPDIR`` point there, so
        tempfile's functions and the child processes that honour TMPDIR (Python, Go's
        fake-gcs-server, Node's Azurite) put their temporary files there, not in the
        system's temp directory. pytest keeps the last three runs' basetemps and removes
        older ones, so even a leak the guard does not see never piles up.
  TMP2. Whatever is still in that directory once the session's fixtures are torn down
        is a leak: the session ends with an error, at the teardown of the process's
        last test, that names each entry and the test after which it first appeared,
        and the run fails. (A failure, not a warning: warnings at a session's end go
        unread, which is how the leaks above piled up.) A test keeps its files in
        ``tmp_path`` / ``tmp_path_factory``, or removes them in its teardown, also when
        it fails. The one entry allowed is multiprocessing's own directory of the
        process (``pymp-*``, e.g. a forkserver's socket), which it removes at the
        interpreter's exit, after the check.

Not covered: what a JVM writes (``java.io.tmpdir`` ignores TMPDIR; Spark removes its
directories at the JVM's exit, the JVM keeps ``hsperfdata_<user>``), children started
with an environment of their own, and paths a test names itself.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

#: The longest temp directory that leaves room for the Unix sockets made in it:
#: multiprocessing's forkserver binds ``<temp>/pymp-XXXXXXXX/listener-XXXXXXXX`` (32
#: characters more), and a socket's path holds 107 characters (103 on macOS). A longer
#: basetemp (a long TMPDIR or --basetemp) gets a directory of the system's (TMP1).
MAX_TEMP_DIR = 70

#: The temp directory of the system, as the process found it (before TMP1). (Read it as
#: ``temp_guard.SYSTEM_TEMP_DIR``: an import as ``tests.temp_guard`` after the session's
#: start is a second module, which finds the process's.)
SYSTEM_TEMP_DIR = tempfile.gettempdir()

#: The process's temp directory (TMP1) once its session has started; None in the xdist
#: controller, which runs no test.
_temp_dir: str | None = None
#: Each entry seen in it after a test, with the first such test.
_seen: dict[str, str] = {}
#: The test whose teardown last started (the session's fixtures are torn down in the last one's).
_last = ""


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """TMP1: this process's temporary files go to its basetemp (before collection)."""
    global _temp_dir
    config = session.config
    if config.pluginmanager.hasplugin("dsession"):
        return  # the xdist controller: each worker has its own
    # config._tmp_path_factory is how pytest and xdist reach the tmp_path_factory outside
    # a fixture; a fixture would come after collection.
    temp = config._tmp_path_factory.getbasetemp() / "tmp"  # type: ignore[attr-defined]
    if len(str(temp)) <= MAX_TEMP_DIR:
        temp.mkdir(mode=0o700, exist_ok=True)
        _temp_dir = str(temp)
    else:  # a directory of the system's, removed at the process's exit
        _temp_dir = tempfile.mkdtemp(prefix="pytest-tmp-", dir=SYSTEM_TEMP_DIR)
        atexit.register(shutil.rmtree, _temp_dir, ignore_errors=True)
    os.environ["TMPDIR"] = _temp_dir
    tempfile.tempdir = _temp_dir


def _note(nodeid: str) -> None:
    """TMP2: note the entries new in the temp directory (one listdir) as seen after ``nodeid``."""
    if _temp_dir is not None:
        for name in os.listdir(_temp_dir):
            _seen.setdefault(name, nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Before a test's teardown: the last test's is also the session fixtures' teardown."""
    global _last
    _last = item.nodeid
    _note(item.nodeid)


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    """After a test's teardown (the last test's: after the check)."""
    _note(nodeid)


def _multiprocessing_dir() -> str | None:
    """multiprocessing's temp directory of this process, if it made one (TMP2)."""
    import sys

    if "multiprocessing" not in sys.modules:
        return None
    import multiprocessing

    return multiprocessing.current_process()._config.get("tempdir")  # type: ignore[attr-defined]


def leaks(temp_dir: str, seen: dict[str, str]) -> list[str]:
    """The entries of ``temp_dir`` (TMP2), each with the test after which it was first
    seen; directories end with a slash."""
    allowed = _multiprocessing_dir()
    found = []
    for name in sorted(os.listdir(temp_dir)):
        path = os.path.join(temp_dir, name)
        if allowed is not None and os.path.realpath(path) == os.path.realpath(allowed):
            continue
        when = seen.get(name, f"{_last}, in its teardown or the session fixtures'")
        found.append(f"{name}{'/' if os.path.isdir(path) else ''} (first seen after {when})")
    return found


@pytest.fixture(autouse=True, scope="session")
def temp_directory_left_empty() -> Iterator[None]:
    """TMP2, as a session fixture used by every test: set up before and torn down after
    every other session fixture of the process."""
    yield
    if _temp_dir is None:
        return
    found = leaks(_temp_dir, _seen)
    if found:
        pytest.fail(
            f"tests left {len(found)} entr{'y' if len(found) == 1 else 'ies'} in their temp directory {_temp_dir}, "
            "which outside pytest is the system's /tmp (tests/temp_guard.py TMP2: keep files in tmp_path or "
            "tmp_path_factory, or remove them in a teardown):\n  " + "\n  ".join(found),
            pytrace=False,
        )
