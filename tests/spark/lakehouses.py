"""Lakehouses for the Spark tests, built through the catalog API."""

from __future__ import annotations

import os
import shutil
import time
import uuid

from lake_builders import columns as cols  # noqa: F401 - the tests' one column builder
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.format import paths

#: Small nodes and short names: every few commits a buffer flushes and nodes split, so
#: a few hundred commits give a deep tree and thousands of files in a few seconds.
SMALL_NODES = dict(
    order=4,
    namespace_name_max_size_bytes=8,
    table_name_max_size_bytes=8,
    file_name_max_size_bytes=100,
    node_file_max_size_bytes=900,
)


def build_history(location: str, commits: int) -> LakehouseCatalog:
    """One namespace pair and ``commits`` small commits: creates, comments, drops."""
    lake = LakehouseCatalog(location, create=True, lakehouse_options=SMALL_NODES)
    txn = lake.begin()
    txn.create_namespace("ns0", comment="first")
    txn.create_namespace("ns1", properties={"owner": "me"})
    txn.commit()
    for i in range(commits):
        txn = lake.begin()
        ns = f"ns{i % 2}"
        if i % 7 == 6:
            txn.drop_table(ns, f"t{i - 2}", if_exists=True)
        elif i % 5 == 4:
            tables = txn.list_tables(ns)
            if tables:
                txn.set_table_comment(ns, tables[len(tables) // 2][1], f"c{i}")
            else:
                txn.create_table(ns, f"t{i}", cols("a bigint"))
        else:
            txn.create_table(ns, f"t{i}", cols("a bigint", "b varchar(10)"))
        if txn.has_writes:
            txn.commit()
        else:
            txn.rollback()
    return lake


def all_files(root: str) -> set[str]:
    """Every file under a local root, relative, with '/' separators."""
    out = set()
    for directory, _, names in os.walk(root):
        for name in names:
            out.add(os.path.relpath(os.path.join(directory, name), root).replace(os.sep, "/"))
    return out


def file_bytes(root: str) -> dict[str, bytes]:
    out = {}
    for path in all_files(root):
        with open(os.path.join(root, path), "rb") as f:
            out[path] = f.read()
    return out


def add_orphans(root: str, *, old: int, fresh: int) -> dict[str, list[str]]:
    """Unreferenced format files (``old`` of them two hours old, ``fresh`` just written),
    for each kind also two temp files a killed writer left (one in the root directory,
    one beside a node), and one file that is not a format file (never touched by
    expiration)."""
    made: dict[str, list[str]] = {"old": [], "fresh": [], "foreign": []}
    past = time.time() - 2 * 3600
    for kind, count in (("old", old), ("fresh", fresh)):
        temp_beside_node = os.path.dirname(paths.new_node_path()) + f"/.tl-tmp-{uuid.uuid4().hex}"
        for path in [paths.new_node_path() for _ in range(count)] + [f".tl-tmp-{uuid.uuid4().hex}", temp_beside_node]:
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as f:
                f.write(b"orphan")
            if kind == "old":
                os.utime(full, (past, past))
            made[kind].append(path)
    foreign = os.path.join(root, "data", f"part-{uuid.uuid4()}.parquet")
    os.makedirs(os.path.dirname(foreign), exist_ok=True)
    with open(foreign, "wb") as f:
        f.write(b"user data")
    os.utime(foreign, (past, past))
    made["foreign"].append(os.path.relpath(foreign, root))
    return made


def copy_lakehouse(source: str, target: str) -> str:
    """A byte-identical copy with the same modification times."""
    shutil.copytree(source, target, copy_function=shutil.copy2)
    return target
