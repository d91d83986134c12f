"""The checks of one file at a time, shared by the local verifier (:mod:`.local`) and
the Spark verifier (``trinitylake_dbapi.spark.verification``): pure (no storage, no
state; the few that need a file's bytes take the read function as an argument), each
returning the problems it finds.

The rules themselves live with what they are about: file names in ``format.paths``, keys
in ``format.keys``, a node's own tree rules in ``tree.check.node_violations``, what a
node holds and references in ``tree.walks`` (``node_entries``, ``node_references``,
passed on here for the Spark verifier); these functions ask them and say what is wrong
as a :class:`~.report.Problem`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..errors import (
    CorruptFileError,
    Error,
    InvalidLocationError,
    MissingFileError,
    UnsupportedFormatError,
)
from ..format import keys as keyfmt
from ..format import paths
from ..format.definitions import (
    LakehouseSettings,
    decode_lakehouse_def,
    decode_namespace_def,
    decode_table_def,
)
from ..format.nodefile import NodeFile
from ..format.types import from_proto_columns
from ..storage import Storage
from ..tree import MAX_TREE_DEPTH, TreeConfig, node_entries, node_references, node_violations
from .report import (
    R_DEFINITION,
    R_HISTORY,
    R_KEYS,
    R_MAJOR,
    R_MISSING,
    R_NAMES,
    R_ORPHAN,
    WARNING,
    Problem,
)

__all__ = [
    "MAX_DEPTH", "txn_tag", "describe", "node_rules_config", "optimized_problem",
    "pointer_problem", "name_problem", "no_lakehouse_problem", "orphan_problem",
    "vanished_root_problem", "missing_node_problem", "root_problems", "root_created_at",
    "lakehouse_def_problems", "node_problems", "entry_problem", "tag_problems",
    "child_problem", "missing_definition_problem", "definition_problem",
    "definition_use_problem", "discovery_problems", "RootInfo", "chain_problems",
    # the tree's walks of one node (TW1, TW2), for the Spark verifier, which never
    # imports the tree (architecture rule A2)
    "node_entries", "node_references",
]

#: Deeper than this, a chain of child pointers is reported instead of followed (the
#: tree's T9 limit).
MAX_DEPTH = MAX_TREE_DEPTH

_ROOT_SYSTEM_KEYS = frozenset({keyfmt.LAKEHOUSE_DEF, keyfmt.PREVIOUS_ROOT, keyfmt.ROLLBACK_FROM_ROOT})
_NODE_SYSTEM_KEYS = frozenset({keyfmt.CREATED_AT_MILLIS, keyfmt.N_KEYS})


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
    from ..lakehouse import Lakehouse

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
