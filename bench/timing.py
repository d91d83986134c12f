"""Interleaved timing: the host's speed drifts about 2x over minutes (docs/performance.md),
so the systems compared run in alternating chunks (ABBA order) and only ratios measured
side by side, and medians over repetitions, are reported."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Iterable, Sequence

from .sides import Side

#: Object storage model of issue 8: a fixed latency per request plus transfer time.
REQUEST_LATENCY_S = 0.020
BANDWIDTH_BYTES_S = 100e6

REQUEST_KINDS = ("reads", "writes", "exclusive_creates", "exists", "lists", "deletes")


def chunked(items: Sequence[Any], chunks: int) -> list[Sequence[Any]]:
    chunks = max(1, min(chunks, len(items)))
    size, extra = divmod(len(items), chunks)
    out, start = [], 0
    for i in range(chunks):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return [c for c in out if len(c)]


def interleave(
    sides: dict[str, Side],
    items: Sequence[Any],
    op: Callable[[Side, Any], Any],
    *,
    chunks: int = 10,
    rep: int = 0,
) -> dict[str, dict[str, Any]]:
    """Run ``op(side, item)`` for every item on every side, alternating sides per chunk.

    Returns per side: ``seconds`` (sum over its chunks; a ``self_timed`` side's own
    measurements) and ``calls`` (storage counter deltas summed, for sides that count).
    """
    names = list(sides)
    out: dict[str, dict[str, Any]] = {n: {"seconds": 0.0, "calls": None} for n in names}
    for index, chunk in enumerate(chunked(items, chunks)):
        order = names if (index + rep) % 2 == 0 else names[::-1]
        for name in order:
            side = sides[name]
            before = side.counters() if side.has_counters else None
            start = time.perf_counter()
            for item in chunk:
                op(side, item)
            elapsed = time.perf_counter() - start
            out[name]["seconds"] += side.take_seconds() if side.self_timed else elapsed
            if before is not None:
                delta = side.counters() - before
                out[name]["calls"] = _add(out[name]["calls"], delta)
    for name in names:
        calls = out[name]["calls"]
        if calls is not None:
            out[name]["calls"] = {
                k: getattr(calls, k) for k in (*REQUEST_KINDS, "bytes_read", "bytes_written", "cache_hits")
            }
    return out


def _add(total: Any, delta: Any) -> Any:
    if total is None:
        return delta
    import dataclasses

    return type(total)(**{f.name: getattr(total, f.name) + getattr(delta, f.name) for f in dataclasses.fields(total)})


def median(values: Iterable[float]) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


def per_op_calls(calls: dict[str, int] | None, ops: int) -> dict[str, float] | None:
    if calls is None or ops == 0:
        return None
    out = {k: v / ops for k, v in calls.items()}
    out["requests"] = sum(out[k] for k in REQUEST_KINDS)
    out["projected_ms"] = 1000 * (
        out["requests"] * REQUEST_LATENCY_S
        + (out["bytes_read"] + out["bytes_written"]) / BANDWIDTH_BYTES_S
    )
    return out
