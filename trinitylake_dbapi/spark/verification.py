"""``verify`` on Spark: the checks of :mod:`trinitylake_dbapi.verify`, node by node, in
parallel.

The local verifier walks each version's tree recursively and memoizes subtree
summaries. Here the walk is breadth-first over DataFrames so every level is checked by
all executors at once, and each node file is read once per level it appears at:

1. Driver: list the root directory one level deep; read the hint and probe for the
   latest version (discovery, SPEC 7).
2. Executors, by version ranges: read every root file and its lakehouse definition;
   check the root node; send on one *context* per child: (parent, index, key range the
   child must lie in, levels left to the leaves of the version's leftmost path, depth,
   the settings that apply).
3. Executors, one DataFrame per tree level: the distinct (node, context) pairs not seen
   yet, partitioned by node path; each node file is read and decoded once, checked on
   its own (layout, T1, T3, T5, T8, SPEC 2/3 names and keys, T6 within its buffer, T7
   within its children) and then in each context it was reached in: T4 (its keys and
   messages lie inside the range its ancestors allow) and T2 (a leaf exactly where the
   version's leftmost leaf is).
4. Executors, by definition file: each object definition that any node references is
   read once and checked (SPEC 5: parses, valid columns, the name and kind its keys
   give).
5. Executors, by the 256 ``bbbb/bbbb`` path-prefix directories: SPEC 2 names, and
   orphans (warnings): format files that nothing reached, and ``.tl-*`` temp files.
6. Driver: the previous_root chain, rollback_from_root, created_at_millis order and
   gaps, from one small record per root.
7. With ``data``: executors, by version ranges, list the tables of each version's
   merged state (verify.tables VT1); then, by definition file, each table's Iceberg
   metadata and the files it reaches are checked once (``verify.tables.check_table``,
   the local verifier's own check); the driver judges metadata files that do not
   exist once every table is known (VT2: deleted after a later commit is a warning).

Differences from the local report, by design: T4 is reported at the node holding the
stray key (the local verifier reports it at the ancestor whose child's subtree holds
it); T2 is reported at the misplaced node; T6 is checked within each buffer and, in a
root, against the root's version (the local verifier also compares tags along paths).
Anything the local verifier reports as an error makes this report invalid too.
"""

from __future__ import annotations

import functools
import itertools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import maintenance as local
from ..errors import CorruptFileError, Error, MissingFileError
from ..format import keys as keyfmt
from ..format import paths
from ..format.definitions import LakehouseSettings
from ..format.nodefile import NodeFile, decode_node_file
from ..storage import Storage
from ..verify.report import ERROR, R_LAYOUT, R_ORPHAN, WARNING, Problem, VerifyReport
from ..verify import rules
from ..verify.tables import absent_metadata_problem, check_table, current_tables
from . import _runtime as rt

if TYPE_CHECKING:  # for the annotation only: Spark never touches the tree (A2)
    from ..tree import TreeConfig

__all__ = ["verify", "SparkVerifyReport", "MAX_ORPHANS_REPORTED"]

SparkVerifyReport = VerifyReport

#: Orphans listed one by one in the report; the rest are counted in one line.
MAX_ORPHANS_REPORTED = 1000

# One row type for everything the stages emit.
#   kind: problem | child | definition | reached | root | seen (a node read in a context)
_ROWS = T.StructType(
    [
        T.StructField("kind", T.StringType(), False),
        T.StructField("path", T.StringType(), False),
        T.StructField("a", T.StringType(), True),  # problem: rule;     child/definition: context JSON
        T.StructField("b", T.StringType(), True),  # problem: message
        T.StructField("c", T.StringType(), True),  # problem: severity
    ]
)


_TABLES = T.StructType(
    [T.StructField("path", T.StringType(), False), T.StructField("table", T.StringType(), False)]
)


def _row(problem: Problem) -> tuple:
    return ("problem", problem.path, problem.rule, problem.message, problem.severity)


def _problem(path: str, rule: str, message: str, severity: str = ERROR) -> tuple:
    return _row(Problem(path, rule, message, severity))


def _rows(problems: Iterable[Problem | None]) -> list[tuple]:
    return [_row(p) for p in problems if p is not None]


def _by_path(rows: Iterable[Any]) -> Iterator[tuple[str, list[str]]]:
    """(path, JSON text) rows sorted by path, as (path, [JSON text, ...]) groups."""
    for path, same in itertools.groupby(rows, key=lambda row: row[0]):
        yield path, [row[1] for row in same]


# ---------------------------------------------------------------------------
# Pure checks (no Spark, no storage): the per-file checks of ..verify, as rows
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Settings:
    order: int
    capacity: int
    namespace_max: int
    table_max: int

    @classmethod
    def of(cls, settings: LakehouseSettings) -> "_Settings":
        return cls(settings.order, max(1, settings.buffer_capacity_bytes),
                   settings.namespace_name_max_size_bytes, settings.table_name_max_size_bytes)

    def config(self) -> "TreeConfig":
        return rules.node_rules_config(self.order, self.capacity)

    def codec(self) -> keyfmt.KeyCodec:
        return keyfmt.KeyCodec(self.namespace_max, self.table_max)


def node_rows(path: str, node: NodeFile, settings: _Settings, *, is_root: bool, version: int | None) -> list[tuple]:
    """The checks of one node on its own, and the definition files it references."""
    out = _rows(rules.node_problems(path, node, settings.config(), is_root=is_root, version=version))
    codec = settings.codec()

    def entry(key: str, value: str | None) -> None:
        decoded, problem = rules.entry_problem(path, key, value, codec)
        if problem is not None:
            out.append(_row(problem))
        if decoded is None or value is None:
            return
        name = decoded.namespace if decoded.kind == "namespace" else decoded.table
        out.append(("definition", value, json.dumps([decoded.kind, name, path, rules.describe(decoded)]), None, None))

    # Reachability as expiration counts it (tree TW2: shadowed and invalid pointers
    # included), so an orphan here is a file expiration would delete.
    out += [("reached", file, None, None, None) for file in dict.fromkeys(rules.node_references(node).files())]
    for key, value in rules.node_entries(node):  # tree TW1
        entry(key, value)
    last_tag: dict[str, int] = {}
    for message in node.buffer:
        tag = rules.txn_tag(message.txn)
        if tag is None:
            continue
        limit = version if is_root else None
        out += _rows(rules.tag_problems(path, message.key, tag, limit, last_tag.get(message.key)))
        last_tag[message.key] = max(tag, last_tag.get(message.key, -1))
    return out


def context_rows(
    path: str, node: NodeFile, settings: _Settings, low: str | None, high: str | None,
    remaining: int | None, depth: int,
) -> list[tuple]:
    """The checks of a node in one place of one tree (T2, T4), and its children's
    contexts."""
    out: list[tuple] = []
    for key in node.keys:
        if (low is not None and key <= low) or (high is not None and key >= high):
            out.append(_problem(path, "T4", f"key {key!r} outside its range ({low!r}, {high!r})"))
    for message in node.buffer:
        key = message.key
        if (low is not None and key <= low) or (high is not None and key >= high):
            out.append(_problem(path, "T4", f"message for {key!r} outside its range ({low!r}, {high!r})"))
    if remaining is not None:
        if node.is_leaf and remaining > 0:
            out.append(_problem(path, "T2", f"a leaf {remaining} level(s) above the leaves of the tree's leftmost "
                                "path: leaves are not all at one depth"))
        if not node.is_leaf and remaining <= 0:
            out.append(_problem(path, "T2", "an internal node at the depth of the tree's leftmost leaf: leaves "
                                "are not all at one depth"))
            remaining = None
    if not node.children:
        return out
    if depth + 1 > rules.MAX_DEPTH:
        out.append(_problem(path, "T2", f"the tree is deeper than {rules.MAX_DEPTH} levels here"))
        return out
    listed: set[str] = set()
    k = len(node.keys)
    for index, child in enumerate(node.children):
        problem = rules.child_problem(path, index, child, listed)
        if problem is not None:
            out.append(_row(problem))
            continue
        child_low = node.keys[index - 1] if 0 < index <= k else low
        child_high = node.keys[index] if index < k else high
        context = [path, index, child_low, child_high, None if remaining is None else remaining - 1, depth + 1,
                   settings.order, settings.capacity, settings.namespace_max, settings.table_max]
        out.append(("child", child, json.dumps(context), None, None))
    return out


# ---------------------------------------------------------------------------
# Executor stages
# ---------------------------------------------------------------------------


def _check_roots(location: rt.Location) -> Callable[[Iterable[tuple[int, int]]], Iterator[tuple]]:
    def run(ranges: Iterable[tuple[int, int]]) -> Iterator[tuple]:
        store = rt.storage(location)
        defs: dict[str, tuple[LakehouseSettings | None, list[tuple]]] = {}
        nodes: dict[str, NodeFile | None] = {}

        def lakehouse_def(def_path: str, root_path: str) -> tuple[LakehouseSettings | None, list[tuple]]:
            if def_path in defs:
                return defs[def_path][0], []
            settings, problems, reached = rules.lakehouse_def_problems(def_path, root_path, store.read, store.exists)
            out: list[tuple] = [("reached", path, None, None, None) for path in (def_path, *reached)]
            out += _rows(problems)
            defs[def_path] = (settings, out)
            return settings, out

        def height(root: NodeFile, order: int) -> int | None:
            levels, node = 1, root
            while node.children and levels <= rules.MAX_DEPTH:
                child = node.children[0]
                if child not in nodes:
                    try:
                        nodes[child] = decode_node_file(store.read(child), child)
                    except Error:
                        nodes[child] = None
                found = nodes[child]
                if found is None:
                    return None
                node, levels = found, levels + 1
            return levels

        def one(version: int) -> list[tuple]:
            path = paths.root_node_path(version)
            out: list[tuple] = [("reached", path, None, None, None)]
            try:
                data = store.read(path)
            except MissingFileError:
                return [*out, _row(rules.vanished_root_problem(path))]
            try:
                root = decode_node_file(data, path)
            except CorruptFileError as e:
                return [*out, _problem(path, R_LAYOUT, e.reason), ("root", path, json.dumps([version, None, None, None, False, None]), None, None)]
            system = root.system
            problems, def_path = rules.root_problems(path, system)
            out += _rows(problems)
            settings = None
            if def_path is not None:
                settings, more = lakehouse_def(def_path, path)
                out += more
            found = _Settings.of(settings or LakehouseSettings())
            created = rules.root_created_at(system)
            out.append(("root", path, json.dumps([version, created, system.get(keyfmt.PREVIOUS_ROOT),
                                                  system.get(keyfmt.ROLLBACK_FROM_ROOT), True, def_path]),
                        None, None))
            out += node_rows(path, root, found, is_root=True, version=version)
            levels = height(root, found.order)
            out += context_rows(path, root, found, None, None, None if levels is None else levels - 1, 0)
            return out

        for low, high in ranges:
            for rows in rt.thread_map(one, range(low, high + 1)):
                yield from rows

    return run


def _check_nodes(location: rt.Location, counter: Any) -> Callable[[Iterable[Any]], Iterator[tuple]]:
    """Rows arrive sorted by path: each node is read once for all its contexts. Each
    (node, context) pair comes back as a ``seen`` row, so later levels skip it."""

    def run(rows: Iterable[Any]) -> Iterator[tuple]:
        store = rt.storage(location)

        def one(group: tuple[str, list[str]]) -> list[tuple]:
            path, texts = group
            contexts = [json.loads(text) for text in texts]
            counter.add(1)
            out: list[tuple] = [("reached", path, None, None, None)]
            out += [("seen", path, text, None, None) for text in texts]
            try:
                data = store.read(path)
            except MissingFileError:
                return [*out, _row(rules.missing_node_problem(path, contexts[0][0], contexts[0][1]))]
            try:
                node = decode_node_file(data, path)
            except CorruptFileError as e:
                return [*out, _problem(path, R_LAYOUT, e.reason)]
            checked: set[_Settings] = set()
            for parent, index, low, high, remaining, depth, *numbers in contexts:
                settings = _Settings(*numbers)
                if settings not in checked:
                    checked.add(settings)
                    out += node_rows(path, node, settings, is_root=False, version=None)
                out += context_rows(path, node, settings, low, high, remaining, depth)
            return out

        for out in rt.thread_map(one, _by_path(rows)):
            yield from out

    return run


def _check_definitions(location: rt.Location) -> Callable[[Iterable[Any]], Iterator[tuple]]:
    """Rows arrive partitioned and sorted by path: each file is read once (one
    ``reached`` row each)."""

    def run(rows: Iterable[Any]) -> Iterator[tuple]:
        store = rt.storage(location)

        def one(group: tuple[str, list[str]]) -> list[tuple]:
            path, texts = group
            uses = [json.loads(text) for text in texts]
            kind, _, referrer, described = uses[0]
            out: list[tuple] = [("reached", path, None, None, None)]
            found_name, problem = rules.definition_problem(path, kind, store.read, referrer, described)
            if problem is not None:
                return [*out, _row(problem)]
            seen: set[tuple[str, str]] = set()
            for use_kind, name, use_referrer, use_described in uses:
                if (use_kind, name) in seen:
                    continue
                seen.add((use_kind, name))
                problem = rules.definition_use_problem(path, kind, found_name, use_kind, name, use_referrer,
                                                 use_described)
                if problem is not None:
                    out.append(_row(problem))
            return out

        for out in rt.thread_map(one, _by_path(rows)):
            yield from out

    return run


def _check_names(location: rt.Location) -> Callable[[Iterable[str]], Iterator[tuple]]:
    """SPEC 2 names of the files under the prefixes; ``listed`` rows for the files
    expiration considers."""

    def run(prefixes: Iterable[str]) -> Iterator[tuple]:
        store = rt.storage(location)
        for listed in rt.thread_map(functools.partial(store.list, include_reserved=True), prefixes):
            for path in listed:
                found = rules.name_problem(path)
                if found is not None:
                    yield _row(found)
                if local.is_expirable_file(path):
                    yield ("listed", path, None, None, None)

    return run


def _current_tables(location: rt.Location) -> Callable[[Iterable[tuple[int, int]]], Iterator[tuple]]:
    """verify.tables VT1: (definition path, "namespace.table") of every table in the
    merged state of each version of the ranges."""

    def run(ranges: Iterable[tuple[int, int]]) -> Iterator[tuple]:
        lakehouse = rt.catalog(location).lakehouse
        for low, high in ranges:
            for found in rt.thread_map(functools.partial(current_tables, lakehouse), range(low, high + 1)):
                for table, path in found or ():
                    yield path, table

    return run


def _check_tables(location: rt.Location) -> Callable[[Iterable[Any]], Iterator[tuple]]:
    """SPEC 8 (``verify(data=True)``) of each (definition path, table) row, as the local
    verifier checks it (verify.tables): problem rows, an ``absent`` row (definition,
    metadata location, "managed" or "") for a metadata file that does not exist, judged
    on the driver once every table is known (VT2), and ``deletes`` rows (OM5)."""

    def run(rows: Iterable[Any]) -> Iterator[tuple]:
        from ..iceberg.reach import IcebergReach

        store = rt.storage(location)
        reach = IcebergReach(location.storage_options)

        def one(row: Any) -> list[tuple]:
            check = check_table(row[0], row[1], store.read, store.exists, location.uri, reach,
                                location.storage_options)
            out = _rows(check.problems)
            if check.absent is not None:
                path, where, managed = check.absent
                out.append(("absent", path, where, "managed" if managed else "", None))
            out += [("deletes", prefix, None, None, None) for prefix in sorted(check.deletes)]
            return out

        for out in rt.thread_map(one, rows):
            yield from out

    return run


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


def verify(
    spark: SparkSession,
    location: str,
    *,
    storage_options: dict | None = None,
    progress: Any = None,
    data: bool = False,
) -> VerifyReport:
    """Check every version of the lakehouse at ``location`` on Spark; read-only.

    Returns a :class:`trinitylake_dbapi.verify.VerifyReport` (``ok``, ``problems``,
    ``text()``) covering every root, every node any root reaches, every definition file
    any node references (``all_versions=True`` in the local verifier's terms), SPEC 2
    names of every file, the previous_root chain, and orphan files (warnings; at most
    MAX_ORPHANS_REPORTED listed). With ``data``, also every table of every version:
    its Iceberg metadata and every file that reaches (SPEC 8), as the local
    ``verify(data=True)`` checks them (:mod:`trinitylake_dbapi.verify.tables`); a
    metadata file deleted after a later commit by the table's own
    ``write.metadata.delete-after-commit.enabled`` is a warning (iceberg.oldmetadata
    OM5). See the module docstring for how the work is split.
    """
    loc = rt.Location.of(location, storage_options)
    storage = Storage(loc.uri, loc.storage_options)
    report = VerifyReport(loc.uri, all_versions=True)
    with rt.Progress(spark, "verify", progress) as progress_:
        sc = spark.sparkContext
        parallelism = max(2, sc.defaultParallelism)

        def frame(rdd: Any) -> DataFrame:
            return spark.createDataFrame(rdd, _ROWS).localCheckpoint(eager=True)

        progress_.step("listing the root directory")
        top_level = storage.list("", recursive=False, include_reserved=True)
        problems: list[Problem] = []
        versions = sorted(v for v in (paths.parse_root_node_path(p) for p in top_level) if v is not None)
        problems += [p for p in map(rules.name_problem, top_level) if p is not None]
        report.versions = versions
        if not versions:
            report.problems = [rules.no_lakehouse_problem()]
            return report
        report.latest_version = versions[-1]
        problems += rules.discovery_problems(storage, versions[-1])

        progress_.step(f"checking {len(versions)} root file(s)")
        ranges = rt.split_ranges(rt.version_ranges(versions), parallelism * 2)
        emitted = frame(sc.parallelize(ranges, max(1, min(len(ranges), parallelism * 4)))
                        .mapPartitions(_check_roots(loc)))
        parts = [emitted]
        report.roots_read = len(versions)
        seen: list[DataFrame] = []  # each earlier level's (node, context) pairs read
        depth = 1
        while True:
            # One job per level: the pairs not read before, read; the job's own "seen"
            # rows say which it read (its lineage: checkpoints, one per level).
            pending = emitted.filter(F.col("kind") == "child").select("path", "a").distinct()
            if seen:
                pending = pending.join(functools.reduce(DataFrame.union, seen), ["path", "a"], "left_anti")
            progress_.step(f"checking the node files at depth {depth}")
            ordered = pending.repartition(parallelism * 2, "path").sortWithinPartitions("path", "a")
            read = sc.accumulator(0)
            emitted = frame(ordered.rdd.mapPartitions(_check_nodes(loc, read)))
            if read.value == 0:
                break
            parts.append(emitted)
            seen.append(emitted.filter(F.col("kind") == "seen").select("path", "a"))
            depth += 1
        report.nodes_read = (
            functools.reduce(DataFrame.union, seen).select("path").distinct().count() if seen else 0
        )
        everything = parts[0]
        for part in parts[1:]:
            everything = everything.union(part)

        definitions = everything.filter(F.col("kind") == "definition").select("path", "a").distinct()
        definitions = definitions.repartition(parallelism * 2, "path").sortWithinPartitions("path", "a")
        progress_.step("checking the definition files the nodes reference")
        checked_defs = frame(definitions.rdd.mapPartitions(_check_definitions(loc)))
        # Counts come from data, not accumulators: an accumulator updated in a
        # transformation counts a retried task twice.
        report.definitions_read = checked_defs.filter(F.col("kind") == "reached").count()

        progress_.step(f"checking the names under {len(paths.PREFIX_DIRECTORIES)} path-prefix directories")
        prefixes = sc.parallelize(paths.PREFIX_DIRECTORIES, min(len(paths.PREFIX_DIRECTORIES), parallelism * 4))
        listed = frame(prefixes.mapPartitions(_check_names(loc)))
        top_listed = [("listed", p, None, None, None) for p in top_level if local.is_expirable_file(p)]
        top = spark.createDataFrame(top_listed, _ROWS)
        listed_paths = listed.filter(F.col("kind") == "listed").select("path")
        all_listed = listed_paths.union(top.select("path"))
        report.files_listed = listed_paths.count() + len(top_listed)

        progress_.step("collecting problems and orphans")
        results = everything.union(checked_defs).union(listed)
        reached = results.filter(F.col("kind") == "reached").select("path").distinct()
        orphans = all_listed.join(reached, "path", "left_anti").distinct()
        orphan_count = orphans.count()
        report.orphans = sorted(r["path"] for r in orphans.limit(MAX_ORPHANS_REPORTED).collect())
        infos = {}
        for row in results.filter(F.col("kind").isin("problem", "root")).distinct().collect():  # one job
            if row["kind"] == "problem":
                problems.append(Problem(row["path"], row["a"], row["b"], row["c"]))
            else:
                info = json.loads(row["a"])
                infos[info[0]] = info
        problems += rules.chain_problems(versions, {v: rules.RootInfo(*info[:5]) for v, info in infos.items()})
        if data:
            progress_.step("checking the tables' Iceberg metadata and the files it reaches")
            tables = spark.createDataFrame(
                sc.parallelize(ranges, max(1, min(len(ranges), parallelism * 4))).mapPartitions(_current_tables(loc)),
                _TABLES,
            )
            tables = tables.groupBy("path").agg(F.min("table").alias("table")).repartition(parallelism * 2, "path")
            checked = frame(tables.rdd.mapPartitions(_check_tables(loc)))
            deleted = {row["path"] for row in checked.filter(F.col("kind") == "deletes").select("path").distinct().collect()}
            for row in checked.filter(F.col("kind").isin("problem", "absent")).collect():
                if row["kind"] == "absent":  # verify.tables VT2, once every table is known
                    problems.append(absent_metadata_problem(row["path"], row["a"], row["b"] == "managed", deleted))
                else:
                    problems.append(Problem(row["path"], row["a"], row["b"], row["c"]))
        report.definitions_read += len({info[5] for info in infos.values() if len(info) > 5 and info[5]})
        problems += map(rules.orphan_problem, report.orphans)
        if orphan_count > len(report.orphans):
            problems.append(Problem(loc.uri, R_ORPHAN, f"... and {orphan_count - len(report.orphans)} more orphan "
                                    "files", WARNING))
    problems.sort(key=lambda p: (p.severity != ERROR, p.path, p.rule, p.message))
    report.problems = problems
    return report
