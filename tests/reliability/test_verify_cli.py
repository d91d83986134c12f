"""``trinitylake verify LOCATION [--all-versions]``: prints the report, exits 0 when
valid, 1 on a violation, 2 when the location cannot be verified."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from reliability_helpers import build_lake
from deadlines import HANG_S
from trinitylake_dbapi.cli import main
from trinitylake_dbapi.format import paths


@pytest.fixture
def location(tmp_path: Any) -> str:
    location = str(tmp_path / "lake")
    build_lake(location, tables=30)
    return location


def test_a_valid_lakehouse_exits_0(location: str, capsys: pytest.CaptureFixture) -> None:
    assert main(["verify", location]) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK: file://") and "0 errors" in out


def test_a_violation_exits_1_and_names_file_and_rule(location: str,
                                                      capsys: pytest.CaptureFixture) -> None:
    root = paths.root_node_path(3)
    with open(os.path.join(location, root), "wb") as f:
        f.write(b"garbage")
    assert main(["verify", location, "--all-versions"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"ERROR [SPEC 4] {root}: not an Arrow IPC file")
    assert out[-1].startswith("INVALID: ")


def test_an_unqualified_location_exits_2(capsys: pytest.CaptureFixture) -> None:
    assert main(["verify", "s3://bucket/x/../y"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ERROR: ") and "not qualified" in err


def test_the_console_script(location: str) -> None:
    script = os.path.join(os.path.dirname(sys.executable), "trinitylake")
    if not os.path.exists(script):
        pytest.skip("the console script is not installed in this environment")
    done = subprocess.run([script, "verify", location], capture_output=True, text=True,
                          timeout=HANG_S)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("OK: ")
