"""The test session's Spark keeps its scratch in the run's basetemp (tests/spark/conftest.py),
not in the JVM's /tmp, where a killed JVM left it (java.io.tmpdir ignores TMPDIR, so
tests/temp_guard.py cannot see it)."""

from __future__ import annotations

import os
from typing import Any


def test_spark_s_local_and_temp_directories_are_in_the_run_s_basetemp(spark: Any, tmp_path_factory: Any) -> None:
    base = os.path.realpath(tmp_path_factory.getbasetemp())
    local = os.path.realpath(spark.conf.get("spark.local.dir"))
    assert local.startswith(base + os.sep), (local, base)
    spark.range(10).repartition(2).count()  # a shuffle: the block manager's files
    made = {name.split("-")[0] for name in os.listdir(local)}
    # blockmgr-* and spark-* (PySpark's and the session's files): spark.local.dir;
    # artifacts-*: java.io.tmpdir
    assert {"blockmgr", "spark", "artifacts"} <= made, sorted(os.listdir(local))
