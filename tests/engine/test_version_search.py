"""lakehouse.version_at_time (H1, H2): the version a timestamp names, against a plain
oracle (the newest kept version whose time is at or before it) over generated histories:
steady, bursty, with equal times, with long pauses and with an expired prefix; and the
number of roots it reads, which is what a FOR SYSTEM_TIME AS OF costs on a cold cache."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from trinitylake_dbapi.lakehouse import version_at_time


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[int], int]:
    """Non-decreasing creation times of versions 0..n-1 (H1) and how many of the first
    ones have expired (H2)."""
    n = draw(st.integers(min_value=2, max_value=3000))
    gaps = draw(st.sampled_from(["steady", "bursty", "any"]))
    if gaps == "steady":
        step = draw(st.integers(min_value=1, max_value=50))
        times = [1_000 + i * step + draw(st.integers(0, step)) // 2 for i in range(n)]
        times = sorted(times)
    else:
        increments = draw(
            st.lists(
                st.one_of(st.just(0), st.integers(0, 10), st.integers(0, 10**7))
                if gaps == "any"
                else st.sampled_from([0, 1, 1, 2, 86_400_000]),
                min_size=n, max_size=n,
            )
        )
        times, now = [], 1_000
        for increment in increments:
            now += increment
            times.append(now)
    expired = draw(st.integers(min_value=0, max_value=n - 1))
    return times, expired


def oracle(times: list[int], expired: int, newer: int, millis: int) -> int | None:
    kept = [v for v in range(expired, newer) if times[v] <= millis]
    return max(kept) if kept else None


@settings(max_examples=400, deadline=None)
@given(histories(), st.data())
def test_the_search_finds_what_the_oracle_finds_in_few_reads(
    history: tuple[list[int], int], data: st.DataObject
) -> None:
    times, expired = history
    latest = len(times) - 1
    # The caller asks only for times before the latest version's (else it is the answer).
    if times[latest] <= times[0]:
        return
    millis = data.draw(
        st.one_of(st.sampled_from(times[:latest]), st.integers(times[0] - 5, times[latest] - 1)),
        label="millis",
    )
    if millis >= times[latest]:
        return
    reads: list[int] = []

    def created_at(version: int) -> int | None:
        assert 0 <= version < latest, version
        reads.append(version)
        return None if version < expired else times[version]

    assert version_at_time(millis, latest, times[latest], created_at) == oracle(times, expired, latest, millis)
    assert len(reads) <= 2 * math.ceil(math.log2(latest + 1)) + 2, reads


def test_a_steady_history_costs_a_handful_of_reads() -> None:
    """50,000 versions committed at a steady rate, as bench/history.py builds them: a
    bisection reads ~16 roots, the interpolating search a few."""
    times = [1_700_000_000_000 + 7 * v + (v * 7919) % 5 for v in range(50_000)]
    times = sorted(times)
    worst = 0
    for millis in range(times[0], times[-1], 99_991):
        reads: list[int] = []

        def created_at(version: int) -> int | None:
            reads.append(version)
            return times[version]

        found = version_at_time(millis, len(times) - 1, times[-1], created_at)
        assert found == oracle(times, 0, len(times) - 1, millis)
        worst = max(worst, len(reads))
    assert worst <= 5
