"""Where a managed table's files may lie, and one canonical form of every location.

Issue 31 item 2: a managed table's metadata, manifest lists, manifests, data and delete
files lie under its location inside the lakehouse root (iceberg.tables M6, catalog P13).
Commits refuse anything else (InvalidLocationError naming the file); readers (SQL and
PyIceberg through this package's catalog) refuse it with CorruptFileError naming the
file, which is what holds against a writer of a shared lakehouse who writes metadata
by hand: those tests write the metadata, manifest lists and manifests themselves and
point the table's definition at them with the catalog API, past every Iceberg check.

Issue 31 item 4: one spelling of each file (storage.locations U1-U4), so that
expiration, verify and the readers see ``file:/x``, ``file:///a/./x``, ``a//x`` and
``/x`` as the one file they are.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.io.pyarrow import parquet_file_to_data_file
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestWriterV2,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.serializers import ToOutputFile
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.update import AddSnapshotUpdate, SetSnapshotRefUpdate, update_table_metadata
from pyiceberg.typedef import Record

import trinitylake_dbapi
import trinitylake_dbapi.catalog.transactions as catalog_module
from trinitylake_dbapi import maintenance
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.errors import CorruptFileError, InvalidLocationError
from trinitylake_dbapi.format.paths import METADATA_LOCATION
from trinitylake_dbapi.iceberg.io import DurableFileIO, file_io_properties
from trinitylake_dbapi.storage.locations import canonical_location, location_within
from trinitylake_dbapi.verify import verify

# ---------------------------------------------------------------------------
# The canonical form (storage U1-U4), by property
# ---------------------------------------------------------------------------

_NAME = st.text(
    alphabet=st.sampled_from("abcXYZ019-_ .%#?:@~=+"), min_size=1, max_size=8
).filter(lambda s: s not in (".", ".."))
_SEGMENTS = st.lists(_NAME, min_size=1, max_size=6)


@st.composite
def spelled(draw: Any, segments: list[str]) -> str:
    """One of the many spellings of the local file ``/`` + ``segments``."""
    parts: list[str] = []
    for segment in segments:
        if draw(st.booleans()):
            parts.append(".")
        if draw(st.booleans()):
            parts += [draw(_NAME), ".."]  # a detour that comes back
        parts.append(segment)
    path = ""
    for part in parts:
        path += draw(st.sampled_from(["/", "//", "///"])) + part
    prefix = draw(st.sampled_from(["", "file:", "file://", "FILE://", "File:"]))
    if prefix in ("file:", "File:") and path.startswith("//"):
        path = "/" + path.lstrip("/")  # "file://x" would name host x
    return prefix + path


@settings(max_examples=300, deadline=None)
@given(data=st.data(), segments=_SEGMENTS)
def test_every_spelling_of_a_local_file_has_one_canonical_form(data: Any, segments: list[str]) -> None:
    expected = "file:///" + "/".join(segments)
    spelling = data.draw(spelled(segments))
    assert canonical_location(spelling) == expected, spelling
    assert canonical_location(expected) == expected
    assert location_within(spelling, "/" + segments[0]) == ("/".join(segments[1:]) or None)


@settings(max_examples=300, deadline=None)
@given(a=_SEGMENTS, b=_SEGMENTS, scheme=st.sampled_from(["", "file://", "s3://", "memory://"]))
def test_different_files_never_share_a_canonical_form(a: list[str], b: list[str], scheme: str) -> None:
    first, second = scheme + "/" + "/".join(a), scheme + "/" + "/".join(b)
    if scheme in ("s3://", "memory://"):
        first, second = first.replace(":///", "://"), second.replace(":///", "://")
    assert (canonical_location(first) == canonical_location(second)) == (a == b)
    # one is within the other exactly when its segments extend the other's
    inside = location_within(second, first) is not None
    assert inside == (len(b) > len(a) and b[: len(a)] == a)


@pytest.mark.parametrize(
    "spelling, canonical",
    [
        ("s3a://bucket/lake/x", "s3://bucket/lake/x"),
        ("S3N://bucket//lake/./x", "s3://bucket/lake/x"),
        ("s3://bucket/lake/t/../../other/x", "s3://bucket/other/x"),
        ("s3://bucket/../other-bucket/x", "s3://other-bucket/x"),
        ("gcs://b/k", "gs://b/k"),
        ("memory:///lake/x", "memory://lake/x"),
        ("/a/../../x", "file:///x"),
        ("file://otherhost/x", "file://otherhost/x"),
        ("file://localhost/a/./x", "file://localhost/a/x"),
        ("/a/b%20c#d?e", "file:///a/b%20c#d?e"),
    ],
)
def test_object_store_and_odd_spellings(spelling: str, canonical: str) -> None:
    assert canonical_location(spelling) == canonical
    assert canonical_location(canonical) == canonical


def test_a_relative_local_path_is_taken_from_the_current_directory(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    assert canonical_location("x/./y") == "file://" + str(tmp_path) + "/x/y"
    assert canonical_location("file:x/y") == "file://" + str(tmp_path) + "/x/y"


def test_within_is_by_segments_after_resolving_dot_dot() -> None:
    assert location_within("/t2/x", "/t") is None
    assert location_within("/t/../x", "/t") is None
    assert location_within("/t", "/t") is None
    assert location_within("file:/t/a/../b", "file:///t/") == "b"
    assert location_within("s3a://b/t/x", "s3://b/t") == "x"
    assert location_within("s3://other/t/x", "s3://b/t") is None
    # PyIceberg and DuckDB open file://localhost/t/x as different files: never local
    assert location_within("file://localhost/t/x", "/t") is None


# ---------------------------------------------------------------------------
# Item 4: expiration keeps a live file whatever its spelling
# ---------------------------------------------------------------------------

SPELLINGS = {
    "hadoop file:/abs": lambda p: "file:" + p,
    "file:/// with ./": lambda p: "file://" + os.path.dirname(p) + "/./" + os.path.basename(p),
    "double slash": lambda p: os.path.dirname(p) + "//" + os.path.basename(p),
    "plain path": lambda p: p,
    "dot dot inside": lambda p: os.path.dirname(p) + "/sub/../" + os.path.basename(p),
    # through a directory that does not exist, under a scheme (a plain path PyIceberg
    # made absolute with os.path.abspath, which resolves ".." as well; a URI it opened
    # as written, which the OS cannot walk): the hostile run's seeds 1, 6 and 8
    "hadoop file: with dot dot through a missing directory": lambda p: "file:" + os.path.dirname(p) + "/missing/../" + os.path.basename(p),
    "file:/// with dot dot through missing directories": lambda p: "file://" + os.path.dirname(p) + "/a/b/../.././" + os.path.basename(p),
}


def _table_dir(conn: Any, name: str) -> str:
    location = conn.iceberg_catalog().load_table(name).metadata.location
    return canonical_location(location)[len("file://"):]


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_expiration_keeps_a_live_file_whatever_its_spelling(tmp_path: Path, spelling: str) -> None:
    root = str(tmp_path / "lake")
    conn = trinitylake_dbapi.connect(root, create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.t (id BIGINT)")
    cur.execute("INSERT INTO default.t VALUES (1)")
    path = _table_dir(conn, "default.t") + "/data/added.parquet"
    # written with field ids, as Spark writes its files (files without them are read
    # through the name mapping, sql.query Q10), and named in the manifest under the spelling
    with_ids = pa.schema([pa.field("id", pa.int64(), metadata={"PARQUET:field_id": "1"})])
    pq.write_table(pa.table({"id": [42]}, schema=with_ids), path)
    table = conn.iceberg_catalog().load_table("default.t")
    data_file = parquet_file_to_data_file(table.io, table.metadata, SPELLINGS[spelling](path))
    with table.transaction() as txn, txn.update_snapshot().fast_append() as append:
        append.append_data_file(data_file)
    cur.execute("INSERT INTO default.t VALUES (2)")
    conn.close()

    done = maintenance.expire_versions(
        LakehouseCatalog(root), retain_last=1, older_than_millis=2**62, orphan_grace_millis=0
    )
    assert done.versions, "something expired"
    assert not [f for f in done.files if f.endswith("added.parquet")]
    assert os.path.exists(path)

    conn = trinitylake_dbapi.connect(root, autocommit=True)
    cur = conn.cursor()
    cur.execute("SELECT count(*) FROM default.t")
    assert cur.fetchone() == (3,)
    ids = conn.iceberg_catalog().load_table("default.t").scan().to_arrow()["id"].to_pylist()
    assert sorted(ids) == [1, 2, 42]
    # copy-on-write DML finds the file by its canonical form too (no duplicated rows)
    cur.execute("DELETE FROM default.t WHERE id = 1")
    assert cur.rowcount == 1
    cur.execute("SELECT count(*) FROM default.t")
    assert cur.fetchone() == (2,)
    conn.close()
    report = verify(root, data=True)
    assert report.ok, str(report)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_spelling_of_a_local_file_opens_that_file(tmp_path: Path, data: Any) -> None:
    """iceberg.io F6: the tables' FileIO reads, writes and deletes the file a spelling's
    canonical form names, also through ``..`` detours whose directories do not exist."""
    segments = [*Path(tmp_path).parts[1:], "d", "f.bin"]
    target = Path("/", *segments)
    target.parent.mkdir(exist_ok=True)
    io = DurableFileIO()
    spelling = data.draw(spelled(segments))
    target.write_bytes(b"the file")
    assert io.new_input(spelling).open().read() == b"the file"
    assert io.new_input(spelling).exists() and len(io.new_input(spelling)) == 8
    io.delete(spelling)
    assert not target.exists()
    with io.new_output(spelling).create() as out:
        out.write(b"written")
    assert target.read_bytes() == b"written"
    io.sync_written()  # F1 fsyncs the file written, not the spelling's missing directories


@pytest.mark.s3
def test_every_spelling_of_an_s3_object_opens_that_object(s3_server: Any) -> None:
    """F6 on S3: ``..`` and ``.`` are resolved (storage U2) before PyArrow is asked, which
    would take them for literal parts of a key; ``s3a`` is ``s3``."""
    bucket = s3_server.create_bucket()
    io = DurableFileIO(file_io_properties(dict(s3_server.storage_options)))
    canonical = f"s3://{bucket}/lake/t/data/f.bin"
    with io.new_output(canonical).create() as out:
        out.write(b"the object")
    spellings = [
        f"s3://{bucket}/lake/t/data/sub/../f.bin",
        f"s3a://{bucket}/lake/./t/x/y/../../data/f.bin",
        f"s3://{bucket}//lake//t/data/./f.bin",
        f"S3N://{bucket}/lake/t/data/a/../f.bin",
    ]
    for spelling in spellings:
        assert io.new_input(spelling).open().read() == b"the object", spelling
    io.delete(spellings[0])
    assert not io.new_input(canonical).exists()
    with io.new_output(spellings[1]).create() as out:
        out.write(b"again")
    assert io.new_input(canonical).open().read() == b"again"


def test_a_table_located_with_dot_dot_through_a_missing_directory(tmp_path: Path) -> None:
    """A table created at ``file:<root>/elsewhere/sub/../odd`` (``sub`` missing): its
    metadata is written at the canonical location and read there by expiration's
    reachability (it raised CorruptFileError "missing"), PyIceberg, SQL and verify."""
    root = str(tmp_path / "lake")
    conn = trinitylake_dbapi.connect(root, create=True, autocommit=True)
    catalog = conn.iceberg_catalog()
    for n, spelling in enumerate(["file:" + root + "/elsewhere/sub/../odd", "file://" + root + "//x/./y/../../odd2"]):
        catalog.create_table(f"default.o{n}", SECRET.schema, location=spelling)
        catalog.load_table(f"default.o{n}").append(pa.table({"id": pa.array([n], pa.int64())}))
        conn.cursor().execute(f"INSERT INTO default.o{n} VALUES ({n + 10})")
    conn.close()
    maintenance.expire_versions(LakehouseCatalog(root), retain_last=1, older_than_millis=2**62, orphan_grace_millis=0)
    conn = trinitylake_dbapi.connect(root, autocommit=True)
    for n in range(2):
        assert sorted(conn.iceberg_catalog().load_table(f"default.o{n}").scan().to_arrow()["id"].to_pylist()) == [n, n + 10]
        cur = conn.cursor()
        cur.execute(f"SELECT id FROM default.o{n} ORDER BY id")
        assert cur.fetchall() == [(n,), (n + 10,)]
    conn.close()
    assert not os.path.exists(root + "/elsewhere/sub") and not os.path.exists(root + "/x")
    report = verify(root, data=True)
    assert report.ok, str(report)


@pytest.mark.s3
def test_expiration_keeps_a_live_s3_file_spelled_with_dot_dot(s3_server: Any) -> None:
    """Item 4 on S3: a data file named ``s3a://b/<table>/data/sub/../f`` (no key under
    ``sub``) is added (PyIceberg reads its footer), kept by expiration (grace 0) and read
    by SQL, PyIceberg and verify."""
    options = dict(s3_server.storage_options)
    root = f"s3://{s3_server.create_bucket()}/lake"
    conn = trinitylake_dbapi.connect(root, create=True, storage_options=options, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.t (id BIGINT)")
    cur.execute("INSERT INTO default.t VALUES (1)")
    table = conn.iceberg_catalog().load_table("default.t")
    path = canonical_location(table.metadata.location) + "/data/added.parquet"
    with_ids = pa.schema([pa.field("id", pa.int64(), metadata={"PARQUET:field_id": "1"})])
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [42]}, schema=with_ids), sink)
    with table.io.new_output(path).create() as out:
        out.write(sink.getvalue().to_pybytes())
    spelled_path = path.replace("s3://", "s3a://").replace("/data/", "/data/sub/../")
    data_file = parquet_file_to_data_file(table.io, table.metadata, spelled_path)
    with table.transaction() as txn, txn.update_snapshot().fast_append() as append:
        append.append_data_file(data_file)
    cur.execute("INSERT INTO default.t VALUES (2)")
    conn.close()
    done = maintenance.expire_versions(
        LakehouseCatalog(root, storage_options=options), retain_last=1, older_than_millis=2**62, orphan_grace_millis=0
    )
    assert done.versions and not [f for f in done.files if f.endswith("added.parquet")]
    conn = trinitylake_dbapi.connect(root, storage_options=options, autocommit=True)
    cur = conn.cursor()
    cur.execute("SELECT id FROM default.t ORDER BY id")
    assert cur.fetchall() == [(1,), (2,), (42,)]
    assert sorted(conn.iceberg_catalog().load_table("default.t").scan().to_arrow()["id"].to_pylist()) == [1, 2, 42]
    conn.close()
    report = verify(root, storage_options=options, data=True)
    assert report.ok, str(report)


#: One Azure container's lake, spelled as adlfs opens it: ``az``, ``abfs`` and ``abfss``
#: name the same store, and ``container@account.dfs.core.windows.net`` the container.
AZURE_SPELLINGS = ("az://{c}/lake", "abfs://{c}/lake", "abfss://{c}@devstoreaccount1.dfs.core.windows.net/lake")


@pytest.mark.parametrize(
    "spelling, canonical",
    [
        ("abfs://c/lake/x", "az://c/lake/x"),
        ("ABFSS://c//lake/./x", "az://c/lake/x"),
        ("abfs://c@acct.dfs.core.windows.net/lake/x", "az://c/lake/x"),
        ("az://c@acct.dfs.core.windows.net/lake/../x", "az://c/x"),
        ("abfss://c@acct.dfs.core.windows.net", "az://c"),
        ("az://c/lake/x", "az://c/lake/x"),
    ],
)
def test_azure_spellings_of_one_container_have_one_canonical_form(spelling: str, canonical: str) -> None:
    """storage U2: ``az``, ``abfs`` and ``abfss`` are one store (adlfs serves all three
    alike), and adlfs opens ``container@<account host>`` as the container (the account
    is the filesystem's)."""
    assert canonical_location(spelling) == canonical
    assert canonical_location(canonical) == canonical
    relative = canonical.removeprefix("az://c").lstrip("/")
    assert location_within(spelling, "abfs://c") == (relative or None)
    assert location_within("az://c2/lake/x", "abfs://c/lake") is None
    assert location_within("abfs://c/lake2/x", "az://c/lake") is None


@pytest.mark.azure
@pytest.mark.parametrize("created, used", [(0, 1), (1, 0), (0, 2)])
def test_one_azure_lake_spelled_two_ways(azurite_server: Any, created: int, used: int) -> None:
    """A lake created as ``az://c/lake`` (or ``abfs://``) is the same lake under the other
    spelling: its tables are read (SQL, PyIceberg), written, expired (grace 0: nothing
    live deleted) and verified through it, and a table's files written under either
    spelling lie within the root of both (confinement, canonical FileIO)."""
    options = dict(azurite_server.storage_options)
    container = azurite_server.create_container()
    first, second = (AZURE_SPELLINGS[i].format(c=container) for i in (created, used))
    conn = trinitylake_dbapi.connect(first, create=True, storage_options=options, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.t (id BIGINT)")
    cur.execute("INSERT INTO default.t VALUES (1)")
    conn.close()
    conn = trinitylake_dbapi.connect(second, storage_options=options, autocommit=True)
    cur = conn.cursor()
    cur.execute("INSERT INTO default.t VALUES (2)")
    cur.execute("CREATE TABLE default.u AS SELECT id * 10 AS id FROM default.t")
    cur.execute("SELECT id FROM default.t ORDER BY id")
    assert cur.fetchall() == [(1,), (2,)]
    assert sorted(conn.iceberg_catalog().load_table("default.t").scan().to_arrow()["id"].to_pylist()) == [1, 2]
    conn.close()
    for root in (second, first):
        done = maintenance.expire_versions(
            LakehouseCatalog(root, storage_options=options), retain_last=1, older_than_millis=2**62,
            orphan_grace_millis=0,
        )  # fmt: skip
        assert done.versions or root == first
        for spelled in (first, second):
            report = verify(spelled, storage_options=options, data=True)
            assert report.ok, str(report)
            conn = trinitylake_dbapi.connect(spelled, storage_options=options, autocommit=True)
            cur = conn.cursor()
            cur.execute("SELECT (SELECT sum(id) FROM default.t), (SELECT sum(id) FROM default.u)")
            assert cur.fetchall() == [(3, 30)]
            conn.close()


# ---------------------------------------------------------------------------
# Item 2: commits refuse files outside a managed table's location
# ---------------------------------------------------------------------------

SECRET = pa.table({"id": pa.array([666], pa.int64())})


def _new_table(tmp_path: Path) -> tuple[Any, str, str]:
    """(connection, its root, the table's directory) with one row in default.t."""
    root = str(tmp_path / "lake")
    conn = trinitylake_dbapi.connect(root, create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.t (id BIGINT)")
    cur.execute("INSERT INTO default.t VALUES (1)")
    return conn, root, _table_dir(conn, "default.t")


def _outside(tmp_path: Path) -> str:
    outside = tmp_path / "host" / "secret.parquet"
    outside.parent.mkdir(exist_ok=True)
    pq.write_table(SECRET, outside)
    return str(outside)


OUTSIDE_SPELLINGS = {
    "absolute path": lambda table, outside: outside,
    "file: URI": lambda table, outside: "file:" + outside,
    "file:/// URI": lambda table, outside: "file://" + outside,
    "dot dot from the table": lambda table, outside: table + "/data/" + os.path.relpath(outside, table + "/data"),
    "dot dot from the root": lambda table, outside: table + "/../../../../host/secret.parquet",
    "file://localhost URI": lambda table, outside: "file://localhost" + outside,
    "sibling table prefix": lambda table, outside: table + "-other/data/x.parquet",
}


@pytest.mark.parametrize("spelling", sorted(set(OUTSIDE_SPELLINGS) - {"file://localhost URI"}))
def test_add_files_outside_the_table_is_refused(tmp_path: Path, spelling: str) -> None:
    conn, root, table_dir = _new_table(tmp_path)
    outside = _outside(tmp_path)
    location = OUTSIDE_SPELLINGS[spelling](table_dir, outside)
    if spelling == "sibling table prefix":
        os.makedirs(os.path.dirname(location), exist_ok=True)
        pq.write_table(SECRET, location)
    version = conn.version if hasattr(conn, "version") else None
    with pytest.raises(InvalidLocationError) as e:
        conn.iceberg_catalog().load_table("default.t").add_files([location])
    assert location in str(e.value) and "default.t" in str(e.value)
    cur = conn.cursor()
    cur.execute("SELECT id FROM default.t")
    assert cur.fetchall() == [(1,)]
    if version is not None:
        assert conn.version == version
    conn.close()


def test_a_file_under_the_table_spelled_with_dot_dot_is_accepted(tmp_path: Path) -> None:
    conn, _, table_dir = _new_table(tmp_path)
    os.makedirs(table_dir + "/data/sub")
    pq.write_table(pa.table({"id": pa.array([5], pa.int64())}), table_dir + "/data/x.parquet")
    conn.iceberg_catalog().load_table("default.t").add_files([table_dir + "/data/sub/../x.parquet"])
    ids = conn.iceberg_catalog().load_table("default.t").scan().to_arrow()["id"].to_pylist()
    assert sorted(ids) == [1, 5]
    cur = conn.cursor()  # SQL reads the file (no field ids) by name too: sql.query Q10
    cur.execute("SELECT id FROM default.t ORDER BY id")
    assert cur.fetchall() == [(1,), (5,)]


def test_a_managed_table_outside_the_root_is_refused(tmp_path: Path) -> None:
    conn, _, _ = _new_table(tmp_path)
    catalog = conn.iceberg_catalog()
    with pytest.raises(InvalidLocationError, match="outside the lakehouse root"):
        catalog.create_table("default.w", SECRET.schema, location=str(tmp_path / "elsewhere"))
    with pytest.raises(InvalidLocationError, match="outside the lakehouse root"):
        conn.iceberg_catalog(warehouse=str(tmp_path / "warehouse")).create_table("default.w", SECRET.schema)
    assert not catalog.table_exists("default.w")
    # under the root, a table may lie anywhere its location says
    catalog.create_table("default.w", SECRET.schema, location=str(tmp_path / "lake" / "mine" / "w"))
    catalog.load_table("default.w").append(pa.table({"id": pa.array([3], pa.int64())}))
    assert catalog.load_table("default.w").scan().to_arrow().num_rows == 1


@pytest.mark.parametrize("when", ["at create", "set later"])
def test_write_metadata_path_is_honoured_inside_the_root_and_refused_outside(tmp_path: Path, when: str) -> None:
    """PyIceberg's ``write.metadata.path`` (test_table_writes_metadata_to_custom_location
    and test_table_metadata_writes_reflect_latest_path of its behaviour suite): under the
    table's location, or anywhere else inside the lakehouse root (the suite's
    ``{warehouse}/custom/path``), metadata files and manifests go there (tables M6).
    Outside the root it is refused: InvalidLocationError naming the path, nothing
    published, nothing written there (tests/iceberg/test_metadata_path.py: more)."""
    root = tmp_path / "lake"
    warehouse = root / "warehouse"
    catalog = trinitylake_dbapi.connect(str(root), create=True, autocommit=True).iceberg_catalog(
        warehouse=f"file://{warehouse}")
    catalog.create_namespace("ns")
    key = "write.metadata.path"

    def table_with(name: str, path_under: Any) -> Any:
        if when == "at create":
            location = f"file://{warehouse}/own/{name}"
            return catalog.create_table(f"ns.{name}", SECRET.schema, location=location,
                                        properties={key: path_under(location)})
        table = catalog.create_table(f"ns.{name}", SECRET.schema)
        with table.transaction() as transaction:
            transaction.set_properties({key: path_under(table.location())})
        return catalog.load_table(f"ns.{name}")

    table = table_with("inside", lambda location: location + "/custom/meta")
    custom = table.location() + "/custom/meta"
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    assert table.metadata_location.startswith(custom + "/")
    assert table.location_provider().new_metadata_location("m.json") == custom + "/m.json"
    assert all(m.manifest_path.startswith(custom + "/") for m in table.current_snapshot().manifests(table.io))
    assert catalog.load_table("ns.inside").scan().to_arrow().num_rows == 1

    custom = f"file://{warehouse}/custom/path"  # inside the root and the warehouse, not the table
    table = table_with("custom", lambda location: custom)
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    assert table.metadata_location.startswith(custom + "/")
    assert all(m.manifest_path.startswith(custom + "/") for m in table.current_snapshot().manifests(table.io))
    assert catalog.load_table("ns.custom").scan().to_arrow().num_rows == 1

    elsewhere = f"file://{tmp_path}/custom/path"  # outside the root
    before = catalog.lakehouse.latest_version()
    with pytest.raises(InvalidLocationError, match=f"write.metadata.path '{elsewhere}' cannot hold"):
        table_with("outside", lambda location: elsewhere)
    if when == "at create":
        assert not catalog.table_exists("ns.outside")
        assert catalog.lakehouse.latest_version() == before
    else:  # the create was its own version; the property's commit published nothing
        assert key not in catalog.load_table("ns.outside").properties
        assert catalog.lakehouse.latest_version() == before + 1
    assert not (tmp_path / "custom").exists()


def test_the_catalog_api_refuses_a_managed_table_s_metadata_outside_the_root(tmp_path: Path) -> None:
    """Catalog rule K8: the definition of a managed table cannot name metadata outside."""
    conn, root, table_dir = _new_table(tmp_path)
    conn.close()
    outside = str(tmp_path / "host" / "m.metadata.json")
    before = set(LakehouseCatalog(root).storage.list())
    for pointer in (outside, "file:" + outside, table_dir + "/../../../../host/m.metadata.json"):
        txn = LakehouseCatalog(root).begin()
        info = txn.describe_table("default", "t")
        with pytest.raises(InvalidLocationError, match="outside the lakehouse root"):
            txn.set_table_format("default", "t", columns=info.columns, format_properties={METADATA_LOCATION: pointer})
        with pytest.raises(InvalidLocationError, match="outside the lakehouse root"):
            txn.create_table("default", "u", info.columns, format_properties={METADATA_LOCATION: pointer})
        txn.rollback()
    assert set(LakehouseCatalog(root).storage.list()) == before
    txn = LakehouseCatalog(root).begin()  # an EXTERNAL table may name it
    txn.create_table("default", "e", info.columns, table_type="EXTERNAL", format_properties={METADATA_LOCATION: outside})
    txn.rollback()


def test_an_external_table_keeps_its_files_where_they_are(tmp_path: Path) -> None:
    """register_table makes an EXTERNAL table, which may name files anywhere (docs)."""
    other = trinitylake_dbapi.connect(str(tmp_path / "other"), create=True, autocommit=True)
    other.cursor().execute("CREATE TABLE default.src (id BIGINT)")
    other.cursor().execute("INSERT INTO default.src VALUES (7)")
    metadata_location = other.iceberg_catalog().load_table("default.src").metadata_location
    conn, _, _ = _new_table(tmp_path)
    conn.iceberg_catalog().register_table("default.ext", metadata_location)
    cur = conn.cursor()
    cur.execute("SELECT id FROM default.ext")
    assert cur.fetchall() == [(7,)]
    assert conn.iceberg_catalog().load_table("default.ext").scan().to_arrow().num_rows == 1


# ---------------------------------------------------------------------------
# Item 2: readers refuse hand-written metadata naming files outside
# ---------------------------------------------------------------------------


class _DeleteManifestWriter(ManifestWriterV2):
    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class Forger:
    """Writes Iceberg files by hand and points a table's definition at them with the
    catalog API: what any writer of a shared lakehouse can do, past every check of
    this package's Iceberg catalog."""

    def __init__(self, root: str, storage_options: dict | None = None) -> None:
        self.root = root
        self.storage_options = storage_options
        self.io = DurableFileIO(file_io_properties(storage_options))
        conn = trinitylake_dbapi.connect(root, storage_options=storage_options, autocommit=True)
        self.table = conn.iceberg_catalog().load_table("default.t")
        conn.close()
        self.metadata = self.table.metadata
        self.snapshot_id = random.randrange(1, 2**62)

    def data_manifest(self, location: str, file_path: str) -> Any:
        with write_manifest(2, self.metadata.spec(), self.metadata.schema(), self.io.new_output(location),
                            self.snapshot_id, "deflate") as writer:  # fmt: skip
            writer.add(self._entry(DataFileContent.DATA, file_path))
        return writer.to_manifest_file()

    def delete_manifest(self, location: str, file_path: str) -> Any:
        with _DeleteManifestWriter(self.metadata.spec(), self.metadata.schema(), self.io.new_output(location),
                                   self.snapshot_id, "deflate") as writer:  # fmt: skip
            writer.add(self._entry(DataFileContent.POSITION_DELETES, file_path))
        return writer.to_manifest_file()

    def _entry(self, content: DataFileContent, file_path: str) -> ManifestEntry:
        data_file = DataFile.from_args(
            content=content, file_path=file_path, file_format=FileFormat.PARQUET, partition=Record(),
            record_count=1, file_size_in_bytes=100,
        )  # fmt: skip
        data_file.spec_id = self.metadata.default_spec_id
        return ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=self.snapshot_id, data_file=data_file)

    def publish(self, manifests: list[Any], list_location: str, metadata_location: str | None = None,
                table_location: str | None = None) -> str:  # fmt: skip
        """A new snapshot of the current manifests plus ``manifests``, its manifest list
        at ``list_location``, its metadata written at ``metadata_location`` (default:
        the table's metadata directory) and named by the table's definition."""
        current = self.metadata.current_snapshot()
        existing = current.manifests(self.io) if current is not None else []
        sequence_number = self.metadata.next_sequence_number()
        with write_manifest_list(2, self.io.new_output(list_location), self.snapshot_id,
                                 current.snapshot_id if current else None, sequence_number, "deflate") as w:  # fmt: skip
            w.add_manifests([*manifests, *existing])
        snapshot = Snapshot(
            snapshot_id=self.snapshot_id, parent_snapshot_id=current.snapshot_id if current else None,
            sequence_number=sequence_number, timestamp_ms=int(time.time() * 1000), manifest_list=list_location,
            summary=Summary(Operation.APPEND), schema_id=self.metadata.current_schema_id,
        )  # fmt: skip
        updated = update_table_metadata(self.metadata, (
            AddSnapshotUpdate(snapshot=snapshot),
            SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=self.snapshot_id),
        ))  # fmt: skip
        if table_location is not None:
            updated = updated.model_copy(update={"location": table_location})
        where = metadata_location or f"{self.metadata.location}/metadata/99999-{self.snapshot_id}.metadata.json"
        ToOutputFile.table_metadata(updated, self.io.new_output(where))
        lakehouse = LakehouseCatalog(self.root, storage_options=self.storage_options)
        txn = lakehouse.begin()
        info = txn.describe_table("default", "t")
        with pytest.MonkeyPatch.context() as patch:  # a writer without catalog rule K8
            patch.setattr(catalog_module, "location_within", lambda *_: "anywhere")
            txn.set_table_format("default", "t", columns=info.columns, format_properties={METADATA_LOCATION: where})
        txn.commit()
        return where


def _assert_refused(root: str, named: str, storage_options: dict | None = None, *, rewrite: bool = True) -> None:
    """SQL and PyIceberg (through the connection's catalog) both refuse the table with
    CorruptFileError naming ``named``; the lakehouse's other tables still read; verify
    reports the file."""
    conn = trinitylake_dbapi.connect(root, storage_options=storage_options, autocommit=True)
    cur = conn.cursor()
    for sql in ("SELECT * FROM default.t", "SELECT count(*) FROM default.t", "DELETE FROM default.t WHERE id = 1"):
        with pytest.raises(CorruptFileError) as e:
            cur.execute(sql)
            cur.fetchall()
        assert e.value.path == named, (sql, str(e.value))
    with pytest.raises(CorruptFileError) as e:
        conn.iceberg_catalog().load_table("default.t").scan().to_arrow()
    assert e.value.path == named
    if rewrite:  # PyIceberg's own delete scans the files it must rewrite (not a forged delete file's)
        with pytest.raises(CorruptFileError):
            conn.iceberg_catalog().load_table("default.t").delete("id = 1")
    cur.execute("SELECT count(*) FROM default.ok")
    assert cur.fetchone() == (1,)
    conn.close()
    report = verify(root, data=True, storage_options=storage_options)
    assert not report.ok
    assert any(
        "outside" in p.message and (named in p.message or canonical_location(named) in p.message)
        for p in report.problems
    ), str(report)


def _forgeable(tmp_path: Path) -> tuple[str, str, str]:
    """(root, table directory, a Parquet file of secret rows outside the lakehouse)."""
    conn, root, table_dir = _new_table(tmp_path)
    conn.cursor().execute("CREATE TABLE default.ok (id BIGINT)")
    conn.cursor().execute("INSERT INTO default.ok VALUES (1)")
    conn.close()
    outside = tmp_path / "host" / "secret.parquet"
    outside.parent.mkdir(exist_ok=True)
    pq.write_table(pa.table({"id": pa.array([666], pa.int64())}).cast(
        pa.schema([pa.field("id", pa.int64(), metadata={"PARQUET:field_id": "1"})])), outside)  # fmt: skip
    return root, table_dir, str(outside)


@pytest.mark.parametrize("spelling", sorted(set(OUTSIDE_SPELLINGS) - {"sibling table prefix"}))
def test_a_forged_data_file_outside_the_table_is_refused_by_readers(tmp_path: Path, spelling: str) -> None:
    root, table_dir, outside = _forgeable(tmp_path)
    forger = Forger(root)
    named = OUTSIDE_SPELLINGS[spelling](table_dir, outside)
    manifest = forger.data_manifest(table_dir + "/metadata/forged-m0.avro", named)
    forger.publish([manifest], table_dir + "/metadata/snap-forged.avro")
    _assert_refused(root, named)


def test_a_forged_localhost_uri_is_refused_even_inside_the_table(tmp_path: Path) -> None:
    """DuckDB would read file://localhost/<table>/x as /<table>/x, PyIceberg as the
    relative path localhost/<table>/x: no one file, so never a managed table's (U1)."""
    root, table_dir, _ = _forgeable(tmp_path)
    forger = Forger(root)
    named = "file://localhost" + table_dir + "/data/x.parquet"
    manifest = forger.data_manifest(table_dir + "/metadata/forged-m0.avro", named)
    forger.publish([manifest], table_dir + "/metadata/snap-forged.avro")
    _assert_refused(root, named)


def test_a_forged_manifest_list_or_manifest_outside_is_refused(tmp_path: Path) -> None:
    root, table_dir, outside = _forgeable(tmp_path)
    host = os.path.dirname(outside)
    forger = Forger(root)
    manifest = forger.data_manifest(host + "/m-outside.avro", table_dir + "/data/none.parquet")
    forger.publish([manifest], table_dir + "/metadata/snap-forged.avro")
    _assert_refused(root, host + "/m-outside.avro")

    forger = Forger(root)  # on top of the forged state: the list is checked before its manifests
    list_outside = host + "/snap-outside.avro"
    manifest = forger.data_manifest(table_dir + "/metadata/forged-m1.avro", table_dir + "/data/none.parquet")
    forger.publish([manifest], list_outside)
    _assert_refused(root, list_outside)


@pytest.mark.parametrize("where", ["_forged", "0101/0110", "_tl_sync", ".hidden"])
def test_a_forged_manifest_in_the_reserved_area_is_refused(tmp_path: Path, where: str) -> None:
    """M6 (issue 35): a managed table's metadata files may lie anywhere inside the root
    (an earlier write.metadata.path), but never in the lakehouse's reserved area (paths
    FP2) nor outside the root."""
    root, table_dir, _ = _forgeable(tmp_path)
    reserved = root.rstrip("/") + "/" + where
    os.makedirs(reserved.removeprefix("file://"), exist_ok=True)
    forger = Forger(root)
    manifest = forger.data_manifest(reserved + "/m-forged.avro", table_dir + "/data/none.parquet")
    forger.publish([manifest], table_dir + "/metadata/snap-forged.avro")
    _assert_refused(root, reserved + "/m-forged.avro")


def test_a_manifest_under_an_earlier_metadata_path_inside_the_root_is_read(tmp_path: Path) -> None:
    """M6: write.metadata.path changed from one directory inside the root to another:
    the manifests written under the first still read, and verify is clean."""
    root = tmp_path / "lake"
    catalog = trinitylake_dbapi.connect(str(root), create=True, autocommit=True).iceberg_catalog()
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", SECRET.schema, properties={"write.metadata.path": f"file://{root}/first"})
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    table.transaction().set_properties({"write.metadata.path": f"file://{root}/second"}).commit_transaction()
    table = catalog.load_table("ns.t")
    table.append(pa.table({"id": pa.array([2], pa.int64())}))
    paths_now = [m.manifest_path for m in table.current_snapshot().manifests(table.io)]
    assert any("/first/" in p for p in paths_now) and any("/second/" in p for p in paths_now)
    assert sorted(catalog.load_table("ns.t").scan().to_arrow()["id"].to_pylist()) == [1, 2]
    with trinitylake_dbapi.connect(str(root)) as conn:
        cur = conn.cursor()
        cur.execute("SELECT count(*) FROM ns.t")
        assert cur.fetchall() == [(2,)]
    assert verify(str(root), data=True, all_versions=True).ok


def test_a_forged_delete_file_outside_is_refused(tmp_path: Path) -> None:
    root, table_dir, outside = _forgeable(tmp_path)
    deletes = os.path.dirname(outside) + "/deletes.parquet"
    pq.write_table(pa.table({"file_path": ["x"], "pos": pa.array([0], pa.int64())}), deletes)
    forger = Forger(root)
    manifest = forger.delete_manifest(table_dir + "/metadata/forged-d0.avro", deletes)
    forger.publish([manifest], table_dir + "/metadata/snap-forged.avro")
    _assert_refused(root, deletes, rewrite=False)


def test_forged_metadata_outside_the_root_or_a_table_located_outside_is_refused(tmp_path: Path) -> None:
    root, table_dir, outside = _forgeable(tmp_path)
    host = os.path.dirname(outside)
    forger = Forger(root)
    manifest = forger.data_manifest(table_dir + "/metadata/forged-m0.avro", table_dir + "/data/none.parquet")
    where = forger.publish([manifest], table_dir + "/metadata/snap-forged.avro", metadata_location=host + "/m.json")
    _assert_refused(root, where)
    # DDL neither reads it nor publishes it again (catalog K8 refuses the new definition)
    with trinitylake_dbapi.connect(root, autocommit=True) as conn, pytest.raises(
        (CorruptFileError, InvalidLocationError), match=where
    ):
        conn.cursor().execute("ALTER TABLE default.t ADD COLUMN c STRING")

    forger = Forger.__new__(Forger)  # the table's state is unreadable now: start from its metadata
    forger.root, forger.storage_options = root, None
    forger.io = DurableFileIO(file_io_properties(None))
    from pyiceberg.serializers import FromInputFile

    first = sorted(Path(table_dir, "metadata").glob("00001-*.metadata.json"))[0]
    forger.metadata = FromInputFile.table_metadata(forger.io.new_input(str(first)))
    forger.snapshot_id = random.randrange(1, 2**62)
    manifest = forger.data_manifest(table_dir + "/metadata/forged-m1.avro", outside)
    where = forger.publish([manifest], table_dir + "/metadata/snap-forged-2.avro", table_location=host)
    _assert_refused(root, where)


@pytest.mark.s3
def test_a_forged_data_file_in_another_bucket_is_refused_on_s3(s3_server: Any) -> None:
    options = dict(s3_server.storage_options)
    root = f"s3://{s3_server.create_bucket()}/lake"
    other = s3_server.create_bucket()
    io = DurableFileIO(file_io_properties(options))
    secret = f"s3://{other}/secret.parquet"
    sink = pa.BufferOutputStream()
    pq.write_table(SECRET, sink)
    with io.new_output(secret).create() as out:
        out.write(sink.getvalue().to_pybytes())
    conn = trinitylake_dbapi.connect(root, create=True, storage_options=options, autocommit=True)
    cur = conn.cursor()
    for sql in ("CREATE TABLE default.t (id BIGINT)", "INSERT INTO default.t VALUES (1)",
                "CREATE TABLE default.ok (id BIGINT)", "INSERT INTO default.ok VALUES (1)"):  # fmt: skip
        cur.execute(sql)
    table_location = conn.iceberg_catalog().load_table("default.t").metadata.location
    for spelled_secret in (secret, secret.replace("s3://", "s3a://")):
        with pytest.raises(InvalidLocationError, match=spelled_secret):
            conn.iceberg_catalog().load_table("default.t").add_files([spelled_secret])
    conn.close()
    # (PyArrow reads "..": a literal part of an S3 key; canonically it leaves the table)
    for n, spelled_secret in enumerate(
        [secret, secret.replace("s3://", "s3a://"), f"{table_location}/../../../{other}/secret.parquet"]
    ):
        forger = Forger(root, options)
        manifest = forger.data_manifest(f"{table_location}/metadata/forged-m{n}.avro", spelled_secret)
        forger.publish([manifest], f"{table_location}/metadata/snap-forged-{n}.avro")
        _assert_refused(root, spelled_secret, options)
