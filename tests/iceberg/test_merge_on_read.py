"""Merge-on-read UPDATE and DELETE (issue 34; iceberg.deletes RD1-RD4, sql.query Q4):
position delete files instead of rewritten data files, chosen by Iceberg's own table
properties; every reader (our SELECT, PyIceberg's scan, DuckDB's iceberg_scan) reads the
same rows; compaction folds the deletes back; concurrent writers conflict or stay
correct."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.manifest import DataFileContent, ManifestContent

import trinitylake_dbapi as tl
from trinitylake_dbapi.errors import SerializationError
from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog
from trinitylake_dbapi.iceberg.deletes import delete_rows
from trinitylake_dbapi.iceberg.manifests import manifest_entries, snapshot_manifests
from trinitylake_dbapi.verify import verify
from tests.iceberg.duck_iceberg import duckdb_scans
from tests.deadlines import HANG_S

MODES = ("merge-on-read", "copy-on-write")


def lake(tmp_path: Path, properties: str = "", rows: int = 1000, files: int = 2) -> tuple[str, Any]:
    location = str(tmp_path / "lake")
    con = tl.connect(location, create=True, autocommit=True)
    cur = con.cursor()
    cur.execute(f"CREATE TABLE t (id BIGINT, name VARCHAR){properties}")
    per = rows // files
    for f in range(files):
        cur.execute(f"INSERT INTO t SELECT range, 'n' || range FROM range({f * per}, {(f + 1) * per})")
    return location, cur


def table(location: str) -> Any:
    return TrinityLakeCatalog("c", uri=location).load_table("default.t")


def live_files(t: Any) -> tuple[set[str], set[str]]:
    """(data files, delete files) live in the table's current snapshot."""
    data, deletes = set(), set()
    for manifest in snapshot_manifests(t.io, t.metadata.current_snapshot()):
        for entry in manifest_entries(t.io, manifest):
            (data if entry.data_file.content == DataFileContent.DATA else deletes).add(entry.data_file.file_path)
    return data, deletes


def ours(cur: Any, version: int | None = None) -> list[tuple]:
    at = "" if version is None else f" FOR SYSTEM_VERSION AS OF {version}"
    cur.execute(f"SELECT CAST(id AS VARCHAR), name FROM t{at}")
    return sorted((tuple(r) for r in cur.fetchall()), key=repr)


def pyiceberg_rows(t: Any) -> list[tuple]:
    arrow = t.scan().to_arrow()
    return sorted(((str(i), n) for i, n in zip(arrow["id"].to_pylist(), arrow["name"].to_pylist())), key=repr)


def agree(location: str, cur: Any) -> list[tuple]:
    """Our SELECT, PyIceberg's scan and DuckDB's iceberg_scan read the same rows; them."""
    t = table(location)
    mine = ours(cur)
    assert pyiceberg_rows(t) == mine
    assert duckdb_scans([t.metadata_location])[0] == mine
    return mine


def expected(ids: list[int], renamed: dict[int, str] | None = None) -> list[tuple]:
    renamed = renamed or {}
    return sorted(((str(i), renamed.get(i, f"n{i}")) for i in ids), key=repr)


def test_a_delete_writes_one_position_delete_file_and_every_reader_agrees(tmp_path: Path) -> None:
    location, cur = lake(tmp_path)
    before_data, _ = live_files(table(location))
    cur.execute("DELETE FROM t WHERE id % 100 = 7")
    assert cur.rowcount == 10
    t = table(location)
    data, deletes = live_files(t)
    assert data == before_data  # no data file rewritten
    assert len(deletes) == 1  # one delete file for the statement (unpartitioned: one partition)
    summary = t.metadata.current_snapshot().summary
    assert summary.operation.value == "delete"
    props = summary.additional_properties
    assert props["added-delete-files"] == "1" and props["added-position-deletes"] == "10"
    assert props["total-delete-files"] == "1" and props["total-data-files"] == "2"
    assert "added-data-files" not in props
    assert agree(location, cur) == expected([i for i in range(1000) if i % 100 != 7])
    assert verify(location, data=True).ok


def test_an_update_adds_its_rows_and_deletes_the_old_ones_in_one_snapshot(tmp_path: Path) -> None:
    location, cur = lake(tmp_path)
    versions = cur.connection.lakehouse.latest_version()
    before_data, _ = live_files(table(location))
    cur.execute("UPDATE t SET name = name || '!' WHERE id % 100 = 5")
    assert cur.rowcount == 10
    assert cur.connection.lakehouse.latest_version() == versions + 1  # one version per statement
    t = table(location)
    data, deletes = live_files(t)
    assert before_data < data and len(data - before_data) == 1 and len(deletes) == 1
    snapshot = t.metadata.current_snapshot()
    assert snapshot.summary.operation.value == "overwrite"
    props = snapshot.summary.additional_properties
    assert props["added-records"] == "10" and props["added-position-deletes"] == "10"
    assert props["added-data-files"] == "1" and props["added-delete-files"] == "1"
    # sequence numbers: the new files carry the snapshot's; the old ones keep theirs
    for manifest in snapshot_manifests(t.io, snapshot):
        for entry in manifest_entries(t.io, manifest):
            if manifest.added_snapshot_id == snapshot.snapshot_id:
                assert entry.sequence_number == snapshot.sequence_number
                assert (manifest.content == ManifestContent.DELETES) == (entry.data_file.content != DataFileContent.DATA)
            else:
                assert entry.sequence_number < snapshot.sequence_number
    renamed = {i: f"n{i}!" for i in range(1000) if i % 100 == 5}
    assert agree(location, cur) == expected(list(range(1000)), renamed)
    # again, over the rows of the earlier update (their new file) and the old files
    cur.execute("UPDATE t SET name = 'x' WHERE id % 50 = 5")
    assert cur.rowcount == 20
    renamed.update({i: "x" for i in range(1000) if i % 50 == 5})
    assert agree(location, cur) == expected(list(range(1000)), renamed)
    cur.execute("DELETE FROM t WHERE name = 'x' OR id < 3")
    assert cur.rowcount == 23
    assert agree(location, cur) == expected([i for i in range(3, 1000) if i % 50 != 5], renamed)
    assert verify(location, data=True).ok


@pytest.mark.parametrize("statement", ["delete", "update"])
@pytest.mark.parametrize("mode", MODES)
def test_the_mode_is_the_tables_property(tmp_path: Path, statement: str, mode: str) -> None:
    """RD1: each statement follows its own property; the other's changes nothing."""
    other = "update" if statement == "delete" else "delete"
    other_mode = MODES[1 - MODES.index(mode)]
    location, cur = lake(tmp_path, f" TBLPROPERTIES ('write.{statement}.mode' = '{mode}', "
                                   f"'write.{other}.mode' = '{other_mode}')")  # fmt: skip
    before_data, _ = live_files(table(location))
    sql = "DELETE FROM t WHERE id % 100 = 1" if statement == "delete" else "UPDATE t SET name = 'u' WHERE id % 100 = 1"
    cur.execute(sql)
    data, deletes = live_files(table(location))
    if mode == "merge-on-read":
        assert deletes and before_data <= data
    else:
        assert not deletes and not before_data <= data
    ids = [i for i in range(1000) if statement == "update" or i % 100 != 1]
    renamed = {i: "u" for i in range(1000) if i % 100 == 1} if statement == "update" else {}
    assert agree(location, cur) == expected(ids, renamed)


def test_a_copy_on_write_statement_over_delete_files_warns_nothing(tmp_path: Path) -> None:
    """A copy-on-write UPDATE of a table whose DELETEs are merge-on-read and that holds
    delete files rewrites the whole table through PyIceberg's overwrite, which warns
    ("Merge on read is not yet supported") when write.delete.mode asks merge-on-read:
    nothing of that reaches the user (the statement does what the table's properties
    say, Q4, RD1); the rows are right."""
    import warnings

    location, cur = lake(tmp_path, " TBLPROPERTIES ('write.delete.mode' = 'merge-on-read', "
                                   "'write.update.mode' = 'copy-on-write')", rows=100)  # fmt: skip
    cur.execute("DELETE FROM t WHERE id = 1")
    assert live_files(table(location))[1]  # a delete file
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cur.execute("UPDATE t SET name = 'u' WHERE id = 2")
    assert [str(w.message) for w in caught] == []
    assert agree(location, cur) == expected([i for i in range(100) if i != 1], {2: "u"})


def test_the_default_is_merge_on_read_and_a_bad_mode_is_refused(tmp_path: Path) -> None:
    location, cur = lake(tmp_path, " TBLPROPERTIES ('write.delete.mode' = ' Merge-On-Read ')")
    cur.execute("UPDATE t SET name = 'u' WHERE id = 1")  # no write.update.mode: merge-on-read
    cur.execute("DELETE FROM t WHERE id = 2")
    assert len(live_files(table(location))[1]) == 2
    cur.execute("ALTER TABLE t SET TBLPROPERTIES ('write.delete.mode' = 'merge-on-write')")
    with pytest.raises(tl.ProgrammingError, match=r"default\.t: write\.delete\.mode is 'merge-on-write'"):
        cur.execute("DELETE FROM t WHERE id = 3")
    cur.execute("SELECT count(*) FROM t")
    assert cur.fetchone() == (999,)


def test_format_version_1_stays_copy_on_write(tmp_path: Path) -> None:
    """RD1: a v1 table has no delete files, whatever its properties say."""
    location = str(tmp_path / "lake")
    catalog = TrinityLakeCatalog("c", uri=location, create="true")
    schema = pa.schema([("id", pa.int64()), ("name", pa.large_string())])
    t = catalog.create_table("default.t", schema, properties={
        "format-version": "1", "write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read",
    })  # fmt: skip
    t.append(pa.table({"id": list(range(100)), "name": [f"n{i}" for i in range(100)]}, schema=schema))
    cur = tl.connect(location, autocommit=True).cursor()
    cur.execute("DELETE FROM t WHERE id % 10 = 0")
    cur.execute("UPDATE t SET name = 'u' WHERE id % 10 = 1")
    assert not live_files(table(location))[1]
    assert table(location).metadata.format_version == 1
    assert ours(cur) == expected([i for i in range(100) if i % 10], {i: "u" for i in range(100) if i % 10 == 1})


@pytest.mark.parametrize("version", [1, 2, 3])
def test_the_mode_by_format_version(version: int) -> None:
    """RD1 on metadata of each format version (PyIceberg 0.12 writes no v3 table: the
    rule is checked on the metadata alone)."""
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
    from pyiceberg.schema import Schema
    from pyiceberg.table.metadata import new_table_metadata
    from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
    from pyiceberg.types import LongType, NestedField

    from trinitylake_dbapi.iceberg.deletes import write_mode

    schema = Schema(NestedField(1, "id", LongType(), required=False))
    for properties, statement, wanted in [
        ({}, "delete", "merge-on-read"),
        ({}, "update", "merge-on-read"),
        ({"write.update.mode": "copy-on-write"}, "update", "copy-on-write"),
        ({"write.update.mode": "copy-on-write"}, "delete", "merge-on-read"),
        ({"write.delete.mode": "COPY-ON-WRITE "}, "delete", "copy-on-write"),
    ]:
        metadata = new_table_metadata(schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "file:///x",
                                      {**properties, "format-version": str(version)})  # fmt: skip
        assert metadata.format_version == version
        assert write_mode(metadata, statement) == (wanted if version == 2 else "copy-on-write")


def test_partitioned_tables_get_one_delete_file_per_partition(tmp_path: Path) -> None:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    location = str(tmp_path / "lake")
    catalog = TrinityLakeCatalog("c", uri=location, create="true")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False),
        NestedField(3, "part", LongType(), required=False),
    )  # fmt: skip
    spec = PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="part"))
    t = catalog.create_table("default.t", schema, partition_spec=spec)
    arrow_schema = pa.schema([("id", pa.int64()), ("name", pa.large_string()), ("part", pa.int64())])
    for chunk in range(2):
        ids = list(range(chunk * 300, (chunk + 1) * 300))
        t.append(pa.table({"id": ids, "name": [f"n{i}" for i in ids], "part": [i % 3 for i in ids]}, schema=arrow_schema))
    cur = tl.connect(location, autocommit=True).cursor()
    before_data, _ = live_files(table(location))
    cur.execute("DELETE FROM t WHERE id % 10 = 0 AND part <> 2")  # two partitions
    t = table(location)
    data, deletes = live_files(t)
    assert data == before_data and len(deletes) == 2
    tasks = list(t.scan().plan_files())
    for task in tasks:  # each data file gets only its own partition's delete file
        for d in task.delete_files:
            assert d.partition == task.file.partition
    cur.execute("UPDATE t SET name = 'u', part = 7 WHERE id % 10 = 1")  # rows move to a new partition
    cur.execute("SELECT CAST(id AS VARCHAR), name FROM t")
    mine = sorted((tuple(r) for r in cur.fetchall()), key=repr)
    gone = {i for i in range(600) if i % 10 == 0 and i % 3 != 2}
    assert mine == expected([i for i in range(600) if i not in gone], {i: "u" for i in range(600) if i % 10 == 1})
    assert pyiceberg_rows(table(location)) == mine
    assert sorted(((r[0], r[1]) for r in duckdb_scans([table(location).metadata_location])[0]), key=repr) == mine
    cur.execute("SELECT count(*) FROM t WHERE part = 7")
    assert cur.fetchone() == (60,)
    assert verify(location, data=True).ok


def test_time_travel_reads_the_rows_before_the_deletes(tmp_path: Path) -> None:
    location, cur = lake(tmp_path)
    before = cur.connection.lakehouse.latest_version()
    cur.execute("DELETE FROM t WHERE id < 500")
    cur.execute("UPDATE t SET name = 'u' WHERE id >= 990")
    assert ours(cur, before) == expected(list(range(1000)))
    assert ours(cur, before + 1) == expected(list(range(500, 1000)))
    assert ours(cur) == expected(list(range(500, 1000)), {i: "u" for i in range(990, 1000)})
    old = TrinityLakeCatalog("c", uri=location, version=str(before + 1)).load_table("default.t")
    assert pyiceberg_rows(old) == expected(list(range(500, 1000)))
    assert duckdb_scans([old.metadata_location])[0] == expected(list(range(500, 1000)))


def test_optimize_folds_the_delete_files_into_the_data_files(tmp_path: Path) -> None:
    location, cur = lake(tmp_path, files=4)
    cur.execute("DELETE FROM t WHERE id % 3 = 0")
    cur.execute("UPDATE t SET name = 'u' WHERE id % 3 = 1")
    rows = agree(location, cur)
    cur.execute("OPTIMIZE t")
    done = cur.fetchone()
    assert done[2] == 2  # both delete files removed
    data, deletes = live_files(table(location))
    assert not deletes
    assert agree(location, cur) == rows
    assert verify(location, data=True).ok


def test_automatic_compaction_after_deletes(tmp_path: Path) -> None:
    """iceberg.compaction CP6 after UPDATE and DELETE too: the third delete file
    triggers a compaction that folds them."""
    location, cur = lake(tmp_path, " TBLPROPERTIES ('compaction.auto.min-delete-files' = '3')")
    cur.execute("DELETE FROM t WHERE id = 1")
    cur.execute("UPDATE t SET name = 'u' WHERE id = 2")
    assert len(live_files(table(location))[1]) == 2
    cur.execute("DELETE FROM t WHERE id = 3")
    t = table(location)
    assert not live_files(t)[1]
    assert t.metadata.current_snapshot().summary.operation.value == "replace"
    assert agree(location, cur) == expected([i for i in range(1000) if i not in (1, 3)], {2: "u"})


@pytest.mark.parametrize("mode", MODES)
def test_updates_compact_automatically_by_small_files(tmp_path: Path, mode: str) -> None:
    """CP6's small-files policy after an UPDATE, in either mode."""
    location, cur = lake(tmp_path, f" TBLPROPERTIES ('write.update.mode' = '{mode}')", files=3)
    cur.execute("ALTER TABLE t SET TBLPROPERTIES ('compaction.auto.min-small-files' = '3')")
    assert table(location).metadata.current_snapshot().summary.operation.value == "append"
    cur.execute("UPDATE t SET name = 'u' WHERE id = 2")
    t = table(location)
    assert t.metadata.current_snapshot().summary.operation.value == "replace"
    # CP7 (N = 3, F = 2): the three 333-row files (one with the deletes) are merged; the
    # merge-on-read UPDATE's one-row file is alone in its tier and stays
    assert len(live_files(t)[0]) == (1 if mode == "copy-on-write" else 2) and not live_files(t)[1]
    assert agree(location, cur) == expected(list(range(999)), {2: "u"})


def test_a_delete_that_lost_to_another_writer_runs_again_under_autocommit(tmp_path: Path) -> None:
    """RD4: two connections delete rows of the same data files; the second one's commit
    conflicts, and under autocommit its statement runs again on the latest version,
    so both deletes hold and no row is deleted twice."""
    location, cur = lake(tmp_path)
    other = tl.connect(location, autocommit=True).cursor()
    other.execute("SELECT count(*) FROM t")  # warm
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def run(c: Any, sql: str) -> None:
        try:
            barrier.wait(timeout=HANG_S)
            c.execute(sql)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    for round_ in range(4):
        threads = [
            threading.Thread(target=run, args=(cur, f"DELETE FROM t WHERE id % 20 = {round_}")),
            threading.Thread(target=run, args=(other, f"UPDATE t SET name = 'r{round_}' WHERE id % 20 = {round_ + 10}")),
        ]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert not errors, errors
    gone = {i for i in range(1000) if i % 20 < 4}
    renamed = {i: f"r{i % 20 - 10}" for i in range(1000) if 10 <= i % 20 < 14}
    assert agree(location, cur) == expected([i for i in range(1000) if i not in gone], renamed)
    assert verify(location, data=True).ok


def test_a_delete_in_a_transaction_conflicts_with_a_concurrent_delete(tmp_path: Path) -> None:
    location, cur = lake(tmp_path)
    con = tl.connect(location)
    mine = con.cursor()
    mine.execute("DELETE FROM t WHERE id = 1")
    cur.execute("DELETE FROM t WHERE id = 2")  # autocommit: published first
    with pytest.raises(SerializationError):
        con.commit()
    assert ours(cur) == expected([i for i in range(1000) if i != 2])


def test_a_stale_table_object_cannot_commit_deletes(tmp_path: Path) -> None:
    """RD4 through the API: a commit on a parent that is no longer the head fails and
    changes nothing (no rebase of row deletes)."""
    location, cur = lake(tmp_path)
    stale = table(location)
    data_file = next(iter(stale.scan().plan_files())).file
    cur.execute("DELETE FROM t WHERE id = 999")
    with pytest.raises(CommitFailedException):
        delete_rows(stale, [(data_file, [0, 1])])
    assert ours(cur) == expected(list(range(999)))
    fresh = table(location)
    files = {data_file.file_path: data_file for data_file in (t.file for t in fresh.scan().plan_files())}
    done = delete_rows(fresh, [(files[data_file.file_path], [1, 0])])
    assert done.deleted_rows == 2 and len(done.delete_files) == 1
    assert len(ours(cur)) == 997
    assert verify(location, data=True).ok


@pytest.mark.parametrize("statement", ["DELETE FROM t WHERE id % 100 = 3", "UPDATE t SET name = 'u' WHERE id % 100 = 4"])
def test_every_new_file_is_durable_before_the_root_that_publishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, statement: str
) -> None:
    """Durability (io F1, catalog P2): the delete file, the UPDATE's data file, the new
    manifests, the manifest list and the metadata file are each fsynced before the
    version's root node file is linked into place."""
    import os

    location, cur = lake(tmp_path)
    version = cur.connection.lakehouse.latest_version() + 1
    events: list[tuple[str, str]] = []
    real_fsync, real_link = os.fsync, os.link

    def fsync(fd: int) -> None:
        real_fsync(fd)
        try:
            events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        except OSError:
            pass

    def link(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        real_link(src, dst, *args, **kwargs)
        events.append(("link", os.fspath(dst)))

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "link", link)
    cur.execute(statement)
    monkeypatch.undo()
    assert cur.connection.lakehouse.latest_version() == version
    from trinitylake_dbapi.format.paths import root_node_path

    root = root_node_path(version)
    published = next(i for i, (kind, path) in enumerate(events) if kind == "link" and os.path.basename(path) == root)
    synced = {path for kind, path in events[:published] if kind == "fsync"}
    t = table(location)
    snapshot = t.metadata.current_snapshot()
    new = [t.metadata_location, snapshot.manifest_list]
    for manifest in snapshot_manifests(t.io, snapshot):
        if manifest.added_snapshot_id == snapshot.snapshot_id:
            new.append(manifest.manifest_path)
            new += [e.data_file.file_path for e in manifest_entries(t.io, manifest)]
    assert len(new) >= 4
    for path in new:
        assert path.removeprefix("file://") in synced, path


def test_keyed_tables_check_an_updates_rows_against_the_live_ones(tmp_path: Path) -> None:
    """iceberg.keys PK3 with merge-on-read: an UPDATE's new rows do not collide with
    their own old versions (deleted by the statement's delete file), and an UPDATE that
    makes two rows share a key is refused, nothing changed."""
    location = str(tmp_path / "lake")
    cur = tl.connect(location, create=True, autocommit=True).cursor()
    cur.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR)")
    cur.execute("INSERT INTO t SELECT range, 'n' || range FROM range(100)")
    cur.execute("UPDATE t SET name = 'u' WHERE id < 10")
    cur.execute("UPDATE t SET id = id + 1000 WHERE id >= 90")
    with pytest.raises(tl.IntegrityError):
        cur.execute("UPDATE t SET id = 5 WHERE id = 6")
    assert len(live_files(table(location))[1]) == 2
    ids = [i for i in range(90)] + [i + 1000 for i in range(90, 100)]
    rows = ours(cur)
    assert rows == sorted(((str(i), "u" if i < 10 else f"n{i if i < 1000 else i - 1000}") for i in ids), key=repr)
    assert pyiceberg_rows(table(location)) == rows


def test_optimize_removes_delete_files_a_copy_on_write_update_left_behind(tmp_path: Path) -> None:
    """compaction CP3: a copy-on-write UPDATE of a table with delete files rewrites it
    whole and leaves the delete files naming the replaced files; OPTIMIZE removes them
    (and the automatic policy then stops finding them)."""
    location, cur = lake(tmp_path)
    cur.execute("DELETE FROM t WHERE id % 10 = 0")
    cur.execute("ALTER TABLE t SET TBLPROPERTIES ('write.update.mode' = 'copy-on-write')")
    cur.execute("UPDATE t SET name = 'u' WHERE id = 1")
    t = table(location)
    assert len(live_files(t)[1]) == 1
    assert all(not task.delete_files for task in t.scan().plan_files())  # dangling
    rows = agree(location, cur)
    cur.execute("OPTIMIZE t")
    assert cur.fetchone()[2] == 1
    t = table(location)
    assert not live_files(t)[1]
    assert t.metadata.current_snapshot().summary.additional_properties["total-delete-files"] == "0"
    assert agree(location, cur) == rows
    assert verify(location, data=True).ok
    cur.execute("OPTIMIZE t")
    assert cur.fetchone() == (0, 0, 0, 0, 0)
