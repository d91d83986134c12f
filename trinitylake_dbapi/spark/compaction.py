"""Compaction on Spark (issue 34): the local compaction's three steps
(:mod:`trinitylake_dbapi.iceberg.compaction`), with the rewriting on the executors.

Rules:

  SK1 The driver plans exactly as the local code plans (``plan_compaction``: CP1 on the
      table's current snapshot) and commits exactly as it commits
      (``commit_compaction``: CP3-CP5, one replace snapshot, one lakehouse version,
      rebased over appends that came first). Only CP2 runs elsewhere: one Spark task per
      partition group, each reading its group's files (deletes applied) and writing
      files of the target size through its own FileIO, made durable (io F1) before the
      task returns their DataFiles to the driver. So a table compacted here and the same
      table compacted locally hold the same rows in files within the same target.
  SK2 A task that fails fails the job, and nothing is committed: the files written by
      tasks that did finish are orphans that version expiration removes after its grace
      (maintenance E4/E8), as for any writer that did not commit.

Needs classic Spark (``sparkContext``) and a location every executor can reach.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from ..iceberg.compaction import CompactionPlan, CompactionResult, commit_compaction, plan_compaction, rewrite_group
from . import _runtime as rt
from .tabledata import open_catalog

__all__ = ["optimize_table"]


def _rewrite(location: rt.Location, plan: CompactionPlan) -> Callable[[Iterable[int]], Iterator[Any]]:
    """SK1: the executor side: rewrite the groups given by index, durable, and return
    their DataFiles."""

    def run(indexes: Iterable[int]) -> Iterator[Any]:
        from ..iceberg.io import DurableFileIO, file_io_properties

        rt.settle()  # rt WK1
        io = DurableFileIO(file_io_properties(location.storage_options))
        written = []
        for index in indexes:
            written += rewrite_group(io, plan, index)
        io.sync_written()  # io F1: durable before the driver names them
        yield from written

    return run


def optimize_table(
    spark: Any,
    location: str,
    table: str,
    *,
    storage_options: dict | None = None,
    target_file_size_bytes: int | None = None,
) -> CompactionResult:
    """Compact ``table`` ("namespace.name") of the lakehouse at ``location`` with its
    files rewritten on Spark's executors (SK1); what it did (all zero: nothing to do)."""
    loc = rt.Location.of(location, storage_options)
    catalog = open_catalog(loc)
    target = catalog.load_table(table)
    plan = plan_compaction(target, target_file_size_bytes)
    if plan is None:
        return CompactionResult()
    sc = spark.sparkContext
    sc.setJobGroup(f"trinitylake-optimize-{table}", f"trinitylake optimize {table}")
    groups = len(plan.groups)
    added = sc.parallelize(range(groups), max(1, groups)).mapPartitions(_rewrite(loc, plan)).collect() if groups else []
    return commit_compaction(target, plan, list(added))
