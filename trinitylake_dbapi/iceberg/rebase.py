"""Rebasing a plain append on the latest metadata (iceberg.catalog P3): when another
writer committed to the table first, a fast append's new snapshot is written again on
the new head (its own manifests, a new manifest list) instead of failing; and reading a
commit's own files under its owner's name (a file gone is MissingFileError naming it
and whose it is). The rules are stated in iceberg.catalog.
"""

from __future__ import annotations

import contextlib
import copy
import time
import uuid
from typing import Any, Iterator

from pyiceberg.exceptions import CommitFailedException
from pyiceberg.io import FileIO
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import (
    AddSnapshotUpdate,
    AssertRefSnapshotId,
    SetSnapshotRefUpdate,
    TableRequirement,
    TableUpdate,
)

from ..errors import MissingFileError
from .manifests import manifest_entries, snapshot_manifests

__all__ = ["is_plain_append", "own_file", "rebased_append"]


@contextlib.contextmanager
def own_file(location: str, owner: str) -> Iterator[None]:
    """Reading a file this commit wrote earlier: when it is gone, MissingFileError naming
    it (P9: version expiration reclaimed it before the commit), never a raw OSError."""
    try:
        yield
    except FileNotFoundError:
        raise MissingFileError(location, (
            f"{owner} names this file, written before the commit, and it no longer exists: "
            "version expiration (with an orphan grace period shorter than the transaction) "
            "deleted it; nothing was committed: retry the transaction"
        )) from None



def is_plain_append(updates: tuple[TableUpdate, ...]) -> bool:
    """True for the updates of a fast append: one new snapshot (operation append) made
    the head of its branch."""
    if len(updates) != 2 or not isinstance(updates[0], AddSnapshotUpdate):
        return False
    add, ref = updates
    summary = add.snapshot.summary
    return (
        isinstance(ref, SetSnapshotRefUpdate)
        and ref.snapshot_id == add.snapshot.snapshot_id
        and summary is not None
        and summary.operation.value == "append"
    )


def _added_only(current: TableMetadata, snapshot: Any, manifest: Any, io: FileIO) -> Any:
    """A new manifest holding only the entries ``snapshot`` ADDED in its (merged)
    ``manifest``, for a rebase (P3)."""
    from pyiceberg.manifest import ManifestEntryStatus, write_manifest

    location = manifest.manifest_path.replace(".avro", f"-rebased-{uuid.uuid4().hex[:8]}.avro")
    with own_file(manifest.manifest_path, "the append being rebased"):
        entries = manifest_entries(io, manifest, discard_deleted=True)
    with write_manifest(
        format_version=current.format_version,
        spec=current.specs()[manifest.partition_spec_id],
        schema=current.schema(),
        output_file=io.new_output(location),
        snapshot_id=snapshot.snapshot_id,
        avro_compression="deflate",
    ) as writer:
        for entry in entries:
            if entry.status == ManifestEntryStatus.ADDED and entry.snapshot_id == snapshot.snapshot_id:
                entry.sequence_number = None  # inherited from the rebased list (a fresh entry, MF4)
                writer.add(entry)
    return writer.to_manifest_file()


def rebased_append(
    current: TableMetadata,
    requirements: tuple[TableRequirement, ...],
    updates: tuple[TableUpdate, ...],
    io: FileIO,
) -> tuple[TableUpdate, ...] | None:
    """P3: the updates of an append re-applied on ``current``, or None if the commit is
    not a plain append whose only failed requirement is the head of its branch."""
    from pyiceberg.manifest import UNASSIGNED_SEQ, write_manifest_list
    from pyiceberg.table.snapshots import Operation, Snapshot, Summary, update_snapshot_summaries

    if not is_plain_append(updates):
        return None
    add, ref = updates
    snapshot = add.snapshot
    assert isinstance(ref, SetSnapshotRefUpdate) and snapshot.summary is not None
    for requirement in requirements:
        if isinstance(requirement, AssertRefSnapshotId) and requirement.ref == ref.ref_name:
            continue
        try:
            requirement.validate(current)
        except CommitFailedException:
            return None
    head_ref = current.refs.get(ref.ref_name)
    head = current.snapshot_by_id(head_ref.snapshot_id) if head_ref is not None else None
    if current.snapshot_by_id(snapshot.snapshot_id) is not None:
        return None  # already committed (e.g. by an earlier attempt): nothing to rebase
    added = []
    with own_file(snapshot.manifest_list, "the append being rebased"):
        own_manifests = snapshot_manifests(io, snapshot)
    for manifest in own_manifests:
        if manifest.added_snapshot_id == snapshot.snapshot_id:
            if manifest.existing_files_count or manifest.deleted_files_count:
                # writing W5: a merged manifest also lists the old head's files, which the
                # new head lists itself: keep only what this append added
                manifest = _added_only(current, snapshot, manifest, io)
            manifest = copy.copy(manifest)  # manifests MF3: the decoded one is shared
            manifest.sequence_number = UNASSIGNED_SEQ
            manifest.min_sequence_number = UNASSIGNED_SEQ
            added.append(manifest)
    existing = snapshot_manifests(io, head) if head is not None else []
    sequence_number = current.next_sequence_number()
    manifest_list = snapshot.manifest_list.replace(".avro", f"-rebased-{uuid.uuid4().hex[:8]}.avro")
    with write_manifest_list(
        format_version=current.format_version,
        output_file=io.new_output(manifest_list),
        snapshot_id=snapshot.snapshot_id,
        parent_snapshot_id=head.snapshot_id if head is not None else None,
        sequence_number=sequence_number,
        avro_compression="deflate",
    ) as writer:
        writer.add_manifests(added + list(existing))
    own = {k: v for k, v in snapshot.summary.additional_properties.items() if not k.startswith("total-")}
    summary = update_snapshot_summaries(
        Summary(Operation.APPEND, **own), previous_summary=head.summary.additional_properties if head and head.summary else None
    )
    rebased = Snapshot(
        snapshot_id=snapshot.snapshot_id,
        parent_snapshot_id=head.snapshot_id if head is not None else None,
        sequence_number=sequence_number,
        timestamp_ms=max(int(time.time() * 1000), current.last_updated_ms),
        manifest_list=manifest_list,
        summary=summary,
        schema_id=snapshot.schema_id,
    )
    return (
        AddSnapshotUpdate(snapshot=rebased),
        SetSnapshotRefUpdate(ref_name=ref.ref_name, type=ref.type, snapshot_id=snapshot.snapshot_id),
    )
