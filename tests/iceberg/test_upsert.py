"""PyIceberg's ``table.upsert(df, join_cols=[...])`` through TrinityLakeCatalog (issue
36, "MERGE and upsert"): rows updated and inserted, one Iceberg snapshot set and one
lakehouse version, and SQL reads what it wrote; a table created by SQL with a PRIMARY
KEY upserts by its key without join_cols."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyiceberg.catalog import load_catalog

import trinitylake_dbapi

IMPL = "trinitylake_dbapi.iceberg.catalog.TrinityLakeCatalog"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("n", pa.int64())])


def _versions(path: Any) -> int:
    with trinitylake_dbapi.connect(str(path)) as conn:
        cur = conn.cursor()
        cur.execute("SELECT count(*) FROM system.versions")
        return cur.fetchone()[0]


def test_upsert_updates_and_inserts_in_one_version(tmp_path: Any) -> None:
    lake = tmp_path / "lake"
    catalog = load_catalog("lake", **{"py-catalog-impl": IMPL, "uri": str(lake), "create": "true"})
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=SCHEMA)
    table.append(pa.Table.from_pylist([{"id": i, "name": f"n{i}", "n": i} for i in range(5)], schema=SCHEMA))
    before = _versions(lake)

    change = pa.Table.from_pylist(
        [{"id": 1, "name": "one", "n": 10}, {"id": 2, "name": "n2", "n": 2}, {"id": 7, "name": "seven", "n": 7}],
        schema=SCHEMA,
    )
    result = table.upsert(change, join_cols=["id"])
    assert (result.rows_updated, result.rows_inserted) == (1, 1)  # row 2 is unchanged
    assert _versions(lake) == before + 1

    reloaded = catalog.load_table("ns.t")
    expected = [(0, "n0", 0), (1, "one", 10), (2, "n2", 2), (3, "n3", 3), (4, "n4", 4), (7, "seven", 7)]
    rows = reloaded.scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["name"], r["n"]) for r in rows) == expected
    with trinitylake_dbapi.connect(str(lake)) as conn:
        cur = conn.cursor()
        cur.execute("SELECT id, name, n FROM ns.t ORDER BY id")
        assert cur.fetchall() == expected


def test_upsert_by_the_primary_key_declared_in_sql(tmp_path: Any) -> None:
    lake = tmp_path / "lake"
    with trinitylake_dbapi.connect(str(lake), create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE default.users (id BIGINT NOT NULL, name STRING, PRIMARY KEY (id))")
        cur.execute("INSERT INTO default.users VALUES (1, 'a'), (2, 'b')")
    catalog = load_catalog("lake", **{"py-catalog-impl": IMPL, "uri": str(lake)})
    table = catalog.load_table("default.users")
    schema = table.schema().as_arrow()
    frame = pa.Table.from_pylist([{"id": 2, "name": "B"}, {"id": 3, "name": "c"}], schema=schema)
    before = _versions(lake)
    result = table.upsert(frame)  # join columns: the table's identifier fields (its key)
    assert (result.rows_updated, result.rows_inserted) == (1, 1)
    assert _versions(lake) == before + 1
    with trinitylake_dbapi.connect(str(lake)) as conn:
        cur = conn.cursor()
        cur.execute("SELECT * FROM default.users ORDER BY id")
        assert cur.fetchall() == [(1, "a"), (2, "B"), (3, "c")]
