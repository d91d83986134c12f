"""Small data files' rows kept decoded in the engine's DuckDB database (issue 34).

After many small commits a table is a handful of small Parquet files (automatic
compaction leaves ~15 after 300 one-row commits), and DuckDB opens and decodes each of
them at every statement: most of a count's CPU. A data file never changes once written
(Iceberg: every file has a new, unique name), so its rows can be read once.

Rules:

  SF1. The rows of a SMALL data file (at most ``SMALL_FILE_ROWS`` rows and
      ``SMALL_FILE_BYTES`` bytes, as its manifest entry states them: iceberg.planning
      PC8) that a reading statement's view reads by field id are read once per engine
      database into a table of that database, a *segment* (one per ``read_parquet``
      schema argument, which spells the table's columns, field ids and types), by
      DuckDB's own ``read_parquet`` with the very schema argument the view uses: so the
      segment holds exactly the rows, values and types (typed NULLs, nested types,
      columns added or renamed since) a read of the file gives. Each file gets a number
      there (``fid``). The view of a scan then reads those files as ``SELECT c0.. FROM
      segment WHERE fid IN (..)``, UNION ALL ``read_parquet`` of its other files, and
      DuckDB no longer opens each small file at every statement (with position delete
      files too: SF5). Measured (2026-11-27,
      duckdb 2.0.1, process CPU): a count after 300 one-row commits (15 files) 5.4 ->
      2.0 ms per statement, a point lookup there 3.5 -> 2.2 ms; per file, a count
      over the kept rows against read_parquet 0.47 / 0.67 ms at 20 rows, 0.46 / 0.95
      ms at 10,000 rows, 0.69 / 2.5 ms at 100,000 (reading it in: 0.8, 2.7 and 15 ms
      once); rows of files no scan names any more cost ~0.1 ms per 1,000,000 (zone
      maps skip them). The bounds are about memory, not speed. Used only when every
      file of the scan is small or at least ``MIN_SMALL_FILES`` are; never for files
      without field ids (Q10, read by name), nor for a statement that reads its scan
      once (UPDATE, DELETE, MERGE: reading it into a segment first would cost more).
  SF2. Bounded per engine database: the rows held (as read) at most ``CACHE_ROWS``
      and the bytes of the files held (as their manifests state them) at most
      ``CACHE_BYTES``, over all segments. To make room, whole segments are dropped,
      least recently used first (with the shared views, engine QX3, whose text names
      them), never one a view of the asking statement reads; a scan whose small files
      cannot fit reads its files directly. Statements of a connection run one at a time
      (connection CN1), and a result still being read when its segment is dropped reads
      on to its end (its DuckDB transaction holds the table; tested). A segment also keeps the rows of files no
      later scan names (compacted away): they count until their segment is dropped.
      :meth:`SmallFileRows.info` (``Engine.small_files_info``) reports it.
  SF3. Only rows read by the engine's own locked DuckDB (engine QX2) from the files the
      view would read are ever kept; nothing comes from Python. One append at a time
      per engine database, so a file is never in a segment twice; an append is one
      DuckDB statement: when it fails (the memory limit, a damaged file) the segment is
      as before and the view reads the files directly, so a damaged file fails as it
      always did, naming the file (Q8). Segments live in the database that made them:
      a new database (QX2 admission, QX4 fork) starts with none.
  SF4. A file damaged, replaced or deleted after its rows were kept still reads as
      kept, i.e. as the metadata that names it promises (as planning PC2 answers from
      decoded manifests); ``verify --data`` and a new connection read the files
      themselves.
  SF5. A segment keeps each row's ``file_row_number`` (its position in its file), so a
      scan with position delete files reads kept rows too: the FROM item gives each
      row the ``file_index`` read_parquet would (its file's position in the scan, from
      its fid) and its ``file_row_number``, and the anti-join on the deleted rows' keys
      (sql.query.positions DP2) matches exactly the rows it matches in the files.
  SF6. A connection's first statement that reads a file of a schema with no segment
      yet reads it directly; a later one that reads it again makes the segment. So a
      connection that reads a table once pays nothing for keeping (a one-statement
      connection's count after 300 one-row commits: 27.0 ms CPU when keeping at the
      first read, 23.8 ms reading directly), and once a segment exists each new file is
      kept at its first read (a count right after each one-row INSERT: 6.0 ms, against
      8.0 ms when every new file waited for its second read and 7.1 ms without keeping).
      The paths read once are remembered, at most ``SEEN_FILES``, oldest forgotten first.
  SF7. The memory the database's tables take, as DuckDB reports it (``duckdb_memory()``,
      tag IN_MEMORY_TABLE), is measured after an append that makes a segment or at
      least doubles its rows since it was last measured; when it is over
      ``CACHE_MEMORY``, segments are dropped as in SF2 (least recently used first,
      never one the asking statement reads) until it is not, the appended one last:
      its schema is then not kept again (read directly; at most ``WIDE_SCHEMAS``
      remembered). SF2 bounds the files'
      stated bytes, which compression makes far smaller than their rows decoded:
      250,000 rows of a highly compressible 1,000-character string are ~1 MB of
      Parquet and 256 MB in memory (duckdb 2.0.1). A measurement costs ~0.35 ms.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Sequence

from trinitylake_dbapi.sql.query.types import string_literal

#: SF1: a data file is small up to these rows and bytes (its manifest entry's counts).
SMALL_FILE_ROWS = 10_000
SMALL_FILE_BYTES = 1 << 20
#: SF1: a scan that also reads larger files keeps its small ones only from this many
#: (measured beside one file of 100,000 rows, a count's CPU: kept against read 3.39 /
#: 3.06 ms with 1 small file, 3.20 / 3.31 with 2, 3.47 / 3.96 with 4, 3.02 / 4.06 with 8).
MIN_SMALL_FILES = 4
#: SF6: small files remembered as read once (their paths), at most.
SEEN_FILES = 20_000
#: SF2: rows and file bytes all segments of a database hold at most.
CACHE_ROWS = 250_000
CACHE_BYTES = 64 << 20
#: SF7: the memory of the database's tables beyond which segments are dropped.
CACHE_MEMORY = 64 << 20
#: SF7: schemas whose segment alone was over CACHE_MEMORY, remembered at most.
WIDE_SCHEMAS = 256
#: SF7: the memory DuckDB's tables take in the database.
_TABLE_MEMORY = "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() WHERE tag = 'IN_MEMORY_TABLE'"

#: (path as DuckDB opens it, rows, bytes) of one planned data file (iceberg.planning PC8).
PlannedFile = tuple[str, int, int]


@dataclass(eq=False)
class _Segment:
    name: str
    schema: str
    #: path -> fid of each file whose rows it holds, in the order they were read.
    fids: dict[str, int] = field(default_factory=dict)
    rows: int = 0
    bytes: int = 0
    #: SF7: its rows when the database's memory was last measured after an append to it.
    measured_rows: int = 0


class SmallFileRows:
    """SF1-SF3: the segments of one engine database."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # SF3: one append (and its bookkeeping) at a time
        self._segments: OrderedDict[str, _Segment] = OrderedDict()  # least recently used first
        self._current: dict[str, str] = {}  # schema argument -> its segment taking new files
        self._numbers = itertools.count(1)
        #: SF6: small files statements have read directly once, oldest first.
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._rows = 0
        self._bytes = 0
        #: SF7: schemas read directly since their segment alone was over CACHE_MEMORY.
        self._wide: OrderedDict[str, None] = OrderedDict()
        self._memory = 0  # SF7: the last measurement

    def info(self) -> dict[str, int]:
        """SF2: ``segments``, ``files``, ``rows`` and ``bytes`` held, and the bounds
        ``limit_rows``, ``limit_bytes``, ``file_rows`` and ``file_bytes`` (what a small
        file is at most); SF7: ``memory`` (the last measurement of the database's
        tables), ``limit_memory`` and ``wide_schemas``."""
        with self._lock:
            return {"segments": len(self._segments), "files": sum(len(s.fids) for s in self._segments.values()),
                    "rows": self._rows, "bytes": self._bytes, "limit_rows": CACHE_ROWS, "limit_bytes": CACHE_BYTES,
                    "memory": self._memory, "limit_memory": CACHE_MEMORY, "wide_schemas": len(self._wide),
                    "file_rows": SMALL_FILE_ROWS, "file_bytes": SMALL_FILE_BYTES}  # fmt: skip

    def read(
        self,
        schema: str,
        columns: int,
        files: Sequence[PlannedFile],
        run: Callable[[str], Any],
        held: Collection[str],
        dropping: Callable[[list[str]], None],
        error: type[BaseException],
        interrupt: type[BaseException],
        *,
        keys: bool = False,
    ) -> str | None:
        """SF1: the FROM item reading ``files`` (columns ``c0`` .. ``c<columns - 1>``,
        by the ``read_parquet`` schema argument ``schema``) with their small files'
        rows from a segment, read into it now (through ``run``, on the asking
        statement's cursor) when not there yet; None when the scan is not for it or
        its small files do not fit (SF2): the caller reads every file directly.
        ``held``: the SQL texts of the views the asking statement uses (their
        segments are never dropped); ``dropping(names)`` is called, before they are
        dropped, with the segments dropped to make room; DuckDB's ``error`` fails an
        append (read directly then), its ``interrupt`` is raised. ``keys``: the FROM
        item also gives each row's ``file_row_number`` and ``file_index`` (its file's
        position in ``files``), as read_parquet does (SF5)."""
        small = [f for f in files if f[1] <= SMALL_FILE_ROWS and f[2] <= SMALL_FILE_BYTES]
        with self._lock:
            if schema in self._wide:  # SF7
                return None
            segment = self._segments.get(self._current.get(schema, ""))
            # SF6: with no segment for the schema yet, files are read directly the first time.
            unseen = [f for f in small if f[0] not in self._seen] if segment is None else []
            for f in unseen:
                self._seen[f[0]] = None
                if len(self._seen) > SEEN_FILES:
                    self._seen.popitem(last=False)
            if unseen:
                once = {f[0] for f in unseen}
                small = [f for f in small if f[0] not in once]
            if not small or (len(small) < len(files) and len(small) < MIN_SMALL_FILES):
                return None
            if sum(f[1] for f in small) > CACHE_ROWS or sum(f[2] for f in small) > CACHE_BYTES:
                return None
            dropped: list[str] = []
            while True:
                missing = [f for f in small if segment is None or f[0] not in segment.fids]
                rows, size = sum(f[1] for f in missing), sum(f[2] for f in missing)
                if self._rows + rows <= CACHE_ROWS and self._bytes + size <= CACHE_BYTES:
                    break
                victim = next((s for s in self._segments.values() if not any(s.name in t for t in held)), None)
                if victim is None:
                    break
                self._forget(victim)
                dropped.append(victim.name)
                if victim is segment:
                    segment = None
            if dropped:
                dropping(dropped)
                for name in dropped:
                    run(f"DROP TABLE IF EXISTS {name}")
            if self._rows + rows > CACHE_ROWS or self._bytes + size > CACHE_BYTES:
                return None
            if missing:
                new = segment is None
                name = f"__tl_small_{next(self._numbers)}_rows" if new else segment.name
                numbers = [next(self._numbers) for _ in missing]
                select = ", ".join(f"c{i}" for i in range(columns))
                paths = ", ".join(string_literal(f[0]) for f in missing)
                read = (
                    f"SELECT [{', '.join(map(str, numbers))}][CAST(file_index AS BIGINT) + 1] AS fid, {select}, "
                    f"file_row_number FROM read_parquet([{paths}], schema = {schema})"
                )
                try:
                    result = run(f"CREATE TABLE {name} AS {read}" if new else f"INSERT INTO {name} {read}")
                except error as e:
                    if isinstance(e, interrupt):
                        raise
                    return None  # SF3: as before; the direct read names a damaged file
                if new:
                    segment = _Segment(name, schema)
                    self._segments[name] = segment
                    self._current[schema] = name
                read_rows = int(result[0][0]) if result and result[0] else rows
                segment.fids.update((f[0], n) for f, n in zip(missing, numbers))
                segment.rows += read_rows
                segment.bytes += size
                self._rows += read_rows
                self._bytes += size
                if segment.rows >= 2 * segment.measured_rows and not self._fits_memory(segment, run, held, dropping):
                    return None
            assert segment is not None
            self._segments.move_to_end(segment.name)
            fids = [segment.fids[f[0]] for f in small]
        select = ", ".join(f"c{i}" for i in range(columns))
        kept_files = {f[0] for f in small}
        position = {f[0]: i for i, f in enumerate(files)}
        rest = [f[0] for f in files if f[0] not in kept_files]
        kept = f"SELECT {select}"
        if keys:  # SF5: the row's file's position in the scan, and its row number there
            cases = " ".join(f"WHEN {n} THEN {position[f[0]]}" for f, n in zip(small, fids))
            kept += f", file_row_number, CASE fid {cases} END AS file_index"
        kept += f" FROM {segment.name} WHERE fid IN ({', '.join(map(str, fids))})"
        if not rest:
            return f"({kept})"
        paths = ", ".join(string_literal(p) for p in rest)
        other = f"SELECT {select}"
        if keys:
            indexes = ", ".join(str(position[p]) for p in rest)
            other += f", file_row_number, [{indexes}][CAST(file_index AS BIGINT) + 1] AS file_index"
        return f"({kept} UNION ALL {other} FROM read_parquet([{paths}], schema = {schema}))"

    def _fits_memory(
        self, segment: _Segment, run: Callable[[str], Any], held: Collection[str], dropping: Callable[[list[str]], None]
    ) -> bool:
        """SF7, after an append to ``segment`` (the caller holds the lock): measure the
        database's tables, drop segments while they are over CACHE_MEMORY; False when
        ``segment`` itself had to go (its schema then read directly)."""
        segment.measured_rows = segment.rows
        self._memory = int(run(_TABLE_MEMORY)[0][0])
        while self._memory > CACHE_MEMORY:
            free = [s for s in self._segments.values() if not any(s.name in t for t in held)]
            victim = next((s for s in free if s is not segment), None)
            if victim is None:
                if segment not in free:
                    return True  # a view of the asking statement reads it: kept for now
                self._wide[segment.schema] = None
                if len(self._wide) > WIDE_SCHEMAS:
                    self._wide.popitem(last=False)
                victim = segment
            self._forget(victim)
            dropping([victim.name])
            run(f"DROP TABLE IF EXISTS {victim.name}")
            self._memory = int(run(_TABLE_MEMORY)[0][0])
            if victim is segment:
                return False
        return True

    def _forget(self, segment: _Segment) -> None:
        """SF2: stop counting ``segment`` (the caller holds the lock and drops its table)."""
        del self._segments[segment.name]
        if self._current.get(segment.schema) == segment.name:
            del self._current[segment.schema]
        self._rows -= segment.rows
        self._bytes -= segment.bytes
