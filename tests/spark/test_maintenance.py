"""Distributed maintenance gives the local results (issue 7, acceptance 4).

One lakehouse of more than 500 versions and 2,000 files (small nodes: every few commits
flush and split nodes), plus orphans, is copied so that local and Spark code each work
on an identical copy; their results are compared file by file.
"""

from __future__ import annotations

import os
import time

import pytest

from lakehouses import add_orphans, all_files, build_history, cols, copy_lakehouse, file_bytes
from trinitylake_dbapi import verify as local_verify
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.errors import (
    InvalidLocationError,
    MissingFileError,
    ObjectExistsError,
)
from trinitylake_dbapi.format import paths
from trinitylake_dbapi.maintenance import export_snapshot_files, plan_expiration
from trinitylake_dbapi.spark import expire_versions, export_snapshot, verify
from trinitylake_dbapi.storage import Storage
from trinitylake_dbapi.tree import check_tree
from trinitylake_dbapi import maintenance

COMMITS = 700
EXPORTED_VERSION = 150


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> dict:  # type: ignore[no-untyped-def]
    base = tmp_path_factory.mktemp("big")
    location = str(base / "source")
    started = time.monotonic()
    lake = build_history(location, COMMITS)
    lake.export_snapshot("keep", EXPORTED_VERSION)
    orphans = add_orphans(location, old=5, fresh=3)
    built = time.monotonic() - started
    latest = lake.latest_version()
    files = all_files(location)
    print(f"\nbuilt {latest + 1} versions, {len(files)} files in {built:.1f} s")
    assert latest + 1 >= 500
    assert len(files) >= 2000
    return {"base": base, "location": location, "latest": latest, "orphans": orphans, "files": files}


def assert_clean(location: str, spark=None) -> None:  # type: ignore[no-untyped-def]
    """Opens; every version passes tree.check_tree and the local verifier; and the
    Spark verifier, when given a session."""
    lake = LakehouseCatalog(location)
    for info in lake.versions():
        snapshot = lake.lakehouse.snapshot(info.version)
        assert check_tree(snapshot.tree.store, snapshot.root, snapshot.tree.config, str(info.version)) == []
    local = local_verify.verify(location, all_versions=True)
    assert local.ok, local.text()
    if spark is not None:
        remote = verify(spark, location)
        assert remote.ok, remote.text()
        assert remote.versions == local.versions and remote.orphans == local.orphans


def test_spark_and_local_expiration_delete_the_same_files(spark, big) -> None:  # type: ignore[no-untyped-def]
    local_copy = copy_lakehouse(big["location"], str(big["base"] / "expire-local"))
    spark_copy = copy_lakehouse(big["location"], str(big["base"] / "expire-spark"))
    lake = LakehouseCatalog(local_copy)
    cutoff = lake.lakehouse.snapshot(big["latest"] - 150).created_at_millis

    started = time.monotonic()
    result = maintenance.expire_versions(lake, older_than_millis=cutoff)
    local_seconds = time.monotonic() - started
    started = time.monotonic()
    descriptions: list[str] = []
    done = expire_versions(spark, spark_copy, older_than=cutoff, progress=descriptions.append)
    spark_seconds = time.monotonic() - started

    assert done.versions == result.versions and done.file_list() == result.files
    assert done.file_count == len(result.files)
    assert EXPORTED_VERSION in done.kept and EXPORTED_VERSION not in done.versions
    assert len(result.versions) > 300 and len(result.files) > 1000
    deleted = big["files"] - all_files(local_copy)
    assert deleted == set(result.files)
    assert all_files(spark_copy) == all_files(local_copy)
    assert set(big["orphans"]["old"]) <= deleted  # E4
    assert not (set(big["orphans"]["fresh"]) | set(big["orphans"]["foreign"])) & deleted  # E4, E6
    print(f"\nexpired {len(result.versions)} versions, {len(result.files)} files: local "
          f"{local_seconds:.1f} s, Spark {spark_seconds:.1f} s in {len(descriptions)} steps")
    for copy in (local_copy, spark_copy):
        for orphan in big["orphans"]["fresh"]:  # not yet expired: remove for a clean verify
            os.unlink(os.path.join(copy, orphan))
    # Byte for byte the same files, so one check covers both copies (the Spark
    # verifier's agreement: test_verify_reports_what_the_local_verifier_reports_and_names_its_jobs).
    assert file_bytes(spark_copy) == file_bytes(local_copy)
    assert_clean(local_copy)
    assert LakehouseCatalog(spark_copy).begin(version="keep").list_tables() == \
        LakehouseCatalog(big["location"]).begin(version=EXPORTED_VERSION).list_tables()


def test_dry_run_plans_what_the_local_plan_says_and_deletes_nothing(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    location = str(tmp_path / "lake")
    lake = build_history(location, 80)
    lake.export_snapshot("pin", 20)
    orphans = add_orphans(location, old=2, fresh=2)
    before = all_files(location)
    cutoff = lake.lakehouse.snapshot(60).created_at_millis
    for retain_last, older_than in ((None, cutoff), (70, cutoff), (None, None)):
        plan = plan_expiration(lake.lakehouse, retain_last, older_than, int(time.time() * 1000))
        dry = expire_versions(spark, location, retain_last=retain_last, older_than=older_than, dry_run=True)
        assert dry.dry_run and dry.versions == plan.versions and dry.file_list() == plan.files
        assert dry.kept == sorted(plan.kept)
        assert set(orphans["old"]) <= set(dry.file_list())
        assert not set(orphans["fresh"]) & set(dry.file_list())
    assert all_files(location) == before


def test_spark_and_local_export_produce_the_same_files(spark, big) -> None:  # type: ignore[no-untyped-def]
    source = copy_lakehouse(big["location"], str(big["base"] / "export-source"))
    local_target = str(big["base"] / "export-local")
    spark_target = str(big["base"] / "export-spark")
    version = big["latest"] - 40
    lake = LakehouseCatalog(source)
    copied = export_snapshot_files(lake.lakehouse, Storage(local_target), version)
    result = export_snapshot(spark, source, spark_target, name="copy", version=version)

    assert result.version == version and result.file_count == len(copied)
    print(f"\nexported version {version}: {len(copied)} files, local and Spark byte-identical")
    assert file_bytes(spark_target) == file_bytes(local_target)
    assert all_files(local_target) == set(copied) | {paths.LATEST_HINT_PATH}
    assert lake.lakehouse.snapshot().settings.exported_snapshots["copy"] == paths.root_node_path(version)
    assert result.recorded_in_version == lake.latest_version()
    expected = lake.begin(version=version).list_tables()
    for target in (local_target, spark_target):
        exported = LakehouseCatalog(target)
        assert exported.latest_version() == version
        assert exported.begin().list_tables() == expected
    assert_clean(local_target)  # spark_target holds the same bytes (asserted above)


def test_export_errors(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    location = str(tmp_path / "lake")
    lake = LakehouseCatalog(location, create=True)
    txn = lake.begin()
    txn.create_namespace("n")
    txn.commit()
    target = str(tmp_path / "target")
    export_snapshot(spark, location, target, name="one")
    with pytest.raises(ObjectExistsError, match="already holds a lakehouse"):
        export_snapshot(spark, location, target)
    with pytest.raises(ObjectExistsError, match="'one' already exists"):
        export_snapshot(spark, location, str(tmp_path / "other"), name="one")
    with pytest.raises(InvalidLocationError, match="overlaps"):
        export_snapshot(spark, location, location + "/inside")
    with pytest.raises(InvalidLocationError, match="memory filesystem"):
        export_snapshot(spark, "memory://x/lake", target)
    minimal = export_snapshot(spark, location, None, name="pinned", full=False)
    assert minimal.file_count == 0 and minimal.target is None
    assert lake.lakehouse.snapshot_named("pinned").version == minimal.version


def test_expiration_stops_before_deleting_when_a_file_is_missing(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    location = str(tmp_path / "lake")
    lake = build_history(location, 40)
    snapshot = lake.lakehouse.snapshot()
    victim = next(p for p in snapshot.tree.node_paths())
    os.unlink(os.path.join(location, victim))
    before = all_files(location)
    with pytest.raises(MissingFileError) as local_error:  # a fresh catalog: no cached nodes
        maintenance.expire_versions(LakehouseCatalog(location), older_than_millis=snapshot.created_at_millis)
    with pytest.raises(MissingFileError) as spark_error:
        expire_versions(spark, location, older_than=snapshot.created_at_millis)
    assert spark_error.value.path == local_error.value.path == victim
    assert all_files(location) == before


def test_verify_reports_what_the_local_verifier_reports_and_names_its_jobs(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    location = str(tmp_path / "lake")
    lake = build_history(location, 60)
    assert_clean(location, spark)
    snapshot = lake.lakehouse.snapshot()
    node = next(p for p in snapshot.tree.node_paths())
    definition = next(value for _, value in snapshot.tree.scan())
    with open(os.path.join(location, node), "r+b") as f:
        f.truncate(20)  # a corrupt node
    os.unlink(os.path.join(location, definition))  # a missing definition
    os.unlink(os.path.join(location, paths.root_node_path(30)))  # a hole in the history
    orphans = add_orphans(location, old=1, fresh=1)  # format files and killed writers' temp files
    sc = spark.sparkContext
    sc.setJobGroup("mine", "my description")
    seen: list[tuple[str, str | None, str | None]] = []

    def progress(description: str) -> None:
        seen.append((description, sc.getLocalProperty("spark.job.description"),
                     sc.getLocalProperty("spark.jobGroup.id")))

    remote = verify(spark, location, progress=progress)
    # Every job is named for the Spark UI, in a group of its own; the caller's are restored.
    assert len(seen) >= 4
    for description, current, group in seen:
        assert description.startswith("trinitylake verify [") and current == description
        assert group is not None and group.startswith("trinitylake-verify-")
    assert sc.getLocalProperty("spark.jobGroup.id") == "mine"
    assert sc.getLocalProperty("spark.job.description") == "my description"
    sc.setLocalProperty("spark.jobGroup.id", None)
    sc.setLocalProperty("spark.job.description", None)
    local = local_verify.verify(location, all_versions=True)
    assert not remote.ok and not local.ok
    remote_errors = {(p.path, p.rule) for p in remote.errors}
    local_errors = {(p.path, p.rule) for p in local.errors}
    assert remote_errors == local_errors
    assert {p.path for p in remote.warnings} == {p.path for p in local.warnings}
    assert remote.orphans == local.orphans
    assert set(orphans["old"] + orphans["fresh"]) <= set(local.orphans)
    assert not set(orphans["foreign"]) & set(local.orphans)


def test_small_lakehouse_with_tables_of_every_shape(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    location = str(tmp_path / "lake")
    lake = LakehouseCatalog(location, create=True)
    txn = lake.begin()
    txn.create_namespace("n")
    txn.create_table("n", "t", cols("a bigint", "b map<varchar, list<decimal(5,2)>>"))
    txn.commit()
    lake.rollback_to(0)
    assert_clean(location, spark)
    result = expire_versions(spark, location, retain_last=1, older_than=int(time.time() * 1000) + 10_000,
                             orphan_grace_millis=0)
    assert result.versions == [] and result.kept == [0, 1, 2]  # minimum_versions_to_keep is 3
    assert result.file_count == 0
