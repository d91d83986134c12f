"""Scale (issue 8, item 3): a lakehouse of N tables loaded through the bulk path (many
creates per transaction), then its shape and the latency of the everyday operations.

Namespaces hold ``per_namespace`` tables each (10,000 by default, so "list a namespace
of 10,000 tables" exists from N = 10,000 on)."""

from __future__ import annotations

import os
import random
import statistics
import time
from typing import Callable

from .timing import median, per_op_calls


def _names(total: int, per_namespace: int) -> list[tuple[str, str]]:
    return [(f"s{i // per_namespace:03d}", f"t{i % per_namespace:05d}") for i in range(total)]


def _dir_bytes(directory: str) -> tuple[int, int]:
    files = size = 0
    for dirpath, _dirs, names in os.walk(directory):
        for name in names:
            files += 1
            size += os.stat(os.path.join(dirpath, name)).st_size
    return files, size


def scale_point(directory: str, total: int, *, batch: int, per_namespace: int, describes: int,
                cold_describes: int, commits: int, log: Callable[[str], None]) -> dict:
    from trinitylake_dbapi.catalog import LakehouseCatalog

    from .sides import TrinityLakeCatalogSide, lake_uri

    side = TrinityLakeCatalogSide(directory)
    names = _names(total, per_namespace)
    namespaces = sorted({ns for ns, _ in names})
    rng = random.Random(total)
    order = names[:]
    rng.shuffle(order)  # random key order: the harder case for the tree
    by_ns: dict[str, list[str]] = {}

    start = time.perf_counter()
    txn = side.catalog.begin()
    for ns in namespaces:
        txn.create_namespace(ns)
    txn.commit()
    last_report = start
    for i in range(0, total, batch):
        txn = side.catalog.begin()
        for ns, table in order[i : i + batch]:
            txn.create_table(ns, table, side.columns)
        txn.commit()
        now = time.perf_counter()
        if now - last_report > 30:
            log(f"    {min(total, i + batch):,} of {total:,} tables, {now - start:.0f} s")
            last_report = now
    load_s = time.perf_counter() - start
    for ns, table in names:
        by_ns.setdefault(ns, []).append(table)

    snapshot = side.catalog.lakehouse.snapshot()
    tree = snapshot.tree
    node_count = node_bytes = 0
    height = tree.height()
    for path in tree.node_paths():
        node_count += 1
        node_bytes += os.path.getsize(os.path.join(directory, path))
    root_bytes = os.path.getsize(os.path.join(directory, _root_path(snapshot.version)))
    files, disk_bytes = _dir_bytes(directory)
    side.close()

    # Commit cost at this size: single-table creates, one commit each. The first one
    # after a bulk load flushes that load's messages out of the root (SPEC 6).
    from trinitylake_dbapi.format.types import ColumnSpec, parse_type

    from .sides import COLUMNS

    columns = [ColumnSpec(n, parse_type(t, column=n)) for n, t in COLUMNS]
    uri = lake_uri(directory)
    catalog = LakehouseCatalog(uri)
    commit_times, commit_requests = [], []
    for i in range(commits):
        ns = rng.choice(namespaces)
        before = catalog.storage.counters.snapshot()
        t0 = time.perf_counter()
        txn = catalog.begin()
        txn.create_table(ns, f"extra{i:05d}", columns)
        txn.commit()
        by_ns[ns].append(f"extra{i:05d}")
        commit_times.append(time.perf_counter() - t0)
        commit_requests.append(per_op_calls(_fields(catalog.storage.counters - before), 1))
    catalog.close()
    # Describe, cold: a new catalog object (empty caches) per describe, in this process.
    samples = [rng.choice(names) for _ in range(cold_describes)]
    cold, cold_calls = [], []
    for ns, table in samples:
        t0 = time.perf_counter()
        catalog = LakehouseCatalog(uri)
        catalog.begin().describe_table(ns, table)
        cold.append(time.perf_counter() - t0)
        cold_calls.append(catalog.storage.counters.snapshot())
        catalog.close()
    # Describe, warm: one catalog whose node cache a first pass over other tables warmed;
    # each measured table is described for the first time (its definition is read).
    # Hot: the same tables again (everything cached).
    catalog = LakehouseCatalog(uri)
    shuffled = names[:]
    rng.shuffle(shuffled)
    half = len(shuffled) // 2
    for ns, table in shuffled[: min(describes, half)]:
        catalog.begin().describe_table(ns, table)
    samples = shuffled[half : half + describes]  # never described by this catalog
    before = catalog.storage.counters.snapshot()
    warm = []
    for ns, table in samples:
        t0 = time.perf_counter()
        catalog.begin().describe_table(ns, table)
        warm.append(time.perf_counter() - t0)
    warm_calls = per_op_calls(_fields(catalog.storage.counters - before), len(samples))
    hot = []
    for ns, table in samples:
        t0 = time.perf_counter()
        catalog.begin().describe_table(ns, table)
        hot.append(time.perf_counter() - t0)
    # Listing the biggest namespace, warm.
    big_ns = namespaces[0]
    listing = []
    for _ in range(5):
        t0 = time.perf_counter()
        found = catalog.begin().list_tables(big_ns)
        listing.append(time.perf_counter() - t0)
    assert len(found) == len(by_ns[big_ns]), (len(found), len(by_ns[big_ns]))
    catalog.close()
    cold_per_op = [per_op_calls(_fields(c), 1) for c in cold_calls]
    return {
        "tables": total,
        "batch": batch,
        "load_s": load_s,
        "tables_per_s": total / load_s,
        "height": height,
        "nodes": node_count,
        "node_bytes": node_bytes,
        "root_bytes": root_bytes,
        "files_on_disk": files,
        "disk_bytes": disk_bytes,
        "describe_cold_ms": 1000 * median(cold),
        "describe_cold_requests": median(c["requests"] for c in cold_per_op),
        "describe_warm_ms": 1000 * median(warm),
        "describe_warm_p90_ms": 1000 * statistics.quantiles(warm, n=10)[-1] if len(warm) >= 10 else None,
        "describe_warm_calls": warm_calls,
        "describe_hot_ms": 1000 * median(hot),
        "list_namespace_tables": len(by_ns[big_ns]),
        "list_namespace_ms": 1000 * median(listing),
        "first_commit_ms": 1000 * commit_times[0],
        "first_commit_requests": commit_requests[0]["requests"],
        "commit_ms": 1000 * median(commit_times[1:] or commit_times),
        "commit_requests": median(c["requests"] for c in (commit_requests[1:] or commit_requests)),
        "commit_calls": commit_requests[len(commit_requests) // 2],
    }


def _root_path(version: int) -> str:
    from trinitylake_dbapi.format.paths import root_node_path

    return root_node_path(version)


def _fields(counters) -> dict:  # type: ignore[no-untyped-def]
    import dataclasses

    return dataclasses.asdict(counters)


def scale(workdir: str, points: list[int], *, batch: int, per_namespace: int, describes: int,
          cold_describes: int, commits: int, log: Callable[[str], None]) -> list[dict]:
    out = []
    for total in points:
        log(f"  scale: loading {total:,} tables ({batch:,} per transaction)")
        result = scale_point(os.path.join(workdir, f"scale-{total}"), total, batch=min(batch, total),
                             per_namespace=per_namespace, describes=describes,
                             cold_describes=cold_describes, commits=commits, log=log)
        log(f"  scale {total:,}: load {result['load_s']:.1f} s, height {result['height']}, "
            f"{result['nodes']} nodes, describe cold {result['describe_cold_ms']:.2f} ms / warm "
            f"{result['describe_warm_ms']:.3f} ms, commit {result['commit_ms']:.2f} ms")
        out.append(result)
    return out
