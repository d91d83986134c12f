"""Acceptance tests of the tree at scale, and of what it writes (SPEC 4, 6)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trinitylake_dbapi.format.nodefile import decode_node_file
from trinitylake_dbapi.format.paths import root_node_path
from trinitylake_dbapi.tree import NodeStore, Tree, TreeConfig, message_size
from tree_harness import TreeHarness


def _key(i: int) -> str:
    return f"k{i:06d}"


def _fill_then_delete_half(
    keys: int, max_batch: int, rng: random.Random
) -> tuple[TreeHarness, dict[str, str], int]:
    """Insert ``keys`` keys in shuffled order, then delete a random half, in commits of
    1 to ``max_batch`` messages (order 4, 120-byte buffers: constant flushes), checking
    every invariant after every commit. Returns the harness, the dict the tree must
    equal, and the number of commits."""
    harness = TreeHarness(TreeConfig(order=4, buffer_capacity_bytes=120))
    model: dict[str, str] = {}
    order = list(range(keys))
    rng.shuffle(order)
    commits = 0

    def commit_in_random_batches(messages: list[tuple[str, str | None]]) -> None:
        nonlocal commits
        position = 0
        while position < len(messages):
            size = rng.randint(1, max_batch)
            batch = messages[position : position + size]
            position += size
            harness.commit(batch)
            for key, value in batch:
                if value is None:
                    model.pop(key, None)
                else:
                    model[key] = value
            commits += 1
            assert harness.problems() == [], f"after commit {commits}"

    commit_in_random_batches([(_key(i), f"v{i}") for i in order])
    assert len(model) == keys
    doomed = order[: keys // 2]
    rng.shuffle(doomed)
    commit_in_random_batches([(_key(i), None) for i in doomed])
    assert len(model) == keys - keys // 2
    return harness, model, commits


def test_two_thousand_keys_half_deleted_order_4() -> None:
    """All invariants after every commit, the content against a dict at the end, and
    every kind of node operation seen.

    Why 2,000 keys: it builds a tree of height 7 and does every operation (about 1,500
    splits, 2,300 flushes, 800 demotions, 13 rebalances with borrows and merges) in
    about 5 s of CPU. It used to be 10,000 keys (height 9), a minute of CPU for the same
    invariants, checked after one commit in ten; test_fill_then_delete_half_at_any_small_size
    below checks the same property on many small sizes, and test_tree_stateful.py after
    every step of random workloads."""
    rng = random.Random(42)
    harness, model, commits = _fill_then_delete_half(2_000, 80, rng)
    tree = harness.reread()
    assert tree.scan() == sorted(model.items())
    for i in rng.sample(range(2_000), 300):
        assert tree.get(_key(i)) == model.get(_key(i))
    assert tree.height() >= 6, "the tree should be deep enough to be a test of scale"
    nodes = sum(1 for _ in tree.walk())
    print(f"\norder 4, 1,000 keys left: height {tree.height()}, {nodes} nodes, "
          f"{commits} commits, operations {dict(harness.stats)}")
    for kind in ("flush", "split", "borrow", "merge", "demote"):
        assert harness.stats[kind] > 0, kind


@settings(max_examples=20, deadline=None)
@given(
    keys=st.integers(min_value=0, max_value=200),
    max_batch=st.integers(min_value=1, max_value=60),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_fill_then_delete_half_at_any_small_size(keys: int, max_batch: int, seed: int) -> None:
    """The property of the 2,000-key test on up to 200 keys (trees of height up to 5),
    where hypothesis can try many sizes and batchings and shrink a failure to a small
    one: invariants after every commit, the content equal to the dict."""
    harness, model, _ = _fill_then_delete_half(keys, max_batch, random.Random(seed))
    tree = harness.reread()
    assert tree.scan() == sorted(model.items())
    for key in (_key(0), _key(keys // 2), _key(keys - 1), _key(keys)):
        assert tree.get(key) == model.get(key)


def _buffer_bytes(tree: Tree) -> int:
    return sum(message_size(m) for m in tree.root.buffer)


def test_one_key_with_room_in_the_root_writes_only_the_root() -> None:
    config = TreeConfig(order=4, buffer_capacity_bytes=2_000)
    harness = TreeHarness(config)
    for start in range(0, 300, 20):
        harness.commit([(_key(i), "v") for i in range(start, start + 20)])
    assert harness.reread().height() >= 3
    message = ("k000000x", "one more")
    room_needed = 16 + len("".join(message)) + 3
    while _buffer_bytes(harness.tree) + room_needed > config.buffer_capacity_bytes:
        harness.commit([(_key(len(harness.tree.root.buffer)), "filler")])
    before = harness.storage.counters.snapshot()
    files = harness.commit([message])
    delta = harness.storage.counters - before
    assert files == {}
    assert delta.writes == 1  # the new root, nothing else
    assert harness.reread().get("k000000x") == "one more"


def _nodes_with_ranges(tree: Tree) -> list[tuple[str, str | None, str | None]]:
    """(path, low, high) of every non-root node: the open key range it covers."""
    out: list[tuple[str, str | None, str | None]] = []

    def visit(node, low, high) -> None:  # type: ignore[no-untyped-def]
        for i, child in enumerate(node.children):
            child_low = node.keys[i - 1] if i > 0 else low
            child_high = node.keys[i] if i < len(node.keys) else high
            out.append((child, child_low, child_high))
            visit(tree.store.load(child), child_low, child_high)

    visit(tree.root, None, None)
    return out


def test_a_flush_rewrites_only_the_nodes_on_the_flushed_paths() -> None:
    config = TreeConfig(order=6, buffer_capacity_bytes=500)
    harness = TreeHarness(config)
    rng = random.Random(3)
    for start in range(0, 3_000, 150):
        harness.commit([(_key(i), "v") for i in range(start, start + 150)])
    assert harness.reread().height() >= 4
    flushes_before = harness.stats["flush"]
    while harness.stats["flush"] == flushes_before:
        old = harness.reread()
        splits_before = harness.stats["split"]
        files = harness.commit([(_key(rng.randrange(3_000)) + "n", "new")])
    splits = harness.stats["split"] - splits_before
    new = harness.reread()
    remaining = {(m.key, m.value, m.txn) for m in new.root.buffer}
    flushed = {m.key for m in old.root.buffer if (m.key, m.value, m.txn) not in remaining}
    assert flushed, "the commit flushed nothing out of the root"
    new_nodes = set(new.node_paths())
    on_path = 0
    old_nodes = _nodes_with_ranges(old)
    for path, low, high in old_nodes:
        if any((low is None or k > low) and (high is None or k < high) for k in flushed):
            on_path += 1
        else:
            assert path in new_nodes, f"{path} holds no flushed key but was rewritten"
    rewritten = set(old.node_paths()) - new_nodes
    assert set(files) == new_nodes - set(old.node_paths())
    # Inserts only: every new file replaces a node on a flushed path, or is the extra half
    # of a split.
    assert len(files) == len(rewritten) + splits
    assert 1 <= len(rewritten) <= on_path
    print(f"\nflush of {len(flushed)} keys: {len(files)} new files ({splits} from splits); "
          f"{on_path} of {len(old_nodes)} nodes lie on the flushed paths")


@pytest.mark.slow  # a 100,000-key tree (~2.6 s of CPU): the full run only
def test_lookup_in_100k_keys_reads_at_most_height_files_cold_and_none_warm() -> None:
    config = TreeConfig(order=128, buffer_capacity_bytes=1_048_576 - 128 * 404)
    harness = TreeHarness(config)
    for start in range(0, 100_000, 10_000):
        harness.commit([(_key(i), f"table-def-{i}.binpb") for i in range(start, start + 10_000)])
    height = harness.reread().height()
    store = NodeStore(harness.storage, config.order)
    path = root_node_path(harness.version)
    before = harness.storage.counters.snapshot()
    root = store.load(path)
    tree = Tree(store, root, config)
    assert tree.get(_key(77_777)) == "table-def-77777.binpb"
    cold = harness.storage.counters - before
    assert 1 <= cold.reads <= height
    before = harness.storage.counters.snapshot()
    assert tree.get(_key(77_777)) == "table-def-77777.binpb"
    assert tree.get(_key(77_778)) == "table-def-77778.binpb"
    assert (harness.storage.counters - before).reads == 0
    print(f"\n100,000 keys, order 128: height {height}, cold lookup read {cold.reads} files")


def test_written_node_files_follow_the_layout_when_read_alone() -> None:
    harness = TreeHarness(TreeConfig(order=5, buffer_capacity_bytes=150))
    rng = random.Random(7)
    for _ in range(40):
        harness.commit([(_key(rng.randrange(500)), rng.choice([None, "x"])) for _ in range(30)])
    for path in harness.storage.list():
        node = decode_node_file(harness.storage.read(path), path, order=5)
        assert node.system["n_keys"] == str(len(node.keys))
        assert int(node.system["created_at_millis"]) > 0
        assert all(m.txn is not None for m in node.buffer)
        assert len(node.keys) <= 4
