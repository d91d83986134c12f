"""Resources: opening and closing 10,000 connections and cursors leaks no file
descriptor and no thread; caches stay within their bounds (issue 9, point 6)."""

from __future__ import annotations

import gc
import os
import threading
from typing import Any

import pytest

import trinitylake_dbapi
from reliability_helpers import SMALL_TREE, columns
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.storage import Storage


def open_fds() -> int:
    return len(os.listdir(f"/proc/{os.getpid()}/fd"))


pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")


@pytest.mark.slow  # 10,000 connections (~2.2 s of CPU): the full run only
def test_ten_thousand_connections_and_cursors(tmp_path: Any) -> None:
    location = str(tmp_path / "lake")
    setup = trinitylake_dbapi.connect(location, create=True, autocommit=True)
    setup.cursor().execute("CREATE NAMESPACE ns")
    setup.cursor().execute("CREATE TABLE ns.t (id BIGINT)")
    setup.close()
    gc.collect()
    fds, threads = open_fds(), threading.active_count()
    statements = 0
    for i in range(10_000):
        conn = trinitylake_dbapi.connect(location, autocommit=bool(i % 2))
        cur = conn.cursor()
        if i % 10 == 0:
            assert cur.execute("SHOW TABLES IN ns").fetchall() == [("ns", "t")]
            statements += 1
        if i % 1000 == 0:  # some left to the garbage collector instead of closed
            continue
        cur.close()
        conn.close()
    gc.collect()
    # None left open. (<=: descriptors of earlier tests in this worker, such as a DuckDB
    # connection or a thread's, may be closed meanwhile, as in a full run of 771cb7f.)
    assert open_fds() <= fds
    assert threading.active_count() <= threads  # none left behind (threads of earlier tests may end meanwhile)

    conn = trinitylake_dbapi.connect(location)
    for i in range(10_000):
        cur = conn.cursor()
        if i % 10 == 0:
            cur.execute("DESCRIBE ns.t").fetchall()
        cur.close()
    conn.close()
    gc.collect()
    assert open_fds() <= fds
    assert threading.active_count() <= threads  # none left behind (threads of earlier tests may end meanwhile)
    assert statements == 1000


def test_caches_stay_within_their_bounds() -> None:
    import uuid

    location = f"memory://caches-{uuid.uuid4().hex}/lake"
    catalog = LakehouseCatalog(location, create=True, lakehouse_options=SMALL_TREE)
    txn = catalog.begin()
    txn.create_namespace("ns")
    txn.commit()
    for i in range(300):
        txn = catalog.begin()
        txn.create_table("ns", f"t{i:03d}", columns("id"))
        txn.commit()
    storage = Storage(location, cache_bytes=64 * 1024)
    reader = LakehouseCatalog(location, storage=storage)
    reader.lakehouse.store = None
    for version in range(1, 302):
        view = reader.begin(version=version)
        assert len(view.list_tables("ns")) == version - 1
        assert storage._cache_size <= 64 * 1024
    assert len(reader.lakehouse._snapshots) <= 256
    store = reader.lakehouse.store
    assert store is not None and len(store._cache) <= store._cache_nodes
    assert sum(map(len, storage._cache.values())) == storage._cache_size


@pytest.mark.s3
def test_s3_connections_close_their_sockets(s3_root: str, s3_storage_options: dict) -> None:
    setup = trinitylake_dbapi.connect(s3_root, create=True, autocommit=True,
                                      storage_options=s3_storage_options)
    setup.cursor().execute("CREATE NAMESPACE ns")
    setup.close()
    gc.collect()
    fds, threads = open_fds(), threading.active_count()
    for _ in range(12):
        conn = trinitylake_dbapi.connect(s3_root, storage_options=s3_storage_options)
        assert conn.cursor().execute("SHOW NAMESPACES").fetchall() == [("default",), ("ns",)]
        conn.close()
    gc.collect()
    assert open_fds() <= fds + 2  # a pooled keep-alive socket at most
    assert threading.active_count() <= threads + 1  # fsspec's one event-loop thread
