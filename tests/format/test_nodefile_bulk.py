"""The bulk checks of ``decode_node_file`` accept exactly what the row-by-row reference
accepts, with the same result; anything they refuse goes to the reference, which
reports the broken row (so errors are unchanged)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from node_strategies import SYSTEM_NAMES, node_files
from trinitylake_dbapi.errors import CorruptFileError
from trinitylake_dbapi.format import nodefile
from trinitylake_dbapi.format.nodefile import Message, NodeFile, decode_node_file, encode_node_file

PATH = "0000/1111/0000/11110000-node-x.arrow"
text = st.text(alphabet="abcdez0", min_size=1, max_size=3)


def _columns(node: NodeFile) -> dict[str, list]:
    table = ipc.open_file(pa.py_buffer(encode_node_file(node))).read_all()
    return {name: table.column(name).to_pylist() for name in table.schema.names}


def _outcome(columns: dict[str, list], order: int | None):
    txns = columns.get("txn")
    try:
        node = nodefile._decode_rows(columns["key"], columns["value"], columns["pnode"], txns, PATH, order)
    except CorruptFileError as exc:
        return "corrupt", str(exc)
    return "ok", (node.order, dict(node.system), node.keys, node.values, node.children, node.buffer)


# A mutation: (column, row, new value); values come from the node's own cells and a few
# odd ones, so mutations make duplicates, disorder, misplaced nulls and wrong counts.
mutation = st.tuples(
    st.sampled_from(["key", "value", "pnode", "txn"]),
    st.integers(min_value=0, max_value=40),
    st.one_of(st.none(), text, st.sampled_from(["n_keys", "0", "1", "2", "9", "c0", "x1"])),
)


@pytest.mark.slow  # a property test (~3.9 s of CPU): the full run only
@settings(max_examples=600, deadline=None)
@given(
    node_files(text, max_order=6, system_names=SYSTEM_NAMES[:2], max_messages=4, child_name="c{}"),
    st.lists(mutation, max_size=3),
    st.sampled_from(["keep", "drop_txn", "cut", "extend_null"]),
    st.booleans(),
)
def test_bulk_checks_agree_with_the_row_by_row_reference(node, mutations, shape, with_order) -> None:
    columns = _columns(node)
    rows = len(columns["key"])
    for name, row, value in mutations:
        columns[name][row % rows] = value
    if shape == "drop_txn":
        del columns["txn"]
    elif shape == "cut":
        for column in columns.values():
            del column[rows // 2 :]
    elif shape == "extend_null":
        for column in columns.values():
            column.append(None)
    order = node.order if with_order else None
    expected = _outcome(columns, order)
    bulk = nodefile._decode_bulk(columns["key"], columns["value"], columns["pnode"], columns.get("txn"), order)
    if bulk is not None:
        assert expected == (
            "ok", (bulk.order, dict(bulk.system), bulk.keys, bulk.values, bulk.children, bulk.buffer)
        )
    # And the public entry point gives the reference's answer either way.
    data = _ipc(columns)
    try:
        node2 = decode_node_file(data, PATH, order)
        got = ("ok", (node2.order, dict(node2.system), node2.keys, node2.values, node2.children, node2.buffer))
    except CorruptFileError as exc:
        got = ("corrupt", str(exc))
    assert got == expected


def _ipc(columns: dict[str, list]) -> bytes:
    table = pa.table({name: pa.array(values, pa.string()) for name, values in columns.items()})
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize("order", [3, 5, None])
def test_valid_files_take_the_bulk_path(order) -> None:
    node = NodeFile(order=order or 4, system={"created_at_millis": "1"}, keys=("a", "b"), values=("1", "2"),
                    children=("c0", "c1", "c2"), buffer=(Message("z", None, "7"), Message("0", "v", "8")))
    columns = _columns(node)
    decoded = nodefile._decode_bulk(columns["key"], columns["value"], columns["pnode"], columns["txn"], order)
    assert decoded is not None and decoded.keys == ("a", "b") and decoded.buffer == node.buffer


def test_a_file_of_several_record_batches_decodes() -> None:
    node = NodeFile(order=4, system={"created_at_millis": "1"}, keys=("a",), values=("1",),
                    buffer=(Message("z", None, "7"),))
    table = ipc.open_file(pa.py_buffer(encode_node_file(node))).read_all()
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=2):
            writer.write_batch(batch)
    decoded = decode_node_file(sink.getvalue().to_pybytes(), PATH, 4)
    assert decoded.keys == ("a",) and decoded.buffer == node.buffer
