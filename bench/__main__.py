"""``python -m bench [--quick | --full]``: run the benchmarks, print Markdown, write JSON.

Modes:
  --quick   tiny sizes, one repetition: keeps the harness working (seconds; the Spark
            section adds a session start, 10 s to a minute on a busy host).
  default   the catalog workloads at 2,000 tables, cold start, concurrency, scale to 10,000,
            history at 50,000 versions (built once, then reused from --history-cache),
            table data through Spark (1,000,000 rows; only with pyspark), requests per
            commit on moto S3 (the "s3" section; needs moto and s3fs), reads after 1,000
            one-row commits vs after 1 (the "commits" section, issue 34), 1,000 one-row appends
            vs SqlCatalog's (the "appends" section), load_table and a one-row append
            through the Iceberg REST server vs in process (the "rest" section, issue 35),
            an upsert of 10,000 rows into 1,000,000 (the "upsert" section, issue 36: MERGE vs
            PyIceberg's upsert, and DuckLake's MERGE when its venv is built),
            issue 34's workloads vs DuckLake (the "everyday" section: 300 one-row
            commits, reads after them, DML over 1,000,000 rows; needs the DuckLake venv).
  --full    also "create table, last 1,000 of 20,000", the 100,000 / 1,000,000 scale points,
            and reads after 10,000 one-row commits.

The Markdown ends with a "Targets" table: every issue 21 target the run measured, from
the "targets" rows each section puts in its results (bench/targets.py), met or MISSED.

The "ducklake" section runs DuckLake (duckdb 1.5.5) in a venv of its own, built on first
use (``--ducklake-venv``); a --quick run uses it only if it is already built. The
"parsing" section (sqlglot vs its compiled build sqlglotc) installs sqlglotc of the venv's
sqlglot version into a directory of its own (``--sqlglotc-overlay``) the same way.

Each run works in a fresh directory under --workdir and removes it at the end (after
every measurement: deleting many files slows file creation on this disk for minutes).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import sys
import time
import uuid

from . import report, targets
from .suite import SuiteSizes

#: DuckLake's catalog workloads (bench/ducklake.py): at 1,000 tables in one namespace
#: (issue 21's size); small counts, as DuckLake takes 0.3-0.7 s per commit at that size.
DUCKLAKE_SUITE = {"tables": 1000, "creates": 100, "namespaces": 10, "describes": 200, "columns": 20,
                  "list_repeats": 5, "exists": 200, "drops": 100, "chunks": 10}

MODES = {
    "quick": {
        "reps": 1,
        "suite": SuiteSizes(namespaces=4, big=12, small_namespaces=2, small=4, describes=20,
                            exists=20, drops=5, list_repeats=2, chunks=2),
        "last_of_many": None,
        "cold_reps": 1,
        "cold_warm": False,  # no unmeasured first run of the cold-start children
        "cold_tables": 10,
        "concurrency": {"writers": [1, 4], "commits": 5, "reps": 1},
        "scale": {"points": [300], "batch": 100, "per_namespace": 200, "describes": 50,
                  "cold_describes": 3, "commits": 5},
        "data": {"rows": 1_000, "reps": 2},
        "queries": {"rows": 20_000, "insert_rows": 1_000, "reps": 2},
        "ducklake": {"suite": {"tables": 8, "creates": 4, "namespaces": 2, "describes": 6, "columns": 2,
                               "list_repeats": 2, "exists": 6, "drops": 3, "chunks": 2},
                     "data": {"rows": 20_000, "insert_rows": 1_000, "reps": 2}, "fsync_commits": 1},
        "history": {"versions": 300, "trials": 5},
        "commits": {"counts": [1, 5], "reps": 1, "lookups": 3},
        "appends": {"commits": 10, "chunks": 2},
        "everyday": {"commits": 10, "rows": 20_000, "reps": 1, "queries": 3, "chunks": 2},
        "upsert": {"rows": 20_000, "upsert_rows": 1_000, "reps": 1},
        "rest": {"reps": 2},
        "spark": {"rows": 2_000, "reps": 1},
        "s3": {"ops": 1, "warmup": 1},
        "parsing": {"iterations": 2, "data_rows": 1_000, "reps": 2, "cold_reps": 1, "cold_warm": False},
        "keys": {"rows": 20_000, "insert_rows": 1_000, "reps": 2},
    },
    "default": {
        "reps": 3,
        "suite": SuiteSizes(),
        "last_of_many": None,
        "cold_reps": 3,
        "cold_tables": 100,
        "concurrency": {"writers": [1, 2, 4], "commits": 150, "reps": 3},
        "scale": {"points": [1_000, 10_000], "batch": 5_000, "per_namespace": 10_000,
                  "describes": 2_000, "cold_describes": 20, "commits": 100},
        "data": {"rows": 10_000, "reps": 15},
        "queries": {"rows": 1_000_000, "insert_rows": 10_000, "reps": 15},
        "ducklake": {"suite": DUCKLAKE_SUITE, "data": {"rows": 1_000_000, "insert_rows": 10_000, "reps": 15},
                     "fsync_commits": 20},
        "history": {"versions": 50_000, "trials": 25},
        "commits": {"counts": [1, 1_000], "reps": 5, "lookups": 20},
        "appends": {"commits": 1_000, "chunks": 10},
        "everyday": {"commits": 300, "rows": 1_000_000, "reps": 3, "queries": 10, "chunks": 10},
        "upsert": {"rows": 1_000_000, "upsert_rows": 10_000, "reps": 3},
        "rest": {"reps": 30},
        "spark": {"rows": 1_000_000, "reps": 5},
        "s3": {"ops": 20, "warmup": 5},
        "parsing": {"iterations": 20, "data_rows": 10_000, "reps": 15, "cold_reps": 9},
        "keys": {"rows": 1_000_000, "insert_rows": 10_000, "reps": 5},
    },
    "full": {
        "reps": 3,
        "suite": SuiteSizes(),
        "last_of_many": {"total": 20_000, "last": 1_000, "per_namespace": 1_000},
        "cold_reps": 3,
        "cold_tables": 100,
        "concurrency": {"writers": [1, 2, 4], "commits": 300, "reps": 3},
        "scale": {"points": [1_000, 100_000, 1_000_000], "batch": 10_000, "per_namespace": 10_000,
                  "describes": 2_000, "cold_describes": 20, "commits": 100},
        "data": {"rows": 10_000, "reps": 31},
        "queries": {"rows": 1_000_000, "insert_rows": 10_000, "reps": 31},
        "ducklake": {"suite": DUCKLAKE_SUITE, "data": {"rows": 1_000_000, "insert_rows": 10_000, "reps": 31},
                     "fsync_commits": 20},
        "history": {"versions": 50_000, "trials": 51},
        "commits": {"counts": [1, 10_000], "reps": 5, "lookups": 20},
        "appends": {"commits": 1_000, "chunks": 10},
        "everyday": {"commits": 300, "rows": 1_000_000, "reps": 3, "queries": 10, "chunks": 10},
        "upsert": {"rows": 1_000_000, "upsert_rows": 10_000, "reps": 3},
        "rest": {"reps": 30},
        "spark": {"rows": 1_000_000, "reps": 9},
        "s3": {"ops": 20, "warmup": 5},
        "parsing": {"iterations": 20, "data_rows": 10_000, "reps": 31, "cold_reps": 9},
        "keys": {"rows": 1_000_000, "insert_rows": 10_000, "reps": 9},
    },
}

SECTIONS = ("suite", "last_of_many", "cold_start", "concurrency", "data", "queries", "history", "commits", "appends",
            "rest", "ducklake", "everyday", "upsert",
            "spark", "s3", "parsing", "scale", "keys")


def host_summary() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        if names:
            cpu = f"{names[0]} x{len(names)}"
    except OSError:
        pass
    import pyarrow

    versions = [f"Python {platform.python_version()}", f"pyarrow {pyarrow.__version__}"]
    try:
        import pyiceberg

        versions.append(f"pyiceberg {pyiceberg.__version__}")
    except ImportError:
        pass
    return f"{platform.system()} {platform.release()}, {cpu}, " + ", ".join(versions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="tiny sizes (smoke run)")
    size.add_argument("--full", action="store_true", help="add the 20,000 and 1,000,000 table points")
    parser.add_argument("--only", default="", help=f"comma-separated sections: {', '.join(SECTIONS)}")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 3; quick 1)")
    parser.add_argument("--scale-points", default="", help="comma-separated table counts for 'scale'")
    parser.add_argument("--workdir", default=".bench-out/work", help="where lakehouses are created")
    parser.add_argument("--out", default=".bench-out", help="where the JSON and Markdown go")
    parser.add_argument("--keep", action="store_true", help="keep the lakehouses after the run")
    parser.add_argument("--history-cache", default=None,
                        help="where the history section keeps its built lakehouse (default: <out>/history-cache; "
                             "'none' builds it in the run's directory)")
    parser.add_argument("--no-dbapi", action="store_true", help="skip the DB-API side")
    parser.add_argument("--ducklake-venv", default=".bench-venv-ducklake",
                        help="the venv of the DuckLake peer (built on first use, not by --quick)")
    parser.add_argument("--sqlglotc-overlay", default=".bench-sqlglotc",
                        help="where the 'parsing' section installs sqlglotc (pip --target; built on first use, "
                             "not by --quick)")
    parser.add_argument("--commits", type=int, default=None,
                        help="'commits': the table of many one-row commits has this many (default 1,000; --full 10,000)")
    parser.add_argument("--appends", type=int, default=None,
                        help="'appends': this many one-row commits per side (default 1,000)")
    parser.add_argument("--appends-without", default="",
                        help="'appends': comma-separated sides left out (e.g. pyiceberg-fsync, which doubles a "
                             "1,000-commit run)")
    parser.add_argument("--auto-compact", type=int, default=None,
                        help="'commits': create its tables with compaction.auto.min-small-files = N")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)

    mode = "quick" if args.quick else "full" if args.full else "default"
    config = MODES[mode]
    reps = args.reps or config["reps"]
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {', '.join(SECTIONS)}")
    sections = [s for s in SECTIONS if not only or s in only]

    def log(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    from .sides import dbapi_available

    why_not = None if args.no_dbapi else dbapi_available()
    with_dbapi = not args.no_dbapi and why_not is None
    if why_not:
        log(f"DB-API side skipped: {why_not}")

    workdir = os.path.join(args.workdir, f"run-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}")
    os.makedirs(workdir)
    results: dict = {
        "mode": mode,
        "reps": reps,
        "host": {"summary": host_summary(), "when": datetime.datetime.now().isoformat(timespec="seconds")},
        "dbapi": with_dbapi,
        "dbapi_skipped_because": why_not,
    }
    started = time.perf_counter()
    try:
        if "suite" in sections:
            from .suite import run_suite

            log(f"suite: {config['suite']}")
            results["suite"] = run_suite(workdir, config["suite"], reps, with_dbapi, log)
            results["suite"]["targets"] = targets.suite(results["suite"])
        if "last_of_many" in sections and config["last_of_many"]:
            from .suite import last_of_many

            c = config["last_of_many"]
            label = f"create table, last {c['last']:,} of {c['total']:,} tables"
            log(label)
            results["last_of_many"] = {label: last_of_many(workdir, c["total"], c["last"], c["per_namespace"],
                                                           reps, 10, log, with_dbapi=with_dbapi)}  # fmt: skip
            results["last_of_many"]["targets"] = targets.suite(results["last_of_many"])
        if "cold_start" in sections:
            results["cold_start"] = _cold_start(workdir, config, with_dbapi, log)
        if "concurrency" in sections:
            from .concurrency import concurrency

            c = config["concurrency"]
            log(f"concurrency: {c}")
            results["concurrency"] = concurrency(workdir, c["writers"], c["commits"],
                                                 args.reps or c["reps"], log)
        if "data" in sections:
            from .data import data

            c = config["data"]
            log(f"data: {c}")
            results["data"] = data(workdir, c["rows"], args.reps or c["reps"], log)
        if "queries" in sections and with_dbapi:
            from .queries import queries

            c = config["queries"]
            log(f"queries: {c}")
            results["queries"] = queries(workdir, c["rows"], c["insert_rows"], args.reps or c["reps"], log)
        if "history" in sections:
            from .history import history

            c = config["history"]
            cache = args.history_cache or os.path.join(args.out, "history-cache")
            results["history"] = history(workdir, c["versions"], args.reps or c["trials"], log,
                                         cache=None if cache == "none" else cache)
        if "commits" in sections and with_dbapi:
            from .commits import commits

            c = dict(config["commits"])
            if args.commits:
                c["counts"] = [c["counts"][0], args.commits]
            log(f"commits: {c}")
            results["commits"] = commits(workdir, c["counts"], args.reps or c["reps"], c["lookups"], log,
                                         auto_compact=args.auto_compact)  # fmt: skip
        if "appends" in sections and with_dbapi:
            from .appends import appends

            c = dict(config["appends"])
            if args.appends:
                c["commits"] = args.appends
            log(f"appends: {c}")
            without = tuple(s.strip() for s in args.appends_without.split(",") if s.strip())
            results["appends"] = appends(workdir, c["commits"], args.reps or config["reps"], c["chunks"], log, without)
        if "rest" in sections:
            from .rest import rest

            c = config["rest"]
            log(f"rest: {c}")
            results["rest"] = rest(os.path.join(workdir, "rest"), args.reps or c["reps"], log)
        if "ducklake" in sections:
            if with_dbapi:
                from .ducklake import ducklake

                c = config["ducklake"]
                results["ducklake"] = ducklake(workdir, c, args.reps or config["reps"], args.reps or c["data"]["reps"],
                                               args.ducklake_venv, mode != "quick", log)  # fmt: skip
            else:
                results["ducklake"] = {"skipped": "the DB-API side does not run (DuckLake is compared through SQL)"}
        if "everyday" in sections:
            results["everyday"] = _everyday(workdir, config["everyday"], args, mode, with_dbapi, log)
        if "upsert" in sections and with_dbapi:
            results["upsert"] = _upsert(workdir, config["upsert"], args, mode, log)
        if "spark" in sections:
            from .spark import spark

            c = config["spark"]
            log(f"spark: {c}")
            results["spark"] = spark(workdir, c["rows"], args.reps or c["reps"], log)
        if "s3" in sections:
            from .s3 import s3

            c = config["s3"]
            log(f"s3: {c}")
            results["s3"] = s3(workdir, c["ops"], c["warmup"], log)
        if "parsing" in sections:
            if with_dbapi:
                from .parsing import parsing

                c = dict(config["parsing"])
                log(f"parsing: {c}")
                results["parsing"] = parsing(workdir, c, args.reps or c["reps"], args.sqlglotc_overlay,
                                             mode != "quick", log)
            else:
                results["parsing"] = {"skipped": "the DB-API side does not run (the statements go through it)"}
        if "keys" in sections and with_dbapi:
            from .keys import keys

            c = config["keys"]
            log(f"keys: {c}")
            results["keys"] = keys(workdir, c["rows"], c["insert_rows"], args.reps or c["reps"], log)
        if "scale" in sections:
            from .scale import scale

            c = dict(config["scale"])
            if args.scale_points:
                c["points"] = [int(p.replace("_", "")) for p in args.scale_points.split(",")]
            results["scale"] = scale(workdir, c.pop("points"), log=log, **c)
    finally:
        results["seconds"] = time.perf_counter() - started
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    markdown = report.render(results)
    print(markdown)
    os.makedirs(args.out, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for name in (f"bench-{mode}-{stamp}", f"latest-{mode}"):
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            json.dump(results, f, indent=1, default=str)
        with open(os.path.join(args.out, name + ".md"), "w") as f:
            f.write(markdown + "\n")
    log(f"wrote {args.out}/bench-{mode}-{stamp}.json ({results['seconds']:.0f} s)")
    return 0


def _upsert(workdir: str, c: dict, args: argparse.Namespace, mode: str, log) -> dict:  # type: ignore[no-untyped-def]
    """Issue 36's upsert: MERGE vs PyIceberg's upsert (and DuckLake's MERGE when its venv is built)."""
    from .ducklake import venv_python
    from .upsert import upsert

    python, why = venv_python(args.ducklake_venv, build=False, log=log)
    if why is not None:
        log(f"upsert: DuckLake left out: {why}")
    log(f"upsert: {c}")
    return upsert(workdir, python, c["rows"], c["upsert_rows"], args.reps or c["reps"], log)


def _everyday(workdir: str, c: dict, args: argparse.Namespace, mode: str, with_dbapi: bool, log) -> dict:  # type: ignore[no-untyped-def]
    """Issue 34's workloads vs DuckLake (bench/everyday.py), or why they were skipped."""
    if not with_dbapi:
        return {"skipped": "the DB-API side does not run (DuckLake is compared through SQL)"}
    from .ducklake import venv_python
    from .everyday import everyday

    python, why = venv_python(args.ducklake_venv, mode != "quick", log)
    if python is None:
        return {"skipped": why}
    log(f"everyday: {c}")
    return everyday(workdir, python, c["commits"], c["rows"], args.reps or c["reps"], c["queries"], c["chunks"], log)


def _cold_start(workdir: str, config: dict, with_dbapi: bool, log) -> dict:  # type: ignore[no-untyped-def]
    """A small lakehouse per side (a namespace of ``cold_tables`` tables, 100 but in a
    quick run; on our side also a table of rows for the first SELECT), then new
    processes describe the middle one."""
    from .coldstart import add_data_table, cold_start
    from .sides import IcebergSide, TrinityLakeCatalogSide

    base = os.path.join(workdir, "cold")
    targets = {}
    makers = {"trinitylake": TrinityLakeCatalogSide, "pyiceberg": IcebergSide}
    for name, maker in makers.items():
        location = os.path.join(base, name)
        side = maker(location)
        side.create_namespace("ns")
        for i in range(config["cold_tables"]):
            side.create_table("ns", f"t{i:03d}")
        side.close()
        targets[name] = (location, "ns", f"t{config['cold_tables'] // 2:03d}")
    if not with_dbapi:
        return cold_start(targets, config["cold_reps"], log, warm=config.get("cold_warm", True))
    add_data_table(targets["trinitylake"][0], "ns", "data")
    targets = {"trinitylake-dbapi": targets["trinitylake"], **targets}
    return cold_start(targets, config["cold_reps"], log, data_table="data", warm=config.get("cold_warm", True))


if __name__ == "__main__":
    sys.exit(main())
