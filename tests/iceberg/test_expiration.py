"""Expiration reclaims the Iceberg files no kept version reaches (maintenance E8)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.expressions import EqualTo

from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog
from trinitylake_dbapi import maintenance

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string())])


def batch(*ids: int, tag: str = "x") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "tag": [tag] * len(ids)}, schema=SCHEMA)


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in (root / "tables").rglob("*") if p.is_file()}


def reached_by_pyiceberg(catalog: TrinityLakeCatalog, version: int, root: Path) -> set[str]:
    """The oracle: what PyIceberg's own inspection says a version's tables use."""
    old = catalog.at_version(version)
    out = set()
    for namespace, name in old.list_tables("default"):
        table = old.load_table((namespace, name))
        if not table.metadata_location:
            continue
        out.add(table.metadata_location)
        out |= {s.manifest_list for s in table.metadata.snapshots}
        if table.metadata.snapshots:
            out |= set(table.inspect.all_manifests()["path"].to_pylist())
            out |= set(table.inspect.all_files()["file_path"].to_pylist())
    prefix = root.as_uri() + "/"
    return {p[len(prefix):] for p in out}


def test_expiration_deletes_exactly_what_no_kept_version_reaches(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    catalog = TrinityLakeCatalog("lake", uri=str(root), create="true")
    a = catalog.create_table("default.a", SCHEMA)
    b = catalog.create_table("default.b", SCHEMA)
    dropped = catalog.create_table("default.gone", SCHEMA)
    dropped.append(batch(7))
    expected_rows: dict[int, tuple[list, list]] = {}
    rows_a: list[int] = []
    rows_b: list[int] = []
    for step in range(10):
        if step % 4 == 0:
            a.overwrite(batch(step))
            rows_a = [step]
        elif step % 4 == 1:
            b.append(batch(step, step + 100))
            rows_b += [step, step + 100]
        elif step % 4 == 2:
            b.delete(EqualTo("id", step - 1))
            rows_b = [r for r in rows_b if r != step - 1]
        else:
            a.append(batch(step))
            rows_a.append(step)
        expected_rows[catalog.lakehouse.latest_version()] = (sorted(rows_a), sorted(rows_b))
    catalog.drop_table("default.gone")
    expected_rows[catalog.lakehouse.latest_version()] = (sorted(rows_a), sorted(rows_b))

    before = files_under(root)
    lakehouse = LakehouseCatalog(str(root))
    dry = maintenance.expire_versions(lakehouse, retain_last=3, older_than_millis=2**62, dry_run=True, orphan_grace_millis=0)
    assert files_under(root) == before  # a dry run deletes nothing
    kept = [v for v in expected_rows if v not in dry.versions and v <= lakehouse.latest_version()]
    live = set().union(*(reached_by_pyiceberg(catalog, v, root) for v in kept))
    iceberg_dry = {f for f in dry.files if f.startswith("tables/")}
    assert iceberg_dry == before - live  # exactly what no kept version reaches
    assert any("gone-" in f for f in iceberg_dry)  # the dropped table's files go too

    done = maintenance.expire_versions(lakehouse, retain_last=3, older_than_millis=2**62, orphan_grace_millis=0)
    assert done.files == dry.files and done.versions == dry.versions
    assert files_under(root) == live
    for version in kept:
        old = TrinityLakeCatalog("lake", uri=str(root)).at_version(version)
        got_a = sorted(old.load_table("default.a").scan().to_arrow()["id"].to_pylist())
        got_b = sorted(old.load_table("default.b").scan().to_arrow()["id"].to_pylist())
        assert (got_a, got_b) == expected_rows[version]


def test_young_files_and_external_tables_are_never_deleted(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    catalog = TrinityLakeCatalog("lake", uri=str(root), create="true")
    table = catalog.create_table("default.t", SCHEMA)
    table.append(batch(1))
    table.overwrite(batch(2))
    stray = root / "tables" / "default" / "in-flight.parquet"
    stray.write_bytes(b"written by a commit in flight")
    lakehouse = LakehouseCatalog(str(root))
    result = maintenance.expire_versions(lakehouse, retain_last=1, older_than_millis=2**62)  # default grace: 1 h
    assert not [f for f in result.files if f.startswith("tables/")]
    assert stray.exists()
    # a registered (EXTERNAL) table's files stay even when nothing reaches them any more
    other = TrinityLakeCatalog("other", uri=str(tmp_path / "other"), create="true")
    src = other.create_table("default.src", SCHEMA)
    src.append(batch(5))
    registered = catalog.register_table("default.ext", other.load_table("default.src").metadata_location)
    assert registered.scan().to_arrow().num_rows == 1
    catalog.drop_table("default.ext")
    maintenance.expire_versions(lakehouse, retain_last=1, older_than_millis=2**62, orphan_grace_millis=0)
    assert other.load_table("default.src").scan().to_arrow().num_rows == 1


def test_a_missing_metadata_file_stops_iceberg_deletions(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    catalog = TrinityLakeCatalog("lake", uri=str(root), create="true")
    table = catalog.create_table("default.t", SCHEMA)
    table.append(batch(1))
    location = catalog.load_table("default.t").metadata_location
    os.remove(location[len("file://"):])
    with pytest.raises(Exception, match="metadata"):
        maintenance.expire_versions(LakehouseCatalog(str(root)), retain_last=1, older_than_millis=2**62, orphan_grace_millis=0)


def test_iceberg_snapshot_expiration_keeps_older_lakehouse_versions_readable(tmp_path: Path) -> None:
    """PyIceberg's per-table snapshot expiration changes the metadata only; the kept
    lakehouse versions still name metadata files that reach their data (SPEC 8)."""
    root = tmp_path / "lake"
    catalog = TrinityLakeCatalog("lake", uri=str(root), create="true")
    table = catalog.create_table("default.t", SCHEMA)
    table.append(batch(1))
    first = catalog.lakehouse.latest_version()
    table.overwrite(batch(2))
    table = catalog.load_table("default.t")
    old_snapshots = [s.snapshot_id for s in table.metadata.snapshots if s.snapshot_id != table.metadata.current_snapshot_id]
    table.maintenance.expire_snapshots().by_ids(old_snapshots).commit()
    assert len(catalog.load_table("default.t").metadata.snapshots) == 1
    maintenance.expire_versions(LakehouseCatalog(str(root)), retain_last=10, older_than_millis=2**62, orphan_grace_millis=0)
    assert catalog.at_version(first).load_table("default.t").scan().to_arrow()["id"].to_pylist() == [1]
    assert catalog.load_table("default.t").scan().to_arrow()["id"].to_pylist() == [2]


def test_files_of_sql_rewrites_and_rolled_back_inserts_are_reclaimed(tmp_path: Path) -> None:
    """SQL's writes leave what expiration must reclaim: data files an UPDATE or DELETE
    replaced, and the data files and manifests of an INSERT that was rolled back."""
    import trinitylake_dbapi

    root = tmp_path / "lake"
    conn = trinitylake_dbapi.connect(str(root), create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (id BIGINT, tag STRING)")
    for b in range(3):
        cur.executemany("INSERT INTO t VALUES (?, ?)", [(b * 10 + i, "x") for i in range(10)])
    cur.execute("UPDATE t SET tag = 'y' WHERE id = 15")
    cur.execute("DELETE FROM t WHERE id >= 20")
    conn.autocommit = False
    cur.execute("INSERT INTO t VALUES (99, 'rolled back')")
    conn.rollback()
    conn.close()
    before = files_under(root)
    lakehouse = LakehouseCatalog(str(root))
    maintenance.expire_versions(lakehouse, retain_last=1, older_than_millis=2**62, orphan_grace_millis=0)
    kept = [v.version for v in lakehouse.iter_versions(lakehouse.latest_version(), 0)]
    catalog = TrinityLakeCatalog("lake", uri=str(root))
    live = set().union(*(reached_by_pyiceberg(catalog, v, root) for v in kept))
    assert files_under(root) == live and live < before
    conn = trinitylake_dbapi.connect(str(root))
    cur = conn.cursor()
    cur.execute("SELECT count(*), count(*) FILTER (WHERE tag = 'y'), max(id) FROM t")
    assert cur.fetchall() == [(20, 1, 19)]
    conn.close()
