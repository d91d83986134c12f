"""Cold start: a new Python process that imports the library, opens the catalog and
describes one table. The wall time is measured by the parent, from spawn to exit, so it
includes the interpreter's own start; the child reports its phases and which heavy
modules it imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Callable

from .timing import median

_REPORT = """
import json, sys
heavy = [m for m in ("sqlalchemy", "pyspark", "pandas", "sqlglot", "pyiceberg", "pyarrow")
         if m in sys.modules]
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "describe_s": t3 - t2,
                  "modules": len(sys.modules), "heavy": heavy}))
"""

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
""",
    "trinitylake-dbapi": """
import time; t0 = time.perf_counter()
import trinitylake_dbapi
t1 = time.perf_counter()
conn = trinitylake_dbapi.connect(URI)
cur = conn.cursor()
t2 = time.perf_counter()
cur.execute(f"DESCRIBE TABLE {NS}.{TABLE}")
rows = cur.fetchall()
assert len(rows) >= 10, rows
t3 = time.perf_counter()
""",
    "pyiceberg": """
import time; t0 = time.perf_counter()
from pyiceberg.catalog.sql import SqlCatalog
t1 = time.perf_counter()
catalog = SqlCatalog("bench", **PROPS)
t2 = time.perf_counter()
schema = catalog.load_table((NS, TABLE)).schema()
assert len(schema.fields) == 10
t3 = time.perf_counter()
""",
}


def run_child(side: str, setup: str) -> dict:
    code = setup + CHILD[side] + _REPORT
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "0"})
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"cold start child for {side} failed:\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    report["wall_s"] = wall
    return report


def cold_start(targets: dict[str, tuple[str, str, str]], reps: int, log: Callable[[str], None]) -> dict:
    """``targets``: side -> (location, namespace, table). Alternating order per rep."""
    from .sides import iceberg_properties, lake_uri

    out: dict[str, list[dict]] = {name: [] for name in targets}
    names = list(targets)
    for rep in range(reps):
        for name in names if rep % 2 == 0 else names[::-1]:
            location, ns, table = targets[name]
            if name == "pyiceberg":
                setup = f"PROPS = {iceberg_properties(location)!r}\n"
            else:
                setup = f"URI = {lake_uri(location)!r}\n"
            setup += f"NS = {ns!r}; TABLE = {table!r}\n"
            out[name].append(run_child(name, setup))
        log(f"  cold start rep {rep + 1}/{reps}: " + ", ".join(
            f"{n} {out[n][-1]['wall_s']:.3f} s" for n in names))
    summary = {}
    for name, runs in out.items():
        summary[name] = {
            "runs": runs,
            "wall_s": median(r["wall_s"] for r in runs),
            "import_s": median(r["import_s"] for r in runs),
            "open_s": median(r["open_s"] for r in runs),
            "describe_s": median(r["describe_s"] for r in runs),
            "heavy": runs[-1]["heavy"],
        }
    python_alone = median(_bare_python() for _ in range(max(1, reps)))
    summary["python"] = {"wall_s": python_alone}
    return summary


def _bare_python() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start
