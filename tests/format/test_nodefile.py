"""Node files (SPEC 4): round trips, and every broken file reported as corrupt by path."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from node_strategies import node_files
from trinitylake_dbapi.errors import CorruptFileError
from trinitylake_dbapi.format.nodefile import (
    Message,
    NodeFile,
    decode_node_file,
    decode_system_rows,
    encode_node_file,
)

PATH = "0000/1111/0000/11110000-node-x.arrow"


@given(node_files())
def test_round_trip(node: NodeFile) -> None:
    decoded = decode_node_file(encode_node_file(node), PATH, node.order)
    assert decoded.keys == node.keys and decoded.values == node.values
    assert decoded.children == node.children and decoded.buffer == node.buffer
    assert dict(decoded.system) == {**node.system, "n_keys": str(len(node.keys))}
    assert decode_node_file(encode_node_file(node), PATH).order == node.order


@given(node_files(), st.dictionaries(st.text(min_size=1, max_size=30), st.text(max_size=60), max_size=40))
def test_system_rows_alone_are_those_of_the_whole_file(node: NodeFile, extra: dict) -> None:
    """decode_system_rows reads the top rows a few at a time; however many system rows a
    file has, it finds the same ones as the whole decode."""
    system = {**extra, **node.system}
    system.pop("n_keys", None)
    node = NodeFile(node.order, system, node.keys, node.values, node.children, node.buffer)
    data = encode_node_file(node)
    assert decode_system_rows(data, PATH) == dict(decode_node_file(data, PATH).system)


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def test_layout_rows_are_as_the_spec_draws_them() -> None:
    node = NodeFile(order=4, system={"created_at_millis": "5"}, keys=("a", "b"), values=("1", "2"),
                    children=("c0", "c1", "c2"), buffer=(Message("z", None, "7"),))
    table = ipc.open_file(pa.py_buffer(encode_node_file(node))).read_all()
    assert table.schema.names == ["key", "value", "pnode", "txn"]
    assert table.to_pylist() == [
        {"key": "created_at_millis", "value": "5", "pnode": None, "txn": None},
        {"key": "n_keys", "value": "2", "pnode": None, "txn": None},
        {"key": None, "value": None, "pnode": "c0", "txn": None},
        {"key": "a", "value": "1", "pnode": "c1", "txn": None},
        {"key": "b", "value": "2", "pnode": "c2", "txn": None},
        {"key": None, "value": None, "pnode": None, "txn": None},
        {"key": "z", "value": None, "pnode": None, "txn": "7"},
    ]


def test_three_column_files_from_the_first_revision_read_fine() -> None:
    # A full leaf of order 3 followed by buffer rows: only n_keys tells them apart.
    table = pa.table(
        {
            "key": ["n_keys", None, "a", "b", "c", "d"],
            "value": ["2", None, "1", "2", "3", None],
            "pnode": [None] * 6,
        }
    )
    node = decode_node_file(_ipc(table), PATH, order=3)
    assert node.keys == ("a", "b") and node.buffer == (Message("c", "3", None), Message("d", None, None))


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"", "not an Arrow IPC file"),
        (b"PAR1 definitely not arrow", "not an Arrow IPC file"),
        (b"{\"json\": true}", "not an Arrow IPC file"),
    ],
)
def test_non_arrow_bytes_are_corrupt(data: bytes, reason: str) -> None:
    with pytest.raises(CorruptFileError, match=reason) as info:
        decode_node_file(data, PATH)
    assert info.value.path == PATH and PATH in str(info.value)


def test_truncated_file_is_corrupt() -> None:
    data = encode_node_file(NodeFile(order=3, keys=("a",), values=("1",)))
    for cut in (len(data) // 3, len(data) - 7, 10):
        with pytest.raises(CorruptFileError) as info:
            decode_node_file(data[:cut], PATH)
        assert info.value.path == PATH


@pytest.mark.parametrize(
    "columns, reason",
    [
        ({"key": ["a"], "value": ["b"]}, "missing column 'pnode'"),
        ({"key": [1], "value": ["b"], "pnode": [None]}, "column 'key' has type int64"),
        ({"key": ["n_keys"], "value": ["0"], "pnode": [None]}, "no node key table"),
        ({"key": ["n_keys", None, None], "value": ["0", None, None], "pnode": [None, None, None]},
         "too small"),
        ({"key": ["n_keys", None, "b", "a"], "value": ["2", None, "1", "2"], "pnode": [None] * 4},
         "not greater than"),
        ({"key": ["n_keys", None, "a", None], "value": ["5", None, "1", None], "pnode": [None] * 4},
         "n_keys says 5"),
        ({"key": ["n_keys", None, "a", None, None, "m"], "value": ["1", None, "1", None, None, "v"],
          "pnode": [None, "c0", None, None, None, None]}, "mixes null and non-null child"),
        ({"key": ["n_keys", None, None, None, "m"], "value": ["0", None, None, None, "v"],
          "pnode": [None, None, None, None, "p"]}, "message with a pnode"),
    ],
)
def test_layout_violations_are_corrupt(columns: dict, reason: str) -> None:
    with pytest.raises(CorruptFileError, match=reason) as info:
        decode_node_file(_ipc(pa.table(columns)), PATH)
    assert PATH in str(info.value)


@pytest.mark.parametrize(
    "columns, reason",
    [
        ({"key": ["a"], "value": ["b"]}, "missing column 'pnode'"),
        ({"key": ["n_keys"], "value": ["0"], "pnode": [None]}, "no node key table"),
        ({"key": ["n_keys", "x"], "value": ["0", None], "pnode": [None, None], "txn": [None, None]},
         "system row with a null key or value"),
    ],
)
def test_system_rows_of_a_broken_file_are_reported_as_the_whole_decode_does(columns: dict, reason: str) -> None:
    with pytest.raises(CorruptFileError, match=reason) as info:
        decode_system_rows(_ipc(pa.table(columns)), PATH)
    assert PATH in str(info.value)
    with pytest.raises(CorruptFileError):
        decode_system_rows(b"PAR1 definitely not arrow", PATH)


def test_wrong_order_is_corrupt() -> None:
    data = encode_node_file(NodeFile(order=4, keys=("a",), values=("1",)))
    with pytest.raises(CorruptFileError, match="tree order is 5"):
        decode_node_file(data, PATH, order=5)


def test_buffer_message_without_txn_in_a_four_column_file_is_corrupt() -> None:
    table = pa.table({"key": ["n_keys", None, None, None, "m"], "value": ["0", None, None, None, "v"],
                      "pnode": [None] * 5, "txn": [None] * 5})
    with pytest.raises(CorruptFileError, match="without a txn"):
        decode_node_file(_ipc(table), PATH)
