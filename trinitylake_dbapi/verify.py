"""Verify a lakehouse: every SPEC rule on every reachable file, and orphan files.

``verify(location)`` reads the lakehouse without writing anything and returns a
:class:`VerifyReport` listing every :class:`Problem` found, each naming the file and the
rule it breaks. Lakehouse problems never raise; only a location that cannot be opened or
a storage call that fails for another reason than a missing file does.

What is checked (``rule`` of the problems in brackets):

  [SPEC 2]  every file name: root node files, lakehouse definitions and optimised paths
            (the 20-bit MurmurHash3 prefix must match the rest of the name); every
            pointer stored in a file (child, definition, previous_root, ...) must be a
            clean relative path of the right kind. A top-level file that looks like a
            format file but is not one is a warning.
  [SPEC 3]  every key in every node decodes (names valid for the lakehouse's limits);
            system rows are where SPEC 3 puts them.
  [SPEC 4]  every node file decodes (Arrow IPC, schema, row layout, ``n_keys``) and its
            key table has the lakehouse's order.
  [T1-T8]   the tree invariants of ``tree.py`` for every node reached (T6 partially:
            within a buffer, and along every root-to-node path of a freshly read
            subtree; see below).
  [SPEC 5]  definition files parse, hold only SPEC 5 fields, their columns are valid,
            their path has the right shape, and the name inside equals the name in the
            key; the lakehouse definition parses.
  [SPEC 5 major_version]  a lakehouse definition of an unknown major version.
  [K3]      every table key's namespace exists in the same version (catalog rule K3).
  [SPEC 7]  the previous_root chain (version v names root v-1, version 0 none),
            rollback_from_root, created_at_millis never decreasing, versions that
            readers cannot find (a gap above the probed latest), exported snapshots that
            point at missing roots, and the latest-version hint (warnings only: it is a
            hint).
  [SPEC 8]  (with ``data=True``) every table of a deeply checked version whose definition
            names an Iceberg metadata file: the file exists and parses, and the
            definition's columns mirror its current schema (field ids, names, types,
            nullability, comments; iceberg.schema S1); then every file that metadata
            reaches (iceberg.reach R1: manifest lists, manifests, data, delete and
            statistics files) exists.
  [missing] a file that a reachable file points at does not exist.
  [orphan]  (warning) a format file that no root reaches, or a ``.tl-*`` temp file: left
            by a lost commit race or a crashed writer, removed by version expiration.

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
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable


from .errors import (
    CorruptFileError,
    Error,
    InvalidLocationError,
    MissingFileError,
    UnsupportedFormatError,
)
from .format import keys as keyfmt
from .format import paths
from .format.definitions import (
    LakehouseSettings,
    decode_lakehouse_def,
    decode_namespace_def,
    decode_table_def,
)
from .format.nodefile import NodeFile, decode_node_file
from .format.types import from_proto_columns
from .storage import Storage
from .tree import TreeConfig, node_violations

__all__ = [
    "Problem", "VerifyReport", "verify", "RULES",
    # the per-file checks, shared with trinitylake_dbapi.spark.verification
    "txn_tag", "describe", "optimized_problem", "pointer_problem", "name_problem",
    "root_problems", "root_created_at", "lakehouse_def_problems", "node_problems",
    "entry_problem", "tag_problems", "child_problem", "definition_problem",
    "definition_use_problem", "discovery_problems", "RootInfo", "chain_problems",
]

ERROR = "error"
WARNING = "warning"

R_NAMES = "SPEC 2"
R_KEYS = "SPEC 3"
R_LAYOUT = "SPEC 4"
R_DEFINITION = "SPEC 5"
R_MAJOR = "SPEC 5 major_version"
R_HISTORY = "SPEC 7"
R_CATALOG = "K3"
R_ICEBERG = "SPEC 8"
R_MISSING = "missing"
R_ORPHAN = "orphan"
#: Every rule a problem can name.
RULES = (
    R_NAMES, R_KEYS, R_LAYOUT, R_DEFINITION, R_MAJOR, R_HISTORY, R_CATALOG, R_MISSING,
    R_ORPHAN, "T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8",
)

#: Problems reported per (file, rule) before the rest are summarised in one line.
MAX_PER_FILE_AND_RULE = 5
#: Deeper than this, a chain of child pointers is reported instead of followed.
MAX_DEPTH = 64

_ROOT_SYSTEM_KEYS = frozenset({keyfmt.LAKEHOUSE_DEF, keyfmt.PREVIOUS_ROOT, keyfmt.ROLLBACK_FROM_ROOT})
_NODE_SYSTEM_KEYS = frozenset({keyfmt.CREATED_AT_MILLIS, keyfmt.N_KEYS})


@dataclass(frozen=True)
class Problem:
    """One violation: the file it is in, the rule it breaks, and what is wrong."""

    path: str
    rule: str
    message: str
    severity: str = ERROR

    def __str__(self) -> str:
        return f"{self.severity.upper()} [{self.rule}] {self.path}: {self.message}"


@dataclass
class VerifyReport:
    """The outcome of :func:`verify`. ``ok`` is True when there is no error (warnings,
    e.g. orphan files, do not make a lakehouse invalid)."""

    location: str
    all_versions: bool
    latest_version: int | None = None
    versions: list[int] = field(default_factory=list)  # every root found, ascending
    problems: list[Problem] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    files_listed: int = 0
    roots_read: int = 0
    nodes_read: int = 0
    definitions_read: int = 0
    extra_reads: int = 0

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        versions = (
            f"versions {self.versions[0]}..{self.versions[-1]} ({len(self.versions)} roots)"
            if self.versions else "no versions"
        )
        return (
            f"{'OK' if self.ok else 'INVALID'}: {self.location}: {versions}, "
            f"{self.nodes_read} nodes, {self.definitions_read} definition files read; "
            f"{len(self.errors)} errors, {len(self.warnings)} warnings, "
            f"{len(self.orphans)} orphan files"
        )

    def text(self) -> str:
        """The report as lines of text: every problem, then the summary."""
        return "\n".join([*map(str, self.problems), self.summary()])


def verify(
    location_or_lakehouse: Any,
    *,
    all_versions: bool = False,
    storage_options: dict | None = None,
    data: bool = False,
) -> VerifyReport:
    """Check the lakehouse at a location (a root URI, a Storage, a Lakehouse or a
    LakehouseCatalog) and return every problem found. Reads only; never writes. With
    ``data``, also the tables' Iceberg metadata and every file it reaches (SPEC 8)."""
    storage = _storage_of(location_or_lakehouse, storage_options)
    options = getattr(location_or_lakehouse, "storage_options", None) or storage_options
    return _Verifier(storage, all_versions, data, options).run()


def _storage_of(target: Any, storage_options: dict | None) -> Storage:
    if isinstance(target, Storage):
        return target
    if isinstance(target, str):
        return Storage(target, storage_options)
    storage = getattr(target, "storage", None)
    if isinstance(storage, Storage):
        return storage
    raise TypeError(
        "verify() takes a root URI, a Storage, a Lakehouse or a LakehouseCatalog, "
        f"not {type(target).__name__}"
    )


# ---------------------------------------------------------------------------
# Per-file checks, shared with the Spark verifier (pure: no storage, no state;
# the few that need a file's bytes take the read function as an argument)
# ---------------------------------------------------------------------------


def txn_tag(txn: str | None) -> int | None:
    """A message's ``txn`` tag as a version number, or None when it is not decimal."""
    return int(txn) if txn is not None and txn.isascii() and txn.isdigit() else None


#: An object key as problems name it (the key codec's rendering).
describe = keyfmt.describe


def node_rules_config(order: int, buffer_capacity_bytes: int) -> TreeConfig:
    """What the node rules (:func:`node_problems`) check a node against, for a tree of
    ``order`` (at least 3, as a writer's) and buffer capacity (at least 1)."""
    return TreeConfig(max(3, order), max(1, buffer_capacity_bytes))


def optimized_problem(path: str, kind: str | None) -> str | None:
    """Why ``path`` is not an optimised path (of ``kind``, if given), or None (SPEC 2)."""
    parts = paths.split_optimized_path(path)
    if parts is None:
        return "not an optimised path ('bbbb/bbbb/bbbb/bbbbbbbb-<original>')"
    bits, rest = parts
    want = paths.hash_prefix_bits(rest)
    if bits != want:
        return (f"optimised prefix {bits} is not the first 20 bits of the MurmurHash3 "
                f"of {rest!r} ({want})")
    kinds = [kind] if kind else list(paths.ORIGINAL_NAME_SHAPES)
    if not any(paths.ORIGINAL_NAME_SHAPES[k].fullmatch(rest) for k in kinds):
        return (f"original name {rest!r} is not "
                + " or ".join(repr(paths.ORIGINAL_NAME_FORMS[k]) for k in kinds))
    return None


def pointer_problem(pointer: Any, kind: str) -> str | None:
    """Why a path stored in a file is not a valid pointer to a file of ``kind`` (SPEC 2):
    ``root``, ``lakehouse_def``, ``node``, ``namespace`` or ``table``."""
    if not isinstance(pointer, str):
        return f"{pointer!r} is not a path"
    try:
        paths.check_relative_path(pointer)
    except InvalidLocationError as e:
        return str(e)
    if kind == "root":
        return None if paths.parse_root_node_path(pointer) is not None else \
            f"{pointer!r} is not a root node file name"
    if kind == "lakehouse_def":
        return None if paths.is_lakehouse_def_path(pointer) else \
            f"{pointer!r} is not a lakehouse definition file name"
    problem = optimized_problem(pointer, kind)
    return None if problem is None else f"{pointer!r}: {problem}"


def name_problem(path: str) -> Problem | None:
    """The SPEC 2 problem of a listed file's name, if any."""
    if paths.parse_root_node_path(path) is not None:
        return None
    if path == paths.LATEST_HINT_PATH or paths.is_lakehouse_def_path(path):
        return None
    parts = paths.split_optimized_path(path)
    if parts is not None and paths.claimed_name_kind(parts[1]) is not None:
        why = optimized_problem(path, None)
        return Problem(path, R_NAMES, why) if why else None
    if "/" not in path and path.startswith("_") and path.endswith((".arrow", ".binpb")):
        return Problem(path, R_NAMES, "looks like a root node or lakehouse definition "
                       "file but its name does not follow SPEC 2; readers ignore it", WARNING)
    return None


def no_lakehouse_problem() -> Problem:
    """The one problem of a location without any root node file."""
    return Problem(paths.root_node_path(0), R_HISTORY,
                   "no root node file: there is no lakehouse at this location")


def orphan_problem(path: str) -> Problem:
    return Problem(path, R_ORPHAN, "no root reaches this file (left by a lost commit race "
                   "or a crashed writer; expiration removes it)", WARNING)


def vanished_root_problem(path: str) -> Problem:
    return Problem(path, R_MISSING, "root node file vanished during verification")


def missing_node_problem(path: str, parent: str, index: int) -> Problem:
    return Problem(path, R_MISSING, f"node file referenced by {parent} (child {index}) "
                   "does not exist")


def root_problems(path: str, system: dict[str, str]) -> tuple[list[Problem], str | None]:
    """SPEC 2/3 checks of a root's own system rows (previous_root, rollback_from_root,
    lakehouse_def); returns the problems and the lakehouse definition's path when it is
    a valid pointer."""
    out: list[Problem] = []
    for key in (keyfmt.PREVIOUS_ROOT, keyfmt.ROLLBACK_FROM_ROOT):
        if key in system:
            why = pointer_problem(system[key], "root")
            if why:
                out.append(Problem(path, R_NAMES, f"system row {key}: {why}"))
    def_path = system.get(keyfmt.LAKEHOUSE_DEF)
    if def_path is None:
        out.append(Problem(path, R_KEYS, "root node without a lakehouse_def system row"))
        return out, None
    why = pointer_problem(def_path, "lakehouse_def")
    if why:
        out.append(Problem(path, R_NAMES, f"system row lakehouse_def: {why}"))
        return out, None
    return out, def_path


def root_created_at(system: dict[str, str]) -> int | None:
    """A root's created_at_millis, or None when missing or not a number (T8)."""
    created = system.get(keyfmt.CREATED_AT_MILLIS)
    return int(created) if created is not None and created.isascii() and created.isdigit() else None


def lakehouse_def_problems(
    def_path: str, root_path: str, read: Callable[[str], bytes], exists: Callable[[str], bool],
) -> tuple[LakehouseSettings | None, list[Problem], list[str]]:
    """Read and check the lakehouse definition a root names (SPEC 5) and the roots its
    exported snapshots point at; returns the settings (None when unusable), the
    problems, and the roots the snapshots reach."""
    out: list[Problem] = []
    reached: list[str] = []
    try:
        settings = LakehouseSettings.from_proto(decode_lakehouse_def(read(def_path), def_path))
    except MissingFileError:
        out.append(Problem(def_path, R_MISSING, f"the lakehouse definition named by "
                           f"{root_path} does not exist"))
        return None, out, reached
    except UnsupportedFormatError as e:
        out.append(Problem(def_path, R_MAJOR, str(e)))
        return None, out, reached
    except CorruptFileError as e:
        out.append(Problem(def_path, R_DEFINITION, e.reason))
        return None, out, reached
    for name, target in sorted(settings.exported_snapshots.items()):
        why = pointer_problem(target, "root")
        if why:
            out.append(Problem(def_path, R_NAMES, f"exported snapshot {name!r}: {why}"))
            continue
        reached.append(target)
        if not exists(target):
            out.append(Problem(def_path, R_MISSING, f"exported snapshot {name!r} "
                               f"points at root {target}, which does not exist"))
    return settings, out, reached


def node_problems(
    path: str, node: NodeFile, config: TreeConfig, *, is_root: bool, version: int | None,
) -> list[Problem]:
    """The checks of one node on its own: the tree's rules for a node (SPEC 4 order, T1,
    T3, T8, T5; ``version``: the root's own version, whose messages a root may hold
    beyond the capacity), and SPEC 3's system rows."""
    rules = node_violations(node, config, is_root=is_root,
                            own_txn=None if version is None else str(version))
    out = [Problem(path, rule, message) for rule, message in rules if rule != "T5"]
    for name in node.system:
        if name in _NODE_SYSTEM_KEYS or (is_root and name in _ROOT_SYSTEM_KEYS):
            continue
        if name in _ROOT_SYSTEM_KEYS:
            out.append(Problem(path, R_KEYS, f"system row {name!r} belongs in a root node only"))
        else:
            out.append(Problem(path, R_KEYS, f"unknown system row {name!r}", WARNING))
    out.extend(Problem(path, rule, message) for rule, message in rules if rule == "T5")
    return out


def entry_problem(
    path: str, key: str, value: str | None, codec: keyfmt.KeyCodec,
) -> tuple[keyfmt.ObjectKey | None, Problem | None]:
    """A key of a node (SPEC 3) and its value, the path of the object's definition file
    (SPEC 2; None for a delete message): the decoded key when both are valid, else the
    problem."""
    try:
        decoded = codec.decode(key)
    except ValueError as e:
        return None, Problem(path, R_KEYS, str(e))
    if value is not None:
        why = pointer_problem(value, decoded.kind)
        if why:
            return None, Problem(path, R_NAMES, f"value of {decoded.kind} {describe(decoded)}: {why}")
    return decoded, None


def tag_problems(path: str, key: str, tag: int, version: int | None, last: int | None) -> list[Problem]:
    """T6 for one buffered message: not newer than the ``version`` that reaches the
    node (if known), not older than the ``last`` tag of an earlier message for the key
    in the same buffer."""
    out: list[Problem] = []
    if version is not None and tag > version:
        out.append(Problem(path, "T6", f"message for {key!r} has txn {tag}, newer "
                           f"than version {version} that reaches this node"))
    if last is not None and tag < last:
        out.append(Problem(path, "T6", f"messages for {key!r} are not in the order "
                           f"they were applied (txn {tag} after {last})"))
    return out


def child_problem(path: str, index: int, child: Any, listed: set[str]) -> Problem | None:
    """SPEC 2 and T7 for child pointer ``index`` of a node: a node file path, not
    referenced twice by the node (``listed``: the children seen so far, updated)."""
    why = pointer_problem(child, "node")
    if why:
        return Problem(path, R_NAMES, f"child {index}: {why}")
    if child in listed:
        return Problem(path, "T7", f"child {child} is referenced twice by this node")
    listed.add(child)
    return None


def missing_definition_problem(path: str, kind: str, described: str, referrer: str) -> Problem:
    return Problem(path, R_MISSING, f"definition of {kind} {described} "
                   f"(referenced by {referrer}) does not exist")


def definition_problem(
    path: str, kind: str, read: Callable[[str], bytes], referrer: str, described: str,
) -> tuple[str | None, Problem | None]:
    """Read and parse an object definition file (SPEC 5) of ``kind``: the object's name,
    or the problem (``referrer`` and ``described``: the node and key that name it)."""
    try:
        data = read(path)
    except MissingFileError:
        return None, missing_definition_problem(path, kind, described, referrer)
    try:
        if kind == "namespace":
            message: Any = decode_namespace_def(data, path)
        else:
            message = decode_table_def(data, path)
            from_proto_columns(message.schema.columns)
    except CorruptFileError as e:
        return None, Problem(path, R_DEFINITION, e.reason)
    except Error as e:  # columns that break SPEC 5 (types, parameters, ids)
        return None, Problem(path, R_DEFINITION, f"invalid table definition: {e}")
    return message.name, None


def definition_use_problem(
    path: str, found_kind: str, found_name: str, kind: str, name: str, referrer: str,
    described: str,
) -> Problem | None:
    """SPEC 5: a definition of ``found_kind`` holding ``found_name`` is used by a key in
    ``referrer`` for the ``kind`` object ``name``."""
    if found_kind != kind:
        return Problem(path, R_DEFINITION, f"is a {found_kind} definition but {referrer} "
                       f"uses it for {kind} {described}")
    if found_name != name:
        return Problem(path, R_DEFINITION, f"holds {kind} name {found_name!r} but its key in "
                       f"{referrer} is for {kind} {described}")
    return None


def discovery_problems(storage: Storage, latest: int) -> list[Problem]:
    """SPEC 7 version discovery: the latest-version hint (warnings only: it is a hint),
    and whether readers find ``latest``, the newest root listed."""
    out: list[Problem] = []
    hint_path = paths.LATEST_HINT_PATH
    try:
        data = storage.read(hint_path)
    except MissingFileError:
        out.append(Problem(hint_path, R_HISTORY, "the latest-version hint is missing; readers "
                           "probe from version 0", WARNING))
    else:
        hint = paths.decode_hint(data)
        if hint is None:
            out.append(Problem(hint_path, R_HISTORY, f"the latest-version hint holds "
                               f"{bytes(data[:40])!r}, not a version; readers probe from "
                               "version 0", WARNING))
        elif hint > latest:
            out.append(Problem(hint_path, R_HISTORY, f"the hint says version {hint} but the "
                               f"latest root is version {latest}", WARNING))
    from .lakehouse import Lakehouse

    found = Lakehouse(storage).find_latest()
    if found != latest:
        out.append(Problem(paths.root_node_path(latest), R_HISTORY,
                           f"readers find version {found} as the latest (hint, then probing "
                           f"forward), but root version {latest} exists: a gap in the "
                           "versions hides it"))
    return out


@dataclass
class RootInfo:
    """What the history checks need from one root."""

    version: int
    created_at: int | None
    previous: str | None
    rollback_from: str | None
    ok: bool  # the root file decoded


def chain_problems(versions: list[int], infos: dict[int, RootInfo]) -> list[Problem]:
    """SPEC 7 history over every root listed (ascending): the previous_root chain,
    rollback_from_root, created_at_millis order, and gaps (warnings)."""
    out: list[Problem] = []
    present = set(versions)
    gaps: list[tuple[int, int]] = []
    for version in versions:
        info = infos.get(version)
        if info is None or not info.ok:
            continue  # unreadable: reported already
        path = paths.root_node_path(version)
        expected = paths.root_node_path(version - 1) if version > 0 else None
        if version == 0:
            if info.previous is not None:
                out.append(Problem(path, R_HISTORY, f"version 0 has previous_root {info.previous}"))
        elif info.previous is None:
            out.append(Problem(path, R_HISTORY, f"version {version} has no previous_root "
                               f"(expected {expected})"))
        elif info.previous != expected:
            out.append(Problem(path, R_HISTORY, f"previous_root is {info.previous}, expected "
                               f"{expected} (version {version - 1})"))
        if info.rollback_from is not None and info.rollback_from != expected:
            out.append(Problem(path, R_HISTORY, f"rollback_from_root is {info.rollback_from}, "
                               f"expected {expected} (version {version - 1})"))
        if version > versions[0] and version - 1 not in present:
            start = max(v for v in versions if v < version) + 1
            gaps.append((start, version - 1))
        before = infos.get(version - 1)
        if (before is not None and before.created_at is not None
                and info.created_at is not None and info.created_at < before.created_at):
            out.append(Problem(path, R_HISTORY, f"created_at_millis {info.created_at} is before "
                               f"version {version - 1}'s {before.created_at}"))
    for start, end in gaps:
        span = f"version {start}" if start == end else f"versions {start}..{end}"
        out.append(Problem(paths.root_node_path(end + 1), R_HISTORY, f"{span} missing below "
                           f"version {end + 1} (expired with per-version overrides, or lost)",
                           WARNING))
    return out


def _merge(state: dict[str, str], node: NodeFile) -> None:
    """Merge-on-read of one node over its children's merged ``state``: its key table,
    then its buffered messages in the order they were applied."""
    state.update(zip(node.keys, node.values))
    for message in node.buffer:
        if message.value is None:
            state.pop(message.key, None)
        else:
            state[message.key] = message.value


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


class _Verifier:
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
        self._fallback_settings: LakehouseSettings | None = None
        self._tags_warned = False

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
            self.add(no_lakehouse_problem())
            return report
        latest = versions[-1]
        report.latest_version = latest
        self.add(discovery_problems(self.storage, latest))

        order = sorted(versions) if self.all_versions else [latest] + sorted(versions[:-1], reverse=True)
        infos: dict[int, RootInfo] = {}
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
        self.add(chain_problems(versions, infos))
        self._check_orphans(listing)
        self._summarise_floods()
        return report

    @staticmethod
    def _continues(infos: dict[int, RootInfo], version: int, previous: int | None) -> bool:
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
                self.add(name_problem(path))
        return sorted(versions)

    # -- lakehouse definitions -------------------------------------------------------------

    def _settings(self, def_path: str, root_path: str) -> LakehouseSettings | None:
        if def_path in self._lakehouse_defs:
            return self._lakehouse_defs[def_path]
        settings, problems, reached = lakehouse_def_problems(
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
    ) -> tuple[RootInfo, dict[str, str] | None, keyfmt.KeyCodec | None]:
        """Check one root and walk its tree; returns the version's key -> value state
        when it is checked deeply and the state can be known."""
        root_path = paths.root_node_path(version)
        self._reached.add(root_path)
        info = RootInfo(version, None, None, None, ok=False)
        try:
            data = self.storage.read(root_path)
        except MissingFileError:  # deleted since the listing (expiration running?)
            self.add(vanished_root_problem(root_path))
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
        info.created_at = root_created_at(system)
        problems, def_path = root_problems(root_path, system)
        self.add(problems)
        settings = None
        if def_path is not None:
            self._reached.add(def_path)
            settings = self._settings(def_path, root_path)
        if settings is None:  # walk anyway (reachability), with the best settings known
            settings = self._fallback_settings or LakehouseSettings()
        config = node_rules_config(settings.order, settings.buffer_capacity_bytes)
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
        new_state = dict(state)
        for message in root.buffer:  # T5: root v holds exactly version v's changes
            if message.txn == str(version):
                if message.value is None:
                    new_state.pop(message.key, None)
                else:
                    new_state[message.key] = message.value
        return info, new_state, codec

    # -- nodes ---------------------------------------------------------------------------------

    def _visit(
        self, path: str, node: NodeFile, ctx: _Ctx, *, is_root: bool,
        above: dict[str, int], depth: int,
    ) -> tuple[_Summary, dict[str, str] | None]:
        """Check a freshly read node and, recursively, its unseen children."""
        self.add(node_problems(path, node, ctx.config, is_root=is_root, version=ctx.version))
        k = len(node.keys)

        # SPEC 3 keys, definition pointers; T6 tags
        for key, value in zip(node.keys, node.values):
            self._check_entry(path, key, value, ctx)
        last_tag: dict[str, int] = {}
        oldest: dict[str, int] = {}
        for message in node.buffer:
            self._check_entry(path, message.key, message.value, ctx)
            tag = txn_tag(message.txn)
            if tag is None:
                if message.txn is not None and not self._tags_warned:
                    self._tags_warned = True
                    self.problem(path, "T6", f"txn tag {message.txn!r} is not a version "
                                 "number; recency is not checked for such tags", WARNING)
                continue
            self.add(tag_problems(path, message.key, tag, ctx.version, last_tag.get(message.key)))
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
            _merge(state, node)
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
        problem = child_problem(parent, index, child, listed)
        if problem is not None:
            self.add(problem)
            return None, None
        self._reached.add(child)
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
        if depth + 1 > MAX_DEPTH:
            self.problem(parent, "T2", f"the tree is deeper than {MAX_DEPTH} levels at {child}")
            self._nodes[child] = None
            return None, None
        self._nodes[child] = None  # read once, whatever happens
        try:
            data = self.storage.read(child)
        except MissingFileError:
            self.add(missing_node_problem(child, parent, index))
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
        decoded, problem = entry_problem(path, key, value, ctx.codec)
        self.add(problem)
        if decoded is None or value is None:
            return
        kind = decoded.kind
        self._reached.add(value)
        if not ctx.deep:
            if not self._file_exists(value) and value not in self._missing_reported:
                self._missing_reported.add(value)
                self.add(missing_definition_problem(value, kind, describe(decoded), path))
            return
        found = self._definition(value, kind, path, decoded)
        if found is not None:
            expected = decoded.namespace if kind == "namespace" else decoded.table
            self.add(definition_use_problem(value, *found, kind, expected, path, describe(decoded)))

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
        name, problem = definition_problem(path, kind, self._read_definition, referrer,
                                           describe(decoded))
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
                                 f"version {version}: table {describe(decoded)} (definition "
                                 f"{state[key]}) is in namespace {decoded.namespace!r}, which "
                                 "does not exist")
        return bad

    def _scan_state(self, root: NodeFile) -> dict[str, str] | None:
        """Merge-on-read of a whole version (a rollback's content), re-reading nodes."""
        def scan(node: NodeFile, depth: int) -> dict[str, str] | None:
            out: dict[str, str] = {}
            if depth > MAX_DEPTH:
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
            _merge(out, node)
            return out

        return scan(root, 0)

    # -- SPEC 8: the tables' Iceberg metadata and data ----------------------------------------

    def _check_tables(self, state: dict[str, str], codec: keyfmt.KeyCodec | None) -> None:
        """SPEC 8 for every table of one version's ``state`` (key -> definition path)."""
        for key, path in sorted(state.items()):
            if path in self._tables_checked or codec is None:
                continue
            self._tables_checked.add(path)
            try:
                if codec.decode(key).kind != "table":
                    continue
                definition = decode_table_def(self._read_definition(path), path)
                columns = from_proto_columns(definition.schema.columns)
            except (Error, ValueError):
                continue  # reported as SPEC 3 or SPEC 5 where the key or file is checked
            location = definition.format_properties.get(paths.METADATA_LOCATION)
            if location:
                self._check_table(path, location, columns)

    def _check_table(self, path: str, location: str, columns: list) -> None:
        from .iceberg.reach import IcebergReach
        from .iceberg.schema import mirror_disagreement

        if self._iceberg is None:
            self._iceberg = IcebergReach(self.storage_options)
        try:
            metadata = self._iceberg.metadata(location)
        except FileNotFoundError:
            self.problem(path, R_MISSING, f"the Iceberg metadata file {location} it names does not exist")
            return
        except (OSError, ValueError) as e:
            self.problem(path, R_ICEBERG, f"the Iceberg metadata file {location} it names cannot be read: {e}")
            return
        disagreement = mirror_disagreement(columns, metadata.schema())
        if disagreement is not None:
            self.problem(path, R_ICEBERG, f"the definition does not mirror {location}: {disagreement}")
        reached = self._iceberg.reach([location])
        for where, reason in sorted(reached.missing.items()):
            self.problem(path, R_ICEBERG, f"{where} {reason}")
        root = self.storage.root_uri
        for file in sorted(reached.files):
            present = (
                self._file_exists(file[len(root):]) if file.startswith(root) else self._iceberg.exists(file)
            )
            if not present:
                self.problem(path, R_MISSING, f"{file}, which its Iceberg metadata {location} reaches, does not exist")

    # -- orphans ---------------------------------------------------------------------------------

    def _check_orphans(self, listing: list[str]) -> None:
        from .maintenance import is_expirable_file

        for path in listing:
            if path not in self._reached and is_expirable_file(path):
                self.report.orphans.append(path)
                self.add(orphan_problem(path))
