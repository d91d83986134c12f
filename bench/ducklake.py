"""DuckLake as a peer, side by side with the DB-API in one run (issue 21 item 1, issue 18).

DuckLake 1.0 (DuckDB's lakehouse format: the catalog in a SQL database, here a DuckDB
file; data in Parquet files) loads offline only into duckdb 1.5.5, and this project
uses duckdb 2.x. So the peer runs in a venv of its own, ``.bench-venv-ducklake/``, which
this module builds with ``python -m venv`` and pip (duckdb==1.5.5, the
duckdb-extension-ducklake wheel, pyarrow) and marks with a stamp file naming the
requirements; a later run reuses it. The peer is a long-lived worker process
(bench/lakeworker.py) per lakehouse that times each operation itself, so its numbers
hold no pipe round trips, and both sides run interleaved rep by rep like the PyIceberg
comparison. If the venv cannot be built (no package index), or a ``--quick`` run finds
it missing (a smoke run never installs packages), the section says why and has no
DuckLake numbers.

Two parts, both through SQL on both sides:

* **catalog**: each side's namespace ``ns00`` is filled with ``tables`` tables of the
  10-column schema in one transaction (untimed), then, timed and interleaved in chunks
  (bench/timing.py): CREATE SCHEMA / NAMESPACE, ``creates`` more CREATE TABLEs,
  DESCRIBE, columns from ``information_schema.columns``, SHOW TABLES, existence (ours
  ``SHOW TABLES IN ns LIKE 't'``; DuckLake's cheapest, a DESCRIBE that may fail),
  DROP TABLE; every statement its own commit (autocommit on both sides). Filling
  first measures every operation at the size, and keeps the run short: DuckLake's
  CREATE TABLE costs ~0.3-0.7 s at 1,000 tables on this host, listing 1-5 s.
* **data**: INSERT of ``insert_rows`` Python rows per commit (our ``executemany``; the
  peer builds an Arrow table from the same rows and runs one ``INSERT ... SELECT``, its
  fastest path from Python rows, conversion timed), the GROUP BY aggregate of
  bench/queries.py over ``rows`` rows created by the same ``CREATE TABLE AS SELECT`` on
  both sides, and the same aggregate read at the version before a later append (ours
  ``FOR SYSTEM_VERSION AS OF n``, DuckLake ``AT (VERSION => n)``).

Speedup = DuckLake time / our time, per repetition, median (> 1: we are faster).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

from . import lakeworker, targets
from .installs import step_failure
from .sides import CREATE_TABLE_COLUMNS_SQL, Side, TrinityLakeDbapiSide

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUIREMENTS = ("duckdb==1.5.5", "duckdb-extension-ducklake==1.5.5", "pyarrow")

#: The 10-column schema of sides.COLUMNS in DuckDB's SQL.
DUCKDB_COLUMNS_SQL = (
    "c_long BIGINT, c_str VARCHAR, c_dbl DOUBLE, c_ts TIMESTAMP, c_dec DECIMAL(10,2), "
    "c_bool BOOLEAN, c_date DATE, c_list VARCHAR[], c_map MAP(VARCHAR, INTEGER), "
    "c_struct STRUCT(a INTEGER, b VARCHAR)"
)


class WorkerError(RuntimeError):
    """The worker could not start or an operation failed in it (its message included)."""


def venv_python(path: str, build: bool, log: Callable[[str], None]) -> tuple[str | None, str | None]:
    """``(python, None)`` of the DuckLake venv at ``path``, built now if ``build`` and not
    built before; ``(None, why)`` when it is missing or cannot be built."""
    python = os.path.join(path, "bin", "python")
    stamp = os.path.join(path, ".installed-" + hashlib.sha1(" ".join(REQUIREMENTS).encode()).hexdigest()[:12])
    if os.path.exists(stamp) and os.path.exists(python):
        return python, None
    if not build:
        return None, (f"its venv {path} is not built, and a --quick run never installs packages "
                      "(run `python -m bench --only ducklake` once to build it)")  # fmt: skip
    log(f"ducklake: building {path} ({', '.join(REQUIREMENTS)})")
    shutil.rmtree(path, ignore_errors=True)
    steps = [[sys.executable, "-m", "venv", path],
             [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *REQUIREMENTS]]  # fmt: skip
    for step in steps:
        failure = step_failure(step)
        if failure is not None:
            return None, f"building its venv failed ({' '.join(step[:4])}): {failure}"
    with open(stamp, "w") as f:
        f.write("\n".join(REQUIREMENTS) + "\n")
    return python, None


class Worker:
    """A lakehouse engine in a process of its own (bench/lakeworker.py); ``call`` returns
    the seconds the worker measured around the operation, and its result."""

    def __init__(self, python: str, kind: str, directory: str, wrap: tuple[str, ...] = ()) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "dialect")]))
        self.errors = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [*wrap, python, lakeworker.__file__, kind, directory],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors, env=env,
        )  # fmt: skip
        self.versions = self._answer(f"starting the {kind} worker")

    def _answer(self, what: str) -> Any:
        try:
            answer = pickle.load(self.process.stdout)  # type: ignore[arg-type]
        except EOFError:
            self.errors.seek(0)
            tail = self.errors.read().decode(errors="replace").strip().splitlines()[-3:]
            raise WorkerError(f"{what}: the worker exited ({' '.join(tail)})") from None
        if answer[0] == "error":
            raise WorkerError(f"{what}: {answer[1]}")
        self.seconds = answer[1]
        return answer[2]

    def call(self, operation: str, *args: Any) -> tuple[float, Any]:
        pickle.dump((operation, args), self.process.stdin)  # type: ignore[arg-type]
        self.process.stdin.flush()  # type: ignore[union-attr]
        result = self._answer(f"{operation}{args!r:.200}")
        return self.seconds, result

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.call("close")
                self.process.stdin.close()  # type: ignore[union-attr]
                self.process.wait(timeout=60)
            except (WorkerError, OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self.errors.close()


class InProcess:
    """Our side with the worker's interface: the same engine class, timed here."""

    def __init__(self, directory: str) -> None:
        self.engine = lakeworker.TrinityLakeEngine(directory)

    def call(self, operation: str, *args: Any) -> tuple[float, Any]:
        method = getattr(self.engine, operation)
        started = time.perf_counter()
        result = method(*args)
        return time.perf_counter() - started, result

    def close(self) -> None:
        self.engine.close()


class DuckLakeSide(Side):
    """The suite's catalog operations as DuckDB SQL on a DuckLake catalog ``lake``."""

    name = "ducklake"
    self_timed = True

    def __init__(self, python: str, directory: str) -> None:
        self.worker = Worker(python, "ducklake", directory)
        self.elapsed = 0.0

    def _run(self, sql: str) -> Any:
        seconds, rows = self.worker.call("execute", sql)
        self.elapsed += seconds
        return rows

    def take_seconds(self) -> float:
        seconds, self.elapsed = self.elapsed, 0.0
        return seconds

    def create_namespace(self, ns: str) -> None:
        self._run(f"CREATE SCHEMA lake.{ns}")

    def create_table(self, ns: str, table: str) -> None:
        self._run(f"CREATE TABLE lake.{ns}.{table} ({DUCKDB_COLUMNS_SQL})")

    def describe(self, ns: str, table: str) -> Any:
        return self._run(f"DESCRIBE lake.{ns}.{table}")

    def columns(self, ns: str, table: str) -> Any:
        return self._run("SELECT column_name, data_type FROM information_schema.columns WHERE "
                         f"table_catalog = 'lake' AND table_schema = '{ns}' AND table_name = '{table}'")  # fmt: skip

    def list_tables(self, ns: str) -> list:
        return self._run(f"SHOW TABLES FROM lake.{ns}")

    def table_exists(self, ns: str, table: str) -> bool:
        seconds, found = self.worker.call("table_exists", f"lake.{ns}.{table}")
        self.elapsed += seconds
        return bool(found)

    def fill(self, ns: str, tables: list[str]) -> None:
        """``tables`` in ``ns`` (created first), one transaction."""
        self._run("BEGIN")
        self.create_namespace(ns)
        for table in tables:
            self.create_table(ns, table)
        self._run("COMMIT")
        self.take_seconds()

    def drop_table(self, ns: str, table: str) -> None:
        self._run(f"DROP TABLE lake.{ns}.{table}")

    def close(self) -> None:
        self.worker.close()


def _fill_ours(side: TrinityLakeDbapiSide, ns: str, tables: list[str]) -> None:
    """``tables`` in ``ns`` through SQL in one DB-API transaction (one version)."""
    import trinitylake_dbapi

    conn = trinitylake_dbapi.connect(side.uri)
    cur = conn.cursor()
    cur.execute(f"CREATE NAMESPACE {ns}")
    for table in tables:
        cur.execute(f"CREATE TABLE {ns}.{table} ({CREATE_TABLE_COLUMNS_SQL})")
    conn.commit()
    conn.close()


def catalog(workdir: str, python: str, sizes: dict, reps: int, log: Callable[[str], None]) -> dict:
    """The catalog workloads at ``sizes["tables"]`` tables, on our SQL and DuckLake."""
    import random

    from .suite import SuiteSizes, ns_name, run_suite

    big = ns_name(0)
    filled = [f"t{i:04d}" for i in range(sizes["tables"])]

    def make(workdir: str, rep: int, with_dbapi: bool) -> dict[str, Side]:
        base = os.path.join(workdir, f"ducklake-rep{rep}")
        ours = TrinityLakeDbapiSide(os.path.join(base, "tl-dbapi"))
        peer = DuckLakeSide(python, os.path.join(base, "ducklake"))
        started = time.perf_counter()
        _fill_ours(ours, big, filled)
        peer.fill(big, filled)
        log(f"  rep {rep + 1}/{reps}: filled {big} with {len(filled):,} tables ({time.perf_counter() - started:.1f} s)")
        return {"trinitylake-dbapi": ours, "ducklake": peer}

    def plan(_: SuiteSizes, seed: int) -> list:
        rng = random.Random(seed)
        present = [(big, t) for t in filled]
        exists = [rng.choice(present) for _ in range(sizes["exists"] // 2)]
        exists += [(big, "x" + t[1:]) for _, t in (rng.choice(present) for _ in range(sizes["exists"] - len(exists)))]
        rng.shuffle(exists)
        describes = [rng.choice(present) for _ in range(sizes["describes"])]
        return [
            ("create namespace", [ns_name(i + 1) for i in range(sizes["namespaces"])],
             lambda s, ns: s.create_namespace(ns)),
            (f"create table (10 columns) at {len(filled):,} tables",
             [(big, f"t{i:04d}") for i in range(len(filled), len(filled) + sizes["creates"])],
             lambda s, nt: s.create_table(*nt)),
            ("describe table (load), warm", describes, lambda s, nt: s.describe(*nt)),
            ("columns from information_schema.columns", describes[: sizes["columns"]], lambda s, nt: s.columns(*nt)),
            (f"list tables of a namespace of {len(filled) + sizes['creates']:,}", [big] * sizes["list_repeats"],
             lambda s, ns: s.list_tables(ns)),
            ("table exists, half missing", exists, lambda s, nt: s.table_exists(*nt)),
            ("drop table", rng.sample(present, sizes["drops"]), lambda s, nt: s.drop_table(*nt)),
        ]  # fmt: skip

    check = SuiteSizes(big=len(filled) + sizes["creates"] - sizes["drops"], chunks=sizes["chunks"])
    return run_suite(workdir, check, reps, True, log, make=make, plan=plan)


#: Per engine: how its SQL names a namespace and a table, and the aggregate time travel.
DIALECTS = {
    "trinitylake": {"schema": "CREATE NAMESPACE {ns}", "table": "{ns}.{t}",
                    "version": "SELECT max(version) FROM system.versions",
                    "at": "{table} FOR SYSTEM_VERSION AS OF {version}"},
    "ducklake": {"schema": "CREATE SCHEMA lake.{ns}", "table": "lake.{ns}.{t}",
                 "version": "SELECT max(snapshot_id) FROM lake.snapshots()",
                 "at": "{table} AT (VERSION => {version})"},
}  # fmt: skip


def _normalized(rows: list) -> list:
    return sorted(tuple(float(v) if not isinstance(v, (int, str)) else v for v in row) for row in rows)


def data(workdir: str, python: str, rows: int, insert_rows: int, reps: int, log: Callable[[str], None]) -> dict:
    """INSERT, the aggregate at the latest version, and the aggregate at an older version,
    interleaved (order reversed every repetition); the same results checked on both sides."""
    from .queries import AGGREGATE, INSERT_COLUMNS, rows_for_insert

    columns = [tuple(c.strip().split(" ", 1)) for c in INSERT_COLUMNS.split(", ")]
    sides: dict[str, Any] = {}
    sql: dict[str, dict[str, str]] = {}
    try:
        sides["trinitylake-dbapi"] = InProcess(os.path.join(workdir, "ducklake-data", "tl-dbapi"))
        sides["ducklake"] = Worker(python, "ducklake", os.path.join(workdir, "ducklake-data", "ducklake"))
        for name, side in sides.items():
            d = DIALECTS["trinitylake" if name == "trinitylake-dbapi" else "ducklake"]
            agg, ins = d["table"].format(ns="ns", t="agg"), d["table"].format(ns="ns", t="ins")
            side.call("execute", d["schema"].format(ns="ns"))
            side.call("execute", f"CREATE TABLE {agg} AS SELECT range AS id, range % 100 AS k, "
                                 f"(range % 997) * 1.5 AS v FROM range({rows})")  # fmt: skip
            version = side.call("execute", d["version"])[1][0][0]
            side.call("execute", f"INSERT INTO {agg} SELECT range AS id, range % 100 AS k, (range % 997) * 1.5 AS v "
                                 f"FROM range({rows}, {rows + max(1, rows // 100)})")  # fmt: skip
            side.call("execute", f"CREATE TABLE {ins} ({INSERT_COLUMNS})")
            sql[name] = {"latest": AGGREGATE.format(table=agg),
                         "time travel": AGGREGATE.format(table=d["at"].format(table=agg, version=version)),
                         "table": ins}  # fmt: skip
        answers: dict[str, dict[str, list]] = {}
        for name, side in sides.items():  # warm, and the same answers on both sides
            side.call("insert", sql[name]["table"], columns, rows_for_insert(insert_rows, 0))
            answers[name] = {q: _normalized(side.call("execute", sql[name][q])[1]) for q in ("latest", "time travel")}
        first, second = answers.values()
        if first != second:
            raise AssertionError(f"the aggregate differs between the sides: {list(answers)}")
        operations = (f"INSERT {insert_rows:,} rows, one commit", f"aggregate over {rows + max(1, rows // 100):,} rows",
                      f"aggregate at an older version ({rows:,} rows)")  # fmt: skip
        timings: dict[str, dict[str, list[float]]] = {op: {n: [] for n in sides} for op in operations}
        for rep in range(reps):
            batch = rows_for_insert(insert_rows, (rep + 1) * insert_rows)
            for name in list(sides) if rep % 2 == 0 else list(reversed(sides)):
                side = sides[name]
                timings[operations[0]][name].append(side.call("insert", sql[name]["table"], columns, batch)[0])
                timings[operations[1]][name].append(side.call("execute", sql[name]["latest"])[0])
                timings[operations[2]][name].append(side.call("execute", sql[name]["time travel"])[0])
            log(f"ducklake: data rep {rep + 1}/{reps}")
        counts = {name: _normalized(side.call("execute", f"SELECT count(*), sum(id) FROM {sql[name]['table']}")[1])
                  for name, side in sides.items()}  # fmt: skip
        ours, peer = counts.values()
        if ours != peer:
            raise AssertionError(f"the inserted rows differ between the sides: {counts}")
    finally:
        for side in sides.values():
            side.close()
    return {
        "reps": reps,
        "versions": sides["ducklake"].versions,
        "operations": {op: {"median_seconds": {n: statistics.median(t) for n, t in per_side.items()},
                            "speedup": statistics.median(d / o for o, d in zip(per_side["trinitylake-dbapi"],
                                                                                per_side["ducklake"]))}
                       for op, per_side in timings.items()},
        "time_travel_vs_latest": {
            n: statistics.median(t / l for t, l in zip(timings[operations[2]][n], timings[operations[1]][n]))
            for n in sides
        },
    }  # fmt: skip


def ducklake(
    workdir: str, config: dict, reps: int, data_reps: int, venv: str, build: bool, log: Callable[[str], None]
) -> dict:
    """The section: ``{"skipped": why}`` or the catalog (``reps`` repetitions), data
    (``data_reps``) and durability results; ``build``: may build the venv."""
    python, why = venv_python(venv, build, log)
    if python is None:
        log(f"ducklake: skipped: {why}")
        return {"skipped": why}
    from . import durability

    log(f"ducklake: catalog {config['suite']}")
    out: dict = {"tables": config["suite"]["tables"]}
    out["catalog"] = catalog(workdir, python, config["suite"], reps, log)
    log(f"ducklake: data {config['data']}")
    out["data"] = data(workdir, python, config["data"]["rows"], config["data"]["insert_rows"], data_reps, log)
    out["versions"] = out["data"].pop("versions")
    log("ducklake: fsyncs per commit (strace)")
    engines = {"trinitylake-dbapi": (sys.executable, "trinitylake"), "ducklake": (python, "ducklake"),
               "pyiceberg": (sys.executable, "pyiceberg")}  # fmt: skip
    out["durability"] = durability.fsyncs_per_commit(workdir, engines, config["fsync_commits"],
                                                     config["data"]["insert_rows"], log)  # fmt: skip
    out["targets"] = targets.ducklake(out)
    return out
