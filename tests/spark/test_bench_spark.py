"""The Spark section of the benchmark (``python -m bench --only spark``) on the tests'
SparkSession: a tiny size, one repetition, so the harness keeps working.

tests/bench's smoke run leaves this section out: it would start a SparkSession of its
own (10 s to a minute here). Run on the shared session, with no warm-up round, it costs 10-15 s (a dozen small
Spark jobs). It
measures nothing worth reading; it checks that every side writes and reads the same
rows, that our side commits one lakehouse version per write, and that the report renders.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from bench import report  # noqa: E402
from bench.spark import PEERS, SIDES  # noqa: E402
from bench.spark import spark as spark_section  # noqa: E402


def test_spark_section_on_the_shared_session(spark: Any, tmp_path: Any) -> None:
    lines: list[str] = []
    # the section asserts internally that every side's aggregate equals pyarrow's over
    # the same rows and that each of our writes adds exactly one lakehouse version
    out = spark_section(str(tmp_path), 3_000, 1, lines.append, session=spark, warm_up=False)
    assert out["rows"] == 3_000 and out["partitions"] == 2
    assert out["session_start_s"] is None  # the session was given, not started
    assert set(out["median_seconds"]) == set(SIDES)
    assert all(t > 0 for side in SIDES for t in out["median_seconds"][side].values())
    assert set(out["ratio"]) == set(PEERS)
    assert out["warm_up_seconds"] == {}
    files = out["data_files"]
    assert files["trinitylake"]["files"] == 2  # one data file per task
    assert files["python-datasource"]["files"] == 2 and files["pyarrow"]["files"] == 1
    assert all(f["bytes"] > 0 for f in files.values())
    assert any(line.startswith("spark: rep 1/1") for line in lines)
    rendered = report.spark(out)
    assert rendered.count("| write 3,000 rows") == len(PEERS)
    assert rendered.count("| read 3,000 rows") == len(PEERS)
    assert "no warm-up round" in rendered
    assert spark.range(3).count() == 3  # a given session is left running
