"""How many examples a Hypothesis test runs in the lanes (tests/conftest.py): all it asks
for in the full run, a third under ``--quick``, 1/N under ``--examples-share N`` (the side
runs of scripts/test, which repeat the main run's properties on other versions of a
dependency), never fewer than QUICK_MIN_EXAMPLES nor more than it asks for."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from test_scheduling import conftest


def _test_asking_for(n: int):  # type: ignore[no-untyped-def]
    @settings(max_examples=n)
    @given(st.integers())
    def test(x: int) -> None:
        pass

    return test


def _items(*functions):  # type: ignore[no-untyped-def]
    # What quick_examples reads of a pytest item: the test function and its class.
    return [SimpleNamespace(obj=f, cls=None) for f in functions]


def _examples(function) -> int:  # type: ignore[no-untyped-def]
    return function._hypothesis_internal_use_settings.max_examples


def test_a_share_divides_each_tests_examples_down_to_the_minimum() -> None:
    many, few, fewest = _test_asking_for(300), _test_asking_for(40), _test_asking_for(5)
    conftest.quick_examples(_items(many, few, fewest, many), 5)  # a test listed twice: divided once
    assert _examples(many) == 60
    assert _examples(few) == conftest.QUICK_MIN_EXAMPLES  # 40 // 5 = 8, raised to the minimum
    assert _examples(fewest) == 5  # fewer than the minimum: kept


def test_the_quick_lanes_share_is_the_default() -> None:
    test = _test_asking_for(300)
    conftest.quick_examples(_items(test))
    assert _examples(test) == 300 // conftest.QUICK_EXAMPLES_SHARE
