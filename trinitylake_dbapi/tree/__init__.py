"""The TrinityLake tree: a copy-on-write B-epsilon tree over immutable node files.

SPEC 4 fixes the file layout and SPEC 6 the rules; this package keeps them. A node has a
key table (a B-tree node whose keys carry values, as in a classic B-tree, not a B+ tree)
and a write buffer of messages (set or delete a key). ``N`` is the tree order.

Invariants. Every function that changes the tree (:mod:`.writer`) restores them before it
returns, :func:`~.check.check_tree` verifies T1-T8, and every read here checks T9.

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

The package, from the bottom up:

  nodes.py   the tree's configuration (order, buffer capacity), the size estimates T5
             compares, and the NodeStore that loads node files once and caches them
             decoded, by path (T7: a file never changes).
  writer.py  one copy-on-write update: drafts, flushes, splits, borrows, merges, and the
             new node files (how writes keep T1-T8 is told there).
  check.py   node_violations: the rules one node keeps on its own (the one
             implementation, which verify asks too); check_tree: every violation of
             T1-T8 under a root.
  walks.py   the walks of one node (TW1-TW3): its entries, the files it references,
             its merged view; the one implementation maintenance, verify and their
             Spark versions use.
  here       Tree, one version's tree: merge-on-read get and scan (T6), walks that
             check T9 on every descent (every node, every file reached, the cut points
             that split a key range along subtrees), and ``apply``, which hands the
             writer the messages of one transaction.
"""

from __future__ import annotations

import bisect
from typing import Callable, Iterator, Sequence

from ..errors import CorruptFileError, InvalidLocationError
from ..format.nodefile import NodeFile
from .check import check_tree, node_violations
from .nodes import (
    MESSAGE_OVERHEAD_BYTES,
    NODE_CACHE_BYTES,
    CachedNode,
    NodeStore,
    TreeConfig,
    buffer_size,
    message_size,
)
from .walks import (
    NodeReferences,
    merge_messages,
    merge_node,
    merged_view,
    node_entries,
    node_references,
    own_messages,
)
from .writer import TreeUpdate, apply_messages, empty_root

__all__ = [
    "MAX_TREE_DEPTH",
    "MESSAGE_OVERHEAD_BYTES",
    "NODE_CACHE_BYTES",
    "CachedNode",
    "NodeReferences",
    "NodeStore",
    "Tree",
    "TreeConfig",
    "TreeUpdate",
    "buffer_size",
    "check_tree",
    "empty_root",
    "merge_messages",
    "merge_node",
    "merged_view",
    "message_size",
    "node_entries",
    "node_references",
    "node_violations",
    "own_messages",
]

#: T9: more levels than this from the root to a node means a cycle of child pointers.
MAX_TREE_DEPTH = 64


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
        self._root_entry = CachedNode(root)

    def _child(self, parent: str | None, child: str, depth: int, ancestors: Sequence[str] = ()) -> CachedNode:
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
            return self.store.entry(child)
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
        entry: CachedNode,
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
    ) -> TreeUpdate:
        """Append a transaction's messages and restore T1-T8, touching no existing file.

        Returns the new root (not yet written: its name is the version, which the
        transaction layer decides) and the new non-root node files to write first.
        """
        return apply_messages(self.store, self.config, self.root, messages, txn, now_millis)

    def walk(self) -> Iterator[tuple[str | None, NodeFile, int]]:
        """Every node as (path, node, depth), the root first with path None."""
        stack: list[tuple[str | None, NodeFile, int]] = [(None, self.root, 0)]
        while stack:
            path, node, depth = stack.pop()
            yield path, node, depth
            for child in reversed(node.children):
                stack.append((child, self._child(path, child, depth + 1).file, depth + 1))

    def files(self, seen: set[str] | None = None) -> Iterator[str]:
        """Every file this tree reaches below its root file: node files and the
        definition files their entries name (TW2, the root's own included), each node
        yielded before the files it references.

        Subtrees whose node is in ``seen`` are skipped and every node walked is added
        to it, so the trees of several versions sharing subtrees are walked once
        (expiration and export count reachability this way, E3). A definition file may
        be yielded more than once. Every descent checks T9.
        """
        seen = set() if seen is None else seen
        stack: list[tuple[str | None, NodeFile, int]] = [(None, self.root, 0)]
        while stack:
            path, node, depth = stack.pop()
            if path is not None:
                yield path
            references = node_references(node)
            for _, value in references.definitions:
                yield value
            for child in references.children:
                if child not in seen:
                    seen.add(child)
                    stack.append((child, self._child(path, child, depth + 1).file, depth + 1))

    def cut_points(self, low: str, high: str, at_most: int) -> list[str]:
        """Keys strictly inside (low, high) from the top levels of the tree, at most
        about ``at_most`` of them, ascending: boundaries of key ranges that follow node
        subtrees (T4), so the ranges split the work of a scan where the tree does. Reads
        level by level from the root, only the nodes whose ranges overlap (low, high),
        and stops once a level would make more than 4 * ``at_most`` candidates."""
        cuts: set[str] = set()
        level: list[tuple[str | None, NodeFile]] = [(None, self.root)]
        depth = 0
        while level and len(cuts) < at_most:
            below: list[tuple[str | None, str]] = []
            for path, node in level:
                cuts.update(key for key in node.keys if low < key < high)
                for index, child in enumerate(node.children):
                    child_low = node.keys[index - 1] if index > 0 else None
                    child_high = node.keys[index] if index < len(node.keys) else None
                    if (child_high is None or child_high > low) and (child_low is None or child_low < high):
                        below.append((path, child))
            if len(cuts) + len(below) > 4 * at_most:
                break
            depth += 1
            level = [(child, self._child(parent, child, depth).file) for parent, child in below]
        ordered = sorted(cuts)
        if len(ordered) > at_most:
            step = len(ordered) / at_most
            ordered = [ordered[int(i * step)] for i in range(1, at_most)]
        return ordered

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
