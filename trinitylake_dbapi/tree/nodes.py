"""The nodes of the tree: its configuration, their sizes, and the store that loads them.

``TreeConfig`` holds the two numbers the tree needs from the lakehouse definition (the
order N of T1 and T3, the buffer capacity of T5) and the writer's flush threshold;
``message_size`` and ``buffer_size`` are the estimates T5 compares with the capacity.
``NodeStore`` reads node files through :class:`~trinitylake_dbapi.storage.Storage` and
keeps them decoded, by path, with the indexes reads need (:class:`CachedNode`): a node
file never changes (T7), so an entry is valid for as long as it is cached. The
invariants themselves are stated once, in the package docstring
(:mod:`trinitylake_dbapi.tree`).
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Sequence

from ..format.nodefile import Message, NodeFile, decode_node_file

if TYPE_CHECKING:
    from ..storage import Storage

__all__ = [
    "MESSAGE_OVERHEAD_BYTES",
    "NODE_CACHE_BYTES",
    "CachedNode",
    "NodeStore",
    "TreeConfig",
    "buffer_size",
    "message_size",
]

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


class CachedNode:
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
        self._cache: OrderedDict[str, CachedNode] = OrderedDict()
        self._cache_nodes = cache_nodes
        self._cache_bytes = cache_bytes
        self._cached_bytes = 0
        self._lock = threading.Lock()

    def entry(self, path: str) -> CachedNode:
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
        entry = CachedNode(decode_node_file(self.storage.read(path), path, self.order))
        self._insert(path, entry)
        return entry

    def _insert(self, path: str, entry: CachedNode) -> None:
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
        return self.entry(path).file

    def remember(self, path: str, node: NodeFile) -> None:
        """Cache a node this process just wrote, so reading it back costs nothing."""
        self._insert(path, CachedNode(node))

    def remember_derived(self, path: str, entry: CachedNode, key: object, value: tuple) -> None:
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

