"""The checker of the tree: every violation of T1-T8 under a root, as a list.

The invariants are stated in the package docstring (:mod:`trinitylake_dbapi.tree`); the
writer keeps them, and the tests of the tree and of the transaction layer ask this
function after each commit that it did. It reports and never raises, so one run lists
every problem; reads check T9 on their own (``Tree``).
"""

from __future__ import annotations

from ..format.nodefile import CREATED_AT_MILLIS, N_KEYS, NodeFile
from .nodes import NodeStore, TreeConfig, buffer_size

__all__ = ["check_tree"]


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
