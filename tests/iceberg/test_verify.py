"""verify --data checks the tables' Iceberg metadata and files (verify SPEC 8)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog
from trinitylake_dbapi.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def lake_with_data(root: Path) -> TrinityLakeCatalog:
    catalog = TrinityLakeCatalog("lake", uri=str(root), create="true")
    table = catalog.create_table("default.t", SCHEMA)
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]}))
    with table.update_schema() as update:
        update.rename_column("name", "label")
    return catalog


def test_a_lakehouse_with_data_is_clean(tmp_path: Path) -> None:
    lake_with_data(tmp_path / "lake")
    report = verify(str(tmp_path / "lake"), data=True, all_versions=True)
    assert report.ok, report.text()
    run = subprocess.run(
        [sys.executable, "-m", "trinitylake_dbapi.cli", "verify", str(tmp_path / "lake"), "--data"],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_missing_data_file_is_reported_with_data_only(tmp_path: Path) -> None:
    catalog = lake_with_data(tmp_path / "lake")
    [data_file] = catalog.load_table("default.t").inspect.files()["file_path"].to_pylist()
    os.remove(data_file[len("file://"):])
    assert verify(str(tmp_path / "lake")).ok  # the catalog alone is intact
    report = verify(str(tmp_path / "lake"), data=True)
    assert not report.ok
    assert any(p.rule == "missing" and data_file in p.message for p in report.errors), report.text()


def test_a_definition_that_does_not_mirror_its_metadata_is_reported(tmp_path: Path) -> None:
    catalog = lake_with_data(tmp_path / "lake")
    # A writer that changed the Iceberg schema without the definition (not this library):
    table = catalog.load_table("default.t")
    info = catalog.lakehouse.begin().describe_table("default", "t")
    txn = catalog.lakehouse.begin()
    txn.set_table_format(
        "default", "t", columns=[c for c in info.columns if c.name != "label"],
        format_properties=info.format_properties,
    )
    txn.commit()
    report = verify(str(tmp_path / "lake"), data=True)
    assert any(p.rule == "SPEC 8" and "label" in p.message and table.metadata_location in p.message for p in report.errors), report.text()


def test_a_missing_metadata_file_is_reported(tmp_path: Path) -> None:
    catalog = lake_with_data(tmp_path / "lake")
    location = catalog.load_table("default.t").metadata_location
    os.remove(location[len("file://"):])
    report = verify(str(tmp_path / "lake"), data=True)
    assert any(p.rule == "missing" and location in p.message for p in report.errors), report.text()
