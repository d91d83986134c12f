"""Spark's distributed expiration and verify on the lakehouses of issue 35 (maintenance
E8, E12; iceberg.oldmetadata OM5): tables that delete old metadata after each commit,
``write.metadata.path`` inside the root (one table's, two tables' shared), EXTERNAL
tables whose metadata lies in a directory the lakehouse would otherwise own.

Each scenario is built once; the local and the Spark expiration plan the same files (dry
runs), and then each really runs on its own byte-identical copy (the copies take turns at
the root's path, which the tables' metadata names): the same files are deleted, and every
kept version reads the same rows (or fails the same way) afterwards.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest
from lakehouses import all_files, copy_lakehouse
from pyiceberg.types import IntegerType

import trinitylake_dbapi
from trinitylake_dbapi import maintenance
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.errors import Error
from trinitylake_dbapi.format import paths
from trinitylake_dbapi.iceberg import TrinityLakeCatalog
from trinitylake_dbapi.spark import expire_versions, verify
from trinitylake_dbapi.verify import verify as verify_locally

PATH = "write.metadata.path"
DELETE = "write.metadata.delete-after-commit.enabled"
KEEP = "write.metadata.previous-versions-max"
SCHEMA = pa.schema([("id", pa.int64())])
#: A user's files in a metadata directory: never expiration's (E6, E12).
MINE = ("notes.txt", "notes.avro", "00000-mine.json")
#: "everything" holds the cases of the three others in one lakehouse and checks each
#: case's assertions (each of the others failed alone before spark.maintenance learned
#: E12 and OM5); one Spark expiration instead of four (15-50 s each). Pass another
#: scenario here to look at one case alone.
SCENARIOS = ["everything"]


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())}, schema=SCHEMA)


def build(root: Path, scenario: str) -> None:
    """A lakehouse whose latest versions keep reaching only some of its Iceberg files."""
    catalog = TrinityLakeCatalog("lake", uri=root.as_uri(), create="true")
    catalog.create_namespace("ns")
    every = scenario == "everything"
    tables = {"plain": catalog.create_table("ns.plain", SCHEMA)}
    if scenario in ("deleted metadata", "everything"):
        # OM1: each commit deletes the metadata file its log drops; kept versions name them
        tables["del"] = catalog.create_table("ns.del", SCHEMA, properties={DELETE: "true", KEEP: "1"})
        # the same under a write.metadata.path of its own
        tables["deldir"] = catalog.create_table(
            "ns.deldir", SCHEMA, properties={DELETE: "true", KEEP: "1", PATH: (root / "meta" / "deldir").as_uri()}
        )
    if scenario in ("metadata paths", "everything"):
        shared = (root / "meta" / "shared").as_uri()
        tables["a"] = catalog.create_table("ns.a", SCHEMA, properties={PATH: shared})
        tables["b"] = catalog.create_table("ns.b", SCHEMA, properties={PATH: shared})
        tables["own"] = catalog.create_table("ns.own", SCHEMA, properties={PATH: str(root / "meta" / "own")})
        tables["gone"] = catalog.create_table("ns.gone", SCHEMA, properties={PATH: shared})
    if scenario in ("external", "everything"):
        # E8: the directory of an EXTERNAL table's metadata file is its owner's, even under
        # the lakehouse's own tables/ or a managed table's write.metadata.path
        tables["e"] = catalog.create_table("ns.e", SCHEMA)
        tables["f"] = catalog.create_table("ns.f", SCHEMA, properties={PATH: (root / "tables" / "f-meta").as_uri()})
        tables["g"] = catalog.create_table("ns.g", SCHEMA, properties={PATH: (root / "meta" / "g").as_uri()})
    for step in range(3):
        for table in tables.values():
            table.append(rows(step))
    if "gone" in tables:
        catalog.purge_table("ns.gone")
        del tables["gone"]
    if scenario in ("external", "everything"):
        for name in ("e", "f", "g"):
            catalog.register_table(f"ns.ext_{name}", catalog.load_table(f"ns.{name}").metadata_location)
    for step in range(3, 6):
        for table in tables.values():
            table.append(rows(step))
    if "del" in tables:
        for i in range(3):  # the newest versions are kept: they name files deleted since
            with tables["del"].transaction() as transaction, transaction.update_schema() as update:
                update.add_column(f"c{i}", IntegerType())
            tables["deldir"].append(rows(10 + i))
    for directory in ("shared", "own", "g", "deldir"):
        if (root / "meta" / directory).exists() or every:
            (root / "meta" / directory).mkdir(parents=True, exist_ok=True)
            for name in MINE:
                (root / "meta" / directory / name).write_text("a user's file")
    past = time.time() - 7200
    for directory, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(directory, name), (past, past))


def readable(root: Path, versions: list[int]) -> dict[tuple[int, str], object]:
    """What each version reads of each of its tables: sorted ids, or the error's class."""
    seen: dict[tuple[int, str], object] = {}
    for version in versions:
        with trinitylake_dbapi.connect(root.as_uri(), version=version) as conn:
            cur = conn.cursor()
            cur.execute("SHOW TABLES IN ns")
            for (_, table) in cur.fetchall():
                try:
                    cur.execute(f"SELECT id FROM ns.{table}")
                    seen[(version, table)] = sorted(row[0] for row in cur.fetchall())
                except Error as e:
                    seen[(version, table)] = type(e).__name__
    return seen


def swap(root: Path, other: Path) -> None:
    """Exchange the lakehouse at ``root`` with the copy at ``other``."""
    aside = root.with_name(root.name + "-aside")
    root.rename(aside)
    other.rename(root)
    aside.rename(other)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_spark_expiration_deletes_exactly_what_the_local_one_deletes(spark, tmp_path: Path, scenario: str) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "lake"
    build(root, scenario)
    options = dict(retain_last=5, orphan_grace_millis=0)
    planned = maintenance.expire_versions(LakehouseCatalog(str(root)), older_than_millis=2**62, dry_run=True, **options)
    remote = expire_versions(spark, str(root), older_than=2**62, dry_run=True, **options)
    assert remote.versions == planned.versions and planned.versions
    assert remote.file_list() == planned.files

    twin = tmp_path / "twin"
    copy_lakehouse(str(root), str(twin))
    before = all_files(str(root))
    existing = {paths.parse_root_node_path(f) for f in before} - {None}
    kept = sorted(existing - set(planned.versions))
    done = expire_versions(spark, str(root), older_than=2**62, **options)
    after_spark = all_files(str(root))
    rows_spark = readable(root, kept)
    swap(root, twin)  # the local expiration runs on the copy, at the same path
    local = maintenance.expire_versions(LakehouseCatalog(str(root)), older_than_millis=2**62, **options)
    after_local = all_files(str(root))
    rows_local = readable(root, kept)

    assert done.file_list() == local.files == planned.files
    assert after_spark == after_local == before - set(planned.files)
    assert rows_spark == rows_local
    assert all(isinstance(v, list) for (_, t), v in rows_local.items() if t not in ("del", "deldir"))
    doomed = set(planned.files)
    if scenario in ("deleted metadata", "everything"):  # OM4: kept versions that cannot read it
        broken = {t for (_, t), v in rows_local.items() if v == "MissingFileError"}
        assert broken == {"del", "deldir"}, rows_local
    if scenario in ("metadata paths", "everything"):  # E12: reclaimed there too
        assert any(f.startswith("meta/shared/") for f in doomed) and any(f.startswith("meta/own/") for f in doomed)
    if scenario in ("external", "everything"):  # E8: never an EXTERNAL table's
        for directory in ("tables/f-meta/", "meta/g/"):
            assert not any(f.startswith(directory) for f in doomed)
            assert len([f for f in before if f.startswith(directory) and f.endswith(".metadata.json")]) > 2
    for directory in ("shared", "own", "g", "deldir"):
        for name in MINE:
            assert f"meta/{directory}/{name}" in after_local or f"meta/{directory}/{name}" not in before
    shutil.rmtree(twin)


def found(report) -> list[tuple[str, str, str, str]]:  # noqa: ANN001 - a VerifyReport
    return sorted((p.severity, p.rule, p.path, p.message) for p in report.problems)


def test_spark_verify_reports_what_the_local_verify_reports(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Every version, node and definition file, and with ``data`` every table's Iceberg
    metadata (verify.tables): the same report, a metadata file deleted after a later
    commit a warning (OM5), one lost otherwise an error."""
    root = tmp_path / "lake"
    build(root, "everything")
    remote = verify(spark, str(root))
    here = verify_locally(str(root), all_versions=True)
    assert remote.ok and here.ok, remote.text()
    assert found(remote) == found(here) and remote.orphans == here.orphans

    remote = verify(spark, str(root), data=True)
    here = verify_locally(str(root), all_versions=True, data=True)
    assert found(remote) == found(here), remote.text()
    assert remote.ok, remote.text()
    deleted = [p for p in remote.warnings if "deleted after a later commit" in p.message]
    assert deleted and len(deleted) == len(remote.problems), remote.text()

    # a metadata file no table deletes after its commits, lost: an error of both
    catalog = TrinityLakeCatalog("lake", uri=root.as_uri())
    lost = catalog.load_table("ns.plain").metadata.metadata_log[0].metadata_file
    os.remove(lost.removeprefix("file://"))
    remote = verify(spark, str(root), data=True)
    here = verify_locally(str(root), all_versions=True, data=True)
    assert found(remote) == found(here), remote.text()
    assert not remote.ok and any(lost in p.message and p.severity == "error" for p in remote.problems)
