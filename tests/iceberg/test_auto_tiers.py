"""iceberg.compaction CP7: the automatic policy's tiered selection, simulated over many
commits with the real selection function (choose_tiered) and CP2's way of cutting a
merge into files: every row is rewritten at most log_F(rows) + 1 times, every tier
holds fewer than N unfinished files after each automatic step, and a finished or
larger-tier file is not rewritten because small ones arrived."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from trinitylake_dbapi.iceberg.compaction import FINISHED_RATIO, choose_tiered, tier_factor

BYTES_PER_ROW = 10
OVERHEAD = 1_000  # bytes of a Parquet file with no row
TARGET = 50_000_000

_ids = itertools.count()


@dataclass
class File:
    record_count: int
    rewrites: int = 0  # the most times any of its rows was rewritten
    file_size_in_bytes: int = 0
    spec_id: int = 0
    partition: tuple = ()
    path: int = field(default_factory=lambda: next(_ids))

    def __post_init__(self) -> None:
        self.file_size_in_bytes = OVERHEAD + self.record_count * BYTES_PER_ROW


@dataclass
class Task:
    file: File
    delete_files: tuple = ()


def tier(rows: int, factor: int) -> int:
    level = 0
    while rows >= factor ** (level + 1):
        level += 1
    return level


def merge(files: list[File]) -> list[File]:
    """CP2: the rows of ``files`` cut evenly into the fewest files within the target."""
    rows = sum(f.record_count for f in files)
    rewrites = max(f.rewrites for f in files) + 1
    pieces = max(1, math.ceil(rows * BYTES_PER_ROW / TARGET))
    per = math.ceil(rows / pieces)
    out, left = [], rows
    while left:
        out.append(File(min(per, left), rewrites))
        left -= out[-1].record_count
    return out


def unfinished_tiers(files: list[File], factor: int) -> dict[int, int]:
    counts: dict[int, int] = {}
    for f in files:
        if f.file_size_in_bytes < TARGET * FINISHED_RATIO:
            counts[tier(f.record_count, factor)] = counts.get(tier(f.record_count, factor), 0) + 1
    return counts


@settings(max_examples=60, deadline=None)
@given(
    min_files=st.sampled_from([2, 3, 4, 5, 8, 16, 32]),
    commits=st.lists(
        st.one_of(st.integers(1, 10), st.integers(1, 10_000), st.integers(1, 20_000_000)),
        min_size=1, max_size=400,
    ),
)
def test_rewrites_are_logarithmic_and_tiers_stay_below_n(min_files: int, commits: list[int]) -> None:
    factor = tier_factor(min_files)
    assert 2 <= factor <= min_files
    files: list[File] = []
    for rows in commits:
        files += merge([File(rows, -1)])  # a commit writes its rows (never rewritten yet)
        before = {f.path: f for f in files}
        chosen = [t.file for t in choose_tiered([Task(f) for f in files], TARGET, min_files)]
        tiers_before = unfinished_tiers(files, factor)
        for f in chosen:
            # never a finished file; and its tier (or one of the merged tiers below it) was full
            assert f.file_size_in_bytes < TARGET * FINISHED_RATIO
            assert f.path in before
        if chosen:
            lowest = min(tier(f.record_count, factor) for f in chosen)
            assert tiers_before[lowest] >= min_files
            chosen_paths = {f.path for f in chosen}
            files = [f for f in files if f.path not in chosen_paths] + merge(chosen)
        total = sum(f.record_count for f in files)
        assert all(f.rewrites <= math.log(total, factor) + 1 for f in files), (total, factor)
        assert all(n < min_files for n in unfinished_tiers(files, factor).values()), unfinished_tiers(files, factor)


def test_a_big_file_is_not_rewritten_because_small_ones_arrive() -> None:
    """The issue's case: a 1,000,000-row file and a stream of one-row files; the big
    file is never chosen, the small ones are merged every N."""
    big = File(1_000_000)
    files = [big]
    for _ in range(1_000):
        files.append(File(1))
        chosen = [t.file for t in choose_tiered([Task(f) for f in files], TARGET, 16)]
        assert big not in chosen
        if chosen:
            paths = {f.path for f in chosen}
            files = [f for f in files if f.path not in paths] + merge(chosen)
    assert len(files) < 1 + 4 * 16  # tiers 0-3 of F = 8 below 1,000 rows, each under N
    assert big in files
