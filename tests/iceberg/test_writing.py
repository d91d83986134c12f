"""How SQL and Spark write a table's data through PyIceberg (iceberg/writing.py)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyiceberg.catalog import load_catalog

from pyiceberg.table import Transaction

import trinitylake_dbapi
from trinitylake_dbapi.iceberg.writing import LakehouseTable

IMPL = "trinitylake_dbapi.iceberg.catalog.TrinityLakeCatalog"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])


def test_a_write_transaction_computes_its_metadata_once_per_staged_state(tmp_path: Any) -> None:
    """W4: reads of an unchanged transaction share one metadata object (PyIceberg 0.12
    deep-copies it at every read), for SQL's writes and PyIceberg users' alike; staging an update gives the next read the new state,
    and the transaction commits what was staged."""
    catalog = load_catalog("lake", **{"py-catalog-impl": IMPL, "uri": str(tmp_path / "lake"), "create": "true"})
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=SCHEMA)
    table.append(pa.Table.from_pylist([{"id": 1, "name": "a"}], schema=SCHEMA))

    assert isinstance(table, LakehouseTable)
    txn = table.transaction()
    first = txn.table_metadata
    assert txn.table_metadata is first
    assert first == Transaction(table).table_metadata  # what PyIceberg computes itself
    assert len(first.snapshots) == 1

    txn.set_properties(owner="me")
    staged = txn.table_metadata
    assert staged is not first and staged.properties["owner"] == "me"
    assert txn.table_metadata is staged
    txn.append(pa.Table.from_pylist([{"id": 2, "name": "b"}], schema=SCHEMA))
    assert len(txn.table_metadata.snapshots) == 2
    txn.commit_transaction()

    reloaded = catalog.load_table("ns.t")
    assert reloaded.properties["owner"] == "me"
    assert sorted(reloaded.scan().to_arrow()["id"].to_pylist()) == [1, 2]


ROW = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])


def _one(i: int) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "name": f"n{i}"}], schema=ROW)


def _catalog(tmp_path: Any) -> Any:
    catalog = load_catalog("lake", **{"py-catalog-impl": IMPL, "uri": str(tmp_path / "lake"), "create": "true"})
    catalog.create_namespace("ns")
    return catalog


def _ids(table: Any, snapshot_id: int | None = None) -> list[int]:
    return sorted(table.scan(snapshot_id=snapshot_id).to_arrow()["id"].to_pylist())


def _manifests(table: Any, snapshot: Any = None) -> list[Any]:
    snapshot = snapshot or table.current_snapshot()
    return list(snapshot.manifests(table.io))


def test_a_commit_shares_the_unchanged_metadata_instead_of_copying_it(tmp_path: Any) -> None:
    """tables M8: after a commit the table's metadata holds the earlier snapshots' own
    objects (PyIceberg's update_table_metadata deep-copied the whole history at every
    commit and every transaction read), and apply_updates computes what PyIceberg does."""
    from pyiceberg.table.update import update_table_metadata

    catalog = _catalog(tmp_path)
    table = catalog.create_table("ns.t", schema=ROW)
    table.append(_one(1))
    first = table.metadata.snapshots[0]
    table.append(_one(2))
    assert table.metadata.snapshots[0] is first
    txn = table.transaction()
    assert txn.table_metadata is table.metadata  # nothing staged: the table's own
    txn.set_properties(owner="me")
    txn.append(_one(3))
    staged = txn.table_metadata
    assert staged.snapshots[0] is first
    from trinitylake_dbapi.iceberg.tables import apply_updates

    updates = txn._updates
    base = table.metadata
    ours = apply_updates(base, updates, metadata_location="s3://x/metadata/00002-a.metadata.json")
    theirs = update_table_metadata(base, updates, metadata_location="s3://x/metadata/00002-a.metadata.json")
    assert ours.model_dump(exclude={"last_updated_ms"}) == theirs.model_dump(exclude={"last_updated_ms"})
    assert ours.metadata_log[-1] == theirs.metadata_log[-1]
    txn.commit_transaction()
    assert _ids(catalog.load_table("ns.t")) == [1, 2, 3]


def test_appends_merge_manifests_by_the_tables_properties(tmp_path: Any) -> None:
    """writing W5: with commit.manifest.min-count-to-merge = 4 a snapshot never lists
    more than 4 manifests, whatever the number of one-row appends; every row is read
    once, at the latest snapshot and at every older one (time travel through their own
    manifest lists), by PyIceberg's scan and by SQL; merge disabled keeps one manifest
    per append."""
    catalog = _catalog(tmp_path)
    table = catalog.create_table("ns.t", schema=ROW, properties={"commit.manifest.min-count-to-merge": "4"})
    snapshots = []
    for i in range(13):
        table.append(_one(i))
        assert len(_manifests(table)) <= 4
        snapshots.append(table.current_snapshot().snapshot_id)
    assert len(_manifests(table)) < 13
    reloaded = catalog.load_table("ns.t")
    for n, snapshot_id in enumerate(snapshots):
        assert _ids(reloaded, snapshot_id) == list(range(n + 1))
    with trinitylake_dbapi.connect(str(tmp_path / "lake")) as conn:
        cur = conn.cursor()
        cur.execute("SELECT count(*), count(DISTINCT id), sum(id) FROM ns.t")
        assert cur.fetchone() == (13, 13, sum(range(13)))
    fast = catalog.create_table("ns.f", schema=ROW, properties={"commit.manifest-merge.enabled": "false",
                                                                "commit.manifest.min-count-to-merge": "2"})
    for i in range(5):
        fast.append(_one(i))
    assert len(_manifests(fast)) == 5 and _ids(fast) == list(range(5))


def test_appends_merge_manifests_by_default_at_iceberg_s_count(tmp_path: Any) -> None:
    """W5: a table that sets nothing merges (Iceberg Java's defaults: enabled, 100):
    the 100th one-row append lists one manifest holding every file, 99 of them EXISTING."""
    catalog = _catalog(tmp_path)
    table = catalog.create_table("ns.t", schema=ROW)
    for i in range(100):
        table.append(_one(i))
        if i == 98:
            assert len(_manifests(table)) == 99
    (merged,) = _manifests(table)
    assert (merged.added_files_count, merged.existing_files_count) == (1, 99)
    assert _ids(catalog.load_table("ns.t")) == list(range(100))


def test_a_rebased_merge_append_adds_its_rows_once(tmp_path: Any) -> None:
    """catalog P3/P4 with W5: an append whose merged manifest also lists the old head's
    files, rebased on a newer head, adds only its own files (not the old head's again),
    in autocommit and when a lakehouse transaction is replayed."""
    from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

    catalog = _catalog(tmp_path)
    table = catalog.create_table("ns.t", schema=ROW, properties={"commit.manifest.min-count-to-merge": "2"})
    table.append(_one(0))
    other = TrinityLakeCatalog("other", uri=str(tmp_path / "lake"))
    other.load_table("ns.t").append(_one(1))  # wins: `table` is now one snapshot behind
    table.append(_one(2))  # merges [its manifest, 0's] then is rebased on 1's head
    assert _ids(catalog.load_table("ns.t")) == [0, 1, 2]
    with catalog.lakehouse_transaction():
        table.append(_one(3))
        other.load_table("ns.t").append(_one(4))  # commits first: the block is replayed
    reloaded = catalog.load_table("ns.t")
    assert _ids(reloaded) == [0, 1, 2, 3, 4]
    for snapshot in reloaded.snapshots():  # every version reads each row at most once
        ids = _ids(reloaded, snapshot.snapshot_id)
        assert len(ids) == len(set(ids))


def test_an_append_reads_no_manifest_list_or_manifest(tmp_path: Any) -> None:
    """writing W6, manifests MF2, MF6: an append reads back neither its new manifest
    list and manifest (their writers kept what they wrote: the commit's location check
    and its C7 file list use that) nor its parent's list (the previous commit kept it);
    PyIceberg's readers read the parent's once and the new one twice, resolving the
    Avro schema each time (and, before MF6, the new list and manifest were decoded)."""
    catalog = _catalog(tmp_path)
    table = catalog.create_table("ns.t", schema=ROW, properties={"commit.manifest-merge.enabled": "false"})
    table.append(_one(0))
    io = table.io
    opened: list[str] = []
    new_input = io.new_input

    def spy(location: str) -> Any:
        opened.append(location)
        return new_input(location)

    io.new_input = spy
    try:
        for i in range(1, 4):
            opened.clear()
            parent = table.current_snapshot().manifest_list
            table.append(_one(i))
            lists = [loc for loc in opened if "/snap-" in loc]
            assert lists.count(parent) == 0, opened
            assert lists.count(table.current_snapshot().manifest_list) == 0, opened
            assert not [loc for loc in opened if loc.endswith(".avro")], opened
    finally:
        del io.new_input
    assert _ids(catalog.load_table("ns.t")) == [0, 1, 2, 3]


def test_an_append_after_a_read_parent_writes_its_manifest_on_this_thread(tmp_path: Any) -> None:
    """writing W12: an append (merging manifests or not) whose parent's manifest list is
    decoded already hands nothing to PyIceberg's thread pool; one whose parent's list is
    not (another process committed it) still overlaps reading it with writing its
    manifest there; every snapshot reads the rows appended."""
    from pyiceberg.utils.concurrent import ExecutorFactory

    from trinitylake_dbapi.iceberg import manifests

    catalog = _catalog(tmp_path)
    pool = ExecutorFactory.get_or_create()
    handed: list[Any] = []
    submit = pool.submit

    def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(fn, "__name__", "") in ("_write_added_manifest", "_write_delete_manifest", "_existing_manifests"):
            handed.append(fn)  # a part of the producer's manifests (the data files go there too)
        return submit(fn, *args, **kwargs)

    for merging in ("true", "false"):
        table = catalog.create_table(f"ns.t{merging}", schema=ROW, properties={"commit.manifest-merge.enabled": merging})
        table.append(_one(0))
        pool.submit = counted  # type: ignore[method-assign]
        try:
            for i in range(1, 4):
                handed.clear()
                table.append(_one(i))
                assert handed == [], (merging, i)
            manifests.CACHE.clear()  # as if another process had committed the parent
            handed.clear()
            table.append(_one(4))
            assert len(handed) == 3, merging
        finally:
            del pool.submit
        reloaded = catalog.load_table(f"ns.t{merging}")
        assert _ids(reloaded) == [0, 1, 2, 3, 4]
        assert [len(_ids(reloaded, s.snapshot_id)) for s in reloaded.snapshots()] == [1, 2, 3, 4, 5]
