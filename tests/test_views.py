"""The catalog views (trinitylake_dbapi.views CV1-CV4) as SQL presents them.

Spark's presentation is compared with SQL's, value for value, in
tests/spark/test_datasource.py::test_every_view_shows_what_sql_shows.
"""

from __future__ import annotations

import datetime as dt

import pytest

import trinitylake_dbapi
from trinitylake_dbapi import views
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.format.types import ColumnSpec, TypeSpec
from trinitylake_dbapi.sql.system_tables import SYSTEM_TABLES

# The system tables' columns as they were before the views had one home (issue 33):
# information_schema is a standard, and SQL's presentation of it must not move.
_V, _I4 = "varchar", "int4"
BEFORE = {
    ("information_schema", "schemata"): (
        ("catalog_name", _V), ("schema_name", _V), ("schema_owner", _V), ("comment", _V)),
    ("information_schema", "tables"): (
        ("table_catalog", _V), ("table_schema", _V), ("table_name", _V), ("table_type", _V),
        ("table_kind", _V), ("table_format", _V), ("location", _V), ("comment", _V)),
    ("information_schema", "columns"): (
        ("table_catalog", _V), ("table_schema", _V), ("table_name", _V), ("column_name", _V),
        ("ordinal_position", _I4), ("column_default", _V), ("is_nullable", _V),
        ("data_type", _V), ("character_maximum_length", _I4), ("numeric_precision", _I4),
        ("numeric_scale", _I4), ("datetime_precision", _I4), ("comment", _V),
        ("primary_key_position", _I4)),
    ("system", "versions"): (
        ("version", "int8"), ("created_at", "timestamp"), ("previous_version", "int8"),
        ("rollback_from_version", "int8"), ("changes", _V)),
}  # fmt: skip


def test_sql_presents_the_system_tables_columns_unchanged() -> None:
    assert {key: spec.columns for key, spec in SYSTEM_TABLES.items()} == BEFORE


@pytest.fixture
def lake(tmp_path) -> str:  # type: ignore[no-untyped-def]
    location = str(tmp_path / "lake")
    catalog = LakehouseCatalog(location, create=True)
    txn = catalog.begin()
    txn.create_namespace("ns", comment="a namespace")
    txn.create_table(
        "ns", "t",
        [ColumnSpec("id", TypeSpec("int8"), False), ColumnSpec("name", TypeSpec("varchar", length=20)),
         ColumnSpec("price", TypeSpec("decimal", precision=9, scale=2)),
         ColumnSpec("at", TypeSpec("timestamptz", precision=3))],
        primary_key=["id"], comment="a table",
    )  # fmt: skip
    txn.create_table("ns", "raw", [ColumnSpec("x", TypeSpec("int4"))], table_format="")
    txn.commit()
    catalog.close()
    return location


def rows(location: str, sql: str) -> list[tuple]:
    conn = trinitylake_dbapi.connect(location)
    try:
        cur = conn.cursor()
        cur.execute(sql)
        return [tuple(row) for row in cur.fetchall()]
    finally:
        conn.close()


def test_information_schema_values(lake: str) -> None:
    assert rows(lake, "SELECT * FROM information_schema.schemata WHERE schema_name = 'ns'") == [
        ("trinitylake", "ns", None, "a namespace")
    ]
    tables = rows(lake, "SELECT * FROM information_schema.tables WHERE table_schema = 'ns' ORDER BY table_name")
    assert tables == [
        ("trinitylake", "ns", "raw", "BASE TABLE", "MANAGED", None, None, None),
        ("trinitylake", "ns", "t", "BASE TABLE", "MANAGED", "ICEBERG", None, "a table"),
    ]
    columns = rows(lake, "SELECT * FROM information_schema.columns WHERE table_name = 't'")
    assert columns == [
        ("trinitylake", "ns", "t", "id", 1, None, "NO", "int8", None, 64, 0, None, None, 1),
        ("trinitylake", "ns", "t", "name", 2, None, "YES", "varchar(20)", 20, None, None, None, None, None),
        ("trinitylake", "ns", "t", "price", 3, None, "YES", "decimal(9,2)", None, 9, 2, None, None, None),
        ("trinitylake", "ns", "t", "at", 4, None, "YES", "timestamptz(3)", None, None, None, 3, None, None),
    ]


def test_a_table_without_a_format_shows_null(lake: str) -> None:
    """CV3: NULL, as Spark showed it (SQL showed an empty string)."""
    assert rows(lake, "SELECT table_format FROM information_schema.tables WHERE table_name = 'raw'") == [(None,)]
    # the same through DuckDB, when the system table is joined with a query it runs
    assert rows(lake, "SELECT count(*) FROM information_schema.tables WHERE table_format IS NULL") == [(1,)]


def test_show_versions_is_system_versions(lake: str) -> None:
    shown = rows(lake, "SHOW VERSIONS")
    assert shown == rows(lake, "SELECT * FROM system.versions ORDER BY version DESC")
    catalog = LakehouseCatalog(lake)
    history = catalog.versions()
    catalog.close()
    assert [(r[0], r[2], r[3], r[4]) for r in shown] == [
        (v.version, v.previous_version, v.rollback_from_version, ", ".join(v.changes)) for v in history
    ]
    # CV4: the instant in UTC without a time zone, to the millisecond
    assert [r[1] for r in shown] == [
        dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=v.created_at_millis) for v in history
    ]
    assert sorted(shown[0][4].split(", ")) == ["namespace ns", "table ns.raw", "table ns.t"]


def test_every_presentation_shows_fields_of_its_view() -> None:
    """CV2: a presentation only picks fields (or constants), SQL's and Spark's alike;
    the rows a view's function builds have one value per field."""
    for presentation in [*views.SQL.values(), *views.SPARK.values()]:
        for name, source in presentation.columns:
            if not isinstance(source, views.Constant):
                presentation.view.field(source)
    assert views.present(views.SQL[("system", "versions")], [tuple(range(5))]) == [tuple(range(5))]
    with pytest.raises(KeyError):
        views.Presentation(views.VERSIONS, (("x", "no_such_field"),)).specs()
