"""sql.query.writes Q13: rows are brought to the Arrow schema of the Iceberg table's
current schema; rows already in it are used as they are; the kept Arrow schema is
always the conversion of the schema given (the same object, an equal one, or another
schema in any order)."""

from __future__ import annotations

import datetime
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.schema import Schema
from pyiceberg.types import DateType, DoubleType, IntegerType, LongType, NestedField, StringType

import trinitylake_dbapi
from trinitylake_dbapi.sql.query.writes import as_iceberg, iceberg_arrow_schema


def _schemas() -> list[Schema]:
    """Fresh Schema objects: equal ones among them, and ones that differ in a type, a
    name, a requiredness or a doc."""
    return [
        Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False)),
        Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False)),
        Schema(NestedField(1, "id", IntegerType(), required=False), NestedField(2, "name", StringType(), required=False)),
        Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType(), required=False)),
        Schema(NestedField(1, "key", LongType(), required=False), NestedField(2, "name", StringType(), required=False)),
        Schema(NestedField(1, "id", LongType(), required=False, doc="the key"),
               NestedField(2, "name", StringType(), required=False)),
        Schema(NestedField(1, "day", DateType(), required=False), NestedField(2, "x", DoubleType(), required=True)),
    ]  # fmt: skip


@settings(max_examples=50, deadline=None)
@given(order=st.lists(st.integers(0, 6), min_size=1, max_size=12), fresh=st.lists(st.booleans(), min_size=12, max_size=12))
def test_the_kept_arrow_schema_is_the_given_schemas(order: list[int], fresh: list[bool]) -> None:
    kept = _schemas()
    for i, (index, new) in enumerate(zip(order, fresh)):
        schema = _schemas()[index] if new else kept[index]  # an equal new object, or the same one
        got = iceberg_arrow_schema(schema)
        assert got.equals(schema_to_pyarrow(schema, include_field_ids=False), check_metadata=True), i


@pytest.fixture
def table(tmp_path: Any) -> Any:
    conn = trinitylake_dbapi.connect(str(tmp_path / "lh"), create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute("CREATE TABLE ns.t (id BIGINT, name STRING, day DATE)")
    yield conn.iceberg_catalog().load_table("ns.t")
    conn.close()


def test_rows_in_the_tables_schema_are_used_as_they_are(table: Any) -> None:
    target = schema_to_pyarrow(table.schema(), include_field_ids=False)
    rows = pa.Table.from_pylist([{"id": 1, "name": "a", "day": datetime.date(2026, 1, 1)}], schema=target)
    assert as_iceberg(rows, table) is rows


def test_rows_of_other_types_or_metadata_are_cast(table: Any) -> None:
    target = schema_to_pyarrow(table.schema(), include_field_ids=False)
    narrow = pa.Table.from_pylist([{"id": 1, "name": "a", "day": datetime.date(2026, 1, 1)}],
                                  schema=pa.schema([("id", pa.int32()), ("name", pa.string()), ("day", pa.date32())]))  # fmt: skip
    cast = as_iceberg(narrow, table)
    assert cast.schema.equals(target, check_metadata=True)
    assert cast.to_pylist() == narrow.to_pylist()
    tagged = pa.Table.from_pylist(narrow.to_pylist(), schema=target.with_metadata({b"k": b"v"}))
    assert as_iceberg(tagged, table).schema.equals(target, check_metadata=True)
