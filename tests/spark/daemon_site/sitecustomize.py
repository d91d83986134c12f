"""Warm PySpark daemons for the tests' SparkSession: what the Python workers import,
loaded once in each daemon before it forks them.

Only the JVM of tests/spark/conftest.py has this directory on its PYTHONPATH, so only
the Python processes it starts import this module (Python imports ``sitecustomize`` at
start-up), and it does something only in a PySpark daemon (``python -m pyspark.daemon
WORKER_MODULE``); everything else it leaves alone.

Why: the JVM starts one daemon per worker module (pyspark.worker for tasks, and one
per data source planner step: lookup_data_sources, create_data_source,
plan_data_source_read, write_into_data_source, commit_data_source_write), and each
daemon forks a worker per task or planner call. PySpark's daemon imports little, so
every forked worker imported its worker module and, in its first task, pyarrow,
PyIceberg and this package again: 0.4-1.4 s of CPU per worker, and planner workers
are not reused (one per call). Forked from a daemon that imported them, the workers
start with the modules loaded: the same modules and code, only imported earlier, as
tests/warm_processes.py does for the tests' own child processes.

Invariants: the daemon imports only (no thread, no open file or connection to inherit
across fork; nothing printed: the daemon's stdout carries its port to the JVM), then
collects and freezes (``gc.freeze``) what it loaded, so the collection PySpark runs
after each task (trinitylake_dbapi/spark/_runtime.py WK1) skips it in every worker. A
preload that fails to import is skipped: the worker imports it itself and reports it
as it would under PySpark's daemon.
"""

from __future__ import annotations

import sys

#: What the tests' workers import besides their worker module: pyarrow, PyIceberg's
#: pyarrow IO and the package's Spark modules (the data source's planning, reads,
#: writes, maintenance and verification tasks).
PRELOAD = (
    "pyspark.worker",
    "pyarrow",
    "pyarrow.parquet",
    "pyiceberg.io.pyarrow",
    "pyspark_trinitylake",
    "trinitylake_dbapi.spark",
    "trinitylake_dbapi.spark.datasource",
    "trinitylake_dbapi.spark.tabledata",
    "trinitylake_dbapi.spark.maintenance",
    "trinitylake_dbapi.spark.verification",
    "trinitylake_dbapi.spark.compaction",
)


def _preload(worker_module: str | None) -> None:
    import gc
    import importlib

    for name in ([worker_module] if worker_module else []) + list(PRELOAD):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the worker imports it itself (and reports)
            pass
    gc.collect()
    gc.freeze()


_ARGV = getattr(sys, "orig_argv", [])
_AT = _ARGV.index("-m") if "-m" in _ARGV else -1
if _AT > 0 and _ARGV[_AT + 1 : _AT + 2] == ["pyspark.daemon"]:
    _NEXT = _ARGV[_AT + 2 : _AT + 3]
    _preload(_NEXT[0] if _NEXT and _NEXT[0].startswith("pyspark") else None)
