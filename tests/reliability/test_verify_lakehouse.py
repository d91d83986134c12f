"""``verify``: a clean lakehouse verifies, and each way of corrupting one is reported
precisely, naming the file and the rule (issue 9, point 3)."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from typing import Any, Callable

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from reliability_helpers import build_lake, columns
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.format import keys as keyfmt
from trinitylake_dbapi.format import paths
from trinitylake_dbapi.format.definitions import (
    LakehouseDef,
    NamespaceDef,
    TableDef,
    encode,
)
from trinitylake_dbapi.format.nodefile import Message, NodeFile, decode_node_file, encode_node_file
from trinitylake_dbapi.storage import Storage
from trinitylake_dbapi.transaction import begin
from trinitylake_dbapi.verify import Problem, VerifyReport, verify


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> str:
    location = str(tmp_path_factory.mktemp("template") / "lake")
    build_lake(location)
    return location


class Lake:
    """A private copy of the template lakehouse, with tools to corrupt it."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.storage = Storage(location)
        self.catalog = LakehouseCatalog(location)
        self.snapshot = self.catalog.lakehouse.snapshot()
        self.latest = self.snapshot.version
        self.nodes = [(p, n, d) for p, n, d in self.snapshot.tree.walk() if p is not None]
        self.codec = keyfmt.KeyCodec(20, 20)

    def root_path(self, version: int | None = None) -> str:
        return paths.root_node_path(self.latest if version is None else version)

    def node(self, path: str) -> NodeFile:
        return decode_node_file(self.storage.read(path), path)

    def rewrite(self, path: str, **changes: Any) -> None:
        node = self.node(path)
        fields = {f: getattr(node, f) for f in ("order", "system", "keys", "values", "children", "buffer")}
        fields.update(changes)
        self.storage.write(path, encode_node_file(NodeFile(**fields)))

    def leaf(self, predicate: Callable[[NodeFile], bool] = lambda n: True) -> tuple[str, str, int]:
        """(leaf path, parent path, index in parent) of the first leaf matching."""
        parents: dict[str, tuple[str, int]] = {}
        root = self.root_path()
        for child_index, child in enumerate(self.snapshot.root.children):
            parents[child] = (root, child_index)
        for path, node, _ in self.nodes:
            for index, child in enumerate(node.children):
                parents[child] = (path, index)
            if node.is_leaf and predicate(node):
                return (path, *parents[path])
        raise AssertionError("no such leaf")

    def internal(self) -> str:
        return next(p for p, n, _ in self.nodes if not n.is_leaf)

    def definition(self, namespace: str, table: str | None = None) -> str:
        txn = self.catalog.begin()
        if table is not None:
            return txn.describe_table(namespace, table).definition_path
        return txn._txn.get(self.codec.namespace_key(namespace))

    def lakehouse_def_path(self) -> str:
        return self.snapshot.lakehouse_def_path


@pytest.fixture
def lake(template: str, tmp_path: Any) -> Lake:
    location = str(tmp_path / "lake")
    # Hard links are safe: Storage.write replaces a file (a new inode), never edits it.
    shutil.copytree(template, location, copy_function=os.link)
    return Lake(location)


def errors(report: VerifyReport) -> set[tuple[str, str]]:
    return {(p.path, p.rule) for p in report.errors}


def warnings(report: VerifyReport, rule: str | None = None) -> set[tuple[str, str]]:
    return {(p.path, p.rule) for p in report.warnings if rule is None or p.rule == rule}


def only_error(report: VerifyReport) -> Problem:
    assert len(report.errors) == 1, report.text()
    return report.errors[0]


# --- a clean lakehouse ---------------------------------------------------------------------


def _raw_table(node: NodeFile, drop: str | None = None) -> pa.Table:
    """The Arrow table of a node file, optionally without one system row."""
    table = ipc.open_file(pa.py_buffer(encode_node_file(node))).read_all()
    if drop is None:
        return table
    keep = [i for i, key in enumerate(table.column("key").to_pylist()) if key != drop]
    return table.take(pa.array(keep))


def _arrow(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


class RecordingStorage(Storage):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read_paths: list[str] = []

    def read(self, path: str) -> bytes:
        self.read_paths.append(path)
        return super().read(path)


@pytest.mark.parametrize("all_versions", [False, True])
def test_a_clean_lakehouse_verifies_with_no_problem_and_reads_each_file_once(
    lake: Lake, all_versions: bool
) -> None:
    storage = RecordingStorage(lake.location)
    report = verify(storage, all_versions=all_versions)
    assert report.ok and report.problems == [], report.text()
    assert report.versions == list(range(lake.latest + 1))
    assert report.orphans == []
    counts = Counter(p for p in storage.read_paths if p != paths.LATEST_HINT_PATH)
    assert counts and max(counts.values()) == 1 + (report.extra_reads > 0), counts.most_common(3)
    reads = sum(counts.values())
    assert reads == report.roots_read + report.nodes_read + report.definitions_read + report.extra_reads
    assert report.roots_read == lake.latest + 1
    # every node file in the lakehouse was read exactly once (shared subtrees included)
    nodes = [p for p in storage.list() if "-node-" in p]
    assert report.nodes_read == len(nodes) > 40
    if all_versions:  # every definition file ever written is parsed
        definitions = [p for p in storage.list() if p.endswith(".binpb")]
        assert report.definitions_read == len(definitions)
        assert report.extra_reads > 0  # the rollback version's state is re-scanned
    else:
        assert report.extra_reads == 0


def test_verify_takes_a_location_a_storage_a_lakehouse_or_a_catalog(lake: Lake) -> None:
    for target in (lake.location, lake.storage, lake.catalog.lakehouse, lake.catalog):
        assert verify(target).ok
    with pytest.raises(TypeError, match="root URI"):
        verify(42)


def test_no_lakehouse_at_the_location(tmp_path: Any) -> None:
    report = verify(str(tmp_path / "nothing"))
    assert errors(report) == {(paths.root_node_path(0), "SPEC 7")}
    assert "no lakehouse" in report.errors[0].message


def test_report_text_lists_problems_then_a_summary(lake: Lake) -> None:
    leaf, _, _ = lake.leaf()
    lake.storage.write(leaf, lake.storage.read(leaf)[:100])
    report = verify(lake.location)
    text = report.text().splitlines()
    assert text[0].startswith(f"ERROR [SPEC 4] {leaf}: ")
    assert text[-1].startswith("INVALID: ") and "1 errors" in text[-1]


# --- SPEC 4: node files ----------------------------------------------------------------------


def test_truncated_node_file(lake: Lake) -> None:
    leaf, _, _ = lake.leaf()
    lake.storage.write(leaf, lake.storage.read(leaf)[:-40])
    problem = only_error(verify(lake.location))
    assert (problem.path, problem.rule) == (leaf, "SPEC 4")
    assert "not an Arrow IPC file" in problem.message


def test_root_that_is_not_an_arrow_file(lake: Lake) -> None:
    root = lake.root_path()
    lake.storage.write(root, b"PAR1 this is not arrow")
    report = verify(lake.location)
    assert (root, "SPEC 4") in errors(report)
    # everything only that root reached is now unreachable: orphans, not errors
    assert errors(report) == {(root, "SPEC 4")}
    assert report.orphans


def test_node_file_with_a_wrong_schema(lake: Lake) -> None:
    node = lake.internal()
    table = pa.table({"key": pa.array([1, 2], pa.int64()), "value": ["a", "b"], "pnode": [None, None]})
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    lake.storage.write(node, sink.getvalue().to_pybytes())
    report = verify(lake.location)
    assert (node, "SPEC 4") in errors(report)
    assert "column 'key' has type int64" in next(p.message for p in report.errors if p.path == node)
    assert {rule for _, rule in errors(report)} == {"SPEC 4"}


def test_node_whose_key_table_has_the_wrong_order(lake: Lake) -> None:
    leaf, _, _ = lake.leaf()
    lake.rewrite(leaf, order=5)
    problem = only_error(verify(lake.location))
    assert (problem.path, problem.rule) == (leaf, "SPEC 4")
    assert "5 rows, the tree order is 4" in problem.message


# --- tree invariants ---------------------------------------------------------------------------


def test_t1_more_children_than_keys_plus_one(lake: Lake) -> None:
    # A child pointer sits on a key table row: one more child than keys + 1 means a
    # row with a pnode but no key, which the node layout itself forbids.
    node = lake.internal()
    data = lake.node(node)
    table = _raw_table(data)
    pnodes = table.column("pnode").to_pylist()
    first_empty = len(data.system) + 1 + len(data.keys)
    pnodes[first_empty] = data.children[0]
    lake.storage.write(node, _arrow(table.set_column(2, "pnode", pa.array(pnodes, pa.string()))))
    report = verify(lake.location)
    assert {rule for _, rule in errors(report)} == {"SPEC 4"}
    assert (node, "SPEC 4") in errors(report)


def test_t8_node_without_n_keys(lake: Lake) -> None:
    leaf, _, _ = lake.leaf()
    data = lake.node(leaf)
    lake.storage.write(leaf, _arrow(_raw_table(data, drop="n_keys")))
    problem = only_error(verify(lake.location))
    assert (problem.path, problem.rule) == (leaf, "T8")
    assert "n_keys" in problem.message


def test_t2_leaves_at_different_depths(lake: Lake) -> None:
    leaf, parent, _ = lake.leaf(lambda n: len(n.keys) == 3)
    node = lake.node(leaf)
    created = node.system
    left, right = paths.new_node_path(), paths.new_node_path()
    lake.storage.write(left, encode_node_file(NodeFile(4, created, node.keys[:1], node.values[:1])))
    lake.storage.write(right, encode_node_file(NodeFile(4, created, node.keys[2:], node.values[2:])))
    lake.rewrite(leaf, keys=node.keys[1:2], values=node.values[1:2], children=(left, right))
    report = verify(lake.location)
    assert {rule for _, rule in errors(report)} == {"T2"}
    assert (parent, "T2") in errors(report)


def _tables_only(node: NodeFile) -> bool:
    """A leaf holding only tables of namespace 'ns'."""
    return bool(node.keys) and all(key.startswith("C===" + "ns".ljust(20)) for key in node.keys)


def test_t3_underfull_node(lake: Lake) -> None:
    leaf, _, _ = lake.leaf(_tables_only)
    lake.rewrite(leaf, keys=(), values=())
    report = verify(lake.location)
    assert errors(report) == {(leaf, "T3")}
    assert "0 keys, fewer than ceil(N/2)-1 = 1" in report.errors[0].message


def test_t4_key_outside_its_range(lake: Lake) -> None:
    leaf, parent, index = lake.leaf(_tables_only)  # ends below the key of 'ns'.'zzz' 
    node = lake.node(leaf)
    key = lake.codec.table_key("ns", "zzz")
    path = paths.new_table_def_path("ns", "zzz")
    lake.storage.write(path, encode(TableDef(name="zzz")))
    lake.rewrite(leaf, keys=(*node.keys[:-1], key), values=(*node.values[:-1], path))
    report = verify(lake.location)
    assert {rule for _, rule in errors(report)} == {"T4"}
    assert (parent, "T4") in errors(report)
    message = next(p.message for p in report.errors if p.path == parent)
    assert f"child {index} ({leaf})" in message and "outside its range" in message


def test_t5_non_root_leaf_with_a_buffer(lake: Lake) -> None:
    leaf, _, _ = lake.leaf()
    node = lake.node(leaf)
    lake.rewrite(leaf, buffer=(Message(node.keys[0], None, "1"),))
    report = verify(lake.location)
    assert errors(report) == {(leaf, "T5")}


def test_t5_buffer_over_capacity(lake: Lake) -> None:
    node = lake.internal()
    data = lake.node(node)
    low = data.keys[0]
    # deletes of keys just below the first separator: inside the node's range only if
    # the node is not the leftmost; use keys equal to existing ones of its first child
    child = lake.node(data.children[0])
    key = child.keys[0]
    flood = tuple(Message(key, None, "1") for _ in range(200))
    lake.rewrite(node, buffer=data.buffer + flood)
    report = verify(lake.location)
    assert (node, "T5") in errors(report), report.text()
    assert low


def test_t6_messages_out_of_order(lake: Lake) -> None:
    node = lake.internal()
    data = lake.node(node)
    key = lake.node(data.children[0]).keys[0]
    lake.rewrite(node, buffer=(*data.buffer, Message(key, None, "5"), Message(key, None, "3")))
    report = verify(lake.location)
    assert errors(report) == {(node, "T6")}
    assert "not in the order they were applied" in report.errors[0].message


def test_t6_message_from_a_future_version(lake: Lake) -> None:
    node = lake.internal()
    data = lake.node(node)
    key = lake.node(data.children[0]).keys[0]
    lake.rewrite(node, buffer=(*data.buffer, Message(key, None, "9999")))
    report = verify(lake.location)
    assert (node, "T6") in errors(report)
    assert {rule for _, rule in errors(report)} == {"T6"}


def test_t7_a_cycle(lake: Lake) -> None:
    node = lake.internal()
    data = lake.node(node)
    lake.rewrite(node, children=(node, *data.children[1:]))
    report = verify(lake.location)
    assert (node, "T7") in errors(report)
    assert "cycle" in next(p.message for p in report.errors if p.rule == "T7")


def test_t7_a_child_referenced_twice(lake: Lake) -> None:
    node = lake.internal()
    data = lake.node(node)
    lake.rewrite(node, children=(data.children[1], *data.children[1:]))
    report = verify(lake.location)
    assert (node, "T7") in errors(report)


def test_t8_node_without_created_at_millis(lake: Lake) -> None:
    leaf, _, _ = lake.leaf()
    node = lake.node(leaf)
    lake.rewrite(leaf, system={k: v for k, v in node.system.items() if k != "created_at_millis"})
    problem = only_error(verify(lake.location))
    assert (problem.path, problem.rule) == (leaf, "T8")


# --- SPEC 2 and 3: names and keys -----------------------------------------------------------


def test_child_pointer_that_escapes_the_root(lake: Lake) -> None:
    node = lake.internal()
    data = lake.node(node)
    lake.rewrite(node, children=("../../etc/passwd", *data.children[1:]))
    report = verify(lake.location)
    assert errors(report) == {(node, "SPEC 2")}
    assert "'..'" in report.errors[0].message


def test_node_with_a_wrong_hash_prefix(lake: Lake) -> None:
    leaf, parent, index = lake.leaf()
    good = leaf.split("-", 1)[1]
    bad = "0000/0000/0000/00000000-" + good
    if bad == leaf:
        bad = "1111/1111/1111/11111111-" + good
    lake.storage.write(bad, lake.storage.read(leaf))
    lake.storage.delete(leaf)
    if parent == lake.root_path():
        pytest.skip("the leaf hangs from the root")
    node = lake.node(parent)
    children = list(node.children)
    children[index] = bad
    lake.rewrite(parent, children=tuple(children))
    report = verify(lake.location)
    assert (bad, "SPEC 2") in errors(report)  # the file's own name
    assert (parent, "SPEC 2") in errors(report)  # the pointer to it
    assert "MurmurHash3" in report.errors[0].message


def test_key_that_is_not_an_object_key(lake: Lake) -> None:
    leaf, _, _ = lake.leaf()
    node = lake.node(leaf)
    lake.rewrite(leaf, keys=(node.keys[0][:-1] + "\x01", *node.keys[1:]))
    report = verify(lake.location)
    assert (leaf, "SPEC 3") in errors(report)


def test_an_entry_repeated_by_many_roots_is_checked_once(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    """verify.local: a valid key and value repeated by consecutive roots are checked by
    rules.entry_problem once per verify (before: once per root holding them)."""
    from trinitylake_dbapi.tree import node_entries
    from trinitylake_dbapi.verify import local, rules

    checked: list[tuple[str, str | None]] = []
    original = rules.entry_problem

    def counting(path: str, key: str, value: str | None, codec: Any) -> Any:
        checked.append((key, value))
        return original(path, key, value, codec)

    monkeypatch.setattr(local.rules, "entry_problem", counting)
    for all_versions in (False, True):
        checked.clear()
        assert verify(lake.location, all_versions=all_versions).ok
        held = [e for v in range(lake.latest + 1) for e in node_entries(lake.node(lake.root_path(v)))]
        assert len(held) > len(set(held))  # roots repeat entries
        assert Counter(checked).most_common(1)[0][1] == 1
        assert set(held) <= set(checked)


def test_a_bad_entry_repeated_by_two_roots_is_reported_in_each(lake: Lake) -> None:
    """The check of an entry is kept only when it passed: a bad one is reported in
    every root that holds it."""
    from trinitylake_dbapi.tree import node_entries

    shared = None
    for v in range(lake.latest, 0, -1):
        newer, older = lake.node(lake.root_path(v)), lake.node(lake.root_path(v - 1))
        common = set(node_entries(newer)) & set(node_entries(older))
        if any(key in newer.keys and key in older.keys for key, _ in common):
            shared = v
            break
    assert shared is not None, "no two consecutive roots share a key"
    key = next(k for k, _ in sorted(common) if k in newer.keys and k in older.keys)
    for v in (shared, shared - 1):
        node = lake.node(lake.root_path(v))
        lake.rewrite(lake.root_path(v), keys=tuple(k[:-1] + "\x01" if k == key else k for k in node.keys))
    report = verify(lake.location, all_versions=True)
    assert {(lake.root_path(shared), "SPEC 3"), (lake.root_path(shared - 1), "SPEC 3")} <= errors(report)


def test_misplaced_and_unknown_system_rows(lake: Lake) -> None:
    leaf, _, _ = lake.leaf()
    node = lake.node(leaf)
    lake.rewrite(leaf, system={**node.system, "previous_root": lake.root_path(0), "colour": "blue"})
    report = verify(lake.location)
    assert errors(report) == {(leaf, "SPEC 3")}
    assert "belongs in a root node" in report.errors[0].message
    assert warnings(report, "SPEC 3") == {(leaf, "SPEC 3")}


def test_a_file_that_looks_like_a_root_but_is_not(lake: Lake) -> None:
    lake.storage.write("_0101.arrow", b"x")
    report = verify(lake.location)
    assert report.ok and warnings(report) == {("_0101.arrow", "SPEC 2")}


# --- SPEC 5: definitions --------------------------------------------------------------------


def test_invalid_protobuf_in_a_table_definition(lake: Lake) -> None:
    path = lake.definition("ns", "t012")
    lake.storage.write(path, b"\xff\xff\xff\xff")
    problem = only_error(verify(lake.location))
    assert (problem.path, problem.rule) == (path, "SPEC 5")
    assert "not a valid TableDef" in problem.message


def test_table_definition_with_an_unknown_field(lake: Lake) -> None:
    path = lake.definition("ns", "t013")
    lake.storage.write(path, lake.storage.read(path) + b"\xf8\x07\x01")  # field 127
    problem = only_error(verify(lake.location))
    assert (problem.path, problem.rule) == (path, "SPEC 5")
    assert "does not define" in problem.message


def test_table_definition_with_an_invalid_column_type(lake: Lake) -> None:
    path = lake.definition("ns", "t014")
    definition = TableDef.FromString(lake.storage.read(path))
    definition.schema.columns[0].type = 99  # no such DataType
    lake.storage.write(path, encode(definition))
    problem = only_error(verify(lake.location))
    assert (problem.path, problem.rule) == (path, "SPEC 5")
    assert "unknown DataType number 99" in problem.message


def test_missing_definition_file(lake: Lake) -> None:
    path = lake.definition("other")
    lake.storage.delete(path)
    problem = only_error(verify(lake.location))
    assert (problem.path, problem.rule) == (path, "missing")
    assert "namespace 'other'" in problem.message


def test_missing_node_file(lake: Lake) -> None:
    leaf, parent, index = lake.leaf()
    lake.storage.delete(leaf)
    problem = only_error(verify(lake.location))
    assert (problem.path, problem.rule) == (leaf, "missing")
    assert f"referenced by {parent} (child {index})" in problem.message


def test_definition_whose_name_differs_from_its_key(lake: Lake) -> None:
    path = lake.definition("ns", "t008")
    definition = TableDef.FromString(lake.storage.read(path))
    definition.name = "someone_else"
    lake.storage.write(path, encode(definition))
    problem = only_error(verify(lake.location))
    assert (problem.path, problem.rule) == (path, "SPEC 5")
    assert "'someone_else'" in problem.message and "'ns'.'t008'" in problem.message


def test_namespace_key_pointing_at_a_namespace_definition_of_another_name(lake: Lake) -> None:
    path = lake.definition("ns")
    lake.storage.write(path, encode(NamespaceDef(name="other")))
    problem = only_error(verify(lake.location))
    assert (problem.path, problem.rule) == (path, "SPEC 5")


def test_lakehouse_definition_of_an_unknown_major_version(lake: Lake) -> None:
    path = lake.lakehouse_def_path()
    definition = LakehouseDef.FromString(lake.storage.read(path))
    definition.major_version = 1
    lake.storage.write(path, encode(definition))
    report = verify(lake.location)
    assert (path, "SPEC 5 major_version") in errors(report)
    assert "major version 1" in next(p.message for p in report.errors if p.path == path)


def test_invalid_lakehouse_definition(lake: Lake) -> None:
    path = lake.lakehouse_def_path()
    lake.storage.write(path, b"\x18\x01")  # order = 1
    report = verify(lake.location)
    assert (path, "SPEC 5") in errors(report)
    assert "order must be at least 3" in report.errors[0].message


def test_table_in_a_namespace_that_does_not_exist(lake: Lake) -> None:
    txn = begin(lake.catalog.lakehouse)
    path = paths.new_table_def_path("nowhere", "t")
    txn.stage_file(path, encode(TableDef(name="t")))
    txn.put(lake.codec.table_key("nowhere", "t"), path)
    version = txn.commit()
    problem = only_error(verify(lake.location))
    assert (problem.path, problem.rule) == (paths.root_node_path(version), "K3")
    assert "'nowhere'" in problem.message


# --- SPEC 7: history ------------------------------------------------------------------------


def _rewrite_root(lake: Lake, version: int, **system: str | None) -> None:
    path = lake.root_path(version)
    node = lake.node(path)
    new = {k: v for k, v in {**node.system, **system}.items() if v is not None}
    lake.rewrite(path, system=new)


def test_previous_root_that_skips_a_version(lake: Lake) -> None:
    _rewrite_root(lake, lake.latest, previous_root=lake.root_path(lake.latest - 3))
    problem = only_error(verify(lake.location))
    assert (problem.path, problem.rule) == (lake.root_path(), "SPEC 7")
    assert f"expected {lake.root_path(lake.latest - 1)}" in problem.message


def test_root_without_previous_root(lake: Lake) -> None:
    _rewrite_root(lake, 3, previous_root=None)
    problem = only_error(verify(lake.location))
    assert (problem.path, problem.rule) == (lake.root_path(3), "SPEC 7")


def test_created_at_going_back_in_time(lake: Lake) -> None:
    _rewrite_root(lake, 4, created_at_millis="1")
    problem = only_error(verify(lake.location))
    assert (problem.path, problem.rule) == (lake.root_path(4), "SPEC 7")


def test_a_missing_version_is_a_gap_warning(lake: Lake) -> None:
    lake.storage.delete(lake.root_path(5))
    report = verify(lake.location)
    assert report.ok, report.text()
    assert warnings(report, "SPEC 7") == {(lake.root_path(6), "SPEC 7")}


def test_versions_hidden_from_readers_by_a_gap(lake: Lake) -> None:
    lake.storage.delete(lake.root_path(lake.latest - 2))
    lake.storage.write(paths.LATEST_HINT_PATH, str(lake.latest - 3).encode())
    report = verify(lake.location)
    assert (lake.root_path(), "SPEC 7") in errors(report)
    assert f"readers find version {lake.latest - 3}" in report.errors[0].message


def test_exported_snapshot_of_a_missing_root(lake: Lake) -> None:
    lake.storage.delete(lake.root_path(1))  # exported as "first"
    report = verify(lake.location)
    assert errors(report) == {(lake.lakehouse_def_path(), "missing")}
    assert "'first'" in report.errors[0].message


@pytest.mark.parametrize("content", [None, b"garbage", b"99999"])
def test_a_bad_hint_is_only_a_warning(lake: Lake, content: bytes | None) -> None:
    if content is None:
        lake.storage.delete(paths.LATEST_HINT_PATH)
    else:
        lake.storage.write(paths.LATEST_HINT_PATH, content)
    report = verify(lake.location)
    assert report.ok
    assert warnings(report) == {(paths.LATEST_HINT_PATH, "SPEC 7")}


# --- orphans and versions -------------------------------------------------------------------


def test_orphan_files_are_warnings(lake: Lake) -> None:
    orphan = paths.new_node_path()
    lake.storage.write(orphan, b"not even arrow")
    temp = orphan.rpartition("/")[0] + "/.tl-tmp-0123abcd"  # a killed writer's temp file
    lake.storage.write(temp, b"partial")
    other = "data/part-0.parquet"  # not a format file: never reported (E6)
    lake.storage.write(other, b"x")
    report = verify(lake.location)
    assert report.ok
    assert report.orphans == sorted([orphan, temp])
    assert warnings(report) == {(orphan, "orphan"), (temp, "orphan")}


@pytest.mark.parametrize("kind", ["table", "namespace"])
def test_a_file_only_an_invalid_pointer_names_is_no_orphan(lake: Lake, kind: str) -> None:
    """verify counts what a node references as expiration does (tree TW2): a file that a
    key's value names is kept by expiration even when the pointer is invalid (a table
    key naming a namespace definition, or the reverse), so verify reports the pointer
    (an error) and not the file as an orphan "expiration removes"."""
    from trinitylake_dbapi.maintenance import expire_versions

    holders = [(lake.root_path(), lake.snapshot.root)] + [(p, n) for p, n, _ in lake.nodes]
    path, node = next((p, n) for p, n in holders if any(lake.codec.decode(k).kind == kind for k in n.keys))
    index = next(i for i, k in enumerate(node.keys) if lake.codec.decode(k).kind == kind)
    if kind == "table":
        target = paths.new_namespace_def_path("elsewhere")
        lake.storage.write(target, encode(NamespaceDef(name="elsewhere")))
    else:
        target = paths.new_table_def_path("ns", "elsewhere")
        lake.storage.write(target, lake.storage.read(lake.definition("ns", "t012")))
    values = list(node.values)
    values[index] = target
    lake.rewrite(path, values=tuple(values))
    report = verify(lake.location)
    assert (path, "SPEC 2") in errors(report)
    assert target not in report.orphans
    fresh = LakehouseCatalog(lake.location)  # lake.catalog cached the node before it changed
    kept = expire_versions(fresh, retain_last=10**6, dry_run=True, orphan_grace_millis=0)
    assert target not in kept.files
    assert sorted(report.orphans) == sorted(f for f in kept.files if f in report.orphans)


def test_old_definitions_are_parsed_only_with_all_versions(lake: Lake) -> None:
    # "doomed" was created and then undone by the rollback: only old versions reach it.
    version = next(v.version for v in lake.catalog.versions() if "table other.doomed" in v.changes)
    txn = lake.catalog.begin(version=version)
    path = txn.describe_table("other", "doomed").definition_path
    lake.storage.write(path, b"\xff")
    assert verify(lake.location).ok
    deep = verify(lake.location, all_versions=True)
    assert errors(deep) == {(path, "SPEC 5")}


def test_missing_old_definition_is_found_without_all_versions(lake: Lake) -> None:
    version = next(v.version for v in lake.catalog.versions() if "table other.doomed" in v.changes)
    path = lake.catalog.begin(version=version).describe_table("other", "doomed").definition_path
    lake.storage.delete(path)
    report = verify(lake.location)
    assert errors(report) == {(path, "missing")}


def test_verify_never_writes(lake: Lake) -> None:
    before = {p: lake.storage.read(p) for p in lake.storage.list()}
    leaf, _, _ = lake.leaf()
    lake.storage.write(leaf, b"junk")
    before[leaf] = b"junk"
    storage = Storage(lake.location)
    verify(storage, all_versions=True)
    assert storage.counters.writes == storage.counters.exclusive_creates == 0
    assert storage.counters.deletes == 0
    assert {p: lake.storage.read(p) for p in lake.storage.list()} == before


def test_many_problems_in_one_file_are_summarised(lake: Lake) -> None:
    node = lake.internal()
    data = lake.node(node)
    key = lake.node(data.children[0]).keys[0]
    messages = [Message(key, None, str(tag)) for tag in range(18, 0, -1)]  # 17 wrong
    lake.rewrite(node, buffer=(*data.buffer, *messages))
    report = verify(lake.location)
    t6 = [p for p in report.problems if p.path == node and p.rule == "T6"]
    assert len(t6) == 6 and t6[-1].message.startswith("... and 12 more"), report.text()


def test_verify_on_object_stores(object_lake: Any) -> None:
    s3_root, s3_storage_options = object_lake.location, object_lake.storage_options
    catalog = LakehouseCatalog(s3_root, create=True, storage_options=s3_storage_options,
                               lakehouse_options={"order": 4, "node_file_max_size_bytes": 3000,
                                                  "namespace_name_max_size_bytes": 20,
                                                  "table_name_max_size_bytes": 20,
                                                  "file_name_max_size_bytes": 202})
    txn = catalog.begin()
    txn.create_namespace("ns")
    txn.commit()
    for start in range(0, 30, 10):
        txn = catalog.begin()
        for i in range(start, start + 10):
            txn.create_table("ns", f"t{i}", columns("id"))
        txn.commit()
    report = verify(s3_root, storage_options=s3_storage_options, all_versions=True)
    assert report.ok and not report.problems, report.text()
    assert report.nodes_read > 3
    path = catalog.begin().describe_table("ns", "t3").definition_path
    catalog.storage.write(path, b"\xff")
    report = verify(s3_root, storage_options=s3_storage_options)
    assert errors(report) == {(path, "SPEC 5")}
