"""Issue 21's targets, each judged where it is measured, all gathered into one table.

Every section that judges a target puts it in its results as
``results[section]["targets"]``: a list of rows of one shape,

    {"name": str, "target": str, "measured": str, "met": bool}

(``target`` and ``measured`` are the text the summary prints, e.g. ">= 3x" and
"2.41x"; ``measured`` may also be a number, printed as it is). A row exists only for a
target the run measured: a size the run did not reach, or a side it did not run, gives
no row (the summary says which sections were skipped and why). :func:`collect` reads the
rows of every section, whichever module made them, for ``report.render``'s "Targets"
table; this module also makes the rows of the sections measured before issue 21 gave
them targets (suite, last_of_many, concurrency, ducklake), from their results.

Invariants: a row's ``met`` is computed from the same median ratio its ``measured``
prints; the suite's and last_of_many's targets judge the SQL side (the DB-API driver),
never the catalog API.
"""

from __future__ import annotations

from typing import Any, Iterable

from .timing import median

#: Issue 21, vs PyIceberg SqlCatalog through SQL (both writing Iceberg metadata):
#: workload label prefix -> minimum speedup of the judged side (SUITE_SIDE). The create
#: target holds at 2,000 tables (suite) and at 20,000 (last_of_many, --full).
SUITE_TARGETS = {
    "create table": 3.0,
    "describe": 10.0,
    "list tables of a namespace of 1,000": 20.0,
    "table exists": 10.0,
    "drop table": 3.0,
}
#: The side the suite's targets judge: SQL through the DB-API driver.
SUITE_SIDE = "trinitylake-dbapi"
SUITE_PEER = "pyiceberg"

#: Issue 21 vs DuckLake: every catalog workload at 1,000 tables ("" prefixes every label).
DUCKLAKE_TARGETS = {"": 10.0}
#: ... and the data workloads: at least as fast.
DUCKLAKE_DATA_TARGETS = {"INSERT": 1.0, "aggregate over": 1.0}
#: Issue 34 vs DuckLake at its defaults (bench/everyday.py): every workload of the
#: issue's table at least as fast.
EVERYDAY_MIN = 1.0
#: A time-travel read costs at most this much of reading the latest version.
TIME_TRAVEL_MAX = 1.2

#: Issue 21: this many writer processes reach at least CONCURRENCY_MIN of one writer's
#: commits per second, with no failure.
CONCURRENCY_WRITERS = 4
CONCURRENCY_MIN = 0.9


def row(name: str, target: str, measured: Any, met: bool) -> dict:
    """One target row (the shape of the module docstring)."""
    return {"name": name, "target": target, "measured": measured, "met": bool(met)}


def at_least(name: str, value: float, minimum: float, unit: str = "x") -> dict:
    """A row for "``value`` >= ``minimum``" (ratios: ``unit`` "x")."""
    return row(name, f">= {minimum:g}{unit}", f"{value:.2f}{unit}", value >= minimum)


def at_most(name: str, value: float, maximum: float, unit: str = "", digits: int = 2) -> dict:
    """A row for "``value`` <= ``maximum``"."""
    return row(name, f"<= {maximum:g}{unit}", f"{value:.{digits}f}{unit}", value <= maximum)


def target_for(label: str, targets: dict[str, float]) -> float | None:
    """The minimum of the first prefix of ``targets`` that ``label`` starts with."""
    for prefix, value in targets.items():
        if label.startswith(prefix):
            return value
    return None


def workloads(results: dict) -> Iterable[tuple[str, dict]]:
    """The (label, entry) pairs of a side-by-side section (run_suite's shape), without
    its "targets" list."""
    return ((label, entry) for label, entry in results.items() if isinstance(entry, dict) and "sides" in entry)


def speedup(entry: dict, side: str, peer: str) -> float | None:
    """Peer time / ``side`` time per repetition, median; None if either side is missing."""
    sides = entry["sides"]
    if side not in sides or peer not in sides:
        return None
    ratios = [b / a for a, b in zip(sides[side]["seconds"], sides[peer]["seconds"]) if a > 0]
    return median(ratios) if ratios else None


def side_by_side(results: dict, *, side: str, peer: str, targets: dict[str, float], what: str) -> list[dict]:
    """A row per workload of ``results`` that has a target and both sides measured:
    ``what`` names the comparison ("SQL vs PyIceberg SqlCatalog")."""
    rows = []
    for label, entry in workloads(results):
        minimum = target_for(label, targets)
        value = speedup(entry, side, peer)
        if minimum is not None and value is not None:
            rows.append(at_least(f"{label}, {what}", value, minimum))
    return rows


def suite(results: dict) -> list[dict]:
    """The suite's (and last_of_many's) targets: the SQL side vs PyIceberg."""
    return side_by_side(results, side=SUITE_SIDE, peer=SUITE_PEER, targets=SUITE_TARGETS,
                        what="SQL vs PyIceberg SqlCatalog")  # fmt: skip


def commits_ratio(summary: dict, writers: Any) -> float | None:
    """``writers`` processes' commits/s over one writer's, per repetition, median."""
    one = summary.get(1) or summary.get("1")
    many = summary.get(writers) or summary.get(str(writers))
    if not one or not many:
        return None
    return median(m["commits_per_s"] / o["commits_per_s"] for m, o in zip(many["runs"], one["runs"]))


def concurrency(summary: dict) -> list[dict]:
    """4 writers >= 90 % of one writer's commits/s, and not one failure in the section."""
    ratio = commits_ratio(summary, CONCURRENCY_WRITERS)
    if ratio is None:
        return []
    failures = sum(s["failures"] for k, s in summary.items() if k != "targets")
    return [row(f"{CONCURRENCY_WRITERS} writer processes: commits/s vs 1 writer, failures",
                f">= {CONCURRENCY_MIN:g}, 0 failures", f"{ratio:.2f}, {failures} failures",
                ratio >= CONCURRENCY_MIN and failures == 0)]  # fmt: skip


def ducklake(summary: dict) -> list[dict]:
    """Every catalog workload >= 10x DuckLake, INSERT and the aggregate >= 1x, a
    time-travel read <= 1.2 x the latest read."""
    if "skipped" in summary:
        return []
    rows = side_by_side(summary["catalog"], side=SUITE_SIDE, peer="ducklake", targets=DUCKLAKE_TARGETS,
                        what="SQL vs DuckLake")  # fmt: skip
    data = summary["data"]
    for op, s in data["operations"].items():
        minimum = target_for(op, DUCKLAKE_DATA_TARGETS)
        if minimum is not None:
            rows.append(at_least(f"{op}, vs DuckLake", s["speedup"], minimum))
    travel = data["time_travel_vs_latest"].get(SUITE_SIDE)
    if travel is not None:
        rows.append(at_most("time-travel read / latest read", travel, TIME_TRAVEL_MAX, "x"))
    return rows


def collect(results: dict, order: Iterable[str]) -> tuple[list[tuple[str, dict]], dict[str, str]]:
    """Every section's target rows, sections in ``order`` first (then any other), as
    (section, row); and the sections skipped with their reasons."""
    names = [s for s in order if s in results] + [s for s in results if s not in order]
    rows: list[tuple[str, dict]] = []
    skipped: dict[str, str] = {}
    for section in names:
        value = results.get(section)
        if not isinstance(value, dict):
            continue
        found = value.get("targets")
        if isinstance(found, list):
            rows += [(section, r) for r in found if isinstance(r, dict) and "name" in r]
        elif isinstance(value.get("skipped"), str):
            skipped[section] = value["skipped"]
    return rows, skipped


def everyday(summary: dict) -> list[dict]:
    """Issue 34: each of its workloads (bench/everyday.py) >= EVERYDAY_MIN x DuckLake."""
    if "skipped" in summary:
        return []
    return [at_least(f"{label}, vs DuckLake", w["speedup"], EVERYDAY_MIN) for label, w in summary["workloads"].items()]
