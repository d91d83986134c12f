"""Tables created and altered through SQLAlchemy and SQL are the Iceberg tables PyIceberg
reads: same names, field ids, types, nullability and comments (issue 17, acceptance 6)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import sqlalchemy as sa

import trinitylake_dbapi
from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog


def test_sqlalchemy_tables_are_the_iceberg_tables_pyiceberg_reads(engine: sa.Engine, lake_path: Path) -> None:
    metadata = sa.MetaData(schema="ns")
    sa.Table(
        "orders", metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, comment="the key"),
        sa.Column("customer", sa.String(80), nullable=False),
        sa.Column("qty", sa.SmallInteger),
        sa.Column("total", sa.Numeric(12, 2)),
        sa.Column("placed_at", sa.DateTime),
        sa.Column("paid", sa.Boolean, comment="paid yet?"),
        comment="one row per order",
    )  # fmt: skip
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE ns.orders ADD COLUMN note varchar COMMENT 'free text'")
        conn.exec_driver_sql("ALTER TABLE ns.orders RENAME COLUMN qty TO quantity")
        conn.exec_driver_sql("ALTER TABLE ns.orders ALTER COLUMN customer DROP NOT NULL")
    table = TrinityLakeCatalog("lake", uri=str(lake_path)).load_table("ns.orders")
    fields = [(f.field_id, f.name, str(f.field_type), f.required, f.doc) for f in table.schema().fields]
    assert fields == [
        (1, "id", "long", True, "the key"),
        (2, "customer", "string", False, None),
        (3, "quantity", "int", False, None),
        (4, "total", "decimal(12, 2)", False, None),
        (5, "placed_at", "timestamp", False, None),
        (6, "paid", "boolean", False, "paid yet?"),
        (7, "note", "string", False, "free text"),
    ]
    assert table.schema().identifier_field_ids == [1]
    assert table.properties.get("comment") == "one row per order"
    # the dialect reflects what SQL DESCRIBE shows: SQL types are kept (int2, varchar(80))
    columns = {c["name"]: c for c in sa.inspect(engine).get_columns("orders", schema="ns")}
    assert str(columns["quantity"]["type"]).upper() in ("SMALLINT", "INT2")
    assert "80" in str(columns["customer"]["type"])
    # and PyIceberg's writes are read back by both
    table.append(pa.Table.from_pylist([{"id": 1, "customer": "ana", "quantity": 2}], schema=table.schema().as_arrow()))
    with trinitylake_dbapi.connect(str(lake_path)) as conn:
        rows = conn.iceberg_catalog().load_table("ns.orders").scan().to_arrow().to_pylist()
    assert [(r["id"], r["customer"], r["quantity"]) for r in rows] == [(1, "ana", 2)]
