"""iceberg.encodings PE1-PE3 (writing W10): a data file's column keeps its Parquet
dictionary exactly when parquet-mr's test says it pays on the file's first page of
values, decided here by an oracle in plain Python (a set of the values, their sizes)
over random columns: types of each width, cardinalities from all-equal to unique,
nulls, the page-row limit that bounds the sample; with ``write.parquet.integer-encoding
= delta``, exactly the integer columns left without one are DELTA_BINARY_PACKED; the
rows read back are the rows written, through pyarrow and DuckDB.
"""

from __future__ import annotations

import datetime
import decimal
import tempfile
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import WriteTask
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import SortOrder
from pyiceberg.types import (
    BinaryType, DateType, DecimalType, DoubleType, FixedType, IntegerType, LongType, NestedField, StringType,
    StructType, TimestampType,
)

from trinitylake_dbapi.iceberg.io import DurableFileIO
from trinitylake_dbapi.iceberg.writing import for_writing, write_files

_EPOCH = datetime.datetime(2026, 1, 1)
#: (Iceberg type, its Parquet plain width (None: variable, its bytes + 4), value of a number).
_KINDS: dict[str, tuple[Any, int | None, Any]] = {
    "long": (LongType(), 8, lambda i: i * 7_919 - 10**12),
    "int": (IntegerType(), 4, lambda i: i - 1000),
    "date": (DateType(), 4, lambda i: datetime.date(2020, 1, 1) + datetime.timedelta(days=i)),
    "timestamp": (TimestampType(), 8, lambda i: _EPOCH + datetime.timedelta(microseconds=i * 1_001)),
    "double": (DoubleType(), 8, lambda i: i * 1.5),
    "decimal(9,2)": (DecimalType(9, 2), 4, lambda i: decimal.Decimal(i) / 100),
    "decimal(18,3)": (DecimalType(18, 3), 8, lambda i: decimal.Decimal(i) / 1000),
    "decimal(30,4)": (DecimalType(30, 4), 13, lambda i: decimal.Decimal(i) * 10**20 / 10**4),
    "fixed(3)": (FixedType(3), 3, lambda i: i.to_bytes(3, "big")),
    "string": (StringType(), None, lambda i: f"value {i}" * (i % 3)),
    "binary": (BinaryType(), None, lambda i: bytes(i % 11) + i.to_bytes(4, "big")),
}


def _pays(values: list[Any], width: int | None, page_bytes: int = 1 << 20) -> bool | None:
    """The oracle of PE1 on a leaf's sampled values (the non-null ones, up to ``page_bytes``
    of plain values, at least one): None when nothing is known (no value)."""
    def size(v: Any) -> int:
        if width is not None:
            return width
        return len(v.encode() if isinstance(v, str) else v) + 4

    present: list[Any] = []
    total = 0
    for v in values:
        if v is None:
            continue
        total += size(v)
        if present and total > page_bytes:
            break
        present.append(v)
    if not present:
        return None
    distinct = set(present)

    plain = sum(size(v) for v in present)
    dictionary = sum(size(v) for v in distinct)
    bits = (len(distinct) - 1).bit_length()
    return -(-len(present) * bits // 8) + dictionary < plain


def _write(tmp: Path, fields: list[NestedField], rows: list[dict], properties: dict[str, str]) -> Any:
    """Write ``rows`` as one data file of a new table with ``fields``; its DataFile."""
    location = f"file://{tempfile.mkdtemp(dir=tmp)}"
    metadata = for_writing(new_table_metadata(Schema(*fields), PartitionSpec(), SortOrder(), location, properties))
    table = pa.Table.from_pylist(rows, schema=schema_to_pyarrow(metadata.schema()))
    task = WriteTask(write_uuid=uuid.uuid4(), task_id=0, schema=metadata.schema(), record_batches=table.to_batches())
    (data_file,) = write_files(DurableFileIO(), metadata, iter([task]))
    return data_file, table


def _dictionary_leaves(path: str) -> dict[str, bool]:
    meta = pq.ParquetFile(path).metadata
    return {meta.row_group(0).column(c).path_in_schema: meta.row_group(0).column(c).has_dictionary_page
            for c in range(meta.num_columns)}  # fmt: skip


def _encodings(path: str) -> dict[str, set[str]]:
    """The encodings of each leaf column of the Parquet file at ``path``, over its row groups."""
    meta = pq.ParquetFile(path).metadata
    out: dict[str, set[str]] = {}
    for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            column = meta.row_group(g).column(c)
            out.setdefault(column.path_in_schema, set()).update(column.encodings)
    return out


@st.composite
def _column(draw: Any) -> tuple[str, list[Any]]:
    """(a kind of _KINDS, the column's values: drawn from a pool of 1 to 300 numbers, some None)."""
    kind = draw(st.sampled_from(sorted(_KINDS)))
    pool = draw(st.sampled_from([1, 2, 3, 10, 40]) | st.integers(1, 300))
    count = draw(st.integers(1, 300))
    nulls = draw(st.sampled_from([0.0, 0.0, 0.3, 1.0]))
    numbers = draw(st.lists(st.integers(0, pool - 1), min_size=count, max_size=count)) if pool > 1 else [0] * count
    if draw(st.booleans()):
        numbers = sorted(set(numbers)) or [0]  # unique values, as a key column
    flags = draw(st.lists(st.floats(0, 1), min_size=len(numbers), max_size=len(numbers)))
    make = _KINDS[kind][2]
    return kind, [None if f < nulls else make(n) for n, f in zip(numbers, flags)]


#: PE3: the kinds stored as Parquet INT32 or INT64.
_INTEGERS = {"long", "int", "date", "timestamp", "decimal(9,2)", "decimal(18,3)"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(columns=st.lists(_column(), min_size=1, max_size=3), sample=st.sampled_from([1, 7, 64, 20000]),
       encoding=st.sampled_from([None, "plain", "delta", "delta", " Delta ", "zigzag"]),
       page_bytes=st.sampled_from([None, None, 1, 64, 700]))
def test_a_column_keeps_its_dictionary_exactly_when_it_pays(tmp_path: Path, columns: list[tuple[str, list[Any]]],
                                                             sample: int, encoding: str | None,
                                                             page_bytes: int | None) -> None:  # fmt: skip
    n = min(len(values) for _, values in columns)
    fields = [NestedField(i + 1, f"c{i}", _KINDS[kind][0], required=False) for i, (kind, _) in enumerate(columns)]
    # one struct too: its leaves are decided as top-level columns are
    fields.append(NestedField(len(columns) + 1, "s", StructType(
        NestedField(len(columns) + 2, "inner", _KINDS[columns[0][0]][0], required=False)), required=False))
    rows = [{**{f"c{i}": values[r] for i, (_, values) in enumerate(columns)}, "s": {"inner": columns[0][1][r]}}
            for r in range(n)]  # fmt: skip
    properties = {"write.parquet.page-row-limit": str(sample)}
    if encoding is not None:
        properties["write.parquet.integer-encoding"] = encoding
    if page_bytes is not None:
        properties["write.parquet.page-size-bytes"] = str(page_bytes)
    data_file, table = _write(tmp_path, fields, rows, properties)
    path = data_file.file_path.removeprefix("file://")
    has = _dictionary_leaves(path)
    expected = {f"c{i}": _pays(values[:min(n, sample)], _KINDS[kind][1], page_bytes or 1 << 20)
                for i, (kind, values) in enumerate(columns)}  # fmt: skip
    expected["s.inner"] = expected["c0"]
    kinds = {**{f"c{i}": kind for i, (kind, _) in enumerate(columns)}, "s.inner": columns[0][0]}
    assert set(has) == set(expected)
    delta = (encoding or "").strip().lower() == "delta"
    encodings = _encodings(path)
    for leaf, pays in expected.items():
        event(f"pays: {pays}")
        if pays is not None:  # PE1; with no value in the sample the dictionary stays (pyarrow's default)
            assert has[leaf] == pays, leaf
        # PE3: DELTA_BINARY_PACKED exactly in the integer leaves without a dictionary, when opted in
        expect_delta = delta and pays is False and kinds[leaf] in _INTEGERS
        event(f"delta: {expect_delta}")
        assert ("DELTA_BINARY_PACKED" in encodings[leaf]) == expect_delta, (leaf, encodings[leaf])
    read = pq.read_table(path)
    assert read.to_pylist() == table.to_pylist()  # PE2: the same rows
    with duckdb.connect() as con:  # and DuckDB reads them as pyarrow does
        got = con.execute(f"SELECT * FROM read_parquet('{path}') ORDER BY file_row_number").fetchall()
    assert [dict(zip(read.column_names, r)) for r in got] == read.to_pylist()


def test_the_bench_table_keeps_dictionaries_only_where_they_pay(tmp_path: Path) -> None:
    """The table of ``bench --only everyday``: the unique ``id`` is PLAIN, the 100 values of
    ``k`` and the 997 of ``v`` keep their dictionaries; a one-row file has none; a column
    of one value repeated keeps its dictionary."""
    fields = [NestedField(1, "id", LongType(), required=False), NestedField(2, "k", LongType(), required=False),
              NestedField(3, "v", DecimalType(21, 1), required=False), NestedField(4, "same", StringType(), required=False)]
    rows = [{"id": i, "k": i % 100, "v": decimal.Decimal(i % 997) * decimal.Decimal("1.5"), "same": "x"} for i in range(30_000)]
    data_file, _ = _write(tmp_path, fields, rows, {})
    assert _dictionary_leaves(data_file.file_path.removeprefix("file://")) == {"id": False, "k": True, "v": True, "same": True}
    data_file, _ = _write(tmp_path, fields, rows[7:8], {})
    assert _dictionary_leaves(data_file.file_path.removeprefix("file://")) == {"id": False, "k": False, "v": False, "same": False}
    # PE1's sample is one page of values: 1,100 distinct 1 KB strings fill it, so no
    # dictionary, though the 20,000 rows would have paid (1,100 values repeated after)
    long = [{"id": i, "k": 0, "v": decimal.Decimal(0), "same": f"{i % 1100:04d}" * 250} for i in range(20_000)]
    data_file, _ = _write(tmp_path, fields, long, {})
    assert _dictionary_leaves(data_file.file_path.removeprefix("file://"))["same"] is False
    # PE3: opted in, the unique id is DELTA_BINARY_PACKED; DuckDB reads the same rows
    data_file, table = _write(tmp_path, fields, rows, {"write.parquet.integer-encoding": "delta"})
    path = data_file.file_path.removeprefix("file://")
    assert _dictionary_leaves(path) == {"id": False, "k": True, "v": True, "same": True}
    assert [leaf for leaf, found in _encodings(path).items() if "DELTA_BINARY_PACKED" in found] == ["id"]
    with duckdb.connect() as con:
        got = con.execute(f"SELECT sum(id), sum(k), sum(v), count(same) FROM read_parquet('{path}')").fetchone()
    assert got == (sum(r["id"] for r in rows), sum(r["k"] for r in rows), sum(r["v"] for r in rows), len(rows))


def _page_indexed(path: str) -> bool:
    meta = pq.ParquetFile(path).metadata
    chunks = [meta.row_group(g).column(c) for g in range(meta.num_row_groups) for c in range(meta.num_columns)]
    assert len({(c.has_column_index, c.has_offset_index) for c in chunks}) == 1  # all or none
    return chunks[0].has_column_index and chunks[0].has_offset_index


@pytest.mark.parametrize(("rows", "text", "indexed"), [
    (1, 10, False), (20_000, 10, False), (20_001, 10, True), (2_000, 1_000, True), (120_000, 10, True),
])  # fmt: skip
def test_a_file_of_more_than_one_page_carries_the_page_index(tmp_path: Path, rows: int, text: int, indexed: bool) -> None:
    """PE4: more than 20,000 rows or more than a page (1 MiB) of data: ColumnIndex and
    OffsetIndex in every column chunk; the same rows and DataFile (sizes aside) as
    PyIceberg's ``write_file``, and DuckDB's range filter reads the same rows."""
    from pyiceberg.io.pyarrow import write_file

    fields = [NestedField(1, "id", LongType(), required=False), NestedField(2, "s", StringType(), required=False)]
    values = [{"id": i, "s": f"{i:0{text}d}"} for i in range(rows)]
    data_file, table = _write(tmp_path, fields, values, {})
    path = data_file.file_path.removeprefix("file://")
    assert _page_indexed(path) is indexed
    assert pq.read_table(path).to_pylist() == table.to_pylist()
    location = f"file://{tempfile.mkdtemp(dir=tmp_path)}"
    metadata = for_writing(new_table_metadata(Schema(*fields), PartitionSpec(), SortOrder(), location, {}))
    task = WriteTask(write_uuid=uuid.uuid4(), task_id=0, schema=metadata.schema(), record_batches=table.to_batches())
    (theirs,) = write_file(DurableFileIO(), metadata, iter([task]))
    skip = {5, 6, 13}  # PE2: file_size_in_bytes, column_sizes, split_offsets
    assert [data_file[i] for i in range(len(data_file)) if i not in skip and i != 1] == \
        [theirs[i] for i in range(len(theirs)) if i not in skip and i != 1]  # fmt: skip
    low = rows // 2
    with duckdb.connect() as con:
        got = con.execute(f"SELECT id FROM read_parquet('{path}') WHERE id >= {low} AND id < {low} + 100 ORDER BY id").fetchall()
    assert [g[0] for g in got] == list(range(low, min(rows, low + 100)))
