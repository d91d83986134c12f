"""Planning a snapshot's files from manifests decoded once per process (issue 34).

SQL reads plan through here rather than through PyIceberg's DataScan, which decodes
every manifest of a snapshot again at every planning: after N one-row commits a
statement read N manifests, and each new filter value planned again.

Rules:

  PC1 Manifest lists and manifests never change once written (Iceberg never rewrites a
      file; writers name each file uniquely): each is decoded once per process and kept
      in one process-wide LRU (:func:`cache_info`, :func:`set_cache_limit`), bounded by
      the estimated bytes of what it holds (default 64 MiB). Keys: a manifest list's
      canonical location with its snapshot id; a manifest's canonical location with its
      length, sequence number and adding snapshot, as the manifest list names it. So a
      read after a new commit decodes the new manifest list and the new manifests only.
      The cache and the Avro reader (whose reader tree is kept per distinct file
      schema) are :mod:`.manifests`' (MF1, MF2), shared with the commit path. A
      snapshot's files are also kept resolved as one list (with int64 arrays of the
      bounds of up to 4 integer columns), so planning another value of a point lookup
      touches no manifest and compares bounds in arrays; that entry's size counts its
      files again, so the bound holds whichever entry is evicted first.
  PC2 Nothing is ever invalidated: an entry is reached only through a metadata file that
      names its location (metadata -> snapshot -> manifest list -> manifest). Expiration
      deletes only files that no retained version names, and the files of a rolled-back
      or failed commit are named by no published metadata, so no reader asks for them.
      A named file deleted anyway (damage) is answered from the cache with the content
      the naming metadata promises; ``verify`` reports it missing, and reading a missing
      data file fails naming it.
  PC3 A managed table's confinement (tables M6, M7) holds on cached entries. M6 depends
      on locations only: it is checked for every manifest list, manifest, data and delete
      file of a snapshot, and a passed check is remembered per manifest and table
      location (so a new commit checks its new files). M7 (links) guards reads: a
      manifest list or manifest is walked before it is decoded, and entries decoded
      without a confinement (EXTERNAL tables) are cached apart from those decoded with
      one; the data and delete files a planning selects are walked at that planning.
  PC4 A data file is skipped only when its column bounds prove that no row meets one of
      the conditions (``field op value`` or ``field in values``, on integer, string and
      boolean columns; values of those Python types): bounds compare as Iceberg orders
      them (integers by value, strings and booleans by their bytes, which is UTF-8
      code point order); a file without bounds for the column is kept. ``<>`` never
      prunes. Bound parameters arrive as values like literals (sql.binding), so a
      point lookup with ``?`` prunes as one with a literal.
  PC6 A writer that replaces data files it read (SQL's UPDATE and DELETE) looks their
      DataFile objects up through the same cached files (:func:`snapshot_data_files`),
      decoding whole only the manifests that list one of them.
  PC7 (issue 36) A data file of a partitioned spec is also skipped when its partition
      value proves that no row meets the conditions: each condition on a source column
      of a partition field is projected through the field's transform (Iceberg's
      inclusive projection, PyIceberg's ``inclusive_projection``: ``ts >= x`` becomes
      ``day(ts) >= day(x)``, ``id = 5`` becomes ``bucket(id) = bucket(5)``), per spec
      the file was written with, and evaluated on the file's partition record. Dates
      and timestamps (without time zone) are conditions too (as days and microseconds,
      Iceberg's representation), for PC4's bounds as well.
  PC8 A planned data file carries the rows and bytes its manifest entry states
      (:func:`plan_snapshot_files`): SQL keeps small files' rows decoded by them
      (sql.query.smallfiles SF1). They are the writer's statement, never checked
      against the file here; a reader that relies on them checks what it read.
  PC5 Position delete files are matched to data files by PyIceberg's DeleteFileIndex
      (sequence numbers, partition, referenced file), as its scans do. A snapshot with
      live equality delete files is NotSupportedError naming one.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from pyiceberg.io import FileIO
from pyiceberg.manifest import INITIAL_SEQUENCE_NUMBER, DataFile, DataFileContent, ManifestContent, ManifestFile
from pyiceberg.table.delete_file_index import DeleteFileIndex

from ..errors import NotSupportedError
from ..storage.locations import canonical_location
from .manifests import CACHE, ManifestList, list_key, manifest_entries, note_live_data_paths, read_list
from .tables import Confinement, refuse_links

__all__ = ["Condition", "PlannedFile", "cache_info", "clear_cache", "plan_snapshot", "plan_snapshot_files",
           "set_cache_limit", "snapshot_data_files"]

#: (field id, operator, value): operator one of = <> > >= < <= in (value: a tuple for in).
Condition = tuple[int, str, Any]

_ENTRY_OVERHEAD = 700  # bytes of a decoded entry beyond its strings (tracemalloc: ~2.5 KB in all)


@dataclass(eq=False, slots=True)
class _File:
    """One live data file of a manifest, as planning needs it (the DataFile attributes
    DeleteFileIndex reads: ``file_path``, ``spec_id``, ``partition``)."""

    file_path: str
    spec_id: int
    partition: Any
    sequence_number: int
    lower: dict[int, bytes]
    upper: dict[int, bytes]
    #: Rows and bytes of the file, as its manifest entry states them (PC8).
    record_count: int = 0
    file_size: int = 0


@dataclass(eq=False)
class _Manifest:
    """A decoded manifest: its live data files, or its live delete entries."""

    files: list[_File]
    deletes: list[Any]  # ManifestEntry of position / equality delete files
    size: int
    #: PC3: (table location, root) pairs whose M6 check these files passed.
    confined: set[tuple[str, str]] = field(default_factory=set)


_CACHE = CACHE  # manifests MF2: one cache for planning and commits


def cache_info() -> dict[str, int]:
    """The planning cache's state (PC1): ``entries`` (decoded manifest lists and
    manifests held), ``bytes`` (their estimated size), ``limit`` (the bound on
    ``bytes``), ``hits`` and ``misses`` since the process started."""
    return _CACHE.info()


def set_cache_limit(limit: int) -> None:
    """Bound the planning cache to ``limit`` estimated bytes (0: keep nothing),
    evicting the least recently used entries at once."""
    if limit < 0:
        raise ValueError("the planning cache limit is a number of bytes, at least 0")
    _CACHE.set_limit(limit)


def clear_cache() -> None:
    """Drop every decoded file of the planning cache (never needed for correctness, PC2)."""
    _CACHE.clear()


def _manifest_list(io: FileIO, snapshot: Any, confinement: Confinement | None) -> ManifestList:
    location = snapshot.manifest_list
    key = list_key(snapshot, confinement is not None)
    found = _CACHE.get(key)
    if found is None:
        if confinement is not None:
            confinement.check(location, "manifest list")  # M6 and M7 before the read
        found = read_list(io, location)
        _CACHE.put(key, found)
    return found


def _estimate(files: list[_File], deletes: list[Any]) -> int:
    size = 300 + 1500 * len(deletes)
    for f in files:
        size += _ENTRY_OVERHEAD + len(f.file_path)
        for bounds in (f.lower, f.upper):
            size += sum(60 + len(b) for b in bounds.values())
    return size


def _manifest(io: FileIO, manifest: ManifestFile, confinement: Confinement | None) -> _Manifest:
    key = ("manifest", canonical_location(manifest.manifest_path), manifest.manifest_length,
           manifest.sequence_number, manifest.added_snapshot_id, confinement is not None)  # fmt: skip
    found = _CACHE.get(key)
    if found is None:
        if confinement is not None:
            confinement.check(manifest.manifest_path, "manifest")  # M6 and M7 before the read
        files: list[_File] = []
        deletes: list[Any] = []
        entries = manifest_entries(io, manifest)
        for entry in entries:
            data = entry.data_file
            if data.content == DataFileContent.DATA:
                sequence = entry.sequence_number or INITIAL_SEQUENCE_NUMBER
                files.append(_File(
                    sys.intern(data.file_path), data.spec_id or 0, data.partition, sequence,
                    dict(data.lower_bounds or {}), dict(data.upper_bounds or {}),
                    data.record_count or 0, data.file_size_in_bytes or 0,
                ))  # fmt: skip
            else:
                deletes.append(entry)
        found = _Manifest(files, deletes, _estimate(files, deletes))
        _CACHE.put(key, found)
        note_live_data_paths(manifest, frozenset(f.file_path for f in files))  # manifests MF5
    return found


def _int(raw: bytes) -> int:
    return int.from_bytes(raw, "little", signed=True)


def _iceberg_value(value: Any) -> Any:
    """A condition value as Iceberg represents it (PC7): a timestamp as microseconds
    since the epoch, a date as days; others as they are."""
    import datetime as dt

    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return None
        return (value - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    return value


def _as_bytes(value: Any) -> bytes | int | None:
    """A condition value in the order Iceberg compares bounds (PC4), None if unknown."""
    value = _iceberg_value(value)
    if isinstance(value, bool):
        return bytes([1 if value else 0])
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return None


def _might_match(f: _File, conditions: Sequence[tuple[int, str, Any]]) -> bool:
    for field_id, op, value in conditions:
        low, high = f.lower.get(field_id), f.upper.get(field_id)
        if low is None or high is None:
            continue
        if isinstance(value, int) or (op == "in" and value and isinstance(value[0], int)):
            low, high = _int(low), _int(high)
        if op == "=":
            if value < low or value > high:
                return False
        elif op == "in":
            if all(v < low or v > high for v in value):
                return False
        elif op == ">":
            if high <= value:
                return False
        elif op == ">=":
            if high < value:
                return False
        elif op == "<":
            if low >= value:
                return False
        elif op == "<=":
            if low > value:
                return False
    return True


def _comparable(conditions: Sequence[Condition]) -> list[tuple[int, str, Any]]:
    """The conditions PC4 prunes by, values in bound order (ints stay ints)."""
    out = []
    for field_id, op, value in conditions:
        if op == "<>":
            continue
        if op == "in":
            values = tuple(_as_bytes(v) for v in value)
            kinds = {type(v) for v in values}
            if values and None not in values and len(kinds) == 1:
                out.append((field_id, op, values))
            continue
        converted = _as_bytes(value)
        if converted is not None:
            out.append((field_id, op, converted))
    return out


@dataclass(eq=False)
class _Resolved:
    """A snapshot's live data files as one list, with its position deletes indexed
    (PC1): planning another value touches no manifest. Its size counts its files
    although its manifests' entries count them too, so the bound holds whichever of
    them is evicted first."""

    files: list[_File]
    delete_index: DeleteFileIndex | None
    size: int
    #: field id -> (lower bounds, upper bounds, has bounds) as int64 arrays, for
    #: integer conditions (PC4), at most _INDEXED_FIELDS of them (reserved in ``size``).
    ints: dict[int, tuple[Any, Any, Any]] = field(default_factory=dict)


_INDEXED_FIELDS = 4
_INT64 = (-(2**63), 2**63 - 1)


def _resolve(
    table: str, io: FileIO, listing: ManifestList, confinement: Confinement | None, where: tuple[str, str] | None
) -> _Resolved:
    files: list[_File] = []
    delete_index: DeleteFileIndex | None = None
    size = 300
    for m in listing.manifests:
        decoded = _manifest(io, m, confinement)
        size += decoded.size + 8 * len(decoded.files)
        if where is not None and where not in decoded.confined:
            for f in decoded.files:
                confinement.check(f.file_path, "data file", links=False)
            for entry in decoded.deletes:
                confinement.check(entry.data_file.file_path, "delete file", links=False)
            decoded.confined.add(where)
        for entry in decoded.deletes:
            if entry.data_file.content == DataFileContent.EQUALITY_DELETES:
                raise NotSupportedError(
                    f"table {table} has equality delete files ({entry.data_file.file_path}): reading them "
                    "is not supported; compact the table with an engine that can"
                )
            if delete_index is None:
                delete_index = DeleteFileIndex()
            delete_index.add_delete_file(entry, partition_key=entry.data_file.partition)
        files.extend(decoded.files)
    size += 17 * _INDEXED_FIELDS * len(files)
    return _Resolved(files, delete_index, size)


def _int_bounds(resolved: _Resolved, field_id: int) -> tuple[Any, Any, Any]:
    found = resolved.ints.get(field_id)
    if found is None:
        import numpy as np

        n = len(resolved.files)
        low, high, known = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.bool_)
        for i, f in enumerate(resolved.files):
            a, b = f.lower.get(field_id), f.upper.get(field_id)
            if a is not None and b is not None and len(a) in (4, 8) and len(b) in (4, 8):
                low[i], high[i], known[i] = _int(a), _int(b), True
        found = (low, high, known)
        if len(resolved.ints) < _INDEXED_FIELDS:
            resolved.ints[field_id] = found
    return found


def _select(resolved: _Resolved, conditions: list[tuple[int, str, Any]]) -> list[_File]:
    """PC4 over a resolved snapshot: integer conditions on arrays of bounds, the others
    file by file."""
    if not conditions:
        return resolved.files
    mask = None
    rest = []
    for field_id, op, value in conditions:
        values = value if op == "in" else (value,)
        if not all(isinstance(v, int) and _INT64[0] <= v <= _INT64[1] for v in values):
            rest.append((field_id, op, value))
            continue
        low, high, known = _int_bounds(resolved, field_id)
        if op == "=":
            ok = (low <= value) & (high >= value)
        elif op == "in":
            ok = (low <= values[0]) & (high >= values[0])
            for v in values[1:]:
                ok |= (low <= v) & (high >= v)
        elif op == ">":
            ok = high > value
        elif op == ">=":
            ok = high >= value
        elif op == "<":
            ok = low < value
        else:
            ok = low <= value
        ok |= ~known
        mask = ok if mask is None else mask & ok
    candidates = resolved.files if mask is None else [resolved.files[i] for i in mask.nonzero()[0]]
    if not rest:
        return candidates
    return [f for f in candidates if _might_match(f, rest)]


def _partition_pruned(files: list[_File], conditions: Sequence[Condition], schema: Any, specs: dict[int, Any]) -> list[_File]:
    """PC7: ``files`` without those whose partition value rules out every row."""
    from pyiceberg.expressions import (
        And,
        EqualTo,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        LessThan,
        LessThanOrEqual,
    )
    from pyiceberg.expressions.visitors import expression_evaluator, inclusive_projection
    from pyiceberg.schema import Schema

    builders = {"=": EqualTo, ">": GreaterThan, ">=": GreaterThanOrEqual, "<": LessThan, "<=": LessThanOrEqual}
    sources = {f.source_id for spec in specs.values() for f in spec.fields}
    terms = []
    for field_id, op, value in conditions:
        name = schema.find_column_name(field_id) if field_id in sources else None
        if name is None or op == "<>":
            continue
        if op == "in":
            values = [_iceberg_value(v) for v in value]
            if values and None not in values:
                terms.append(In(name, values))
        elif (converted := _iceberg_value(value)) is not None:
            terms.append(builders[op](name, converted))
    if not terms:
        return files
    row_filter = terms[0] if len(terms) == 1 else And(*terms)
    evaluators: dict[int, Any] = {}

    def keeps(f: _File) -> bool:
        spec = specs.get(f.spec_id)
        if spec is None or spec.is_unpartitioned():
            return True
        evaluator = evaluators.get(f.spec_id)
        if evaluator is None:
            try:
                projected = inclusive_projection(schema, spec)(row_filter)
                partition_schema = Schema(*spec.partition_type(schema).fields)
                evaluator = expression_evaluator(partition_schema, projected, case_sensitive=True)
            except Exception:  # a value the transform cannot project: keep the spec's files
                evaluator = bool
            evaluators[f.spec_id] = evaluator
        return evaluator is bool or bool(evaluator(f.partition))

    return [f for f in files if keeps(f)]


#: PC8: a planned data file: its path, rows and bytes (as its manifest entry states them).
PlannedFile = tuple[str, int, int]


def plan_snapshot(
    table: str,
    snapshot: Any,
    io: FileIO,
    confinement: Confinement | None,
    conditions: Sequence[Condition] = (),
    *,
    partitioning: tuple[Any, dict[int, Any]] | None = None,
) -> tuple[list[str], list[str]]:
    """The (data files, position delete files) of ``snapshot`` (of ``table``, named in
    errors) that may hold rows meeting ``conditions`` (PC4; PC7 by partition values
    when ``partitioning``, the table's (schema, specs by id), is given), in manifest
    order, from decoded manifests (PC1); CorruptFileError for a file outside a managed
    table's location or reached through a link (PC3)."""
    data, deletes = plan_snapshot_files(table, snapshot, io, confinement, conditions, partitioning=partitioning)
    return [f[0] for f in data], deletes


def plan_snapshot_files(
    table: str,
    snapshot: Any,
    io: FileIO,
    confinement: Confinement | None,
    conditions: Sequence[Condition] = (),
    *,
    partitioning: tuple[Any, dict[int, Any]] | None = None,
) -> tuple[list[PlannedFile], list[str]]:
    """As :func:`plan_snapshot`, each data file with its rows and bytes (PC8)."""
    listing = _manifest_list(io, snapshot, confinement)
    where = None if confinement is None else (confinement.table_location, confinement.root_uri)
    if where is not None and where not in listing.confined:
        confinement.check(snapshot.manifest_list, "manifest list", links=False)
        for m in listing.manifests:
            confinement.check(m.manifest_path, "manifest", links=False)
        listing.confined.add(where)
    key = ("resolved", canonical_location(snapshot.manifest_list), snapshot.snapshot_id, confinement is not None,
           where)  # fmt: skip
    resolved = _CACHE.get(key)
    if resolved is None:
        resolved = _resolve(table, io, listing, confinement, where)
        _CACHE.put(key, resolved)
    selected = _select(resolved, _comparable(conditions))
    if conditions and partitioning is not None:
        selected = _partition_pruned(selected, conditions, *partitioning)
    deletes: set[str] = set()
    if resolved.delete_index is not None and not resolved.delete_index.is_empty():
        for f in selected:
            for d in resolved.delete_index.for_data_file(f.sequence_number, f, partition_key=f.partition):
                deletes.add(d.file_path)
    if confinement is not None:  # M7 at every planning for the files about to be read
        checked: set[str] = set()
        for path in [f.file_path for f in selected] + sorted(deletes):
            refuse_links(confinement.table, path, confinement.root_uri, "data file" if path not in deletes
                         else "delete file", checked)  # fmt: skip
    return [(f.file_path, f.record_count, f.file_size) for f in selected], sorted(deletes)


def snapshot_data_files(
    snapshot: Any, io: FileIO, confinement: Confinement | None, select: Callable[[str], bool]
) -> list[DataFile]:
    """PC6: PyIceberg's DataFile objects of the live data files of ``snapshot`` whose
    paths ``select`` accepts, for a writer that replaces them (SQL's UPDATE and DELETE):
    found through the cached manifest list and manifests (PC1, confinement as PC3), and
    only the manifests that list one of them are decoded whole."""
    found: list[DataFile] = []
    for m in _manifest_list(io, snapshot, confinement).manifests:
        if m.content != ManifestContent.DATA:
            continue
        if not any(select(f.file_path) for f in _manifest(io, m, confinement).files):
            continue
        found += [
            e.data_file for e in manifest_entries(io, m)
            if e.data_file.content == DataFileContent.DATA and select(e.data_file.file_path)
        ]  # fmt: skip
    return found
