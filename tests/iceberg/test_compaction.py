"""Compaction (issue 34): OPTIMIZE, the catalog API and ``table.maintenance.compact()``
rewrite small files into target-size files as one replace snapshot (iceberg.compaction
CP1-CP5): every reader reads the same rows, time travel reads the old files, concurrent
appends land, expiration reclaims the replaced files, faults leave old or new."""

from __future__ import annotations

import glob
import math
import os
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pytest
from pyiceberg.exceptions import CommitFailedException

import trinitylake_dbapi
from trinitylake_dbapi import maintenance
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog
from trinitylake_dbapi.iceberg.compaction import compact
from trinitylake_dbapi.verify import verify
from tests.iceberg.duck_iceberg import duckdb_scans
from tests.iceberg.test_faults import FaultyMemory, faulty_memory  # noqa: F401 - a fixture


def duckdb_rows(metadata_location: str) -> list[tuple[int, str]]:
    """The (id, name) rows DuckDB 1.5.5's ``iceberg_scan`` reads at ``metadata_location``,
    by id: the process's reader child of tests/iceberg/duck_iceberg.py (values come back
    as text; ids are made ints again), which skips without the overlay."""
    return sorted((int(i), name) for i, name in duckdb_scans([metadata_location])[0])


def sql_rows(cur: Any, suffix: str = "") -> list[tuple[int, str]]:
    cur.execute(f"SELECT id, name FROM t{suffix} ORDER BY id")
    return [tuple(r) for r in cur.fetchall()]


def data_files(table: Any) -> list[Any]:
    return [task.file for task in table.scan().plan_files()]


def small_table(tmp_path: Path, commits: int = 40, properties: str = "") -> tuple[str, Any, Any]:
    location = str(tmp_path / "lake")
    con = trinitylake_dbapi.connect(location, create=True, autocommit=True)
    cur = con.cursor()
    cur.execute(f"CREATE TABLE t (id BIGINT, name VARCHAR){properties}")
    if "min-small-files" not in properties:  # these tests count the files of each insert
        cur.execute("ALTER TABLE t SET TBLPROPERTIES ('compaction.auto.min-small-files' = '0')")
    for i in range(commits):
        cur.execute("INSERT INTO t VALUES (?, ?)", (i, f"name {i}"))
    return location, con, cur


def test_optimize_rewrites_small_files_into_one_and_every_reader_agrees(tmp_path: Path) -> None:
    location, con, cur = small_table(tmp_path)
    expected = [(i, f"name {i}") for i in range(40)]
    catalog = TrinityLakeCatalog("c", uri=location)
    before = catalog.load_table("default.t")
    assert len(data_files(before)) == 40
    version_before = con.lakehouse.latest_version() if hasattr(con, "lakehouse") else None
    cur.execute("OPTIMIZE t")
    assert [d[0] for d in cur.description][:2] == ["rewritten_data_files", "added_data_files"]
    assert cur.fetchall()[0][:3] == (40, 1, 0)
    after = catalog.load_table("default.t")
    assert len(data_files(after)) == 1
    assert after.metadata.current_snapshot().summary.operation.value == "replace"
    assert [s.summary.operation.value for s in after.metadata.snapshots] == ["replace"]  # CP4
    assert len(after.metadata.current_snapshot().manifests(after.io)) == 1  # manifests rewritten
    assert sql_rows(cur) == expected
    assert sorted(zip(*after.scan().to_arrow().to_pydict().values())) == expected
    assert duckdb_rows(after.metadata_location) == expected
    # compacting a compact table commits nothing (CP1)
    latest = LakehouseCatalog(location).latest_version()
    for statement in ("OPTIMIZE TABLE t", "ALTER TABLE t EXECUTE optimize", "ALTER TABLE t EXECUTE optimize()"):
        cur.execute(statement)
        assert cur.fetchall() == [(0, 0, 0, 0, 0)]
    assert LakehouseCatalog(location).latest_version() == latest
    del version_before


def test_time_travel_to_the_version_before_optimize_reads_the_old_files(tmp_path: Path) -> None:
    location, con, cur = small_table(tmp_path, commits=12)
    before = LakehouseCatalog(location).latest_version()
    old_files = {f.file_path for f in data_files(TrinityLakeCatalog("c", uri=location).load_table("default.t"))}
    cur.execute("OPTIMIZE t")
    expected = [(i, f"name {i}") for i in range(12)]
    assert sql_rows(cur, f" FOR SYSTEM_VERSION AS OF {before}") == expected
    old = TrinityLakeCatalog("old", uri=location).at_version(before).load_table("default.t")
    assert {f.file_path for f in data_files(old)} == old_files
    assert sorted(zip(*old.scan().to_arrow().to_pydict().values())) == expected
    assert duckdb_rows(old.metadata_location) == expected


@pytest.mark.parametrize("delta", [False, True])
@pytest.mark.parametrize("target", [6_000, 20_000, 50_000])
def test_files_come_out_at_the_target_size(tmp_path: Path, target: int, delta: bool) -> None:
    """CP2, with the encodings writing W10 chooses (iceberg.encodings PE1; PE3 where the
    table opts into DELTA_BINARY_PACKED integers: the sorted ids shrink to nearly nothing)."""
    location = str(tmp_path / "lake")
    catalog = TrinityLakeCatalog("c", uri=location, create="true")
    schema = pa.schema([("id", pa.int64()), ("name", pa.large_string())])
    properties = {"write.target-file-size-bytes": str(target)}
    if delta:
        properties["write.parquet.integer-encoding"] = "delta"
    table = catalog.create_table("default.t", schema, properties=properties)
    for chunk in range(30):
        ids = list(range(chunk * 400, (chunk + 1) * 400))
        table.append(pa.table({"id": ids, "name": [f"row {i} " * 3 for i in ids]}, schema=schema))
    total_rows = table.scan().to_arrow().num_rows
    before = len(data_files(table))
    result = table.maintenance.compact()
    assert result.rewritten_data_files == before
    files = data_files(catalog.load_table("default.t"))
    sizes = [f.file_size_in_bytes for f in files]
    total = sum(sizes)
    assert max(sizes) <= target * 1.1, sizes
    assert len(files) <= math.ceil(total / target) + 1, (sizes, target)
    assert len(files) < before
    assert catalog.load_table("default.t").scan().to_arrow().num_rows == total_rows
    # and again: nothing to do (CP1), whatever the target
    assert table.maintenance.compact().snapshot_id is None


def test_an_append_committed_during_compaction_lands(tmp_path: Path) -> None:
    location, con, cur = small_table(tmp_path, commits=10)
    catalog = TrinityLakeCatalog("c", uri=location)
    stale = catalog.load_table("default.t")  # the compaction plans on this state
    for i in range(10, 13):
        cur.execute("INSERT INTO t VALUES (?, ?)", (i, f"name {i}"))
    result = compact(stale)  # its commit loses to the appends and is rebased (CP5)
    assert result.rewritten_data_files == 10
    table = catalog.load_table("default.t")
    assert len(data_files(table)) == 1 + 3
    expected = [(i, f"name {i}") for i in range(13)]
    assert sql_rows(cur) == expected
    assert duckdb_rows(table.metadata_location) == expected
    # and the other way: an append on a table object loaded before the compaction
    appender = catalog.load_table("default.t")
    cur.execute("OPTIMIZE t")
    appender.append(pa.table({"id": [99], "name": ["late"]}, schema=appender.schema().as_arrow()))
    assert sql_rows(cur) == expected + [(99, "late")]


def test_a_compaction_racing_a_delete_fails_and_changes_nothing(tmp_path: Path) -> None:
    location, con, cur = small_table(tmp_path, commits=10)
    catalog = TrinityLakeCatalog("c", uri=location)
    stale = catalog.load_table("default.t")
    cur.execute("DELETE FROM t WHERE id = 3")
    latest = LakehouseCatalog(location).latest_version()
    with pytest.raises(CommitFailedException, match="not an append"):
        compact(stale)
    assert LakehouseCatalog(location).latest_version() == latest
    assert sql_rows(cur) == [(i, f"name {i}") for i in range(10) if i != 3]
    cur.execute("OPTIMIZE t")  # on the latest version it works
    assert sql_rows(cur) == [(i, f"name {i}") for i in range(10) if i != 3]


def test_expiration_reclaims_the_replaced_files(tmp_path: Path) -> None:
    location, con, cur = small_table(tmp_path, commits=8)
    catalog = TrinityLakeCatalog("c", uri=location)
    old = {f.file_path for f in data_files(catalog.load_table("default.t"))}
    cur.execute("OPTIMIZE t")
    new = {f.file_path for f in data_files(catalog.load_table("default.t"))}
    for i in range(3):  # versions after it, so that every version before it can expire
        cur.execute(f"CREATE TABLE other{i} (x INT)")
    lakehouse = LakehouseCatalog(location)
    maintenance.expire_versions(lakehouse, retain_last=1, older_than_millis=2**62, orphan_grace_millis=0)
    on_disk = set(glob.glob(os.path.join(location, "tables", "**", "*.parquet"), recursive=True))
    assert {p.removeprefix("file://") for p in new} == on_disk
    assert not {p.removeprefix("file://") for p in old} & on_disk
    report = verify(location, data=True)
    assert report.ok, report.text()
    assert sql_rows(cur) == [(i, f"name {i}") for i in range(8)]


def test_optimize_refuses_a_read_only_connection_and_explains_errors(tmp_path: Path) -> None:
    location, con, cur = small_table(tmp_path, commits=2)
    pinned = trinitylake_dbapi.connect(location, version=1).cursor()
    with pytest.raises(trinitylake_dbapi.ReadOnlyError if hasattr(trinitylake_dbapi, "ReadOnlyError") else trinitylake_dbapi.Error):
        pinned.execute("OPTIMIZE t")
    with pytest.raises(trinitylake_dbapi.ProgrammingError, match="no_such|does not exist"):
        cur.execute("OPTIMIZE no_such")
    with pytest.raises(trinitylake_dbapi.NotSupportedError, match="EXECUTE"):
        cur.execute("ALTER TABLE t EXECUTE remove_orphan_files")
    with pytest.raises(trinitylake_dbapi.ProgrammingError, match="read-only"):
        cur.execute("OPTIMIZE system.versions")


def test_the_catalog_api_compacts_one_table(tmp_path: Path) -> None:
    location, con, cur = small_table(tmp_path, commits=5)
    result = con.iceberg_catalog().optimize_table("default.t")
    assert (result.rewritten_data_files, result.added_data_files) == (5, 1)
    assert TrinityLakeCatalog("c", uri=location).optimize_table("default.t").snapshot_id is None
    assert sql_rows(cur) == [(i, f"name {i}") for i in range(5)]
    table = TrinityLakeCatalog("c", uri=location).load_table("default.t")
    assert table.maintenance.rewrite_data_files().snapshot_id is None


@pytest.mark.slow  # a compaction per storage call (~5 s of CPU each): the full run only
@pytest.mark.parametrize("when", ["before", "after"])
def test_a_fault_at_any_storage_call_of_a_compaction_leaves_old_or_new(faulty_memory: type[FaultyMemory], when: str) -> None:  # noqa: F811
    import uuid

    schema = pa.schema([("id", pa.int64())])

    def new_lake() -> str:
        location = f"memory://compaction-faults-{uuid.uuid4().hex}/lake"
        table = TrinityLakeCatalog("setup", uri=location, create="true").create_table("default.t", schema)
        for i in range(4):
            table.append(pa.table({"id": [i]}, schema=schema))
        return location

    def ids(location: str) -> list[int]:
        table = TrinityLakeCatalog("check", uri=location).load_table("default.t")
        return sorted(table.scan().to_arrow()["id"].to_pylist())

    # Every fault point starts from the files of one set-up lakehouse, put back in place
    # (its Iceberg metadata names absolute locations: a copy elsewhere would not be the
    # same lakehouse) by a few memory-store calls instead of a table creation and four
    # appends (~60 ms of CPU a fault point). Nothing is cached across them by version:
    # every file a compaction writes has a new name.
    location = new_lake()
    memory = fsspec.filesystem("memory")
    template = {path: memory.cat_file(path) for path in memory.find(location)}

    def restore() -> None:
        present = set(memory.find(location))
        for path in sorted(present - set(template)):
            memory.rm_file(path)
        for path, data in template.items():
            if path not in present or memory.cat_file(path) != data:
                memory.pipe_file(path, data)
        assert {p: memory.cat_file(p) for p in memory.find(location)} == template

    faulty_memory.arm(None)
    TrinityLakeCatalog("w", uri=location).optimize_table("default.t")
    calls = faulty_memory.calls
    assert calls > 5
    outcomes = {"old": 0, "new": 0}
    for k in range(1, calls + 1):
        faulty_memory.arm(None)
        restore()
        catalog = TrinityLakeCatalog("w", uri=location)
        faulty_memory.arm(k, when)
        try:
            catalog.optimize_table("default.t")
        except Exception:  # noqa: BLE001 - what counts is what the lakehouse shows
            pass
        faulty_memory.arm(None)
        assert ids(location) == [0, 1, 2, 3], k
        files = len(data_files(TrinityLakeCatalog("check", uri=location).load_table("default.t")))
        assert files in (1, 4), (k, files)
        outcomes["old" if files == 4 else "new"] += 1
        report = verify(location, data=True)
        assert report.ok, (k, report.text())
        TrinityLakeCatalog("again", uri=location).optimize_table("default.t")
        assert ids(location) == [0, 1, 2, 3]
    assert outcomes["old"] > 0


@pytest.mark.parametrize("autocommit", [True, False])
def test_the_automatic_policy_compacts_after_n_small_files(tmp_path: Path, autocommit: bool) -> None:
    location = str(tmp_path / "lake")
    con = trinitylake_dbapi.connect(location, create=True, autocommit=True)
    cur = con.cursor()
    cur.execute("CREATE TABLE t (id BIGINT, name VARCHAR) "
                "TBLPROPERTIES ('compaction.auto.min-small-files' = '5')")
    cur.execute("CREATE TABLE plain (id BIGINT, name VARCHAR) "
                "TBLPROPERTIES ('compaction.auto.min-small-files' = '0')")
    con.autocommit = autocommit
    catalog = TrinityLakeCatalog("c", uri=location)
    counts = []
    for i in range(12):
        cur.execute("INSERT INTO t VALUES (?, ?)", (i, f"name {i}"))
        cur.execute("INSERT INTO plain VALUES (?, ?)", (i, f"name {i}"))
        if not autocommit:
            con.commit()
        files = data_files(catalog.load_table("default.t"))
        counts.append(len(files))
        tiers: dict[int, int] = {}
        for f in files:  # CP7: N = 5, F = 2; tier floor(log2(rows))
            tiers[f.record_count.bit_length() - 1] = tiers.get(f.record_count.bit_length() - 1, 0) + 1
        assert max(tiers.values()) < 5, (i, tiers)  # compacted whenever a tier reached 5
    assert min(counts[4:]) < 5 and counts[4] == 1, counts
    assert len(data_files(catalog.load_table("default.plain"))) == 12  # '0': never
    expected = [(i, f"name {i}") for i in range(12)]
    assert sql_rows(cur) == expected
    ops = {s.summary.operation.value for s in catalog.load_table("default.t").metadata.snapshots}
    assert "replace" in ops or len(data_files(catalog.load_table("default.t"))) < 5


def test_the_automatic_policy_is_off_for_large_files(tmp_path: Path) -> None:
    from trinitylake_dbapi.iceberg.compaction import auto_compaction_due

    location, con, cur = small_table(
        tmp_path, commits=6, properties=" TBLPROPERTIES ('compaction.auto.min-small-files' = '5', "
        "'write.target-file-size-bytes' = '100')",
    )  # fmt: skip
    # every file is larger than 75 % of a 100-byte target: none is small
    table = TrinityLakeCatalog("c", uri=location).load_table("default.t")
    assert len(data_files(table)) == 6
    assert not auto_compaction_due(table.metadata)


def _add_position_deletes(catalog: Any, identifier: str, data_path: str, positions: list[int]) -> None:
    """Commit a position delete file (written here as Iceberg's spec says: file_path and
    pos with their reserved field ids) deleting ``positions`` of ``data_path``: what a
    merge-on-read DELETE commits."""
    import uuid as _uuid

    import pyarrow.parquet as pq
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestEntry, ManifestEntryStatus, write_manifest_list
    from pyiceberg.table.refs import SnapshotRefType
    from pyiceberg.table.snapshots import Operation, Snapshot, Summary
    from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate
    from pyiceberg.typedef import Record

    from trinitylake_dbapi.iceberg.compaction import DeleteManifestWriter
    from trinitylake_dbapi.iceberg.manifests import snapshot_manifests

    table = catalog.load_table(identifier)
    metadata, io = table.metadata, table.io
    head = metadata.current_snapshot()
    schema = pa.schema([
        pa.field("file_path", pa.string(), nullable=False, metadata={b"PARQUET:field_id": b"2147483546"}),
        pa.field("pos", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"2147483545"}),
    ])  # fmt: skip
    location = f"{metadata.location}/data/deletes-{_uuid.uuid4().hex}.parquet"
    with io.new_output(location).create() as out:
        pq.write_table(pa.table({"file_path": [data_path] * len(positions), "pos": positions}, schema=schema), out)
    delete_file = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES, file_path=location, file_format=FileFormat.PARQUET,
        partition=Record(), record_count=len(positions), file_size_in_bytes=len(io.new_input(location)),
    )  # fmt: skip
    snapshot_id = metadata.new_snapshot_id()
    manifest_path = f"{metadata.location}/metadata/{_uuid.uuid4()}-m0.avro"
    writer = DeleteManifestWriter(metadata.spec(), metadata.schema(), io.new_output(manifest_path), snapshot_id, "deflate")
    with writer:
        writer.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id, data_file=delete_file))
    manifest_list = f"{metadata.location}/metadata/snap-{snapshot_id}-0-{_uuid.uuid4()}.avro"
    sequence_number = metadata.next_sequence_number()
    with write_manifest_list(format_version=2, output_file=io.new_output(manifest_list), snapshot_id=snapshot_id,
                             parent_snapshot_id=head.snapshot_id, sequence_number=sequence_number,
                             avro_compression="deflate") as list_writer:  # fmt: skip
        list_writer.add_manifests([writer.to_manifest_file(), *snapshot_manifests(io, head)])
    snapshot = Snapshot(
        snapshot_id=snapshot_id, parent_snapshot_id=head.snapshot_id, sequence_number=sequence_number,
        timestamp_ms=metadata.last_updated_ms + 1, manifest_list=manifest_list,
        summary=Summary(Operation.DELETE, **{"added-delete-files": "1", "added-position-deletes": str(len(positions))}),
        schema_id=metadata.current_schema_id,
    )  # fmt: skip
    catalog.commit_table(table, (AssertRefSnapshotId(ref="main", snapshot_id=head.snapshot_id),), (
        AddSnapshotUpdate(snapshot=snapshot),
        SetSnapshotRefUpdate(ref_name="main", type=SnapshotRefType.BRANCH, snapshot_id=snapshot_id),
    ))  # fmt: skip


def test_position_deletes_are_applied_and_their_file_removed(tmp_path: Path) -> None:
    location = str(tmp_path / "lake")
    catalog = TrinityLakeCatalog("c", uri=location, create="true")
    schema = pa.schema([("id", pa.int64()), ("name", pa.large_string())])
    table = catalog.create_table("default.t", schema)
    for chunk in range(3):
        ids = [chunk * 3 + k for k in range(3)]
        table.append(pa.table({"id": ids, "name": [f"name {i}" for i in ids]}, schema=schema))
    first = next(iter(catalog.load_table("default.t").scan().plan_files())).file.file_path  # any data file
    _add_position_deletes(catalog, "default.t", first, [1])
    with_deletes = sorted(zip(*catalog.load_table("default.t").scan().to_arrow().to_pydict().values()))
    assert len(with_deletes) == 8
    cur = trinitylake_dbapi.connect(location, autocommit=True).cursor()
    assert sql_rows(cur) == with_deletes
    cur.execute("OPTIMIZE t")
    assert cur.fetchall()[0][:3] == (3, 1, 1)  # three data files, one new, the delete file gone
    after = catalog.load_table("default.t")
    assert all(not t.delete_files for t in after.scan().plan_files())
    assert sorted(zip(*after.scan().to_arrow().to_pydict().values())) == with_deletes
    assert sql_rows(cur) == with_deletes
    assert duckdb_rows(after.metadata_location) == with_deletes
    assert verify(location, data=True).ok


def test_the_automatic_policy_is_on_by_default_and_spares_big_files(tmp_path: Path) -> None:
    """CP6/CP7: a table created without the property compacts its one-row files every
    16 commits, never rewrites the big file it started with, and '0' turns it off."""
    from trinitylake_dbapi.iceberg.compaction import AUTO_MIN_SMALL_FILES_DEFAULT

    location = str(tmp_path / "lake")
    con = trinitylake_dbapi.connect(location, create=True, autocommit=True)
    cur = con.cursor()
    cur.execute("CREATE TABLE t (id BIGINT, name VARCHAR)")
    cur.execute("CREATE TABLE off (id BIGINT, name VARCHAR) TBLPROPERTIES ('compaction.auto.min-small-files' = '0')")
    cur.execute("INSERT INTO t SELECT range, 'n' || range FROM range(100000)")
    catalog = TrinityLakeCatalog("c", uri=location)
    big = {f.file_path for f in data_files(catalog.load_table("default.t"))}
    n = AUTO_MIN_SMALL_FILES_DEFAULT
    for i in range(2 * n):  # two rounds of n: the check below fails unless each compacts
        cur.execute("INSERT INTO t VALUES (?, 'x')", (100000 + i,))
        cur.execute("INSERT INTO off VALUES (?, 'x')", (i,))
        files = data_files(catalog.load_table("default.t"))
        assert big <= {f.file_path for f in files}, i  # the big file is never rewritten
        assert sum(1 for f in files if f.record_count == 1) < n
    assert len(data_files(catalog.load_table("default.off"))) == 2 * n
    ops = [s.summary.operation.value for s in catalog.load_table("default.t").metadata.snapshots]
    assert "replace" in ops
    cur.execute("SELECT count(*), count(DISTINCT id) FROM t")
    assert cur.fetchall() == [(100000 + 2 * n, 100000 + 2 * n)]


def test_reading_never_compacts_even_when_due(tmp_path: Path) -> None:
    """CP6: only writes compact; a read-only connection and time travel reads of a table
    that is due leave its version and files as they are."""
    from trinitylake_dbapi.iceberg.compaction import auto_compaction_due

    location, con, cur = small_table(tmp_path, commits=20)
    cur.execute("ALTER TABLE t UNSET TBLPROPERTIES ('compaction.auto.min-small-files')")
    catalog = TrinityLakeCatalog("c", uri=location)
    assert auto_compaction_due(catalog.load_table("default.t").metadata)
    metadata_location = catalog.load_table("default.t").metadata_location
    for version in (None, 1):  # the latest, then time travel: both read-only connections
        latest = trinitylake_dbapi.connect(location).lakehouse.latest_version()
        reader = trinitylake_dbapi.connect(location, version=latest if version is None else version)
        assert reader.read_only
        reader.cursor().execute("SELECT count(*) FROM t")
        reader.close()
    assert catalog.load_table("default.t").metadata_location == metadata_location
    assert len(data_files(catalog.load_table("default.t"))) == 20
    cur.execute("INSERT INTO t VALUES (20, 'name 20')")  # the next write does
    assert len(data_files(catalog.load_table("default.t"))) < 20


def test_the_default_compacts_after_each_commit_of_a_transaction(tmp_path: Path) -> None:
    """CP6: a PEP 249 connection (autocommit off) committing one row per transaction
    gets the default compaction, as versions of their own after its commits: 40
    transactions end with fewer files than 16 one-row files, every row there, and no
    compaction inside a transaction's version (each commit's version holds its insert
    alone)."""
    location = str(tmp_path / "lake")
    con = trinitylake_dbapi.connect(location, create=True)
    assert not con.autocommit
    cur = con.cursor()
    cur.execute("CREATE TABLE t (id BIGINT, name VARCHAR)")
    con.commit()
    catalog = TrinityLakeCatalog("c", uri=location)
    lakehouse = LakehouseCatalog(location)
    versions = []
    for i in range(40):
        cur.execute("INSERT INTO t VALUES (?, ?)", (i, f"name {i}"))
        before = lakehouse.latest_version()
        con.commit()
        versions.append(lakehouse.latest_version() - before)
    files = data_files(catalog.load_table("default.t"))
    assert len(files) < 16, len(files)
    assert sum(f.record_count for f in files) == 40
    assert set(versions) == {1, 2} and versions.count(2) >= 2, versions  # a compaction: a version of its own
    ops = [s.summary.operation.value for s in catalog.load_table("default.t").metadata.snapshots]
    assert "replace" in ops
    assert sql_rows(cur) == [(i, f"name {i}") for i in range(40)]
    # BEGIN under autocommit: the same, after COMMIT
    con.autocommit = True
    cur.execute("CREATE TABLE u (id BIGINT, name VARCHAR)")
    for i in range(20):
        cur.execute("BEGIN")
        cur.execute("INSERT INTO u VALUES (?, ?)", (i, "x"))
        cur.execute("COMMIT")
    files = data_files(catalog.load_table("default.u"))
    assert len(files) < 16 and sum(f.record_count for f in files) == 20
    # a rollback compacts nothing
    con.autocommit = False
    last = lakehouse.latest_version()
    for i in range(20):
        cur.execute("INSERT INTO u VALUES (?, ?)", (100 + i, "y"))
    con.rollback()
    assert lakehouse.latest_version() == last


@pytest.mark.parametrize("failure", ["another writer compacted first", "the compaction raises"])
def test_a_commit_is_unaffected_when_the_compaction_after_it_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    """CP6: the compaction after a transaction's commit that loses to another writer (a
    real one, which runs OPTIMIZE between the transaction's commit and the compaction's
    own) or fails otherwise is skipped: the commit returns, its rows are there, and the
    next commit checks again."""
    from trinitylake_dbapi.iceberg import compaction

    location = str(tmp_path / "lake")
    con = trinitylake_dbapi.connect(location, create=True)
    cur = con.cursor()
    cur.execute("CREATE TABLE t (id BIGINT, name VARCHAR) TBLPROPERTIES ('compaction.auto.min-small-files' = '0')")
    for i in range(20):
        cur.execute("INSERT INTO t VALUES (?, ?)", (i, f"name {i}"))
        con.commit()
    cur.execute("ALTER TABLE t UNSET TBLPROPERTIES ('compaction.auto.min-small-files')")
    con.commit()
    other = trinitylake_dbapi.connect(location, autocommit=True)
    real_compact = compaction.compact
    calls = []

    def failing(table: Any, **kwargs: Any) -> Any:
        if calls:  # the other writer's OPTIMIZE
            return real_compact(table, **kwargs)
        calls.append(table.name())
        if failure == "the compaction raises":
            raise OSError("disk full")
        other.cursor().execute("OPTIMIZE t")  # wins: the compaction below then conflicts (CP5)
        return real_compact(table, **kwargs)

    monkeypatch.setattr(compaction, "compact", failing)
    cur.execute("INSERT INTO t VALUES (20, 'name 20')")
    con.commit()  # no error
    assert calls == [("default", "t")]
    catalog = TrinityLakeCatalog("c", uri=location)
    table = catalog.load_table("default.t")
    replaces = [s for s in table.metadata.snapshots if s.summary.operation.value == "replace"]
    assert len(replaces) == (1 if failure == "another writer compacted first" else 0)
    assert sql_rows(cur) == [(i, f"name {i}") for i in range(21)]
    monkeypatch.setattr(compaction, "compact", real_compact)
    for i in range(21, 40):
        cur.execute("INSERT INTO t VALUES (?, ?)", (i, f"name {i}"))
        con.commit()
    files = data_files(catalog.load_table("default.t"))
    assert len(files) < 16 and sum(f.record_count for f in files) == 40
    assert sql_rows(cur) == [(i, f"name {i}") for i in range(40)]


@pytest.mark.parametrize("autocommit", [True, False])
def test_an_external_table_is_compacted_only_when_its_property_asks(tmp_path: Path, autocommit: bool) -> None:
    """CP6: the default never rewrites the files of a table the lakehouse does not own
    (registered from existing metadata: EXTERNAL); the property set on it does."""
    location = str(tmp_path / "lake")
    other = TrinityLakeCatalog("other", uri=str(tmp_path / "other"), create="true")
    for name in ("ext", "asked"):
        other.create_table(f"default.{name}", pa.schema([("id", pa.int64()), ("name", pa.string())]),
                           properties={"compaction.auto.min-small-files": "16"} if name == "asked" else {})
    con = trinitylake_dbapi.connect(location, create=True, autocommit=True)
    catalog = TrinityLakeCatalog("c", uri=location)
    for name in ("ext", "asked"):
        catalog.register_table(f"default.{name}", other.load_table(f"default.{name}").metadata_location)
    cur = con.cursor()
    con.autocommit = autocommit
    for i in range(40):
        cur.execute("INSERT INTO ext VALUES (?, 'x')", (i,))
        cur.execute("INSERT INTO asked VALUES (?, 'x')", (i,))
        if not autocommit:
            con.commit()
    ext = catalog.load_table("default.ext")
    assert len(data_files(ext)) == 40
    assert all(s.summary.operation.value == "append" for s in ext.metadata.snapshots)
    assert len(data_files(catalog.load_table("default.asked"))) < 16
    cur.execute("SELECT count(*) FROM ext")
    assert cur.fetchall() == [(40,)]


EVOLUTIONS = ["none", "add column", "rename column", "drop column", "promote int", "reorder", "delete"]


@pytest.mark.parametrize("evolution", EVOLUTIONS)
def test_planning_and_the_plain_read_give_what_pyiceberg_gives(tmp_path: Path, evolution: str) -> None:
    """CP8: the plan's scan tasks are PyIceberg's DataScan's (same files, same deletes);
    CP9: a group read as plain Parquet gives ArrowScan's rows, and a group of files
    written in another schema than the current one, or with deletes, is not read so."""
    import datetime
    import decimal

    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan

    from pyiceberg.types import IntegerType, StringType

    from trinitylake_dbapi.iceberg.compaction import plan_compaction, read_plain

    catalog = TrinityLakeCatalog("c", uri=str(tmp_path / "lake"), create="true")
    schema = pa.schema([
        ("id", pa.int64()), ("n", pa.int32()), ("name", pa.large_string()), ("amount", pa.float64()),
        ("day", pa.date32()), ("at", pa.timestamp("us")), ("price", pa.decimal128(10, 2)), ("raw", pa.large_binary()),
        ("tags", pa.list_(pa.int64())), ("point", pa.struct([("x", pa.float64()), ("y", pa.float64())])),
    ])  # fmt: skip

    def rows(start: int, count: int) -> pa.Table:
        ids = list(range(start, start + count))
        return pa.table({
            "id": ids, "n": [i % 7 if i % 5 else None for i in ids], "name": [f"n{i}" if i % 3 else None for i in ids],
            "amount": [i * 1.5 if i % 4 else float("nan") for i in ids],
            "day": [datetime.date(2026, 1, 1) + datetime.timedelta(days=i) for i in ids],
            "at": [datetime.datetime(2026, 1, 1, 0, 0, i % 60) for i in ids],
            "price": [decimal.Decimal(i) / 100 for i in ids], "raw": [bytes([i % 256]) * (i % 3) for i in ids],
            "tags": [[i, i + 1] if i % 2 else None for i in ids], "point": [{"x": i, "y": -i} for i in ids],
        }, schema=schema)  # fmt: skip

    table = catalog.create_table("default.t", schema)
    for chunk in range(4):
        table.append(rows(chunk * 3, 3))
    table = catalog.load_table("default.t")
    if evolution == "add column":
        with table.update_schema() as update:
            update.add_column("extra", StringType())
    elif evolution == "rename column":
        with table.update_schema() as update:
            update.rename_column("name", "label")
    elif evolution == "drop column":
        with table.update_schema() as update:
            update.delete_column("raw")
    elif evolution == "promote int":
        from pyiceberg.types import LongType

        with table.update_schema() as update:
            update.update_column("n", field_type=LongType())
    elif evolution == "reorder":
        with table.update_schema() as update:
            update.move_first("name")
    elif evolution == "delete":
        first = next(iter(table.scan().plan_files())).file.file_path
        _add_position_deletes(catalog, "default.t", first, [1])
    table = catalog.load_table("default.t")
    expected = list(table.scan().plan_files())
    plan = plan_compaction(table)
    assert plan is not None
    assert [(t.file.file_path, sorted(d.file_path for d in t.delete_files)) for t in plan.tasks] == [
        (t.file.file_path, sorted(d.file_path for d in t.delete_files)) for t in expected
    ]
    metadata = plan.metadata
    for group in plan.groups:
        scanned = ArrowScan(metadata, table.io, metadata.schema(), AlwaysTrue()).to_table(group)
        plain = read_plain(table.io, metadata, group)
        if evolution == "none":
            assert plain is not None
        else:
            assert plain is None  # the files' schema is not the current one, or deletes apply
            continue
        assert plain.column_names == scanned.column_names
        assert _comparable(plain.cast(scanned.schema).to_pylist()) == _comparable(scanned.to_pylist())
    with table.update_schema() as update:  # a table whose files all have the current schema after OPTIMIZE
        update.add_column("later", IntegerType())
    cur = trinitylake_dbapi.connect(str(tmp_path / "lake"), autocommit=True).cursor()
    cur.execute("SELECT * FROM t ORDER BY id")
    before = cur.fetchall()
    cur.execute("OPTIMIZE t")
    cur.execute("SELECT * FROM t ORDER BY id")
    assert repr(cur.fetchall()) == repr(before)  # repr: NaN != NaN
    assert verify(str(tmp_path / "lake"), data=True).ok


def _comparable(rows: list[dict]) -> list:
    """Rows with NaN made comparable (NaN != NaN)."""
    return [{k: ("NaN" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in rows]
