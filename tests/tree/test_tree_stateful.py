"""Model-based test: the tree against a plain dict, with constant flushes, splits, borrows
and merges (tiny nodes, orders 3 to 6).

CI runs a bounded number of examples; TL_SOAK=<examples> runs a long soak.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from trinitylake_dbapi.tree import TreeConfig
from tree_harness import TreeHarness

SOAK = int(os.environ.get("TL_SOAK", "0"))

keys = st.text(alphabet="abcdefg", min_size=1, max_size=3)
values = st.text(alphabet="xyz0123", min_size=1, max_size=4)
operation = st.tuples(keys, st.one_of(st.none(), values))


class TreeMatchesDict(RuleBasedStateMachine):
    @initialize(
        order=st.integers(min_value=3, max_value=6),
        capacity_messages=st.integers(min_value=1, max_value=6),
    )
    def start(self, order: int, capacity_messages: int) -> None:
        # A message here is about 16 + 3 + 4 + 3 bytes: capacities of 1-6 messages.
        self.harness = TreeHarness(TreeConfig(order, 30 * capacity_messages))
        self.model: dict[str, str] = {}

    @rule(batch=st.lists(operation, min_size=1, max_size=25))
    def commit(self, batch: list[tuple[str, str | None]]) -> None:
        self.harness.commit(batch)
        for key, value in batch:
            if value is None:
                self.model.pop(key, None)
            else:
                self.model[key] = value

    @rule(delete_fraction=st.floats(min_value=0.3, max_value=1.0))
    def delete_many(self, delete_fraction: float) -> None:
        doomed = sorted(self.model)[: int(len(self.model) * delete_fraction)]
        if doomed:
            self.harness.commit([(key, None) for key in doomed])
            for key in doomed:
                del self.model[key]

    @rule(lo=st.one_of(st.none(), keys), hi=st.one_of(st.none(), keys))
    def scan_matches(self, lo: str | None, hi: str | None) -> None:
        tree = self.harness.reread()
        expected = sorted(
            (k, v)
            for k, v in self.model.items()
            if (lo is None or k >= lo) and (hi is None or k < hi)
        )
        assert tree.scan(lo, hi) == expected

    @invariant()
    def matches_model(self) -> None:
        if not hasattr(self, "harness"):
            return
        tree = self.harness.reread()
        assert tree.scan() == sorted(self.model.items())
        for key in list(self.model)[:40]:
            assert tree.get(key) == self.model[key]
        for missing in ("a" * 4, "zz", "g" * 3 + "a"):
            assert tree.get(missing) == self.model.get(missing)
        assert self.harness.problems(tree) == []

    def teardown(self) -> None:
        if hasattr(self, "harness"):
            for operation_kind in sorted(self.harness.stats):
                event(operation_kind)


TreeMatchesDict.TestCase.settings = settings(
    max_examples=SOAK or 60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_tree_matches_dict = TreeMatchesDict.TestCase
