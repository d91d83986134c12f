"""No test can fail because the machine is slow (tests/deadlines.py DL1-DL3).

Read from the tests' source (ast): a numeric timeout of one second or more is a deadline
and must be ``HANG_S`` (a shorter one is a poll interval; a wait that is followed by a
kill says so with "not a deadline" on its line); no assert compares a clock's reading;
and Hypothesis runs without its wall-clock deadline and too_slow health check.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from hypothesis import HealthCheck, settings

from deadlines import HANG_S

TESTS = Path(__file__).resolve().parent
CLOCKS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns", "time_ns"}


#: What a module's text must hold for each scan below to find anything in it: a numeric
#: timeout (``timeout=``, or a number as the first argument of wait, join or get), and
#: a call of ``time.<clock>``.
TIMEOUT_TEXT = re.compile(r"timeout|\.(?:wait|join|get)\(\s*[(\s]*[0-9.]")
CLOCK_TEXT = re.compile(r"\btime\.")


@functools.lru_cache(maxsize=None)
def _texts() -> list[tuple[Path, str]]:
    return [(path, path.read_text(encoding="utf-8")) for path in sorted(TESTS.rglob("*.py"))]


@functools.lru_cache(maxsize=None)
def _parsed(path: Path) -> tuple[ast.Module, list[str]]:
    text = path.read_text(encoding="utf-8")
    return ast.parse(text), text.splitlines()


def _sources(must_hold: re.Pattern[str]) -> list[tuple[Path, ast.Module, list[str]]]:
    """The test modules whose text matches ``must_hold``, each parsed once per process.
    (Parsing and walking all ~210 took ~1.5 s of CPU; a third of them can hold what a
    scan looks for.)"""
    return [(path, *_parsed(path)) for path, text in _texts() if must_hold.search(text)]


def _reads_a_clock(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in CLOCKS
        and isinstance(n.func.value, ast.Name) and n.func.value.id == "time"
        for n in ast.walk(node)
    )  # fmt: skip


def test_every_timeout_is_a_hang_catcher() -> None:
    found = []
    for path, tree, lines in _sources(TIMEOUT_TEXT):
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            values = [k.value for k in node.keywords if k.arg == "timeout"]
            name = node.func.attr if isinstance(node.func, ast.Attribute) else ""
            if name in {"wait", "join", "get"} and node.args and not node.keywords:
                values.append(node.args[0])
            for value in values:
                if (isinstance(value, ast.Constant) and isinstance(value.value, (int, float))
                        and value.value >= 1 and "not a deadline" not in lines[node.lineno - 1]):
                    found.append(f"{path.relative_to(TESTS)}:{node.lineno}: timeout {value.value}")
    assert not found, "use deadlines.HANG_S:\n" + "\n".join(found)


def test_no_assertion_compares_elapsed_time() -> None:
    found = [
        f"{path.relative_to(TESTS)}:{node.lineno}"
        for path, tree, _ in _sources(CLOCK_TEXT)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assert) and _reads_a_clock(node.test)
    ]
    assert not found, "an assertion on elapsed time:\n" + "\n".join(found)


def test_hypothesis_has_no_wall_clock_limits() -> None:
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check
    assert HANG_S >= 1800
