"""SPEC 8 checks of one table definition's Iceberg metadata (``verify(data=True)``),
shared by the local verifier (:mod:`.local`) and ``spark.verification``.

Rules:

  VT1 The tables checked are those of each checked version's merged state (the newest
      message of each key, tree TW3), never an older message a node's buffer still
      holds: a definition shadowed there may name metadata that expiration reclaimed
      (maintenance E8), and no version reads it. Each definition file is checked once.
  VT2 A metadata file that does not exist is judged only once every table is known:
      a warning when a MANAGED table that deletes its old metadata after each commit
      explains it (iceberg.oldmetadata OM5: that version cannot read the table any more,
      by the table owner's choice), an error otherwise.
  VT3 Nothing here raises for what it finds: a file that cannot be read or parsed is a
      problem naming the definition and the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from ..errors import Error
from ..format import keys as keyfmt
from ..format import paths
from ..format.definitions import decode_table_def
from ..format.types import from_proto_columns
from ..storage.locations import location_within
from .report import ERROR, R_ICEBERG, R_MISSING, R_PRIMARY_KEY, WARNING, Problem

if TYPE_CHECKING:
    from ..iceberg.reach import IcebergReach
    from ..lakehouse import Lakehouse

__all__ = ["TableCheck", "check_table", "absent_metadata_problem", "current_tables"]


@dataclass
class TableCheck:
    """What :func:`check_table` found for one definition file."""

    problems: list[Problem] = field(default_factory=list)
    #: VT2: (definition, metadata location, is MANAGED) when the metadata file does not exist
    absent: tuple[str, str, bool] | None = None
    #: OM5: the table's directories when it is MANAGED and deletes its old metadata
    deletes: set[str] = field(default_factory=set)


def current_tables(lakehouse: "Lakehouse", version: int) -> list[tuple[str, str]] | None:
    """VT1: ("namespace.table", definition path) of every table in ``version``'s merged
    state, sorted by key; None when the version cannot be read (the structural checks
    report why)."""
    try:
        snapshot = lakehouse.snapshot(version)
        settings = snapshot.settings
        codec = keyfmt.KeyCodec(settings.namespace_name_max_size_bytes, settings.table_name_max_size_bytes)
        entries = snapshot.tree.scan() or []
    except (Error, ValueError, OSError):
        return None
    found = []
    for key, value in entries:
        if value is None:
            continue
        try:
            decoded = codec.decode(key)
        except ValueError:
            continue  # reported as SPEC 3 where the key is stored
        if decoded.kind == "table":
            found.append((f"{decoded.namespace}.{decoded.table}", value))
    return found


def check_table(
    path: str,
    table: str,
    read: Callable[[str], bytes],
    exists: Callable[[str], bool],
    root_uri: str,
    reach: "IcebergReach",
    storage_options: dict | None,
) -> TableCheck:
    """SPEC 8 for the table definition at ``path`` (the table ``table``): its metadata
    file exists and parses, the definition mirrors its schema, every file it reaches
    exists and is whole (iceberg.reach R1, R5), a managed table's files lie where
    iceberg.tables M6 allows, its key holds (iceberg.keys PK6). ``read`` and ``exists``
    take paths under the root; ``reach`` memoizes across calls."""
    check = TableCheck()
    try:
        definition = decode_table_def(read(path), path)
        columns = from_proto_columns(definition.schema.columns)
    except (Error, ValueError):
        return check  # reported as SPEC 3 or SPEC 5 where the key or file is checked
    location = definition.format_properties.get(paths.METADATA_LOCATION)
    if not location:
        return check
    managed = definition.table_type != "EXTERNAL"
    if _check_metadata(check, path, location, columns, managed, exists, root_uri, reach):
        problem = _key_problem(path, table, location, list(definition.primary_key), reach, storage_options)
        if problem is not None:
            check.problems.append(problem)
    return check


def _check_metadata(
    check: TableCheck, path: str, location: str, columns: list, managed: bool,
    exists: Callable[[str], bool], root: str, reach: "IcebergReach",
) -> bool:
    """The checks of the metadata file and what it reaches; False when its key is not to
    be checked either (a managed table's metadata outside the root is never read)."""
    from ..iceberg.oldmetadata import deletion_prefixes, is_metadata_file
    from ..iceberg.schema import mirror_disagreement
    from ..iceberg.tables import in_metadata_area

    def problem(rule: str, message: str) -> None:
        check.problems.append(Problem(path, rule, message, ERROR))

    outside = "lies outside the lakehouse root; a managed table's files lie under its location inside the root"
    if managed and location_within(location, root) is None:  # iceberg.tables M6
        problem(R_ICEBERG, f"the Iceberg metadata file {location} it names {outside}")
        return False
    try:
        metadata = reach.metadata(location)
    except FileNotFoundError:
        check.absent = (path, location, managed)  # VT2: judged at the end
        return True
    except Exception as e:  # noqa: BLE001 - VT3: a file that cannot be read is a finding
        problem(R_ICEBERG, f"the Iceberg metadata file {location} it names cannot be read: {e}")
        return True
    if managed:
        check.deletes |= deletion_prefixes([metadata])
    disagreement = mirror_disagreement(columns, metadata.schema())
    if disagreement is not None:
        problem(R_ICEBERG, f"the definition does not mirror {location}: {disagreement}")
    try:
        reached = reach.reach([location])
    except Exception as e:  # noqa: BLE001 - VT3
        problem(R_ICEBERG, f"the files its Iceberg metadata {location} reaches cannot be read: {e}")
        return True
    for where, reason in sorted(reached.missing.items()):
        problem(R_ICEBERG, f"{where} {reason}")
    if managed and location_within(metadata.location, root) is None:
        problem(R_ICEBERG, f"the table location {metadata.location} of {location} {outside}")
    elif managed:

        def misplaced(file: str) -> bool:  # iceberg.tables M6: metadata files anywhere inside the root
            if location_within(file, metadata.location) is not None:
                return False
            # metadata files, manifest lists and manifests may lie under write.metadata.path
            named_as_metadata = is_metadata_file(file) or file.endswith(".avro")
            return not (named_as_metadata and in_metadata_area(file, root))

        for file in sorted(filter(misplaced, reached.files)):
            problem(
                R_ICEBERG,
                f"{file}, which its Iceberg metadata {location} reaches, lies outside the location "
                f"{metadata.location} of the managed table; a managed table's files lie under it",
            )  # fmt: skip
    for file in sorted(reached.files):
        try:
            relative = location_within(file, root)  # canonical forms (storage U4)
            present = exists(relative) if relative is not None else reach.exists(file)
            # SPEC 8 content: sizes as recorded, Avro whole, Parquet ends (iceberg.reach R5)
            damage = reach.content_problem(file, reached.sizes.get(file)) if present else None
        except (Error, OSError, ValueError) as e:  # a location that cannot be read is a finding too
            problem(R_ICEBERG, f"{file}, which its Iceberg metadata {location} reaches, cannot be read: {e}")
            continue
        if not present:
            problem(R_MISSING, f"{file}, which its Iceberg metadata {location} reaches, does not exist")
        elif damage is not None:
            problem(R_ICEBERG, f"{file}, which its Iceberg metadata {location} reaches, is damaged: {damage}")
    return True


def _key_problem(
    path: str, table: str, location: str, key_ids: list[int], reach: "IcebergReach", storage_options: dict | None
) -> Problem | None:
    """iceberg.keys PK6: no key two live rows of the table hold, no NULL key."""
    from ..iceberg.io import DurableFileIO, file_io_properties
    from ..iceberg.keys import duplicate_key

    try:
        metadata = reach.metadata(location)
        schema = metadata.schema()
        if not key_ids and not schema.identifier_field_ids:
            return None
        io = DurableFileIO(file_io_properties(storage_options))
        found = duplicate_key(table, metadata, io, key_ids=key_ids)
    except Exception as e:  # noqa: BLE001 - a file that cannot be read was reported by _check_metadata
        found = None if isinstance(e, (Error, OSError, ValueError)) else f"its key could not be checked: {e}"
    return None if found is None else Problem(path, R_PRIMARY_KEY, found, ERROR)


def absent_metadata_problem(path: str, location: str, managed: bool, deleted: set[str]) -> Problem:
    """VT2: the problem of a definition at ``path`` whose metadata file ``location`` does
    not exist, given the ``deleted`` directories (OM5) of every table checked."""
    from ..iceberg.oldmetadata import explains_missing

    if managed and explains_missing(location, deleted):
        return Problem(
            path, R_MISSING,
            f"the Iceberg metadata file {location} it names was deleted after a later commit "
            "(write.metadata.delete-after-commit.enabled, as the table's properties ask): the "
            "table cannot be read at this version any more", WARNING,
        )  # fmt: skip
    return Problem(path, R_MISSING, f"the Iceberg metadata file {location} it names does not exist", ERROR)
