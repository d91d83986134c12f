"""Where the server's catalog calls run: one lakehouse transaction per call, or one for a
whole ``/v1/transactions/commit`` request, each recording the version it saw (RS3, RS4).

This is the server's :class:`~trinitylake_dbapi.iceberg.catalog.CatalogScope`: the PyIceberg
catalog (iceberg/catalog.py) runs every read and write through it, so the server learns,
without reaching into the catalog, which lakehouse version each request read or
committed, for the response header (RS3).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator, TypeVar

from pyiceberg.exceptions import CommitFailedException

from ..catalog import CatalogTransaction, LakehouseCatalog
from ..errors import SerializationError
from ..iceberg.scope import commit_replaying

__all__ = ["RequestScope"]

_T = TypeVar("_T")


class RequestScope:
    """A CatalogScope for requests served on worker threads.

    Outside a block each catalog call is its own lakehouse transaction at the latest
    version (or read-only at ``version``), so a commit that lost a race is tried again by
    the catalog (iceberg P3). Inside :meth:`block` (per thread) every write is staged in
    one lakehouse transaction and published at the block's end as one version (iceberg
    P4's replay of plain appends included). Per thread, :meth:`seen` is the version the
    last call read (reads) or published (writes) since :meth:`start_request`.
    """

    def __init__(self, lakehouse: LakehouseCatalog, version: int | None = None) -> None:
        self.lakehouse = lakehouse
        self.version = version
        self._local = threading.local()

    # -- what a request saw (RS3) -----------------------------------------------------------

    def start_request(self) -> None:
        """Forget what an earlier request on this thread saw."""
        self._local.seen = None

    def seen(self) -> int | None:
        """The version the last call of this thread's request read or published."""
        return getattr(self._local, "seen", None)

    def _saw(self, version: int) -> None:
        self._local.seen = version

    # -- CatalogScope --------------------------------------------------------------------------

    @property
    def open_block(self) -> CatalogTransaction | None:
        return getattr(self._local, "txn", None)

    def commits_each_call(self) -> bool:
        return self.open_block is None

    def reruns_statement(self) -> bool:
        return False

    def note_commit(self, table: tuple[str, str], plain_append: bool) -> None:
        if self.open_block is not None:
            self._local.plain.append(plain_append)

    def run(self, work: Callable[[CatalogTransaction], _T], *, writes: bool) -> _T:
        txn = self.open_block
        if txn is not None:
            if writes:
                self._local.writes.append(work)
            return work(txn)
        txn = self.lakehouse.begin(version=self.version)
        try:
            result = work(txn)
        except BaseException:
            txn.rollback()
            raise
        if writes:
            self._saw(txn.commit())
        else:
            self._saw(txn.version)
            txn.rollback()
        return result

    @contextlib.contextmanager
    def block(self) -> Iterator[None]:
        """RS4: the block's table commits are one lakehouse version, or none. When another
        writer committed to one of its tables first, a block of plain appends is run again
        on the latest version (iceberg P4); anything else fails as a whole with
        CommitFailedException and nothing is published."""
        if self.open_block is not None:
            raise ValueError("a lakehouse transaction is already open in this thread")
        txn = self.lakehouse.begin(version=self.version)
        self._local.txn, self._local.writes, self._local.plain = txn, [], []
        try:
            yield
        except BaseException:
            txn.rollback()
            raise
        else:
            writes: list[Callable[[CatalogTransaction], Any]] = list(self._local.writes)
            try:
                self._saw(
                    commit_replaying(
                        txn,
                        lambda: self.lakehouse.begin(version=self.version),
                        writes,
                        all(self._local.plain),
                    )
                )
            except SerializationError as e:
                raise CommitFailedException(f"the transaction was not committed: {e}") from e
        finally:
            self._local.txn, self._local.writes, self._local.plain = None, [], []
