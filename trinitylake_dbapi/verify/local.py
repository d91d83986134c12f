"""The local verifier: one process walks every version of a lakehouse and runs the
checks of :mod:`.rules` on every file it reaches.

Depth. Every root is read and checked, and every node that any root reaches is read
(orphans are only defined against every root) and checked once. Definition files are
parsed and matched against their keys for the latest version; with
``all_versions=True`` for every version, and K3 is checked for every version too.

Each file is read at most once, even when versions share subtrees: a node's checks that
depend only on the node's subtree are memoized (height, smallest and largest key in the
subtree), and a parent checks T2/T4 against a child's memo. The one exception is the
K3 check of a rollback version with ``all_versions=True``: its content is another
version's, recomputed by a merge-on-read scan (counted in ``extra_reads``).

T6 (recency) is checked with the ``txn`` tags, which this implementation sets to the
version that wrote a message (tags that are not decimal are reported once as a warning
and not compared): within a buffer the tags of one key never decrease; no tag exceeds
the version of the root it is reached from; along every path from the root of the
version that first reaches a node, a message is never older than one below it.
T7's "referenced once within a tree" follows from T3 and T4 (a non-root node holds a
key, and two open key ranges of one tree are disjoint); a node referenced twice by one
parent, or reached twice in one walk, or a cycle, is reported directly.

A key and its value that passed SPEC 2 and 3 (``rules.entry_problem``, a function of the
key, the value and the key codec only) are not checked again in another version's root:
consecutive roots repeat most of each other's entries (a test lakehouse of 2,000
versions checked 430,000 entries, ~40% of its verify). An entry with a problem is
checked, and reported, wherever it appears.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..errors import CorruptFileError, Error, MissingFileError
from ..format import keys as keyfmt
from ..format import paths
from ..format.definitions import LakehouseSettings
from ..format.nodefile import NodeFile, decode_node_file
from ..storage import Storage
from ..tree import TreeConfig, merge_messages, merge_node, node_entries, node_references, own_messages
from .report import (
    ERROR,
    MAX_PER_FILE_AND_RULE,
    R_CATALOG,
    R_LAYOUT,
    R_MISSING,
    WARNING,
    Problem,
    VerifyReport,
)
from . import rules

__all__ = ["LocalVerifier"]



@dataclass(frozen=True)
class _Summary:
    """What a parent needs to know about a child's subtree (memoized by path)."""

    height: int
    lo: str | None  # smallest key of the subtree, key tables and buffers alike
    hi: str | None


@dataclass
class _Ctx:
    """One version's walk."""

    version: int
    root_path: str
    config: TreeConfig
    codec: keyfmt.KeyCodec
    deep: bool  # parse definitions
    want_state: bool  # compute the merged key -> value map during the walk
    seen: set[str] = field(default_factory=set)
    state_complete: bool = True
    shared: bool = False  # reached a subtree checked with an earlier version


class LocalVerifier:
    """One verification from this process (see the module docstring)."""

    def __init__(
        self, storage: Storage, all_versions: bool, data: bool = False, storage_options: dict | None = None
    ) -> None:
        self.data = data
        self.storage_options = storage_options
        self._iceberg: Any = None  # iceberg.reach.IcebergReach, made when first needed
        self._tables_checked: set[str] = set()
        self.storage = storage
        self.all_versions = all_versions
        self.report = VerifyReport(storage.root_uri, all_versions)
        self._counts: dict[tuple[str, str], int] = {}
        self._listing: set[str] = set()
        self._reached: set[str] = set()
        self._nodes: dict[str, _Summary | None] = {}  # every non-root node read
        self._in_progress: set[str] = set()
        self._lakehouse_defs: dict[str, LakehouseSettings | None] = {}
        self._definitions: dict[str, tuple[str, str] | None] = {}  # path -> (kind, name)
        self._exists: dict[str, bool] = {}
        self._missing_reported: set[str] = set()
        #: (key, value, codec) -> the decoded key of an entry that passed entry_problem.
        self._valid_entries: dict[tuple[str, str | None, Any], keyfmt.ObjectKey] = {}
        self._fallback_settings: LakehouseSettings | None = None
        self._tags_warned = False
        #: (definition, metadata location, managed) of metadata files found missing, and
        #: the directories of tables that delete old metadata (iceberg.oldmetadata OM5).
        self._absent_metadata: list[tuple[str, str, bool]] = []
        self._deletion_prefixes: set[str] = set()

    # -- reporting ---------------------------------------------------------------------

    def problem(self, path: str, rule: str, message: str, severity: str = ERROR) -> None:
        key = (path, rule)
        n = self._counts.get(key, 0) + 1
        self._counts[key] = n
        if n <= MAX_PER_FILE_AND_RULE:
            self.report.problems.append(Problem(path, rule, message, severity))

    def add(self, problems: Iterable[Problem] | Problem | None) -> None:
        """Report problems found by the per-file checks."""
        if isinstance(problems, Problem):
            problems = (problems,)
        for p in problems or ():
            self.problem(p.path, p.rule, p.message, p.severity)

    def _summarise_floods(self) -> None:
        for (path, rule), n in self._counts.items():
            if n > MAX_PER_FILE_AND_RULE:
                severity = next(p.severity for p in self.report.problems
                                if p.path == path and p.rule == rule)
                self.report.problems.append(Problem(
                    path, rule, f"... and {n - MAX_PER_FILE_AND_RULE} more problems of this "
                    "rule in this file", severity))

    # -- the run -----------------------------------------------------------------------

    def run(self) -> VerifyReport:
        report = self.report
        listing = self.storage.list("", include_reserved=True)
        report.files_listed = len(listing)
        self._listing = set(listing)
        versions = self._check_names(listing)
        report.versions = versions
        if not versions:
            self.add(rules.no_lakehouse_problem())
            return report
        latest = versions[-1]
        report.latest_version = latest
        self.add(rules.discovery_problems(self.storage, latest))

        order = sorted(versions) if self.all_versions else [latest] + sorted(versions[:-1], reverse=True)
        infos: dict[int, rules.RootInfo] = {}
        state: dict[str, str] | None = None
        violations: set[str] = set()
        previous_checked: int | None = None
        for version in order:
            deep = self.all_versions or version == latest
            want_state = deep and (state is None or not self._continues(infos, version, previous_checked))
            info, new_state, codec = self._check_version(
                version, deep, want_state, state if deep else None
            )
            infos[version] = info
            if deep:
                state = new_state
                if state is not None:
                    violations = self._check_catalog(version, state, codec, violations)
                    if self.data:
                        self._check_tables(state, codec)
                previous_checked = version
        self.add(rules.chain_problems(versions, infos))
        self._judge_absent_metadata()
        self._check_orphans(listing)
        self._summarise_floods()
        return report

    @staticmethod
    def _continues(infos: dict[int, rules.RootInfo], version: int, previous: int | None) -> bool:
        """True if ``version``'s state is its predecessor's plus its own changes."""
        before = infos.get(version - 1)
        return previous == version - 1 and before is not None and before.ok

    # -- names (SPEC 2) ------------------------------------------------------------------

    def _check_names(self, listing: Iterable[str]) -> list[int]:
        versions = []
        for path in listing:
            version = paths.parse_root_node_path(path)
            if version is not None:
                versions.append(version)
            else:
                self.add(rules.name_problem(path))
        return sorted(versions)

    # -- lakehouse definitions -------------------------------------------------------------

    def _settings(self, def_path: str, root_path: str) -> LakehouseSettings | None:
        if def_path in self._lakehouse_defs:
            return self._lakehouse_defs[def_path]
        settings, problems, reached = rules.lakehouse_def_problems(
            def_path, root_path, self._read_definition, self._listing.__contains__)
        self.add(problems)
        self._reached.update(reached)
        self._lakehouse_defs[def_path] = settings
        if settings is not None:
            self._fallback_settings = self._fallback_settings or settings
        return settings

    def _read_definition(self, path: str) -> bytes:
        data = self.storage.read(path)
        self.report.definitions_read += 1
        return data

    # -- one version ---------------------------------------------------------------------------

    def _check_version(
        self, version: int, deep: bool, want_state: bool, state: dict[str, str] | None
    ) -> tuple[rules.RootInfo, dict[str, str] | None, keyfmt.KeyCodec | None]:
        """Check one root and walk its tree; returns the version's key -> value state
        when it is checked deeply and the state can be known."""
        root_path = paths.root_node_path(version)
        self._reached.add(root_path)
        info = rules.RootInfo(version, None, None, None, ok=False)
        try:
            data = self.storage.read(root_path)
        except MissingFileError:  # deleted since the listing (expiration running?)
            self.add(rules.vanished_root_problem(root_path))
            return info, None, None
        self.report.roots_read += 1
        try:
            root = decode_node_file(data, root_path)
        except CorruptFileError as e:
            self.problem(root_path, R_LAYOUT, e.reason)
            return info, None, None
        info.ok = True
        system = root.system
        info.previous = system.get(keyfmt.PREVIOUS_ROOT)
        info.rollback_from = system.get(keyfmt.ROLLBACK_FROM_ROOT)
        info.created_at = rules.root_created_at(system)
        problems, def_path = rules.root_problems(root_path, system)
        self.add(problems)
        settings = None
        if def_path is not None:
            self._reached.add(def_path)
            settings = self._settings(def_path, root_path)
        if settings is None:  # walk anyway (reachability), with the best settings known
            settings = self._fallback_settings or LakehouseSettings()
        config = rules.node_rules_config(settings.order, settings.buffer_capacity_bytes)
        codec = keyfmt.KeyCodec(settings.namespace_name_max_size_bytes,
                                settings.table_name_max_size_bytes)
        ctx = _Ctx(version, root_path, config, codec, deep, want_state)
        _, merged = self._visit(root_path, root, ctx, is_root=True, above={}, depth=0)

        if not deep:
            return info, None, codec
        if want_state:
            if ctx.state_complete:
                return info, merged, codec
            return info, (self._scan_state(root) if ctx.shared else None), codec
        if state is None:
            return info, None, codec
        if info.rollback_from is not None:  # content of an unknown earlier version
            return info, self._scan_state(root), codec
        own = str(version)  # T5: root v holds exactly version v's changes
        new_state = merge_messages(dict(state), own_messages(root, own))  # tree TW4
        return info, new_state, codec

    # -- nodes ---------------------------------------------------------------------------------

    def _visit(
        self, path: str, node: NodeFile, ctx: _Ctx, *, is_root: bool,
        above: dict[str, int], depth: int,
    ) -> tuple[_Summary, dict[str, str] | None]:
        """Check a freshly read node and, recursively, its unseen children."""
        self.add(rules.node_problems(path, node, ctx.config, is_root=is_root, version=ctx.version))
        k = len(node.keys)

        # Reachability as expiration counts it (tree TW2: shadowed and invalid pointers
        # included), so an orphan here is a file expiration would delete.
        self._reached.update(node_references(node).files())
        # SPEC 3 keys, definition pointers (tree TW1); T6 tags
        for key, value in node_entries(node):
            self._check_entry(path, key, value, ctx)
        last_tag: dict[str, int] = {}
        oldest: dict[str, int] = {}
        for message in node.buffer:
            tag = rules.txn_tag(message.txn)
            if tag is None:
                if message.txn is not None and not self._tags_warned:
                    self._tags_warned = True
                    self.problem(path, "T6", f"txn tag {message.txn!r} is not a version "
                                 "number; recency is not checked for such tags", WARNING)
                continue
            self.add(rules.tag_problems(path, message.key, tag, ctx.version, last_tag.get(message.key)))
            last_tag[message.key] = max(tag, last_tag.get(message.key, -1))
            oldest[message.key] = min(tag, oldest.get(message.key, tag))
            limit = above.get(message.key)
            if limit is not None and tag > limit:
                self.problem(path, "T6", f"message for {message.key!r} (txn {tag}) is newer "
                             f"than a message for it higher in the tree (txn {limit})")

        # children
        lo = node.keys[0] if node.keys else None
        hi = node.keys[-1] if node.keys else None
        for message in node.buffer:
            lo = message.key if lo is None or message.key < lo else lo
            hi = message.key if hi is None or message.key > hi else hi
        state: dict[str, str] | None = {} if ctx.want_state else None
        height = 1
        if node.children:
            below = self._constraints(node, above, oldest)
            heights: list[int] = []
            listed: set[str] = set()
            for index, child in enumerate(node.children):
                summary, child_state = self._child(path, index, child, ctx, listed, below, depth)
                if summary is None:
                    if state is not None:
                        ctx.state_complete = False
                    continue
                heights.append(summary.height)
                low = node.keys[index - 1] if index > 0 else None
                high = node.keys[index] if index < k else None
                if summary.lo is not None and (
                    (low is not None and summary.lo <= low) or (high is not None and summary.hi >= high)
                ):
                    self.problem(path, "T4", f"child {index} ({child}) holds keys "
                                 f"{summary.lo!r}..{summary.hi!r}, outside its range "
                                 f"({low!r}, {high!r})")
                if summary.lo is not None:
                    lo = summary.lo if lo is None or summary.lo < lo else lo
                    hi = summary.hi if hi is None or summary.hi > hi else hi
                if state is not None:
                    if child_state is None:
                        ctx.state_complete = False
                    else:
                        state.update(child_state)
            if len(set(heights)) > 1:
                self.problem(path, "T2", f"children have subtrees of heights {sorted(set(heights))}: "
                             "leaves are not all at one depth")
            height = 1 + max(heights, default=0)
        if state is not None:
            merge_node(state, node)  # tree TW3
        return _Summary(height, lo, hi), state

    @staticmethod
    def _constraints(node: NodeFile, above: dict[str, int], own: dict[str, int]) -> list[dict[str, int]]:
        """T6 limits for each child: the oldest tag of each key's messages above it."""
        buckets: list[dict[str, int]] = [{} for _ in node.children]
        for source in (above, own):
            for key, tag in source.items():
                index = bisect.bisect_left(node.keys, key)
                if index < len(node.keys) and node.keys[index] == key:
                    continue  # a separator: nothing below may hold it (T4)
                if index < len(buckets):
                    bucket = buckets[index]
                    bucket[key] = min(tag, bucket.get(key, tag))
        return buckets

    def _child(
        self, parent: str, index: int, child: str, ctx: _Ctx, listed: set[str],
        below: list[dict[str, int]], depth: int,
    ) -> tuple[_Summary | None, dict[str, str] | None]:
        problem = rules.child_problem(parent, index, child, listed)
        if problem is not None:
            self.add(problem)
            return None, None
        if child in self._in_progress:
            self.problem(parent, "T7", f"child {child} is an ancestor of this node (a cycle)")
            return None, None
        if child in ctx.seen:
            self.problem(parent, "T7", f"child {child} is referenced twice in version {ctx.version}")
            return None, None
        ctx.seen.add(child)
        if child in self._nodes:
            ctx.shared = True
            return self._nodes[child], None  # shared with a version already checked
        if depth + 1 > rules.MAX_DEPTH:
            self.problem(parent, "T2", f"the tree is deeper than {rules.MAX_DEPTH} levels at {child}")
            self._nodes[child] = None
            return None, None
        self._nodes[child] = None  # read once, whatever happens
        try:
            data = self.storage.read(child)
        except MissingFileError:
            self.add(rules.missing_node_problem(child, parent, index))
            return None, None
        self.report.nodes_read += 1
        try:
            node = decode_node_file(data, child)
        except CorruptFileError as e:
            self.problem(child, R_LAYOUT, e.reason)
            return None, None
        self._in_progress.add(child)
        try:
            summary, state = self._visit(child, node, ctx, is_root=False,
                                         above=below[index], depth=depth + 1)
        finally:
            self._in_progress.discard(child)
        self._nodes[child] = summary
        return summary, state

    # -- keys and definitions --------------------------------------------------------------

    def _check_entry(self, path: str, key: str, value: str | None, ctx: _Ctx) -> None:
        """A key with its value, the path of the object's definition file (None for a
        delete message)."""
        memo = (key, value, ctx.codec)
        decoded = self._valid_entries.get(memo)
        if decoded is None:
            decoded, problem = rules.entry_problem(path, key, value, ctx.codec)
            self.add(problem)
            if decoded is not None and problem is None:
                self._valid_entries[memo] = decoded
        if decoded is None or value is None:
            return
        kind = decoded.kind
        if not ctx.deep:
            if not self._file_exists(value) and value not in self._missing_reported:
                self._missing_reported.add(value)
                self.add(rules.missing_definition_problem(value, kind, rules.describe(decoded), path))
            return
        found = self._definition(value, kind, path, decoded)
        if found is not None:
            expected = decoded.namespace if kind == "namespace" else decoded.table
            self.add(rules.definition_use_problem(value, *found, kind, expected, path, rules.describe(decoded)))

    def _file_exists(self, path: str) -> bool:
        if path in self._listing:
            return True
        if path not in self._exists:
            self._exists[path] = self.storage.exists(path)
        return self._exists[path]

    def _definition(
        self, path: str, kind: str, referrer: str, decoded: keyfmt.ObjectKey
    ) -> tuple[str, str] | None:
        if path in self._definitions:
            return self._definitions[path]
        name, problem = rules.definition_problem(path, kind, self._read_definition, referrer,
                                                 rules.describe(decoded))
        self.add(problem)
        if problem is not None and problem.rule == R_MISSING:
            self._missing_reported.add(path)
        self._definitions[path] = None if name is None else (kind, name)
        return self._definitions[path]

    # -- K3 --------------------------------------------------------------------------------------

    def _check_catalog(
        self, version: int, state: dict[str, str], codec: keyfmt.KeyCodec | None, before: set[str]
    ) -> set[str]:
        """Every table key's namespace exists; reports keys not already reported."""
        if codec is None:
            return set()
        namespaces: set[str] = set()
        tables: list[tuple[str, keyfmt.ObjectKey]] = []
        for key in state:
            try:
                decoded = codec.decode(key)
            except ValueError:
                continue  # reported as SPEC 3 where the key is stored
            if decoded.kind == "namespace":
                namespaces.add(decoded.namespace)
            else:
                tables.append((key, decoded))
        bad = set()
        for key, decoded in tables:
            if decoded.namespace not in namespaces:
                bad.add(key)
                if key not in before:
                    self.problem(paths.root_node_path(version), R_CATALOG,
                                 f"version {version}: table {rules.describe(decoded)} (definition "
                                 f"{state[key]}) is in namespace {decoded.namespace!r}, which "
                                 "does not exist")
        return bad

    def _scan_state(self, root: NodeFile) -> dict[str, str] | None:
        """Merge-on-read of a whole version (a rollback's content), re-reading nodes."""
        def scan(node: NodeFile, depth: int) -> dict[str, str] | None:
            out: dict[str, str] = {}
            if depth > rules.MAX_DEPTH:
                return None
            for child in node.children:
                try:
                    data = self.storage.read(child)
                    self.report.extra_reads += 1
                    sub = scan(decode_node_file(data, child), depth + 1)
                except (Error, ValueError):
                    return None
                if sub is None:
                    return None
                out.update(sub)
            merge_node(out, node)  # tree TW3
            return out

        return scan(root, 0)

    # -- SPEC 8: the tables' Iceberg metadata and data ----------------------------------------

    def _check_tables(self, state: dict[str, str], codec: keyfmt.KeyCodec | None) -> None:
        """SPEC 8 for every table of one version's ``state`` (key -> definition path;
        verify.tables VT1)."""
        from ..iceberg.reach import IcebergReach
        from .tables import check_table

        for key, path in sorted(state.items()):
            if path in self._tables_checked or codec is None:
                continue
            self._tables_checked.add(path)
            try:
                decoded = codec.decode(key)
            except ValueError:
                continue  # reported as SPEC 3 where the key is stored
            if decoded.kind != "table":
                continue
            if self._iceberg is None:
                self._iceberg = IcebergReach(self.storage_options)
            check = check_table(path, f"{decoded.namespace}.{decoded.table}", self._read_definition,
                                self._file_exists, self.storage.root_uri, self._iceberg, self.storage_options)
            for problem in check.problems:
                self.problem(problem.path, problem.rule, problem.message, problem.severity)
            if check.absent is not None:
                self._absent_metadata.append(check.absent)
            self._deletion_prefixes |= check.deletes

    def _judge_absent_metadata(self) -> None:
        """verify.tables VT2, once every table is known."""
        from .tables import absent_metadata_problem

        for path, location, managed in self._absent_metadata:
            found = absent_metadata_problem(path, location, managed, self._deletion_prefixes)
            self.problem(found.path, found.rule, found.message, found.severity)

    # -- orphans ---------------------------------------------------------------------------------

    def _check_orphans(self, listing: list[str]) -> None:
        from ..maintenance import is_expirable_file

        for path in listing:
            if path not in self._reached and is_expirable_file(path):
                self.report.orphans.append(path)
                self.add(rules.orphan_problem(path))
