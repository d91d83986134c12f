"""A tree on real storage, committed version by version, for the tree tests.

Each commit writes the new node files, then the root under its version's name, and
re-reads that root through a fresh NodeStore so every check sees what storage holds.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter

from trinitylake_dbapi.format.nodefile import decode_node_file, encode_node_file
from trinitylake_dbapi.format.paths import root_node_path
from trinitylake_dbapi.storage import Storage
from trinitylake_dbapi.tree import NodeStore, Tree, TreeConfig, check_tree, empty_root


class TreeHarness:
    def __init__(self, config: TreeConfig, storage: Storage | None = None) -> None:
        self.config = config
        self.storage = storage or Storage(f"memory://tree-{uuid.uuid4().hex}/")
        self.store = NodeStore(self.storage, config.order)
        self.version = 0
        self.stats: Counter = Counter()
        root = empty_root(config.order, int(time.time() * 1000))
        self.storage.write(root_node_path(0), encode_node_file(root))
        self.tree = Tree(self.store, root, config)

    def commit(self, messages: list[tuple[str, str | None]]) -> dict[str, bytes]:
        """Apply one transaction's messages; returns the non-root files it wrote."""
        txn = str(self.version + 1)
        update = self.tree.apply(messages, txn, int(time.time() * 1000))
        self.stats.update(update.stats)
        for path, data in update.files.items():
            assert not self.storage.exists(path), f"would overwrite {path}"
            self.storage.write(path, data)
        self.version += 1
        root_path = root_node_path(self.version)
        self.storage.write(root_path, encode_node_file(update.root))
        root = decode_node_file(self.storage.read(root_path), root_path, self.config.order)
        self.tree = Tree(self.store, root, self.config)
        return update.files

    def reread(self) -> Tree:
        """The latest tree as a new process would see it: nothing cached."""
        store = NodeStore(self.storage, self.config.order)
        path = root_node_path(self.version)
        root = decode_node_file(self.storage.read(path), path, self.config.order)
        return Tree(store, root, self.config)

    def problems(self, tree: Tree | None = None) -> list[str]:
        tree = tree or self.tree
        return check_tree(tree.store, tree.root, self.config, root_txn=str(self.version))
