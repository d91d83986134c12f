"""The rows a snapshot's position delete files delete, as our reads (Q2) and UPDATE,
DELETE and MERGE (Q4, MG1) apply them: one Arrow table of row keys per scan, built from
delete files decoded once per engine (issue 34).

A row's key is its data file's position in the scan's list of data files times 2**40
plus its 0-based row number in that file (:data:`ROW_KEY_SHIFT`), the same BIGINT a
view computes from read_parquet's hidden ``file_index`` and ``file_row_number``. A view
anti-joins the table of keys registered on its cursor; before, every statement read the
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
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any, Callable, Sequence

__all__ = ["KEPT_POSITIONS", "KEPT_SCANS", "KEY_COLUMN", "ROW_KEY_SHIFT", "DeletedRows", "data_file_key"]

#: A row's key: its data file's position in the scan times this, plus its row number.
ROW_KEY_SHIFT = 1 << 40
#: The column of a scan's table of deleted rows.
KEY_COLUMN = "row_key"
#: DP1: the positions an engine keeps decoded (12 bytes each: ~48 MB).
KEPT_POSITIONS = 4_000_000
#: DP2: the scans whose tables of deleted rows an engine keeps.
KEPT_SCANS = 8


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


#: read(files): ``SELECT file_index, file_path, pos FROM read_parquet(files)`` as Arrow.
Reader = Callable[[Sequence[str]], Any]


class DeletedRows:
    """DP1, DP2: one engine's decoded position delete files and recent scans' keys."""

    def __init__(self, kept_positions: int = KEPT_POSITIONS, kept_scans: int = KEPT_SCANS) -> None:
        self.kept_positions = kept_positions
        self.kept_scans = kept_scans
        self._files: OrderedDict[str, _Decoded] = OrderedDict()
        self._positions = 0
        self._scans: OrderedDict[tuple[tuple[str, ...], tuple[str, ...]], Any] = OrderedDict()
        self._lock = threading.Lock()
        self.decoded = 0  # delete files decoded (each read once while kept)

    def info(self) -> dict[str, int]:
        """What is kept: delete files, their positions, the bound, scans, files decoded."""
        with self._lock:
            return {
                "files": len(self._files), "positions": self._positions, "kept_positions": self.kept_positions,
                "scans": len(self._scans), "decoded": self.decoded,
            }  # fmt: skip

    def clear(self) -> None:
        with self._lock:
            self._files.clear()
            self._scans.clear()
            self._positions = 0

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
