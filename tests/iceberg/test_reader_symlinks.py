"""Readers never follow a symbolic link under a local lakehouse's root (iceberg.tables M7).

Someone with write access to the lakehouse's disk replaces one of a managed table's
files (or a directory on its path) with a symbolic link, here to a Parquet file or a
copy outside the root: without M7, PyIceberg scans (and the metadata and manifests SQL
plans from) follow it and read the host's file. Every case is refused, by SQL SELECT and
by a PyIceberg scan through ``Connection.iceberg_catalog()``, with CorruptFileError
naming the file; the lakehouse's other tables still read. Links that stay inside the
root are refused too (as writes refuse every link, storage LF1).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import trinitylake_dbapi
from trinitylake_dbapi.errors import CorruptFileError
from trinitylake_dbapi.storage.local import first_symlink, symlink_within
from trinitylake_dbapi.storage.locations import canonical_location

from .test_locations import Forger

#: Rows of the file outside the root: never seen by a reader.
SECRET_ID = 987_654_321_987  # long enough never to occur in a uuid of a message


def _local(location: str) -> str:
    return canonical_location(location)[len("file://"):]


class Lake:
    """A lakehouse with default.t (rows 1 and 2, one data file) and default.ok (row 1),
    and a directory ``host`` outside it holding a Parquet file of secret rows written
    with Iceberg field ids (so PyIceberg would read it as the table's)."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = str(tmp_path / "lake")
        self.host = tmp_path / "host"
        self.host.mkdir()
        with trinitylake_dbapi.connect(self.root, create=True, autocommit=True) as conn:
            cur = conn.cursor()
            cur.execute("CREATE TABLE default.t (id BIGINT)")
            cur.execute("INSERT INTO default.t VALUES (1), (2)")
            cur.execute("CREATE TABLE default.ok (id BIGINT)")
            cur.execute("INSERT INTO default.ok VALUES (1)")
            table = conn.iceberg_catalog().load_table("default.t")
            self.table_dir = _local(table.metadata.location)
            self.metadata = _local(table.metadata_location)
            snapshot = table.metadata.current_snapshot()
            self.manifest_list = _local(snapshot.manifest_list)
            self.manifests = [_local(m.manifest_path) for m in snapshot.manifests(table.io)]
            self.data = [_local(t.file.file_path) for t in table.scan().plan_files()]
        assert len(self.data) == 1 and len(self.manifests) == 1
        self.secret = str(self.host / "secret.parquet")
        schema = pa.schema([pa.field("id", pa.int64(), metadata={"PARQUET:field_id": "1"})])
        pq.write_table(pa.table({"id": pa.array([SECRET_ID], pa.int64())}, schema=schema), self.secret)

    def replace_with_link(self, path: str, target: str) -> None:
        """What a writer of the disk does: ``path`` becomes a link to ``target``."""
        os.unlink(path)
        os.symlink(target, path)

    def copy_outside(self, path: str) -> str:
        """A copy of ``path`` in the host directory (same bytes: only the link is wrong)."""
        copy = str(self.host / ("copy-" + os.path.basename(path)))
        shutil.copyfile(path, copy)
        return copy


def _assert_refused(lake: Lake, named: str) -> None:
    """SQL and a PyIceberg scan both refuse default.t with CorruptFileError naming
    ``named`` (and saying it is a link); default.ok still reads; no secret row shows."""
    with trinitylake_dbapi.connect(lake.root, autocommit=True) as conn:
        cur = conn.cursor()
        for sql in ("SELECT * FROM default.t", "SELECT count(*) FROM default.t", "SELECT id FROM default.t WHERE id > 0"):
            with pytest.raises(CorruptFileError) as e:
                cur.execute(sql)
                cur.fetchall()
            assert _local(e.value.path) == named, (sql, str(e.value))
            assert "symbolic link" in str(e.value) and str(SECRET_ID) not in str(e.value)
        with pytest.raises(CorruptFileError) as e:
            conn.iceberg_catalog().load_table("default.t").scan().to_arrow()
        assert _local(e.value.path) == named, str(e.value)
        cur.execute("SELECT id FROM default.ok")
        assert cur.fetchall() == [(1,)]
        assert conn.iceberg_catalog().load_table("default.ok").scan().to_arrow().num_rows == 1


def test_an_untouched_lake_reads(tmp_path: Path) -> None:
    """The check refuses nothing that is not a link (the baseline of every case)."""
    lake = Lake(tmp_path)
    with trinitylake_dbapi.connect(lake.root, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("SELECT id FROM default.t ORDER BY id")
        assert cur.fetchall() == [(1,), (2,)]
        assert sorted(conn.iceberg_catalog().load_table("default.t").scan().to_arrow()["id"].to_pylist()) == [1, 2]


def test_a_data_file_linked_outside_is_refused(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.replace_with_link(lake.data[0], lake.secret)
    _assert_refused(lake, lake.data[0])


def test_a_linked_directory_in_the_middle_of_the_path_is_refused(tmp_path: Path) -> None:
    """The table's data directory moved outside and linked back: every file in it is
    the same, only reached through a link."""
    lake = Lake(tmp_path)
    data_dir = os.path.dirname(lake.data[0])
    moved = str(lake.host / "data")
    shutil.move(data_dir, moved)
    pq.write_table(pq.read_table(lake.secret), os.path.join(moved, os.path.basename(lake.data[0])))
    os.symlink(moved, data_dir)
    _assert_refused(lake, lake.data[0])


def test_a_manifest_linked_outside_is_refused(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.replace_with_link(lake.manifests[0], lake.copy_outside(lake.manifests[0]))
    _assert_refused(lake, lake.manifests[0])


def test_a_manifest_list_linked_outside_is_refused(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.replace_with_link(lake.manifest_list, lake.copy_outside(lake.manifest_list))
    _assert_refused(lake, lake.manifest_list)


def test_a_metadata_file_linked_outside_is_refused(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.replace_with_link(lake.metadata, lake.copy_outside(lake.metadata))
    _assert_refused(lake, lake.metadata)


def test_a_delete_file_linked_outside_is_refused(tmp_path: Path) -> None:
    """A position delete file (written by hand, as Forger does) whose name under the
    table is a link to a file outside."""
    lake = Lake(tmp_path)
    outside = str(lake.host / "deletes.parquet")
    pq.write_table(pa.table({"file_path": [lake.data[0]], "pos": pa.array([0], pa.int64())}), outside)
    named = lake.table_dir + "/data/deletes.parquet"
    os.symlink(outside, named)
    forger = Forger(lake.root)
    manifest = forger.delete_manifest(lake.table_dir + "/metadata/forged-d0.avro", named)
    forger.publish([manifest], lake.table_dir + "/metadata/snap-forged.avro")
    _assert_refused(lake, named)


LINKS_INSIDE: dict[str, Callable[[Lake], tuple[str, str]]] = {
    # (the file named by the table, where the link leads: inside the root)
    "data file to a copy under the root": lambda lake: (lake.data[0], lake.root + "/copy.parquet"),
    "manifest to a copy beside it": lambda lake: (lake.manifests[0], lake.manifests[0] + ".copy"),
    "metadata file, relative link": lambda lake: (lake.metadata, "./" + os.path.basename(lake.metadata) + ".copy"),
}


@pytest.mark.parametrize("case", sorted(LINKS_INSIDE))
def test_a_link_that_stays_inside_the_root_is_refused_too(tmp_path: Path, case: str) -> None:
    """Simplest rule, the one writes keep (storage LF1): no link under the root is
    followed, wherever it leads."""
    lake = Lake(tmp_path)
    named, target = LINKS_INSIDE[case](lake)
    real_target = os.path.join(os.path.dirname(named), target) if not os.path.isabs(target) else target
    shutil.copyfile(named, real_target)
    lake.replace_with_link(named, target)
    _assert_refused(lake, named)


def test_a_dot_dot_after_a_link_is_walked_as_written(tmp_path: Path) -> None:
    """``<table>/data/sub/../x.parquet`` is ``<table>/data/x.parquet`` lexically (what
    DuckDB is given), but PyIceberg opens it as written, through ``sub``: a link ``sub``
    -> ``<host>/a/b`` makes it ``<host>/a/x.parquet``. Both spellings are walked."""
    lake = Lake(tmp_path)
    (lake.host / "a" / "b").mkdir(parents=True)
    name = os.path.basename(lake.data[0])
    pq.write_table(pq.read_table(lake.secret), str(lake.host / "a" / name))
    os.symlink(str(lake.host / "a" / "b"), lake.table_dir + "/data/sub")
    named = lake.table_dir + "/data/sub/../" + name
    assert symlink_within(named, lake.root) == "file://" + lake.table_dir + "/data/sub"
    forger = Forger(lake.root)
    manifest = forger.data_manifest(lake.table_dir + "/metadata/forged-m0.avro", named)
    forger.publish([manifest], lake.table_dir + "/metadata/snap-forged.avro")
    with trinitylake_dbapi.connect(lake.root, autocommit=True) as conn:
        with pytest.raises(CorruptFileError, match="symbolic link") as e:
            conn.iceberg_catalog().load_table("default.t").scan().to_arrow()
        assert e.value.path == named
        with pytest.raises(CorruptFileError, match="symbolic link"):
            conn.cursor().execute("SELECT * FROM default.t").fetchall()


def test_the_walk(tmp_path: Path) -> None:
    """storage.local.first_symlink: each component below the base, the file included;
    the base itself may be a link (the user chose it); a missing component ends it."""
    real = tmp_path / "real"
    (real / "a" / "b").mkdir(parents=True)
    (real / "a" / "b" / "f").write_bytes(b"x")
    base = tmp_path / "base"
    base.symlink_to(real)
    assert first_symlink(str(base), str(base / "a" / "b" / "f")) is None
    assert first_symlink(str(base), str(base / "a" / "missing" / "f")) is None
    (real / "a" / "l").symlink_to(real / "a" / "b")
    assert first_symlink(str(base), str(base / "a" / "l" / "f")) == str(base / "a" / "l")
    (real / "a" / "b" / "g").symlink_to(real / "a" / "b" / "f")
    assert first_symlink(str(base), str(base / "a" / "b" / "g")) == str(base / "a" / "b" / "g")
    assert first_symlink(str(base), str(base / "a" / "b" / "g"), include_file=False) is None
    checked: set[str] = set()
    assert first_symlink(str(base), str(base / "a" / "b" / "f"), checked=checked) is None
    assert checked == {str(base / "a"), str(base / "a" / "b")}
    # object stores and locations elsewhere are not this check's business
    assert symlink_within("s3://bucket/x", "s3://bucket") is None
    assert symlink_within(str(tmp_path / "elsewhere"), "file://" + str(base)) is None
    assert symlink_within("file:" + str(base / "a" / "l" / "f"), str(base)) == "file://" + str(base / "a" / "l")

