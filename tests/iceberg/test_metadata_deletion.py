"""``write.metadata.delete-after-commit.enabled`` (iceberg.oldmetadata OM1-OM5, issue 35).

A commit whose table enables it deletes the metadata files it dropped from the table's
metadata log, only after its lakehouse version is published; older lakehouse versions
that name them cannot read the table any more, with a clear error; ROLLBACK to them is
refused; expiration and verify take them for what they are.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.table.metadata import TableMetadataV2
from pyiceberg.table.snapshots import MetadataLogEntry
from pyiceberg.types import IntegerType

import trinitylake_dbapi
from trinitylake_dbapi import maintenance
from trinitylake_dbapi.errors import CorruptFileError, MissingFileError, OperationalError
from trinitylake_dbapi.iceberg import TrinityLakeCatalog
from trinitylake_dbapi.iceberg.oldmetadata import doomed_metadata
from trinitylake_dbapi.verify import verify

DELETE = "write.metadata.delete-after-commit.enabled"
KEEP = "write.metadata.previous-versions-max"
SCHEMA = pa.schema([("id", pa.int64())])


def local(location: str) -> str:
    return location.removeprefix("file://")


def evolve(table, column: str) -> None:  # noqa: ANN001 - a PyIceberg Table
    with table.transaction() as transaction:
        with transaction.update_schema() as update:
            update.add_column(column, IntegerType())


def lake(tmp_path: Path) -> TrinityLakeCatalog:
    return TrinityLakeCatalog("c", uri=(tmp_path / "lake").as_uri(), create="true")


def history(catalog: TrinityLakeCatalog, identifier: str, commits: int = 4):  # noqa: ANN201
    """A table with ``commits`` schema changes: its metadata log holds that many files."""
    if not catalog.namespace_exists(identifier.split(".")[0]):
        catalog.create_namespace(identifier.split(".")[0])
    table = catalog.create_table(identifier, SCHEMA)
    for i in range(commits):
        evolve(table, f"c{i}")
    return table


@pytest.mark.parametrize("value", ["true", "True", "1", "yes", "on"])
def test_dropped_metadata_is_deleted_once_published(tmp_path: Path, value: str) -> None:
    catalog = lake(tmp_path)
    table = history(catalog, "ns.t")
    first = table.metadata_location  # not yet in the log: the current file
    log = [entry.metadata_file for entry in table.metadata.metadata_log]
    with table.transaction() as transaction:
        transaction.set_properties({KEEP: "2", DELETE: value})
    kept = [entry.metadata_file for entry in table.metadata.metadata_log]
    assert len(kept) == 2
    assert [os.path.exists(local(f)) for f in log] == [False, False, False, True]  # the 4th is kept in the log
    assert os.path.exists(local(first))
    evolve(table, "x")
    assert not os.path.exists(local(kept[0])) and os.path.exists(local(kept[1]))
    assert catalog.load_table("ns.t").schema().find_field("x")


@pytest.mark.parametrize("value", [None, "false", "0", "not-a-boolean"])
def test_without_the_opt_in_nothing_is_deleted(tmp_path: Path, value: str | None) -> None:
    catalog = lake(tmp_path)
    table = history(catalog, "ns.t")
    with table.transaction() as transaction:
        transaction.set_properties({KEEP: "1", **({DELETE: value} if value is not None else {})})
    evolve(table, "x")
    files = list((tmp_path / "lake" / "tables").rglob("*.metadata.json"))
    assert len(files) == 7  # create, 4 evolutions, the property, x: all still there


def test_in_a_lakehouse_transaction_deletion_waits_for_its_commit(tmp_path: Path) -> None:
    catalog = lake(tmp_path)
    table = history(catalog, "ns.t")
    log = [entry.metadata_file for entry in table.metadata.metadata_log]
    with catalog.lakehouse_transaction():
        with table.transaction() as transaction:
            transaction.set_properties({KEEP: "1", DELETE: "true"})
        # PyIceberg's Table has run its delete-after-commit: nothing is published yet
        assert all(os.path.exists(local(f)) for f in log)
    assert [os.path.exists(local(f)) for f in log] == [False, False, False, False]

    table = catalog.load_table("ns.t")
    before = [entry.metadata_file for entry in table.metadata.metadata_log] + [table.metadata_location]
    version = catalog.lakehouse.latest_version()
    with pytest.raises(RuntimeError, match="changed my mind"):
        with catalog.lakehouse_transaction():
            evolve(table, "y")
            raise RuntimeError("changed my mind")
    assert catalog.lakehouse.latest_version() == version
    assert all(os.path.exists(local(f)) for f in before)  # rolled back: nothing deleted


def test_through_sql_and_a_connection_transaction(tmp_path: Path) -> None:
    uri = (tmp_path / "lake").as_uri()
    conn = trinitylake_dbapi.connect(uri, create=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (id BIGINT)")
    for i in range(3):
        cur.execute(f"INSERT INTO t VALUES ({i})")
    conn.commit()
    cur.execute(f"ALTER TABLE t SET TBLPROPERTIES ('{DELETE}' = 'true', '{KEEP}' = '1')")
    conn.commit()
    metadata = set((tmp_path / "lake" / "tables").rglob("*.metadata.json"))
    assert len(metadata) == 2  # the current file and the one its log keeps
    cur.execute("INSERT INTO t VALUES (3)")
    assert set((tmp_path / "lake" / "tables").rglob("*.metadata.json")) == metadata  # not committed yet
    conn.commit()
    after = set((tmp_path / "lake" / "tables").rglob("*.metadata.json"))
    assert len(after) == 2 and len(after & metadata) == 1  # the older of the two is gone
    cur.execute("SELECT count(*) FROM t")
    assert cur.fetchall() == [(4,)]
    conn.close()


def test_older_versions_cannot_read_the_table_and_say_why(tmp_path: Path) -> None:
    catalog = lake(tmp_path)
    table = history(catalog, "ns.t", commits=2)
    table.append(pa.table({"id": [1]}, schema=SCHEMA))
    old = catalog.lakehouse.latest_version()
    catalog.lakehouse.export_snapshot("before", old)
    other = catalog.create_table("ns.other", SCHEMA)
    other.append(pa.table({"id": [9]}, schema=SCHEMA))
    with table.transaction() as transaction:
        transaction.set_properties({KEEP: "1", DELETE: "true"})
    evolve(table, "x")
    latest = catalog.lakehouse.latest_version()
    gone = catalog.at_version(old).load_table  # PyIceberg at the older version
    with pytest.raises(MissingFileError, match=rf"table ns\.t that lakehouse version {old} names does not exist"):
        gone("ns.t")
    with pytest.raises(MissingFileError, match="delete-after-commit"):
        catalog.at_version("before").load_table("ns.t")

    conn = trinitylake_dbapi.connect((tmp_path / "lake").as_uri())
    cur = conn.cursor()
    for sql in (f"SELECT * FROM ns.t FOR SYSTEM_VERSION AS OF {old}", "SELECT * FROM ns.t FOR SYSTEM_VERSION AS OF 'before'"):
        with pytest.raises(OperationalError, match=r"\.metadata\.json': the metadata file of table ns\.t that lakehouse version \d+ names"):
            cur.execute(sql)
    cur.execute(f"SELECT * FROM ns.other FOR SYSTEM_VERSION AS OF {latest}")  # other tables: as always
    assert cur.fetchall() == [(9,)]

    # ROLLBACK to that version is refused before anything is published
    with pytest.raises(OperationalError, match=rf"table ns\.t, which version {old} names, does not exist any more"):
        cur.execute(f"ROLLBACK TO VERSION {old}")
    with pytest.raises(MissingFileError, match="would publish a version naming a missing file"):
        catalog.lakehouse.rollback_to(old)
    assert catalog.lakehouse.latest_version() == latest
    cur.execute("SELECT count(*) FROM ns.t")
    assert cur.fetchall() == [(1,)]
    # a version whose files are all there still rolls back
    assert catalog.lakehouse.rollback_to(latest - 1) == latest + 1
    conn.close()


def test_verify_and_expiration_take_deleted_metadata_for_what_it_is(tmp_path: Path) -> None:
    catalog = lake(tmp_path)
    table = history(catalog, "ns.t", commits=3)
    with table.transaction() as transaction:
        transaction.set_properties({KEEP: "1", DELETE: "true"})
    evolve(table, "x")
    report = verify(catalog.lakehouse, all_versions=True, data=True)
    assert report.ok, report.text()
    deleted = [p for p in report.warnings if "deleted after a later commit" in p.message]
    assert len(deleted) == 4, report.text()  # versions 2..5 named the 4 deleted files

    # expiration keeps every version (none is old enough) and goes on: nothing to reclaim
    result = maintenance.expire_versions(catalog.lakehouse, orphan_grace_millis=0)
    assert result.versions == []
    # then every version but the newest expires, and with them what only they reached
    now = int(time.time() * 1000) + 1000
    result = maintenance.expire_versions(catalog.lakehouse, retain_last=1, older_than_millis=now, orphan_grace_millis=0)
    assert result.versions == [0, 1, 2, 3, 4]  # kept: 5 (its metadata file deleted), 6, 7
    assert verify(catalog.lakehouse, all_versions=True, data=True).ok
    assert catalog.load_table("ns.t").schema().find_field("x")


def test_an_unexplained_missing_metadata_file_is_still_corruption(tmp_path: Path) -> None:
    """OM5 explains only files under a table that deletes old metadata: a metadata file
    lost otherwise is an error of verify and stops expiration, as before."""
    catalog = lake(tmp_path)
    table = history(catalog, "ns.t", commits=2)
    lost = table.metadata.metadata_log[0].metadata_file
    os.remove(local(lost))
    report = verify(catalog.lakehouse, all_versions=True, data=True)
    assert not report.ok and any(lost in p.message and p.severity == "error" for p in report.problems)
    with pytest.raises(CorruptFileError, match="no Iceberg file is deleted"):
        maintenance.expire_versions(catalog.lakehouse, orphan_grace_millis=0)

    # another table deleting its own old metadata explains nothing of ns.t's
    other = history(catalog, "ns.other", commits=2)
    with other.transaction() as transaction:
        transaction.set_properties({KEEP: "1", DELETE: "true"})
    evolve(other, "x")
    assert not verify(catalog.lakehouse, all_versions=True, data=True).ok
    with pytest.raises(CorruptFileError):
        maintenance.expire_versions(catalog.lakehouse, orphan_grace_millis=0)


def _metadata(location: str, log: list[str], properties: dict[str, str]) -> TableMetadataV2:
    return TableMetadataV2(
        location=location, table_uuid="9c12d441-03fe-4693-9a96-a0705ddf69c1", last_updated_ms=1,
        last_column_id=0, schemas=[{"type": "struct", "fields": [], "schema-id": 0}], current_schema_id=0,
        partition_specs=[{"spec-id": 0, "fields": []}], default_spec_id=0, last_partition_id=999,
        sort_orders=[{"order-id": 0, "fields": []}], default_sort_order_id=0, properties=properties,
        metadata_log=[MetadataLogEntry(metadata_file=f, timestamp_ms=1) for f in log],
    )  # fmt: skip


def test_only_metadata_files_of_the_table_inside_the_root_are_ever_deleted(tmp_path: Path) -> None:
    """OM3 against a hostile metadata log (a writer of a shared lakehouse can write one):
    nothing outside the root, outside the table's directories, or not named as a
    metadata file is ever doomed."""
    root = (tmp_path / "lake").as_uri() + "/"
    table = root + "tables/ns/t-1"
    hostile = [
        f"file://{tmp_path}/outside.metadata.json",
        root + "tables/ns/t-1/../../../outside.metadata.json",
        root + "tables/ns/t-1/../t-2/metadata/00001-x.metadata.json",  # another table's
        root + "tables/ns/t-2/metadata/00001-x.metadata.json",
        root + "_lakehouse_def_x.metadata.json",
        "s3://bucket/lake/tables/ns/t-1/metadata/00001-x.metadata.json",
        "/etc/passwd",
        root + "tables/ns/t-1/data/00000-0-x.parquet",  # a data file, not metadata
        root + "tables/ns/t-1/metadata/snap-1-x.avro",
    ]
    ours = [root + "tables/ns/t-1/metadata/00001-a.metadata.json", root + "tables/ns/t-1/metadata/00002-b.gz.metadata.json"]
    current = _metadata(table, hostile + ours, {})
    updated = _metadata(table, [], {DELETE: "true"})
    assert doomed_metadata(root, current, updated) == sorted(ours)
    assert doomed_metadata(root, current, _metadata(table, [], {DELETE: "false"})) == []
    assert doomed_metadata(root, current, _metadata(table, [ours[0]], {DELETE: "true"})) == [ours[1]]


def test_a_metadata_file_reached_through_a_symlink_is_not_deleted(tmp_path: Path) -> None:
    """OM3, tables M7: a metadata file of the log replaced by a link (by a writer of the
    lakehouse's disk) is left alone, and so is the file it points at."""
    catalog = lake(tmp_path)
    table = history(catalog, "ns.t", commits=2)
    victim = tmp_path / "victim.metadata.json"
    victim.write_text("{}")
    linked = local(table.metadata.metadata_log[0].metadata_file)
    os.remove(linked)
    os.symlink(victim, linked)
    with table.transaction() as transaction:
        transaction.set_properties({KEEP: "1", DELETE: "true"})
    assert os.path.islink(linked) and victim.exists()


def test_a_lost_metadata_file_at_the_latest_version_is_not_blamed_on_a_later_commit(tmp_path: Path) -> None:
    """M9's message for the latest version, where no later version exists to read the table."""
    conn = trinitylake_dbapi.connect((tmp_path / "lake").as_uri(), create=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute("CREATE TABLE ns.t (id INT)")
    conn.commit()
    (named,) = (tmp_path / "lake" / "tables").rglob("*.metadata.json")
    named.unlink()
    conn.close()
    conn = trinitylake_dbapi.connect((tmp_path / "lake").as_uri())
    with pytest.raises(OperationalError) as raised:
        conn.cursor().execute("SELECT * FROM ns.t")
    message = str(raised.value)
    assert named.name in message and "table ns.t that lakehouse version" in message, message
    assert "Otherwise the file was lost" in message and "later versions can" not in message, message
    conn.close()
