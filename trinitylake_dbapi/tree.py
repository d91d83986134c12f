"""The TrinityLake tree: a copy-on-write B-epsilon tree over immutable node files.

SPEC 4 fixes the file layout and SPEC 6 the rules; this module keeps them. A node has a
key table (a B-tree node whose keys carry values, as in a classic B-tree, not a B+ tree)
and a write buffer of messages (set or delete a key). ``N`` is the tree order.

Invariants. Every function that changes the tree restores them before it returns, and
:func:`check_tree` verifies all of them.

  T1 Shape: a node holds at most N-1 keys, strictly ascending; an internal node with k
     keys has k+1 children, a leaf has none.
  T2 Balance: all leaves are at the same depth.
  T3 Fill: every non-root node holds at least ceil(N/2)-1 keys, so a non-root internal
     node has at least ceil(N/2) children. An internal root holds at least one key.
  T4 Ranges: every key in the subtree of child i of a node X, in key tables and in
     buffers alike, lies strictly between X's keys i-1 and i. Consequently a key that is
     a separator of X has no message anywhere below X.
  T5 Buffers: a leaf's buffer is empty unless the leaf is the root. A non-root buffer
     fits its capacity (SPEC 6). The root's buffer fits its capacity once the messages of
     the transaction that wrote the root are left out: those never leave the root in the
     commit that writes them, so root v shows exactly which keys version v changed.
  T6 Recency: for any key, a message higher in the tree is newer than one below it, and
     within one buffer a later message is newer. Hence the value of a key is the newest
     message for it on the path from the root, else its key-table entry, else absent
     ("merge on read").
  T7 Immutability: a node file is never rewritten; a changed node is a new file with a
     new name, and a node is referenced once within a tree.
  T8 Every node file carries ``n_keys`` and ``created_at_millis``.
  T9 Depth: a path from the root has at most MAX_TREE_DEPTH (64) levels and names no
     file twice. Writers never come near it (order >= 3 and 2^32 versions keep a real
     tree far shallower); readers check it on every descent, so a child pointer that
     points back at an ancestor (a cycle) or a chain of pointers that never ends is a
     CorruptFileError naming the file that holds the pointer, never an endless loop.
     A child pointer that is not a valid path is a CorruptFileError naming that file too.

How writes keep T1-T8 (B-epsilon): messages are appended to the root's buffer. When a
buffer exceeds its flush threshold (at most its capacity), the messages of its children
with the most pending messages move into them, busiest first, until it fits
(copy-on-write); a leaf applies them at once. Messages whose key is
a separator of the node are applied to the key table instead; deleting a separator
merges its two children around it and pushes the separator down until it is removed
from a leaf. Every change then goes through ``_fix_children``, which repeats one local
repair (apply separator messages, split an overfull node, flush an overfull buffer,
borrow or merge for an underfull node) until every changed child is valid again.
When a node splits, its buffered messages for the promoted key move to the parent,
before the parent's own messages for that key (T6); the same holds for the keys that
rotate up while borrowing.
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Callable, Iterator, Sequence, Union

from .errors import CorruptFileError, InvalidLocationError
from .format.nodefile import (
    CREATED_AT_MILLIS,
    N_KEYS,
    Message,
    NodeFile,
    decode_node_file,
    encode_node_file,
)

if TYPE_CHECKING:
    from .storage import Storage

#: T9: more levels than this from the root to a node means a cycle of child pointers.
MAX_TREE_DEPTH = 64

#: Bytes added to every message's text when estimating a buffer's size (Arrow offsets
#: and validity bits of four columns).
MESSAGE_OVERHEAD_BYTES = 16


def message_size(message: Message) -> int:
    """Estimated bytes a buffered message adds to its node file."""
    return (
        len(message.key)
        + len(message.value or "")
        + len(message.txn or "")
        + MESSAGE_OVERHEAD_BYTES
    )


def buffer_size(messages: Sequence[Message]) -> int:
    """Estimated bytes of a write buffer (T5 compares it to the capacity)."""
    return sum(map(message_size, messages))


@dataclass(frozen=True)
class TreeConfig:
    """The two numbers the tree needs from the lakehouse definition."""

    order: int
    buffer_capacity_bytes: int
    #: Flush a buffer once it holds more than this many bytes (at most the capacity;
    #: None means the capacity). SPEC 6 lets a writer flush before a buffer is full, and
    #: every commit rewrites the root while every flush rewrites a child: smaller
    #: buffers make both cheaper. Readers and the checker only ever use the capacity.
    flush_threshold_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.order < 3:
            raise ValueError(f"tree order must be at least 3, not {self.order}")
        if self.buffer_capacity_bytes <= 0:
            raise ValueError("buffer capacity must be positive")
        if self.flush_threshold_bytes is not None and self.flush_threshold_bytes <= 0:
            raise ValueError("flush threshold must be positive")

    @property
    def flush_bytes(self) -> int:
        """The buffer size above which a writer flushes (T5 holds a fortiori)."""
        if self.flush_threshold_bytes is None:
            return self.buffer_capacity_bytes
        return min(self.flush_threshold_bytes, self.buffer_capacity_bytes)

    @property
    def max_keys(self) -> int:
        return self.order - 1

    @property
    def min_keys(self) -> int:
        """ceil(N/2) - 1 (T3)."""
        return (self.order + 1) // 2 - 1


#: Estimated bytes of decoded nodes (and of scan results derived from them) that a
#: NodeStore keeps. A leaf of order 128 at 1,000,000 tables takes ~37 KB decoded, so
#: this holds ~7,000 nodes: all of a 100,000-table tree, ~60 % of a 1,000,000-table one.
NODE_CACHE_BYTES = 256 * 2**20
#: Per string: the str object header and a pointer to it; per message: its tuple and
#: its entry in the merge-on-read index.
_STRING_OVERHEAD_BYTES = 64
_MESSAGE_OVERHEAD_BYTES = 160
#: Per item of a cached derived scan result (a pointer, and the derived object itself).
_DERIVED_ITEM_BYTES = 80
#: Derived scan results kept per node (distinct ranges scanned through it).
_DERIVED_PER_NODE = 8

_MESSAGE_KEY = itemgetter(0)
_MESSAGE_VALUE = itemgetter(1)
_MESSAGE_TXN = itemgetter(2)


def _node_cost(node: NodeFile) -> int:
    """Estimated bytes of a decoded node in memory (C-level sums, a few us)."""
    chars = sum(map(len, node.keys)) + sum(map(len, node.values)) + sum(map(len, node.children))
    strings = 2 * len(node.keys) + len(node.children)
    buffer = node.buffer
    if buffer:
        chars += sum(map(len, map(_MESSAGE_KEY, buffer)))
        chars += sum(map(len, filter(None, map(_MESSAGE_VALUE, buffer))))
        chars += sum(map(len, filter(None, map(_MESSAGE_TXN, buffer))))
        strings += 3 * len(buffer)
    return 1024 + chars + _STRING_OVERHEAD_BYTES * strings + _MESSAGE_OVERHEAD_BYTES * len(buffer)


class _CachedNode:
    """A decoded node plus the indexes that reads need.

    Everything here is computed from the node file, which is immutable (T7), and so are
    the files of its children: ``derived`` caches results of range scans over the
    node's whole subtree (see :meth:`Tree.scan`), valid for as long as the entry lives.
    The writer never changes a NodeFile (it copies into drafts and makes new files).
    """

    __slots__ = ("file", "latest", "cost", "derived", "_message_keys")

    def __init__(self, file: NodeFile) -> None:
        self.file = file
        buffer = file.buffer
        # The newest message per key: a later message in the buffer wins (T6).
        self.latest: dict[str, Message] = dict(zip(map(_MESSAGE_KEY, buffer), buffer))
        self.cost = _node_cost(file)
        self.derived: dict | None = None
        self._message_keys: list[str] | None = None

    def overrides(self, lo: str | None, hi: str | None) -> list[Message]:
        """The newest buffered message of every key in [lo, hi), in key order."""
        latest = self.latest
        if not latest:
            return []
        keys = self._message_keys
        if keys is None:
            keys = self._message_keys = sorted(latest)
        first = 0 if lo is None else bisect.bisect_left(keys, lo)
        last = len(keys) if hi is None else bisect.bisect_left(keys, hi)
        return [latest[key] for key in keys[first:last]]


class NodeStore:
    """Loads node files through :class:`Storage`, decoded once and cached by path (T7).

    The cache is an LRU bounded by estimated memory (``cache_bytes``, which counts the
    decoded nodes and the scan results cached with them) and by ``cache_nodes``. It may
    be shared by threads reading the same lakehouse: its bookkeeping is locked, decoding
    is not.
    """

    def __init__(
        self,
        storage: "Storage",
        order: int | None = None,
        cache_nodes: int = 1 << 20,
        cache_bytes: int = NODE_CACHE_BYTES,
    ):
        self.storage = storage
        self.order = order
        self._cache: OrderedDict[str, _CachedNode] = OrderedDict()
        self._cache_nodes = cache_nodes
        self._cache_bytes = cache_bytes
        self._cached_bytes = 0
        self._lock = threading.Lock()

    def _entry(self, path: str) -> _CachedNode:
        cache = self._cache
        entry = cache.get(path)
        if entry is not None:
            # A hit needs no lock: each OrderedDict call is atomic, and the byte count
            # changes only with insertions and evictions, which hold the lock.
            try:
                cache.move_to_end(path)
            except KeyError:  # evicted by another thread just now: still valid (T7)
                pass
            return entry
        entry = _CachedNode(decode_node_file(self.storage.read(path), path, self.order))
        self._insert(path, entry)
        return entry

    def _insert(self, path: str, entry: _CachedNode) -> None:
        with self._lock:
            old = self._cache.pop(path, None)
            if old is not None:
                self._cached_bytes -= old.cost
            self._cache[path] = entry
            self._cached_bytes += entry.cost
            self._evict()

    def _evict(self) -> None:
        """Drop least recently used entries until both bounds hold (lock held)."""
        cache = self._cache
        while len(cache) > 1 and (
            self._cached_bytes > self._cache_bytes or len(cache) > self._cache_nodes
        ):
            _, old = cache.popitem(last=False)
            self._cached_bytes -= old.cost

    def load(self, path: str) -> NodeFile:
        """The decoded node file at ``path`` (CorruptFileError / MissingFileError if bad)."""
        return self._entry(path).file

    def remember(self, path: str, node: NodeFile) -> None:
        """Cache a node this process just wrote, so reading it back costs nothing."""
        self._insert(path, _CachedNode(node))

    def remember_derived(self, path: str, entry: _CachedNode, key: object, value: tuple) -> None:
        """Cache ``value``, derived from the subtree of ``entry`` (the node at ``path``),
        if the entry is still cached (otherwise its bytes would be counted for nothing)."""
        cost = 256 + _DERIVED_ITEM_BYTES * len(value)
        with self._lock:
            if self._cache.get(path) is not entry:
                return
            derived = entry.derived
            if derived is None:
                derived = entry.derived = {}
            elif len(derived) >= _DERIVED_PER_NODE:
                for old in derived.values():
                    released = 256 + _DERIVED_ITEM_BYTES * len(old)
                    entry.cost -= released
                    self._cached_bytes -= released
                derived.clear()
            derived[key] = value
            entry.cost += cost
            self._cached_bytes += cost
            self._evict()


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------


class Tree:
    """One version's tree: merge-on-read lookups and copy-on-write updates."""

    def __init__(
        self, store: NodeStore, root: NodeFile, config: TreeConfig, root_path: str = "the root node"
    ) -> None:
        self.store = store
        self.root = root
        self.config = config
        #: The root's file name, for errors about the pointers it holds.
        self.root_path = root_path
        self._root_entry = _CachedNode(root)

    def _child(self, parent: str | None, child: str, depth: int, ancestors: Sequence[str] = ()) -> _CachedNode:
        """The node ``child`` that ``parent`` (None: the root) points at, ``depth``
        levels below the root, checked against T9."""
        holder = self.root_path if parent is None else parent
        if child in ancestors or child == parent:
            raise CorruptFileError(
                holder, f"child pointer {child!r} points back at a node on its own path "
                "from the root (a cycle, tree invariant T9)"
            )
        if depth > MAX_TREE_DEPTH:
            raise CorruptFileError(
                holder, f"child pointer {child!r} is more than {MAX_TREE_DEPTH} levels below "
                "the root: a cycle of child pointers or a tree no writer makes (T9)"
            )
        try:
            return self.store._entry(child)
        except InvalidLocationError as e:
            raise CorruptFileError(holder, f"child pointer {child!r} is not a valid path: {e}") from None

    def get(self, key: str) -> str | None:
        """The value of ``key`` or None (T6); reads at most one node file per level."""
        entry = self._root_entry
        path: list[str] = []
        while True:
            message = entry.latest.get(key)
            if message is not None:
                return message.value
            node = entry.file
            keys = node.keys
            index = bisect.bisect_left(keys, key)
            if index < len(keys) and keys[index] == key:
                return node.values[index]
            if not node.children:
                return None
            child = node.children[index]
            entry = self._child(path[-1] if path else None, child, len(path) + 1, path)
            path.append(child)

    def scan(
        self, lo: str | None = None, hi: str | None = None, derive: Callable | None = None
    ) -> list | None:
        """All (key, value) with lo <= key < hi in key order, merged on read (T6).

        With ``derive``, the keys in range only, each mapped through ``derive``: a
        hashable callable (equal derives derive alike) taking a sequence of keys in
        ascending order, all in [lo, hi), and returning a list of as many items that
        ascend strictly in the same order, or None when it cannot map them all; then the
        scan returns None (the caller scans pairs instead). Derived results of whole
        subtrees below the root are cached with their nodes (immutable files, T7), so
        repeating a scan costs a pass over the root's children in range.
        """
        if derive is None:
            return self._scan(self._root_entry, lo, hi)
        found = self._scan(self._root_entry, lo, hi, derive)
        return None if found is None else list(found)

    def _scan(
        self,
        entry: _CachedNode,
        lo: str | None,
        hi: str | None,
        derive: Callable | None = None,
        path: str | None = None,
        depth: int = 0,
    ) -> Sequence | None:
        """Pairs (or derived keys) of ``entry``'s subtree in [lo, hi). ``path`` is the
        node's file (None for the root, whose derived results are not cached), ``depth``
        its level below the root (T9)."""
        if derive is not None and path is not None and entry.derived is not None:
            cached = entry.derived.get((lo, hi, derive))
            if cached is not None:
                return cached
        node = entry.file
        # Keys first..last-1 lie in [lo, hi); children first..last may hold some (T4).
        keys = node.keys
        first = 0 if lo is None else bisect.bisect_left(keys, lo)
        last = len(keys) if hi is None else bisect.bisect_left(keys, hi)
        children = node.children
        overrides = entry.overrides(lo, hi)
        if derive is None:
            if not children:
                items: list = list(zip(keys[first:last], node.values[first:last]))
            else:
                items = []
                for index in range(first, last + 1):
                    child = children[index]
                    items.extend(self._scan(self._child(path, child, depth + 1), lo, hi, None, child, depth + 1))
                    if index < last:
                        items.append((keys[index], node.values[index]))
            if not overrides:
                return items
            merged = dict(items)
            for message in overrides:
                if message.value is None:
                    merged.pop(message.key, None)
                else:
                    merged[message.key] = message.value
            return sorted(merged.items())

        own = derive(keys[first:last]) if first < last else []
        if own is None:
            return None
        if not children:
            items = list(own)
        else:
            items = []
            for index in range(first, last + 1):
                child = children[index]
                found = self._scan(self._child(path, child, depth + 1), lo, hi, derive, child, depth + 1)
                if found is None:
                    return None
                items.extend(found)
                if index < last:
                    items.append(own[index - first])
        if overrides:
            derived = derive([message.key for message in overrides])
            if derived is None:
                return None
            for item, message in zip(derived, overrides):
                at = bisect.bisect_left(items, item)
                present = at < len(items) and items[at] == item
                if message.value is None:
                    if present:
                        del items[at]
                elif not present:
                    items.insert(at, item)
        result = tuple(items)
        if path is not None:
            self.store.remember_derived(path, entry, (lo, hi, derive), result)
        return result

    def apply(
        self, messages: Sequence[tuple[str, str | None]], txn: str, now_millis: int
    ) -> "TreeUpdate":
        """Append a transaction's messages and restore T1-T8, touching no existing file.

        Returns the new root (not yet written: its name is the version, which the
        transaction layer decides) and the new non-root node files to write first.
        """
        writer = _Writer(self.store, self.config, txn)
        root = writer.draft_of(self.root)
        root.buffer.extend(Message(key, value, txn) for key, value in messages)
        root = writer.settle_root(root)
        update = writer.materialize(root, now_millis)
        update.stats.update(writer.stats)
        return update

    def walk(self) -> Iterator[tuple[str | None, NodeFile, int]]:
        """Every node as (path, node, depth), the root first with path None."""
        stack: list[tuple[str | None, NodeFile, int]] = [(None, self.root, 0)]
        while stack:
            path, node, depth = stack.pop()
            yield path, node, depth
            for child in reversed(node.children):
                stack.append((child, self._child(path, child, depth + 1).file, depth + 1))

    def node_paths(self) -> Iterator[str]:
        """Paths of every non-root node file this tree reaches."""
        for path, _, _ in self.walk():
            if path is not None:
                yield path

    def height(self) -> int:
        """Number of levels (1 for a lone root)."""
        levels, node, path = 1, self.root, None
        while not node.is_leaf:
            child = node.children[0]
            node, path = self._child(path, child, levels).file, child
            levels += 1
        return levels


@dataclass(frozen=True)
class TreeUpdate:
    """The result of :meth:`Tree.apply`.

    ``stats`` counts the structural operations performed (flush, split, borrow, merge,
    demote), for tests and benchmarks.
    """

    root: NodeFile
    files: dict[str, bytes]
    stats: Counter = field(default_factory=Counter)


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------


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
        from .format.paths import new_node_path

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


# ---------------------------------------------------------------------------
# Verification
# ---------------------------------------------------------------------------


def check_tree(
    store: NodeStore,
    root: NodeFile,
    config: TreeConfig,
    root_txn: str | None = None,
) -> list[str]:
    """Every violation of T1-T8 in the tree under ``root``; an empty list means valid.

    ``root_txn`` is the transaction that wrote the root, whose messages may exceed the
    root's buffer capacity (T5). Each violation names the node file.
    """
    problems: list[str] = []
    seen: set[str] = set()
    leaf_depths: set[int] = set()

    def visit(path: str | None, node: NodeFile, depth: int, low: str | None, high: str | None) -> None:
        name = path or "<root>"
        if node.order != config.order:
            problems.append(f"{name}: order {node.order}, lakehouse order {config.order}")
        if len(node.keys) > config.max_keys:
            problems.append(f"{name}: {len(node.keys)} keys exceed {config.max_keys} (T1)")
        if any(a >= b for a, b in zip(node.keys, node.keys[1:])):
            problems.append(f"{name}: keys not strictly ascending (T1)")
        if node.children and len(node.children) != len(node.keys) + 1:
            problems.append(f"{name}: {len(node.children)} children for {len(node.keys)} keys (T1)")
        if path is not None and len(node.keys) < config.min_keys:
            problems.append(f"{name}: {len(node.keys)} keys, fewer than {config.min_keys} (T3)")
        if path is None and node.children and not node.keys:
            problems.append(f"{name}: internal root without keys (T3)")
        for key in node.keys:
            if (low is not None and key <= low) or (high is not None and key >= high):
                problems.append(f"{name}: key {key!r} outside its range ({low!r}, {high!r}) (T4)")
        for message in node.buffer:
            key = message.key
            if (low is not None and key <= low) or (high is not None and key >= high):
                problems.append(f"{name}: message for {key!r} outside its range (T4)")
        if node.is_leaf:
            leaf_depths.add(depth)
            if path is not None and node.buffer:
                problems.append(f"{name}: non-root leaf with {len(node.buffer)} buffered messages (T5)")
        skip = root_txn if path is None else None
        size = buffer_size([m for m in node.buffer if skip is None or m.txn != skip])
        if size > config.buffer_capacity_bytes:
            problems.append(f"{name}: buffer of {size} bytes exceeds {config.buffer_capacity_bytes} (T5)")
        for field_name in (N_KEYS, CREATED_AT_MILLIS):
            if field_name not in node.system:
                problems.append(f"{name}: missing system row {field_name!r} (T8)")
        if node.system.get(N_KEYS, str(len(node.keys))) != str(len(node.keys)):
            problems.append(f"{name}: n_keys {node.system.get(N_KEYS)!r} but {len(node.keys)} keys (T8)")
        for index, child in enumerate(node.children):
            if child in seen:
                problems.append(f"{name}: child {child!r} referenced twice (T7)")
                continue
            seen.add(child)
            child_low = node.keys[index - 1] if index > 0 else low
            child_high = node.keys[index] if index < len(node.keys) else high
            try:
                child_node = store.load(child)
            except Exception as exc:  # reported, not raised: the checker lists everything
                problems.append(f"{name}: child {child!r} unreadable: {exc}")
                continue
            visit(child, child_node, depth + 1, child_low, child_high)

    visit(None, root, 0, None, None)
    if len(leaf_depths) > 1:
        problems.append(f"leaves at depths {sorted(leaf_depths)} (T2)")
    return problems
