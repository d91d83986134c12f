"""sqlglot against sqlglotc on this project's statements (issue 21 item 3).

sqlglotc is sqlglot compiled with mypyc, published on PyPI at the same versions as sqlglot
(``sqlglot[c]`` installs it). It has no module of its own: its wheel puts compiled ``.so``
files next to sqlglot's ``.py`` files (``sqlglot/parser.cpython-311-...so`` beside
``sqlglot/parser.py``), and Python loads an extension module before a source file of the
same name, so installing it replaces sqlglot's parser, tokenizer core, generator and
expression classes in place. Its compiled classes refuse Python subclasses at
instantiation (``TypeError: interpreted classes cannot inherit from compiled``), and the
TrinityLake dialect is made of such subclasses (its parser, its statement nodes).

This section measures, each side in a long-lived worker process of its own
(bench/parseworker.py) whose import path decides which sqlglot it loads:

* ``sqlglot``: the project's venv as it is;
* ``sqlglotc``: a directory made by ``pip install --target DIR sqlglotc==<the venv's
  sqlglot version>`` (which brings sqlglot of that version with it), put first on the
  worker's ``PYTHONPATH``. Built on first use by a default or --full run (``--sqlglotc-
  overlay``); a --quick run uses it only if it is already built and otherwise measures
  the sqlglot side alone and says why.

The statement mix (``STATEMENTS``): CREATE TABLE of the 10-column schema, DESCRIBE,
SHOW TABLES LIKE, a SELECT of ``information_schema.columns`` and the GROUP BY aggregate
of bench/queries.py over a small table of data, each text new to the cursor. For each:
the TrinityLake tokenizer alone, the parse the cursor does (tokenizer + TrinityLake
parser, or for DESCRIBE and SHOW TABLES the regular expression of ``sql/plain.py``,
which runs them without sqlglot), sqlglot's
own Spark parser on the same text (the ceiling of what compiling gives a parser it
allows; SHOW TABLES is a Command to it), and the statement through the DB-API. The two workers run
round by round, the order reversed every repetition; ratio = sqlglot time / sqlglotc
time per repetition, median (> 1: sqlglotc is faster); ``cpu_ratio`` the same of the
workers' CPU times, steadier than the wall time on a loaded host.

Cold start: new processes, alternating sides: ``import trinitylake_dbapi`` + connect +
one DESCRIBE, and ``import sqlglot`` + the first Spark parse of the CREATE TABLE text;
wall time from spawn to exit, measured here.

``targets``: issue 21 sets none for sqlglotc beyond "adopt it where it is a clean win";
the one row says whether it is one (the DB-API runs on it, and is faster).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from typing import Any, Callable

from . import targets
from .installs import step_failure
from .queries import AGGREGATE
from .sides import CREATE_TABLE_COLUMNS_SQL

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "parseworker.py")

#: The statement mix, by name, run in this order; ``{n}`` is a name part unique in the
#: run, so that every text is new to the cursor: each CREATE TABLE makes ``created_{n}``,
#: which the statements after it name (bench/parseworker.py).
STATEMENTS = {
    "CREATE TABLE (10 columns)": f"CREATE TABLE ns.created_{{n}} ({CREATE_TABLE_COLUMNS_SQL})",
    "DESCRIBE TABLE": "DESCRIBE TABLE ns.created_{n}",
    "SHOW TABLES LIKE": "SHOW TABLES IN ns LIKE 'created_{n}'",
    "information_schema.columns": (
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = 'ns' AND table_name = 'created_{n}'"
    ),
    "SELECT over data (GROUP BY)": AGGREGATE.replace("count(*)", "count(*) AS rows_{n}").format(
        table="ns.data", n="{n}"),
}

#: The kinds of work a worker times, in report order, with their labels.
KINDS = {
    "tokenize": "tokenize (TrinityLake tokenizer)",
    "parse": "parse as the cursor does (tokenizer + TrinityLake parser, or the fast path)",
    "parse_spark": "sqlglot's Spark parser, same text",
    "dbapi": "DB-API execute + fetch, unseen text",
}

SIDES = ("sqlglot", "sqlglotc")


class WorkerError(RuntimeError):
    """A worker could not start or answered an error."""


def overlay(path: str, version: str, build: bool, log: Callable[[str], None]) -> tuple[str | None, str | None]:
    """``(path, None)`` when ``path`` holds sqlglotc ``version`` (built now if ``build``
    and it is not); ``(None, why)`` otherwise."""
    requirement = f"sqlglotc=={version}"
    stamp = os.path.join(path, f".installed-{requirement}")
    if os.path.exists(stamp):
        return path, None
    if not build:
        return None, (f"sqlglotc is not installed: {path} does not hold {requirement}, and a --quick run "
                      "never installs packages (run `python -m bench --only parsing` once to build it)")  # fmt: skip
    log(f"parsing: installing {requirement} into {path}")
    step = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-warn-conflicts",
            "--target", path, requirement]  # fmt: skip
    failure = step_failure(step)
    if failure is not None:
        return None, f"installing {requirement} failed: {failure}"
    with open(stamp, "w") as f:
        f.write(requirement + "\n")
    return path, None


def _env(overlay_dir: str | None) -> dict[str, str]:
    """A child's environment: this checkout (and its dialect package) importable, the
    sqlglotc overlay first when given; bytecode caching on, as for an installed package."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    paths = [overlay_dir] if overlay_dir else []
    paths += [ROOT, os.path.join(ROOT, "dialect"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


class Worker:
    """bench/parseworker.py over ``lakehouse``, with the sqlglot ``overlay_dir`` decides."""

    def __init__(self, lakehouse: str, overlay_dir: str | None) -> None:
        self.process = subprocess.Popen([sys.executable, WORKER, lakehouse], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=_env(overlay_dir))  # fmt: skip
        self.info = self._answer("starting")

    def _answer(self, what: str) -> Any:
        line = self.process.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise WorkerError(f"{what}: the worker exited (its messages are on stderr)")
        answer = json.loads(line)
        if "error" in answer:
            raise WorkerError(f"{what}: {answer['error']}")
        return answer["ok"]

    def run(self, round_: int, iterations: int) -> dict[str, Any]:
        request = {"round": round_, "iterations": iterations, "statements": STATEMENTS}
        self.process.stdin.write(json.dumps(request) + "\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]
        return self._answer(f"round {round_}")

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.write(json.dumps({"close": True}) + "\n")  # type: ignore[union-attr]
                self.process.stdin.close()  # type: ignore[union-attr]
                self.process.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()


def make_lakehouse(location: str, data_rows: int) -> None:
    """A lakehouse with namespace ``ns``, table ``t0`` of the 10-column schema and
    ``data`` of ``data_rows`` rows (id, k = id % 100, v), made by this process's DB-API."""
    import trinitylake_dbapi

    with trinitylake_dbapi.connect(location, create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE ns")
        cur.execute(f"CREATE TABLE ns.t0 ({CREATE_TABLE_COLUMNS_SQL})")
        cur.execute(f"CREATE TABLE ns.data AS SELECT range AS id, range % 100 AS k, (range % 997) * 1.5 AS v "
                    f"FROM range({data_rows})")  # fmt: skip


COLD_CHILDREN = {
    "import + connect + DESCRIBE": """
import json, time; t0 = time.perf_counter()
import trinitylake_dbapi
t1 = time.perf_counter()
error = None
try:
    cur = trinitylake_dbapi.connect(URI).cursor()
    cur.execute("DESCRIBE TABLE ns.t0")
    assert len(cur.fetchall()) >= 10
except Exception as exc:
    error = f"{type(exc).__name__}: {exc}"
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "work_s": t2 - t1, "error": error}))
""",
    "import sqlglot + first Spark parse of the CREATE TABLE": """
import json, time; t0 = time.perf_counter()
import sqlglot
t1 = time.perf_counter()
sqlglot.parse_one(CREATE, read="spark")
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "work_s": t2 - t1, "error": None}))
""",
}


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cold_child(kind: str, uri: str, overlay_dir: str | None) -> dict[str, Any]:
    """One new process of ``kind``: its report, with ``wall_s`` (spawn to exit) and
    ``cpu_s`` (the CPU time it used, interpreter start included)."""
    setup = f"URI = {uri!r}; CREATE = {STATEMENTS['CREATE TABLE (10 columns)'].format(n='cold')!r}\n"
    cpu = _children_cpu_s()
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", setup + COLD_CHILDREN[kind]], capture_output=True, text=True,
                          env=_env(overlay_dir))  # fmt: skip
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise WorkerError(f"cold start child {kind!r} failed:\n{done.stderr[-2000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    report["wall_s"] = wall
    report["cpu_s"] = _children_cpu_s() - cpu
    return report


def cold_start(uri: str, overlays: dict[str, str | None], reps: int, log: Callable[[str], None],
               warm: bool = True) -> dict[str, Any]:
    """Per child kind and side: medians of wall, import and work seconds, and the error
    the child met (the DB-API's on sqlglotc); with both sides, ``import_ratio`` and,
    where neither failed, ``ratio`` of the wall times and ``cpu_ratio`` of the CPU times
    (sqlglot / sqlglotc, per rep, median). ``warm``: first run every child once,
    unmeasured (a --quick run does not: it measures nothing worth reading)."""
    runs: dict[str, dict[str, list[dict]]] = {kind: {side: [] for side in overlays} for kind in COLD_CHILDREN}
    names = list(overlays)
    for kind in COLD_CHILDREN if warm else ():  # unmeasured: writes the bytecode an installed package ships
        for side in names:
            _cold_child(kind, uri, overlays[side])
    for rep in range(reps):
        for kind in COLD_CHILDREN:
            for side in names if rep % 2 == 0 else names[::-1]:
                runs[kind][side].append(_cold_child(kind, uri, overlays[side]))
        log(f"  parsing cold start rep {rep + 1}/{reps}")
    out: dict[str, Any] = {}
    for kind, sides in runs.items():
        entry: dict[str, Any] = {}
        for side, reports in sides.items():
            entry[side] = {key: statistics.median(r[key] for r in reports)
                           for key in ("wall_s", "cpu_s", "import_s", "work_s")}  # fmt: skip
            entry[side]["error"] = reports[-1]["error"]
        if len(sides) == 2:  # the imports compare even where the statement fails
            pairs = list(zip(*sides.values()))
            entry["import_ratio"] = statistics.median(a["import_s"] / b["import_s"] for a, b in pairs)
            if all(r["error"] is None for rs in sides.values() for r in rs):
                entry["ratio"] = statistics.median(a["wall_s"] / b["wall_s"] for a, b in pairs)
                entry["cpu_ratio"] = statistics.median(a["cpu_s"] / b["cpu_s"] for a, b in pairs)
        out[kind] = entry
    return out


def parsing(workdir: str, sizes: dict[str, int], reps: int, overlay_path: str, build: bool,
            log: Callable[[str], None]) -> dict[str, Any]:  # fmt: skip
    """The section's results (see the module docstring). ``sizes``: ``iterations`` (each
    statement per kind per round), ``data_rows`` (the table the SELECT reads) and
    ``cold_reps`` (new processes of each kind per side)."""
    import sqlglot
    import sqlglot.tokens

    if getattr(sqlglot.tokens, "SQLGLOTC_INSTALLED", False):
        return {"skipped": "this Python runs the compiled build already (sqlglotc is installed in its environment), "
                           "so there is no pure-Python side to compare with"}  # fmt: skip
    path, why = overlay(os.path.abspath(overlay_path), sqlglot.__version__, build, log)
    if why:
        log(f"parsing: sqlglotc side skipped: {why}")
    overlays: dict[str, str | None] = {"sqlglot": None, **({"sqlglotc": path} if path else {})}
    base = os.path.join(workdir, "parsing")
    workers: dict[str, Worker] = {}
    try:
        for side, overlay_dir in overlays.items():
            location = os.path.join(base, side)
            make_lakehouse(location, sizes["data_rows"])
            workers[side] = Worker(location, overlay_dir)
        log("parsing: " + ", ".join(f"{s} {w.info['sqlglot']['version']}"
                                    f"{' (compiled)' if w.info['sqlglot']['compiled'] else ''}"
                                    for s, w in workers.items()))  # fmt: skip
        for worker in workers.values():  # unmeasured warm-up round
            worker.run(0, 1)
        rounds: dict[str, list[dict]] = {side: [] for side in workers}
        names = list(workers)
        for rep in range(reps):
            for side in names if rep % 2 == 0 else names[::-1]:
                rounds[side].append(workers[side].run(rep + 1, sizes["iterations"]))
            log(f"  parsing rep {rep + 1}/{reps}")
        cold = cold_start("file://" + os.path.abspath(os.path.join(base, "sqlglot")) + "/", overlays,
                          sizes["cold_reps"], log, warm=sizes.get("cold_warm", True))  # fmt: skip
    finally:
        for worker in workers.values():
            worker.close()
    return summarize(rounds, {s: w.info["sqlglot"] for s, w in workers.items()}, cold, sizes, reps, why)


def bound_if_it_ran(work: dict[str, dict[str, dict[str, Any]]], cpu: bool = False) -> dict[str, float]:
    """Per statement, the DB-API ratio sqlglotc could give at best if the TrinityLake
    parser could run compiled: its tokenize + parse (sqlglot side) sped up by what
    sqlglotc gives sqlglot's own Spark parser on the same text, the rest of the
    statement unchanged (Amdahl). A text the cursor has seen before is not parsed again,
    so for repeated texts the bound is 1x. ``cpu``: from CPU times (the statement's
    waits for the disk left out, so a higher bound: a host with an instant disk)."""
    out = {}
    for name in STATEMENTS:
        dbapi, parse = work["dbapi"][name], work["parse"][name]
        if cpu:
            total, parse_s = dbapi["cpu"]["sqlglot"], parse["cpu"]["sqlglot"]
        else:
            total, parse_s = dbapi["sqlglot"], parse["sqlglot"]
        parse = parse_s
        gain = work["parse_spark"][name].get("cpu_ratio" if cpu else "ratio")
        if total and parse and gain:
            out[name] = total / (total - min(parse, total) + min(parse, total) / gain)
    return out


def summarize(rounds: dict[str, list[dict]], builds: dict[str, dict], cold: dict[str, Any], sizes: dict[str, int],
              reps: int, skipped: str | None) -> dict[str, Any]:  # fmt: skip
    """Medians per side, kind and statement; ratios per repetition; the ``targets`` row."""
    errors = {side: runs[-1]["errors"] for side, runs in rounds.items()}
    work: dict[str, dict[str, dict[str, Any]]] = {}
    for kind in KINDS:
        work[kind] = {}
        for name in STATEMENTS:
            entry: dict[str, Any] = {}
            entry["cpu"] = {}
            for side, runs in rounds.items():
                times = [r[kind][name] for r in runs if name in r[kind]]
                entry[side] = statistics.median(times) if len(times) == len(runs) else None
                cpu = [r["cpu"][kind][name] for r in runs if name in r["cpu"][kind]]
                entry["cpu"][side] = statistics.median(cpu) if len(cpu) == len(runs) else None
            pairs = list(zip(*rounds.values())) if len(rounds) == 2 else []
            for key, of in (("ratio", lambda r: r[kind]), ("cpu_ratio", lambda r: r["cpu"][kind])):
                both = [(of(a).get(name), of(b).get(name)) for a, b in pairs]
                if both and all(a and b for a, b in both):
                    entry[key] = statistics.median(a / b for a, b in both)
            work[kind][name] = entry
    out: dict[str, Any] = {"sqlglot": builds, "iterations": sizes["iterations"], "data_rows": sizes["data_rows"],
                           "reps": reps, "cold_reps": sizes["cold_reps"], "work": work, "errors": errors,
                           "cold_start": cold}  # fmt: skip
    if skipped:
        out["skipped"] = skipped
        return out
    out["bound_if_it_ran"] = bound_if_it_ran(work)
    out["bound_if_it_ran_cpu"] = bound_if_it_ran(work, cpu=True)
    ratios = {kind: [e["ratio"] for e in work[kind].values() if "ratio" in e] for kind in KINDS}
    out["ratio_range"] = {kind: [min(r), max(r)] for kind, r in ratios.items() if r}
    dbapi_error = errors["sqlglotc"].get("dbapi")
    if dbapi_error:  # the whole message is in "errors"
        measured = f"DB-API fails ({dbapi_error.split(':')[0]})"
    else:
        measured = f"{min(ratios['dbapi']):.2f}x-{max(ratios['dbapi']):.2f}x" if ratios["dbapi"] else "no ratio"
    met = dbapi_error is None and bool(ratios["dbapi"]) and min(ratios["dbapi"]) > 1.0
    out["targets"] = [targets.row("sqlglotc is a clean win: the DB-API runs on it, every statement faster",
                                  "runs; DB-API ratio > 1x on every statement", measured, met)]  # fmt: skip
    return out
