"""iceberg.compaction CP6: when the automatic policy is due, from the snapshots' summaries
alone. A snapshot with no delete file and fewer than N data files is never due, since
CP7 could choose nothing there: a copy-on-write UPDATE or DELETE adds a file and removes
one, so "the files committed since the last replace" grew past N on a table of one file,
and every later write planned the whole table (read every manifest) to compact nothing.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trinitylake_dbapi
from trinitylake_dbapi.iceberg import compaction
from trinitylake_dbapi.iceberg.compaction import auto_compaction_due, choose_tiered, plan_compaction
from tests.iceberg.test_auto_tiers import File, Task

N = 4
MODES = " TBLPROPERTIES ('compaction.auto.min-small-files' = '{n}', 'write.update.mode' = '{mode}', " \
        "'write.delete.mode' = '{mode}')"  # fmt: skip


def _table(n: int | str, mode: str) -> tuple[Any, Any]:
    """(a cursor on a new memory:// lakehouse, its catalog) with default.t (id, v) of
    automatic compaction N = ``n`` and UPDATE/DELETE mode ``mode``."""
    conn = trinitylake_dbapi.connect(f"memory://due-{uuid.uuid4().hex}/lake", create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.t (id INT, v INT)" + MODES.format(n=n, mode=mode))
    return cur, conn.iceberg_catalog()


def _totals(table: Any) -> tuple[int, int]:
    summary = table.current_snapshot().summary
    return int(summary["total-data-files"]), int(summary["total-delete-files"])


@pytest.mark.parametrize("statement", ["UPDATE default.t SET v = v + 1 WHERE id = {i} % 3",
                                       "DELETE FROM default.t WHERE id = {i}"])  # fmt: skip
@pytest.mark.parametrize("files", [2, N - 1])
def test_copy_on_write_writes_to_a_table_of_fewer_than_n_files_are_never_due(statement: str, files: int,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Before: due after N copy-on-write writes, and each later one planned the table."""
    cur, catalog = _table(N, "copy-on-write")
    for f in range(files):
        cur.execute("INSERT INTO default.t VALUES " + ", ".join(f"({f * 100 + i}, 0)" for i in range(20)))
    plans: list[Any] = []
    monkeypatch.setattr(compaction, "plan_compaction", lambda *a, **k: plans.append(a) or plan_compaction(*a, **k))
    for i in range(2 * N):
        cur.execute(statement.format(i=i))
        table = catalog.load_table("default.t")
        assert _totals(table) == (files, 0)
        assert not auto_compaction_due(table.metadata), i
    assert plans == []
    cur.execute("SELECT count(*) FROM default.t")
    assert cur.fetchone()[0] == 20 * files - (2 * N if statement.startswith("DELETE") else 0)


def test_n_small_files_or_a_delete_file_are_still_due() -> None:
    """The rule's other side: N small data files, or fewer with a delete file
    (merge-on-read), are due as before, and the write compacts them."""
    cur, catalog = _table(0, "merge-on-read")  # off while the history is made
    for f in range(N):
        cur.execute(f"INSERT INTO default.t VALUES ({f}, 0)")
    table = catalog.load_table("default.t")
    with_n = table.metadata.model_copy(update={"properties": {**table.metadata.properties,
                                                              "compaction.auto.min-small-files": str(N)}})  # fmt: skip
    assert _totals(table) == (N, 0) and auto_compaction_due(with_n)

    cur, catalog = _table(0, "merge-on-read")
    cur.execute("INSERT INTO default.t VALUES (1, 0), (2, 0)")
    for i in range(N):
        cur.execute(f"UPDATE default.t SET v = {i} WHERE id = 1")  # a delete file and a data file each
    table = catalog.load_table("default.t")
    with_n = table.metadata.model_copy(update={"properties": {**table.metadata.properties,
                                                              "compaction.auto.min-small-files": str(N)}})  # fmt: skip
    _, deletes = _totals(table)
    assert deletes > 0 and auto_compaction_due(with_n)
    assert plan_compaction(table, tiered=N) is not None  # CP7 chooses the files with deletes


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(2, 20),
    rows=st.lists(st.integers(1, 10_000_000), max_size=19),
    partitions=st.integers(1, 3),
)
def test_cp7_chooses_nothing_among_fewer_than_n_files_without_deletes(n: int, rows: list[int], partitions: int) -> None:
    """The rule's ground: with no delete file, CP7 chooses a tier only when it holds N
    files, so fewer than N data files in all (whatever their sizes and partitions) give
    nothing to compact."""
    tasks = [Task(File(r, partition=(i % partitions,))) for i, r in enumerate(rows[: n - 1])]
    assert choose_tiered(tasks, 1_000_000_000, n) == []
