"""Planning from manifests decoded once per process (iceberg.planning PC1-PC5, issue 34).

The oracle for pruning is the same query with no pruning at all: a condition on a
derived table's column prunes nothing (sql.query Q7), so ``SELECT ... FROM (SELECT *
FROM t) s WHERE c`` reads every file of the snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trinitylake_dbapi
from trinitylake_dbapi.errors import CorruptFileError
from trinitylake_dbapi.iceberg import planning
from trinitylake_dbapi.iceberg.tables import Confinement

_OPS = ["=", "<>", "<", "<=", ">", ">=", "in"]


def _connect(root: Path) -> Any:
    return trinitylake_dbapi.connect(str(root), create=True, autocommit=True)


def _table(conn: Any, name: str = "ns.t") -> Any:
    return conn.iceberg_catalog().load_table(name)


def _ids(table: Any) -> dict[str, int]:
    return {f.name: f.field_id for f in table.metadata.schema().fields}


def _one_row_commits(root: Path, count: int) -> Any:
    conn = _connect(root)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute("CREATE TABLE ns.t (id BIGINT, name STRING, small INT, flag BOOLEAN)")
    for i in range(count):
        cur.execute("INSERT INTO ns.t VALUES (?, ?, ?, ?)", (i, f"n{i:03d}", i - count // 2, i % 2 == 0))
    return conn


def test_a_point_lookup_after_many_commits_decodes_nothing_and_plans_one_file(tmp_path: Path) -> None:
    """PC1, PC4: after N one-row commits, each new key value (a bound parameter) plans
    exactly the file holding it, without decoding any manifest again (cache misses stay)."""
    conn = _one_row_commits(tmp_path / "lake", 12)
    cur = conn.cursor()
    table = _table(conn)
    field = _ids(table)["id"]
    snapshot = table.metadata.current_snapshot()
    own = Confinement("ns.t", table.metadata.location, conn.lakehouse.storage.root_uri)  # as SQL plans it
    assert cur.execute("SELECT count(*) FROM ns.t").fetchone() == (12,)  # decodes the snapshot's manifests
    misses = planning.cache_info()["misses"]
    for k in range(12):
        assert cur.execute("SELECT id, name FROM ns.t WHERE id = ?", (k,)).fetchall() == [(k, f"n{k:03d}")]
        files, deletes = planning.plan_snapshot("ns.t", snapshot, table.io, own, [(field, "=", k)])
        assert len(files) == 1 and deletes == []
    for k in (-1, 12):
        assert cur.execute("SELECT id FROM ns.t WHERE id = ?", (k,)).fetchall() == []
        assert planning.plan_snapshot("ns.t", snapshot, table.io, own, [(field, "=", k)]) == ([], [])
    assert planning.cache_info()["misses"] == misses
    beyond = 2**70  # outside int64: compared file by file rather than on int64 arrays
    assert planning.plan_snapshot("ns.t", snapshot, table.io, own, [(field, "=", beyond)]) == ([], [])
    assert len(planning.plan_snapshot("ns.t", snapshot, table.io, own, [(field, "<", beyond)])[0]) == 12
    assert len(planning.plan_snapshot("ns.t", snapshot, table.io, own, [(field, "in", (3, 5, beyond))])[0]) == 2
    small = _ids(table)["small"]  # an INT column: 4-byte bounds
    assert len(planning.plan_snapshot("ns.t", snapshot, table.io, own, [(small, ">=", 0)])[0]) == 6
    assert len(planning.plan_snapshot("ns.t", snapshot, table.io, own, [(small, "<", 0), (field, ">", 2)])[0]) == 3
    conn.close()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=st.lists(st.lists(st.integers(-50, 50), min_size=1, max_size=4), min_size=1, max_size=5),
    deleted=st.lists(st.integers(-50, 50), max_size=2),
    queries=st.lists(
        st.tuples(st.sampled_from(["id", "name", "flag"]), st.sampled_from(_OPS),
                  st.lists(st.integers(-55, 55), min_size=1, max_size=3)),
        min_size=1, max_size=12,
    ),
)  # fmt: skip
def test_pruning_with_parameters_gives_the_unpruned_answer(
    tmp_path_factory: Any, batches: list[list[int]], deleted: list[int], queries: list[tuple[str, str, list[int]]]
) -> None:
    """PC4: over a random history (commits of a few rows, copy-on-write DELETEs), every
    condition with bound parameters returns what the same condition returns unpruned."""
    conn = _connect(tmp_path_factory.mktemp("lake"))
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute("CREATE TABLE ns.t (id BIGINT, name STRING, flag BOOLEAN)")
    for batch in batches:
        cur.executemany("INSERT INTO ns.t VALUES (?, ?, ?)", [(v, f"n{v}", v % 3 == 0) for v in batch])
    for v in deleted:
        cur.execute("DELETE FROM ns.t WHERE id = ?", (v,))
    for column, op, values in queries:
        params = [f"n{v}" if column == "name" else (v % 2 == 0 if column == "flag" else v) for v in values]
        if op == "in":
            cond, params = f"{column} IN ({', '.join('?' for _ in params)})", params
        else:
            cond, params = f"{column} {op} ?", params[:1]
        pruned = sorted(cur.execute(f"SELECT id, name FROM ns.t WHERE {cond}", params).fetchall())
        whole = sorted(cur.execute(f"SELECT id, name FROM (SELECT * FROM ns.t) s WHERE {cond}", params).fetchall())
        assert pruned == whole, (cond, params)
    conn.close()


def test_the_cache_stays_under_its_bound(tmp_path: Path) -> None:
    """PC1: with a small limit, planning every version of a table keeps the cache's
    estimated bytes under the limit, evicts, and plans the same files as unbounded."""
    conn = _one_row_commits(tmp_path / "lake", 10)
    table = _table(conn)
    snapshots = table.metadata.snapshots
    unbounded = [planning.plan_snapshot("ns.t", s, table.io, None) for s in snapshots]
    limit = planning.cache_info()["limit"]
    try:
        planning.clear_cache()
        planning.set_cache_limit(6_000)
        for _ in range(2):
            for snapshot, expected in zip(snapshots, unbounded):
                assert planning.plan_snapshot("ns.t", snapshot, table.io, None) == expected
                info = planning.cache_info()
                assert 0 < info["bytes"] <= 6_000, info
        assert planning.cache_info()["entries"] < len(snapshots) * 2
        planning.set_cache_limit(0)
        assert planning.cache_info()["entries"] == 0
        assert planning.plan_snapshot("ns.t", snapshots[-1], table.io, None) == unbounded[-1]
        with pytest.raises(ValueError):
            planning.set_cache_limit(-1)
    finally:
        planning.set_cache_limit(limit)
    assert [len(files) for files, _ in unbounded] == list(range(1, 11))
    conn.close()


def test_confinement_holds_on_cached_entries(tmp_path: Path) -> None:
    """PC3: files decoded for one table location are refused to a table located
    elsewhere (M6 checked per table location, cache or not), naming the first data file
    (its manifest list and manifests lie inside the root, where M6 accepts a table's
    metadata files: an earlier write.metadata.path may hold them)."""
    root = tmp_path / "lake"
    conn = _one_row_commits(root, 3)
    table = _table(conn)
    snapshot = table.metadata.current_snapshot()
    root_uri = conn.lakehouse.storage.root_uri
    own = Confinement("ns.t", table.metadata.location, root_uri)
    assert len(planning.plan_snapshot("ns.t", snapshot, table.io, own)[0]) == 3
    elsewhere = Confinement("ns.u", table.metadata.location.rstrip("/") + "-other", root_uri)
    with pytest.raises(CorruptFileError) as e:
        planning.plan_snapshot("ns.u", snapshot, table.io, elsewhere)
    assert e.value.path.startswith(table.metadata.location + "/data/") and e.value.path.endswith(".parquet")
    assert len(planning.plan_snapshot("ns.t", snapshot, table.io, own)[0]) == 3
    conn.close()


def test_a_partitioned_table_and_an_unpartitioned_one_plan_alike(tmp_path: Path) -> None:
    """PC1's reused Avro readers are per file schema: the manifests of a partitioned table
    (whose entries carry its partition struct) and of an unpartitioned one, decoded in
    one process, give the rows PyIceberg's own scan gives, with parameters or not."""
    import pyarrow as pa
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    conn = _one_row_commits(tmp_path / "lake", 3)
    catalog = conn.iceberg_catalog()
    schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "k", StringType(), required=False))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="k"))
    table = catalog.create_table("ns.p", schema=schema, partition_spec=spec)
    for ks in (["a", "b"], ["b", "c"], ["a"]):
        rows = pa.table({"id": pa.array(range(len(ks)), pa.int64()), "k": pa.array(ks, pa.string())})
        table.append(rows)
    cur = conn.cursor()
    expected = sorted(tuple(r.values()) for r in catalog.load_table("ns.p").scan().to_arrow().to_pylist())
    assert sorted(cur.execute("SELECT id, k FROM ns.p").fetchall()) == expected
    for k in ("a", "b", "c", "d"):
        want = [row for row in expected if row[1] == k]
        assert sorted(cur.execute("SELECT id, k FROM ns.p WHERE k = ?", (k,)).fetchall()) == want
    assert cur.execute("SELECT id, name FROM ns.t WHERE id = ?", (1,)).fetchall() == [(1, "n001")]
    conn.close()
