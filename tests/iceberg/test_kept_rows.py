"""iceberg.writing W13, compaction CP9: the rows of the small data files this process
writes are kept as a read of each file gives them (values, types, field ids), bounded;
an automatic compaction of one-row files this process wrote reads none of them and
writes the rows a compaction that reads them writes, in the same order."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trinitylake_dbapi
from trinitylake_dbapi.iceberg import writing
from trinitylake_dbapi.iceberg.io import DurableFileIO
from tests.iceberg.test_write_files import _fields, _metadata, _written


def _reprs(table: Any) -> list[list[str]]:
    return [[repr(v) for v in column.to_pylist()] for column in table.columns]  # NaN equals NaN


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), fields=_fields(), files=st.integers(1, 3))
def test_kept_rows_are_what_a_read_of_the_file_gives(tmp_path: Path, data: Any, fields: Any, files: int) -> None:
    import tempfile
    import uuid

    from pyiceberg.io.pyarrow import schema_to_pyarrow

    base = Path(tempfile.mkdtemp(dir=tmp_path))
    metadata = _metadata([f for f, _ in fields], f"file://{base}/t", {})
    rows = data.draw(st.lists(st.fixed_dictionaries({f.name: v for f, v in fields}), min_size=1, max_size=8))
    table = pa.Table.from_pylist(rows, schema=schema_to_pyarrow(metadata.schema(), include_field_ids=False))
    for data_file in _written(writing.write_files, DurableFileIO(), metadata, table, 3, files, uuid.uuid4()):
        kept = writing.kept_rows(data_file.file_path, data_file.file_size_in_bytes)
        if any(not f.field_type.is_primitive for f in metadata.schema().fields):
            assert kept is None  # W13 keeps primitive columns only
            continue
        assert kept is not None
        read = pq.read_table(data_file.file_path.removeprefix("file://"))
        assert kept.schema.equals(read.schema, check_metadata=True)
        assert _reprs(kept) == _reprs(read)
        assert writing.kept_rows(data_file.file_path, data_file.file_size_in_bytes + 1) is None  # another size


def test_the_kept_rows_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uuid

    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyiceberg.types import LongType, NestedField

    monkeypatch.setattr(writing, "KEPT_ROWS_BYTES", 64 * 1024)
    metadata = _metadata([NestedField(0, "id", LongType(), required=False)], f"file://{tmp_path}/t", {})
    arrow_schema = schema_to_pyarrow(metadata.schema(), include_field_ids=False)
    written = []
    for n in range(40):
        table = pa.Table.from_pylist([{"id": n * 1000 + i} for i in range(1000)], schema=arrow_schema)
        written += _written(writing.write_files, DurableFileIO(), metadata, table, 1000, 1, uuid.uuid4())
        assert writing.kept_rows_bytes() <= 64 * 1024
    assert writing.kept_rows(written[-1].file_path, written[-1].file_size_in_bytes) is not None
    assert writing.kept_rows(written[0].file_path, written[0].file_size_in_bytes) is None  # the oldest went first
    big = pa.Table.from_pylist([{"id": i} for i in range(writing.KEPT_FILE_ROWS + 1)], schema=arrow_schema)
    (large,) = _written(writing.write_files, DurableFileIO(), metadata, big, writing.KEPT_FILE_ROWS + 1, 1, uuid.uuid4())
    assert writing.kept_rows(large.file_path, large.file_size_in_bytes) is None


def _row(i: int) -> tuple:
    return (i, f"name {i}", i * 1.5, datetime.date(2026, 1, 1) + datetime.timedelta(days=i % 5), decimal.Decimal(i) / 4)


def _compacted(path: Path, keep: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], int]:
    """The rows of one-row INSERTs after the automatic compaction (CP6, N = 4), each data
    file's in file order, and how many Parquet files the compacting INSERT opened."""
    conn = trinitylake_dbapi.connect(str(path), create=True, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE ns")
        cur.execute("CREATE TABLE ns.t (id BIGINT, name STRING, amount DOUBLE, day DATE, d DECIMAL(10, 2)) "
                    "TBLPROPERTIES ('compaction.auto.min-small-files' = '4')")  # fmt: skip
        for i in range(3):
            cur.execute("INSERT INTO ns.t VALUES (?, ?, ?, ?, ?)", _row(i))
        if not keep:
            monkeypatch.setattr(writing, "_kept", type(writing._kept)())
        opened: list[Any] = []
        real = pq.ParquetFile

        def counted(*args: Any, **kwargs: Any) -> Any:
            opened.append(args)
            return real(*args, **kwargs)

        monkeypatch.setattr(pq, "ParquetFile", counted)
        try:
            cur.execute("INSERT INTO ns.t VALUES (?, ?, ?, ?, ?)", _row(3))  # the fourth: compacted
        finally:
            monkeypatch.setattr(pq, "ParquetFile", real)
        table = conn.iceberg_catalog().load_table("ns.t")
        assert table.current_snapshot().summary.operation.value == "replace"
        files = sorted(t.file.file_path for t in table.scan().plan_files())
        assert len(files) == 1
        return pq.read_table(files[0].removeprefix("file://")).to_pylist(), len(opened)
    finally:
        conn.close()


def test_an_automatic_compaction_reads_none_of_the_files_it_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept_rows, kept_opened = _compacted(tmp_path / "kept", True, monkeypatch)
    read_rows, read_opened = _compacted(tmp_path / "read", False, monkeypatch)
    assert kept_opened == 0
    assert read_opened == 3  # the three files written before the kept rows were dropped
    assert kept_rows == read_rows  # the same rows in the same order
    assert sorted(kept_rows, key=lambda r: r["id"]) == [dict(zip(("id", "name", "amount", "day", "d"), _row(i)))
                                                        for i in range(4)]  # fmt: skip
