"""``write.metadata.path`` anywhere inside the lakehouse root (iceberg.tables M6, paths
FP2, maintenance E12; issue 35): PyIceberg writes a table's metadata files there; never
outside the root or in the lakehouse's reserved area; expiration reclaims them exactly
when no kept version of any table reaches them; verify follows them."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

import trinitylake_dbapi
from trinitylake_dbapi import maintenance
from trinitylake_dbapi.errors import InvalidLocationError, StorageError
from trinitylake_dbapi.iceberg import TrinityLakeCatalog
from trinitylake_dbapi.verify import verify

KEY = "write.metadata.path"
SCHEMA = pa.schema([("id", pa.int64())])


def rows(n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64())})


def lake(tmp_path: Path) -> tuple[TrinityLakeCatalog, Path]:
    root = tmp_path / "lake"
    catalog = TrinityLakeCatalog("c", uri=root.as_uri(), create="true", warehouse=(root / "warehouse").as_uri())
    catalog.create_namespace("ns")
    return catalog, root


def names(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()} if directory.exists() else set()


@pytest.mark.parametrize("when", ["at create", "set later"])
@pytest.mark.parametrize("spelling", ["file URI", "file: URI", "absolute path", "dot inside"])
def test_a_metadata_path_inside_the_root_is_honoured(tmp_path: Path, when: str, spelling: str) -> None:
    catalog, root = lake(tmp_path)
    custom = root / "warehouse" / "custom" / "path"
    given = {"file URI": custom.as_uri(), "file: URI": "file:" + str(custom), "absolute path": str(custom),
             "dot inside": f"{root}/warehouse/./x/../custom/path"}[spelling]  # fmt: skip
    if when == "at create":
        table = catalog.create_table("ns.t", SCHEMA, properties={KEY: given})
    else:
        table = catalog.create_table("ns.t", SCHEMA)
        table.transaction().set_properties({KEY: given}).commit_transaction()
    table.append(rows(3))
    written = names(custom)
    assert any(n.endswith(".metadata.json") for n in written)
    assert any(n.startswith("snap-") for n in written) and any("-m0" in n for n in written)
    assert not any(n.endswith(".parquet") for n in written)  # data stays under the table
    assert catalog.load_table("ns.t").scan().to_arrow().num_rows == 3
    with trinitylake_dbapi.connect(root.as_uri()) as conn:
        cur = conn.cursor()
        cur.execute("SELECT count(*) FROM ns.t")
        assert cur.fetchall() == [(3,)]
    report = verify(catalog.lakehouse, data=True, all_versions=True)
    assert report.ok, report.text()


@pytest.mark.parametrize("where", ["outside the root", "dot dot out of the root", "other scheme", "the root",
                                   "reserved root-level name", "node prefix directory", "sync directory",
                                   "hidden directory"])
@pytest.mark.parametrize("when", ["at create", "set later"])
def test_a_metadata_path_outside_the_root_or_in_its_reserved_area_is_refused(
    tmp_path: Path, where: str, when: str
) -> None:
    catalog, root = lake(tmp_path)
    outside = tmp_path / "host"
    given = {
        "outside the root": outside.as_uri(),
        "dot dot out of the root": f"{root.as_uri()}/warehouse/../../host",
        "other scheme": "s3://bucket/lake/custom",
        "the root": root.as_uri(),
        "reserved root-level name": f"{root.as_uri()}/_custom",
        "node prefix directory": f"{root.as_uri()}/0110/custom",
        "sync directory": f"{root.as_uri()}/_tl_sync/x",
        "hidden directory": f"{root.as_uri()}/.meta",
    }[where]
    before = catalog.lakehouse.latest_version()
    with pytest.raises(InvalidLocationError, match=f"write.metadata.path '{given}' cannot hold"):
        if when == "at create":
            catalog.create_table("ns.t", SCHEMA, properties={KEY: given})
        else:
            table = catalog.create_table("ns.t", SCHEMA)
            before += 1
            table.transaction().set_properties({KEY: given}).commit_transaction()
    assert catalog.lakehouse.latest_version() == before
    assert not outside.exists()
    assert {p.name for p in root.iterdir()} <= {"warehouse", "_latest_hint.txt"} | {
        p.name for p in root.iterdir() if p.name.startswith("_") and not p.name.startswith("_custom")
        or len(p.name) == 4 and set(p.name) <= {"0", "1"} and p.name != "0110" or p.name == "0110" and
        not (p / "custom").exists()
    }


def test_a_metadata_path_through_a_symlink_is_never_followed(tmp_path: Path) -> None:
    """A directory of the write.metadata.path replaced by a link to a directory outside
    the root (a writer of the lakehouse's disk): no commit publishes through it and no
    reader reads through it (tables M7)."""
    catalog, root = lake(tmp_path)
    outside = tmp_path / "host"
    outside.mkdir()
    (root / "warehouse").mkdir(exist_ok=True)
    os.symlink(outside, root / "warehouse" / "linked")
    before = catalog.lakehouse.latest_version()
    with pytest.raises(StorageError, match="symbolic link inside the lakehouse"):
        catalog.create_table("ns.t", SCHEMA, properties={KEY: f"{root.as_uri()}/warehouse/linked/meta"})
    assert catalog.lakehouse.latest_version() == before and not catalog.table_exists("ns.t")
    assert list(outside.iterdir()) == []

    # set later, on a table with data: the commit is refused the same way
    table = catalog.create_table("ns.t", SCHEMA)
    table.append(rows(1))
    before = catalog.lakehouse.latest_version()
    with pytest.raises(StorageError, match="symbolic link inside the lakehouse"):
        table.transaction().set_properties({KEY: f"{root.as_uri()}/warehouse/linked/meta"}).commit_transaction()
    assert catalog.lakehouse.latest_version() == before
    assert list(outside.iterdir()) == []
    assert catalog.load_table("ns.t").scan().to_arrow().num_rows == 1


def expire_all_but_latest(catalog: TrinityLakeCatalog) -> maintenance.ExpireResult:
    return maintenance.expire_versions(catalog.lakehouse, retain_last=1, older_than_millis=int(time.time() * 1000) + 1000,
                                       orphan_grace_millis=0)  # fmt: skip


def test_expiration_reclaims_a_shared_metadata_path_exactly_by_reachability(tmp_path: Path) -> None:
    """E12: two tables share one write.metadata.path; expiration deletes the metadata
    files no kept version of either reaches, never the other table's live ones, never a
    user's file there; once an EXTERNAL table's metadata lies there, nothing there."""
    catalog, root = lake(tmp_path)
    shared = root / "warehouse" / "custom" / "path"
    a = catalog.create_table("ns.a", SCHEMA, properties={KEY: shared.as_uri()})
    b = catalog.create_table("ns.b", SCHEMA, properties={KEY: shared.as_uri()})
    for i in range(3):
        a.append(rows(i + 1))
        b.append(rows(i + 1))
    (shared / "notes.txt").write_text("mine")
    (shared / "notes.avro").write_text("a user's file with an Avro name")
    (shared / "00000-mine.json").write_text("{}")

    def live(name: str) -> set[str]:
        table = catalog.load_table(name)
        found = {Path(table.metadata_location).name, Path(table.current_snapshot().manifest_list).name}
        return found | {Path(m.manifest_path).name for m in table.current_snapshot().manifests(table.io)}

    mine = {"notes.txt", "notes.avro", "00000-mine.json"}
    before = names(shared)
    result = expire_all_but_latest(catalog)
    after = names(shared)
    assert result.versions
    gone = before - after
    assert gone and not gone & mine
    assert all(n.endswith((".metadata.json", ".avro")) for n in gone)
    assert live("ns.a") | live("ns.b") <= after
    assert catalog.load_table("ns.a").scan().to_arrow().num_rows == 6
    assert catalog.load_table("ns.b").scan().to_arrow().num_rows == 6
    report = verify(catalog.lakehouse, data=True, all_versions=True)
    assert report.ok, report.text()

    # a is purged: once no kept version names it, its files in the shared directory go
    of_a = live("ns.a")
    catalog.purge_table("ns.a")
    for _ in range(3):  # the newest 3 versions are always kept (minimum_versions_to_keep)
        b.append(rows(1))
    expire_all_but_latest(catalog)
    left = names(shared)
    assert not of_a & left
    assert live("ns.b") | mine <= left
    assert catalog.load_table("ns.b").scan().to_arrow().num_rows == 9
    assert verify(catalog.lakehouse, data=True, all_versions=True).ok

    # an EXTERNAL table's metadata in the directory: it is its owner's, nothing there goes
    registered = catalog.register_table("ns.ext", catalog.load_table("ns.b").metadata_location)
    for _ in range(3):
        b.append(rows(1))
    held = names(shared)
    expire_all_but_latest(catalog)
    assert names(shared) == held
    assert catalog.load_table("ns.ext").scan().to_arrow().num_rows == 9
    assert catalog.load_table("ns.b").scan().to_arrow().num_rows == 12
    assert Path(registered.metadata_location).name in names(shared)


def test_delete_after_commit_in_a_metadata_path(tmp_path: Path) -> None:
    """iceberg.oldmetadata OM3: metadata files under the write.metadata.path are the
    table's too, deleted after the commit that drops them from its log."""
    catalog, root = lake(tmp_path)
    custom = root / "warehouse" / "custom"
    table = catalog.create_table("ns.t", SCHEMA, properties={
        KEY: custom.as_uri(), "write.metadata.delete-after-commit.enabled": "true",
        "write.metadata.previous-versions-max": "1"})  # fmt: skip
    for i in range(4):
        table.append(rows(1))
    assert len([n for n in names(custom) if n.endswith(".metadata.json")]) == 2
    assert catalog.load_table("ns.t").scan().to_arrow().num_rows == 4
