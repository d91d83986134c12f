"""Iceberg snapshot retention (iceberg.retention RT1-RT7, maintenance E11): the data files
UPDATE, DELETE and compaction replace are reclaimed once no kept version reaches them,
and every kept lakehouse version still reads its rows."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table.metadata import TableMetadataUtil, TableMetadataV2
from pyiceberg.table.refs import SnapshotRef, SnapshotRefType
from pyiceberg.table.snapshots import Snapshot, SnapshotLogEntry

import trinitylake_dbapi
from trinitylake_dbapi import maintenance
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.errors import (
    CommitFailedError, CorruptFileError, InvalidDefinitionError, MissingFileError, ProgrammingError,
)
from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog
from trinitylake_dbapi.iceberg.retention import (
    MAX_SNAPSHOT_AGE_MS,
    MIN_SNAPSHOTS_TO_KEEP,
    expire_updates,
    snapshots_to_expire,
)
from trinitylake_dbapi.iceberg.tables import apply_updates
from trinitylake_dbapi.verify import verify
from tests.deadlines import HANG_S
from tests.iceberg.duck_iceberg import duckdb_scans

FAR_FUTURE = 2**62


def parquet_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in (root / "tables").rglob("*.parquet")}


def rows_at(cur: Any, version: int | None = None) -> list[tuple]:
    at = "" if version is None else f" FOR SYSTEM_VERSION AS OF {version}"
    cur.execute(f"SELECT id, v FROM t{at} ORDER BY id")
    return [tuple(r) for r in cur.fetchall()]


def updated_table(root: Path, updates: int, mode: str = "copy-on-write") -> tuple[Any, dict[int, list[tuple]]]:
    """A table UPDATEd ``updates`` times (``mode``: Iceberg's ``write.update.mode``;
    ``+optimize``: OPTIMIZE after them), rows recorded at each version."""
    LakehouseCatalog(str(root), create=True, lakehouse_options={"minimum_versions_to_keep": 1})
    conn = trinitylake_dbapi.connect(str(root), autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (id BIGINT, v BIGINT)")
    cur.execute(f"ALTER TABLE t SET TBLPROPERTIES ('write.update.mode' = '{mode.split('+')[0]}')")
    cur.execute("INSERT INTO t VALUES (1, 0), (2, 0), (3, 0)")
    oracle = {}
    for i in range(updates):
        cur.execute(f"UPDATE t SET v = {i + 1} WHERE id = {1 + i % 3}")
        oracle[LakehouseCatalog(str(root)).latest_version()] = rows_at(cur)
    if mode.endswith("+optimize"):
        cur.execute("OPTIMIZE t")
        oracle[LakehouseCatalog(str(root)).latest_version()] = rows_at(cur)
    return conn, oracle


def current_files(table: Any) -> set[str]:
    """The data and delete files the table's current snapshot reads."""
    found = set()
    for task in table.scan().plan_files():
        found.add(task.file.file_path)
        found.update(d.file_path for d in task.delete_files)
    return found


def test_default_retention_keeps_every_replaced_file(tmp_path: Path) -> None:
    """Before retention (and with Iceberg's default of 5 days), a table UPDATEd 8 times
    copy-on-write keeps all 9 data files through any EXPIRE VERSIONS."""
    root = tmp_path / "lake"
    updated_table(root, 8)
    before = parquet_files(root)
    assert len(before) == 9  # the INSERT's file and one per UPDATE
    done = maintenance.expire_versions(LakehouseCatalog(str(root)), retain_last=1, older_than_millis=FAR_FUTURE,
                                       orphan_grace_millis=0)  # fmt: skip
    assert done.snapshots == {} and parquet_files(root) == before


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read", "merge-on-read+optimize"])
def test_an_updated_table_gets_its_replaced_files_back_and_kept_versions_still_read(tmp_path: Path, mode: str) -> None:
    root = tmp_path / "lake"
    conn, oracle = updated_table(root, 8, mode)
    cur = conn.cursor()
    before = parquet_files(root)
    cur.execute(f"ALTER TABLE t SET TBLPROPERTIES ('{MAX_SNAPSHOT_AGE_MS}' = '0')")
    oracle[LakehouseCatalog(str(root)).latest_version()] = rows_at(cur)
    lakehouse = LakehouseCatalog(str(root))
    done = maintenance.expire_versions(lakehouse, retain_last=3, older_than_millis=FAR_FUTURE, orphan_grace_millis=0)
    if mode == "copy-on-write":
        [(table, dropped)] = done.snapshots.items()
        assert table == "default.t" and len(dropped) == 8  # the INSERT's and the UPDATEs', all but the current
    latest = lakehouse.latest_version()
    oracle[latest] = rows_at(cur)
    kept = [v.version for v in lakehouse.iter_versions(latest, 0)]
    assert len(kept) == 3 and latest in kept
    for version in kept:
        assert rows_at(cur, version) == oracle[version]

    # once the versions before the retention commit expire too, only the current
    # snapshot's files remain on disk
    done = maintenance.expire_versions(lakehouse, retain_last=1, older_than_millis=FAR_FUTURE, orphan_grace_millis=0)
    assert done.snapshots == {}  # nothing more to drop: one snapshot left
    catalog = TrinityLakeCatalog("lake", uri=str(root))
    table = catalog.load_table("default.t")
    on_disk = parquet_files(root)
    assert {f"{root.as_uri()}/{p}" for p in on_disk} == current_files(table)
    if mode != "merge-on-read":  # merge-on-read alone replaces no file: every one stays live
        assert len(on_disk) == 1 < len(before)
    assert len(table.metadata.snapshots) == 1
    assert rows_at(cur) == oracle[latest]
    assert sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": i, "v": v} for i, v in oracle[latest]
    ]
    assert verify(str(root), data=True, all_versions=True).ok
    conn.close()


def test_sql_expire_snapshots_and_pyiceberg_and_duckdb_read_the_new_metadata(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    conn, oracle = updated_table(root, 5)
    cur = conn.cursor()
    catalog = TrinityLakeCatalog("lake", uri=str(root))
    snapshots = [s.snapshot_id for s in catalog.load_table("default.t").metadata.snapshots]
    cur.execute("ALTER TABLE t EXECUTE expire_snapshots(older_than => TIMESTAMP '2200-01-01 00:00:00', retain_last => 2)")
    dropped = [r[0] for r in cur.fetchall()]
    assert dropped == snapshots[:-2]  # oldest first, the newest two kept
    table = catalog.load_table("default.t")
    metadata = table.metadata
    assert [s.snapshot_id for s in metadata.snapshots] == snapshots[-2:]
    assert {e.snapshot_id for e in metadata.snapshot_log} <= {s.snapshot_id for s in metadata.snapshots}
    assert metadata.snapshot_by_id(snapshots[-2]).parent_snapshot_id is None  # its parent went (RT3)
    assert metadata.refs["main"].snapshot_id == metadata.current_snapshot_id == snapshots[-1]
    rows = [(r["id"], r["v"]) for r in sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])]
    assert rows == rows_at(cur)
    # the version before still reads its rows through the older metadata (lakehouse time travel)
    previous = max(oracle)
    assert rows_at(cur, previous) == oracle[previous]
    # nothing more to drop: no new version
    version = LakehouseCatalog(str(root)).latest_version()
    cur.execute("ALTER TABLE t EXECUTE expire_snapshots()")
    assert cur.fetchall() == [] and LakehouseCatalog(str(root)).latest_version() == version
    assert verify(str(root), data=True, all_versions=True).ok
    assert [(i, v) for i, v in duckdb_rows_iv(table.metadata_location)] == rows


def duckdb_rows_iv(metadata_location: str) -> list[tuple]:
    """The (id, v) rows DuckDB's iceberg extension reads at ``metadata_location``, by id
    (the process's reader child of tests/iceberg/duck_iceberg.py: values come back as
    text, made ints again; it skips without the overlay)."""
    return sorted((int(i), int(v)) for i, v in duckdb_scans([metadata_location])[0])


@pytest.mark.parametrize(
    "statement, error",
    [
        ("ALTER TABLE t EXECUTE expire_snapshots(retain_last => 0)", ProgrammingError),
        ("ALTER TABLE t EXECUTE expire_snapshots(foo => 1)", ProgrammingError),
        ("ALTER TABLE t EXECUTE expire_snapshots(retain_last => 1, retain_last => 2)", ProgrammingError),
        ("ALTER TABLE t EXECUTE expire_snapshots(older_than => 'never')", ProgrammingError),
        ("ALTER TABLE missing EXECUTE expire_snapshots", ProgrammingError),
    ],
)
def test_bad_expire_snapshots_statements_are_clear_errors(tmp_path: Path, statement: str, error: type) -> None:
    conn, _ = updated_table(tmp_path / "lake", 1)
    version = LakehouseCatalog(str(tmp_path / "lake")).latest_version()
    with pytest.raises(error):
        conn.cursor().execute(statement)
    assert LakehouseCatalog(str(tmp_path / "lake")).latest_version() == version


@pytest.mark.parametrize("name, value", [(MAX_SNAPSHOT_AGE_MS, "-1"), (MAX_SNAPSHOT_AGE_MS, "soon"),
                                         (MIN_SNAPSHOTS_TO_KEEP, "0"), (MIN_SNAPSHOTS_TO_KEEP, "1.5")])
def test_a_bad_retention_property_names_the_table_and_property(tmp_path: Path, name: str, value: str) -> None:
    conn, _ = updated_table(tmp_path / "lake", 2)
    cur = conn.cursor()
    cur.execute(f"ALTER TABLE t SET TBLPROPERTIES ('{name}' = '{value}')")
    version = LakehouseCatalog(str(tmp_path / "lake")).latest_version()
    with pytest.raises(InvalidDefinitionError, match=f"default.t.*{name}"):
        cur.execute("ALTER TABLE t EXECUTE expire_snapshots")
    with pytest.raises(InvalidDefinitionError, match=f"default.t.*{name}"):
        maintenance.expire_versions(LakehouseCatalog(str(tmp_path / "lake")), retain_last=1)
    assert LakehouseCatalog(str(tmp_path / "lake")).latest_version() == version


def test_a_removal_is_checked_against_the_latest_metadata(tmp_path: Path) -> None:
    """RT4: a stale PyIceberg client expiring a snapshot another writer has tagged since
    is refused; PyIceberg alone would drop the tag with it."""
    catalog = TrinityLakeCatalog("lake", uri=str(tmp_path / "lake"), create="true")
    table = catalog.create_table("default.t", pa.schema([("id", pa.int64())]))
    for i in range(3):
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
    stale = catalog.load_table("default.t")
    first = stale.metadata.snapshots[0].snapshot_id
    catalog.load_table("default.t").manage_snapshots().create_tag(first, "keep").commit()
    with pytest.raises(CommitFailedException, match=f"default.t.*{first}.*'keep'"):
        stale.maintenance.expire_snapshots().by_id(first).commit()
    assert catalog.load_table("default.t").metadata.refs["keep"].snapshot_id == first
    # the catalog API keeps the tag's snapshot (and main's head) and drops the rest
    dropped = catalog.expire_snapshots("default.t", older_than_ms=FAR_FUTURE)
    metadata = catalog.load_table("default.t").metadata
    assert {s.snapshot_id for s in metadata.snapshots} == {first, metadata.current_snapshot_id}
    assert len(dropped) == 1
    with pytest.raises(Exception, match="Table does not exist"):
        catalog.expire_snapshots("default.missing")


# -- RT2, RT3 as properties over random histories ---------------------------------------------

DAY = 24 * 3600 * 1000
NOW = 1_800_000_000_000


@st.composite
def histories(draw: Any) -> tuple[TableMetadataV2, int | None, int | None]:
    """Random metadata: a main line, side branches and tags off it, unreferenced
    snapshots, random ages and retention properties (table and refs)."""
    count = draw(st.integers(1, 14))
    ages = sorted(draw(st.lists(st.integers(0, 10 * DAY), min_size=count, max_size=count)), reverse=True)
    snapshots: list[Snapshot] = []
    for i, age in enumerate(ages):
        parent = None if i == 0 else draw(st.sampled_from([None] + [s.snapshot_id for s in snapshots]))
        snapshots.append(Snapshot(**{"snapshot-id": 1000 + i, "parent-snapshot-id": parent, "sequence-number": i + 1,
                                     "timestamp-ms": NOW - age, "manifest-list": f"file:///t/snap-{i}.avro",
                                     "summary": {"operation": "append"}}))  # fmt: skip
    ids = [s.snapshot_id for s in snapshots]
    refs = {"main": SnapshotRef(**{"snapshot-id": ids[-1], "type": "branch"})}
    for name in draw(st.lists(st.sampled_from(["b1", "b2", "t1", "t2"]), unique=True)):
        head = draw(st.sampled_from(ids))
        if name.startswith("b"):
            own = {}
            if draw(st.booleans()):
                own["min-snapshots-to-keep"] = draw(st.integers(1, 4))
            if draw(st.booleans()):
                own["max-snapshot-age-ms"] = draw(st.integers(1, 8 * DAY))
            refs[name] = SnapshotRef(**{"snapshot-id": head, "type": "branch", **own})
        else:
            refs[name] = SnapshotRef(**{"snapshot-id": head, "type": "tag"})
    properties = {}
    if draw(st.booleans()):
        properties[MAX_SNAPSHOT_AGE_MS] = str(draw(st.integers(0, 8 * DAY)))
    if draw(st.booleans()):
        properties[MIN_SNAPSHOTS_TO_KEEP] = str(draw(st.integers(1, 5)))
    log = [SnapshotLogEntry(**{"snapshot-id": s.snapshot_id, "timestamp-ms": s.timestamp_ms}) for s in snapshots]
    metadata = TableMetadataV2(**{
        "location": "file:///t", "table-uuid": str(uuid.uuid4()), "last-updated-ms": NOW, "last-column-id": 1,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long",
                                                                   "required": False}]}],
        "current-schema-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}], "default-spec-id": 0,
        "last-partition-id": 999, "properties": properties, "current-snapshot-id": ids[-1],
        "snapshots": snapshots, "snapshot-log": log, "refs": refs, "last-sequence-number": count,
        "sort-orders": [{"order-id": 0, "fields": []}], "default-sort-order-id": 0,
    })  # fmt: skip
    older_than = draw(st.none() | st.integers(NOW - 11 * DAY, NOW + DAY))
    retain_last = draw(st.none() | st.integers(1, 5))
    return metadata, older_than, retain_last


def ancestry(metadata: TableMetadataV2, snapshot_id: int | None) -> list[int]:
    found = []
    while snapshot_id is not None and snapshot_id not in found:
        found.append(snapshot_id)
        snapshot_id = metadata.snapshot_by_id(snapshot_id).parent_snapshot_id
    return found


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_retention_keeps_exactly_what_iceberg_keeps_and_writes_valid_metadata(case: Any) -> None:
    metadata, older_than, retain_last = case
    dropped = snapshots_to_expire("ns.t", metadata, NOW, older_than, retain_last)
    table_age = int(metadata.properties.get(MAX_SNAPSHOT_AGE_MS, 5 * DAY))
    table_keep = int(metadata.properties.get(MIN_SNAPSHOTS_TO_KEEP, 1))
    default_cutoff = NOW - table_age if older_than is None else older_than
    default_keep = table_keep if retain_last is None else retain_last
    expected_keep: set[int] = {ref.snapshot_id for ref in metadata.refs.values()}  # every head, current included
    referenced: set[int] = set()
    for ref in metadata.refs.values():
        line = ancestry(metadata, ref.snapshot_id)
        if ref.snapshot_ref_type != SnapshotRefType.BRANCH:
            referenced.add(ref.snapshot_id)
            continue
        referenced.update(line)
        cutoff = default_cutoff if ref.max_snapshot_age_ms is None else NOW - ref.max_snapshot_age_ms
        keep = default_keep if ref.min_snapshots_to_keep is None else ref.min_snapshots_to_keep
        for rank, snapshot_id in enumerate(line):  # the newest `keep`, then while young enough
            if rank < keep or metadata.snapshot_by_id(snapshot_id).timestamp_ms >= cutoff:
                expected_keep.add(snapshot_id)
            else:
                break
    expected_keep |= {s.snapshot_id for s in metadata.snapshots
                      if s.snapshot_id not in referenced and s.timestamp_ms >= default_cutoff}  # fmt: skip
    assert set(dropped) == {s.snapshot_id for s in metadata.snapshots} - expected_keep
    assert metadata.current_snapshot_id not in dropped
    assert len(dropped) == len(set(dropped))

    updated = apply_updates(metadata, expire_updates(metadata, dropped))
    parsed = TableMetadataUtil.parse_raw(updated.model_dump_json())  # valid Iceberg metadata, as read back
    left = {s.snapshot_id for s in parsed.snapshots}
    assert left == expected_keep
    assert parsed.current_snapshot_id == metadata.current_snapshot_id
    assert parsed.refs == metadata.refs  # RT2: refs are never dropped
    assert all(e.snapshot_id in left for e in parsed.snapshot_log)
    assert all(s.parent_snapshot_id is None or s.parent_snapshot_id in left for s in parsed.snapshots)


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_expiration_with_retention_racing_writers_loses_nothing(tmp_path: Path, mode: str) -> None:
    """RT7 with maintenance E4, E8-E10, E13: EXPIRE runs (retention commit, zero grace)
    again and again while two connections INSERT into and UPDATE the table; every
    statement that returned is in the final rows, and verify --data stays clean at
    every kept version. A statement whose commit was slow enough for the expiration to
    take its files fails with MissingFileError or CommitFailedError, having published
    nothing (transaction C7), and is retried, as its message says."""
    import threading

    def run(c: Any, sql: str, params: tuple = ()) -> None:
        for _ in range(20):
            try:
                c.execute(sql, params)
                return
            except (MissingFileError, CommitFailedError) as error:
                assert "retry the transaction" in str(error)
        raise AssertionError(f"{sql} kept failing")

    root = tmp_path / "lake"
    conn, _ = updated_table(root, 1, mode)
    cur = conn.cursor()
    cur.execute(f"ALTER TABLE t SET TBLPROPERTIES ('{MAX_SNAPSHOT_AGE_MS}' = '0')")
    expected: dict[int, int] = {1: 1, 2: 0, 3: 0}
    lock = threading.Lock()
    errors: list[BaseException] = []

    def writer(base: int) -> None:
        try:
            with trinitylake_dbapi.connect(str(root), autocommit=True) as own:
                c = own.cursor()
                for i in range(12):
                    key = base + i
                    run(c, "INSERT INTO t VALUES (?, ?)", (key, 0))
                    with lock:
                        expected[key] = 0
                    if i % 3 == 2:
                        run(c, f"UPDATE t SET v = v + 1 WHERE id = {key}")
                        with lock:
                            expected[key] += 1
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(base,)) for base in (100, 200)]
    for thread in threads:
        thread.start()
    runs = dropped = 0
    while any(t.is_alive() for t in threads) or runs < 2:
        done = maintenance.expire_versions(LakehouseCatalog(str(root)), retain_last=1, older_than_millis=FAR_FUTURE,
                                           orphan_grace_millis=0)  # fmt: skip
        dropped += sum(len(ids) for ids in done.snapshots.values())
        runs += 1
    assert dropped > 0  # retention commits did race the writers
    for thread in threads:
        thread.join(timeout=HANG_S)
    assert not errors, errors
    assert rows_at(cur) == sorted(expected.items())
    report = verify(str(root), data=True, all_versions=True)
    assert report.ok, report.text()
    conn.close()


def test_a_table_whose_metadata_is_missing_is_left_to_expirations_own_rule(tmp_path: Path) -> None:
    """RT6: retention skips a table it cannot read; maintenance E8 then refuses to delete
    any Iceberg file, naming the metadata file, as without retention."""
    root = tmp_path / "lake"
    updated_table(root, 2)
    conn = trinitylake_dbapi.connect(str(root), autocommit=True)
    conn.cursor().execute(f"ALTER TABLE t SET TBLPROPERTIES ('{MAX_SNAPSHOT_AGE_MS}' = '0')")
    conn.close()
    location = TrinityLakeCatalog("lake", uri=str(root)).load_table("default.t").metadata_location
    os.remove(location[len("file://"):])
    version = LakehouseCatalog(str(root)).latest_version()
    with pytest.raises(CorruptFileError, match="named by a kept version"):
        maintenance.expire_versions(LakehouseCatalog(str(root)), retain_last=1, older_than_millis=FAR_FUTURE,
                                    orphan_grace_millis=0)  # fmt: skip
    assert LakehouseCatalog(str(root)).latest_version() == version  # no retention commit
