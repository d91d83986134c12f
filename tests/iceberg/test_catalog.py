"""The PyIceberg catalog over a lakehouse, used as PyIceberg users use it (issue 17).

The oracle is a plain list of rows kept beside the table: what was written, by version.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
)
from pyiceberg.expressions import EqualTo, GreaterThanOrEqual
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortField, SortOrder
from pyiceberg.transforms import BucketTransform, IdentityTransform
from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField, StringType

import trinitylake_dbapi
import warm_processes
from trinitylake_dbapi.errors import MissingFileError, ReadOnlyError
from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog
from trinitylake_dbapi.iceberg.io import file_io_properties

IMPL = "trinitylake_dbapi.iceberg.catalog.TrinityLakeCatalog"
ORDERS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("region", pa.string()), ("amount", pa.float64())])


def orders(*rows: tuple[int, str, float]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(("id", "region", "amount"), r)) for r in rows], schema=ORDERS)


def rows_of(table: pa.Table) -> list[tuple]:
    return sorted(tuple(row.values()) for row in table.to_pylist())


@pytest.fixture
def catalog(lake: Any) -> TrinityLakeCatalog:
    """A catalog on each backend (local, memory, S3 on moto), loaded as PyIceberg users
    load catalogs; the object-store settings travel as PyIceberg's FileIO properties."""
    properties = file_io_properties(lake.storage_options)
    return load_catalog(
        "lake", **{"py-catalog-impl": IMPL, "uri": lake.location, "create": "true", **properties}
    )


def connect_to(catalog: TrinityLakeCatalog, **kwargs: Any) -> Any:
    """A DB-API connection to the catalog's lakehouse."""
    lakehouse = catalog.lakehouse
    return trinitylake_dbapi.connect(lakehouse.storage.root_uri, storage_options=lakehouse.storage_options or None, **kwargs)


def reopen(catalog: TrinityLakeCatalog, name: str = "other") -> TrinityLakeCatalog:
    """Another catalog on the same lakehouse, as another process would open it."""
    return TrinityLakeCatalog(name, **{k: v for k, v in catalog.properties.items() if k != "create"})


def test_load_catalog_needs_a_uri() -> None:
    with pytest.raises(ValueError, match="uri"):
        load_catalog("lake", **{"py-catalog-impl": IMPL})


def test_namespaces(catalog: TrinityLakeCatalog) -> None:
    assert catalog.list_namespaces() == [("default",)]
    catalog.create_namespace("sales", {"owner": "ana", "comment": "money"})
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace("sales")
    assert catalog.load_namespace_properties("sales") == {"owner": "ana", "comment": "money"}
    summary = catalog.update_namespace_properties("sales", removals={"owner", "nope"}, updates={"tier": "1"})
    assert summary.removed == ["owner"] and summary.missing == ["nope"]
    assert catalog.load_namespace_properties("sales") == {"tier": "1", "comment": "money"}
    assert sorted(catalog.list_namespaces()) == [("default",), ("sales",)]
    assert catalog.list_namespaces("sales") == []
    with pytest.raises(NoSuchNamespaceError, match="^Namespace nope does not exists"):  # P11
        catalog.load_namespace_properties("nope")
    catalog.create_table("sales.t", ORDERS)
    with pytest.raises(NamespaceNotEmptyError, match="^Namespace sales is not empty"):
        catalog.drop_namespace("sales")
    catalog.drop_table("sales.t")
    catalog.drop_namespace("sales")
    assert not catalog.namespace_exists("sales")


def test_tables_and_views(catalog: TrinityLakeCatalog) -> None:
    table = catalog.create_table("default.orders", ORDERS, properties={"comment": "all orders", "team": "x"})
    assert table.metadata.format_version == 2
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("default.orders", ORDERS)
    with pytest.raises(NoSuchNamespaceError):
        catalog.create_table("nope.orders", ORDERS)
    assert catalog.list_tables("default") == [("default", "orders")]
    assert catalog.table_exists("default.orders") and not catalog.table_exists("default.other")
    with pytest.raises(NoSuchTableError):
        catalog.load_table("default.other")
    with pytest.raises(NoSuchTableError, match="^Table does not exist: a.b.c$"):  # P6, P11
        catalog.load_table("a.b.c")
    with pytest.raises(NoSuchTableError, match="^Table does not exist: default.other$"):
        catalog.load_table("default.other")
    catalog.rename_table("default.orders", "default.orders2")
    assert catalog.load_table("default.orders2").metadata.table_uuid == table.metadata.table_uuid
    with pytest.raises(NoSuchTableError):
        catalog.drop_table("default.orders")
    assert catalog.list_views("default") == [] and not catalog.view_exists("default.v")
    with pytest.raises(NoSuchViewError):
        catalog.load_view("default.v")


def test_data_round_trip_with_schema_evolution(catalog: TrinityLakeCatalog) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "region", StringType()),
        NestedField(3, "amount", DoubleType()),
        NestedField(4, "qty", IntegerType()),
        NestedField(5, "legacy", StringType()),
        identifier_field_ids=[1],
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"), PartitionField(1, 1001, BucketTransform(4), "id_bucket"))
    order = SortOrder(SortField(source_id=1))
    table = catalog.create_table("default.orders", schema, partition_spec=spec, sort_order=order)
    arrow_schema = table.schema().as_arrow()
    expected: list[dict] = []

    def write(rows: list[dict], how: str = "append") -> None:
        data = pa.Table.from_pylist(rows, schema=table.schema().as_arrow())
        getattr(table, how)(data)

    batch = [{"id": i, "region": "eu" if i % 2 else "us", "amount": i * 1.5, "qty": i, "legacy": "old"} for i in range(20)]
    write(batch)
    expected += batch
    table.delete(GreaterThanOrEqual("id", 15))
    expected = [r for r in expected if r["id"] < 15]
    with table.update_schema() as update:
        update.update_column("qty", LongType())  # widen
        update.rename_column("amount", "total")
        update.add_column("note", StringType(), doc="free text")
        update.delete_column("legacy")
    expected = [{"id": r["id"], "region": r["region"], "total": r["amount"], "qty": r["qty"], "note": None} for r in expected]
    more = [{"id": 100 + i, "region": "eu", "total": 1.0, "qty": 2**40, "note": "big"} for i in range(3)]
    write(more)
    expected += more
    loaded = catalog.load_table("default.orders")
    got = loaded.scan().to_arrow()
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == sorted(expected, key=lambda r: r["id"])
    eu = loaded.scan(row_filter=EqualTo("region", "eu")).to_arrow()
    assert sorted(eu["id"].to_pylist()) == sorted(r["id"] for r in expected if r["region"] == "eu")
    assert arrow_schema.field("id").type == pa.int64()
    # the definition mirrors the Iceberg schema: field ids, names, types, comments
    with connect_to(catalog) as conn:
        cur = conn.cursor()
        cur.execute("DESCRIBE TABLE default.orders")
        assert cur.fetchall() == [
            ("id", "int8", False, None),
            ("region", "varchar", True, None),
            ("total", "float8", True, None),
            ("qty", "int8", True, None),
            ("note", "varchar", True, "free text"),
        ]
    info = catalog.lakehouse.begin().describe_table("default", "orders")
    assert [c.id for c in info.columns] == [f.field_id for f in loaded.schema().fields]
    # overwrite replaces everything
    table.overwrite(pa.Table.from_pylist([{"id": 1, "region": "x", "total": 0.0, "qty": 0, "note": None}], schema=loaded.schema().as_arrow()))
    assert catalog.load_table("default.orders").scan().to_arrow()["id"].to_pylist() == [1]


def test_table_reads_its_declared_columns_before_any_write(catalog: TrinityLakeCatalog) -> None:
    """P1: a table created by the catalog API alone has no metadata yet; it reads as
    empty with its columns and gets metadata at its first write."""
    from trinitylake_dbapi.format.types import ColumnSpec, parse_type

    txn = catalog.lakehouse.begin()
    txn.create_table("default", "legacy", [ColumnSpec("a", parse_type("int2", column="a")), ColumnSpec("b", parse_type("varchar(10)", column="b"))])
    txn.commit()
    table = catalog.load_table("default.legacy")
    assert table.scan().to_arrow().num_rows == 0
    assert [(f.field_id, f.name, str(f.field_type)) for f in table.schema().fields] == [(1, "a", "int"), (2, "b", "string")]
    table.append(pa.table({"a": pa.array([1], pa.int32()), "b": ["x"]}))
    info = catalog.lakehouse.begin().describe_table("default", "legacy")
    assert "metadata_location" in info.format_properties
    assert [str(c.type) for c in info.columns] == ["int2", "varchar(10)"]  # S2: SPEC types kept
    assert catalog.load_table("default.legacy").scan().to_arrow().to_pylist() == [{"a": 1, "b": "x"}]


def _append_worker(args: tuple[dict, str, int, int]) -> int:
    properties, table_name, worker, count = args
    table = TrinityLakeCatalog("lake", **properties).load_table(table_name)
    for i in range(count):
        table.append(orders((worker * 1000 + i, f"w{worker}", float(i))))
    return worker


def test_four_processes_append_to_one_table_and_to_four(catalog: TrinityLakeCatalog, lake: Any) -> None:
    if lake.backend == "memory":
        pytest.skip("a memory:// lakehouse lives in one process")
    uri = {k: v for k, v in catalog.properties.items() if k != "create"}
    catalog.create_table("default.shared", ORDERS)
    for w in range(4):
        catalog.create_table(f"default.own{w}", ORDERS)
    count = 5
    with warm_processes.context(__name__).Pool(4) as pool:  # spawn's imports were most of the run
        assert sorted(pool.map(_append_worker, [(uri, "default.shared", w, count) for w in range(4)])) == [0, 1, 2, 3]
        before = catalog.lakehouse.latest_version()
        pool.map(_append_worker, [(uri, f"default.own{w}", w, count) for w in range(4)])
    ids = catalog.load_table("default.shared").scan().to_arrow()["id"].to_pylist()
    assert sorted(ids) == sorted(w * 1000 + i for w in range(4) for i in range(count))
    assert catalog.lakehouse.latest_version() - before == 4 * count  # one version per append
    for w in range(4):
        assert sorted(catalog.load_table(f"default.own{w}").scan().to_arrow()["id"].to_pylist()) == [w * 1000 + i for i in range(count)]


def test_a_lakehouse_transaction_is_one_version_or_none(catalog: TrinityLakeCatalog) -> None:
    a = catalog.create_table("default.a", ORDERS)
    b = catalog.create_table("default.b", ORDERS)
    start = catalog.lakehouse.latest_version()
    with catalog.lakehouse_transaction():
        a.append(orders((1, "eu", 1.0)))
        b.append(orders((2, "us", 2.0)))
        catalog.create_table("default.c", ORDERS)
        # reads inside the block see its own writes
        assert catalog.load_table("default.a").scan().to_arrow().num_rows == 1
    assert catalog.lakehouse.latest_version() == start + 1
    assert rows_of(catalog.load_table("default.b").scan().to_arrow()) == [(2, "us", 2.0)]

    # Another process commits an incompatible change (an overwrite) to b meanwhile.
    other = reopen(catalog)
    before = catalog.lakehouse.latest_version()
    with pytest.raises(CommitFailedException):
        with catalog.lakehouse_transaction():
            catalog.load_table("default.a").append(orders((3, "eu", 3.0)))
            catalog.load_table("default.b").delete(EqualTo("id", 2))
            other.load_table("default.b").overwrite(orders((9, "x", 9.0)))
    assert catalog.lakehouse.latest_version() == before + 1  # only the other process's
    assert rows_of(catalog.load_table("default.a").scan().to_arrow()) == [(1, "eu", 1.0)]
    assert rows_of(catalog.load_table("default.b").scan().to_arrow()) == [(9, "x", 9.0)]


def test_every_version_reads_back_and_rollback_moves_both_tables(catalog: TrinityLakeCatalog) -> None:
    a = catalog.create_table("default.a", ORDERS)
    b = catalog.create_table("default.b", ORDERS)
    oracle: dict[int, tuple[list, list]] = {}
    state_a: list[tuple] = []
    state_b: list[tuple] = []
    for step in range(12):
        row = (step, "eu" if step % 3 else "us", float(step))
        if step % 4 == 3:
            b.delete(EqualTo("region", "us"))
            state_b = [r for r in state_b if r[1] != "us"]
        elif step % 5 == 4:
            a.overwrite(orders(row))
            state_a = [row]
        elif step % 2:
            a.append(orders(row))
            state_a.append(row)
        else:
            b.append(orders(row))
            state_b.append(row)
        oracle[catalog.lakehouse.latest_version()] = (sorted(state_a), sorted(state_b))
    for version, (rows_a, rows_b) in oracle.items():
        old = catalog.at_version(version)
        assert rows_of(old.load_table("default.a").scan().to_arrow()) == rows_a, version
        assert rows_of(old.load_table("default.b").scan().to_arrow()) == rows_b, version
        with pytest.raises(ReadOnlyError):
            old.load_table("default.a").append(orders((99, "x", 0.0)))
    target = sorted(oracle)[4]
    with connect_to(catalog, autocommit=True) as conn:
        conn.cursor().execute(f"ROLLBACK TO VERSION {target}")
    assert rows_of(catalog.load_table("default.a").scan().to_arrow()) == oracle[target][0]
    assert rows_of(catalog.load_table("default.b").scan().to_arrow()) == oracle[target][1]
    # and the tables go on from there
    catalog.load_table("default.a").append(orders((50, "eu", 5.0)))
    assert rows_of(catalog.load_table("default.a").scan().to_arrow()) == sorted(oracle[target][0] + [(50, "eu", 5.0)])


def test_register_table_is_external_and_reads_the_same(catalog: TrinityLakeCatalog) -> None:
    table = catalog.create_table("default.src", ORDERS)
    table.append(orders((1, "eu", 1.0)))
    location = catalog.load_table("default.src").metadata_location
    registered = catalog.register_table("default.copy", location)
    assert rows_of(registered.scan().to_arrow()) == [(1, "eu", 1.0)]
    info = catalog.lakehouse.begin().describe_table("default", "copy")
    assert info.table_type == "EXTERNAL"
    with pytest.raises(TableAlreadyExistsError):
        catalog.register_table("default.copy", location)


def test_append_filter_scan_matches_pyarrow(catalog: TrinityLakeCatalog) -> None:
    data = orders(*[(i, ["eu", "us", "apac"][i % 3], i / 4) for i in range(300)])
    table = catalog.create_table("default.o", ORDERS)
    table.append(data)
    got = table.scan(row_filter="amount >= 20 and region = 'eu'").to_arrow()
    mask = pc.and_(pc.greater_equal(data["amount"], 20), pc.equal(data["region"], "eu"))
    assert rows_of(got) == rows_of(data.filter(mask))


def test_files_stay_for_older_versions_after_purge_not_after_delete_after_commit(catalog: TrinityLakeCatalog) -> None:
    """P8: time travel still reads what purge_table leaves; the table owner's opt-in
    ``write.metadata.delete-after-commit.enabled`` deletes the metadata files its
    commits drop from the log, on every storage, and the older version then says so
    (iceberg.oldmetadata OM1-OM4)."""
    table = catalog.create_table("default.t", ORDERS, properties={"write.metadata.previous-versions-max": "1"})
    table.append(orders((1, "eu", 1.0)))
    first = catalog.lakehouse.latest_version()
    table.append(orders((2, "eu", 2.0)))
    table.append(orders((3, "eu", 3.0)))
    assert rows_of(catalog.at_version(first).load_table("default.t").scan().to_arrow()) == [(1, "eu", 1.0)]
    last = catalog.lakehouse.latest_version()
    catalog.purge_table("default.t")
    assert not catalog.table_exists("default.t")
    assert len(catalog.at_version(last).load_table("default.t").scan().to_arrow()) == 3

    table = catalog.create_table(
        "default.d", ORDERS, properties={"write.metadata.delete-after-commit.enabled": "true",
                                         "write.metadata.previous-versions-max": "1"}
    )
    table.append(orders((1, "eu", 1.0)))
    first = catalog.lakehouse.latest_version()
    table.append(orders((2, "eu", 2.0)))
    table.append(orders((3, "eu", 3.0)))
    with pytest.raises(MissingFileError, match=f"table default.d that lakehouse version {first} names does not exist"):
        catalog.at_version(first).load_table("default.d")
    assert len(catalog.at_version(first + 2).load_table("default.d").scan().to_arrow()) == 3


def test_a_catalog_opens_at_a_version_number_snapshot_name_or_timestamp(tmp_path: Any) -> None:
    """P5: every way of naming a version, through load_catalog's ``version`` property."""
    import datetime

    uri = str(tmp_path / "lake")
    catalog = TrinityLakeCatalog("lake", uri=uri, create="true")
    table = catalog.create_table("default.t", ORDERS)
    table.append(orders((1, "eu", 1.0)))
    version = catalog.lakehouse.latest_version()
    moment = datetime.datetime.fromtimestamp(
        catalog.lakehouse.lakehouse.snapshot(version).created_at_millis / 1000, tz=datetime.timezone.utc
    )
    catalog.lakehouse.export_snapshot("first", version)
    table.append(orders((2, "eu", 2.0)))
    for spec in (str(version), "first", moment.isoformat()):
        old = load_catalog("old", **{"py-catalog-impl": IMPL, "uri": uri, "version": spec})
        assert old.read_only
        assert rows_of(old.load_table("default.t").scan().to_arrow()) == [(1, "eu", 1.0)], spec
        with pytest.raises(ReadOnlyError):
            old.create_namespace("nope")
    with pytest.raises(Exception, match="nope"):
        load_catalog("old", **{"py-catalog-impl": IMPL, "uri": uri, "version": "nope"})


def test_sql_table_properties_and_comments_are_iceberg_properties(tmp_path: Any) -> None:
    """P7: ALTER TABLE ... SET/UNSET TBLPROPERTIES and COMMENT ON TABLE move the Iceberg
    table properties with the definition, in the same commit."""
    uri = str(tmp_path / "lake")
    with trinitylake_dbapi.connect(uri, create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE default.t (id int8) TBLPROPERTIES ('owner' = 'ana')")
        cur.execute("ALTER TABLE default.t SET TBLPROPERTIES ('tier' = 'gold', 'owner' = 'bo')")
        cur.execute("COMMENT ON TABLE default.t IS 'facts'")
        props = TrinityLakeCatalog("lake", uri=uri).load_table("default.t").properties
        assert {k: props[k] for k in ("owner", "tier", "comment")} == {"owner": "bo", "tier": "gold", "comment": "facts"}
        cur.execute("ALTER TABLE default.t UNSET TBLPROPERTIES ('tier')")
        assert "tier" not in TrinityLakeCatalog("lake", uri=uri).load_table("default.t").properties


def test_create_table_transaction_publishes_the_table_with_its_rows_in_one_version(tmp_path: Any) -> None:
    catalog = TrinityLakeCatalog("lake", uri=str(tmp_path / "lake"), create="true")
    before = catalog.lakehouse.latest_version()
    with catalog.create_table_transaction("default.t", ORDERS) as txn:
        txn.append(orders((1, "eu", 1.0), (2, "us", 2.0)))
        assert not catalog.table_exists("default.t")  # nothing visible before the commit
    assert catalog.lakehouse.latest_version() == before + 1
    assert rows_of(catalog.load_table("default.t").scan().to_arrow()) == [(1, "eu", 1.0), (2, "us", 2.0)]
    with pytest.raises(CommitFailedException, match="already exists"):  # as PyIceberg's own catalogs
        catalog.create_table_transaction("default.t", ORDERS).commit_transaction()


def test_a_block_of_appends_survives_another_writers_append(tmp_path: Any) -> None:
    """P4: single appends per table are run again on the latest version; both writers'
    rows land, in one version for the block."""
    catalog = TrinityLakeCatalog("lake", uri=str(tmp_path / "lake"), create="true")
    a = catalog.create_table("default.a", ORDERS)
    b = catalog.create_table("default.b", ORDERS)
    other = reopen(catalog)
    with catalog.lakehouse_transaction():
        a.append(orders((1, "eu", 1.0)))
        b.append(orders((2, "eu", 2.0)))
        other.load_table("default.a").append(orders((9, "x", 9.0)))  # commits first
        version_of_other = catalog.lakehouse.latest_version()
    assert catalog.lakehouse.latest_version() == version_of_other + 1
    assert rows_of(catalog.load_table("default.a").scan().to_arrow()) == [(1, "eu", 1.0), (9, "x", 9.0)]
    assert rows_of(catalog.load_table("default.b").scan().to_arrow()) == [(2, "eu", 2.0)]
    # two appends to one table in a block are replayed in order, the second on the first
    with catalog.lakehouse_transaction():
        a.append(orders((3, "eu", 3.0)))
        a.append(orders((4, "eu", 4.0)))
        other.load_table("default.a").append(orders((8, "x", 8.0)))
    table = catalog.load_table("default.a")
    assert sorted(rows_of(table.scan().to_arrow())) == [
        (1, "eu", 1.0), (3, "eu", 3.0), (4, "eu", 4.0), (8, "x", 8.0), (9, "x", 9.0)
    ]
    chain, snapshot = [], table.current_snapshot()
    while snapshot is not None:  # one line of parents, sequence numbers strictly falling
        chain.append(snapshot.sequence_number)
        snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    assert chain == sorted(chain, reverse=True) and len(chain) == len(set(chain)) == 5
    # an overwrite in a block is not replayed: the block fails whole
    with pytest.raises(CommitFailedException):
        with catalog.lakehouse_transaction():
            a.append(orders((5, "eu", 5.0)))
            a.overwrite(orders((6, "eu", 6.0)))
            other.load_table("default.a").append(orders((7, "x", 7.0)))
    assert sorted(r[0] for r in rows_of(catalog.load_table("default.a").scan().to_arrow())) == [1, 3, 4, 7, 8, 9]


def test_a_connection_catalog_commits_with_the_connection(tmp_path: Any) -> None:
    """P4 for a DB-API connection: appends wait for commit() (and rollback() drops them);
    under autocommit each append is its own version and a lost race is retried (P3)."""
    uri = str(tmp_path / "lake")
    TrinityLakeCatalog("setup", uri=uri, create="true").create_table("default.t", ORDERS)
    outside = TrinityLakeCatalog("outside", uri=uri)
    with trinitylake_dbapi.connect(uri) as conn:
        table = conn.iceberg_catalog().load_table("default.t")
        table.append(orders((1, "eu", 1.0)))
        assert outside.load_table("default.t").scan().to_arrow().num_rows == 0  # not yet
        conn.rollback()
        assert conn.iceberg_catalog().load_table("default.t").scan().to_arrow().num_rows == 0
        conn.iceberg_catalog().load_table("default.t").append(orders((2, "eu", 2.0)))
        conn.commit()
    assert rows_of(outside.load_table("default.t").scan().to_arrow()) == [(2, "eu", 2.0)]
    with trinitylake_dbapi.connect(uri, autocommit=True) as conn:
        table = conn.iceberg_catalog().load_table("default.t")
        outside.load_table("default.t").append(orders((3, "eu", 3.0)))  # wins the race
        table.append(orders((4, "eu", 4.0)))  # built on the older head: rebased, retried
    assert [r[0] for r in rows_of(outside.load_table("default.t").scan().to_arrow())] == [2, 3, 4]


def test_a_connection_catalog_keeps_its_connection_alive(tmp_path: Any) -> None:
    """Issue 32 item 12: ``connect(lake).iceberg_catalog()`` works although nothing else
    references the connection (as a cursor keeps its connection); the connection holds
    its catalog weakly, so dropping the catalog frees both, with no cycle left for gc."""
    import gc
    import weakref

    uri = str(tmp_path / "lake")
    TrinityLakeCatalog("setup", uri=uri, create="true").create_table("default.t", ORDERS)
    catalog = trinitylake_dbapi.connect(uri, autocommit=True).iceberg_catalog()
    gc.collect()
    assert catalog.list_tables("default") == [("default", "t")]
    catalog.load_table("default.t").append(orders((1, "eu", 1.0)))
    table = trinitylake_dbapi.connect(uri, autocommit=True).iceberg_catalog().load_table("default.t")
    gc.collect()
    table.append(orders((2, "eu", 2.0)))  # the table keeps its catalog, which keeps its connection
    assert rows_of(table.scan().to_arrow()) == [(1, "eu", 1.0), (2, "eu", 2.0)]
    conn = trinitylake_dbapi.connect(uri)
    assert conn.iceberg_catalog() is conn.iceberg_catalog()  # the same while it lives
    gone = weakref.ref(conn)
    held = weakref.ref(conn.iceberg_catalog())
    gc.disable()
    try:
        del conn
        assert gone() is None and held() is None  # freed by reference counting alone: no cycle
    finally:
        gc.enable()


def test_a_closed_connection_fails_its_catalog_with_interface_error(tmp_path: Any) -> None:
    uri = str(tmp_path / "lake")
    conn = trinitylake_dbapi.connect(uri, create=True)
    catalog = conn.iceberg_catalog()
    conn.close()
    with pytest.raises(trinitylake_dbapi.InterfaceError, match="closed"):
        catalog.list_namespaces()


@pytest.mark.parametrize("impl", ["trinitylake_dbapi.iceberg.TrinityLakeCatalog", IMPL])
def test_the_catalog_has_a_short_import_path(tmp_path: Any, impl: str) -> None:
    """Issue 32 item 13: ``from trinitylake_dbapi.iceberg import TrinityLakeCatalog``, and
    both paths as PyIceberg's ``py-catalog-impl``."""
    from trinitylake_dbapi.iceberg import TrinityLakeCatalog as short

    assert short is TrinityLakeCatalog
    catalog = load_catalog("lake", **{"py-catalog-impl": impl, "uri": str(tmp_path / "lake"), "create": "true"})
    assert isinstance(catalog, TrinityLakeCatalog) and catalog.list_namespaces() == [("default",)]
    with pytest.raises(AttributeError, match="nothing"):
        import trinitylake_dbapi.iceberg

        trinitylake_dbapi.iceberg.nothing  # noqa: B018
