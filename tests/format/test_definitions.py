"""Definition files (SPEC 5): field numbers, codecs, settings and their defaults."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf.descriptor import FieldDescriptor as FD

from trinitylake_dbapi.errors import (
    CorruptFileError,
    InvalidDefinitionError,
    UnsupportedFormatError,
)
from trinitylake_dbapi.format import definitions as d
from trinitylake_dbapi.format import trinitylake_pb2 as pb
from trinitylake_dbapi.format.definitions import (
    LakehouseSettings,
    decode_lakehouse_def,
    decode_namespace_def,
    decode_table_def,
    encode,
    new_lakehouse_def,
)

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------
# The schema itself: SPEC 5 written out once more, by hand, as the oracle.
# field name -> (number, type, kind) where kind is "plain", "optional", "repeated",
# or "map"; for message fields the type is the message name.
# ---------------------------------------------------------------------------

STR, U32, U64, BOOL = FD.TYPE_STRING, FD.TYPE_UINT32, FD.TYPE_UINT64, FD.TYPE_BOOL
EXPECTED = {
    "LakehouseDef": {
        "name": (1, STR, "plain"),
        "major_version": (2, U32, "plain"),
        "order": (3, U32, "optional"),
        "namespace_name_max_size_bytes": (4, U32, "optional"),
        "table_name_max_size_bytes": (5, U32, "optional"),
        "file_name_max_size_bytes": (6, U32, "optional"),
        "node_file_max_size_bytes": (7, U64, "optional"),
        "properties": (8, (STR, STR), "map"),
        "maximum_version_age_millis": (9, U64, "optional"),
        "minimum_versions_to_keep": (10, U32, "optional"),
        "maximum_version_age_millis_overrides": (11, (U64, U64), "map"),
        "exported_snapshots": (12, (STR, STR), "map"),
    },
    "NamespaceDef": {
        "name": (1, STR, "plain"),
        "properties": (2, (STR, STR), "map"),
    },
    "TableDef": {
        "name": (1, STR, "plain"),
        "schema": (2, "Schema", "plain"),
        "distribution_keys": (3, U32, "repeated"),
        "primary_key": (4, U32, "repeated"),
        "sort_keys": (5, U32, "repeated"),
        "unique_columns": (6, U32, "repeated"),
        "table_type": (8, STR, "plain"),
        "table_format": (9, STR, "plain"),
        "format_properties": (10, (STR, STR), "map"),
        "properties": (11, (STR, STR), "map"),
    },
    "Schema": {"columns": (1, "Column", "repeated")},
    "Column": {
        "id": (1, U32, "plain"),
        "name": (2, STR, "plain"),
        "type": (3, "DataType", "plain"),
        "nullable": (4, BOOL, "plain"),
        "properties": (5, (STR, STR), "map"),
        "struct_fields": (6, "Column", "repeated"),
        "map_key": (7, "Column", "plain"),
        "map_value": (8, "Column", "plain"),
        "list_element": (9, "Column", "plain"),
    },
}
EXPECTED_DATATYPES = {
    "BOOLEAN": 0, "INT2": 1, "INT4": 2, "INT8": 3, "DECIMAL": 4, "FLOAT4": 5,
    "FLOAT8": 6, "CHAR": 7, "VARCHAR": 8, "DATE": 9, "TIME": 10, "TIMETZ": 11,
    "TIMESTAMP": 12, "TIMESTAMPTZ": 13, "FIXED": 14, "BINARY": 15, "STRUCT": 16,
    "MAP": 17, "LIST": 18,
}  # fmt: skip


def _describe_field(f: FD) -> tuple[int, object, str]:
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        entry = f.message_type.fields_by_name
        return f.number, (entry["key"].type, entry["value"].type), "map"
    if f.message_type is not None:
        typ: object = f.message_type.name
    elif f.enum_type is not None:
        typ = f.enum_type.name
    else:
        typ = f.type
    if f.is_repeated:
        kind = "repeated"
    elif f.containing_oneof is not None and f.containing_oneof.name == "_" + f.name:
        kind = "optional"  # proto3 `optional` is a synthetic oneof named _<field>
    else:
        kind = "plain"
    return f.number, typ, kind


@pytest.mark.parametrize("message", sorted(EXPECTED))
def test_fields_have_exactly_the_numbers_and_types_of_spec_5(message: str) -> None:
    descriptor = pb.DESCRIPTOR.message_types_by_name[message]
    actual = {f.name: _describe_field(f) for f in descriptor.fields}
    assert actual == EXPECTED[message]


def test_package_and_file_name_make_the_import_path_work() -> None:
    assert pb.DESCRIPTOR.package == "trinitylake"
    assert pb.DESCRIPTOR.name == "trinitylake_dbapi/format/trinitylake.proto"
    assert b"proto3" in pb.DESCRIPTOR.serialized_pb


def test_table_def_field_7_is_reserved() -> None:
    descriptor = pb.DESCRIPTOR.message_types_by_name["TableDef"]
    assert 7 not in descriptor.fields_by_number
    assert b"J\x04\x08\x07\x10\x08" in pb.DESCRIPTOR.serialized_pb  # reserved 7 to 8


def test_data_type_values_are_exactly_spec_5() -> None:
    enum = pb.DESCRIPTOR.enum_types_by_name["DataType"]
    assert {v.name: v.number for v in enum.values} == EXPECTED_DATATYPES


def test_optional_fields_detect_an_explicit_zero() -> None:
    msg = pb.LakehouseDef()
    assert not msg.HasField("order")
    msg.order = 0
    assert msg.HasField("order")
    again = pb.LakehouseDef.FromString(encode(msg))
    assert again.HasField("order") and again.order == 0


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_generated_code_is_up_to_date_with_the_proto() -> None:
    pytest.importorskip("grpc_tools")
    result = subprocess.run(
        [str(ROOT / "scripts" / "gen_proto"), "--check"],
        capture_output=True,
        text=True,
        env={**os.environ, "TL_PYTHON": sys.executable},
    )
    assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------------------
# Codecs
# ---------------------------------------------------------------------------


def _full_lakehouse_def() -> pb.LakehouseDef:
    msg = new_lakehouse_def(
        "lake",
        order=16,
        namespace_name_max_size_bytes=10,
        table_name_max_size_bytes=20,
        file_name_max_size_bytes=30,
        node_file_max_size_bytes=4096,
        properties={"owner": "me", "z": "", "a": "ü"},
        maximum_version_age_millis=0,
        minimum_versions_to_keep=1,
        maximum_version_age_millis_overrides={5: 10, 2**64 - 1: 0},
        exported_snapshots={"daily": "_00100110000000000000000000000000.arrow"},
    )
    return msg


def _full_table_def() -> pb.TableDef:
    t = pb.TableDef(
        name="t1",
        distribution_keys=[1],
        primary_key=[1, 2],
        sort_keys=[2],
        unique_columns=[3],
        table_type="EXTERNAL",
        table_format="ICEBERG",
        format_properties={"f": "1"},
        properties={"comment": "a table"},
    )
    col = t.schema.columns.add(id=1, name="a", type=pb.INT8, nullable=False)
    col.properties["comment"] = "x"
    lst = t.schema.columns.add(id=2, name="l", type=pb.LIST, nullable=True)
    lst.list_element.CopyFrom(pb.Column(id=3, name="element", type=pb.VARCHAR, nullable=True))
    return t


def test_lakehouse_def_round_trips() -> None:
    msg = _full_lakehouse_def()
    data = encode(msg)
    assert decode_lakehouse_def(data, "_lakehouse_def_x.binpb") == msg
    assert encode(decode_lakehouse_def(data, "p")) == data


def test_namespace_def_round_trips() -> None:
    msg = pb.NamespaceDef(name="ns1", properties={"comment": "hello", "k": "v"})
    data = encode(msg)
    assert decode_namespace_def(data, "namespace-ns1-u.binpb") == msg


def test_table_def_round_trips() -> None:
    msg = _full_table_def()
    data = encode(msg)
    decoded = decode_table_def(data, "table-t1-ns1-u.binpb")
    assert decoded == msg
    assert decoded.schema.columns[1].list_element.name == "element"


def test_encode_is_deterministic() -> None:
    a = pb.NamespaceDef(name="n")
    b = pb.NamespaceDef(name="n")
    for k in ["b", "a", "c"]:
        a.properties[k] = k
    for k in ["c", "b", "a"]:
        b.properties[k] = k
    assert encode(a) == encode(b)


GARBAGE = [
    pytest.param(b"hello world", id="text"),
    pytest.param(b"ARROW1\x00\x00\xff\xff\xff\xff", id="arrow-magic"),
    pytest.param(b"\xff\xff\xff", id="bad-varint"),
    pytest.param(b"\x0a\x02\xff\xfe", id="invalid-utf8-name"),
    pytest.param(b"\x0a\x05ab", id="truncated"),
    pytest.param(b"\x08\x01", id="wrong-wire-type-for-name"),
    pytest.param(b"\xf8\x01\x05", id="unknown-field-31"),
    pytest.param(b"\x0a\x01a\x98\x06\x01", id="unknown-field-99-after-name"),
]


@pytest.mark.parametrize("data", GARBAGE)
@pytest.mark.parametrize(
    "decode", [decode_lakehouse_def, decode_namespace_def, decode_table_def]
)
def test_garbage_is_a_corrupt_file_naming_the_path(data: bytes, decode) -> None:
    with pytest.raises(CorruptFileError) as info:
        decode(data, "some/dir/file-123.binpb")
    assert info.value.path == "some/dir/file-123.binpb"
    assert "some/dir/file-123.binpb" in str(info.value)


def _table_with_column_bytes(column_bytes: bytes) -> bytes:
    schema = b"\x0a" + bytes([len(column_bytes)]) + column_bytes  # Schema.columns
    return encode(pb.TableDef(name="t")) + b"\x12" + bytes([len(schema)]) + schema


def test_unknown_field_nested_in_a_column_is_corrupt() -> None:
    column_bytes = encode(_full_table_def().schema.columns[0])
    good = decode_table_def(_table_with_column_bytes(column_bytes), "t.binpb")
    assert good.schema.columns[0].name == "a"  # the hand-made framing is right
    bad = _table_with_column_bytes(column_bytes + b"\x98\x06\x01")  # field 99 = 1
    with pytest.raises(CorruptFileError, match="t.binpb"):
        decode_table_def(bad, "t.binpb")


def test_empty_lakehouse_def_is_all_defaults() -> None:
    msg = decode_lakehouse_def(b"", "p")
    assert LakehouseSettings.from_proto(msg) == LakehouseSettings()


@pytest.mark.parametrize("major", [1, 2, 2**32 - 1])
def test_unknown_major_version_is_unsupported(major: int) -> None:
    data = encode(pb.LakehouseDef(name="x", major_version=major))
    with pytest.raises(UnsupportedFormatError) as info:
        decode_lakehouse_def(data, "_lakehouse_def_abc.binpb")
    assert "_lakehouse_def_abc.binpb" in str(info.value)
    assert str(major) in str(info.value)
    assert not isinstance(info.value, CorruptFileError)


def test_newer_major_version_with_new_fields_is_unsupported_not_corrupt() -> None:
    data = encode(pb.LakehouseDef(major_version=1)) + b"\x98\x06\x01"
    with pytest.raises(UnsupportedFormatError):
        decode_lakehouse_def(data, "p")


@pytest.mark.parametrize(
    "fields, words",
    [
        ({"order": 2}, ["order", "3", "2"]),
        ({"order": 0}, ["order"]),
        ({"table_name_max_size_bytes": 0}, ["table_name_max_size_bytes"]),
        ({"minimum_versions_to_keep": 0}, ["minimum_versions_to_keep"]),
        ({"node_file_max_size_bytes": 1000}, ["buffer capacity", "1000"]),
    ],
)
def test_lakehouse_def_with_impossible_settings_is_corrupt(fields, words) -> None:
    data = encode(pb.LakehouseDef(**fields))
    with pytest.raises(CorruptFileError) as info:
        decode_lakehouse_def(data, "_lakehouse_def_q.binpb")
    assert info.value.path == "_lakehouse_def_q.binpb"
    for w in words:
        assert w in str(info.value)


# ---------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------


def test_defaults_apply_when_absent() -> None:
    s = LakehouseSettings.from_proto(pb.LakehouseDef(name="n"))
    assert s == LakehouseSettings(
        name="n",
        order=128,
        namespace_name_max_size_bytes=100,
        table_name_max_size_bytes=100,
        file_name_max_size_bytes=200,
        node_file_max_size_bytes=1048576,
        maximum_version_age_millis=604800000,
        minimum_versions_to_keep=3,
        properties={},
        maximum_version_age_millis_overrides={},
        exported_snapshots={},
    )
    assert s.buffer_capacity_bytes == 1048576 - 128 * (100 + 100 + 200 + 4)


def test_values_are_respected_when_set_including_zero() -> None:
    s = LakehouseSettings.from_proto(_full_lakehouse_def())
    assert (s.name, s.order) == ("lake", 16)
    assert s.namespace_name_max_size_bytes == 10
    assert s.table_name_max_size_bytes == 20
    assert s.file_name_max_size_bytes == 30
    assert s.node_file_max_size_bytes == 4096
    assert s.maximum_version_age_millis == 0  # explicit 0, not the 7-day default
    assert s.minimum_versions_to_keep == 1
    assert s.properties == {"owner": "me", "z": "", "a": "ü"}
    assert s.maximum_version_age_millis_overrides == {5: 10, 2**64 - 1: 0}
    assert s.exported_snapshots == {"daily": "_00100110000000000000000000000000.arrow"}
    assert s.buffer_capacity_bytes == 4096 - 16 * (10 + 20 + 30 + 4)


def test_every_default_field_falls_back_independently() -> None:
    for name, default in d.DEFAULTS.items():
        msg = pb.LakehouseDef()
        setattr(msg, name, 7 if name != "node_file_max_size_bytes" else 10**7)
        s = LakehouseSettings.from_proto(msg)
        for other, other_default in d.DEFAULTS.items():
            expected = getattr(msg, name) if other == name else other_default
            assert getattr(s, other) == expected, (name, other)
        assert default != getattr(msg, name)


def test_max_version_age_applies_overrides() -> None:
    s = LakehouseSettings.from_proto(
        new_lakehouse_def(
            maximum_version_age_millis=1000,
            maximum_version_age_millis_overrides={3: 0, 4: 99999},
        )
    )
    assert s.max_version_age_millis(3) == 0
    assert s.max_version_age_millis(4) == 99999
    assert s.max_version_age_millis(5) == 1000
    assert LakehouseSettings().max_version_age_millis(0) == 604800000


def test_settings_dicts_are_copies() -> None:
    msg = pb.LakehouseDef(properties={"a": "1"})
    s = LakehouseSettings.from_proto(msg)
    s.properties["b"] = "2"
    assert dict(msg.properties) == {"a": "1"}


# ---------------------------------------------------------------------------
# new_lakehouse_def
# ---------------------------------------------------------------------------


def test_new_lakehouse_def_writes_only_the_options_given() -> None:
    msg = new_lakehouse_def("lake", order=8)
    assert msg.name == "lake" and msg.major_version == 0
    assert msg.HasField("order") and msg.order == 8
    for name in d.DEFAULTS:
        if name != "order":
            assert not msg.HasField(name), name
    assert encode(new_lakehouse_def()) == b""


def test_new_lakehouse_def_round_trips_through_decode() -> None:
    msg = _full_lakehouse_def()
    assert decode_lakehouse_def(encode(msg), "p") == msg


def test_unknown_option_lists_the_valid_names() -> None:
    with pytest.raises(InvalidDefinitionError) as info:
        new_lakehouse_def(order=8, ordr=3, name_max=1)
    text = str(info.value)
    assert "ordr" in text and "name_max" in text
    for name in d.LAKEHOUSE_OPTIONS:
        assert name in text
    assert "major_version" in d.LakehouseDef.DESCRIPTOR.fields_by_name
    with pytest.raises(InvalidDefinitionError, match="major_version"):
        new_lakehouse_def(major_version=1)


@pytest.mark.parametrize(
    "options, words",
    [
        ({"order": 2}, ["order", "2"]),
        ({"namespace_name_max_size_bytes": 0}, ["namespace_name_max_size_bytes"]),
        ({"table_name_max_size_bytes": 0}, ["table_name_max_size_bytes"]),
        ({"file_name_max_size_bytes": 0}, ["file_name_max_size_bytes"]),
        ({"node_file_max_size_bytes": 0}, ["node_file_max_size_bytes"]),
        ({"minimum_versions_to_keep": 0}, ["minimum_versions_to_keep"]),
        ({"order": -1}, ["order", "-1"]),
        ({"order": 2**32}, ["order"]),
        ({"order": True}, ["order", "integer"]),
        ({"order": "16"}, ["order", "integer"]),
        ({"node_file_max_size_bytes": 2**64}, ["node_file_max_size_bytes"]),
        ({"properties": {"a": 1}}, ["properties"]),
        ({"properties": ["a"]}, ["properties"]),
        ({"exported_snapshots": {1: "x"}}, ["exported_snapshots"]),
        ({"maximum_version_age_millis_overrides": {"1": 2}}, ["overrides"]),
        ({"maximum_version_age_millis_overrides": {1: -2}}, ["overrides"]),
        ({"maximum_version_age_millis_overrides": [1]}, ["overrides"]),
    ],
)
def test_bad_options_are_refused(options, words) -> None:
    with pytest.raises(InvalidDefinitionError) as info:
        new_lakehouse_def(**options)
    for w in words:
        assert w in str(info.value)


def test_non_positive_buffer_capacity_names_options_and_numbers() -> None:
    # 128 x (100 + 100 + 200 + 4) = 51712 >= 51712: capacity 0
    with pytest.raises(InvalidDefinitionError) as info:
        new_lakehouse_def(node_file_max_size_bytes=51712)
    text = str(info.value)
    for w in [
        "node_file_max_size_bytes (51712)",
        "order (128)",
        "namespace_name_max_size_bytes (100)",
        "table_name_max_size_bytes (100)",
        "file_name_max_size_bytes (200)",
        "= 0",
    ]:
        assert w in text
    ok = new_lakehouse_def(node_file_max_size_bytes=51713)
    assert LakehouseSettings.from_proto(ok).buffer_capacity_bytes == 1


def test_smallest_valid_settings_are_accepted() -> None:
    msg = new_lakehouse_def(
        order=3,
        namespace_name_max_size_bytes=1,
        table_name_max_size_bytes=1,
        file_name_max_size_bytes=1,
        node_file_max_size_bytes=3 * 7 + 1,
        minimum_versions_to_keep=1,
        maximum_version_age_millis=0,
    )
    assert LakehouseSettings.from_proto(msg).buffer_capacity_bytes == 1
