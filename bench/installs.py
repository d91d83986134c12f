"""Installs the bench makes for its peers (DuckLake's venv, the sqlglotc overlay)."""

from __future__ import annotations

import subprocess


def step_failure(step: list[str]) -> str | None:
    """Run one install command; None if it succeeded, else why it failed (the error, or
    the last two lines it printed)."""
    try:
        done = subprocess.run(step, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        return " ".join((done.stderr or done.stdout).strip().splitlines()[-2:])
    return None
