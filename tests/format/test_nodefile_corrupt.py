"""Damaged node file bytes: every one is a NodeFile or a CorruptFileError naming the file.

Reading an Arrow IPC file checks its framing, not its data; offsets that point past a
column's characters once made the decoder read memory outside the file (a crash), and
bytes that are not UTF-8 escaped as UnicodeDecodeError.
"""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from node_strategies import node_files
from trinitylake_dbapi.errors import CorruptFileError
from trinitylake_dbapi.format.nodefile import Message, NodeFile, decode_node_file, encode_node_file

PATH = "0000/1111/0000/11110000-node-x.arrow"
NODE = NodeFile(
    order=4,
    system={"created_at_millis": "5"},
    keys=("apple", "melon"),
    values=("v-apple", "v-melon"),
    buffer=(Message("zebra", "v-zebra", "7"),),
)


def _patched(data: bytes, column: int, buffer: int, at: int, new: bytes) -> bytes:
    """``data`` with ``new`` written ``at`` bytes into buffer ``buffer`` (1 offsets,
    2 characters) of column ``column``, located through a zero-copy read."""
    source = pa.py_buffer(data)
    batch = ipc.open_file(source).get_batch(0)
    target = batch.column(column).buffers()[buffer]
    start = target.address - source.address
    assert 0 <= start and start + at + len(new) <= start + target.size <= len(data)
    patched = bytearray(data)
    patched[start + at : start + at + len(new)] = new
    return bytes(patched)


def _corrupt(data: bytes, match: str) -> None:
    with pytest.raises(CorruptFileError, match=match) as info:
        decode_node_file(data, PATH)
    assert info.value.path == PATH and PATH in str(info.value)


def test_offset_past_the_characters_is_corrupt() -> None:
    data = encode_node_file(NODE)
    rows = ipc.open_file(pa.py_buffer(data)).get_batch(0).num_rows
    # The last offset of the value column: far past the end of its characters.
    _corrupt(_patched(data, 1, 1, 4 * rows, struct.pack("<i", 1 << 24)), "invalid Arrow data")


def test_decreasing_offsets_are_corrupt() -> None:
    data = encode_node_file(NODE)
    _corrupt(_patched(data, 0, 1, 4, struct.pack("<i", 1 << 20)), "invalid Arrow data")


def test_characters_that_are_not_utf8_are_corrupt() -> None:
    data = encode_node_file(NODE)
    _corrupt(_patched(data, 1, 2, 0, b"\xff"), "invalid Arrow data")


def test_column_name_that_is_not_utf8_is_corrupt() -> None:
    data = encode_node_file(NODE)
    assert data.count(b"pnode") == 2  # the schema at the start and in the footer
    _corrupt(data.replace(b"pnode", b"pn\xffde"), "invalid Arrow schema")


def test_a_column_name_twice_is_corrupt() -> None:
    data = encode_node_file(NODE)
    assert data.count(b"txn") == 2
    _corrupt(data.replace(b"txn", b"key"), "column 'key' appears twice")


@pytest.mark.slow  # a property test (~2.6 s of CPU): the full run only
@settings(max_examples=400, deadline=None)
@given(
    node_files(max_order=6, max_messages=4),
    st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)),
             min_size=1, max_size=4),
    st.booleans(),
)
def test_damaged_bytes_decode_or_are_corrupt(node: NodeFile, damage, with_order: bool) -> None:
    data = bytearray(encode_node_file(node))
    for position, value in damage:
        data[position % len(data)] = value
    try:
        decoded = decode_node_file(bytes(data), PATH, node.order if with_order else None)
    except CorruptFileError as exc:
        assert exc.path == PATH
    else:
        assert isinstance(decoded, NodeFile)
