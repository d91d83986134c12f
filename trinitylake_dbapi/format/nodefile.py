"""Node files (SPEC 4): one tree node as an Arrow IPC file, encoded and decoded.

Layout, top to bottom, in columns ``key, value, pnode, txn`` (all nullable utf8):

  NF1. System rows: key and value non-null, pnode and txn null; any order.
  NF2. Node key table: exactly N rows for a tree of order N. Row 1 has key and value null
      and its pnode is the leftmost child (null in a leaf). Then the k keys in strictly
      ascending order, each with its non-null value and the pnode of the child to its
      right (all null in a leaf, all non-null in an internal node). Then N-1-k rows that
      are entirely null.
  NF3. Write buffer: messages in the order they were applied: key non-null, pnode null,
      txn non-null (files written without the ``txn`` column are accepted and give
      ``txn=None``); a null value means "delete the key".

A reader takes every row before the first row whose key and value are both null as a
system row (NF1). ``n_keys`` (a system row every node carries) tells where the key table
ends, which is what makes a leaf's full key table distinguishable from its buffer in a
three-column file. Anything else is reported as :class:`CorruptFileError` naming the
file; no pyarrow exception escapes this module.
"""

from __future__ import annotations

import operator
import sys
from dataclasses import dataclass, field
from itertools import islice, repeat
from typing import Mapping, NamedTuple

import pyarrow as pa
import pyarrow.ipc as ipc

from ..errors import CorruptFileError

N_KEYS = "n_keys"
CREATED_AT_MILLIS = "created_at_millis"

SCHEMA = pa.schema(
    [
        pa.field("key", pa.string()),
        pa.field("value", pa.string()),
        pa.field("pnode", pa.string()),
        pa.field("txn", pa.string()),
    ]
)
_REQUIRED_COLUMNS = ("key", "value", "pnode")
# An all-null column written without a declared type reads as pa.null(): same meaning.
_STRING_TYPES = (pa.string(), pa.large_string(), pa.string_view(), pa.null())


class Message(NamedTuple):
    """A write-buffer message: set ``key`` to ``value``, or delete it when value is None."""

    key: str
    value: str | None
    txn: str | None


@dataclass(frozen=True)
class NodeFile:
    """The decoded content of one node file.

    ``children`` is empty for a leaf, otherwise it has ``len(keys) + 1`` entries: the
    leftmost child, then the child to the right of each key.
    """

    order: int
    system: Mapping[str, str] = field(default_factory=dict)
    keys: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    children: tuple[str, ...] = ()
    buffer: tuple[Message, ...] = ()

    @property
    def is_leaf(self) -> bool:
        return not self.children


def encode_node_file(node: NodeFile) -> bytes:
    """Serialize ``node`` per SPEC 4; ``n_keys`` is always written from the key count.

    Raises ValueError if the node cannot be laid out (too many keys for the order,
    children that do not match the keys, unordered keys): that is a bug in the caller,
    never a user error.
    """
    n, k = node.order, len(node.keys)
    if k > n - 1:
        raise ValueError(f"{k} keys do not fit a node of order {n}")
    if len(node.values) != k:
        raise ValueError("keys and values differ in length")
    if node.children and len(node.children) != k + 1:
        raise ValueError(f"{len(node.children)} children for {k} keys")
    if any(a >= b for a, b in zip(node.keys, node.keys[1:])):
        raise ValueError("node keys are not strictly ascending")

    system = {name: value for name, value in node.system.items() if name != N_KEYS}
    system[N_KEYS] = str(k)
    free = [None] * (n - 1 - k)
    buffer = node.buffer
    if buffer:
        buffer_keys, buffer_values, buffer_txns = zip(*buffer)
    else:
        buffer_keys = buffer_values = buffer_txns = ()
    no_pnodes = [None] * len(buffer)
    keys = [*system, None, *node.keys, *free, *buffer_keys]
    values = [*system.values(), None, *node.values, *free, *buffer_values]
    pnodes = [*[None] * len(system), *(node.children or (None,) * (k + 1)), *free, *no_pnodes]
    txns = [*[None] * (len(system) + n), *buffer_txns]

    batch = pa.RecordBatch.from_arrays(
        [_string_array(column) for column in (keys, values, pnodes, txns)], schema=SCHEMA
    )
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, SCHEMA) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


_StringBuilder = getattr(pa.lib, "StringBuilder", None)


def _string_array(values: list[str | None]) -> pa.Array:
    """A utf8 array of ``values``. ``pa.array`` imports pandas on its first call when
    pandas is installed (~0.6 s, once per process: a short script's first commit paid
    it); pyarrow's StringBuilder does not, so it is used until pandas is loaded anyway,
    after which ``pa.array`` is the faster of the two."""
    if _StringBuilder is None or "pandas" in sys.modules:
        return pa.array(values, pa.string())
    builder = _StringBuilder()
    builder.append_values(values)
    return builder.finish()


def _column_list(column: pa.Array | pa.ChunkedArray, rows: int) -> list:
    """A column as a Python list; an all-null column (the pnodes of a leaf, the txns of
    most nodes) without converting it row by row."""
    if column.null_count == rows:
        return [None] * rows
    return column.to_pylist()


def _read_columns(data: bytes, path: str) -> tuple[list, list, list, list | None]:
    try:
        reader = ipc.open_file(pa.py_buffer(data))
        # One record batch (every file this project writes) needs no table around it.
        table = reader.get_batch(0) if reader.num_record_batches == 1 else reader.read_all()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptFileError(path, f"not an Arrow IPC file ({exc})") from None
    try:
        # Reading a file checks its framing, not its data: without this, offsets past
        # the end of a column's characters made the conversion below read memory outside
        # the file, and invalid UTF-8 raised UnicodeDecodeError (~2 us for a leaf).
        table.validate(full=True)
    except (pa.ArrowException, ValueError) as exc:
        raise CorruptFileError(path, f"invalid Arrow data ({exc})") from None
    schema = table.schema
    rows = table.num_rows
    if schema.equals(SCHEMA):  # the schema every file of this project has
        return tuple(_column_list(table.column(i), rows) for i in range(4))  # type: ignore[return-value]
    try:
        names = schema.names
    except ValueError as exc:  # a column name that is not UTF-8
        raise CorruptFileError(path, f"invalid Arrow schema ({exc})") from None
    for name in _REQUIRED_COLUMNS:
        if name not in names:
            raise CorruptFileError(path, f"missing column {name!r}; columns are {names}")
    for name in (*_REQUIRED_COLUMNS, "txn"):
        if names.count(name) > 1:
            raise CorruptFileError(path, f"column {name!r} appears twice; columns are {names}")
        if name in names and schema.field(name).type not in _STRING_TYPES:
            raise CorruptFileError(
                path, f"column {name!r} has type {schema.field(name).type}, expected utf8"
            )
    keys, values, pnodes = (_column_list(table.column(name), rows) for name in _REQUIRED_COLUMNS)
    txn = _column_list(table.column("txn"), rows) if "txn" in names else None
    return keys, values, pnodes, txn


def decode_node_file(data: bytes, path: str, order: int | None = None) -> NodeFile:
    """Parse a node file, checking every layout rule NF1-NF3.

    ``order``, when given, is the lakehouse's tree order and the key table must have
    exactly that many rows; otherwise the order is read off the file.

    The rules are checked over whole slices of the columns (C loops: ``count``,
    ``in``, ``map``), which is what every well-formed file needs; a file that fails any
    of those checks is decoded again row by row (:func:`_decode_rows`), which finds the
    first broken row and reports it, so errors are exactly those of the row-by-row rules.
    """
    keys, values, pnodes, txns = _read_columns(data, path)
    node = _decode_bulk(keys, values, pnodes, txns, order)
    if node is None:
        node = _decode_rows(keys, values, pnodes, txns, path, order)
    return node


def decode_system_rows(data: bytes, path: str) -> dict[str, str]:
    """The system rows (NF1) of a node file, without converting its key table or write
    buffer: what a reader needs of a root it only asks about (its time, its predecessor),
    such as each root a search for a timestamp's version looks at. Only the top rows are
    validated and converted, a few more at a time until the first row whose key and
    value are both null. A file this cannot read so simply (another schema, several
    record batches, no such row in the first batch) is decoded whole, which reports
    whatever is wrong with it exactly as :func:`decode_node_file` does."""
    try:
        reader = ipc.open_file(pa.py_buffer(data))
        simple = reader.num_record_batches == 1 and reader.schema.equals(SCHEMA)
        batch = reader.get_batch(0) if simple else None
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptFileError(path, f"not an Arrow IPC file ({exc})") from None
    take = 8
    while batch is not None:
        head = batch.slice(0, take)
        try:
            head.validate(full=True)  # as _read_columns does, for the rows read here
        except (pa.ArrowException, ValueError) as exc:
            raise CorruptFileError(path, f"invalid Arrow data ({exc})") from None
        keys, values = head.column(0).to_pylist(), head.column(1).to_pylist()
        pnodes, txns = head.column(2).to_pylist(), head.column(3).to_pylist()
        system: dict[str, str] = {}
        for key, value, pnode, txn in zip(keys, values, pnodes, txns):
            if key is None and value is None:
                return system
            if key is None or value is None or pnode is not None or txn is not None or key in system:
                break  # not a well-formed system row: the whole decode says why
            system[key] = value
        else:
            if take < batch.num_rows:
                take *= 4
                continue
        break
    return decode_node_file(data, path).system


def _decode_bulk(
    keys: list, values: list, pnodes: list, txns: list | None, order: int | None
) -> NodeFile | None:
    """The node, if every rule holds in the fast checks; None if any might not (then
    :func:`_decode_rows` decides, and reports the exact row). Accepts only files that
    :func:`_decode_rows` accepts, with the same result."""
    rows = len(keys)
    has_txn_column = txns is not None
    if txns is None:
        txns = [None] * rows
    # NF1: system rows (a few) one by one.
    system: dict[str, str] = {}
    row = 0
    while row < rows:
        key, value = keys[row], values[row]
        if key is None or value is None or pnodes[row] is not None or txns[row] is not None:
            break
        if key in system:
            return None
        system[key] = value
        row += 1
    if row == rows or keys[row] is not None or values[row] is not None or txns[row] is not None:
        return None
    table_start = row
    leftmost = pnodes[row]
    n_keys_text = system.get(N_KEYS)
    if n_keys_text is None or not n_keys_text.isascii() or not n_keys_text.isdigit():
        return None
    n_keys = int(n_keys_text)
    # NF2: the key table, rows first .. end-1, then null rows up to the order.
    first = table_start + 1
    end = first + n_keys
    limit = table_start + (order if order is not None else rows)
    if end > rows or end > limit:
        return None
    node_keys = keys[first:end]
    node_values = values[first:end]
    if None in node_keys or None in node_values or txns[first:end].count(None) != n_keys:
        return None
    children = pnodes[first:end]
    if leftmost is None:
        if children.count(None) != n_keys:
            return None
        children = []
    elif None in children:
        return None
    else:
        children.insert(0, leftmost)
    if n_keys > 1 and not all(map(operator.lt, node_keys, islice(node_keys, 1, None))):
        return None
    if order is not None:
        table_end = table_start + order
        if table_end > rows:
            return None
    else:
        # The null rows run up to the first row with a key (a file without buffer
        # rows ends with them); a null key after a non-null field fails below.
        table_end = end + keys[end:].count(None)
    padding = table_end - end
    for column in (keys, values, pnodes, txns):
        if column[end:table_end].count(None) != padding:
            return None
    found_order = table_end - table_start
    if found_order < n_keys + 1 or found_order < 3:
        return None
    # NF3: the write buffer.
    buffer_keys = keys[table_end:]
    if None in buffer_keys or pnodes[table_end:].count(None) != len(buffer_keys):
        return None
    buffer_txns = txns[table_end:]
    if has_txn_column and None in buffer_txns:
        return None
    buffer = tuple(
        map(tuple.__new__, repeat(Message), zip(buffer_keys, values[table_end:], buffer_txns))
    )
    return NodeFile(
        order=found_order,
        system=system,
        keys=tuple(node_keys),
        values=tuple(node_values),
        children=tuple(children),
        buffer=buffer,
    )


def _decode_rows(
    keys: list, values: list, pnodes: list, txns: list | None, path: str, order: int | None
) -> NodeFile:
    """:func:`decode_node_file` one row at a time: the reference that reports the first
    broken row of a corrupt file."""
    rows = len(keys)
    has_txn_column = txns is not None
    if txns is None:
        txns = [None] * rows

    def bad(row: int, reason: str) -> CorruptFileError:
        return CorruptFileError(path, f"row {row + 1}: {reason}")

    system: dict[str, str] = {}
    row = 0
    while row < rows and not (keys[row] is None and values[row] is None):
        if keys[row] is None or values[row] is None:
            raise bad(row, "system row with a null key or value")
        if pnodes[row] is not None or txns[row] is not None:
            raise bad(row, "system row with a pnode or txn")
        if keys[row] in system:
            raise bad(row, f"system key {keys[row]!r} appears twice")
        system[keys[row]] = values[row]
        row += 1
    if row == rows:
        raise CorruptFileError(path, "no node key table (no row with null key and value)")

    table_start = row
    if txns[row] is not None:
        raise bad(row, "first key table row has a txn")
    leftmost = pnodes[row]
    row += 1

    n_keys_text = system.get(N_KEYS)
    if n_keys_text is not None:
        if not n_keys_text.isascii() or not n_keys_text.isdigit():
            raise CorruptFileError(path, f"n_keys {n_keys_text!r} is not a number")
        n_keys: int | None = int(n_keys_text)
    else:
        n_keys = None  # a file from elsewhere: the key table ends at the order or a txn
    limit = table_start + (order if order is not None else rows)

    node_keys: list[str] = []
    node_values: list[str] = []
    children: list[str] = []
    while row < rows and row < limit and keys[row] is not None:
        if n_keys is not None and len(node_keys) == n_keys:
            break
        if n_keys is None and txns[row] is not None:
            break
        if values[row] is None:
            raise bad(row, f"key {keys[row]!r} in the key table has a null value")
        if txns[row] is not None:
            raise bad(row, "key table row has a txn")
        if (pnodes[row] is None) != (leftmost is None):
            raise bad(row, "a node mixes null and non-null child pointers")
        if node_keys and keys[row] <= node_keys[-1]:
            raise bad(row, f"key {keys[row]!r} is not greater than {node_keys[-1]!r}")
        node_keys.append(keys[row])
        node_values.append(values[row])
        if pnodes[row] is not None:
            children.append(pnodes[row])
        row += 1
    if n_keys is not None and len(node_keys) != n_keys:
        raise CorruptFileError(path, f"n_keys says {n_keys} but the key table has {len(node_keys)}")

    while row < rows and row < limit and all(
        column[row] is None for column in (keys, values, pnodes, txns)
    ):
        row += 1
    found_order = row - table_start
    if order is not None and found_order != order:
        raise CorruptFileError(
            path, f"node key table has {found_order} rows, the tree order is {order}"
        )
    if found_order < len(node_keys) + 1 or found_order < 3:
        raise CorruptFileError(path, f"node key table of {found_order} rows is too small")

    buffer: list[Message] = []
    for row in range(row, rows):
        if keys[row] is None:
            raise bad(row, "write buffer message without a key")
        if pnodes[row] is not None:
            raise bad(row, "write buffer message with a pnode")
        if has_txn_column and txns[row] is None:
            raise bad(row, "write buffer message without a txn")
        buffer.append(Message(keys[row], values[row], txns[row]))

    return NodeFile(
        order=found_order,
        system=system,
        keys=tuple(node_keys),
        values=tuple(node_values),
        children=(leftmost, *children) if leftmost is not None else (),
        buffer=tuple(buffer),
    )
