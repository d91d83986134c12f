"""The ``trinitylake`` Spark data source against SHOW TABLES and the catalog API."""

from __future__ import annotations

import datetime as dt

import pytest

import trinitylake_dbapi
from lakehouses import SMALL_NODES, cols
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.format.types import type_to_sql
from trinitylake_dbapi.spark.datasource import SCHEMAS, TrinityLakeDataSource
from trinitylake_dbapi.storage import Storage


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> dict:  # type: ignore[no-untyped-def]
    """Three namespaces, 60 tables over 40 versions, small nodes (a tree of several
    levels, so planning cuts several key ranges)."""
    location = str(tmp_path_factory.mktemp("ds") / "lake")
    catalog = LakehouseCatalog(location, create=True, lakehouse_options=SMALL_NODES)
    txn = catalog.begin()
    txn.create_namespace("alpha", comment="first", properties={"team": "a"})
    txn.create_namespace("beta")
    txn.create_namespace("gamma")
    txn.commit()
    for i in range(60):
        txn = catalog.begin()
        ns = ("alpha", "beta", "gamma")[i % 3]
        txn.create_table(
            ns, f"t{i:02d}", cols("id bigint NOT NULL", "v varchar(5)", "m map<varchar, list<int4>>"),
            primary_key=["id"] if i % 2 else (), comment=f"table {i}" if i % 4 == 0 else None,
            properties={"k": str(i)}, location=f"/data/{ns}/t{i:02d}" if i % 5 == 0 else None,
        )  # fmt: skip
        if i % 6 == 5:
            txn.drop_table(("alpha", "beta", "gamma")[(i - 3) % 3], f"t{i - 3:02d}")
        txn.commit()
    middle = 30
    exported = catalog.export_snapshot("mid", middle)
    return {"location": location, "catalog": catalog, "middle": middle, "exported": exported}


def read(spark, location: str, **options):  # type: ignore[no-untyped-def]
    reader = spark.read.format("trinitylake").option("location", location)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def show_tables(location: str, version: int | None = None) -> list[tuple[str, str]]:
    conn = trinitylake_dbapi.connect(location)
    try:
        cur = conn.cursor()
        sql = "SHOW TABLES" + (f" FOR SYSTEM_VERSION AS OF {version}" if version is not None else "")
        cur.execute(sql)
        return [tuple(row) for row in cur.fetchall()]
    finally:
        conn.close()


def test_tables_are_the_tables_of_show_tables(spark, lake) -> None:  # type: ignore[no-untyped-def]
    rows = read(spark, lake["location"]).collect()
    assert [(r.namespace, r.table_name) for r in rows] == show_tables(lake["location"])
    assert len(rows) > 40


@pytest.mark.parametrize("version", [1, 10, "middle", "mid"])
def test_tables_at_a_version_are_show_tables_at_that_version(spark, lake, version) -> None:  # type: ignore[no-untyped-def]
    number = lake["middle"] if version in ("middle", "mid") else version
    option = lake["middle"] if version == "middle" else version
    rows = read(spark, lake["location"], version=option).collect()
    assert [(r.namespace, r.table_name) for r in rows] == show_tables(lake["location"], number)


def test_table_rows_hold_the_definitions(spark, lake) -> None:  # type: ignore[no-untyped-def]
    catalog: LakehouseCatalog = lake["catalog"]
    txn = catalog.begin(version=lake["middle"])
    rows = read(spark, lake["location"], version=lake["middle"]).collect()
    for row in rows:
        info = txn.describe_table(row.namespace, row.table_name)
        assert row.table_type == "BASE TABLE" and row.table_kind == info.table_type  # views CV3
        assert row.table_format == info.table_format
        assert row.location == info.location and row.comment == info.comment
        assert row.properties == info.properties and row.primary_key == list(info.primary_key)
        assert [(c.id, c.name, c.type, c.nullable, c.comment) for c in row.columns] == [
            (c.id, c.name, type_to_sql(c.type), c.nullable, c.comment) for c in info.columns
        ]
    assert {r.table_kind for r in rows} == {"MANAGED", "EXTERNAL"}


def test_namespaces_and_columns(spark, lake) -> None:  # type: ignore[no-untyped-def]
    catalog: LakehouseCatalog = lake["catalog"]
    txn = catalog.begin()
    namespaces = read(spark, lake["location"], object="namespaces").collect()
    assert [r.namespace for r in namespaces] == txn.list_namespaces()
    assert namespaces[0].comment == "first" and namespaces[0].properties == {"team": "a"}
    columns = read(spark, lake["location"], object="columns", namespace="beta").collect()
    expected = [
        ("beta", t, i, c.name, c.id, type_to_sql(c.type), "YES" if c.nullable else "NO")
        for _, t in txn.list_tables("beta")
        for i, c in enumerate(txn.describe_table("beta", t).columns, start=1)
    ]
    assert [(r.namespace, r.table_name, r.ordinal_position, r.column_name, r.column_id, r.data_type,
             r.is_nullable) for r in columns] == expected  # fmt: skip (views CV3)
    assert read(spark, lake["location"], namespace="gamma").count() == len(txn.list_tables("gamma"))


def test_versions_are_the_catalog_history(spark, lake) -> None:  # type: ignore[no-untyped-def]
    catalog: LakehouseCatalog = lake["catalog"]
    rows = read(spark, lake["location"], object="versions").collect()
    history = catalog.versions()
    assert [(r.version, r.previous_version, r.rollback_from_version, r.changes) for r in rows] == [
        (v.version, v.previous_version, v.rollback_from_version, ", ".join(v.changes)) for v in history
    ]  # views CV3: the changes as text, as SQL shows them
    assert rows[0].created_at == dt.datetime.fromtimestamp(history[0].created_at_millis / 1000)
    older = read(spark, lake["location"], object="versions", version=5).collect()
    assert [r.version for r in older] == [5, 4, 3, 2, 1, 0]


def test_every_object_has_its_schema(spark, lake) -> None:  # type: ignore[no-untyped-def]
    for name, schema in SCHEMAS.items():
        assert read(spark, lake["location"], object=name).schema == schema


@pytest.mark.parametrize("name", ["namespaces", "tables", "columns", "versions"])
def test_every_view_shows_what_sql_shows(spark, lake, name) -> None:  # type: ignore[no-untyped-def]
    """views CV1-CV3: Spark and SQL present one definition, so every field both show has
    the same values, row for row, and the same SPEC 5 type."""
    from trinitylake_dbapi import views

    spark_view = views.SPARK[name]
    sql_key, sql_view = next((k, p) for k, p in views.SQL.items() if p.view is spark_view.view)
    shared = [(s, q) for s, source in spark_view.columns for q, other in sql_view.columns
              if not isinstance(source, views.Constant) and source == other]  # fmt: skip
    assert len(shared) >= 2
    spark_types = {c.name: c.type for c in spark_view.specs()}
    sql_types = {c.name: c.type for c in sql_view.specs()}
    assert all(spark_types[s] == sql_types[q] for s, q in shared)
    frame = read(spark, lake["location"], object=name)
    conn = trinitylake_dbapi.connect(lake["location"])
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT {', '.join(q for _, q in shared)} FROM {sql_key[0]}.{sql_key[1]}")
        from_sql = [tuple(row) for row in cur.fetchall()]
    finally:
        conn.close()
    from_spark = [tuple(row) for row in frame.select(*(s for s, _ in shared)).collect()]
    if name == "versions":  # instants: SQL shows UTC without a zone, Spark local time (CV4)
        at = [s for s, _ in shared].index("created_at")
        from_spark = [(*r[:at], r[at].astimezone(dt.timezone.utc).replace(tzinfo=None), *r[at + 1:])
                      for r in from_spark]  # fmt: skip
    assert sorted(from_spark, key=repr) == sorted(from_sql, key=repr)
    assert len(from_sql) > 0


@pytest.mark.parametrize(
    "options, message",
    [
        ({"object": "widgets"}, "unknown object"),
        ({"namespace": "nope"}, "does not exist"),
        ({"version": 100000}, "does not exist"),
        ({"object": "versions", "namespace": "alpha"}, "namespace applies"),
    ],
)
def test_bad_options_are_clear_errors(spark, lake, options, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Exception, match=message):
        read(spark, lake["location"], **options).collect()


def test_missing_location_is_a_clear_error(spark) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Exception, match="needs .option"):
        spark.read.format("trinitylake").load().collect()


def test_planning_reads_node_files_only(lake, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Definition files are read by executors: planning touches roots, nodes and the
    lakehouse definition, never a namespace or table definition."""
    read_paths: list[str] = []
    original = Storage.read

    def recording(self, path):  # type: ignore[no-untyped-def]
        read_paths.append(path)
        return original(self, path)

    monkeypatch.setattr(Storage, "read", recording)
    for name, extra in (("tables", {}), ("columns", {"namespace": "beta"}), ("namespaces", {}),
                        ("versions", {}), ("tables", {"namespace": "alpha", "version": "mid"})):
        source = TrinityLakeDataSource({"location": lake["location"], "object": name, **extra})
        partitions = source.reader(source.schema()).partitions()
        assert partitions
        if name == "tables" and not extra:
            assert len(partitions) > 1  # the key range is cut along the tree
    assert read_paths
    assert not [p for p in read_paths if p.endswith(".binpb") and not p.startswith("_lakehouse_def_")]
