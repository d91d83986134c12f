"""A minimal Python data source for the Spark benchmark (bench/spark.py): Parquet files
written and read with pyarrow alone, through the same PySpark Python Data Source API as
the ``trinitylake`` format, but with no Iceberg metadata, no statistics and no commit.

It separates what the API itself costs (Spark's rows to Arrow batches, the socket to a
Python worker, and back) from what the ``trinitylake`` format adds. Imported only when
PySpark is; Spark's Python workers import it by name, so the repository root is on their
PYTHONPATH (bench/spark.py ``start_session``).

Options: ``path``, a directory. A write puts one file per task in it (zstd, as the
other sides), written when the task has all its rows, as ``trinitylake``'s writer does
(one row group per file at these sizes, not one per Arrow batch of 10,000 rows); a read
makes one partition per file. Overwrite and append are the same
(the benchmark writes each time into a new directory).
"""

from __future__ import annotations

import os
import uuid
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

NAME = "bench-parquet"
CODEC = "zstd"


class ParquetFilesSource(DataSource):
    """``format("bench-parquet")``: see the module docstring. Reads need ``.schema(...)``."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def writer(self, schema: Any, overwrite: bool) -> "FilesWriter":
        return FilesWriter(self.options["path"])

    def reader(self, schema: Any) -> "FilesReader":
        from pyspark.sql.pandas.types import to_arrow_schema

        return FilesReader(self.options["path"], to_arrow_schema(schema, timezone="UTC"))


class FilesWriter(DataSourceArrowWriter):
    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        """One file per task, with all of the task's rows."""
        batches = list(iterator)
        if batches:
            os.makedirs(self.path, exist_ok=True)
            name = os.path.join(self.path, f"part-{uuid.uuid4().hex}.parquet")
            pq.write_table(pa.Table.from_batches(batches), name, compression=CODEC)
        return WriterCommitMessage()


class FilesReader(DataSourceReader):
    def __init__(self, path: str, schema: pa.Schema) -> None:
        self.path, self.schema = path, schema

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(os.path.join(self.path, f)) for f in sorted(os.listdir(self.path))
                if f.endswith(".parquet")]  # fmt: skip

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        for batch in pq.ParquetFile(partition.value).iter_batches():
            yield pa.RecordBatch.from_arrays(
                [column.cast(field.type) for column, field in zip(batch.columns, self.schema)], schema=self.schema
            )
