"""Enforced primary keys (issue 36): a commit through this package's catalog never
leaves two live rows of a keyed table with the same key.

Rules:

  PK1 A table's key is the primary key its definition declares (SQL's ``PRIMARY KEY``,
      SQLAlchemy's primary key columns), else its current Iceberg schema's identifier
      fields (a table created through PyIceberg with ``identifier_field_ids``). A
      table without either is not checked and pays nothing (no file is read).
  PK2 Every table commit through :class:`~.catalog.TrinityLakeCatalog` is checked on
      the metadata it would publish (iceberg.catalog P2), after any rebase of the commit
      on another writer's (P3), and again at every replay of a lakehouse transaction
      (P4): the check runs where the commit is decided, so of two transactions inserting
      the same key, the second to commit sees the first's rows and fails. Hence SQL
      (INSERT, UPDATE, CTAS, MERGE), SQLAlchemy, pandas, PyIceberg appends and
      overwrites through the catalog and Spark writes through the data source are all
      checked, by this one rule.
  PK3 The rows checked are those of the data files the commit's new snapshots add
      (ADDED entries of its new, non-``replace`` snapshots: a compaction rewrites rows
      already there), read with the new head's position deletes applied. They must
      hold no NULL in a key column, no key twice, and no key of a live row of the new
      head's other data files (position deletes applied: a row an UPDATE or DELETE
      removed by a delete file no longer counts). A commit to a branch other than the
      table's head (``main``) is not checked; so a commit that makes the head a
      snapshot not reached from the old head through new snapshots only (a fast-forward
      to a branch's snapshot, a rollback, a new snapshot on top of a branch's) checks
      instead the data files the new head has and the old head had not: a duplicate
      written on a branch never reaches the head unchecked.
  PK4 A violation is IntegrityError (PEP 249) naming the table, the key's columns and
      one duplicate key (or the NULL column); nothing is published, and the catalog
      deletes the files of the commit that this process wrote (io F4), never a file the
      commit only names (``add_files``' data files stay where the user put them).
  PK5 Cost: only the key columns are read; of the other data files only those whose
      column bounds might hold one of the new keys (planning PC4, through
      :func:`~.planning.plan_snapshot`: ``in`` the new keys when they are few, else
      their range), and of those only the row groups that might (the same filter,
      pushed down). The comparison runs in DuckDB.
  PK6 ``verify`` with ``--data`` reads every live row's key of each keyed table at the
      versions it checks and reports a key held twice or a NULL key (an error naming the
      table, the key and a value): rows written by other engines directly to Iceberg
      were never checked by PK2.
  PK7 A position delete file's positions are decoded once per process for the checks:
      kept in the process-wide LRU of decoded manifests (manifests MF2, under the delete
      file's canonical location, length and row count, as its manifest names it). A
      delete file is never rewritten (Iceberg names each file uniquely; planning PC2),
      so nothing is invalidated; every checked commit of a keyed table read every live
      delete file again (the SQLAlchemy compliance suite: ~5 per commit).
  PK8 A data file or position delete file the check must read and cannot is the
      user's error naming it, never InternalError: absent, MissingFileError; present
      but not Parquet (damaged, truncated, another format), CorruptFileError. Nothing
      is published (PK4's path: the commit fails before its root).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Sequence

from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFile, DataFileContent, ManifestContent, ManifestEntryStatus
from pyiceberg.table.metadata import TableMetadata

from ..errors import CorruptFileError, Error, IntegrityError, MissingFileError
from ..storage.locations import canonical_location
from .duckdb_fork import connect, opened_here
from .manifests import CACHE, manifest_entries, snapshot_manifests
from .planning import plan_snapshot, snapshot_data_files
from .tables import Confinement

__all__ = ["IN_LIST_LIMIT", "check_commit", "duplicate_key", "existing_keys", "key_columns"]

#: PK5: up to this many distinct new keys, planning prunes by ``in`` them; more, by their range.
IN_LIST_LIMIT = 64

_local = threading.local()


def key_columns(metadata: TableMetadata, declared: Sequence[str] = ()) -> list[Any]:
    """PK1: the key's fields (PyIceberg NestedFields of the current schema), in key
    order; ``declared``: the definition's primary key column names. Empty: no key."""
    schema = metadata.schema()
    if declared:
        fields = [schema.find_field(n, case_sensitive=False) for n in declared]
        return fields
    return [schema.find_field(i) for i in schema.identifier_field_ids]


def _duck() -> Any:
    """This thread's DuckDB connection for the comparisons (PK5); a new one in a process
    forked from the one that opened it (duckdb_fork DF3: the inherited one is never used
    or closed there)."""
    con = getattr(_local, "con", None)
    if con is None or not opened_here(con):
        con = connect(config={"threads": 1})
        _local.con = con
    return con


def _read_keys(metadata: TableMetadata, io: FileIO, fields: list[Any], tasks: list[Any], row_filter: Any,
               span: tuple[Any, Any] | None = None) -> Any:
    """The key columns (named k0, k1, ...) of the rows of ``tasks`` (FileScanTasks,
    deletes applied) that meet ``row_filter``: each file's key columns read directly
    by field id (row groups whose statistics of the first key column lie outside
    ``span`` skipped), or through PyIceberg's ArrowScan for files without field ids."""
    import pyarrow as pa

    empty = pa.schema([pa.field(f"k{i}", _arrow_type(f)) for i, f in enumerate(fields)])
    deletes = _positions(io, {d for t in tasks for d in t.delete_files})
    parts = []
    rest = []
    for task in tasks:
        with _reading(task.file.file_path, "data file"):
            part = _file_keys(io, task.file.file_path, fields, deletes.get(canonical_location(task.file.file_path)),
                              span, empty)
        if part is None:
            rest.append(task)
        elif part.num_rows:
            parts.append(part)
    if rest:
        from pyiceberg.io.pyarrow import ArrowScan
        from pyiceberg.schema import Schema

        scan = ArrowScan(metadata, io, Schema(*fields), row_filter)
        for task in rest:  # one at a time, so that an error names its file (PK8)
            with _reading(task.file.file_path, "data file"):
                scanned = scan.to_table([task])
            scanned = scanned.select([f.name for f in fields]).rename_columns(empty.names)
            parts.append(scanned.cast(empty))
    return pa.concat_tables(parts) if parts else empty.empty_table()


@contextlib.contextmanager
def _reading(path: str, kind: str) -> Iterator[None]:
    """PK8: what reading the ``kind`` at ``path`` raises, as the error naming it."""
    import pyarrow as pa

    try:
        yield
    except Error:
        raise
    except FileNotFoundError:
        raise MissingFileError(path, f"{kind} of the table's current version does not exist") from None
    except (pa.ArrowException, EOFError) as e:  # ArrowIOError too: "Couldn't deserialize thrift", ...
        raise CorruptFileError(path, f"{kind} does not read as Parquet: {e}") from None


def _arrow_type(field: Any) -> Any:
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    return schema_to_pyarrow(field.field_type, include_field_ids=False)


class _Positions:
    """PK7: one delete file's deleted positions (an int64 array) per data file
    (canonical location), as kept in the cache (``size``: its estimated bytes)."""

    def __init__(self, positions: dict[str, Any]) -> None:
        self.positions = positions
        self.size = 256 + sum(len(p) + 8 * len(a) + 64 for p, a in positions.items())


def _decoded_positions(io: FileIO, delete_file: Any) -> dict[str, Any]:
    """The positions ``delete_file`` deletes per data file (canonical location), decoded
    once per process (PK7)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    key = ("keys-positions", canonical_location(delete_file.file_path), delete_file.file_size_in_bytes,
           delete_file.record_count)
    found = CACHE.get(key)
    if found is None:
        with _reading(delete_file.file_path, "position delete file"), io.new_input(delete_file.file_path).open() as f:
            rows = pq.read_table(f, columns=["file_path", "pos"])
        parts: dict[str, list[Any]] = {}
        for path in pc.unique(rows.column("file_path")).to_pylist():
            parts.setdefault(canonical_location(path), []).append(
                rows.filter(pc.equal(rows.column("file_path"), path)).column("pos"))
        found = _Positions({
            p: pa.chunked_array([c for part in chunks for c in part.chunks], pa.int64()).combine_chunks()
            for p, chunks in parts.items()
        })  # fmt: skip
        CACHE.put(key, found)
    return found.positions


def _positions(io: FileIO, delete_files: set[Any]) -> dict[str, Any]:
    """The deleted row positions per data file (canonical location: a delete file may
    spell a path otherwise than the manifest), from position delete files (PK7)."""
    import pyarrow as pa

    found: dict[str, list[Any]] = {}
    for d in delete_files:
        for path, positions in _decoded_positions(io, d).items():
            found.setdefault(path, []).append(positions)
    return {p: pa.chunked_array(parts, pa.int64()) for p, parts in found.items()}


def _file_keys(io: FileIO, path: str, fields: list[Any], deleted: Any, span: tuple[Any, Any] | None,
               schema: Any) -> Any:
    """The key columns of one data file (rows at ``deleted`` positions left out); None
    when the file lacks a key column's field id (read through ArrowScan instead)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    with io.new_input(path).open() as f:
        pf = pq.ParquetFile(f)
        by_id = {}
        for i, a in enumerate(pf.schema_arrow):
            fid = (a.metadata or {}).get(b"PARQUET:field_id")
            if fid is not None:
                by_id[int(fid)] = (i, a.name)
        if any(fl.field_id not in by_id for fl in fields):
            return None
        first = pf.schema_arrow.get_field_index(by_id[fields[0].field_id][1])
        leaf = next((j for j in range(pf.metadata.num_columns)
                     if pf.metadata.schema.column(j).path == by_id[fields[0].field_id][1]), None)  # fmt: skip
        groups, starts, at = [], [], 0
        for g in range(pf.metadata.num_row_groups):
            meta = pf.metadata.row_group(g)
            keep = True
            if span is not None and leaf is not None and first >= 0:
                stats = meta.column(leaf).statistics
                if stats is not None and stats.has_min_max:
                    try:
                        keep = not (stats.max < span[0] or stats.min > span[1])
                    except TypeError:
                        keep = True
            if keep:
                groups.append(g)
                starts.append(at)
            at += meta.num_rows
        if not groups:
            return schema.empty_table()
        names = [by_id[fl.field_id][1] for fl in fields]
        rows = pf.read_row_groups(groups, columns=names)
    rows = pa.table([rows.column(n) for n in names], names=schema.names).cast(schema)
    if deleted is not None and len(deleted):
        counts = [pf.metadata.row_group(g).num_rows for g in groups]
        positions = pa.concat_arrays([pa.array(range(s, s + n), pa.int64()) for s, n in zip(starts, counts)])
        rows = rows.filter(pc.invert(pc.is_in(positions, value_set=pc.unique(deleted))))
    return rows


def _pruning(fields: list[Any], keys: Any) -> tuple[list[tuple[int, str, Any]], Any]:
    """PK5: planning conditions and a row filter that every row holding one of ``keys``
    (columns k0, k1, ...) meets."""
    import pyarrow.compute as pc
    from pyiceberg.expressions import AlwaysTrue, And, GreaterThanOrEqual, In, LessThanOrEqual

    conditions: list[tuple[int, str, Any]] = []
    row_filter: Any = AlwaysTrue()
    for i, f in enumerate(fields):
        column = keys.column(f"k{i}")
        distinct = pc.unique(column)
        values = distinct.to_pylist() if len(distinct) <= IN_LIST_LIMIT else None
        if values is not None and values and all(isinstance(v, (int, str)) and not isinstance(v, bool) for v in values):
            conditions.append((f.field_id, "in", tuple(values)))
            row_filter = And(row_filter, In(f.name, values))
            continue
        bounds = pc.min_max(column).as_py()
        low, high = bounds["min"], bounds["max"]
        if isinstance(low, (int, str)) and not isinstance(low, bool) and high is not None:
            conditions += [(f.field_id, ">=", low), (f.field_id, "<=", high)]
            row_filter = And(row_filter, And(GreaterThanOrEqual(f.name, low), LessThanOrEqual(f.name, high)))
    return conditions, row_filter


def _delete_files(io: FileIO, snapshot: Any, paths: set[str]) -> set[DataFile]:
    """The DataFiles of the position delete files of ``snapshot`` at ``paths``."""
    if not paths:
        return set()
    found: set[DataFile] = set()
    for m in snapshot_manifests(io, snapshot):
        if m.content != ManifestContent.DELETES:
            continue
        for entry in manifest_entries(io, m, discard_deleted=True):
            if entry.data_file.content == DataFileContent.POSITION_DELETES and entry.data_file.file_path in paths:
                found.add(entry.data_file)
    return found


def _added_data_files(io: FileIO, snapshot: Any, new_ids: set[int]) -> list[DataFile]:
    """PK3: the data files ``snapshot`` lists as ADDED by one of ``new_ids``."""
    found: list[DataFile] = []
    for m in snapshot_manifests(io, snapshot):
        if m.content != ManifestContent.DATA or m.added_snapshot_id not in new_ids or not m.has_added_files():
            continue
        for entry in manifest_entries(io, m, discard_deleted=True):
            if (entry.status == ManifestEntryStatus.ADDED and entry.data_file.content == DataFileContent.DATA
                    and (entry.snapshot_id is None or entry.snapshot_id in new_ids)):  # fmt: skip
                found.append(entry.data_file)
    return found


def _descends_through_new(metadata: TableMetadata, head: Any, old_head: Any, old_ids: set[int]) -> bool:
    """PK3: True when ``head`` reaches ``old_head`` (None: no head before) by parents
    that are all new snapshots (not in ``old_ids``): the head gained exactly what
    those new snapshots added."""
    snapshot = head
    while snapshot is not None and snapshot.snapshot_id not in old_ids:
        parent = snapshot.parent_snapshot_id
        snapshot = metadata.snapshot_by_id(parent) if parent is not None else None
    if old_head is None:
        return snapshot is None
    return snapshot is not None and snapshot.snapshot_id == old_head.snapshot_id


def _every(path: str) -> bool:
    return True


def _brought_data_files(io: FileIO, head: Any, old_head: Any, confinement: Confinement | None) -> list[DataFile]:
    """PK3: the live data files of ``head`` that ``old_head`` (None: none) has not."""
    before: set[str] = set()
    if old_head is not None:
        before = {canonical_location(f.file_path) for f in snapshot_data_files(old_head, io, confinement, _every)}
    return [
        f for f in snapshot_data_files(head, io, confinement, _every) if canonical_location(f.file_path) not in before
    ]


def _show(row: Sequence[Any]) -> str:
    return ", ".join(repr(v) for v in row)


def existing_keys(
    table: str,
    metadata: TableMetadata,
    io: FileIO,
    keys: Any,
    *,
    declared: Sequence[str] = (),
    confinement: Confinement | None = None,
    exclude: frozenset[str] = frozenset(),
) -> Any:
    """The rows of ``keys`` (an Arrow table whose columns are the key's columns, in key
    order, PK1) whose key a live row of ``metadata``'s current snapshot holds (deletes
    applied), read as PK5 bounds it; an Arrow table of the same columns (no row: none
    exists). ``exclude``: data file paths not to read. For writers that must know which
    keys exist (INSERT ... ON CONFLICT, MERGE) and for the commit check (PK3)."""
    fields = key_columns(metadata, declared)
    snapshot = metadata.current_snapshot()
    if not fields or snapshot is None or keys.num_rows == 0:
        return keys.slice(0, 0)
    names = list(keys.column_names)
    new = keys.rename_columns([f"k{i}" for i in range(len(fields))])
    found = _existing(table, metadata, io, fields, new, snapshot, confinement, exclude)
    return found.rename_columns(names)


def _existing(
    table: str, metadata: TableMetadata, io: FileIO, fields: list[Any], new: Any, snapshot: Any,
    confinement: Confinement | None, exclude: frozenset[str],
) -> Any:
    """The distinct rows of ``new`` (columns k0, ...) that a live row of ``snapshot``
    outside ``exclude`` holds."""
    import pyarrow.compute as pc
    from pyiceberg.table import FileScanTask

    conditions, row_filter = _pruning(fields, new)
    data_paths, delete_paths = plan_snapshot(table, snapshot, io, confinement, conditions)
    candidates = {p for p in data_paths if p not in exclude}
    if not candidates:
        return new.slice(0, 0)
    data_files = snapshot_data_files(snapshot, io, confinement, lambda p: p in candidates)
    deletes = _delete_files(io, snapshot, set(delete_paths))
    tasks = [FileScanTask(f, delete_files=set(deletes)) for f in data_files]
    bounds = pc.min_max(new.column("k0")).as_py()
    old = _read_keys(metadata, io, fields, tasks, row_filter, (bounds["min"], bounds["max"]))
    if old.num_rows == 0:
        return new.slice(0, 0)
    con = _duck()
    on = " AND ".join(f"n.k{i} = o.k{i}" for i in range(len(fields)))
    con.register("__pk_new", new)
    con.register("__pk_old", old)
    try:
        result = con.sql(f"SELECT DISTINCT n.* FROM __pk_new n SEMI JOIN __pk_old o ON {on}")
        return (getattr(result, "to_arrow_table", None) or result.arrow)()  # duckdb 2.x and 1.x
    finally:
        con.unregister("__pk_new")
        con.unregister("__pk_old")


def check_commit(
    table: str,
    current: TableMetadata | None,
    updated: TableMetadata,
    io: FileIO,
    *,
    declared: Sequence[str] = (),
    confinement: Confinement | None = None,
) -> None:
    """PK2-PK4: IntegrityError when the commit from ``current`` (None: the table is
    created by this commit) to ``updated`` would leave a NULL key or a key held by two
    live rows of table ``table``; nothing is read for a table without key (PK1) or a
    commit that adds no data file."""
    fields = key_columns(updated, declared)
    head = updated.current_snapshot()
    if not fields or head is None:
        return
    old_ids = {s.snapshot_id for s in current.snapshots} if current is not None else set()
    old_head = current.current_snapshot() if current is not None else None
    if old_head is not None and head.snapshot_id == old_head.snapshot_id:
        return  # the head is unchanged: commits to other branches are not checked
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.table import FileScanTask

    if _descends_through_new(updated, head, old_head, old_ids):
        new_ids = {
            s.snapshot_id for s in updated.snapshots
            if s.snapshot_id not in old_ids and not (s.summary is not None and s.summary.operation.value == "replace")
        }  # fmt: skip
        added = _added_data_files(io, head, new_ids) if new_ids else []
    else:
        added = _brought_data_files(io, head, old_head, confinement)
    if not added:
        return
    _, delete_paths = plan_snapshot(table, head, io, confinement)
    deletes = _delete_files(io, head, set(delete_paths))
    new = _read_keys(updated, io, fields, [FileScanTask(f, delete_files=set(deletes)) for f in added], AlwaysTrue())
    if new.num_rows == 0:
        return
    names = ", ".join(f.name for f in fields)
    for i, f in enumerate(fields):
        if new.column(f"k{i}").null_count:
            raise IntegrityError(
                f"PRIMARY KEY constraint failed: table {table}: key column {f.name!r} of key ({names}) "
                "would hold NULL (a key's columns are NOT NULL)"
            )
    con = _duck()
    columns = ", ".join(f"k{i}" for i in range(len(fields)))
    con.register("__pk_new", new)
    try:
        twice = con.execute(f"SELECT {columns} FROM __pk_new GROUP BY ALL HAVING count(*) > 1 LIMIT 1").fetchall()
    finally:
        con.unregister("__pk_new")
    if twice:
        raise IntegrityError(
            f"PRIMARY KEY constraint failed: table {table}: the rows written hold key ({names}) = "
            f"({_show(twice[0])}) more than once; nothing was written"
        )
    found = _existing(table, updated, io, fields, new, head, confinement, frozenset(f.file_path for f in added))
    if found.num_rows:
        raise IntegrityError(
            f"PRIMARY KEY constraint failed: table {table} already holds key ({names}) = "
            f"({_show(found.slice(0, 1).to_pylist()[0].values())}); nothing was written"
        )


def duplicate_key(
    table: str, metadata: TableMetadata, io: FileIO, *, key_ids: Sequence[int] = (),
    confinement: Confinement | None = None,
) -> str | None:
    """PK6 (verify ``--data``): what breaks the key of ``metadata``'s current snapshot
    (a key two live rows hold, or a NULL in a key column), said in a sentence naming the
    table, the key and the value; None when nothing does or the table has no key.
    ``key_ids``: the field ids of the definition's primary key (PK1), else the schema's
    identifier fields. Reads every live data file's key columns (deletes applied):
    tables written by other engines, directly to Iceberg, were never checked (PK2)."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.table import FileScanTask

    schema = metadata.schema()
    fields = [schema.find_field(i) for i in key_ids] if key_ids else key_columns(metadata)
    snapshot = metadata.current_snapshot()
    if not fields or snapshot is None:
        return None
    data_paths, delete_paths = plan_snapshot(table, snapshot, io, confinement)
    chosen = set(data_paths)
    data_files = snapshot_data_files(snapshot, io, confinement, lambda p: p in chosen)
    deletes = _delete_files(io, snapshot, set(delete_paths))
    rows = _read_keys(metadata, io, fields, [FileScanTask(f, delete_files=set(deletes)) for f in data_files],
                      AlwaysTrue())  # fmt: skip
    names = ", ".join(f.name for f in fields)
    for i, f in enumerate(fields):
        nulls = rows.column(f"k{i}").null_count
        if nulls:
            return f"table {table}: key column {f.name!r} of key ({names}) holds NULL in {nulls} live row(s)"
    con = _duck()
    columns = ", ".join(f"k{i}" for i in range(len(fields)))
    con.register("__pk_all", rows)
    try:
        twice = con.execute(
            f"SELECT {columns}, count(*) FROM __pk_all GROUP BY ALL HAVING count(*) > 1 ORDER BY ALL LIMIT 1"
        ).fetchall()
        count = con.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM __pk_all GROUP BY {columns} HAVING count(*) > 1)"
        ).fetchall()[0][0] if twice else 0
    finally:
        con.unregister("__pk_all")
    if not twice:
        return None
    return (
        f"table {table}: {twice[0][-1]} live rows hold key ({names}) = ({_show(twice[0][:-1])})"
        f"{f', and {count - 1} other key(s) are held more than once' if count > 1 else ''}; the key is "
        "enforced on writes through this project only (written by another engine directly to Iceberg?)"
    )
