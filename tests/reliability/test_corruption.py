"""Corruption: every kind of damaged file gives a PEP 249 DatabaseError that names the
file, through the DB-API and the catalog API, and nothing is written on top of the
corrupt state (issue 9, point 4).

"Nothing is written" is checked on the local disk itself: the set of files (temporary
ones included) and every file's bytes are unchanged after the failed statements.

The latest-version hint is only a hint (SPEC 7): garbage or a missing hint is not an
error, and the lakehouse works as before (``verify`` reports it as a warning).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from typing import Any, Callable

import pytest

import trinitylake_dbapi
from reliability_helpers import SMALL_TREE, build_lake, columns, local_files
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.errors import CorruptFileError, DatabaseError
from trinitylake_dbapi.format import keys as keyfmt
from trinitylake_dbapi.format import paths
from trinitylake_dbapi.format.definitions import LakehouseDef, encode
from trinitylake_dbapi.format.nodefile import decode_node_file
from trinitylake_dbapi.storage import Storage
from trinitylake_dbapi.transaction import begin
from trinitylake_dbapi.verify import verify


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> str:
    location = str(tmp_path_factory.mktemp("corrupt") / "lake")
    build_lake(location, tables=60)
    return location


@pytest.fixture
def lake(template: str, tmp_path: Any) -> str:
    location = str(tmp_path / "lake")
    shutil.copytree(template, location, copy_function=os.link)  # writes replace, never edit
    return location


def fingerprint(location: str) -> dict[str, str]:
    out = {}
    for name in local_files(location):
        with open(os.path.join(location, name), "rb") as f:
            out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


def node_on_path_of(location: str, key: str) -> str:
    """The non-root node just below the root on the way to ``key``."""
    catalog = LakehouseCatalog(location)
    root = catalog.lakehouse.snapshot().root
    import bisect

    assert root.children, "the template lakehouse must have more than one level"
    assert key not in root.keys and key not in {m.key for m in root.buffer}, "the root holds it"
    return root.children[bisect.bisect_left(root.keys, key)]


def table_key(table: str, namespace: str = "ns") -> str:
    return keyfmt.KeyCodec(20, 20).table_key(namespace, table)


def definition_of(location: str, namespace: str, table: str) -> str:
    return LakehouseCatalog(location).begin().describe_table(namespace, table).definition_path


def latest_root(location: str) -> str:
    return paths.root_node_path(LakehouseCatalog(location).latest_version())


def write(location: str, path: str, data: bytes) -> None:
    Storage(location).write(path, data)


def _not_arrow(location: str, path: str) -> None:
    write(location, path, b"definitely not an arrow file")


def _truncate(location: str, path: str) -> None:
    data = Storage(location).read(path)
    write(location, path, data[: len(data) // 2])


def _wrong_schema(location: str, path: str) -> None:
    import pyarrow as pa
    import pyarrow.ipc as ipc

    table = pa.table({"key": pa.array([1], pa.int64()), "value": ["x"], "pnode": [None]})
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    write(location, path, sink.getvalue().to_pybytes())


def _bad_protobuf(location: str, path: str) -> None:
    write(location, path, b"\xff\xfe\xfd")


def _delete(location: str, path: str) -> None:
    Storage(location).delete(path)


def _major_version(location: str, path: str) -> None:
    definition = LakehouseDef.FromString(Storage(location).read(path))
    definition.major_version = 7
    write(location, path, encode(definition))


def lakehouse_def(location: str) -> str:
    return LakehouseCatalog(location).lakehouse.snapshot().lakehouse_def_path


# (name, file to damage, damage, statements that must fail naming the file); the first
# statement that writes is also run through the catalog API.
CASES: list[tuple[str, Callable[[str], str], Callable[[str, str], None], list[str]]] = [
    ("truncated latest root", latest_root, _truncate,
     ["SHOW NAMESPACES", "CREATE NAMESPACE fresh"]),
    ("latest root not Arrow", latest_root, _not_arrow,
     ["SHOW TABLES IN ns", "CREATE TABLE ns.zz (id BIGINT)"]),
    ("node not Arrow", lambda loc: node_on_path_of(loc, table_key("t011")), _not_arrow,
     ["DESCRIBE ns.t011", "CREATE TABLE ns.t011x (id BIGINT)", "SHOW TABLES IN ns"]),
    ("truncated node", lambda loc: node_on_path_of(loc, table_key("t011")), _truncate,
     ["DESCRIBE ns.t011", "ALTER TABLE ns.t011 ADD COLUMN z BIGINT"]),
    ("node with a wrong schema", lambda loc: node_on_path_of(loc, table_key("t011")),
     _wrong_schema, ["DESCRIBE ns.t011", "DROP TABLE ns.t011"]),
    ("invalid protobuf table definition", lambda loc: definition_of(loc, "ns", "t012"),
     _bad_protobuf, ["DESCRIBE ns.t012", "ALTER TABLE ns.t012 ADD COLUMN z BIGINT"]),
    ("missing table definition", lambda loc: definition_of(loc, "ns", "t013"), _delete,
     ["DESCRIBE ns.t013", "ALTER TABLE ns.t013 RENAME TO ns.t013b"]),
    ("unknown major version", lakehouse_def, _major_version,
     ["SHOW NAMESPACES", "CREATE NAMESPACE fresh"]),
    ("invalid lakehouse definition", lakehouse_def, _bad_protobuf,
     ["SHOW NAMESPACES", "CREATE NAMESPACE fresh"]),
    ("missing lakehouse definition", lakehouse_def, _delete,
     ["SHOW NAMESPACES", "CREATE NAMESPACE fresh"]),
]


def _run(location: str, sql: str, **kwargs: Any) -> None:
    conn = trinitylake_dbapi.connect(location, **kwargs)
    try:
        conn.cursor().execute(sql)
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_corruption_gives_a_database_error_naming_the_file_and_writes_nothing(
    lake: str, name: str
) -> None:
    _, target, damage, statements = next(c for c in CASES if c[0] == name)
    path = target(lake)
    damage(lake, path)
    before = fingerprint(lake)
    for sql in statements:
        for options in ({}, {"autocommit": True}, {"create": True}):
            with pytest.raises(DatabaseError) as raised:
                _run(lake, sql, **options)
            assert path in str(raised.value), (sql, str(raised.value))
    # the catalog API too: a write transaction fails before writing
    writes = {"CREATE NAMESPACE fresh": lambda t: t.create_namespace("fresh"),
              "CREATE TABLE ns.zz (id BIGINT)": lambda t: t.create_table("ns", "zz", columns("id")),
              "CREATE TABLE ns.t011x (id BIGINT)":
                  lambda t: t.create_table("ns", "t011x", columns("id")),
              "ALTER TABLE ns.t011 ADD COLUMN z BIGINT":
                  lambda t: t.add_columns("ns", "t011", columns("z")),
              "DROP TABLE ns.t011": lambda t: t.drop_table("ns", "t011"),
              "ALTER TABLE ns.t012 ADD COLUMN z BIGINT":
                  lambda t: t.add_columns("ns", "t012", columns("z")),
              "ALTER TABLE ns.t013 RENAME TO ns.t013b":
                  lambda t: t.rename_table("ns", "t013", "ns", "t013b")}
    action = next(writes[sql] for sql in statements if sql in writes)
    with pytest.raises(DatabaseError) as raised:
        txn = LakehouseCatalog(lake).begin()
        action(txn)
        txn.commit()
    assert path in str(raised.value), str(raised.value)
    assert fingerprint(lake) == before
    # and verify names the same file
    report = verify(lake)
    assert not report.ok and path in {p.path for p in report.errors}, report.text()


def test_a_corrupt_old_version_leaves_the_latest_usable(lake: str) -> None:
    catalog = LakehouseCatalog(lake)
    old = paths.root_node_path(2)
    _not_arrow(lake, old)
    with pytest.raises(DatabaseError, match=old):
        _run(lake, "SHOW NAMESPACES", version=2)
    _run(lake, "CREATE NAMESPACE fresh")
    assert "fresh" in catalog.begin().list_namespaces()


def test_a_child_pointer_out_of_the_root_is_refused_before_any_io(lake: str) -> None:
    from trinitylake_dbapi.format.nodefile import NodeFile, encode_node_file

    root_path = latest_root(lake)
    root = decode_node_file(Storage(lake).read(root_path), root_path)
    evil = NodeFile(root.order, root.system, root.keys, root.values,
                    ("../../../etc/passwd", *root.children[1:]), root.buffer)
    write(lake, root_path, encode_node_file(evil))
    before = fingerprint(lake)
    with pytest.raises(DatabaseError, match=r"\.\./\.\./\.\./etc/passwd"):
        _run(lake, "SHOW TABLES")
    assert fingerprint(lake) == before


@pytest.mark.parametrize("hint", [None, b"garbage\x00\xff", b"-1", b"4294967296", b"999999"])
def test_a_bad_hint_is_only_a_hint(lake: str, hint: bytes | None) -> None:
    catalog = LakehouseCatalog(lake)
    latest = catalog.latest_version()
    if hint is None:
        _delete(lake, paths.LATEST_HINT_PATH)
    else:
        write(lake, paths.LATEST_HINT_PATH, hint)
    conn = trinitylake_dbapi.connect(lake, autocommit=True)
    assert ("ns",) in conn.cursor().execute("SHOW NAMESPACES").fetchall()
    conn.cursor().execute("CREATE NAMESPACE fresh")
    conn.close()
    assert LakehouseCatalog(lake).latest_version() == latest + 1
    assert Storage(lake).read(paths.LATEST_HINT_PATH) == str(latest + 1).encode()
    assert verify(lake).ok


def test_a_lakehouse_created_over_a_corrupt_one_is_refused(lake: str) -> None:
    """connect(create=True) on a location whose roots are corrupt must not start a
    new lakehouse there (it would hide the old one)."""
    _not_arrow(lake, latest_root(lake))
    before = fingerprint(lake)
    with pytest.raises(DatabaseError):
        _run(lake, "CREATE NAMESPACE x", create=True, lakehouse_options=SMALL_TREE)
    assert fingerprint(lake) == before


def test_a_commit_that_meets_a_corrupt_node_writes_nothing(lake: str) -> None:
    """The corrupt node is met only by the flush inside the commit (the transaction
    itself read nothing): the commit must fail before its first file is written, not
    after writing its definition files (C1)."""
    from trinitylake_dbapi.format.definitions import TableDef

    catalog = LakehouseCatalog(lake)
    txn = catalog.begin()  # a big commit: its own messages stay in the root (SPEC 6)...
    for i in range(40):
        txn.create_table("ns", f"big{i:02d}", columns("id"))
    txn.commit()
    snapshot = catalog.lakehouse.snapshot()
    for child in snapshot.root.children:  # ...so the next commit must flush them
        _not_arrow(lake, child)
    before = fingerprint(lake)
    txn = begin(LakehouseCatalog(lake).lakehouse)  # a fresh process's view: no cached node
    codec = keyfmt.KeyCodec(20, 20)
    path = paths.new_table_def_path("ns", "new")
    txn.stage_file(path, encode(TableDef(name="new")))
    txn.put(codec.table_key("ns", "new"), path)
    with pytest.raises(DatabaseError) as raised:
        txn.commit()
    assert any(child in str(raised.value) for child in snapshot.root.children), str(raised.value)
    assert fingerprint(lake) == before


@pytest.mark.parametrize("target", ["itself", "the root"])
def test_a_cycle_of_child_pointers_is_a_corrupt_file_not_an_endless_loop(lake: str, target: str) -> None:
    # Issue 15, item 9 (tree invariant T9): reads and commits spun at 100 % CPU, scans
    # raised RecursionError.
    from trinitylake_dbapi.format.nodefile import NodeFile, decode_node_file, encode_node_file

    node_path = node_on_path_of(lake, table_key("t011"))
    node = decode_node_file(Storage(lake).read(node_path), node_path)
    back = node_path if target == "itself" else latest_root(lake)
    cyclic = NodeFile(node.order, node.system, node.keys, node.values,
                      tuple(back for _ in range(len(node.keys) + 1)), node.buffer)
    write(lake, node_path, encode_node_file(cyclic))
    before = fingerprint(lake)
    for sql in ("DESCRIBE ns.t011", "SHOW TABLES IN ns", "SELECT * FROM information_schema.tables",
                "CREATE TABLE ns.t011x (id BIGINT)"):
        with pytest.raises(CorruptFileError, match=r"T9") as raised:
            _run(lake, sql)
        assert node_path in str(raised.value), sql
    assert fingerprint(lake) == before
    report = verify(lake)
    assert not report.ok and any(p.path == node_path for p in report.errors)


def test_a_child_pointer_that_is_not_a_path_names_the_node_that_holds_it(lake: str) -> None:
    # Issue 15, item 12: the error named the bad pointer but not the file holding it.
    from trinitylake_dbapi.format.nodefile import NodeFile, decode_node_file, encode_node_file

    root_path = latest_root(lake)
    root = decode_node_file(Storage(lake).read(root_path), root_path)
    bad = NodeFile(root.order, root.system, root.keys, root.values,
                   tuple("../../etc/passwd" for _ in root.children), root.buffer)
    write(lake, root_path, encode_node_file(bad))
    with pytest.raises(CorruptFileError, match=r"child pointer '../../etc/passwd' is not a valid path") as raised:
        _run(lake, "DESCRIBE ns.t011")
    assert root_path in str(raised.value)


def test_a_root_whose_previous_root_is_not_the_version_before_is_corrupt(lake: str) -> None:
    # Issue 15, item 11 (transaction.py H0).
    from trinitylake_dbapi.format.nodefile import NodeFile, encode_node_file

    root_path = latest_root(lake)
    root = decode_node_file(Storage(lake).read(root_path), root_path)
    wrong = dict(root.system, **{keyfmt.PREVIOUS_ROOT: paths.root_node_path(0)})
    write(lake, root_path, encode_node_file(NodeFile(root.order, wrong, root.keys, root.values,
                                                     root.children, root.buffer)))
    before = fingerprint(lake)
    for sql in ("SHOW NAMESPACES", "CREATE NAMESPACE fresh"):
        with pytest.raises(CorruptFileError, match="previous_root") as raised:
            _run(lake, sql)
        assert root_path in str(raised.value)
    assert fingerprint(lake) == before


def test_a_definition_that_disagrees_with_its_key_is_corrupt(lake: str) -> None:
    # Issue 15, item 11 (catalog rule K7): another table's or namespace's definition, or
    # a definition with another name, behind a key.
    from trinitylake_dbapi.format.definitions import decode_table_def

    t012 = definition_of(lake, "ns", "t012")
    renamed = decode_table_def(Storage(lake).read(t012), t012)
    renamed.name = "someone_else"
    write(lake, t012, encode(renamed))
    with pytest.raises(CorruptFileError, match="names 'someone_else', but the key that points at it is table 'ns.t012'") as raised:
        _run(lake, "DESCRIBE ns.t012")
    assert t012 in str(raised.value)
    # a namespace key pointing at a table definition
    catalog = LakehouseCatalog(lake)
    txn = catalog.begin()
    codec = keyfmt.KeyCodec(20, 20)
    txn._txn.put(codec.namespace_key("other"), definition_of(lake, "ns", "t013"))
    with pytest.raises(CorruptFileError, match="not a valid NamespaceDef") as raised:
        txn.describe_namespace("other")
    assert definition_of(lake, "ns", "t013") in str(raised.value)
