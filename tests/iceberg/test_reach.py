"""What a table's metadata reaches (iceberg.reach R1, R5, R6), read with the reader
trees of iceberg.manifests (MF1) and checked against PyIceberg's own reading."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyiceberg.avro.file
import pytest

import trinitylake_dbapi as tl
from trinitylake_dbapi.iceberg import TrinityLakeCatalog
from trinitylake_dbapi.iceberg.reach import IcebergReach
from trinitylake_dbapi.storage.locations import canonical_location


def _pyiceberg_reach(table: Any) -> tuple[set[str], dict[str, int]]:
    """R1 and R5 as PyIceberg reads the files (the oracle)."""
    io = table.io
    files = {table.metadata_location}
    sizes: dict[str, int] = {}
    for snapshot in table.metadata.snapshots:
        files.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(io):
            files.add(manifest.manifest_path)
            sizes[canonical_location(manifest.manifest_path)] = manifest.manifest_length
            for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
                files.add(entry.data_file.file_path)
                sizes[canonical_location(entry.data_file.file_path)] = entry.data_file.file_size_in_bytes
    return {canonical_location(f) for f in files}, sizes


@pytest.mark.parametrize("merge_on_read", [False, True])
def test_reach_reads_each_file_once_with_a_reused_reader_and_agrees_with_pyiceberg(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, merge_on_read: bool
) -> None:
    """SQL INSERTs, an UPDATE and a DELETE (copy-on-write: manifests with DELETED
    entries; merge-on-read: delete files), then appends through the catalog API:
    snapshots with several manifests each. Before R6, PyIceberg's AvroFile
    resolved the Avro schema at each of the files (~7 ms a file of a verify --data's
    ~10)."""
    location = str(tmp_path / "lake")
    mode = "merge-on-read" if merge_on_read else "copy-on-write"
    with tl.connect(location, create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE t (id BIGINT, v VARCHAR) TBLPROPERTIES ("
                    f"'write.delete.mode' = '{mode}', 'write.update.mode' = '{mode}', "
                    "'compaction.auto.min-small-files' = '0')")
        for i in range(3):
            cur.execute("INSERT INTO t VALUES (?, ?), (?, ?)", (2 * i, f"v{i}", 2 * i + 1, f"w{i}"))
        cur.execute("UPDATE t SET v = 'u' WHERE id = 3")
        cur.execute("DELETE FROM t WHERE id = 4")
    catalog = TrinityLakeCatalog("c", uri=location)
    table = catalog.load_table("default.t")
    for i in range(3):
        table.append(pa.table({"id": pa.array([10 + i], pa.int64()), "v": pa.array(["a"], pa.large_string())}))
    table = catalog.load_table("default.t")
    assert len(table.metadata.snapshots) >= 4
    kinds = {m.content for s in table.metadata.snapshots for m in s.manifests(table.io)}
    assert len(kinds) == (2 if merge_on_read else 1)  # delete manifests only with merge-on-read
    expected_files, expected_sizes = _pyiceberg_reach(table)

    resolved: list[Any] = []
    original = pyiceberg.avro.file.resolve_reader

    def counting(*args: Any, **kwargs: Any) -> Any:
        resolved.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(pyiceberg.avro.file, "resolve_reader", counting)
    reached = IcebergReach().reach([table.metadata_location])
    assert not reached.missing
    assert reached.files == expected_files
    assert reached.sizes == {f: s for f, s in expected_sizes.items() if f in reached.files}
    assert resolved == []  # R6: no PyIceberg AvroFile (its schema resolution per file)
