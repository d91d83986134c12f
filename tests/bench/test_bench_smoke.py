"""Smoke run of the benchmark harness (``python -m bench --quick``): tiny sizes, seconds.

It keeps the harness working; it measures nothing worth reading. PyIceberg, the peer the
harness compares against, is in the ``test`` extra, so this run is never skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyiceberg.catalog.sql  # noqa: F401  (fail, never skip, when the peer is missing)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import bench.__main__  # noqa: E402, F401  (fail at collection when the harness does not import)

#: The DuckLake peer's venv of this checkout: used when a full run has built it.
DUCKLAKE_VENV = os.path.join(ROOT, ".bench-venv-ducklake")


def test_quick_run_prints_tables_and_writes_json(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # In a process of its own, as it is run: in a pytest-xdist worker that has run the
    # SQLAlchemy tests first, PyIceberg's SqlCatalog fails in SQLAlchemy ("FROM
    # expression ... expected, got IcebergTables"): state those tests leave in the process.
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--quiet", "--workdir", str(tmp_path / "work"),
         "--out", str(out), "--only", "suite,cold_start,concurrency,data,queries,history,ducklake,s3,scale",
         "--ducklake-venv", DUCKLAKE_VENV],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    printed = run.stdout
    for heading in ("## Side by side", "## Storage calls", "## Cold start", "## Concurrent writers",
                    "## Tables with data", "## SQL over table data", "## History at 300 versions", "## DuckLake",
                    "## Object storage requests per commit", "## Scale"):
        assert heading in printed
    results = json.loads((out / "latest-quick.json").read_text())
    suite = results["suite"]
    create = next(v for k, v in suite.items() if k.startswith("create table"))
    for side in ("trinitylake", "pyiceberg"):
        assert create["sides"][side]["median_seconds"] > 0
    calls = create["sides"]["trinitylake"]["calls"]
    assert calls["exclusive_creates"] == 1  # one root per commit
    assert all(s["failures"] == 0 for s in results["concurrency"].values())
    assert results["scale"][0]["tables"] == 300
    cold = results["cold_start"]
    assert cold["trinitylake-dbapi"]["target_s"] == 0.3 and cold["trinitylake-dbapi-select"]["target_s"] == 1.0
    assert "pandas" not in cold["trinitylake-dbapi-select"]["heavy"]
    assert "pyiceberg" not in cold["trinitylake-dbapi"]["heavy"] and "duckdb" not in cold["trinitylake-dbapi"]["heavy"]
    history = results["history"]
    assert history["versions"] == 300 and set(history["targets"]) == {"show_versions_ms", "version_at_sql_ms", "open_ms"}
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
    s3 = results["s3"]
    if "skipped" in s3:  # moto or s3fs missing (both are in the test extra)
        s3 = {"targets": [], "operations": {"table.append, one row (PyIceberg catalog)": {"steady": {"by_kind": {"PUT": 4}}}}}
    assert {t["name"] for t in s3["targets"]} == {f"S3 requests: {label}" for label in s3["operations"]}
    assert all(isinstance(t["met"], bool) and t["measured"] > 0 for t in s3["targets"])
    append = s3["operations"]["table.append, one row (PyIceberg catalog)"]["steady"]
    assert append["by_kind"].get("PUT", 0) >= 4  # data, manifest, manifest list, root (at least)
    assert not any((tmp_path / "work").iterdir()), "the run's lakehouses were not removed"
