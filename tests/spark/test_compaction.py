"""Compaction on Spark (issue 34, acceptance 4): the same table compacted locally and on
Spark's executors holds the same rows, in files within the same target (spark.compaction
SK1), as one replace snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog
from trinitylake_dbapi.spark import optimize_table

TARGET = 20_000


def build(location: str) -> None:
    catalog = TrinityLakeCatalog("c", uri=location, create="true")
    schema = pa.schema([("id", pa.int64()), ("part", pa.int32()), ("name", pa.large_string())])
    table = catalog.create_table("default.t", schema, properties={"write.target-file-size-bytes": str(TARGET)})
    for chunk in range(24):
        ids = list(range(chunk * 300, (chunk + 1) * 300))
        table.append(pa.table({"id": ids, "part": [i % 3 for i in ids], "name": [f"row {i} " * 2 for i in ids]},
                              schema=schema))  # fmt: skip


def state(location: str) -> tuple[list, list[int], str]:
    table = TrinityLakeCatalog("check", uri=location).load_table("default.t")
    rows = sorted(zip(*table.scan().to_arrow().to_pydict().values()))
    sizes = sorted(t.file.file_size_in_bytes for t in table.scan().plan_files())
    return rows, sizes, table.metadata.current_snapshot().summary.operation.value


def test_spark_and_local_compaction_give_the_same_table(spark: Any, tmp_path: Path) -> None:
    local, remote = str(tmp_path / "local"), str(tmp_path / "remote")
    build(local)
    build(remote)  # the same appends: the same rows in the same files' shapes
    rows_before, sizes_before, _ = state(local)
    done_local = TrinityLakeCatalog("c", uri=local).optimize_table("default.t")
    done_spark = optimize_table(spark, remote, "default.t")
    assert done_spark.rewritten_data_files == done_local.rewritten_data_files == len(sizes_before)
    rows_local, sizes_local, op_local = state(local)
    rows_spark, sizes_spark, op_spark = state(remote)
    assert rows_spark == rows_local == rows_before
    assert op_spark == op_local == "replace"
    assert len(sizes_spark) == len(sizes_local) < len(sizes_before)
    assert max(sizes_spark) <= TARGET * 1.1 and max(sizes_local) <= TARGET * 1.1
    assert optimize_table(spark, remote, "default.t").snapshot_id is None  # compact: nothing to do
