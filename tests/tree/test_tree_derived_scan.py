"""Range scans that derive from keys (``Tree.scan(lo, hi, derive)``) and the node cache.

Derived results of whole subtrees are cached with the nodes; node files are immutable,
so the cache must stay right across versions that share nodes. A model-based test runs
the tree against a dict through one NodeStore kept across all versions, with a tiny
byte budget so entries and their derived results are evicted all the time.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from trinitylake_dbapi.format.nodefile import Message, NodeFile
from trinitylake_dbapi.tree import CachedNode as _CachedNode
from trinitylake_dbapi.tree import NodeStore, Tree, TreeConfig
from tree_harness import TreeHarness

keys = st.text(alphabet="abcdefg", min_size=1, max_size=3)
values = st.text(alphabet="xyz0123", min_size=1, max_size=4)
operation = st.tuples(keys, st.one_of(st.none(), values))


@dataclass(frozen=True)
class Upper:
    """A strictly increasing derive (on this alphabet); refuses keys containing ``refuse``."""

    refuse: str | None = None

    def __call__(self, batch):
        if self.refuse is not None and any(self.refuse in key for key in batch):
            return None
        return [key.upper() for key in batch]


def _store_is_consistent(store: NodeStore) -> None:
    with store._lock:
        entries = list(store._cache.values())
        assert store._cached_bytes == sum(entry.cost for entry in entries)
        assert len(entries) <= 1 or store._cached_bytes <= store._cache_bytes
        assert len(entries) <= store._cache_nodes


class DerivedScansMatchDict(RuleBasedStateMachine):
    @initialize(
        order=st.integers(min_value=3, max_value=6),
        capacity_messages=st.integers(min_value=1, max_value=6),
        budget=st.sampled_from([3_000, 20_000, 10**9]),
    )
    def start(self, order: int, capacity_messages: int, budget: int) -> None:
        self.harness = TreeHarness(TreeConfig(order, 30 * capacity_messages))
        self.harness.store = NodeStore(self.harness.storage, order, cache_bytes=budget)
        self.harness.tree = Tree(self.harness.store, self.harness.tree.root, self.harness.config)
        self.model: dict[str, str] = {}
        self.written: set[str] = set()
        self.old_trees: list[tuple[Tree, dict[str, str]]] = []

    @rule(batch=st.lists(operation, min_size=1, max_size=25))
    def commit(self, batch: list[tuple[str, str | None]]) -> None:
        self.old_trees = (self.old_trees + [(self.harness.tree, dict(self.model))])[-3:]
        self.harness.commit(batch)
        for key, value in batch:
            self.written.add(key)
            if value is None:
                self.model.pop(key, None)
            else:
                self.model[key] = value

    def _check(self, tree: Tree, model: dict[str, str], lo, hi, refuse) -> None:
        def inside(key: str) -> bool:
            return (lo is None or key >= lo) and (hi is None or key < hi)

        expected = sorted(key.upper() for key in model if inside(key))
        found = tree.scan(lo, hi, Upper(refuse))
        if found is None:
            assert refuse is not None and any(refuse in k for k in self.written if inside(k))
        else:
            assert found == expected
            if refuse is not None:
                assert not any(refuse in k for k in model if inside(k))

    @rule(lo=st.one_of(st.none(), keys), hi=st.one_of(st.none(), keys),
          refuse=st.one_of(st.none(), st.sampled_from(["a", "gg", "c"])))
    def derived_scan_matches(self, lo, hi, refuse) -> None:
        self._check(self.harness.tree, self.model, lo, hi, refuse)
        self._check(self.harness.tree, self.model, lo, hi, refuse)  # now from the cache
        for tree, model in self.old_trees:  # older versions share nodes and caches
            self._check(tree, model, lo, hi, refuse)
        _store_is_consistent(self.harness.store)

    @invariant()
    def pairs_and_gets_still_match(self) -> None:
        if not hasattr(self, "harness"):
            return
        tree = self.harness.tree
        assert tree.scan() == sorted(self.model.items())
        assert tree.scan(None, None, Upper()) == sorted(key.upper() for key in self.model)
        for key in list(self.model)[:20]:
            assert tree.get(key) == self.model[key]
        _store_is_consistent(self.harness.store)


DerivedScansMatchDict.TestCase.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_derived_scans_match_dict = DerivedScansMatchDict.TestCase


def test_cached_node_indexes_the_newest_message_per_key() -> None:
    node = NodeFile(order=3, buffer=(Message("b", "1", "1"), Message("a", "2", "1"),
                                     Message("b", None, "2"), Message("c", "3", "2")))
    entry = _CachedNode(node)
    assert entry.latest == {"b": Message("b", None, "2"), "a": Message("a", "2", "1"),
                            "c": Message("c", "3", "2")}
    assert [m.key for m in entry.overrides("b", None)] == ["b", "c"]
    assert [m.key for m in entry.overrides(None, "c")] == ["a", "b"]
    assert entry.overrides("d", None) == []


def test_node_store_evicts_by_bytes() -> None:
    harness = TreeHarness(TreeConfig(4, 60))
    for i in range(30):
        harness.commit([(f"k{i:03d}{j}", "v" * 50) for j in range(5)])
    paths = list(harness.tree.node_paths())
    assert len(paths) > 10
    costs = [_CachedNode(harness.store.load(path)).cost for path in paths]
    budget = sum(costs) // 3
    store = NodeStore(harness.storage, 4, cache_bytes=budget)
    tree = Tree(store, harness.tree.root, harness.config)
    assert tree.scan() == harness.tree.scan()
    assert 1 < len(store._cache) < len(paths)
    _store_is_consistent(store)
    assert tree.scan(None, None, Upper()) == [k.upper() for k, _ in harness.tree.scan()]
    _store_is_consistent(store)
    counted = NodeStore(harness.storage, 4, cache_nodes=3)
    Tree(counted, harness.tree.root, harness.config).scan()
    assert len(counted._cache) == 3
    _store_is_consistent(counted)
