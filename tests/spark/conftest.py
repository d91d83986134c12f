"""The Spark test session: one local[2] SparkSession for every test in tests/spark.

Set up as NOTES.md (PySpark) says: loopback address, this interpreter for the driver
and the workers, no UI, two shuffle partitions, a small fast JVM. The package and the
tests folder go on PYTHONPATH before the JVM starts, so Python workers import both;
so does tests/spark/daemon_site, whose ``sitecustomize`` makes the JVM's PySpark
daemons import what their workers import before they fork them (see its docstring:
tests/spark's Python workers measured at 64-68 s of CPU before, 43 s after).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark", reason="the spark extra (pyspark) is not installed")

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_REPO = os.path.dirname(_TESTS)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # The JVM and the Python workers it starts take these when the session starts; put
    # the process environment back afterwards so other tests' subprocesses never see them.
    saved = {k: os.environ.get(k) for k in ("SPARK_LOCAL_IP", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH")}
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    for extra in (os.path.join(_TESTS, "spark", "daemon_site"), os.path.join(_TESTS, "spark"), _TESTS, _REPO):
        if extra not in path:
            path.insert(0, extra)
    os.environ["PYTHONPATH"] = os.pathsep.join(path)

    # Spark's scratch (blockmgr-*, spark-*, artifacts-*, the native libraries it unpacks)
    # in the run's basetemp, not the JVM's /tmp: the JVM removes it at its exit, but one
    # killed left it there (java.io.tmpdir ignores TMPDIR, tests/temp_guard.py).
    scratch = tmp_path_factory.mktemp("spark")
    from pyspark.sql import SparkSession

    from trinitylake_dbapi.spark import register

    session = (
        SparkSession.builder.master("local[2]")
        .appName("trinitylake-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.timeType.enabled", "true")
        .config("spark.local.dir", str(scratch))
        .config("spark.driver.extraJavaOptions", f"-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.io.tmpdir={scratch}")
        .config("spark.executor.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
        .getOrCreate()
    )
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    try:
        yield session
    finally:
        session.stop()
