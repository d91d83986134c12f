"""One record per storage scheme (storage.schemes SC1-SC3): every I/O stack derives from it,
and the options given to ``connect()`` reach the Iceberg FileIO too (issue 33 item 5)."""

from __future__ import annotations

import pytest

import trinitylake_dbapi
from s3_server import ACCESS_KEY, REGION, SECRET_KEY, S3Server
from trinitylake_dbapi.iceberg.locations import file_io_properties, storage_options_from_properties
from trinitylake_dbapi.storage import BACKENDS, SCHEMES, Storage, scheme_of
from trinitylake_dbapi.storage.schemes import GENERIC, scheme_of_location


def _round_trip(conn: trinitylake_dbapi.Connection) -> list[tuple]:
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.t (id BIGINT, name VARCHAR)")
    cur.execute("INSERT INTO default.t VALUES (1, 'a'), (2, 'b')")
    cur.execute("SELECT id, name FROM default.t ORDER BY id")
    return cur.fetchall()


@pytest.mark.s3
@pytest.mark.parametrize(
    "shape",
    [
        # s3fs takes the endpoint at the top level too; PyIceberg's property mapping
        # knew only client_kwargs, so the FileIO wrote the Iceberg files to AWS instead
        "top-level endpoint_url",
        # an option PyArrow's S3 file system cannot take: the Iceberg files go through
        # s3fs with the same options (SC2)
        "an option only s3fs knows",
    ],
)
def test_connect_options_reach_the_iceberg_files(s3_server: S3Server, shape: str) -> None:
    bucket = s3_server.create_bucket()
    options: dict = {"key": ACCESS_KEY, "secret": SECRET_KEY, "skip_instance_cache": True}
    if shape == "top-level endpoint_url":
        options.update(endpoint_url=s3_server.endpoint_url, client_kwargs={"region_name": REGION})
    else:
        options.update(
            client_kwargs={"endpoint_url": s3_server.endpoint_url, "region_name": REGION},
            config_kwargs={"connect_timeout": 30},
        )
    with s3_server.wire.recording() as sent:
        conn = trinitylake_dbapi.connect(f"s3://{bucket}/lake", create=True, autocommit=True, storage_options=options)
        try:
            assert _round_trip(conn) == [(1, "a"), (2, "b")]
        finally:
            conn.close()
    written = [r.key for r in sent.requests if r.kind in ("PUT", "POST") and r.bucket == bucket]
    assert any(key.endswith(".parquet") for key in written), "the data file went to the moto server"
    assert any(key.endswith(".metadata.json") for key in written)


def test_every_scheme_has_one_row_and_the_backends_table_derives_from_it() -> None:
    names = [name for row in SCHEMES for name in row.names]
    assert len(names) == len(set(names)), "a scheme name in two rows"
    assert BACKENDS == {name: row.backend for row in SCHEMES for name in row.names}
    for row in SCHEMES:
        for name in row.names:
            assert scheme_of(name) is row and scheme_of(name.upper()) is row
    assert scheme_of("ftp") is GENERIC
    assert scheme_of_location("/data/lake") is scheme_of("file")
    assert scheme_of_location("file:/data/lake") is scheme_of("file")
    assert scheme_of_location("s3a://b/x") is scheme_of("s3")


@pytest.mark.parametrize("location", ["memory://x/lake", "/tmp/lake"])
def test_storage_knows_its_row_and_what_duckdb_registers(location: str) -> None:
    storage = Storage(location)
    assert storage.scheme is scheme_of(storage.protocol)
    # DuckDB reads local files itself; anything else through the lakehouse's filesystem
    # (memory MM2: a copy of it on the same store, whose info of a file is a lookup)
    duck = storage.duckdb_filesystem
    if storage.protocol == "file":
        assert duck is None
    else:
        assert duck.store is storage.fs.store and duck.protocol == storage.fs.protocol
        assert isinstance(duck, type(storage.fs))


@pytest.mark.parametrize(
    "options",
    [
        {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": "http://h:1", "region_name": "r"}},
        {"endpoint_url": "http://h:1", "token": "t", "anon": False},
        {"key": "k", "config_kwargs": {"retries": {"max_attempts": 2}}, "skip_instance_cache": True},
    ],
)
def test_file_io_properties_carry_the_options_whole(options: dict) -> None:
    properties = file_io_properties(options, "s3://b/lake")
    assert storage_options_from_properties(properties) == options
    # PyIceberg's own names for those that have one (what PyArrow's S3 file system reads)
    if "key" in options:
        assert properties["s3.access-key-id"] == "k"
    if options.get("endpoint_url") or options.get("client_kwargs", {}).get("endpoint_url"):
        assert properties["s3.endpoint"] == "http://h:1"
    s3 = scheme_of("s3")
    assert s3.pyarrow_carries(options) == ("config_kwargs" not in options)


def test_properties_named_the_pyiceberg_way_become_options() -> None:
    """A PyIceberg catalog configured with its own property names (no options carried)."""
    properties = {"uri": "s3://b/lake", "s3.endpoint": "http://h:1", "s3.access-key-id": "k"}
    assert storage_options_from_properties(properties) == {"client_kwargs": {"endpoint_url": "http://h:1"}, "key": "k"}
    assert storage_options_from_properties({"uri": "/tmp/lake", "s3.endpoint": "x"}) == {}


def test_duckdb_spells_the_files_with_the_roots_own_scheme() -> None:
    """DuckDB names the files a registered filesystem lists with its first protocol;
    a root named by another one (adlfs: ``abfs`` first, a root ``az://``) gets a copy of
    the filesystem object with the root's scheme first (the same store and caches), or
    its files would be read under a name outside the root."""
    from fsspec.implementations.memory import MemoryFileSystem

    class TwoNames(MemoryFileSystem):
        protocol = ("tlfirst", "tlsecond")

    fs = TwoNames(skip_instance_cache=True)
    second = Storage("tlsecond://b/lake", filesystem=fs)
    spelled = second.duckdb_filesystem
    assert spelled.protocol == ("tlsecond", "tlfirst") and type(spelled) is TwoNames
    assert spelled.store is fs.store and fs.protocol == ("tlfirst", "tlsecond")
    assert Storage("tlfirst://b/lake", filesystem=fs).duckdb_filesystem is fs
