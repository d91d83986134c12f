"""A fresh installation: no registration call needed (issue 19, acceptance 1).

It starts its own SparkSession in a subprocess, not the tests' shared one, so
tests/conftest.py keeps it off the worker that runs the rest of tests/spark: the two
JVMs then run side by side instead of one after the other.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

from deadlines import HANG_S

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_fresh_session_finds_the_format_with_no_registration(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Acceptance 1: the distribution installs pyspark_trinitylake; a new SparkSession
    in a new process reads and writes format("trinitylake") without register()."""
    source, target = tmp_path / "source", tmp_path / "site"
    source.mkdir()
    for part in ("pyproject.toml", "README.md", "trinitylake_dbapi", "dialect", "pyspark_trinitylake"):
        copy = shutil.copytree if os.path.isdir(os.path.join(REPO, part)) else shutil.copy
        copy(os.path.join(REPO, part), source / part, **({"ignore": shutil.ignore_patterns("__pycache__")} if copy is shutil.copytree else {}))
    subprocess.run(
        # No index, no version check: nothing here needs the network.
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "--target", str(target), str(source)],
        check=True, capture_output=True, cwd=tmp_path,
    )  # fmt: skip
    assert (target / "pyspark_trinitylake" / "__init__.py").exists()
    location = str(tmp_path / "lake")
    script = textwrap.dedent(f"""
        import os, sys
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
        os.environ["PYSPARK_PYTHON"] = sys.executable
        import trinitylake_dbapi
        assert trinitylake_dbapi.__file__.startswith({str(target)!r}), trinitylake_dbapi.__file__
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false")
                 .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
                 .getOrCreate())
        with trinitylake_dbapi.connect({location!r}, create=True, autocommit=True) as conn:
            conn.cursor().execute("CREATE NAMESPACE s")
        df = spark.createDataFrame([(1, "a"), (2, "b")], "id bigint, name string")
        df.write.format("trinitylake").option("location", {location!r}).option("table", "s.t") \\
            .option("create", "true").mode("append").save()
        rows = spark.read.format("trinitylake").option("location", {location!r}).option("table", "s.t").load()
        print(sorted((r.id, r.name) for r in rows.collect()))
        spark.stop()
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_LOCAL_IP", "PYSPARK_PYTHON")}
    env["PYTHONPATH"] = str(target)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=HANG_S)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[(1, 'a'), (2, 'b')]"
