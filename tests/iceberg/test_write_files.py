"""iceberg.writing W9, W10: ``write_files`` writes the data files PyIceberg's
``write_file`` writes, on random schemas (nested types, names PyIceberg sanitizes),
table properties (codecs, metrics modes, row-group and page-row limits) and rows: the
same rows, Parquet schema and field ids, row groups and DataFile (statistics, bounds,
counts), and the same bytes when every column keeps its dictionary (iceberg.encodings
PE2); with a column whose dictionary does not pay (PE1), only its encoding and what
follows from it (the file's and columns' sizes, the row groups' offsets) differ. And
the PyIceberg functions it follows are the ones it was written against.
"""

from __future__ import annotations

import datetime
import decimal
import hashlib
import inspect
import itertools
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st
from pyiceberg.io.pyarrow import ParquetFormatWriter, schema_to_pyarrow, write_file
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema, make_compatible_name
from pyiceberg.table import WriteTask
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import SortOrder
from pyiceberg.types import (
    BinaryType, BooleanType, DateType, DecimalType, DoubleType, FixedType, FloatType, IntegerType, ListType,
    LongType, MapType, NestedField, StringType, StructType, TimestampType, TimestamptzType, TimeType,
)

from trinitylake_dbapi.iceberg.io import DurableFileIO
from trinitylake_dbapi.iceberg.encodings import column_options
from trinitylake_dbapi.iceberg.writing import for_writing, write_files

#: PyIceberg 0.12.0's ``write_file`` and ``ParquetFormatWriter.close``, which W9 follows:
#: when one changes, review iceberg.writing's ``write_files`` and its writer's ``close``.
WRITE_FILE_SHA256 = "6bae342046f4caad1d8f153522a4e96f81046ea1ce482dafbdd6c217e62568df"
CLOSE_SHA256 = "c923907750d8346c4e620d9ea3e7bb31e248724bb30bab634dc9f8a79616ed68"


def test_the_followed_pyiceberg_functions_are_unchanged() -> None:
    for function, digest in ((write_file, WRITE_FILE_SHA256), (ParquetFormatWriter.close, CLOSE_SHA256)):
        source = inspect.getsource(function)
        assert hashlib.sha256(source.encode()).hexdigest() == digest, f"PyIceberg's {function.__qualname__} changed"


_UTC = datetime.timezone.utc
_PRIMITIVES: list[tuple[Any, Any]] = [
    (BooleanType(), st.booleans()),
    (IntegerType(), st.integers(-(2**31), 2**31 - 1)),
    (LongType(), st.integers(-(2**63), 2**63 - 1)),
    (FloatType(), st.floats(width=32)),
    (DoubleType(), st.floats()),
    (DecimalType(9, 2), st.decimals(min_value=-(10**6), max_value=10**6, places=2)),
    (DecimalType(30, 4), st.decimals(min_value=-(10**25), max_value=10**25, places=4)),
    (StringType(), st.text(max_size=30)),
    (BinaryType(), st.binary(max_size=30)),
    (FixedType(3), st.binary(min_size=3, max_size=3)),
    (DateType(), st.dates()),
    (TimeType(), st.times()),
    (TimestampType(), st.datetimes()),
    (TimestamptzType(), st.datetimes(timezones=st.just(_UTC))),
]
#: Names PyIceberg keeps and names it sanitizes (not Avro names).
_NAMES = st.text(alphabet="ab_1 -.é$", min_size=1, max_size=6)


@st.composite
def _type(draw: Any, depth: int = 0) -> tuple[Any, Any]:
    """(an Iceberg type with field ids 0, a strategy of its values)."""
    kind = draw(st.sampled_from(["primitive"] * 4 + (["struct", "list", "map"] if depth < 2 else [])))
    if kind == "primitive":
        return draw(st.sampled_from(_PRIMITIVES))
    if kind == "list":
        element, values = draw(_type(depth + 1))
        return ListType(0, element, element_required=False), st.lists(st.none() | values, max_size=3)
    if kind == "map":
        value, values = draw(_type(depth + 1))
        return (MapType(0, StringType(), 0, value, value_required=False),
                st.dictionaries(st.text(max_size=5), st.none() | values, max_size=3).map(lambda d: list(d.items())))  # fmt: skip
    fields = draw(_fields(depth + 1))
    return StructType(*(f for f, _ in fields)), st.fixed_dictionaries({f.name: v for f, v in fields})


@st.composite
def _fields(draw: Any, depth: int = 0) -> list[tuple[NestedField, Any]]:
    # Unique as PyIceberg sanitizes them too: "1" becomes "_1" (a schema with both is invalid).
    names = draw(st.lists(_NAMES, min_size=1, max_size=4, unique_by=lambda name: make_compatible_name(name).lower()))
    out = []
    for name in names:
        kind, values = draw(_type(depth))
        required = draw(st.booleans())
        out.append((NestedField(0, name, kind, required=required), values if required else st.none() | values))
    return out


_PROPERTIES = st.fixed_dictionaries({}, optional={
    "write.parquet.compression-codec": st.sampled_from(["zstd", "snappy", "gzip", "uncompressed"]),
    "write.metadata.metrics.default": st.sampled_from(["none", "counts", "truncate(4)", "truncate(16)", "full"]),
    "write.parquet.row-group-limit": st.sampled_from(["1", "2", "100"]),
    "write.parquet.page-row-limit": st.sampled_from(["1", "20000"]),
    "write.parquet.dict-size-bytes": st.sampled_from(["8", "2097152"]),
})  # fmt: skip


def _metadata(fields: list[NestedField], location: str, properties: dict[str, str]) -> Any:
    ids = itertools.count(1)  # new_table_metadata assigns fresh ids; these only need to be distinct
    schema = Schema(*(_with_ids(f, ids) for f in fields))
    return for_writing(new_table_metadata(schema, PartitionSpec(), SortOrder(), location, properties))


def _with_ids(field: NestedField, ids: Any) -> NestedField:
    return NestedField(next(ids), field.name, _type_with_ids(field.field_type, ids), required=field.required)


def _type_with_ids(kind: Any, ids: Any) -> Any:
    if isinstance(kind, StructType):
        return StructType(*(_with_ids(f, ids) for f in kind.fields))
    if isinstance(kind, ListType):
        return ListType(next(ids), _type_with_ids(kind.element_type, ids), element_required=False)
    if isinstance(kind, MapType):
        return MapType(next(ids), kind.key_type, next(ids), _type_with_ids(kind.value_type, ids), value_required=False)
    return kind


def _but_path(data_file: Any) -> list[Any]:
    """Every field of ``data_file`` (a PyIceberg DataFile record) but its path."""
    values = [data_file[i] for i in range(len(data_file))]
    assert values[1] == data_file.file_path
    return values[:1] + values[2:]


def _canonical(rows: Any) -> Any:
    """The values of the Arrow table ``rows`` as Python lists, NaN as a string (NaN != NaN)."""
    def canonical(value: Any) -> Any:
        if isinstance(value, float) and value != value:
            return "NaN"
        if isinstance(value, dict):
            return {k: canonical(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [canonical(v) for v in value]
        return value

    return rows.schema, canonical(rows.to_pylist())


#: PE2: the DataFile fields that follow a file's encoding.
_ENCODING_DEPENDENT = ("file_size_in_bytes", "column_sizes", "split_offsets")


def _but_encoding(data_file: Any) -> dict[str, Any]:
    """Every field of ``data_file`` but its path and PE2's encoding-dependent ones."""
    from pyiceberg.manifest import DATA_FILE_TYPE

    names = [f.name for f in DATA_FILE_TYPE[2].fields]
    assert [data_file[i] for i in range(len(names))][1] == data_file.file_path
    return {n: data_file[i] for i, n in enumerate(names) if n != "file_path" and n not in _ENCODING_DEPENDENT}


def _dictionary_leaves(path: str) -> set[str]:
    """The leaf columns of the Parquet file at ``path`` with a dictionary page in some row group."""
    meta = pq.ParquetFile(path).metadata
    return {meta.row_group(g).column(c).path_in_schema for g in range(meta.num_row_groups)
            for c in range(meta.num_columns) if meta.row_group(g).column(c).has_dictionary_page}  # fmt: skip


def _written(function: Any, io: DurableFileIO, metadata: Any, rows: Any, batch_rows: int, files: int, write_uuid: uuid.UUID) -> list[Any]:
    schema = metadata.schema()
    per = max(1, -(-rows.num_rows // files))
    tasks = [
        WriteTask(write_uuid=write_uuid, task_id=i, schema=schema,
                  record_batches=rows.slice(start, per).to_batches(max_chunksize=batch_rows))
        for i, start in enumerate(range(0, rows.num_rows, per))
    ]  # fmt: skip
    return list(function(io, metadata, iter(tasks)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), fields=_fields(), properties=_PROPERTIES, batch_rows=st.integers(1, 5), files=st.integers(1, 3))
def test_write_files_writes_what_write_file_writes(tmp_path: Path, data: Any, fields: Any, properties: dict[str, str],
                                                   batch_rows: int, files: int) -> None:  # fmt: skip
    rows_of = st.fixed_dictionaries({f.name: v for f, v in fields})
    base = Path(tempfile.mkdtemp(dir=tmp_path))
    ours_meta = _metadata([f for f, _ in fields], f"file://{base}/ours", properties)
    theirs_meta = _metadata([f for f, _ in fields], f"file://{base}/theirs", properties)
    rows = data.draw(st.lists(rows_of, min_size=1, max_size=8))
    import pyarrow as pa

    table = pa.Table.from_pylist(rows, schema=schema_to_pyarrow(ours_meta.schema()))
    io = DurableFileIO()
    write_uuid = uuid.uuid4()
    ours = _written(write_files, io, ours_meta, table, batch_rows, files, write_uuid)
    theirs = _written(write_file, io, theirs_meta, table, batch_rows, files, write_uuid)
    assert len(ours) == len(theirs) >= 1
    sample = int(properties.get("write.parquet.page-row-limit", "20000"))
    for mine, its in zip(ours, theirs):
        assert mine.file_path == its.file_path.replace(f"{base}/theirs", f"{base}/ours")
        mine_path, its_path = (f.file_path.removeprefix("file://") for f in (mine, its))
        rows_of_file = pq.read_table(its_path)
        assert _canonical(pq.read_table(mine_path)) == _canonical(rows_of_file)  # the same rows
        assert pq.read_schema(mine_path) == pq.read_schema(its_path)  # the same schema and field ids
        assert _but_encoding(mine) == _but_encoding(its)  # the same counts, bounds, format, spec
        mine_meta, its_meta = pq.ParquetFile(mine_path).metadata, pq.ParquetFile(its_path).metadata
        assert [mine_meta.row_group(g).num_rows for g in range(mine_meta.num_row_groups)] == \
            [its_meta.row_group(g).num_rows for g in range(its_meta.num_row_groups)]  # fmt: skip
        options = column_options(rows_of_file, sample, page_bytes=1 << 20)  # Iceberg's default page size
        event("every dictionary pays" if "use_dictionary" not in options else "some leaf is plain")
        if not options:  # PE2: every dictionary pays, one page: pyarrow was called as PyIceberg calls it
            assert Path(mine_path).read_bytes() == Path(its_path).read_bytes()
            assert _but_path(mine) == _but_path(its)  # sizes and offsets too
        if "use_dictionary" in options:  # PE1: a leaf left out has no dictionary page, and one was
            keep = options["use_dictionary"]
            leaves = {its_meta.schema.column(c).path for c in range(its_meta.num_columns)}
            assert set(keep) < leaves
            assert _dictionary_leaves(mine_path) <= set(keep)


def test_a_schema_change_gets_its_own_setup(tmp_path: Path) -> None:
    """W9's set-up is per (schema, properties): a table whose schema or properties changed
    (same schema id, other columns; other metrics mode) writes what write_file writes."""
    import pyarrow as pa

    io = DurableFileIO()
    for n, (fields, properties) in enumerate([
        ([NestedField(1, "a", LongType(), required=False)], {}),
        ([NestedField(1, "a", StringType(), required=False)], {}),
        ([NestedField(1, "a", StringType(), required=False)], {"write.metadata.metrics.default": "counts"}),
        ([NestedField(1, "a b", StringType(), required=False)], {"write.metadata.metrics.default": "counts"}),
    ]):  # fmt: skip
        ours_meta = _metadata(fields, f"file://{tmp_path}/ours{n}", properties)
        theirs_meta = _metadata(fields, f"file://{tmp_path}/theirs{n}", properties)
        value = 7 if isinstance(fields[0].field_type, LongType) else "x"
        table = pa.Table.from_pylist([{fields[0].name: value}], schema=schema_to_pyarrow(ours_meta.schema()))
        write_uuid = uuid.uuid4()
        (mine,) = _written(write_files, io, ours_meta, table, 5, 1, write_uuid)
        (its,) = _written(write_file, io, theirs_meta, table, 5, 1, write_uuid)
        assert _but_encoding(mine) == _but_encoding(its)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), fields=_fields(), with_ids=st.booleans(), slices=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=4))
def test_a_kept_projection_gives_pyicebergs_batch(data: Any, fields: Any, with_ids: bool, slices: list) -> None:
    """W11: the set-up keeps a projection only when it relabels the batch's own arrays of
    primitive types, and every later batch of that schema (slices included, with and
    without field ids in the batch's schema) gets exactly PyIceberg's projected batch:
    the same values, Arrow schema and field metadata."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import _to_requested_schema

    from trinitylake_dbapi.iceberg import writing

    metadata = _metadata([f for f, _ in fields], "file:///nowhere/t", {})
    schema = metadata.schema()
    setup = writing._Setup(schema, metadata.properties)
    arrow_schema = schema_to_pyarrow(schema, include_field_ids=with_ids)
    rows = data.draw(st.lists(st.fixed_dictionaries({f.name: v for f, v in fields}), min_size=1, max_size=8))
    table = pa.Table.from_pylist(rows, schema=arrow_schema).combine_chunks()
    nested = any(not f.field_type.is_primitive for f in schema.fields)
    for start, length in [(0, len(rows)), *slices]:
        for batch in table.slice(start, length).to_batches():
            theirs = _to_requested_schema(requested_schema=setup.file_schema, file_schema=schema, batch=batch,
                                          downcast_ns_timestamp_to_us=setup.downcast, include_field_ids=True,
                                          format_model=setup.format_model)  # fmt: skip
            ours = writing._projected(setup, schema, batch)
            assert ours.schema.equals(theirs.schema, check_metadata=True)
            assert [[repr(v) for v in c.to_pylist()] for c in ours.columns] == [  # NaN equals NaN here
                [repr(v) for v in c.to_pylist()] for c in theirs.columns]  # fmt: skip
    if nested:
        assert not setup.projections


def test_a_one_row_write_keeps_its_projection(tmp_path: Path) -> None:
    """W11: a table of primitive columns (a one-row INSERT's) projects its first batch
    with PyIceberg and relabels the later ones; the files are write_file's."""
    import pyarrow as pa

    from trinitylake_dbapi.iceberg import writing

    fields = [NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False),
              NestedField(3, "amount", DoubleType(), required=False), NestedField(4, "day", DateType(), required=False)]  # fmt: skip
    io = DurableFileIO()
    for n in range(3):
        ours_meta = _metadata(fields, f"file://{tmp_path}/ours{n}", {"write.metadata.metrics.default": "full"})
        theirs_meta = _metadata(fields, f"file://{tmp_path}/theirs{n}", {"write.metadata.metrics.default": "full"})
        row = {"id": n, "name": f"name {n}", "amount": n * 1.5, "day": datetime.date(2026, 1, 1 + n)}
        table = pa.Table.from_pylist([row], schema=schema_to_pyarrow(ours_meta.schema(), include_field_ids=False))
        write_uuid = uuid.uuid4()
        (mine,) = _written(write_files, io, ours_meta, table, 5, 1, write_uuid)
        (its,) = _written(write_file, io, theirs_meta, table, 5, 1, write_uuid)
        assert _but_encoding(mine) == _but_encoding(its)
        assert pq.read_table(mine.file_path.removeprefix("file://")).equals(pq.read_table(its.file_path.removeprefix("file://")))
        assert writing._setup(ours_meta).projections  # kept from the first file on
