"""iceberg.tables.metadata_bytes: the metadata file PyIceberg itself would write.

The lakehouse writes a table's metadata through its own storage (M2), so it serializes
the file apart from PyIceberg's ``ToOutputFile``; it must give the same content, plain
or compressed as the file's name says, while reading PyIceberg's configuration once."""

from __future__ import annotations

import gzip
import uuid

import pytest
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.serializers import ToOutputFile
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.table.metadata import TableMetadataV2
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

from trinitylake_dbapi.format.types import ColumnSpec, parse_type
from trinitylake_dbapi.iceberg.schema import schema_from_columns
from trinitylake_dbapi.iceberg.tables import metadata_bytes

COLUMNS = [("id", "bigint"), ("name", "string"), ("price", "decimal(10,2)"), ("tags", "list<string>"),
           ("attrs", "map<string,int>"), ("point", "struct<x:double,y:double>")]  # fmt: skip


def _metadata() -> TableMetadataV2:
    schema = schema_from_columns([ColumnSpec(n, parse_type(t, column=n)) for n, t in COLUMNS])
    return TableMetadataV2(
        location="file:///lake/tables/ns/t-0", table_uuid=uuid.UUID(int=7), last_updated_ms=1,
        last_column_id=schema.highest_field_id, schemas=[schema], current_schema_id=0,
        partition_specs=[UNPARTITIONED_PARTITION_SPEC], default_spec_id=0,
        last_partition_id=UNPARTITIONED_PARTITION_SPEC.last_assigned_field_id,
        properties={"comment": "c"}, sort_orders=[UNSORTED_SORT_ORDER], default_sort_order_id=0,
    )  # fmt: skip


@pytest.mark.parametrize("name", ["00000-a.metadata.json", "00000-a.gz.metadata.json"])
def test_same_content_as_pyicebergs_writer(tmp_path, name: str) -> None:  # type: ignore[no-untyped-def]
    metadata = _metadata()
    location = f"file://{tmp_path}/{name}"
    ToOutputFile.table_metadata(metadata, PyArrowFileIO().new_output(location))
    theirs = (tmp_path / name).read_bytes()
    ours = metadata_bytes(metadata, location)
    if name.endswith(".gz.metadata.json"):
        theirs, ours = gzip.decompress(theirs), gzip.decompress(ours)
    assert ours == theirs


def test_primitive_types_are_shared_between_schemas() -> None:
    first, second = (schema_from_columns([ColumnSpec(n, parse_type(t, column=n)) for n, t in COLUMNS]) for _ in "ab")
    assert first == second
    assert first.find_field("price").field_type is second.find_field("price").field_type
