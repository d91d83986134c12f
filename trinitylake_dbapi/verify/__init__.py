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
  [T1-T8]   the tree invariants (stated in :mod:`trinitylake_dbapi.tree`) for every node
            reached (T6 partially: within a buffer, and along every root-to-node path
            of a freshly read subtree; see :mod:`.local`).
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

The package: :mod:`.report` (Problem, VerifyReport, the rule names), :mod:`.rules` (the
checks of one file at a time, pure, shared with ``trinitylake_dbapi.spark.verification``),
:mod:`.local` (the traversal of a lakehouse from one process: which file is read when,
what is memoized), :mod:`.tables` (SPEC 8 of one table definition, shared with Spark too) and here :func:`verify`, which runs the local traversal.
"""

from __future__ import annotations

from typing import Any

from ..storage import Storage
from .local import LocalVerifier
from .report import RULES, Problem, VerifyReport
from .rules import (  # the per-file checks, shared with spark.verification
    RootInfo,
    chain_problems,
    child_problem,
    definition_problem,
    definition_use_problem,
    describe,
    discovery_problems,
    entry_problem,
    lakehouse_def_problems,
    name_problem,
    node_problems,
    optimized_problem,
    pointer_problem,
    root_created_at,
    root_problems,
    tag_problems,
    txn_tag,
)

__all__ = [
    "Problem", "VerifyReport", "verify", "RULES",
    # the per-file checks, shared with trinitylake_dbapi.spark.verification
    "txn_tag", "describe", "optimized_problem", "pointer_problem", "name_problem",
    "root_problems", "root_created_at", "lakehouse_def_problems", "node_problems",
    "entry_problem", "tag_problems", "child_problem", "definition_problem",
    "definition_use_problem", "discovery_problems", "RootInfo", "chain_problems",
]


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
    return LocalVerifier(storage, all_versions, data, options).run()


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
