"""Smoke run of the benchmark harness (``python -m bench --quick``): tiny sizes, seconds.

It keeps the harness working; it measures nothing worth reading. PyIceberg, the peer the
harness compares against, is in the ``test`` extra, so this run is never skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# Slow: a whole quick benchmark run (scripts/test --quick leaves it out).
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench import report  # noqa: E402
from deadlines import HANG_S  # noqa: E402

#: The DuckLake peer's venv of this checkout: used when a full run has built it.
DUCKLAKE_VENV = os.path.join(ROOT, ".bench-venv-ducklake")
#: The sqlglotc install of the "parsing" section: likewise.
SQLGLOTC_OVERLAY = os.path.join(ROOT, ".bench-sqlglotc")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):  # type: ignore[no-untyped-def]
    """One ``python -m bench --quick`` run for the module's tests: (the run, its JSON
    results, its work directory)."""
    # In a process of its own, as it is run: in a pytest-xdist worker that has run the
    # SQLAlchemy tests first, PyIceberg's SqlCatalog fails in SQLAlchemy ("FROM
    # expression ... expected, got IcebergTables"): state those tests leave in the process.
    # Here, not at the module's top: every xdist worker collects the module and one runs
    # it (these imports took ~0.9 s of CPU per collecting process). Fail, never skip,
    # when the peer or the harness does not import.
    import bench.__main__  # noqa: F401
    import pyiceberg.catalog.sql  # noqa: F401

    tmp_path = tmp_path_factory.mktemp("bench")
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--quiet", "--workdir", str(tmp_path / "work"),
         "--out", str(out), "--only", "suite,cold_start,concurrency,data,queries,history,commits,appends,rest,ducklake,everyday,s3,parsing,scale",
         "--ducklake-venv", DUCKLAKE_VENV, "--sqlglotc-overlay", SQLGLOTC_OVERLAY],
        cwd=ROOT, capture_output=True, text=True, timeout=HANG_S,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    return run, json.loads((out / "latest-quick.json").read_text()), tmp_path / "work"


def test_quick_run_prints_tables_and_writes_json(quick_run) -> None:  # type: ignore[no-untyped-def]
    run, results, work = quick_run
    printed = run.stdout
    for heading in ("## Side by side", "## Storage calls", "## Cold start", "## Concurrent writers",
                    "## Tables with data", "## SQL over table data", "## History at 300 versions",
                    "## Reads after many one-row commits", "## One-row appends", "## Iceberg REST catalog", "## DuckLake",
                    "## Object storage requests per commit", "## Parsing", "## Scale"):
        assert heading in printed
    suite = results["suite"]
    create = next(v for k, v in suite.items() if k.startswith("create table"))
    for side in ("trinitylake", "pyiceberg"):
        assert create["sides"][side]["median_seconds"] > 0
    calls = create["sides"]["trinitylake"]["calls"]
    assert calls["exclusive_creates"] == 1  # one root per commit
    assert all(s["failures"] == 0 for k, s in results["concurrency"].items() if k != "targets")
    assert results["scale"][0]["tables"] == 300
    rest = results["rest"]  # issue 35: RestCatalog through the server vs in process
    assert len(rest["sides"]) == 3
    assert all(s["load_table_ms"] > 0 and s["append_ms"] > 0 for s in rest["sides"].values())
    cold = results["cold_start"]
    assert cold["trinitylake-dbapi"]["target_s"] == 0.3 and cold["trinitylake-dbapi-select"]["target_s"] == 1.0
    assert "pandas" not in cold["trinitylake-dbapi-select"]["heavy"]
    assert not {"pyiceberg", "duckdb", "sqlglot"} & set(cold["trinitylake-dbapi"]["heavy"])  # sql.plain PS4
    # the trinitylake command runs the same statements (its own rows, no target, no open phase)
    command, command_select = cold["trinitylake-command"], cold["trinitylake-command-select"]
    assert "target_s" not in command and command["open_s"] is None
    assert not {"pyiceberg", "duckdb", "sqlglot"} & set(command["heavy"])
    assert {"pyiceberg", "duckdb"} <= set(command_select["heavy"]) and "pandas" not in command_select["heavy"]
    history = results["history"]
    assert history["versions"] == 300 and {t["key"] for t in history["targets"]} == {
        "show_versions_ms", "version_at_sql_ms", "open_ms"}
    assert 0 < history["reads"]["at_api"] <= 12  # bisection over 300 versions: ~log2(300) roots
    assert results["data"]["rows_in_table"] == 3 * 1_000  # warm-up and two appends, both sides
    assert all(s["median_seconds"]["trinitylake"] > 0 for s in results["data"]["operations"].values())
    assert all(t > 0 for w in ("aggregate", "insert") for t in results["queries"][w]["median_seconds"].values())
    ducklake = results["ducklake"]
    if "skipped" in ducklake:  # a smoke run never builds the peer's venv
        assert not os.path.exists(os.path.join(DUCKLAKE_VENV, "bin", "python")) or "not built" in ducklake["skipped"]
        assert "DuckLake not measured: its venv" in printed
    else:
        assert all(s["sides"]["ducklake"]["median_seconds"] > 0 for s in ducklake["catalog"].values())
        assert all(s["speedup"] > 0 for s in ducklake["data"]["operations"].values())
    everyday = results["everyday"]  # issue 34's workloads vs DuckLake: the same venv
    if "skipped" in everyday:
        assert "skipped" in ducklake and "Not measured: its venv" in printed
    else:
        assert len(everyday["workloads"]) == 8 and len(everyday["targets"]) == 8
        assert all(w["speedup"] > 0 for w in everyday["workloads"].values())
    s3 = results["s3"]
    if "skipped" in s3:  # moto or s3fs missing (both are in the test extra)
        s3 = {"targets": [], "operations": {"table.append, one row (PyIceberg catalog)": {"steady": {"by_kind": {"PUT": 4}}}}}
    assert {t["name"] for t in s3["targets"]} == {f"S3 requests: {label}" for label in s3["operations"]}
    assert all(isinstance(t["met"], bool) and t["measured"].endswith("requests (median)") for t in s3["targets"])
    append = s3["operations"]["table.append, one row (PyIceberg catalog)"]["steady"]
    assert append["by_kind"].get("PUT", 0) >= 4  # data, manifest, manifest list, root (at least)
    parsing = results["parsing"]
    assert all(e["sqlglot"] > 0 for kind in ("dbapi", "parse") for e in parsing["work"][kind].values())
    if "skipped" in parsing:  # a smoke run never installs sqlglotc
        assert "sqlglotc is not installed" in parsing["skipped"] and "sqlglotc not measured" in printed
    else:
        assert parsing["targets"][0]["name"].startswith("sqlglotc is a clean win")
        assert all(e["ratio"] > 0 for e in parsing["work"]["tokenize"].values())
    assert not any(work.iterdir()), "the run's lakehouses were not removed"


def test_quick_run_ends_with_every_measured_target(quick_run) -> None:  # type: ignore[no-untyped-def]
    """The Markdown ends with one "Targets" table: a row per target the run measured
    (each section's "targets" rows), each with its goal, measure and verdict."""
    run, results, _ = quick_run
    printed = run.stdout
    assert printed.count("## Targets") == 1
    table = printed[printed.index("## Targets"):]
    assert "\n## " not in table, "the Targets table is not the last section"
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| section")]
    expected = [(section, t) for section, value in results.items()
                if isinstance(value, dict) and isinstance(value.get("targets"), list) for t in value["targets"]]
    assert len(rows) == len(expected)
    for line, (section, t) in zip(rows, expected):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[:4] == [section, t["name"], t["target"], report.cell(t["measured"])]
        assert cells[4] == ("met" if t["met"] else "**MISSED**")
    by_section = {section for section, _ in expected}
    # What a quick run measures with a target: the SQL side vs PyIceberg (create,
    # describe, exists, drop; its namespaces are too small for "list 1,000"), the cold
    # starts, 4 writers vs one, history; DuckLake's only when its venv exists.
    assert {"suite", "cold_start", "concurrency", "history", "commits", "appends"} <= by_section
    suite_names = [t["name"] for t in results["suite"]["targets"]]
    assert len(suite_names) == 4 and all(n.endswith("SQL vs PyIceberg SqlCatalog") for n in suite_names)
    assert len(results["concurrency"]["targets"]) == 1 and len(results["history"]["targets"]) == 3
    assert len(results["commits"]["targets"]) == 5  # lookup and count after 5 commits vs 1 (and after OPTIMIZE), cache size
    assert len(results["appends"]["targets"]) == 2  # one-row appends vs SqlCatalog: catalog API, SQL
    assert len(results["cold_start"]["targets"]) == 2
    if "skipped" not in results["s3"]:
        assert len(results["s3"]["targets"]) == 5
    if "skipped" in results["ducklake"]:
        assert "Not measured: ducklake" in table
    else:
        assert "ducklake" in by_section
