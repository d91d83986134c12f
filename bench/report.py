"""Markdown tables from a results dict (the same dict is written as JSON)."""

from __future__ import annotations

from . import targets as target_rules
from .timing import REQUEST_LATENCY_S

PEER = "pyiceberg"
SIDE_LABELS = {
    "trinitylake-dbapi": "TrinityLake DB-API (SQL)",
    "trinitylake-dbapi-select": "TrinityLake DB-API, first SELECT over data",
    "trinitylake-command": "`trinitylake -c` command, DESCRIBE",
    "trinitylake-command-select": "`trinitylake -c` command, first SELECT over data",
    "trinitylake": "TrinityLake catalog API",
    "pyiceberg": "PyIceberg SqlCatalog",
    "ducklake": "DuckLake (DuckDB file)",
}

#: Issue 21's targets (bench/targets.py): label prefix -> minimum speedup of the SQL side.
TARGETS = target_rules.SUITE_TARGETS
DUCKLAKE_TARGETS = target_rules.DUCKLAKE_TARGETS
DUCKLAKE_DATA_TARGETS = target_rules.DUCKLAKE_DATA_TARGETS


def _rate(seconds: float, ops: int) -> str:
    if not ops or seconds <= 0:
        return "-"
    per_op_ms = 1000 * seconds / ops
    rate = ops / seconds
    if per_op_ms >= 10:
        return f"{rate:,.1f}/s ({per_op_ms:,.1f} ms)"
    return f"{rate:,.0f}/s ({per_op_ms:.2f} ms)"


def side_by_side(results: dict, peer: str = PEER, targets: dict[str, float] = TARGETS,
                 judged: str = target_rules.SUITE_SIDE) -> str:
    """One row per workload: each side's median rate and speedup vs the peer; only the
    ``judged`` side's speedup (SQL) is marked against ``targets``."""
    entries = list(target_rules.workloads(results))
    if not entries:
        return ""
    ours = [s for s in SIDE_LABELS if s != peer and any(s in e["sides"] for _, e in entries)]
    header = ["workload", *(SIDE_LABELS[s] for s in ours), SIDE_LABELS[peer],
              *(f"speedup ({'SQL' if s.endswith('dbapi') else 'API'})" for s in ours), "target (SQL)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, entry in entries:
        ops = entry["ops"]
        cells = [label]
        for s in [*ours, peer]:
            side = entry["sides"].get(s)
            cells.append(_rate(side["median_seconds"], ops) if side else "-")
        target = target_rules.target_for(label, targets)
        for s in ours:
            value = target_rules.speedup(entry, s, peer)
            if value is None:
                cells.append("-")
            else:
                cells.append(f"{value:.2f}x{_mark(value, target) if s == judged else ''}")
        cells.append(f">= {target:g}x" if target else "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def storage_calls(results: dict) -> str:
    """Storage calls per operation of our sides, and the object-storage projection."""
    header = ["workload", "side", "requests/op", "reads", "writes", "creates", "exists", "lists",
              "KB read", "KB written", "cache hits", f"projected on S3 ({REQUEST_LATENCY_S * 1000:.0f} ms/req, 100 MB/s)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, entry in target_rules.workloads(results):
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


def _verdict(s: dict) -> str:
    if "target_s" not in s:
        return ""
    return f"<= {s['target_s']:g} s: {'met' if s['met'] else 'MISSED'}"


def cold_start(summary: dict) -> str:
    header = ["side", "wall (spawn to exit)", "CPU (user+sys)", "import", "open", "first statement",
              "heavy modules loaded", "target"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, s in summary.items():
        if name in ("python", "load", "targets"):
            continue
        lines.append("| " + " | ".join([
            SIDE_LABELS.get(name, name), f"{s['wall_s']:.3f} s", f"{s.get('cpu_s', 0):.3f} s", f"{s['import_s']:.3f} s",
            "in the statement" if s["open_s"] is None else f"{s['open_s']:.3f} s",
            f"{s['describe_s'] * 1000:.1f} ms", ", ".join(s["heavy"]) or "none",
            _verdict(s),
        ]) + " |")
    if "python" in summary:
        lines.append(f"| bare `python -c pass` | {summary['python']['wall_s']:.3f} s | | | | | | |")
    if "load" in summary:
        load = summary["load"]
        lines += ["", f"Load average (1 min) while measuring: {load['min']:.1f}-{load['max']:.1f} "
                      f"on {load['cores']} cores."]
    return "\n".join(lines)


def concurrency(summary: dict) -> str:
    header = ["writers", "commits/s (aggregate)", "vs 1 writer (per rep, median)", "retries/commit", "failures"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for writers, s in summary.items():
        if writers == "targets":
            continue
        value = target_rules.commits_ratio(summary, writers)
        ratio = "" if value is None else f"{value:.2f}"
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
    insert = summary["insert"]
    if "multi_vs_executemany" in insert:  # one multi-row VALUES statement vs executemany
        multi = next(v for k, v in insert["median_seconds"].items() if k.endswith("multi-row"))
        lines.append(f"| INSERT {insert['rows']:,} rows as one multi-row VALUES (execute) | {multi * 1000:.1f} ms | "
                     f"DB-API executemany | {insert['median_seconds']['trinitylake-dbapi'] * 1000:.1f} ms | "
                     f"{insert['multi_vs_executemany']:.2f}x |")
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


def _mark(value: float, target: float | None, at_least: bool = True) -> str:
    if target is None:
        return ""
    return " ✓" if (value >= target if at_least else value <= target) else " ✗"


def ducklake(summary: dict) -> str:
    """The DuckLake section: catalog side by side, data workloads, fsyncs per commit."""
    if "skipped" in summary:
        return f"DuckLake not measured: {summary['skipped']}."
    parts = [f"Catalog workloads in a namespace of {summary['tables']:,} tables (ops/s, median; "
             "speedup = DuckLake time / ours, per repetition, median):", "",
             side_by_side(summary["catalog"], peer="ducklake", targets=DUCKLAKE_TARGETS), ""]  # fmt: skip
    d = summary["data"]
    header = ["workload", "TrinityLake DB-API", "DuckLake", "speedup", "target"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for op, s in d["operations"].items():
        target = target_rules.target_for(op, DUCKLAKE_DATA_TARGETS)
        lines.append(f"| {op} | {s['median_seconds']['trinitylake-dbapi'] * 1000:.1f} ms | "
                     f"{s['median_seconds']['ducklake'] * 1000:.1f} ms | {s['speedup']:.2f}x{_mark(s['speedup'], target)} | "
                     + (f">= {target:g}x |" if target else "|"))  # fmt: skip
    travel = d["time_travel_vs_latest"]
    parts += [f"Data workloads ({d['reps']} interleaved repetitions, medians):", "", "\n".join(lines), "",
              "Time-travel read / latest read (per repetition, median): TrinityLake "
              f"{travel['trinitylake-dbapi']:.2f}{_mark(travel['trinitylake-dbapi'], 1.2, at_least=False)} "
              f"(target <= 1.2), DuckLake {travel['ducklake']:.2f}.", ""]  # fmt: skip
    dur = summary["durability"]
    if "skipped" in dur:
        parts.append(f"Fsyncs per commit not counted: {dur['skipped']}.")
    else:
        header = ["side", "fsyncs per CREATE TABLE", f"per INSERT of {dur['rows']:,} rows", "per DROP TABLE",
                  "O_SYNC/O_DSYNC opens per commit"]  # fmt: skip
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for side, counts in dur["engines"].items():
            opens = sum(c.get("sync_opens", 0) for c in counts.values())
            lines.append(f"| {SIDE_LABELS.get(side, side)} | " + " | ".join(
                f"{counts[k].get('syncs', 0):.2f}" for k in ("create", "insert", "drop")) + f" | {opens:.2f} |")
        parts += [f"Fsyncs per commit (strace -f, {dur['commits']} commits of each kind):", "", "\n".join(lines)]
    return "\n".join(parts)


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:,.0f} us" if seconds < 0.01 else f"{seconds * 1000:,.1f} ms"


def parsing(summary: dict) -> str:
    """sqlglot vs sqlglotc: each kind of work per statement, cold start, the verdict."""
    if "skipped" in summary and "work" not in summary:
        return f"Not measured: {summary['skipped']}."
    sides = list(summary["sqlglot"])
    builds = ", ".join(f"{s}: sqlglot {b['version']}{' compiled' if b['compiled'] else ''}"
                       for s, b in summary["sqlglot"].items())  # fmt: skip
    parts = [f"{builds}; {summary['iterations']} statements of each kind per round, {summary['reps']} interleaved "
             "rounds, medians per statement; ratio = sqlglot time / sqlglotc time, per round, median.", ""]  # fmt: skip
    from .parsing import KINDS, STATEMENTS

    header = ["work", "statement", *sides, *(["ratio", "ratio of CPU time"] if len(sides) == 2 else [])]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for kind, label in KINDS.items():
        for name in STATEMENTS:
            entry = summary["work"][kind][name]
            cells = [label, name]
            for side in sides:
                error = summary["errors"][side].get(kind)
                cells.append(_us(entry[side]) if entry[side] is not None else "fails" if error else "-")
            if len(sides) == 2:
                cells += [f"{entry[key]:.2f}x" if key in entry else "-" for key in ("ratio", "cpu_ratio")]
            lines.append("| " + " | ".join(cells) + " |")
    parts += ["\n".join(lines), ""]
    for side, errors in summary["errors"].items():
        for kind, error in errors.items():
            parts.append(f"- {side}, {KINDS[kind]}: {error}")
    cold = summary["cold_start"]
    lines = ["| new process | " + " | ".join(sides) + (" | ratio | CPU ratio | import ratio |" if len(sides) == 2
                                                       else " |"),
             "|" + "---|" * (len(sides) + 1 + 3 * (len(sides) == 2))]  # fmt: skip
    for kind, entry in cold.items():
        cells = [kind]
        for side in sides:
            e = entry[side]
            text = f"{e['wall_s']:.3f} s (CPU {e['cpu_s']:.3f} s, import {e['import_s']:.3f} s)"
            cells.append(text + (" fails" if e["error"] else ""))
        if len(sides) == 2:
            cells += [f"{entry[key]:.2f}x" if key in entry else "-" for key in ("ratio", "cpu_ratio", "import_ratio")]
        lines.append("| " + " | ".join(cells) + " |")
    parts += ["", f"Cold start ({summary['cold_reps']} new processes of each kind per side, alternating; wall "
                  "time from spawn to exit and the CPU time they used, medians):", "", "\n".join(lines), ""]
    if summary.get("bound_if_it_ran"):
        parts.append("At best, if the TrinityLake parser could run compiled and gained what sqlglot's Spark "
                     "parser gains on the same text (unseen texts; a repeated text is not parsed again): DB-API "
                     + ", ".join(f"{n} {r:.2f}x" for n, r in summary["bound_if_it_ran"].items())
                     + "; from CPU times (no waiting for the disk): "
                     + ", ".join(f"{n} {r:.2f}x" for n, r in summary.get("bound_if_it_ran_cpu", {}).items())
                     + ".")  # fmt: skip
        parts.append("")
    if "skipped" in summary:
        parts += [f"sqlglotc not measured: {summary['skipped']}.", ""]
    for t in summary.get("targets", []):
        parts += [f"{t['name']} ({t['target']}): {t['measured']}: {'met' if t['met'] else 'NOT MET'}.", ""]
    return "\n".join(parts).rstrip("\n")


def history(h: dict) -> str:
    """Issue 21: history at many versions, each figure with its target."""
    by_key = {t.get("key"): t for t in h.get("targets", [])}

    def verdict(key: str) -> str:
        t = by_key.get(key)
        return "" if t is None else f"{t['target']}: {'met' if t['met'] else 'MISSED'}"

    rows = [
        ("open: connect + find the latest version", "open_ms", "open"),
        ("SHOW VERSIONS LIMIT 10, new connection", "show_versions_ms", "show"),
        ("SHOW VERSIONS LIMIT 10, same connection again", "show_versions_warm_ms", "show_warm"),
        ("FOR SYSTEM_TIME AS OF ts (SHOW NAMESPACES), new connection", "version_at_sql_ms", "at_sql"),
        ("version_at(ts) alone, new catalog", "version_at_api_ms", "at_api"),
    ]
    lines = ["| operation | median | storage reads | target |", "|---|---|---|---|"]
    for label, key, kind in rows:
        lines.append(f"| {label} | {h[key]:.2f} ms | {h['reads'][kind]:.0f} | {verdict(key)} |")
    load = h["load"]
    how = "reused from the cache" if h["reused"] else f"built in {h['build_s']:.0f} s"
    lines += ["", f"{h['versions']:,} versions ({how}); medians of {h['trials']} trials; load average "
                  f"(1 min) while measuring {load['min']:.1f}-{load['max']:.1f} on {load['cores']} cores."]
    return "\n".join(lines)


def commits(c: dict) -> str:
    """Issue 34: a count and a point lookup after N one-row commits, vs after the first."""
    labels = [("count(*), sum(), first statement of a process", "count_new_process_ms"),
              ("count(*), sum(), new connection", "count_new_connection_ms"),
              ("point lookup WHERE id = ?, a new value each time", "point_lookup_ms")]
    header = ["operation", *(f"{int(n):,} commits" if n.isdigit() else f"{int(c['counts'][-1]):,} commits, OPTIMIZE"
                             for n in c["points"])]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, key in labels:
        lines.append("| " + " | ".join([label, *(f"{p[key]:.1f} ms" for p in c["points"].values())]) + " |")
    lines.append("| " + " | ".join(["planning cache (entries, MB)",
                                    *(f"{p['cache_entries']:,}, {p['cache_mb']:.1f}" for p in c["points"].values())])
                 + " |")  # fmt: skip
    if all("view_cache_views" in p for p in c["points"].values()):
        lines.append("| " + " | ".join(["a connection's kept views (views, MB of text)",
                                        *(f"{p['view_cache_views']:,}, {p['view_cache_mb']:.1f}"
                                          for p in c["points"].values())]) + " |")  # fmt: skip
    lines += ["", f"Medians of {c['reps']} new connections, {c['lookups']} lookups each."]
    if c.get("auto_compact"):
        lines[-1] += f" Tables created with compaction.auto.min-small-files = {c['auto_compact']}."
    lines[-1] += " Build: " + ", ".join(f"{int(n):,} commits {p['build_s']:.0f} s" for n, p in c["points"].items()
                                         if n.isdigit()) + "."  # fmt: skip
    if "optimized" in c["points"]:
        lines[-1] += f" OPTIMIZE of the last table took {c['points']['optimized']['optimize_s']:.1f} s."
    return "\n".join(lines)


def s3(summary: dict) -> str:
    """Issue 21: requests per operation on moto S3, counted by the server."""
    if "skipped" in summary:
        return f"Not measured: {summary['skipped']}."
    kinds = ("HEAD", "GET", "PUT", "DELETE", "LIST", "POST")
    header = ["operation", "requests (median / mean)", *kinds, "target",
              "default window: median / mean"]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, modes in summary["operations"].items():
        s, d = modes["steady"], modes.get("default window")
        cells = [label, f"{s['median']:g} / {s['mean']:.2f}",
                 *(f"{s['by_kind'].get(k, 0):.2f}".rstrip("0").rstrip(".") if k in s["by_kind"] else "-" for k in kinds),
                 f"<= {s['target']}: {'met' if s['met'] else 'MISSED'}",
                 f"{d['median']:g} / {d['mean']:.2f}" if d else "-"]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    notes = ["", f"{summary['ops']} operations of each kind after {summary['warmup']} of warm-up, each its own commit; "
             "requests counted by the moto server; by kind: mean per operation. Steady state: lakehouse "
             f"FRESH_LATEST_S widened to {summary['steady_window_s']:g} s, so each commit is issued within the window "
             "of its base (one HEAD of the next root); the last column keeps the default window, where a commit "
             "that takes longer than it on this host re-reads the hint and two roots (D2/D3).", "",
             "Wire log of a typical operation (steady state):", ""]  # fmt: skip
    for label, modes in summary["operations"].items():
        notes.append(f"- {label}: " + ", ".join(f"`{entry}`" for entry in modes["steady"]["wire_log"]))
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


#: The order of the sections in the "Targets" table (a section not named here follows).
SECTION_ORDER = ("suite", "last_of_many", "cold_start", "concurrency", "data", "queries", "history", "commits", "appends",
                 "rest", "ducklake", "everyday", "upsert", "s3", "parsing", "spark", "scale")


def cell(value: object) -> str:
    """A target row's value as the Targets table prints it (rows may hold numbers)."""
    if isinstance(value, float):
        return f"{value:.3g}"
    return "-" if value is None else str(value)


def targets(results: dict) -> str:
    """Every target the run measured, from every section's "targets" rows
    (bench/targets.py), with its verdict; then the sections skipped, and why."""
    rows, skipped = target_rules.collect(results, SECTION_ORDER)
    header = ["section", "target", "goal", "measured", "verdict"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for section, r in rows:
        lines.append("| " + " | ".join([section, cell(r["name"]), cell(r.get("target")), cell(r.get("measured")),
                                        "met" if r.get("met") else "**MISSED**"]) + " |")  # fmt: skip
    met = sum(1 for _, r in rows if r.get("met"))
    lines += ["", f"{met} of {len(rows)} targets met."]
    for section, why in skipped.items():
        lines.append(f"Not measured: {section} ({why}).")
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
        parts += ["## Cold start (new process: one DESCRIBE, or the first SELECT over data)", "",
                  cold_start(results["cold_start"]), ""]
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
    if results.get("history"):
        parts += [f"## History at {results['history']['versions']:,} versions", "", history(results["history"]), ""]
    if results.get("commits"):
        parts += ["## Reads after many one-row commits (DB-API)", "", commits(results["commits"]), ""]
    if results.get("appends"):
        from .appends import render as render_appends

        parts += [f"## One-row appends, {results['appends']['commits']:,} commits to one table "
                  f"({results['appends']['reps']} interleaved repetitions)", "", render_appends(results["appends"]), ""]
    if results.get("keys"):
        from .keys import render as render_keys

        parts += ["## Enforced primary keys: INSERT with and without the check (DB-API)", "",
                  render_keys(results["keys"]), ""]
    if results.get("rest"):
        from .rest import render as render_rest

        parts += [f"## Iceberg REST catalog (trinitylake serve) vs in process ({results['rest']['reps']} interleaved "
                  "repetitions)", "", render_rest(results["rest"]), ""]
    if results.get("ducklake"):
        versions = ", ".join(f"{k} {v}" for k, v in results["ducklake"].get("versions", {}).items())
        parts += [f"## DuckLake, side by side through SQL ({versions or 'not run'})", "",
                  ducklake(results["ducklake"]), ""]
    if results.get("upsert"):
        from .upsert import render as render_upsert

        u = results["upsert"]
        parts += [f"## Upsert of {u['upsert_rows']:,} rows into {u['rows']:,} ({u['reps']} interleaved repetitions)",
                  "", render_upsert(u), ""]
    if results.get("everyday"):
        from .everyday import render as render_everyday

        e = results["everyday"]
        parts += [f"## Issue 34's workloads vs DuckLake ({e.get('commits', 0):,} one-row commits, "
                  f"{e.get('reps')} interleaved repetitions; ratio = DuckLake time / ours)", "",
                  render_everyday(e), ""]
    if results.get("spark"):
        reps = results["spark"].get("reps")
        parts += [f"## Table data through Spark ({reps} interleaved repetitions, "
                  "ratio = TrinityLake time / peer time, per repetition, median)", "",
                  spark(results["spark"]), ""]
    if results.get("s3"):
        parts += ["## Object storage requests per commit (moto S3, counted on the wire)", "", s3(results["s3"]), ""]
    if results.get("parsing"):
        parts += ["## Parsing: sqlglot vs sqlglotc (its mypyc-compiled build)", "", parsing(results["parsing"]), ""]
    if results.get("scale"):
        parts += ["## Scale (TrinityLake, bulk load)", "", scale(results["scale"]), ""]
    parts += ["## Targets (issue 21)", "", targets(results), ""]
    return "\n".join(parts)
