"""Primary keys through the Iceberg REST server (issue 36; iceberg.keys PK2, server
errormodel): a commit from PyIceberg's RestCatalog that would duplicate a key is refused
with 400 BadRequestException carrying the IntegrityError's message (table, key, value),
never 500 CommitStateUnknown: nothing was published, and the client knows it."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.exceptions import BadRequestError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from tests.server.conftest import RestServer

ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])


def test_a_rest_append_duplicating_a_key_is_a_bad_request(rest: RestServer) -> None:
    catalog = rest.catalog()
    catalog.create_namespace("keys")
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType()),
                    identifier_field_ids=[1])  # fmt: skip
    table = catalog.create_table("keys.t", schema)
    table.append(pa.Table.from_pylist([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], schema=ARROW))
    with pytest.raises(BadRequestError, match=r"PRIMARY KEY constraint failed: table keys\.t already holds key "
                                              r"\(id\) = \(2\)"):  # fmt: skip
        table.append(pa.Table.from_pylist([{"id": 3, "name": "c"}, {"id": 2, "name": "again"}], schema=ARROW))
    table = catalog.load_table("keys.t")
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    table.append(pa.Table.from_pylist([{"id": 3, "name": "c"}], schema=ARROW))
    assert sorted(catalog.load_table("keys.t").scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
