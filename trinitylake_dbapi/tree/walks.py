"""Walks of one node: what it references, and what it says once merged (T6).

The one implementation of both for everything that reads node files without going
through :class:`~trinitylake_dbapi.tree.Tree` lookups: expiration and export
(``maintenance``), the verifier (``verify``) and their Spark versions, which receive
these functions through ``maintenance`` and ``verify.rules`` (Spark never imports the
tree, architecture rule A2). Pure functions of a decoded :class:`NodeFile`: no storage.

Rules (TW = tree walks):

  TW1 Entries: a node's entries are its key table in key order, then its buffered
      messages in the order they were applied (a message with value None deletes).
  TW2 References: a node references its children (node files) and the value of every
      entry that has one: the definition file its key names. A value shadowed by a
      newer message still counts, in the same node or higher up: the file stays
      readable for as long as any message of the tree names it (expiration E3 keeps
      it, and verify's orphans are exactly the files expiration would delete).
  TW3 Merged view: the key -> value map a node's subtree says is the merge of its
      children's merged views (disjoint by T4), then its key table, then its buffered
      messages in order, a set replacing and a delete removing (T6: higher and later
      is newer). The merged view of a root is the version's content.
  TW4 Own messages: the messages of a root tagged with the transaction that wrote the
      root are exactly that transaction's changes (T5), in the order applied; applied
      to the previous version's merged view they give this version's (unless the
      version is a rollback, whose content is an earlier version's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from ..format.nodefile import Message, NodeFile

__all__ = [
    "NodeReferences",
    "merge_messages",
    "own_messages",
    "merge_node",
    "merged_view",
    "node_entries",
    "node_references",
]


def node_entries(node: NodeFile) -> list[tuple[str, str | None]]:
    """Every (key, value) ``node`` holds, in TW1 order (value None: a delete message)."""
    entries: list[tuple[str, str | None]] = list(zip(node.keys, node.values))
    entries.extend((message.key, message.value) for message in node.buffer)
    return entries


@dataclass(frozen=True)
class NodeReferences:
    """What one node points at (TW2)."""

    #: The child node files, left to right.
    children: tuple[str, ...]
    #: (key, definition file) of every entry with a value, in TW1 order; a file may
    #: appear more than once (a key set again, or two keys sharing a definition).
    definitions: tuple[tuple[str, str], ...]

    def files(self) -> list[str]:
        """Every file referenced: the children, then the definition files."""
        return [*self.children, *(value for _, value in self.definitions)]


def node_references(node: NodeFile) -> NodeReferences:
    """The files ``node`` references (TW2)."""
    return NodeReferences(
        tuple(node.children),
        tuple((key, value) for key, value in node_entries(node) if value is not None),
    )


def merge_messages(view: dict[str, str], messages: Iterable[Message]) -> dict[str, str]:
    """Apply ``messages`` in order to ``view`` (in place): a set replaces, a delete
    removes (TW3, T6). Returns ``view``."""
    for message in messages:
        if message.value is None:
            view.pop(message.key, None)
        else:
            view[message.key] = message.value
    return view


def merge_node(view: dict[str, str], node: NodeFile) -> dict[str, str]:
    """Merge ``node`` over ``view``, the merged views of its children (TW3): its key
    table, then its buffered messages. In place; returns ``view``."""
    view.update(zip(node.keys, node.values))
    return merge_messages(view, node.buffer)


def merged_view(node: NodeFile, children: Iterable[Mapping[str, str]] = ()) -> dict[str, str]:
    """The merged view of ``node``'s subtree given its children's merged views (TW3)."""
    view: dict[str, str] = {}
    for child in children:
        view.update(child)
    return merge_node(view, node)


def own_messages(root: NodeFile, txn: str) -> list[Message]:
    """The messages of ``root`` that transaction ``txn`` (the one that wrote the root)
    wrote, in the order applied (TW4)."""
    return [message for message in root.buffer if message.txn == txn]
