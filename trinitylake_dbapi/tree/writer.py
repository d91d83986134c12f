"""The writer of the tree: one copy-on-write update, for one transaction.

How writes keep T1-T8 (B-epsilon): messages are appended to the root's buffer. When a
buffer exceeds its flush threshold (at most its capacity), the messages of its children
with the most pending messages move into them, busiest first, until it fits
(copy-on-write); a leaf applies them at once. Messages whose key is
a separator of the node are applied to the key table instead; deleting a separator
merges its two children around it and pushes the separator down until it is removed
from a leaf. Every change then goes through ``fix_children``, which repeats one local
repair (apply separator messages, split an overfull node, flush an overfull buffer,
borrow or merge for an underfull node) until every changed child is valid again.
When a node splits, its buffered messages for the promoted key move to the parent,
before the parent's own messages for that key (T6); the same holds for the keys that
rotate up while borrowing.

The invariants T1-T9 are stated in the package docstring (:mod:`trinitylake_dbapi.tree`).
The writer never changes a node file (T7): it copies the nodes it changes into drafts
(:class:`_Draft`) and gives each a new file when the update is materialized; only
:func:`apply_messages` and :func:`empty_root` are called from outside.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence, Union

from ..format.nodefile import CREATED_AT_MILLIS, N_KEYS, Message, NodeFile, encode_node_file
from .nodes import NodeStore, TreeConfig, buffer_size, message_size

__all__ = ["TreeUpdate", "apply_messages", "empty_root"]


@dataclass(frozen=True)
class TreeUpdate:
    """The result of :func:`apply_messages` (and so of ``Tree.apply``).

    ``stats`` counts the structural operations performed (flush, split, borrow, merge,
    demote), for tests and benchmarks.
    """

    root: NodeFile
    files: dict[str, bytes]
    stats: Counter = field(default_factory=Counter)


def apply_messages(
    store: NodeStore,
    config: TreeConfig,
    root: NodeFile,
    messages: Sequence[tuple[str, str | None]],
    txn: str,
    now_millis: int,
) -> TreeUpdate:
    """Append the messages of transaction ``txn`` to the buffer of ``root`` and restore
    T1-T8, touching no existing file (what ``Tree.apply`` does).

    Returns the new root (not yet written: its name is the version, which the
    transaction layer decides) and the new non-root node files to write first.
    """
    writer = _Writer(store, config, txn)
    draft = writer.draft_of(root)
    draft.buffer.extend(Message(key, value, txn) for key, value in messages)
    draft = writer.settle_root(draft)
    update = writer.materialize(draft, now_millis)
    update.stats.update(writer.stats)
    return update


class _Draft:
    """A node being rebuilt in memory; becomes a new file when materialized (T7)."""

    __slots__ = ("keys", "values", "children", "buffer")

    def __init__(
        self,
        keys: list[str],
        values: list[str],
        children: list["_Ref"],
        buffer: list[Message],
    ) -> None:
        self.keys = keys
        self.values = values
        self.children = children
        self.buffer = buffer

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def is_separator(self, key: str) -> bool:
        index = bisect.bisect_left(self.keys, key)
        return index < len(self.keys) and self.keys[index] == key


_Ref = Union[str, _Draft]


def _apply_to_leaf(leaf: _Draft, messages: Sequence[Message]) -> None:
    table = dict(zip(leaf.keys, leaf.values))
    for message in messages:
        if message.value is None:
            table.pop(message.key, None)
        else:
            table[message.key] = message.value
    leaf.keys = sorted(table)
    leaf.values = [table[key] for key in leaf.keys]


def _prepend_for_key(buffer: list[Message], moved: list[Message]) -> list[Message]:
    """Put messages that come up from below ahead of a buffer's own messages.

    They are older than any message already here for the same key (T6); the relative
    order of messages for different keys carries no meaning.
    """
    return moved + buffer if moved else buffer


class _Writer:
    """One copy-on-write update of a tree, for the transaction ``txn``."""

    def __init__(self, store: NodeStore, config: TreeConfig, txn: str) -> None:
        self.store = store
        self.config = config
        self.txn = txn
        self.stats: Counter = Counter()

    # -- drafts ---------------------------------------------------------------

    def draft_of(self, node: NodeFile) -> _Draft:
        return _Draft(list(node.keys), list(node.values), list(node.children), list(node.buffer))

    def draft(self, ref: _Ref) -> _Draft:
        return ref if isinstance(ref, _Draft) else self.draft_of(self.store.load(ref))

    def key_count(self, ref: _Ref) -> int:
        return len(ref.keys) if isinstance(ref, _Draft) else len(self.store.load(ref).keys)

    def over_capacity(self, node: _Draft, skip_txn: str | None = None) -> bool:
        """Does the buffer, less ``skip_txn``'s messages, exceed the flush threshold (and
        so possibly the capacity, T5)?"""
        size = sum(message_size(m) for m in node.buffer if skip_txn is None or m.txn != skip_txn)
        return size > self.config.flush_bytes

    # -- the root -------------------------------------------------------------

    def settle_root(self, root: _Draft) -> _Draft:
        """Flush the root until T5 holds, never moving this transaction's messages."""
        while True:
            root = self.fix_root_shape(root)
            if not self.over_capacity(root, skip_txn=self.txn):
                return root
            flushable = [m for m in root.buffer if m.txn != self.txn]
            if root.is_leaf:
                _apply_to_leaf(root, flushable)
                root.buffer = [m for m in root.buffer if m.txn == self.txn]
                continue
            if self.apply_separator_messages(root, skip_txn=self.txn):
                continue
            self.flush_one(root, skip_txn=self.txn, keep_bytes=self.config.flush_bytes)
            self.fix_children(root)

    def fix_root_shape(self, root: _Draft) -> _Draft:
        """Split an overfull root (its buffer stays at the new root) or collapse an empty one."""
        while True:
            if len(root.keys) > self.config.max_keys:
                buffer, root.buffer = root.buffer, []
                left, key, value, right, _ = self.split(root)
                root = _Draft([key], [value], [left, right], buffer)
                self.fix_children(root)
            elif not root.is_leaf and not root.keys:
                child = self.draft(root.children[0])
                child.buffer = child.buffer + root.buffer
                root = child
                if not root.is_leaf:
                    self.fix_children(root)
            else:
                return root

    # -- moving messages --------------------------------------------------------

    def flush_one(
        self, node: _Draft, skip_txn: str | None = None, keep_bytes: int | None = None
    ) -> None:
        """Move the messages of the child with the most pending messages into it; with
        ``keep_bytes``, go on with the next busiest children (ties: leftmost first) until
        the buffer, less ``skip_txn``'s messages, holds at most that many bytes.

        One pass sorts the buffer by child, so flushing many children out of a large
        buffer (the commit after a bulk load) costs one bisect per message, not one per
        message and child."""
        keys = node.keys
        targets: list[int] = []  # per message: its child, or -1 if it stays
        groups: dict[int, list[Message]] = {}
        for message in node.buffer:
            index = -1
            if skip_txn is None or message.txn != skip_txn:
                index = bisect.bisect_left(keys, message.key)
                if index < len(keys) and keys[index] == message.key:
                    index = -1  # a separator's message is applied here, never moved
                else:
                    groups.setdefault(index, []).append(message)
            targets.append(index)
        if not groups:
            return
        order = sorted(groups, key=lambda index: (-len(groups[index]), index))
        if keep_bytes is not None:
            size = sum(message_size(m) for m in node.buffer if skip_txn is None or m.txn != skip_txn)
            chosen = []
            for index in order:
                chosen.append(index)
                size -= buffer_size(groups[index])
                if size <= keep_bytes:
                    break
            order = chosen
        else:
            order = order[:1]
        moving = set(order)
        node.buffer = [m for m, t in zip(node.buffer, targets) if t not in moving]
        for target in order:
            self.stats["flush"] += 1
            child = self.draft(node.children[target])
            node.children[target] = child
            if child.is_leaf:
                _apply_to_leaf(child, groups[target])
            else:
                child.buffer.extend(groups[target])

    def apply_separator_messages(self, node: _Draft, skip_txn: str | None = None) -> bool:
        """Apply buffered messages whose key is one of ``node``'s separators.

        Returns True if anything changed. Sets update the value in place; a delete
        removes the separator by merging and pushing it down (T4 guarantees nothing
        below refers to it).
        """
        final: dict[str, Message] = {}
        kept: list[Message] = []
        for message in node.buffer:
            movable = skip_txn is None or message.txn != skip_txn
            if movable and node.is_separator(message.key):
                final[message.key] = message
            else:
                kept.append(message)
        if not final:
            return False
        node.buffer = kept
        for key, message in final.items():
            index = bisect.bisect_left(node.keys, key)
            if index < len(node.keys) and node.keys[index] == key:
                if message.value is not None:
                    node.values[index] = message.value
                else:
                    self.delete_separator(node, index)
            else:
                # An earlier repair in this loop moved the key down into a child: the
                # message is still older than anything left for it in this buffer.
                node.buffer = _prepend_for_key(node.buffer, [message])
        return True

    def delete_separator(self, node: _Draft, index: int) -> None:
        """Remove ``node.keys[index]``: merge the children around it and push it down."""
        self.stats["demote"] += 1
        left = self.draft(node.children[index])
        right = self.draft(node.children[index + 1])
        key = node.keys.pop(index)
        value = node.values.pop(index)
        node.children.pop(index + 1)
        position = len(left.keys)
        merged = _Draft(
            left.keys + [key] + right.keys,
            left.values + [value] + right.values,
            left.children + right.children,
            left.buffer + right.buffer,
        )
        node.children[index] = merged
        if merged.is_leaf:
            del merged.keys[position]
            del merged.values[position]
        else:
            self.delete_separator(merged, position)
        self.fix_children(node)

    # -- structural repair ------------------------------------------------------

    def fix_children(self, parent: _Draft) -> None:
        """Repeat local repairs until every rebuilt child of ``parent`` is valid.

        Only drafts can be invalid: an untouched child is an existing file, valid by
        induction. ``parent``'s own key count may change; its caller repairs it.
        """
        start = 0
        while True:
            for index in range(start, len(parent.children)):
                if isinstance(parent.children[index], _Draft) and self.fix_one(parent, index):
                    # A repair of child i changes children i-1 .. i+1 at most (split,
                    # flush, borrow, merge): the valid children left of them stay valid.
                    start = max(0, index - 1)
                    break
            else:
                return

    def fix_one(self, parent: _Draft, index: int) -> bool:
        """Apply one repair to ``parent.children[index]``; True if one was needed."""
        child = parent.children[index]
        assert isinstance(child, _Draft)
        if not child.is_leaf and self.apply_separator_messages(child):
            self.fix_children(child)
            return True
        if len(child.keys) > self.config.max_keys:
            left, key, value, right, up = self.split(child)
            parent.keys.insert(index, key)
            parent.values.insert(index, value)
            parent.children[index : index + 1] = [left, right]
            parent.buffer = _prepend_for_key(parent.buffer, up)
            return True
        if not child.is_leaf and self.over_capacity(child):
            self.flush_one(child, keep_bytes=self.config.flush_bytes)
            self.fix_children(child)
            return True
        if len(child.keys) < self.config.min_keys and len(parent.children) > 1:
            self.rebalance(parent, index)
            return True
        return False

    def split(self, node: _Draft) -> tuple[_Draft, str, str, _Draft, list[Message]]:
        """Split around the middle key; its buffered messages go up (returned last)."""
        self.stats["split"] += 1
        middle = len(node.keys) // 2
        key, value = node.keys[middle], node.values[middle]
        left_buffer: list[Message] = []
        right_buffer: list[Message] = []
        up: list[Message] = []
        for message in node.buffer:
            if message.key < key:
                left_buffer.append(message)
            elif message.key > key:
                right_buffer.append(message)
            else:
                up.append(message)
        children = node.children
        left = _Draft(
            node.keys[:middle],
            node.values[:middle],
            children[: middle + 1] if children else [],
            left_buffer,
        )
        right = _Draft(
            node.keys[middle + 1 :],
            node.values[middle + 1 :],
            children[middle + 1 :] if children else [],
            right_buffer,
        )
        return left, key, value, right, up

    def rebalance(self, parent: _Draft, index: int) -> None:
        """Restore T3 for an underfull child: borrow from a sibling, else merge."""
        minimum = self.config.min_keys
        self.stats["rebalance"] += 1
        if index > 0 and self.key_count(parent.children[index - 1]) > minimum:
            self.rotate_from_left(parent, index)
        elif index + 1 < len(parent.children) and self.key_count(parent.children[index + 1]) > minimum:
            self.rotate_from_right(parent, index)
        else:
            left_index = index - 1 if index > 0 else index
            self.merge(parent, left_index)

    def rotate_from_left(self, parent: _Draft, index: int) -> None:
        self.stats["borrow"] += 1
        child = self.draft(parent.children[index])
        sibling = self.draft(parent.children[index - 1])
        parent.children[index], parent.children[index - 1] = child, sibling
        child.keys.insert(0, parent.keys[index - 1])
        child.values.insert(0, parent.values[index - 1])
        up_key = sibling.keys.pop()
        up_value = sibling.values.pop()
        if not sibling.is_leaf:
            child.children.insert(0, sibling.children.pop())
        stay, down, up = [], [], []
        for message in sibling.buffer:
            (stay if message.key < up_key else up if message.key == up_key else down).append(message)
        sibling.buffer = stay
        child.buffer = down + child.buffer
        parent.keys[index - 1] = up_key
        parent.values[index - 1] = up_value
        parent.buffer = _prepend_for_key(parent.buffer, up)
        self.fix_children(child)
        self.fix_children(sibling)

    def rotate_from_right(self, parent: _Draft, index: int) -> None:
        self.stats["borrow"] += 1
        child = self.draft(parent.children[index])
        sibling = self.draft(parent.children[index + 1])
        parent.children[index], parent.children[index + 1] = child, sibling
        child.keys.append(parent.keys[index])
        child.values.append(parent.values[index])
        up_key = sibling.keys.pop(0)
        up_value = sibling.values.pop(0)
        if not sibling.is_leaf:
            child.children.append(sibling.children.pop(0))
        stay, down, up = [], [], []
        for message in sibling.buffer:
            (stay if message.key > up_key else up if message.key == up_key else down).append(message)
        sibling.buffer = stay
        child.buffer = child.buffer + down
        parent.keys[index] = up_key
        parent.values[index] = up_value
        parent.buffer = _prepend_for_key(parent.buffer, up)
        self.fix_children(child)
        self.fix_children(sibling)

    def merge(self, parent: _Draft, left_index: int) -> None:
        """Merge children left_index and left_index+1 around their separator."""
        self.stats["merge"] += 1
        left = self.draft(parent.children[left_index])
        right = self.draft(parent.children[left_index + 1])
        key = parent.keys.pop(left_index)
        value = parent.values.pop(left_index)
        parent.children.pop(left_index + 1)
        merged = _Draft(
            left.keys + [key] + right.keys,
            left.values + [value] + right.values,
            left.children + right.children,
            left.buffer + right.buffer,
        )
        parent.children[left_index] = merged
        self.fix_children(merged)

    # -- output -----------------------------------------------------------------

    def materialize(self, root: _Draft, now_millis: int) -> TreeUpdate:
        """Give every draft below the root a new file; return them with the new root."""
        from ..format.paths import new_node_path

        files: dict[str, bytes] = {}

        def finish(draft: _Draft) -> NodeFile:
            return NodeFile(
                order=self.config.order,
                system={CREATED_AT_MILLIS: str(now_millis), N_KEYS: str(len(draft.keys))},
                keys=tuple(draft.keys),
                values=tuple(draft.values),
                children=tuple(resolve(child) for child in draft.children),
                buffer=tuple(draft.buffer),
            )

        def resolve(ref: _Ref) -> str:
            if isinstance(ref, str):
                return ref
            node = finish(ref)
            path = new_node_path()
            files[path] = encode_node_file(node)
            self.store.remember(path, node)
            return path

        return TreeUpdate(finish(root), files)


def empty_root(order: int, now_millis: int) -> NodeFile:
    """The root of a new, empty tree: a leaf with no keys and no messages."""
    return NodeFile(order=order, system={CREATED_AT_MILLIS: str(now_millis), N_KEYS: "0"})
