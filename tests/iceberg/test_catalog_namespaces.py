"""Namespaces as PyIceberg users and SQL users see the same lakehouse (issue 35):
multi-level namespaces (iceberg.catalog P6), the lakehouse's ``default`` namespace
(P10), PyIceberg's wording (P11), and format version 1 tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sqlalchemy as sa
from hypothesis import given, settings, strategies as st
from deadlines import HANG_S
from pyiceberg.exceptions import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
)

import trinitylake_dbapi
from trinitylake_dbapi import errors
from trinitylake_dbapi.iceberg import TrinityLakeCatalog

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64())})


@pytest.fixture
def fresh(tmp_path: Path) -> TrinityLakeCatalog:
    """A catalog on a new local lakehouse."""
    return TrinityLakeCatalog("lake", uri=str(tmp_path / "lake"), create="true")


def sql(catalog: TrinityLakeCatalog, statement: str, params: Any = None) -> list[tuple]:
    conn = trinitylake_dbapi.connect(catalog.lakehouse.storage.root_uri, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute(statement, params) if params is not None else cur.execute(statement)
        return cur.fetchall() if cur.description else []
    finally:
        conn.close()


# -- the default namespace (P10) -----------------------------------------------------------


def test_sql_and_sqlalchemy_find_default_on_a_fresh_lakehouse(fresh: TrinityLakeCatalog) -> None:
    assert ("default",) in sql(fresh, "SHOW SCHEMAS")
    engine = sa.create_engine(f"trinitylake:///{fresh.lakehouse.storage.root_uri.removeprefix('file://')}")
    try:
        assert "default" in sa.inspect(engine).get_schema_names()
    finally:
        engine.dispose()
    sql(fresh, "CREATE TABLE default.t (id int8)")  # no CREATE SCHEMA first
    sql(fresh, "INSERT INTO t VALUES (1)")
    assert sql(fresh, "SELECT id FROM default.t") == [(1,)]


def test_pyiceberg_creates_default_once_on_a_fresh_lakehouse(fresh: TrinityLakeCatalog) -> None:
    assert fresh.list_namespaces() == [("default",)]
    fresh.create_namespace("default")  # claims the lakehouse's unclaimed default
    assert fresh.load_namespace_properties("default") == {"exists": "true"}
    with pytest.raises(NamespaceAlreadyExistsError, match="^Namespace default already exists"):
        fresh.create_namespace("default")
    fresh.create_table("default.t", ROWS.schema).append(ROWS)
    assert sql(fresh, "SELECT count(*) FROM default.t") == [(3,)]


def test_creating_default_keeps_its_properties_and_comment(fresh: TrinityLakeCatalog) -> None:
    fresh.create_namespace("default", {"owner": "ana", "comment": "shared"})
    assert fresh.load_namespace_properties("default") == {"owner": "ana", "comment": "shared"}
    with pytest.raises(NamespaceAlreadyExistsError):
        fresh.create_namespace("default", {"owner": "bob"})
    assert fresh.load_namespace_properties("default")["owner"] == "ana"


@pytest.mark.parametrize("use", [
    "CREATE TABLE default.t (id int8)",
    "ALTER NAMESPACE default SET PROPERTIES ('owner' = 'sql')",
    "COMMENT ON NAMESPACE default IS 'mine'",
])
def test_a_default_that_sql_used_is_not_created_again(fresh: TrinityLakeCatalog, use: str) -> None:
    """P10: only an unclaimed default (no property, comment or table) is claimed."""
    try:
        sql(fresh, use)
    except errors.ProgrammingError as e:  # a statement form this SQL does not have
        pytest.skip(f"{use}: {e}")
    with pytest.raises(NamespaceAlreadyExistsError):
        fresh.create_namespace("default")


def test_other_existing_namespaces_are_never_claimed(fresh: TrinityLakeCatalog) -> None:
    sql(fresh, "CREATE SCHEMA sales")
    with pytest.raises(NamespaceAlreadyExistsError, match="^Namespace sales already exists"):
        fresh.create_namespace("sales")


# -- wording and classes (P11) -------------------------------------------------------------


@pytest.mark.parametrize("empty", ["", (), ("",), ("", ""), " ", (" ",), "a.", ("a", " ")])
def test_an_empty_namespace_identifier_is_no_such_namespace(fresh: TrinityLakeCatalog, empty: Any) -> None:
    for call in (fresh.create_namespace, fresh.load_namespace_properties, fresh.drop_namespace):
        with pytest.raises(NoSuchNamespaceError):
            call(empty)


def test_pyiceberg_wording(fresh: TrinityLakeCatalog) -> None:
    with pytest.raises(NoSuchTableError, match="^Table does not exist: default.nope$"):
        fresh.load_table("default.nope")
    with pytest.raises(NoSuchTableError, match="^Table does not exist: a.b.nope$"):
        fresh.drop_table(("a", "b", "nope"))
    for call in (fresh.load_namespace_properties, fresh.list_tables, fresh.drop_namespace,
                 lambda ns: fresh.update_namespace_properties(ns, updates={"k": "v"})):
        with pytest.raises(NoSuchNamespaceError, match="^Namespace x.y does not exists"):
            call(("x", "y"))
    fresh.create_namespace(("x", "y"))
    fresh.create_table(("x", "y", "t"), ROWS.schema)
    with pytest.raises(NamespaceNotEmptyError, match="^Namespace x.y is not empty"):
        fresh.drop_namespace("x.y")
    with pytest.raises(NoSuchNamespaceError):
        fresh.create_table("t", ROWS.schema)  # no namespace


# -- null properties (P14) -----------------------------------------------------------------


_NAMES = st.sampled_from(["owner", "comment", "location", "k", "ünï", None])
_VALUES = st.one_of(st.none(), st.text(max_size=8))


@settings(max_examples=40, deadline=None)
@given(properties=st.dictionaries(_NAMES, _VALUES, max_size=4),
       levels=st.sampled_from([("ns",), ("a", "b"), ("default",)]))
def test_a_null_property_is_an_integrity_error_and_writes_nothing(
    tmp_path_factory: pytest.TempPathFactory, properties: dict, levels: tuple
) -> None:
    """P14: a None name or value, among any others, at create or update: the PEP 249
    IntegrityError that is also SQLAlchemy's (what PyIceberg's SqlCatalog raises), and
    no new lakehouse version; without one, the properties are kept as given."""
    catalog = TrinityLakeCatalog("lake", uri=str(tmp_path_factory.mktemp("lake")), create="true")
    has_null = any(k is None or v is None for k, v in properties.items())
    before = catalog.lakehouse.latest_version()
    if has_null:
        with pytest.raises(sa.exc.IntegrityError, match="must not be null") as raised:
            catalog.create_namespace(levels, properties)
        assert isinstance(raised.value, trinitylake_dbapi.IntegrityError)
        assert raised.value.code == "integrity_error" and raised.value.orig is raised.value
        assert catalog.lakehouse.latest_version() == before
        assert levels == ("default",) or not catalog.namespace_exists(levels)
        catalog.create_namespace(levels, {"x": "1"})
        before = catalog.lakehouse.latest_version()
        with pytest.raises(trinitylake_dbapi.IntegrityError, match=repr(levels[-1])[1:-1]):
            catalog.update_namespace_properties(levels, updates=properties)
        assert catalog.lakehouse.latest_version() == before
        assert catalog.load_namespace_properties(levels) == {"x": "1"}
    else:
        catalog.create_namespace(levels, properties)
        expected = properties or {"exists": "true"}
        assert catalog.load_namespace_properties(levels) == expected


def test_a_null_property_error_pickles_and_reads_plainly() -> None:
    import pickle

    from trinitylake_dbapi.iceberg.sqlcompat import NullPropertyError

    error = NullPropertyError("namespace 'ns': property 'k' = None: must not be null")
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == str(error) == "namespace 'ns': property 'k' = None: must not be null"
    assert isinstance(again, sa.exc.IntegrityError) and isinstance(again, errors.IntegrityError)


# -- multi-level namespaces (P6) -----------------------------------------------------------


def test_multi_level_namespaces_are_one_dotted_namespace(fresh: TrinityLakeCatalog) -> None:
    fresh.create_namespace(("com", "organization", "department"), {"team": "x"})
    fresh.create_namespace("com.other")
    assert fresh.namespace_exists("com") and fresh.namespace_exists(("com", "organization"))
    assert not fresh.namespace_exists("co") and not fresh.namespace_exists("com.org")
    assert fresh.list_namespaces() == [("com",), ("default",)]
    assert fresh.list_namespaces("com") == [("com", "organization"), ("com", "other")]
    assert fresh.list_namespaces("com.organization") == [("com", "organization", "department")]
    assert fresh.list_namespaces("com.organization.department") == []
    assert fresh.load_namespace_properties("com") == {}  # only namespaces below it exist
    assert fresh.list_tables("com") == []
    with pytest.raises(NamespaceNotEmptyError):
        fresh.drop_namespace("com")
    table = fresh.create_table("com.organization.department.t", ROWS.schema)
    assert table.name() == ("com", "organization", "department", "t")
    table.append(ROWS)
    assert fresh.list_tables("com.organization.department") == [("com", "organization", "department", "t")]
    # SQL sees one namespace, its name the joined levels, reached quoted.
    assert ("com.organization.department",) in sql(fresh, "SHOW SCHEMAS")
    assert sql(fresh, 'SELECT count(*) FROM "com.organization.department".t') == [(3,)]
    sql(fresh, 'CREATE TABLE "com.other".u (id int8)')
    assert fresh.list_tables(("com", "other")) == [("com", "other", "u")]
    fresh.rename_table("com.organization.department.t", "com.other.t2")
    assert fresh.load_table(("com", "other", "t2")).scan().to_arrow().num_rows == 3
    # a namespace becomes one of its own when created, then drops like any other
    fresh.create_namespace("com")
    assert fresh.load_namespace_properties("com") == {"exists": "true"}
    fresh.drop_namespace("com")
    assert fresh.namespace_exists("com")  # namespaces below it remain


def test_name_limits_apply_to_the_joined_name(fresh: TrinityLakeCatalog) -> None:
    level = "n" * 50
    fresh.create_namespace((level, "x"))  # 52 bytes
    with pytest.raises(errors.InvalidNameError, match="namespace"):
        fresh.create_namespace((level, level, "x"))  # 103 bytes > 100
    assert not fresh.namespace_exists((level, level, "x"))


@settings(max_examples=25)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "a_", "a%", "ab"]), min_size=1, max_size=3),
                min_size=1, max_size=6, unique_by=tuple))
def test_list_namespaces_matches_a_model(tmp_path_factory: pytest.TempPathFactory, created: list[list[str]]) -> None:
    """P6: list_namespaces(parent) is the next level of every namespace under parent,
    by whole levels (``a_`` and ``a%`` are not under ``a``), as SqlCatalog lists them."""
    catalog = TrinityLakeCatalog("lake", uri=str(tmp_path_factory.mktemp("lake")), create="true")
    for levels in created:
        catalog.create_namespace(tuple(levels))
    every = {tuple(levels) for levels in created} | {("default",)}
    prefixes = {ns[:i] for ns in every for i in range(1, len(ns) + 1)}
    for parent in [()] + sorted(prefixes):
        expected = sorted({ns[: len(parent) + 1] for ns in every if len(ns) > len(parent) and ns[: len(parent)] == parent})
        assert catalog.list_namespaces(parent) == expected
        if parent:
            assert catalog.namespace_exists(parent)
    assert not catalog.namespace_exists("zz")


# -- format version 1 tables ---------------------------------------------------------------


@pytest.mark.parametrize("merge", [False, True])
@pytest.mark.parametrize("format_version", ["1", "2"])
def test_appends_to_v1_and_v2_tables(fresh: TrinityLakeCatalog, format_version: str, merge: bool) -> None:
    """Format version 1 metadata has no sequence numbers: appends to it commit plainly
    (they failed with AttributeError, then were taken for stale and rebased)."""
    properties = {"format-version": format_version}
    if merge:
        properties.update({"commit.manifest-merge.enabled": "true", "commit.manifest.min-count-to-merge": "2"})
    table = fresh.create_table("default.t", ROWS.schema, properties=properties)
    for n in range(1, 5):
        table.append(ROWS)
        assert table.scan().to_arrow().num_rows == 3 * n
        assert fresh.load_table("default.t").scan().to_arrow().num_rows == 3 * n
    assert fresh.load_table("default.t").format_version == int(format_version)


def test_a_stale_merge_append_never_counts_rows_twice(fresh: TrinityLakeCatalog) -> None:
    """A merge-append's manifest carries the old head's entries: it is never rebased
    onto a newer head (P3), where those rows would count twice."""
    from pyiceberg.exceptions import CommitFailedException

    table = fresh.create_table("default.t", ROWS.schema, properties={
        "commit.manifest-merge.enabled": "true", "commit.manifest.min-count-to-merge": "2"})
    table.append(ROWS)
    stale = fresh.load_table("default.t")
    table.append(ROWS)
    try:
        stale.append(ROWS)
    except CommitFailedException:
        pass
    rows = fresh.load_table("default.t").scan().to_arrow().num_rows
    assert rows in (6, 9)


# -- lost races (P12) ----------------------------------------------------------------------


@pytest.mark.parametrize("what", ["namespace", "default", "table"])
def test_the_losers_of_concurrent_creates_see_already_exists(tmp_path: Path, what: str) -> None:
    """P12: of 6 catalogs (as 6 processes would open them) creating the same object at
    once, exactly one succeeds and every other gets the already-exists error, never a
    bare CommitFailedException."""
    import threading

    from pyiceberg.exceptions import TableAlreadyExistsError

    uri = str(tmp_path / "lake")
    TrinityLakeCatalog("setup", uri=uri, create="true").create_namespace("ns")
    catalogs = [TrinityLakeCatalog(f"c{i}", uri=uri) for i in range(6)]
    barrier = threading.Barrier(len(catalogs))
    outcomes: list[str] = []

    def create(catalog: TrinityLakeCatalog) -> None:
        barrier.wait(timeout=HANG_S)
        try:
            if what == "table":
                catalog.create_table("ns.t", ROWS.schema)
            else:
                catalog.create_namespace("default" if what == "default" else "sales")
            outcomes.append("created")
        except (NamespaceAlreadyExistsError, TableAlreadyExistsError):
            outcomes.append("exists")
        except Exception as e:  # noqa: BLE001 - recorded, and the assertion names it
            outcomes.append(repr(e))

    threads = [threading.Thread(target=create, args=(c,)) for c in catalogs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=HANG_S)
    assert sorted(outcomes) == ["created"] + ["exists"] * (len(catalogs) - 1), outcomes


@pytest.mark.parametrize("namespace", ["x.", ".y", "a..b"])
def test_sql_names_with_empty_levels_stay_reachable(fresh: TrinityLakeCatalog, namespace: str) -> None:
    """P6: a namespace SQL made with an empty level is listed with that empty level and
    reached again through what is listed; SQL's INSERT commits through the catalog (it
    failed with InternalError while table identifiers were checked as new namespaces)."""
    sql(fresh, f'CREATE SCHEMA "{namespace}"')
    sql(fresh, f'CREATE TABLE "{namespace}".t (id int8)')
    sql(fresh, f'INSERT INTO "{namespace}".t VALUES (1)')
    assert sql(fresh, f'SELECT count(*) FROM "{namespace}".t') == [(1,)]
    levels = tuple(namespace.split("."))
    assert fresh.list_tables(levels) == [levels + ("t",)]
    table = fresh.load_table(levels + ("t",))
    table.append(pa.table({"id": pa.array([2], pa.int64())}))
    table.refresh()
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    with pytest.raises(NoSuchNamespaceError):
        fresh.create_namespace(levels + ("z",))  # PyIceberg creates no empty level


def test_sqlalchemy_reflects_a_multi_level_namespace(fresh: TrinityLakeCatalog) -> None:
    """P6: SQLAlchemy sees the joined name as one schema and quotes it."""
    fresh.create_namespace(("com", "org"))
    fresh.create_table(("com", "org", "t"), ROWS.schema).append(ROWS)
    engine = sa.create_engine(f"trinitylake:///{fresh.lakehouse.storage.root_uri.removeprefix('file://')}")
    try:
        inspector = sa.inspect(engine)
        assert "com.org" in inspector.get_schema_names()
        assert inspector.get_table_names(schema="com.org") == ["t"]
        table = sa.Table("t", sa.MetaData(), autoload_with=engine, schema="com.org")
        assert 'FROM "com.org".t' in str(sa.select(table).compile(engine))
        with engine.connect() as conn:
            assert sorted(conn.execute(sa.select(table.c.id)).scalars()) == [1, 2, 3]
    finally:
        engine.dispose()
