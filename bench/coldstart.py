"""Cold start (issue 21): a new Python process that imports the library, opens the
lakehouse and runs one statement: a DESCRIBE TABLE (the catalog-only path), or the first
SELECT over a table's data (PyIceberg's table model and DuckDB come in). The wall time is
measured by the parent, from spawn to exit, so it includes the interpreter's own start;
the child reports its phases and which heavy modules it imported.

The children run as an installed package does: with the modules' bytecode cached
(``PYTHONDONTWRITEBYTECODE`` removed from their environment, and one unmeasured run of
each child first writes the ``.pyc`` files of an editable checkout). Compiling this
project's sources in every process, as a checkout with bytecode writing disabled does,
costs about 0.4 s on a loaded host and is no user's cold start.

Targets: DESCRIBE <= 0.3 s, first SELECT <= 1 s (``TARGETS_S``); the report prints each
with its measured median, pass or miss, and the host's load average while measuring.

The same two statements also run through the ``trinitylake`` command (``cli.run``, as
``trinitylake LAKE -c STATEMENT`` runs them). The targets are the scripts': a library
cannot spare its caller the interpreter's shutdown, the command, which owns its process,
does (docs/performance.md). Its rows have no "open" phase: the command opens the
lakehouse as part of its statement.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from . import targets as targets_mod
from .timing import median

#: Modules whose presence a child reports (the costly imports, and what must stay off a path).
HEAVY = ("sqlalchemy", "pyspark", "pandas", "sqlglot", "pyiceberg", "pyarrow", "duckdb", "fsspec",
         "pyarrow.dataset")

#: Ends a child: its report, the last line of its standard output.
_REPORT = f"""
def report(t0, t1, t2, t3):
    import json, sys
    heavy = [m for m in {HEAVY!r} if m in sys.modules]
    print(json.dumps({{"import_s": t1 - t0, "open_s": None if t2 is None else t2 - t1,
                      "describe_s": t3 - (t1 if t2 is None else t2), "modules": len(sys.modules), "heavy": heavy}}))
"""

#: The ``trinitylake`` command's children: the report is printed at exit, after the
#: command's own output and once run() has frozen the heap, before the shutdown.
_COMMAND = """
import time; t0 = time.perf_counter()
import atexit, sys
from trinitylake_dbapi.cli import run
t1 = time.perf_counter()
atexit.register(lambda: report(t0, t1, None, time.perf_counter()))
sys.argv = ["trinitylake", URI, "-c", f"STATEMENT"]
run()
"""

_DESCRIBE = "DESCRIBE TABLE {NS}.{TABLE}"
_SELECT = "SELECT k, count(*), sum(v) FROM {NS}.{DATA} GROUP BY k"

CHILD = {
    "trinitylake": """
import time; t0 = time.perf_counter()
from trinitylake_dbapi.catalog import LakehouseCatalog
t1 = time.perf_counter()
catalog = LakehouseCatalog(URI)
t2 = time.perf_counter()
info = catalog.begin().describe_table(NS, TABLE)
assert len(info.columns) == 10
t3 = time.perf_counter()
report(t0, t1, t2, t3)
""",
    # The DB-API children differ only in their statement and the rows it must return.
    **{side: """
import time; t0 = time.perf_counter()
import trinitylake_dbapi
t1 = time.perf_counter()
conn = trinitylake_dbapi.connect(URI)
cur = conn.cursor()
t2 = time.perf_counter()
cur.execute(f"STATEMENT")
rows = cur.fetchall()
assert CHECK, rows
t3 = time.perf_counter()
report(t0, t1, t2, t3)
""".replace("STATEMENT", statement).replace("CHECK", check) for side, statement, check in [
        ("trinitylake-dbapi", _DESCRIBE, "len(rows) >= 10"),
        ("trinitylake-dbapi-select", _SELECT, "len(rows) == 100"),
    ]},
    **{side: _COMMAND.replace("STATEMENT", statement) for side, statement in [
        ("trinitylake-command", _DESCRIBE), ("trinitylake-command-select", _SELECT)]},
    "pyiceberg": """
import time; t0 = time.perf_counter()
from pyiceberg.catalog.sql import SqlCatalog
t1 = time.perf_counter()
catalog = SqlCatalog("bench", **PROPS)
t2 = time.perf_counter()
schema = catalog.load_table((NS, TABLE)).schema()
assert len(schema.fields) == 10
t3 = time.perf_counter()
report(t0, t1, t2, t3)
""",
}


#: Issue 21: the wall time of a new process, per child, at most.
TARGETS_S = {"trinitylake-dbapi": 0.3, "trinitylake-dbapi-select": 1.0}
TARGET_NAMES = {"trinitylake-dbapi": "new process: one DESCRIBE (wall, spawn to exit)",
                "trinitylake-dbapi-select": "new process: the first SELECT over table data (wall)"}
#: Rows of the table the SELECT child aggregates (k = id % 100, v a double).
DATA_ROWS = 100_000


def _child_env() -> dict[str, str]:
    """The environment of a child: this one's, with bytecode caching on (module doc)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_child(side: str, setup: str) -> dict:
    """Run one child; its report plus ``wall_s`` (spawn to exit) and ``cpu_s`` (the
    CPU time it used, interpreter start included: on a host with more runnable
    processes than cores, the wall time is mostly waiting for a core)."""
    code = setup + _REPORT + CHILD[side]
    cpu_before = _children_cpu_s()
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_child_env())
    wall = time.perf_counter() - start
    cpu = _children_cpu_s() - cpu_before
    if done.returncode != 0:
        raise RuntimeError(f"cold start child for {side} failed:\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    report["wall_s"] = wall
    report["cpu_s"] = cpu
    return report


def add_data_table(location: str, ns: str, table: str) -> None:
    """A table of ``DATA_ROWS`` rows in one data file for the SELECT child."""
    import trinitylake_dbapi

    with trinitylake_dbapi.connect(location, autocommit=True) as conn:
        conn.cursor().execute(f"CREATE TABLE {ns}.{table} AS SELECT range AS id, range % 100 AS k, "
                              f"(range % 997) * 1.5 AS v FROM range({DATA_ROWS})")


def cold_start(targets: dict[str, tuple[str, str, str]], reps: int, log: Callable[[str], None],
               data_table: str | None = None, warm: bool = True) -> dict:
    """``targets``: side -> (location, namespace, table). Alternating order per rep.
    ``data_table``: a table of the TrinityLake lakehouse holding rows (see
    :func:`add_data_table`); with it, and the DB-API side, the first SELECT is measured
    too. ``warm``: first run every child once, unmeasured (a --quick run does not: its
    one repetition measures nothing worth reading, and the warm-up doubled its
    interpreter starts, ~6 s of CPU of the smoke test's ~29)."""
    from .sides import iceberg_properties, lake_uri

    if "trinitylake-dbapi" in targets:
        ours = targets["trinitylake-dbapi"]
        targets = {**targets, "trinitylake-command": ours}
        if data_table is not None:
            targets = {**targets, "trinitylake-dbapi-select": ours, "trinitylake-command-select": ours}

    def setup(name: str) -> str:
        location, ns, table = targets[name]
        if name == "pyiceberg":
            text = f"PROPS = {iceberg_properties(location)!r}\n"
        else:
            text = f"URI = {lake_uri(location)!r}\n"
        return text + f"NS = {ns!r}; TABLE = {table!r}; DATA = {data_table!r}\n"

    out: dict[str, list[dict]] = {name: [] for name in targets}
    names = list(targets)
    if warm:  # unmeasured, all at once: writes the bytecode an installed package ships
        with ThreadPoolExecutor(len(names)) as pool:
            list(pool.map(lambda name: run_child(name, setup(name)), names))
    loads = []
    for rep in range(reps):
        loads.append(os.getloadavg()[0])
        for name in names if rep % 2 == 0 else names[::-1]:
            out[name].append(run_child(name, setup(name)))
        log(f"  cold start rep {rep + 1}/{reps}: " + ", ".join(
            f"{n} {out[n][-1]['wall_s']:.3f} s" for n in names))
    loads.append(os.getloadavg()[0])
    summary = {}
    for name, runs in out.items():
        summary[name] = {
            "runs": runs,
            "wall_s": median(r["wall_s"] for r in runs),
            "cpu_s": median(r["cpu_s"] for r in runs),
            "import_s": median(r["import_s"] for r in runs),
            "open_s": None if runs[0]["open_s"] is None else median(r["open_s"] for r in runs),
            "describe_s": median(r["describe_s"] for r in runs),
            "heavy": runs[-1]["heavy"],
        }
    rows = []
    for name, target in TARGETS_S.items():
        if name in summary:
            summary[name]["target_s"] = target
            summary[name]["met"] = summary[name]["wall_s"] <= target
            rows.append(targets_mod.at_most(TARGET_NAMES[name], summary[name]["wall_s"], target, " s", digits=3))
    python_alone = median(_bare_python() for _ in range(max(1, reps)))
    summary["python"] = {"wall_s": python_alone}
    summary["load"] = {"min": min(loads), "max": max(loads), "cores": os.cpu_count()}
    summary["targets"] = rows
    return summary


def _bare_python() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, env=_child_env())
    return time.perf_counter() - start
