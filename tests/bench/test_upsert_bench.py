"""Smoke run of the benchmark's "upsert" section (issue 36; ``python -m bench --quick
--only upsert``): every side upserts, the sides end with the same rows (the section
checks it), and the table is printed. It measures nothing worth reading."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from deadlines import HANG_S

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_quick_upsert_section(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--quiet", "--only", "upsert", "--workdir", str(tmp_path / "work"),
         "--out", str(out), "--ducklake-venv", os.path.join(ROOT, ".bench-venv-ducklake")],
        cwd=ROOT, capture_output=True, text=True, timeout=HANG_S,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "## Upsert of 1,000 rows into 20,000" in run.stdout
    upsert = json.loads((out / "latest-quick.json").read_text())["upsert"]
    sides = {"trinitylake-merge", "trinitylake-on-conflict", "trinitylake-pyiceberg", "pyiceberg"}
    assert sides <= set(upsert["sides"])
    assert all(s["median_seconds"] > 0 for s in upsert["sides"].values())
    assert not any((tmp_path / "work").iterdir()), "the run's lakehouses were not removed"
