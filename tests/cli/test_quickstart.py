"""scripts/quickstart's tour (scripts/_tour.sh) runs clean and shows what users come for:
rows in two tables, a join with an aggregate, transactions over both tables, time travel
and a rollback of both. (The quickstart itself also installs .venv; the tour is the part
that can break with the code, so the test runs it on this interpreter.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import warm_cli
from deadlines import HANG_S

# Slow: the whole tour, in a shell, as processes (scripts/test --quick leaves it out).
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def _squeeze(text: str) -> str:
    return re.sub(r"[ \t]+", " ", text)


def test_the_tour_runs_and_shows_data_merge_partitions_keys_time_travel_and_rollback(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]]),
           "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "dialect"), os.environ.get("PYTHONPATH", "")])}
    # The tour's `trinitylake` commands run forked from a warm process that has the package
    # imported (tests/warm_cli.py: a bash function of that name), not in fresh interpreters.
    env = warm_cli.env(env)
    lake = tmp_path / "lake"
    done = subprocess.run(["bash", str(REPO / "scripts" / "_tour.sh"), str(lake), "1"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=HANG_S,
                          cwd=tmp_path)  # fmt: skip
    out = _squeeze(done.stdout)
    assert done.returncode == 0, done.stdout
    assert "Traceback" not in out and "InternalError" not in out
    # 2: one transaction over both tables
    assert "OK, 3 rows\nOK, 4 rows\nOK\n" in out
    # 3: the join and the aggregate
    assert " Lisbon | 2 | 3 | 161.50\n Oslo | 1 | 1 | 5.25\n(2 rows)" in out
    # 4: the second transaction is one version that names both tables
    assert " 5 | table sales.orders, table sales.customers" in out or \
        " 5 | table sales.customers, table sales.orders" in out
    # 4: the MERGE updated one customer and inserted one; orders are partitioned by day
    assert "OK, 1 row\nOK, 2 rows\nOK, 2 rows\nOK, 1 row\nOK\n" in out
    assert " 0 | placed_at_day=2026-11-04 | 1 | 1 |" in out and "(4 rows)" in out
    # 5: time travel next to the present
    assert " 3 | 4 | 166.75 | 434.75 | paid\n(1 row)" in out
    # 6: the rollback brings back both tables' rows
    assert (" Ana | Lisbon | 10 | 99.50 | paid\n Ana | Lisbon | 11 | 20.00 | paid\n"
            " Bo | Oslo | 12 | 5.25 | new\n Cy | Lisbon | 13 | 42.00 | paid\n(4 rows)") in out
    # 7: errors name what is wrong, the shell goes on
    assert "ERROR: column 'amount': unknown type 'MONEY'" in out
    assert "ERROR: syntax error at line 1, column 39" in out
    assert "ERROR: PRIMARY KEY constraint failed: table sales.customers already holds key (id) = (1)" in out
    assert lake.is_dir()  # KEEP=1


def test_the_quickstart_hands_over_to_the_tour() -> None:
    script = (REPO / "scripts" / "quickstart").read_text(encoding="utf-8")
    assert "scripts/_tour.sh" in script
    assert subprocess.run(["bash", "-n", str(REPO / "scripts" / "quickstart")]).returncode == 0
    assert os.access(REPO / "scripts" / "_tour.sh", os.X_OK)
