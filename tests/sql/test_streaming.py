"""Streaming (issue 18, acceptance 5): a SELECT of a 10,000,000-row table read with
``fetchmany(10_000)`` keeps the reading process's peak RSS under 500 MB (rule Q5 of
trinitylake_dbapi.sql.query: DuckDB produces record batches as the cursor fetches).

The table is written and read by two processes of their own, and the reader measures its
own peak RSS (``VmHWM``: ``ru_maxrss`` starts at the forking process's RSS, which in a
pytest worker that ran other tests was already 700 MB). About a minute and a half on a
loaded 2-core host.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from deadlines import HANG_S

ROWS = 10_000_000
LIMIT_MB = 500

WRITE = textwrap.dedent(
    """
    import sys
    import trinitylake_dbapi as tl

    conn = tl.connect(sys.argv[1], create=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute("CREATE TABLE ns.big (id BIGINT, label STRING)")
    step = 2_000_000  # five appends in one transaction: five data files, bounded memory
    for start in range(0, int(sys.argv[2]), step):
        cur.execute(f"INSERT INTO ns.big SELECT range, 'row-' || CAST(range AS VARCHAR) "
                    f"FROM range({start}, {start + step})")
    conn.commit()
    """
)

READ = textwrap.dedent(
    """
    import json, sys, time
    import trinitylake_dbapi as tl

    def peak_mb():
        # VmHWM: the peak RSS of this program's own memory. (ru_maxrss would not do: Linux
        # keeps it across exec, so it starts at the RSS of the process that forked us.)
        with open("/proc/self/status") as status:
            line = next(row for row in status if row.startswith("VmHWM:"))
        return int(line.split()[1]) / 1024

    started = time.perf_counter()
    cur = tl.connect(sys.argv[1]).cursor()
    cur.execute("SELECT id, label FROM ns.big")
    rows = total = 0
    labels_ok = True
    while chunk := cur.fetchmany(10_000):
        rows += len(chunk)
        total += sum(r[0] for r in chunk)
        labels_ok = labels_ok and chunk[-1][1] == f"row-{chunk[-1][0]}"
    print(json.dumps({"rows": rows, "sum": total, "labels_ok": labels_ok,
                      "seconds": time.perf_counter() - started,
                      "peak_mb": peak_mb()}))
    """
)


def _run(script: str, *args: str) -> str:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True,
                          text=True, timeout=HANG_S)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="reads VmHWM from /proc/self/status")
def test_fetchmany_over_ten_million_rows_stays_under_500_mb(tmp_path: Any) -> None:
    location = str(tmp_path / "lake")
    _run(WRITE, location, str(ROWS))
    report = json.loads(_run(READ, location))
    assert report["rows"] == ROWS and report["sum"] == ROWS * (ROWS - 1) // 2 and report["labels_ok"]
    assert report["peak_mb"] < LIMIT_MB, report
