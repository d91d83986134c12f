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
   orphans (warnings): format files that nothing reached.
6. Driver: the previous_root chain, rollback_from_root, created_at_millis order and
   gaps, from one small record per root.

Differences from the local report, by design: T4 is reported at the node holding the
stray key (the local verifier reports it at the ancestor whose child's subtree holds
it); T2 is reported at the misplaced node; T6 is checked within each buffer and, in a
root, against the root's version (the local verifier also compares tags along paths).
Anything the local verifier reports as an error makes this report invalid too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import maintenance as local
from ..errors import CorruptFileError, Error, InvalidLocationError, MissingFileError, UnsupportedFormatError
from ..format import keys as keyfmt
from ..format import paths
from ..format.definitions import (
    LakehouseSettings,
    decode_lakehouse_def,
    decode_namespace_def,
    decode_table_def,
)
from ..format.nodefile import NodeFile, decode_node_file
from ..format.types import from_proto_columns
from ..storage import Storage
from ..transaction import Lakehouse
from ..tree import TreeConfig, buffer_size
from ..verify import (
    ERROR,
    R_DEFINITION,
    R_HISTORY,
    R_KEYS,
    R_LAYOUT,
    R_MAJOR,
    R_MISSING,
    R_NAMES,
    R_ORPHAN,
    WARNING,
    Problem,
    VerifyReport,
)
from . import _runtime as rt

__all__ = ["verify", "SparkVerifyReport", "MAX_ORPHANS_REPORTED"]

SparkVerifyReport = VerifyReport

#: Orphans listed one by one in the report; the rest are counted in one line.
MAX_ORPHANS_REPORTED = 1000
MAX_DEPTH = 64

# One row type for everything the stages emit.
#   kind: problem | child | definition | reached | root
_ROWS = T.StructType(
    [
        T.StructField("kind", T.StringType(), False),
        T.StructField("path", T.StringType(), False),
        T.StructField("a", T.StringType(), True),  # problem: rule;     child/definition: context JSON
        T.StructField("b", T.StringType(), True),  # problem: message
        T.StructField("c", T.StringType(), True),  # problem: severity
    ]
)

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_OPTIMIZED_RE = re.compile(r"([01]{4})/([01]{4})/([01]{4})/([01]{8})-(.+)", re.DOTALL)
_ORIGINAL_RE = {
    "node": re.compile(r"node-" + _UUID + r"\.arrow"),
    "namespace": re.compile(r"namespace-.+-" + _UUID + r"\.binpb", re.DOTALL),
    "table": re.compile(r"table-.+-.+-" + _UUID + r"\.binpb", re.DOTALL),
}
_ROOT_SYSTEM_KEYS = frozenset({keyfmt.LAKEHOUSE_DEF, keyfmt.PREVIOUS_ROOT, keyfmt.ROLLBACK_FROM_ROOT})
_NODE_SYSTEM_KEYS = frozenset({keyfmt.CREATED_AT_MILLIS, keyfmt.N_KEYS})


def _problem(path: str, rule: str, message: str, severity: str = ERROR) -> tuple:
    return ("problem", path, rule, message, severity)


# ---------------------------------------------------------------------------
# Pure checks (no Spark, no storage)
# ---------------------------------------------------------------------------


def optimized_problem(path: str, kind: str | None) -> str | None:
    """Why ``path`` is not an optimized path (of ``kind``, if given), or None (SPEC 2)."""
    m = _OPTIMIZED_RE.fullmatch(path)
    if m is None:
        return "not an optimised path ('bbbb/bbbb/bbbb/bbbbbbbb-<original>')"
    rest = m.group(5)
    if paths.optimize_path(rest) != path:
        return f"optimised prefix {''.join(m.groups()[:4])} is not the first 20 bits of the MurmurHash3 of {rest!r}"
    kinds = [kind] if kind else list(_ORIGINAL_RE)
    if not any(_ORIGINAL_RE[k].fullmatch(rest) for k in kinds):
        return f"original name {rest!r} is not a {' or '.join(kinds)} file name"
    return None


def pointer_problem(pointer: Any, kind: str) -> str | None:
    """Why a path stored in a file is not a valid pointer to a file of ``kind``."""
    if not isinstance(pointer, str):
        return f"{pointer!r} is not a path"
    try:
        paths.check_relative_path(pointer)
    except InvalidLocationError as e:
        return str(e)
    if kind == "root":
        return None if paths.parse_root_node_path(pointer) is not None else f"{pointer!r} is not a root node file name"
    if kind == "lakehouse_def":
        return None if paths.is_lakehouse_def_path(pointer) else f"{pointer!r} is not a lakehouse definition file name"
    problem = optimized_problem(pointer, kind)
    return None if problem is None else f"{pointer!r}: {problem}"


def name_problem(path: str) -> tuple | None:
    """The SPEC 2 problem of a listed file name, if any."""
    if paths.parse_root_node_path(path) is not None:
        return None
    if path == paths.LATEST_HINT_PATH or paths.is_lakehouse_def_path(path):
        return None
    m = _OPTIMIZED_RE.fullmatch(path)
    if m is not None and re.match(r"(node|namespace|table)-", m.group(5)):
        why = optimized_problem(path, None)
        return _problem(path, R_NAMES, why) if why else None
    if "/" not in path and path.startswith("_") and path.endswith((".arrow", ".binpb")):
        return _problem(path, R_NAMES, "looks like a root node or lakehouse definition file but its name does "
                        "not follow SPEC 2; readers ignore it", WARNING)
    return None


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

    def config(self) -> TreeConfig:
        return TreeConfig(max(3, self.order), self.capacity)

    def codec(self) -> keyfmt.KeyCodec:
        return keyfmt.KeyCodec(self.namespace_max, self.table_max)


def _describe(key: keyfmt.ObjectKey) -> str:
    return repr(key.namespace) if key.kind == "namespace" else f"{key.namespace!r}.{key.table!r}"


def node_rows(path: str, node: NodeFile, settings: _Settings, *, is_root: bool, version: int | None) -> list[tuple]:
    """The checks of one node on its own, and the definition files it references."""
    out: list[tuple] = []
    config = settings.config()
    if node.order != settings.order:
        out.append(_problem(path, R_LAYOUT, f"node key table has {node.order} rows, the tree order is {settings.order}"))
    k = len(node.keys)
    if k > config.max_keys:
        out.append(_problem(path, "T1", f"{k} keys exceed the maximum {config.max_keys}"))
    if node.children and len(node.children) != k + 1:
        out.append(_problem(path, "T1", f"{len(node.children)} children for {k} keys"))
    if any(a >= b for a, b in zip(node.keys, node.keys[1:])):
        out.append(_problem(path, "T1", "keys not strictly ascending"))
    if is_root:
        if node.children and not node.keys:
            out.append(_problem(path, "T3", "internal root without keys"))
    elif k < config.min_keys:
        out.append(_problem(path, "T3", f"{k} keys, fewer than ceil(N/2)-1 = {config.min_keys}"))
    system = node.system
    for name in (keyfmt.N_KEYS, keyfmt.CREATED_AT_MILLIS):
        if name not in system:
            out.append(_problem(path, "T8", f"missing system row {name!r}"))
    created = system.get(keyfmt.CREATED_AT_MILLIS)
    if created is not None and not (created.isascii() and created.isdigit()):
        out.append(_problem(path, "T8", f"created_at_millis {created!r} is not a number"))
    for name in system:
        if name in _NODE_SYSTEM_KEYS or (is_root and name in _ROOT_SYSTEM_KEYS):
            continue
        if name in _ROOT_SYSTEM_KEYS:
            out.append(_problem(path, R_KEYS, f"system row {name!r} belongs in a root node only"))
        else:
            out.append(_problem(path, R_KEYS, f"unknown system row {name!r}", WARNING))
    if node.is_leaf and not is_root and node.buffer:
        out.append(_problem(path, "T5", f"non-root leaf with {len(node.buffer)} buffered messages"))
    own = str(version) if is_root else None
    size = buffer_size([m for m in node.buffer if own is None or m.txn != own])
    if size > config.buffer_capacity_bytes:
        extra = " (not counting this version's own messages)" if is_root else ""
        out.append(_problem(path, "T5", f"write buffer of {size} bytes{extra} exceeds the capacity "
                            f"{config.buffer_capacity_bytes}"))

    codec = settings.codec()

    def entry(key: str, value: str | None) -> None:
        try:
            decoded = codec.decode(key)
        except ValueError as e:
            out.append(_problem(path, R_KEYS, str(e)))
            return
        if value is None:
            return
        why = pointer_problem(value, decoded.kind)
        if why:
            out.append(_problem(path, R_NAMES, f"value of {decoded.kind} {_describe(decoded)}: {why}"))
            return
        name = decoded.namespace if decoded.kind == "namespace" else decoded.table
        out.append(("definition", value, json.dumps([decoded.kind, name, path, _describe(decoded)]), None, None))

    for key, value in zip(node.keys, node.values):
        entry(key, value)
    last_tag: dict[str, int] = {}
    for message in node.buffer:
        entry(message.key, message.value)
        txn = message.txn
        tag = int(txn) if txn is not None and txn.isascii() and txn.isdigit() else None
        if tag is None:
            continue
        if is_root and version is not None and tag > version:
            out.append(_problem(path, "T6", f"message for {message.key!r} has txn {tag}, newer than version "
                                f"{version} that reaches this node"))
        if tag < last_tag.get(message.key, -1):
            out.append(_problem(path, "T6", f"messages for {message.key!r} are not in the order they were "
                                f"applied (txn {tag} after {last_tag[message.key]})"))
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
    if depth + 1 > MAX_DEPTH:
        out.append(_problem(path, "T2", f"the tree is deeper than {MAX_DEPTH} levels here"))
        return out
    listed: set[str] = set()
    k = len(node.keys)
    for index, child in enumerate(node.children):
        why = pointer_problem(child, "node")
        if why:
            out.append(_problem(path, R_NAMES, f"child {index}: {why}"))
            continue
        if child in listed:
            out.append(_problem(path, "T7", f"child {child} is referenced twice by this node"))
            continue
        listed.add(child)
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
            out: list[tuple] = [("reached", def_path, None, None, None)]
            settings = None
            try:
                settings = LakehouseSettings.from_proto(decode_lakehouse_def(store.read(def_path), def_path))
            except MissingFileError:
                out.append(_problem(def_path, R_MISSING, f"the lakehouse definition named by {root_path} does not exist"))
            except UnsupportedFormatError as e:
                out.append(_problem(def_path, R_MAJOR, str(e)))
            except CorruptFileError as e:
                out.append(_problem(def_path, R_DEFINITION, e.reason))
            if settings is not None:
                for name, target in sorted(settings.exported_snapshots.items()):
                    why = pointer_problem(target, "root")
                    if why:
                        out.append(_problem(def_path, R_NAMES, f"exported snapshot {name!r}: {why}"))
                    else:
                        out.append(("reached", target, None, None, None))
                        if not store.exists(target):
                            out.append(_problem(def_path, R_MISSING, f"exported snapshot {name!r} points at root "
                                                f"{target}, which does not exist"))
            defs[def_path] = (settings, out)
            return settings, out

        def height(root: NodeFile, order: int) -> int | None:
            levels, node = 1, root
            while node.children and levels <= MAX_DEPTH:
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
                return [*out, _problem(path, R_MISSING, "root node file vanished during verification")]
            try:
                root = decode_node_file(data, path)
            except CorruptFileError as e:
                return [*out, _problem(path, R_LAYOUT, e.reason), ("root", path, json.dumps([version, None, None, None, False, None]), None, None)]
            system = root.system
            for key in (keyfmt.PREVIOUS_ROOT, keyfmt.ROLLBACK_FROM_ROOT):
                if key in system:
                    why = pointer_problem(system[key], "root")
                    if why:
                        out.append(_problem(path, R_NAMES, f"system row {key}: {why}"))
            settings = None
            def_path = system.get(keyfmt.LAKEHOUSE_DEF)
            if def_path is None:
                out.append(_problem(path, R_KEYS, "root node without a lakehouse_def system row"))
            else:
                why = pointer_problem(def_path, "lakehouse_def")
                if why:
                    out.append(_problem(path, R_NAMES, f"system row lakehouse_def: {why}"))
                else:
                    settings, more = lakehouse_def(def_path, path)
                    out += more
            found = _Settings.of(settings or LakehouseSettings())
            created = system.get(keyfmt.CREATED_AT_MILLIS)
            created_at = int(created) if created is not None and created.isascii() and created.isdigit() else None
            out.append(("root", path, json.dumps([version, created_at, system.get(keyfmt.PREVIOUS_ROOT),
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
    """Rows arrive sorted by path: each node is read once for all its contexts."""

    def run(rows: Iterable[Any]) -> Iterator[tuple]:
        store = rt.storage(location)

        def groups() -> Iterator[tuple[str, list[list[Any]]]]:
            current, contexts = None, []
            for row in rows:
                if row[0] != current:
                    if current is not None:
                        yield current, contexts
                    current, contexts = row[0], []
                contexts.append(json.loads(row[1]))
            if current is not None:
                yield current, contexts

        def one(group: tuple[str, list[list[Any]]]) -> list[tuple]:
            path, contexts = group
            counter.add(1)
            out: list[tuple] = [("reached", path, None, None, None)]
            try:
                data = store.read(path)
            except MissingFileError:
                parent, index = contexts[0][0], contexts[0][1]
                return [*out, _problem(path, R_MISSING, f"node file referenced by {parent} (child {index}) does not exist")]
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

        for out in rt.thread_map(one, groups()):
            yield from out

    return run


def _check_definitions(location: rt.Location) -> Callable[[Iterable[Any]], Iterator[tuple]]:
    def run(rows: Iterable[Any]) -> Iterator[tuple]:
        store = rt.storage(location)

        def groups() -> Iterator[tuple[str, list[list[Any]]]]:
            current, uses = None, []
            for row in rows:
                if row[0] != current:
                    if current is not None:
                        yield current, uses
                    current, uses = row[0], []
                uses.append(json.loads(row[1]))
            if current is not None:
                yield current, uses

        def one(group: tuple[str, list[list[Any]]]) -> list[tuple]:
            path, uses = group
            kind, _, referrer, described = uses[0]
            out: list[tuple] = [("reached", path, None, None, None)]
            try:
                data = store.read(path)
            except MissingFileError:
                return [*out, _problem(path, R_MISSING, f"definition of {kind} {described} (referenced by "
                                       f"{referrer}) does not exist")]
            try:
                if kind == "namespace":
                    message: Any = decode_namespace_def(data, path)
                else:
                    message = decode_table_def(data, path)
                    from_proto_columns(message.schema.columns)
            except CorruptFileError as e:
                return [*out, _problem(path, R_DEFINITION, e.reason)]
            except Error as e:
                return [*out, _problem(path, R_DEFINITION, f"invalid table definition: {e}")]
            seen: set[tuple[str, str]] = set()
            for use_kind, name, use_referrer, use_described in uses:
                if (use_kind, name) in seen:
                    continue
                seen.add((use_kind, name))
                if use_kind != kind:
                    out.append(_problem(path, R_DEFINITION, f"is used as a {kind} and as a {use_kind} definition "
                                        f"(by {referrer} and {use_referrer})"))
                elif message.name != name:
                    out.append(_problem(path, R_DEFINITION, f"holds {use_kind} name {message.name!r} but its key in "
                                        f"{use_referrer} is for {use_kind} {use_described}"))
            return out

        for out in rt.thread_map(one, groups()):
            yield from out

    return run


def _check_names(location: rt.Location) -> Callable[[Iterable[str]], Iterator[tuple]]:
    def run(prefixes: Iterable[str]) -> Iterator[tuple]:
        store = rt.storage(location)
        for listed in rt.thread_map(store.list, prefixes):
            for path in listed:
                found = name_problem(path)
                if found is not None:
                    yield found
                if local.is_format_file(path):
                    yield ("listed", path, None, None, None)

    return run


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


def _chain_problems(infos: dict[int, list[Any]]) -> list[Problem]:
    """SPEC 7 history checks from one small record per root (as the local verifier)."""
    out: list[Problem] = []
    versions = sorted(infos)
    present = set(versions)
    for version in versions:
        _, created_at, previous, rollback_from, ok = infos[version][:5]
        if not ok:
            continue
        path = paths.root_node_path(version)
        expected = paths.root_node_path(version - 1) if version > 0 else None
        if version == 0:
            if previous is not None:
                out.append(Problem(path, R_HISTORY, f"version 0 has previous_root {previous}"))
        elif previous is None:
            out.append(Problem(path, R_HISTORY, f"version {version} has no previous_root (expected {expected})"))
        elif previous != expected:
            out.append(Problem(path, R_HISTORY, f"previous_root is {previous}, expected {expected} "
                               f"(version {version - 1})"))
        if rollback_from is not None and rollback_from != expected:
            out.append(Problem(path, R_HISTORY, f"rollback_from_root is {rollback_from}, expected {expected} "
                               f"(version {version - 1})"))
        if version > versions[0] and version - 1 not in present:
            start = max(v for v in versions if v < version) + 1
            span = f"version {start}" if start == version - 1 else f"versions {start}..{version - 1}"
            out.append(Problem(path, R_HISTORY, f"{span} missing below version {version} (expired with "
                               "per-version overrides, or lost)", WARNING))
        before = infos.get(version - 1)
        if before is not None and before[1] is not None and created_at is not None and created_at < before[1]:
            out.append(Problem(path, R_HISTORY, f"created_at_millis {created_at} is before version "
                               f"{version - 1}'s {before[1]}"))
    return out


def _discovery_problems(storage: Storage, latest: int) -> list[Problem]:
    out: list[Problem] = []
    hint_path = paths.LATEST_HINT_PATH
    try:
        data = storage.read(hint_path)
    except MissingFileError:
        out.append(Problem(hint_path, R_HISTORY, "the latest-version hint is missing; readers probe from "
                           "version 0", WARNING))
    else:
        hint = paths.decode_hint(data)
        if hint is None:
            out.append(Problem(hint_path, R_HISTORY, f"the latest-version hint holds {bytes(data[:40])!r}, not a "
                               "version; readers probe from version 0", WARNING))
        elif hint > latest:
            out.append(Problem(hint_path, R_HISTORY, f"the hint says version {hint} but the latest root is "
                               f"version {latest}", WARNING))
    found = Lakehouse(storage)._find_latest()
    if found != latest:
        out.append(Problem(paths.root_node_path(latest), R_HISTORY,
                           f"readers find version {found} as the latest (hint, then probing forward), but root "
                           f"version {latest} exists: a gap in the versions hides it"))
    return out


def verify(
    spark: SparkSession,
    location: str,
    *,
    storage_options: dict | None = None,
    progress: Any = None,
) -> VerifyReport:
    """Check every version of the lakehouse at ``location`` on Spark; read-only.

    Returns a :class:`trinitylake_dbapi.verify.VerifyReport` (``ok``, ``problems``,
    ``text()``) covering every root, every node any root reaches, every definition file
    any node references (``all_versions=True`` in the local verifier's terms), SPEC 2
    names of every file, the previous_root chain, and orphan files (warnings; at most
    MAX_ORPHANS_REPORTED listed). See the module docstring for how the work is split.
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
        top_level = rt.list_top_level(storage)
        problems: list[Problem] = []
        versions = sorted(v for v in (paths.parse_root_node_path(p) for p in top_level) if v is not None)
        for path in top_level:
            found = name_problem(path)
            if found is not None:
                problems.append(Problem(found[1], found[2], found[3], found[4]))
        report.versions = versions
        if not versions:
            report.problems = [Problem(paths.root_node_path(0), R_HISTORY,
                                       "no root node file: there is no lakehouse at this location")]
            return report
        report.latest_version = versions[-1]
        problems += _discovery_problems(storage, versions[-1])

        progress_.step(f"checking {len(versions)} root file(s)")
        ranges = rt.split_ranges(rt.version_ranges(versions), parallelism * 2)
        emitted = frame(sc.parallelize(ranges, max(1, min(len(ranges), parallelism * 4)))
                        .mapPartitions(_check_roots(loc)))
        parts = [emitted]
        report.roots_read = len(versions)
        seen = spark.createDataFrame([], T.StructType([T.StructField("path", T.StringType()),
                                                       T.StructField("a", T.StringType())]))
        depth = 1
        while True:
            pending = (emitted.filter(F.col("kind") == "child").select("path", "a").distinct()
                       .join(seen, ["path", "a"], "left_anti").localCheckpoint(eager=True))
            progress_.step(f"checking the node files at depth {depth}")
            ordered = pending.repartition(parallelism * 2, "path").sortWithinPartitions("path", "a")
            read = sc.accumulator(0)
            emitted = frame(ordered.rdd.mapPartitions(_check_nodes(loc, read)))
            if read.value == 0:
                break
            parts.append(emitted)
            seen = seen.union(pending)
            depth += 1
        report.nodes_read = seen.select("path").distinct().count()
        everything = parts[0]
        for part in parts[1:]:
            everything = everything.union(part)

        definitions = everything.filter(F.col("kind") == "definition").select("path", "a").distinct()
        definitions = definitions.repartition(parallelism * 2, "path").sortWithinPartitions("path", "a")
        report.definitions_read = definitions.select("path").distinct().count()
        progress_.step(f"checking {report.definitions_read} definition file(s)")
        checked_defs = frame(definitions.rdd.mapPartitions(_check_definitions(loc)))

        progress_.step(f"checking the names under {len(rt.PREFIX_DIRECTORIES)} path-prefix directories")
        prefixes = sc.parallelize(rt.PREFIX_DIRECTORIES, min(len(rt.PREFIX_DIRECTORIES), parallelism * 4))
        listed = frame(prefixes.mapPartitions(_check_names(loc)))
        top = spark.createDataFrame([("listed", p, None, None, None) for p in top_level if local.is_format_file(p)],
                                    _ROWS)
        all_listed = listed.filter(F.col("kind") == "listed").select("path").union(top.select("path"))
        report.files_listed = all_listed.count()

        progress_.step("collecting problems and orphans")
        results = everything.union(checked_defs).union(listed)
        reached = results.filter(F.col("kind") == "reached").select("path").distinct()
        orphans = all_listed.join(reached, "path", "left_anti").distinct()
        orphan_count = orphans.count()
        report.orphans = sorted(r["path"] for r in orphans.limit(MAX_ORPHANS_REPORTED).collect())
        for row in results.filter(F.col("kind") == "problem").distinct().collect():
            problems.append(Problem(row["path"], row["a"], row["b"], row["c"]))
        infos = {json.loads(r["a"])[0]: json.loads(r["a"]) for r in results.filter(F.col("kind") == "root").collect()}
        problems += _chain_problems(infos)
        report.definitions_read += len({info[5] for info in infos.values() if len(info) > 5 and info[5]})
        for path in report.orphans:
            problems.append(Problem(path, R_ORPHAN, "no root reaches this file (left by a lost commit race or a "
                                    "crashed writer; expiration removes it)", WARNING))
        if orphan_count > len(report.orphans):
            problems.append(Problem(loc.uri, R_ORPHAN, f"... and {orphan_count - len(report.orphans)} more orphan "
                                    "files", WARNING))
    problems.sort(key=lambda p: (p.severity != ERROR, p.path, p.rule, p.message))
    report.problems = problems
    return report
