"""Primary keys through the PyIceberg catalog (issue 36; iceberg.keys PK1-PK4): an
append or overwrite through TrinityLakeCatalog that would duplicate a key of a table
whose schema has identifier fields, or whose definition declares a PRIMARY KEY, is
IntegrityError naming the table, the key and one value; the table is unchanged and the
commit's files are deleted."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.expressions import EqualTo
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

import trinitylake_dbapi
from tests.deadlines import HANG_S
from tests.lakes import local_and_memory
from trinitylake_dbapi.errors import IntegrityError
from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog
from trinitylake_dbapi.iceberg.io import file_io_properties
from trinitylake_dbapi.iceberg.keys import existing_keys

IMPL = "trinitylake_dbapi.iceberg.catalog.TrinityLakeCatalog"
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])


def data(*ids: int, name: str = "x") -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "name": name} for i in ids], schema=ARROW)


@pytest.fixture
def catalog(lake: Any) -> TrinityLakeCatalog:
    properties = file_io_properties(lake.storage_options)
    return load_catalog("lake", **{"py-catalog-impl": IMPL, "uri": lake.location, "create": "true", **properties})


@pytest.fixture
def keyed(catalog: TrinityLakeCatalog) -> Any:
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType()),
                    identifier_field_ids=[1])  # fmt: skip
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema)
    table.append(data(1, 2, 3))
    return table


def ids(table: Any) -> list[int]:
    table.refresh()
    return sorted(table.scan().to_arrow().column("id").to_pylist())


@local_and_memory
@pytest.mark.parametrize(("rows", "value"), [((4, 4), "(4)"), ((5, 2), "(2)"), ((3,), "(3)")])
def test_an_append_duplicating_a_key_is_refused(catalog: TrinityLakeCatalog, keyed: Any, rows: tuple,
                                                value: str) -> None:  # fmt: skip
    at = catalog.lakehouse.latest_version()
    with pytest.raises(IntegrityError) as e:
        keyed.append(data(*rows))
    assert "ns.t" in str(e.value) and "(id)" in str(e.value) and value in str(e.value)
    assert ids(keyed) == [1, 2, 3] and catalog.lakehouse.latest_version() == at
    keyed.append(data(4, 5))
    assert ids(keyed) == [1, 2, 3, 4, 5]


@local_and_memory
def test_the_refused_commit_leaves_no_file(catalog: TrinityLakeCatalog, keyed: Any, lake: Any) -> None:
    before = lake.files()
    with pytest.raises(IntegrityError):
        keyed.append(data(7, 1))
    assert lake.files() == before


@local_and_memory
def test_overwrites_are_checked_on_what_remains(catalog: TrinityLakeCatalog, keyed: Any) -> None:
    keyed.overwrite(data(1, 2, 3, name="y"))  # every row replaced: the same keys again
    keyed.overwrite(data(2, 9), overwrite_filter=EqualTo("id", 2))  # 2 replaced, 9 new
    assert ids(keyed) == [1, 2, 3, 9]
    with pytest.raises(IntegrityError, match=r"\(1\)"):
        keyed.overwrite(data(1, 8), overwrite_filter=EqualTo("id", 2))
    keyed.delete(EqualTo("id", 1))
    keyed.append(data(1))
    assert ids(keyed) == [1, 2, 3, 9]


@local_and_memory
def test_a_key_declared_in_sql_is_enforced_on_pyiceberg_appends(catalog: TrinityLakeCatalog, lake: Any) -> None:
    conn = trinitylake_dbapi.connect(lake.location, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.users (id BIGINT PRIMARY KEY, name STRING)")
    cur.execute("INSERT INTO default.users VALUES (1, 'a')")
    table = catalog.load_table("default.users")
    with pytest.raises(IntegrityError, match=r"default\.users already holds key \(id\) = \(1\)"):
        table.append(data(1))
    cur.execute("SELECT count(*) FROM default.users")
    assert cur.fetchone() == (1,)


@local_and_memory
def test_existing_keys_finds_the_keys_a_table_holds(catalog: TrinityLakeCatalog, keyed: Any) -> None:
    keyed.append(data(10, 20))
    probe = pa.table({"id": pa.array([0, 2, 20, 21, 2], pa.int64())})
    found = existing_keys("ns.t", keyed.metadata, keyed.io, probe)
    assert sorted(found.column("id").to_pylist()) == [2, 20]
    many = pa.table({"id": pa.array(range(-500, 500), pa.int64())})  # past the IN list: ranges
    assert sorted(existing_keys("ns.t", keyed.metadata, keyed.io, many).column("id").to_pylist()) == [1, 2, 3, 10, 20]


def test_verify_reports_duplicate_keys_written_by_another_engine(tmp_path: Any) -> None:
    """PK6: a keyed table whose rows another engine wrote directly to Iceberg (here
    PyIceberg's own SqlCatalog, which does not enforce identifier fields), registered in
    the lakehouse: ``verify --data`` names the table, the key and a duplicate value;
    a table written through the project (keys enforced) verifies clean."""
    from trinitylake_dbapi.verify import verify

    location = str(tmp_path / "lake")
    catalog = load_catalog("lake", **{"py-catalog-impl": IMPL, "uri": location, "create": "true"})
    catalog.create_namespace("ns")
    catalog.register_table("ns.t", _written_by_sql_catalog(tmp_path))
    conn = trinitylake_dbapi.connect(location, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.clean (id BIGINT PRIMARY KEY, name STRING)")
    cur.execute("INSERT INTO default.clean VALUES (1, 'a'), (2, 'b')")
    assert verify(location).ok  # without --data the rows are not read
    report = verify(location, data=True)
    found = [p for p in report.problems if p.rule == "primary key"]
    assert len(found) == 1 and not report.ok, report.problems
    assert "ns.t" in found[0].message and "(id) = (2)" in found[0].message and "2 live rows" in found[0].message
    with pytest.raises(IntegrityError, match=r"\(4\)"):  # the project still refuses what it can see
        cur.execute("INSERT INTO ns.t VALUES (4, 'x')")
    cur.execute("INSERT INTO ns.t VALUES (5, 'x')")  # a new key: the old duplicate is verify's


def _written_by_sql_catalog(tmp_path: Any) -> str:
    """The metadata location of a table ns.t (identifier field id) that PyIceberg's own
    SqlCatalog wrote with key 2 twice. In a child process: SqlCatalog's models are
    SQLAlchemy declarative classes, which the dialect compliance suite unmaps
    (orm.clear_mappers()) in any worker process it shares (tests/orm_models.py)."""
    script = f"""
import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType
other = SqlCatalog("other", uri="sqlite:///{tmp_path}/other.db", warehouse="file://{tmp_path}/warehouse")
other.create_namespace("ns")
schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType()),
                identifier_field_ids=[1])
foreign = other.create_table("ns.t", schema)
arrow = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
foreign.append(pa.Table.from_pylist([{{"id": i, "name": "x"}} for i in (1, 2, 3)], schema=arrow))
foreign.append(pa.Table.from_pylist([{{"id": i, "name": "x"}} for i in (2, 4)], schema=arrow))  # 2 twice
print(foreign.metadata_location)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


@local_and_memory
def test_add_files_with_a_duplicate_key_is_refused_and_the_users_file_kept(catalog: TrinityLakeCatalog,
                                                                          keyed: Any, lake: Any) -> None:
    """A file without field ids (``add_files``: read through the name mapping) is checked
    like any other; refused, the user's file is left where it is (only the files the
    commit wrote are deleted: its manifest and manifest list)."""
    import pyarrow.parquet as pq

    path = f"{keyed.metadata.location}/data/mine.parquet"
    import fsspec

    with fsspec.open(path, "wb") as f:  # written by the user, not through the catalog's FileIO
        pq.write_table(data(8, 3), f)
    before = catalog.lakehouse.latest_version()
    with pytest.raises(IntegrityError, match=r"ns\.t already holds key \(id\) = \(3\)"):
        keyed.add_files([path])
    assert keyed.io.new_input(path).exists()
    assert catalog.lakehouse.latest_version() == before and ids(keyed) == [1, 2, 3]


def _branch_with(table: Any, *keys: int) -> int:
    """A branch ``b`` from the head, then an append of ``keys`` to it (PK3: a branch's
    commits are not checked); the branch's snapshot id."""
    table.refresh()
    table.manage_snapshots().create_branch(table.current_snapshot().snapshot_id, "b").commit()
    table.refresh()
    table.append(data(*keys, name="branch"), branch="b")
    table.refresh()
    return table.snapshot_by_name("b").snapshot_id


@local_and_memory
def test_moving_the_head_to_a_branch_snapshot_checks_the_rows_it_brings(catalog: TrinityLakeCatalog,
                                                                       keyed: Any) -> None:  # fmt: skip
    """PK3: a commit that moves the head (``main``) to an existing snapshot (a branch's,
    fast-forward) checks the rows that snapshot's data files bring to the head (those the
    old head had not), so a duplicate written on a branch, where nothing is checked,
    never reaches the head; nothing changes. Without a duplicate the move commits."""
    snapshot = _branch_with(keyed, 3)
    with pytest.raises(IntegrityError, match=r"ns\.t.*\(id\).*\(3\)"):
        keyed.manage_snapshots().set_current_snapshot(snapshot_id=snapshot).commit()
    assert ids(keyed) == [1, 2, 3]
    keyed.manage_snapshots().remove_branch("b").commit()
    snapshot = _branch_with(keyed, 4, 5)
    keyed.manage_snapshots().set_current_snapshot(snapshot_id=snapshot).commit()
    assert ids(keyed) == [1, 2, 3, 4, 5]

