"""Markdown tables from a results dict (the same dict is written as JSON)."""

from __future__ import annotations

from .timing import REQUEST_LATENCY_S, median

PEER = "pyiceberg"
SIDE_LABELS = {
    "trinitylake-dbapi": "TrinityLake DB-API (SQL)",
    "trinitylake": "TrinityLake catalog API",
    "pyiceberg": "PyIceberg SqlCatalog",
}

#: Issue 8 targets: workload label prefix -> minimum speedup over the peer.
TARGETS = {
    "create table": 3.0,
    "describe": 5.0,
    "list tables of a namespace of 1,000": 10.0,
    "table exists": 5.0,
    "drop table": 3.0,
}


def _target(label: str) -> float | None:
    for prefix, value in TARGETS.items():
        if label.startswith(prefix):
            return value
    return None


def _rate(seconds: float, ops: int) -> str:
    if not ops or seconds <= 0:
        return "-"
    per_op_ms = 1000 * seconds / ops
    rate = ops / seconds
    if per_op_ms >= 10:
        return f"{rate:,.1f}/s ({per_op_ms:,.1f} ms)"
    return f"{rate:,.0f}/s ({per_op_ms:.2f} ms)"


def _speedup(entry: dict, side: str) -> float | None:
    if side not in entry["sides"] or PEER not in entry["sides"]:
        return None
    a, b = entry["sides"][side]["seconds"], entry["sides"][PEER]["seconds"]
    ratios = [y / x for x, y in zip(a, b) if x > 0]
    return median(ratios) if ratios else None


def side_by_side(results: dict) -> str:
    """One row per workload: each side's median rate, and speedups vs the peer."""
    if not results:
        return ""
    ours = [s for s in SIDE_LABELS if s != PEER and any(s in e["sides"] for e in results.values())]
    header = ["workload", *(SIDE_LABELS[s] for s in ours), SIDE_LABELS[PEER],
              *(f"speedup ({'SQL' if s.endswith('dbapi') else 'API'})" for s in ours), "target"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, entry in results.items():
        ops = entry["ops"]
        cells = [label]
        for s in [*ours, PEER]:
            side = entry["sides"].get(s)
            cells.append(_rate(side["median_seconds"], ops) if side else "-")
        target = _target(label)
        for s in ours:
            value = _speedup(entry, s)
            if value is None:
                cells.append("-")
            else:
                mark = "" if target is None else (" ✓" if value >= target else " ✗")
                cells.append(f"{value:.2f}x{mark}")
        cells.append(f">= {target:g}x" if target else "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def storage_calls(results: dict) -> str:
    """Storage calls per operation of our sides, and the object-storage projection."""
    header = ["workload", "side", "requests/op", "reads", "writes", "creates", "exists", "lists",
              "KB read", "KB written", "cache hits", f"projected on S3 ({REQUEST_LATENCY_S * 1000:.0f} ms/req, 100 MB/s)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, entry in results.items():
        for name, side in entry["sides"].items():
            c = side.get("calls")
            if not c:
                continue
            lines.append("| " + " | ".join([
                label, name, f"{c['requests']:.2f}", f"{c['reads']:.2f}", f"{c['writes']:.2f}",
                f"{c['exclusive_creates']:.2f}", f"{c['exists']:.2f}", f"{c['lists']:.2f}",
                f"{c['bytes_read'] / 1024:.1f}", f"{c['bytes_written'] / 1024:.1f}",
                f"{c['cache_hits']:.2f}", f"{c['projected_ms']:.0f} ms",
            ]) + " |")
    return "\n".join(lines)


def cold_start(summary: dict) -> str:
    header = ["side", "wall (spawn to exit)", "import", "open", "first describe", "heavy modules loaded"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, s in summary.items():
        if name == "python":
            continue
        lines.append("| " + " | ".join([
            SIDE_LABELS.get(name, name), f"{s['wall_s']:.3f} s", f"{s['import_s']:.3f} s",
            f"{s['open_s']:.3f} s", f"{s['describe_s'] * 1000:.1f} ms", ", ".join(s["heavy"]) or "none",
        ]) + " |")
    if "python" in summary:
        lines.append(f"| bare `python -c pass` | {summary['python']['wall_s']:.3f} s | | | | |")
    return "\n".join(lines)


def concurrency(summary: dict) -> str:
    header = ["writers", "commits/s (aggregate)", "vs 1 writer (per rep, median)", "retries/commit", "failures"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    one = summary.get(1) or summary.get("1")
    for writers, s in summary.items():
        ratio = ""
        if one:
            per_rep = [r["commits_per_s"] / o["commits_per_s"] for r, o in zip(s["runs"], one["runs"])]
            ratio = f"{median(per_rep):.2f}"
        lines.append(f"| {writers} | {s['commits_per_s']:.0f} | {ratio} | "
                     f"{s['retries_per_commit']:.2f} | {s['failures']} |")
    return "\n".join(lines)


def data(summary: dict) -> str:
    header = ["operation", "TrinityLake", "PyIceberg SqlCatalog", "speedup", "SqlCatalog + same fsyncs", "speedup"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for op, s in summary["operations"].items():
        seconds, speedup = s["median_seconds"], s["speedup"]
        label = f"append {summary['rows']:,} rows" if op == "append" else "load_table"
        lines.append(
            f"| {label} | {seconds['trinitylake'] * 1000:.1f} ms | {seconds['pyiceberg'] * 1000:.1f} ms | "
            f"{speedup['pyiceberg']:.2f}x | {seconds['pyiceberg-fsync'] * 1000:.1f} ms | "
            f"{speedup['pyiceberg-fsync']:.2f}x |"
        )
    return "\n".join(lines)


def queries(summary: dict) -> str:
    header = ["workload", "TrinityLake DB-API", "peer", "peer time", "DB-API / peer"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    labels = {"duckdb": "DuckDB read_parquet (files known)", "pyiceberg+duckdb": "PyIceberg plan_files + DuckDB",
              "pyiceberg": "PyIceberg SqlCatalog append", "pyiceberg-fsync": "SqlCatalog append + same fsyncs"}
    for workload, title in (("aggregate", f"GROUP BY, count/sum over {summary['aggregate']['rows']:,} rows"),
                            ("insert", f"INSERT {summary['insert']['rows']:,} rows, one commit")):
        s = summary[workload]
        ours = s["median_seconds"]["trinitylake-dbapi"]
        for peer, ratio in s["ratio"].items():
            lines.append(f"| {title} | {ours * 1000:.1f} ms | {labels.get(peer, peer)} | "
                         f"{s['median_seconds'][peer] * 1000:.1f} ms | {ratio:.2f}x |")
    return "\n".join(lines)


SPARK_PEERS = {
    "pyarrow": "pyarrow `write_table` / `read_table`, no Spark",
    "spark-parquet": "Spark `df.write.parquet` / `read.parquet`",
    "python-datasource": "Python data source, pyarrow Parquet only",
}


def spark(summary: dict) -> str:
    """Write and read through Spark: ours, each peer, and ours / peer per repetition."""
    if "skipped" in summary:
        return f"Skipped: {summary['skipped']}."
    rows = f"{summary['rows']:,} rows"
    header = ["operation", "TrinityLake (Spark data source)", "peer", "peer time", "TrinityLake / peer"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    seconds = summary["median_seconds"]
    for op, title in (("write", f"write {rows}, one commit"), ("read", f"read {rows}, aggregate over every column")):
        for peer, label in SPARK_PEERS.items():
            lines.append(f"| {title} | {seconds['trinitylake'][op]:.2f} s | {label} | "
                         f"{seconds[peer][op]:.2f} s | {summary['ratio'][peer][op]:.2f}x |")
    files = summary["data_files"]
    cold = summary["cold_seconds"]
    start = summary["session_start_s"]
    warm = summary["warm_up_seconds"].get("trinitylake")
    notes = [
        "",
        (f"Session start {start:.1f} s; " if start is not None else "")
        + f"first write of the session {cold['write']:.1f} s and first read {cold['read']:.1f} s "
        "(Python workers start and import), then "
        + (f"one warm-up write and read per side (ours: {warm['write']:.1f} s / {warm['read']:.1f} s). "
           if warm else "no warm-up round. ")
        + f"{summary['partitions']} partitions; JVM options `{summary['jvm_options']}`; codec {summary['codec']}.",
        "",
        "Data files of one write: " + ", ".join(
            f"{side} {f['files']} file{'s' if f['files'] != 1 else ''}, {f['bytes'] / 2**20:.1f} MiB"
            for side, f in files.items()) + ".",
    ]  # fmt: skip
    return "\n".join(lines + notes)


def scale(points: list[dict]) -> str:
    header = ["tables", "load (bulk)", "height", "nodes", "tree MB", "root KB", "files", "disk MB",
              "describe cold (new catalog)", "describe warm", "describe hot", "list namespace",
              "commit (1 table)", "commit requests", "first commit after the load"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for p in points:
        lines.append("| " + " | ".join([
            f"{p['tables']:,}", f"{p['load_s']:.1f} s ({p['tables_per_s']:,.0f}/s)", str(p["height"]),
            f"{p['nodes']:,}", f"{p['node_bytes'] / 2**20:.1f}", f"{p['root_bytes'] / 1024:.0f}",
            f"{p['files_on_disk']:,}", f"{p['disk_bytes'] / 2**20:,.0f}",
            f"{p['describe_cold_ms']:.2f} ms ({p['describe_cold_requests']:.0f} req)",
            f"{p['describe_warm_ms']:.3f} ms ({p['describe_warm_calls']['requests']:.2f} req)",
            f"{p['describe_hot_ms']:.3f} ms",
            f"{p['list_namespace_ms']:.1f} ms ({p['list_namespace_tables']:,})",
            f"{p['commit_ms']:.2f} ms",
            f"{p['commit_requests']:.0f}",
            f"{p['first_commit_ms']:.0f} ms ({p['first_commit_requests']:.0f} req)",
        ]) + " |")
    return "\n".join(lines)


def render(results: dict) -> str:
    parts = [f"# Benchmark results ({results['mode']}, {results['host']['when']})", "",
             f"Host: {results['host']['summary']}", ""]
    if results.get("suite"):
        parts += ["## Side by side (medians of "
                  f"{results['reps']}, speedup = PyIceberg time / TrinityLake time, per repetition, median)",
                  "", side_by_side(results["suite"]), ""]
        parts += ["## Storage calls per operation (TrinityLake)", "", storage_calls(results["suite"]), ""]
    if results.get("last_of_many"):
        parts += ["## Create table at size", "", side_by_side(results["last_of_many"]), "",
                  storage_calls(results["last_of_many"]), ""]
    if results.get("cold_start"):
        parts += ["## Cold start (new process, one describe)", "", cold_start(results["cold_start"]), ""]
    if results.get("concurrency"):
        parts += ["## Concurrent writers (distinct tables, one commit each)", "",
                  concurrency(results["concurrency"]), ""]
    if results.get("data"):
        parts += [f"## Tables with data (PyIceberg API, {results['data']['reps']} interleaved repetitions, "
                  "speedup = peer time / TrinityLake time, per repetition, median)", "",
                  data(results["data"]), ""]
    if results.get("queries"):
        parts += [f"## SQL over table data (DB-API, {results['queries']['reps']} interleaved repetitions, "
                  "ratio = DB-API time / peer time, per repetition, median)", "",
                  queries(results["queries"]), ""]
    if results.get("spark"):
        reps = results["spark"].get("reps")
        parts += [f"## Table data through Spark ({reps} interleaved repetitions, "
                  "ratio = TrinityLake time / peer time, per repetition, median)", "",
                  spark(results["spark"]), ""]
    if results.get("scale"):
        parts += ["## Scale (TrinityLake, bulk load)", "", scale(results["scale"]), ""]
    return "\n".join(parts)
