"""The checks of the tree: the rules one node keeps on its own, and every violation of
T1-T8 under a root.

The invariants are stated in the package docstring (:mod:`trinitylake_dbapi.tree`).
:func:`node_violations` is the one implementation of the rules a node keeps on its own
(its order, T1, T3, T5, T8): :func:`check_tree` asks it for every node it walks, and so
does ``verify`` (locally and on Spark) for every node file it reads. The writer keeps the
rules, and the tests of the tree and of the transaction layer ask :func:`check_tree` after
each commit that it did. Both report and never raise, so one run lists every problem;
reads check T9 on their own (``Tree``).
"""

from __future__ import annotations

from ..format.nodefile import CREATED_AT_MILLIS, N_KEYS, NodeFile
from .nodes import NodeStore, TreeConfig, buffer_size

__all__ = ["ORDER_RULE", "check_tree", "node_violations"]

#: The rule a node breaks when its key table does not have the tree's order.
ORDER_RULE = "SPEC 4"


def node_violations(
    node: NodeFile, config: TreeConfig, *, is_root: bool, own_txn: str | None = None,
) -> list[tuple[str, str]]:
    """The rules ``node`` keeps on its own, as (rule, message) for each violation: the
    order of its key table (ORDER_RULE), T1, T3, T5 and T8. ``own_txn`` is the
    transaction that wrote a root, whose messages may exceed the root's buffer
    capacity (T5)."""
    out: list[tuple[str, str]] = []
    if node.order != config.order:
        out.append((ORDER_RULE, f"node key table has {node.order} rows, the tree order is "
                    f"{config.order}"))
    k = len(node.keys)
    if k > config.max_keys:
        out.append(("T1", f"{k} keys exceed the maximum {config.max_keys}"))
    if any(a >= b for a, b in zip(node.keys, node.keys[1:])):
        out.append(("T1", "keys not strictly ascending"))
    if node.children and len(node.children) != k + 1:
        out.append(("T1", f"{len(node.children)} children for {k} keys"))
    if is_root:
        if node.children and not node.keys:
            out.append(("T3", "internal root without keys"))
    elif k < config.min_keys:
        out.append(("T3", f"{k} keys, fewer than ceil(N/2)-1 = {config.min_keys}"))

    system = node.system
    for name in (N_KEYS, CREATED_AT_MILLIS):
        if name not in system:
            out.append(("T8", f"missing system row {name!r}"))
    if system.get(N_KEYS, str(k)) != str(k):
        out.append(("T8", f"n_keys {system.get(N_KEYS)!r} but {k} keys"))
    created = system.get(CREATED_AT_MILLIS)
    if created is not None and not (created.isascii() and created.isdigit()):
        out.append(("T8", f"created_at_millis {created!r} is not a number"))

    if node.is_leaf and not is_root and node.buffer:
        out.append(("T5", f"non-root leaf with {len(node.buffer)} buffered messages"))
    own = own_txn if is_root else None
    size = buffer_size([m for m in node.buffer if own is None or m.txn != own])
    if size > config.buffer_capacity_bytes:
        extra = " (not counting this version's own messages)" if is_root else ""
        out.append(("T5", f"write buffer of {size} bytes{extra} exceeds the capacity "
                    f"{config.buffer_capacity_bytes}"))
    return out


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
        for rule, message in node_violations(node, config, is_root=path is None, own_txn=root_txn):
            problems.append(f"{name}: {message} ({rule})")
        for key in node.keys:
            if (low is not None and key <= low) or (high is not None and key >= high):
                problems.append(f"{name}: key {key!r} outside its range ({low!r}, {high!r}) (T4)")
        for message in node.buffer:
            key = message.key
            if (low is not None and key <= low) or (high is not None and key >= high):
                problems.append(f"{name}: message for {key!r} outside its range (T4)")
        if node.is_leaf:
            leaf_depths.add(depth)
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
