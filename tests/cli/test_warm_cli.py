"""tests/warm_cli.py, which the tests that run the ``trinitylake`` command as a process use:
the command forked from a warm process prints, reads and exits exactly as in a fresh
interpreter (WC1), and a command whose client is killed does not outlive it (WC3)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import warm_cli
from deadlines import HANG_S

REPO = Path(__file__).resolve().parents[2]

# Slow: fresh interpreters, to compare with (scripts/test --quick leaves it out).
pytestmark = pytest.mark.slow


def fresh(*args: str, stdin: str | None, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "trinitylake_dbapi.cli", *args], input=stdin, cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=HANG_S)  # fmt: skip


def test_a_warm_command_is_a_fresh_ones_twin(tmp_path: Path) -> None:
    cases = [
        (("lake", "--create", "-c", "CREATE TABLE t (a INT, s STRING); INSERT INTO t VALUES (1, 'é'), (2, NULL)"), None),
        (("lake", "--csv"), "SELECT * FROM t ORDER BY a;\n.mode json\nSELECT 'ü' AS u;\n"),  # piped script
        (("lake", "-c", "SELECT nope FROM t"), None),  # an error: exit status 1, one line
        (("serve", "lake"), None),  # a subcommand that refuses its arguments
        (("--no-such-flag",), None),  # argparse: exit status 2, usage on stderr
    ]
    for directory in ("fresh", "warm"):
        (tmp_path / directory).mkdir()
    for args, stdin in cases:
        expected = fresh(*args, stdin=stdin, cwd=tmp_path / "fresh")
        got = warm_cli.run(*args, stdin=stdin, cwd=tmp_path / "warm")
        assert (got.returncode, got.stdout, got.stderr) == (expected.returncode, expected.stdout, expected.stderr), args
    assert (tmp_path / "warm" / "lake").is_dir()  # relative to the client's directory


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def test_a_command_does_not_outlive_its_client(tmp_path: Path) -> None:
    """WC3: the client killed (a test's timeout), its command is killed too."""
    server = warm_cli.server_pid()
    if not os.path.exists(f"/proc/{server}/task/{server}/children"):
        pytest.skip("no /proc/PID/task/PID/children here")
    before = set(_children(server))
    # The command reads its script from a pipe nobody writes to: it waits until killed.
    client = subprocess.Popen([*warm_cli.command(), str(tmp_path / "lake"), "--create"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=warm_cli.env())  # fmt: skip
    deadline = time.monotonic() + HANG_S
    try:
        while not (keepers := set(_children(server)) - before) or not _children(min(keepers)):
            if time.monotonic() > deadline:
                pytest.fail(f"no command started in {HANG_S} s (a hang)")
            time.sleep(0.05)
        (command,) = _children(min(keepers))
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait()
    while os.path.exists(f"/proc/{command}") and "zombie" not in open(f"/proc/{command}/status").read():
        if time.monotonic() > deadline:
            pytest.fail(f"command {command} outlived its client by {HANG_S} s")
        time.sleep(0.05)


def test_a_warm_script_is_a_fresh_ones_twin(tmp_path: Path) -> None:
    """SCRIPT_FLAG (the docs' page worker): ``python SCRIPT ARGS`` as a fresh interpreter runs it."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import os, sys\n"
        "print(sys.argv, os.getcwd(), sys.path[0], __name__, sys.stdin.read().upper())\n"
        "print(os.environ.get('PROBE'), sys.stdout.line_buffering, sys.stdout.write_through)\n"
        "sys.exit(3)\n"
    )  # fmt: skip
    env = {**os.environ, "PROBE": "é"}
    expected = subprocess.run([sys.executable, str(script), "a", "b c"], input="piped", cwd=tmp_path,
                              capture_output=True, text=True, env=env, timeout=HANG_S)  # fmt: skip
    got = subprocess.run(warm_cli.script(str(script), "a", "b c"), input="piped", cwd=tmp_path,
                         capture_output=True, text=True, env=warm_cli.env(env, bash_function=False), timeout=HANG_S)  # fmt: skip
    assert (got.returncode, got.stdout, got.stderr) == (expected.returncode, expected.stdout, expected.stderr)
    assert expected.returncode == 3 and "piped".upper() in expected.stdout
