"""The tree's walks (tree.walks TW1-TW3, Tree.files) against plain-dict oracles.

Random transactions go into tiny trees (orders 3 to 6, buffers of 1 to 6 messages) so
every flush, split, borrow and merge happens; each write sets a value never used
before, so a value names exactly one message. Then, for every version:

* the merged view of the root, built bottom-up from ``merged_view`` of every node, is
  the model (a dict the transactions were applied to), and so is every older version's;
* the tree, read back as plain dicts (one per node file, decoded independently of the
  tree's store), gives the oracle of what each node references and holds:
  ``node_entries``, ``node_references`` and ``Tree.files`` agree with it, shadowed
  values included (TW2), and ``Tree.files`` with a shared ``seen`` set walks each node
  of several versions once and reaches exactly what the versions reach one by one.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trinitylake_dbapi.errors import CorruptFileError
from trinitylake_dbapi.format.nodefile import Message, NodeFile, decode_node_file, encode_node_file
from trinitylake_dbapi.format.paths import root_node_path
from trinitylake_dbapi.tree import (
    NodeStore,
    Tree,
    TreeConfig,
    merge_messages,
    merged_view,
    node_entries,
    node_references,
    own_messages,
)
from tree_harness import TreeHarness

keys = st.text(alphabet="abcdefg", min_size=1, max_size=3)
# (key, delete?) - the value of a set is made unique by the test
operation = st.tuples(keys, st.booleans())
batches = st.lists(st.lists(operation, min_size=1, max_size=20), min_size=1, max_size=12)


def plain(storage, path: str) -> dict:
    """One node file as a plain dict, decoded straight from storage."""
    node = decode_node_file(storage.read(path), path)
    return {
        "keys": list(node.keys),
        "values": list(node.values),
        "buffer": [(m.key, m.value) for m in node.buffer],
        "children": list(node.children),
    }


def oracle_tree(storage, version: int) -> dict[str | None, dict]:
    """Every node a version's root reaches, as plain dicts by path (None: the root)."""
    nodes = {None: plain(storage, root_node_path(version))}
    pending = list(nodes[None]["children"])
    while pending:
        path = pending.pop()
        nodes[path] = plain(storage, path)
        pending.extend(nodes[path]["children"])
    return nodes


def oracle_content(nodes: dict, path: str | None = None) -> dict[str, str]:
    """The key -> value map of a subtree, the slow way: for every key, the newest
    message on the way down (T6: higher is newer, later in a buffer is newer), else
    the key table of the node that holds it."""
    node = nodes[path]
    found: dict[str, str] = {}
    for child in node["children"]:
        found.update(oracle_content(nodes, child))
    for key, value in zip(node["keys"], node["values"]):
        found[key] = value
    newest: dict[str, str | None] = {}
    for key, value in node["buffer"]:
        newest[key] = value
    for key, value in newest.items():
        if value is None:
            found.pop(key, None)
        else:
            found[key] = value
    return found


def view_bottom_up(tree: Tree, node: NodeFile) -> dict[str, str]:
    return merged_view(node, [view_bottom_up(tree, tree.store.load(c)) for c in node.children])


def build(order: int, capacity_messages: int, batches: list) -> tuple[TreeHarness, list[dict[str, str]], set[str]]:
    harness = TreeHarness(TreeConfig(order, 30 * capacity_messages))
    models: list[dict[str, str]] = [{}]
    written: set[str] = set()
    model: dict[str, str] = {}
    counter = 0
    for batch in batches:
        messages: list[tuple[str, str | None]] = []
        for key, delete in batch:
            if delete:
                messages.append((key, None))
                model.pop(key, None)
            else:
                counter += 1
                value = f"v{counter}"
                written.add(value)
                messages.append((key, value))
                model[key] = value
        harness.commit(messages)
        models.append(dict(model))
    return harness, models, written


def tree_at(harness: TreeHarness, version: int) -> Tree:
    path = root_node_path(version)
    root = decode_node_file(harness.storage.read(path), path)
    return Tree(NodeStore(harness.storage), root, harness.config, path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    order=st.integers(min_value=3, max_value=6),
    capacity_messages=st.integers(min_value=1, max_value=6),
    batches=batches,
)
def test_walks_match_plain_dict_oracle(order: int, capacity_messages: int, batches: list) -> None:
    harness, models, written = build(order, capacity_messages, batches)
    seen: set[str] = set()
    shared: list[str] = []
    one_by_one: set[str] = set()
    for version, model in enumerate(models):
        tree = tree_at(harness, version)
        nodes = oracle_tree(harness.storage, version)
        # TW3: the merged view of the root is the version's content
        assert view_bottom_up(tree, tree.root) == model
        assert oracle_content(nodes) == model
        expected_files: list[str] = []
        for path, node in nodes.items():
            file = tree.root if path is None else tree.store.load(path)
            # TW1: key table in key order, then the buffer in applied order
            entries = list(zip(node["keys"], node["values"])) + node["buffer"]
            assert node_entries(file) == entries
            # TW2: children and every value, shadowed ones included
            refs = node_references(file)
            assert list(refs.children) == node["children"]
            assert list(refs.definitions) == [(k, v) for k, v in entries if v is not None]
            assert refs.files() == node["children"] + [v for _, v in entries if v is not None]
            # TW3 per subtree: merged_view over the children's views is the oracle's
            children_views = [oracle_content(nodes, c) for c in node["children"]]
            assert merged_view(file, children_views) == oracle_content(nodes, path)
            expected_files += ([] if path is None else [path]) + [v for _, v in entries if v is not None]
        reached = list(tree.files())
        assert sorted(set(reached)) == sorted(set(expected_files))
        assert set(model.values()) <= set(reached) <= written | set(nodes) - {None}
        node_files = [f for f in reached if f in nodes]
        assert len(node_files) == len(set(node_files)) == len(nodes) - 1  # each node once
        assert set(node_files) == set(tree.node_paths())
        one_by_one.update(reached)
        shared.extend(tree.files(seen))
    # a shared ``seen`` walks every node of all versions once, reaching the same files
    assert set(shared) == one_by_one
    node_files = [f for f in shared if not f.startswith("v")]
    assert len(node_files) == len(set(node_files))


@given(
    view=st.dictionaries(keys, st.text(alphabet="xyz", min_size=1, max_size=2), max_size=8),
    messages=st.lists(st.tuples(keys, st.one_of(st.none(), st.text(alphabet="xyz", min_size=1, max_size=2))), max_size=12),
)
def test_merge_messages_is_applying_them_in_order(view: dict, messages: list) -> None:
    expected = dict(view)
    for key, value in messages:
        if value is None:
            expected.pop(key, None)
        else:
            expected[key] = value
    got = merge_messages(dict(view), [Message(k, v, "1") for k, v in messages])
    assert got == expected


def test_files_ends_on_a_cycle_of_child_pointers() -> None:
    """A node whose children point back at it: Tree.files walks it once (or says
    CorruptFileError naming it, T9), never an endless walk."""
    harness, _, _ = build(3, 1, [[("a", False), ("b", False), ("c", False), ("d", False)]] * 3)
    tree = harness.reread()
    child = tree.root.children[0]
    node = tree.store.load(child)
    looped = dataclasses.replace(node, children=(child,) * (len(node.keys) + 1))
    harness.storage.write(child, encode_node_file(looped))
    fresh = harness.reread()
    try:
        found = list(fresh.files())
    except CorruptFileError as e:
        assert child in str(e)
    else:  # the walk ends: the node is walked once, its pointers back at it skipped
        assert found.count(child) == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    order=st.integers(min_value=3, max_value=5),
    batches=batches,
    bounds=st.tuples(keys, keys),
    at_most=st.integers(min_value=1, max_value=8),
)
def test_cut_points_split_a_scan_along_the_tree(order: int, batches: list, bounds: tuple, at_most: int) -> None:
    """Tree.cut_points (what Spark's catalog views partition by): ascending keys strictly
    inside (low, high), about ``at_most`` of them, and the scans of the ranges they cut
    are the scan of the whole range, in order."""
    harness, models, _ = build(order, 2, batches)
    low, high = sorted(bounds)
    tree = harness.reread()
    cuts = tree.cut_points(low, high, at_most)
    assert cuts == sorted(set(cuts)) and all(low < c < high for c in cuts)
    assert len(cuts) <= at_most
    edges = [low, *cuts, high]
    pieces = [pair for a, b in zip(edges, edges[1:]) for pair in tree.scan(a, b)]
    assert pieces == tree.scan(low, high) == sorted((k, v) for k, v in models[-1].items() if low <= k < high)


def test_own_messages_are_the_versions_changes() -> None:
    """TW4: the root's messages tagged with its own version are that commit's writes."""
    harness, models, _ = build(3, 3, [[("a", False), ("b", False)], [("a", True), ("c", False)]])
    root = harness.reread().root
    assert [(m.key, m.value) for m in own_messages(root, str(harness.version))] == [("a", None), ("c", "v3")]
    assert merge_messages(dict(models[-2]), own_messages(root, str(harness.version))) == models[-1]
