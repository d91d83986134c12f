"""The rows a snapshot's position delete files delete, as our reads (Q2) and UPDATE,
DELETE and MERGE (Q4, MG1) apply them: one Arrow table of row keys per scan (and for
reads, one of bitmaps), built from delete files decoded once per engine (issue 34).

A row's key is its data file's position in the scan's list of data files times 2**40
plus its 0-based row number in that file (:data:`ROW_KEY_SHIFT`), the same BIGINT a
view computes from read_parquet's hidden ``file_index`` and ``file_row_number``.
UPDATE, DELETE and MERGE anti-join the table of keys registered on their cursor, a view
tests each row's bit in its file's bitmap (DP4); before, every statement read the
delete files again and computed a path key with three regular expressions per deleted
row, which made the GROUP BY after a few 1 % merge-on-read DELETEs of 1,000,000 rows
about twice the CPU of the same GROUP BY without deletes.

Rules:

  DP1 A position delete file is decoded once per engine (its ``file_path`` and ``pos``
      columns, read by DuckDB through the engine's sandbox): the canonical keys of the
      data file paths it names (:func:`data_file_key`) and, per row, which
      of them and the position. Iceberg never rewrites a file, so a decoded file is
      never invalidated; what is kept is bounded by its number of positions
      (:data:`KEPT_POSITIONS`, least recently used first out; a file larger than the
      bound is decoded for the statement and not kept) and reported by
      :meth:`DeletedRows.info`.
  DP2 A scan's deleted rows are the keys of the rows of its delete files whose path
      names one of its data files, compared by canonical key on both sides (``file:/x``,
      ``file:///x`` and ``/x`` are one file, as merge-on-read's writer and the rewrite
      compare them); a row naming a file that is not in the scan, or with a NULL path
      or position, deletes nothing here. The table has one BIGINT column
      :data:`KEY_COLUMN`; the same keys may repeat (two delete files deleting one row).
      The last few scans' tables are kept (:data:`KEPT_SCANS`).
  DP3 A delete file a statement of this engine committed (iceberg.deletes RD5) is
      remembered from the positions it was written from (:meth:`DeletedRows.remember`,
      under the same bound as DP1), not read back by the next statement: the same
      rows, since a file never changes. Measured (2026-11-27, duckdb 2.0.1): reading
      back a 10,000-position delete file cost the statement after a 1 % UPDATE or
      DELETE of 1,000,000 rows 2-3.4 ms of CPU.
  DP4 A read (a view, sql.query.views Q2) tests a row against a bitmap of its data
      file instead of anti-joining the keys (:meth:`DeletedRows.bitmaps_of_scan`;
      not in an UPDATE or DELETE, which anti-joins its scan's keys anyway):
      per data file of the scan with deleted rows, one bit per row of the file (its
      footer's row count, read once per engine and kept, at most
      :data:`KEPT_ROW_COUNTS` files; more bits if a position lies beyond it), 1 =
      deleted, made from exactly DP2's keys (so the same rows, duplicates, NULLs and
      files outside the scan included), so ``get_bit`` of any row number of the file
      is in range. One Arrow row: the list of the bitmaps as BLOBs (DuckDB casts a
      BLOB's bytes to BIT most significant bit first, as ``numpy.packbits`` packs
      them) and, per data file of the scan, the 1-based index of its bitmap there or
      NULL (a file without deleted rows). Not made (the anti-join instead) for more than
      :data:`BITMAP_FILES` such files, bitmaps over :data:`BITMAP_BYTES`, or a file
      whose row count is not known or beyond ``get_bit``'s INTEGER index; the kept
      bitmaps of recent scans are bounded by :data:`KEPT_BITMAP_BYTES` in all, least
      recently used out, and reported by :meth:`DeletedRows.info`. Measured
      (2026-11-27, duckdb 2.0.1, DuckDB alone, process CPU least of 9-15, load 4-7):
      GROUP BY of 1,000,000 rows, 6 % deleted in every file, with the anti-join /
      ``get_bit`` on the bitmap its file's slot names (as here) / no deletes: 1
      file 46.5 / 36.2 / 25.6 ms, 4 files 47.9 / 36.9 / 25.3, 16 files 52.6 / 42.1 /
      29.6, 64 files 59.4 / 48.8 / 35.5, 256 files 87.3 / 73.8 / 62.0; a CASE on the
      file's position per bitmap instead of the lists costs more with each file (4
      files 40.2, 16 files 53.7, 64 files 101.1 ms); with a bitmap only up to the last
      deleted row, the ``least`` that keeps later row numbers in range cost 4 ms more.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any, Callable, Sequence

__all__ = [
    "BITMAP_BYTES", "BITMAP_FILES", "BITS_COLUMN", "SLOTS_COLUMN", "KEPT_BITMAP_BYTES", "KEPT_POSITIONS", "KEPT_ROW_COUNTS", "KEPT_SCANS",
    "KEY_COLUMN", "ROW_KEY_SHIFT", "Bitmaps", "DeletedRows", "data_file_key",
]  # fmt: skip

#: A row's key: its data file's position in the scan times this, plus its row number.
ROW_KEY_SHIFT = 1 << 40
#: The column of a scan's table of deleted rows.
KEY_COLUMN = "row_key"
#: DP1: the positions an engine keeps decoded (12 bytes each: ~48 MB).
KEPT_POSITIONS = 4_000_000
#: DP2: the scans whose tables of deleted rows an engine keeps.
KEPT_SCANS = 8
#: DP4: a scan's bitmaps at most this many files and bytes (64 M rows), else the anti-join.
BITMAP_FILES = 256
BITMAP_BYTES = 8 << 20
#: DP4: the bytes of bitmaps an engine keeps for recent scans.
KEPT_BITMAP_BYTES = 32 << 20
#: DP4: the columns of a scan's table of bitmaps.
BITS_COLUMN, SLOTS_COLUMN = "bits", "slots"
#: DP4: the data files whose row counts an engine keeps.
KEPT_ROW_COUNTS = 20_000


def data_file_key(location: str) -> str:
    """A data file's canonical location without its scheme and leading slashes: the
    same for the path a manifest holds and the one DuckDB reports (``memory://x`` vs
    ``memory:///x``, ``file:/x`` vs ``file:///./x`` vs ``/x``)."""
    from trinitylake_dbapi.iceberg.locations import canonical_location

    return re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*:(//)?", "", canonical_location(location)).lstrip("/")


class _Decoded:
    """One delete file (DP1): the keys of the data files it names, and per row the
    index of its file's key and its position."""

    __slots__ = ("keys", "which", "pos")

    def __init__(self, keys: tuple[str, ...], which: Any, pos: Any) -> None:
        self.keys = keys
        self.which = which
        self.pos = pos


class Bitmaps:
    """DP4: a scan's deleted rows as one bitmap per data file with deleted rows."""

    __slots__ = ("table", "files", "size")

    def __init__(self, table: Any, files: tuple[int, ...], size: int) -> None:
        #: One row: :data:`BITS_COLUMN`, the bitmaps (BLOBs) of ``files`` in order, and
        #: :data:`SLOTS_COLUMN`, per data file of the scan the 1-based index of its
        #: bitmap there or NULL.
        self.table = table
        #: The positions in the scan of the files with deleted rows.
        self.files = files
        self.size = size


#: rows(files): each data file's row count (as its footer says); a file left out is unknown.
Counter = Callable[[Sequence[str]], "dict[str, int]"]

#: read(files): ``SELECT file_index, file_path, pos FROM read_parquet(files)`` as Arrow.
Reader = Callable[[Sequence[str]], Any]


class DeletedRows:
    """DP1, DP2, DP4: one engine's decoded position delete files and recent scans' keys
    and bitmaps."""

    def __init__(
        self,
        kept_positions: int = KEPT_POSITIONS,
        kept_scans: int = KEPT_SCANS,
        bitmap_files: int = BITMAP_FILES,
        bitmap_bytes: int = BITMAP_BYTES,
    ) -> None:
        self.kept_positions = kept_positions
        self.kept_scans = kept_scans
        #: DP4's bounds of one scan's bitmaps (beyond them, the anti-join).
        self.bitmap_files = bitmap_files
        self.bitmap_bytes = bitmap_bytes
        self._files: OrderedDict[str, _Decoded] = OrderedDict()
        self._positions = 0
        self._scans: OrderedDict[tuple[tuple[str, ...], tuple[str, ...]], Any] = OrderedDict()
        self._bitmaps: OrderedDict[tuple[tuple[str, ...], tuple[str, ...]], Bitmaps | None] = OrderedDict()
        self._bitmap_bytes = 0
        self._rows: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        self.decoded = 0  # delete files decoded (each read once while kept)

    def info(self) -> dict[str, int]:
        """What is kept: delete files, their positions, the bound, scans, files decoded."""
        with self._lock:
            return {
                "files": len(self._files), "positions": self._positions, "kept_positions": self.kept_positions,
                "scans": len(self._scans), "decoded": self.decoded,
                "bitmap_scans": len(self._bitmaps), "bitmap_bytes": self._bitmap_bytes,
                "kept_bitmap_bytes": KEPT_BITMAP_BYTES, "row_counts": len(self._rows),
            }  # fmt: skip

    def clear(self) -> None:
        with self._lock:
            self._files.clear()
            self._scans.clear()
            self._positions = 0
            self._bitmaps.clear()
            self._bitmap_bytes = 0
            self._rows.clear()

    def of_scan(self, data_files: Sequence[str], deletes: Sequence[str], read: Reader) -> Any:
        """DP2: the Arrow table (one BIGINT column ``row_key``) of the rows that the
        position delete files ``deletes`` delete from ``data_files`` (both as DuckDB
        opens them, in the scan's order); ``read`` decodes the files not kept (DP1)."""
        import numpy as np
        import pyarrow as pa

        scan = (tuple(data_files), tuple(deletes))
        with self._lock:
            found = self._scans.get(scan)
            if found is not None:
                self._scans.move_to_end(scan)
                return found
        decoded = self._decoded(scan[1], read)
        index = {data_file_key(f): i for i, f in enumerate(scan[0])}
        parts = []
        for d in decoded:
            if not len(d.pos):
                continue
            files = np.array([index.get(k, -1) for k in d.keys], dtype=np.int64)[d.which]
            live = files >= 0
            parts.append(files[live] * ROW_KEY_SHIFT + d.pos[live])
        keys = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        table = pa.table({KEY_COLUMN: pa.array(keys, pa.int64())})
        with self._lock:
            self._scans[scan] = table
            while len(self._scans) > self.kept_scans:
                self._scans.popitem(last=False)
        return table

    def bitmaps_of_scan(
        self, data_files: Sequence[str], deletes: Sequence[str], read: Reader, rows: Counter
    ) -> Bitmaps | None:
        """DP4: the bitmaps of the rows :meth:`of_scan` keys (``data_files``,
        ``deletes``, ``read`` as there; ``rows`` counts the rows of data files whose
        count is not kept); None when they would exceed ``bitmap_files`` files or
        ``bitmap_bytes`` bytes or a file's count is unknown (the caller anti-joins the
        keys)."""
        import numpy as np
        import pyarrow as pa

        scan = (tuple(data_files), tuple(deletes))
        with self._lock:
            if scan in self._bitmaps:
                self._bitmaps.move_to_end(scan)
                return self._bitmaps[scan]
        keys = np.sort(self.of_scan(data_files, deletes, read).column(KEY_COLUMN).to_numpy())
        which, positions = keys // ROW_KEY_SHIFT, keys % ROW_KEY_SHIFT
        files = np.unique(which)
        made: Bitmaps | None = None
        counts = self._row_counts([scan[0][int(f)] for f in files], rows) if len(files) <= self.bitmap_files else {}
        if not len(files):  # nothing of the scan's files is deleted
            made = Bitmaps(pa.table({}), (), 0)
        elif len(counts) == len(files):
            starts, ends = np.searchsorted(which, files, side="left"), np.searchsorted(which, files, side="right")
            bits = [max(counts[scan[0][int(f)]], int(positions[e - 1]) + 1) for f, e in zip(files, ends)]
            size = sum((n + 7) // 8 for n in bits)
            if size <= self.bitmap_bytes and max(bits, default=0) < 2**31:
                maps = []
                for a, e, n in zip(starts, ends, bits):
                    deleted = np.zeros(n, dtype=bool)
                    deleted[positions[a:e]] = True
                    maps.append(np.packbits(deleted).tobytes())
                slots: list[int | None] = [None] * len(scan[0])
                for slot, f in enumerate(files, 1):
                    slots[int(f)] = slot
                table = pa.table({
                    BITS_COLUMN: pa.array([maps], pa.list_(pa.binary())),
                    SLOTS_COLUMN: pa.array([slots], pa.list_(pa.int64())),
                })  # fmt: skip
                made = Bitmaps(table, tuple(int(f) for f in files), size + 8 * len(slots))
        with self._lock:
            if scan not in self._bitmaps:
                self._bitmaps[scan] = made
                self._bitmap_bytes += made.size if made else 0
                while self._bitmap_bytes > KEPT_BITMAP_BYTES and self._bitmaps:
                    _, old = self._bitmaps.popitem(last=False)
                    self._bitmap_bytes -= old.size if old else 0
        return made

    def _row_counts(self, files: Sequence[str], rows: Counter) -> dict[str, int]:
        """DP4: the row counts of ``files`` known (kept, or counted by ``rows`` now)."""
        with self._lock:
            known = {f: self._rows[f] for f in files if f in self._rows}
        new = [f for f in files if f not in known]
        if new:
            wanted = set(new)
            counted = {f: int(n) for f, n in rows(new).items() if f in wanted and n is not None}
            known.update(counted)
            with self._lock:
                self._rows.update(counted)
                while len(self._rows) > KEPT_ROW_COUNTS:
                    self._rows.popitem(last=False)
        return known

    def remember(self, file: str, deleted: Sequence[tuple[str, Any]]) -> None:
        """DP3: the delete file ``file`` (as DuckDB opens it) holds, for each (data
        file location, positions) of ``deleted``, those positions: kept as if decoded
        (DP1), unless the file is kept already or exceeds the bound."""
        import numpy as np

        pos = [np.asarray(p, dtype=np.int64) for _, p in deleted]
        if not pos:
            return
        decoded = _Decoded(
            tuple(data_file_key(path) for path, _ in deleted),
            np.repeat(np.arange(len(pos), dtype=np.int64), [len(p) for p in pos]),
            np.concatenate(pos),
        )
        with self._lock:
            self._keep(file, decoded)

    def _decoded(self, deletes: Sequence[str], read: Reader) -> list[_Decoded]:
        """DP1: each of ``deletes`` decoded, the new ones in one ``read``."""
        with self._lock:
            known = {}
            for f in deletes:
                d = self._files.get(f)
                if d is not None:
                    self._files.move_to_end(f)
                    known[f] = d
        new = [f for f in dict.fromkeys(deletes) if f not in known]
        if new:
            fresh = _decode(new, read(new))
            known.update(fresh)
            with self._lock:
                self.decoded += len(new)
                for f, d in fresh.items():
                    self._keep(f, d)
        return [known[f] for f in deletes]

    def _keep(self, file: str, decoded: _Decoded) -> None:
        """DP1 (under the lock): keep ``decoded`` as ``file``'s unless it alone exceeds the
        bound or is kept already, then drop the least recently used beyond the bound."""
        if len(decoded.pos) > self.kept_positions or file in self._files:
            return
        self._files[file] = decoded
        self._positions += len(decoded.pos)
        while self._positions > self.kept_positions and self._files:
            _, old = self._files.popitem(last=False)
            self._positions -= len(old.pos)


def _decode(files: Sequence[str], table: Any) -> dict[str, _Decoded]:
    """DP1: the rows ``table`` (``file_index``, ``file_path``, ``pos`` of ``files``)
    grouped by delete file; rows with a NULL path or position are left out."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    valid = pc.and_(pc.is_valid(table.column("file_path")), pc.is_valid(table.column("pos")))
    if not pc.all(valid).as_py():
        table = table.filter(valid)
    which_file = table.column("file_index").to_numpy().astype(np.int64, copy=False)
    order = np.argsort(which_file, kind="stable")
    which_file = which_file[order]
    paths = table.column("file_path").take(pa.array(order))
    pos = table.column("pos").to_numpy().astype(np.int64, copy=False)[order]
    bounds = np.searchsorted(which_file, np.arange(len(files) + 1))
    out: dict[str, _Decoded] = {}
    for i, f in enumerate(files):
        start, end = int(bounds[i]), int(bounds[i + 1])
        encoded = paths.slice(start, end - start).combine_chunks().dictionary_encode()
        keys = tuple(data_file_key(p) for p in encoded.dictionary.to_pylist())
        which = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        out[f] = _Decoded(keys, which, pos[start:end].copy())
    return out
