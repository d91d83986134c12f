"""Where the server's catalog calls run: one lakehouse transaction per call, or one for a
whole ``/v1/transactions/commit`` request, each recording the version it saw (RS3, RS4).

This is the server's :class:`~trinitylake_dbapi.iceberg.catalog.CatalogScope`: the PyIceberg
catalog (iceberg/catalog.py) runs every read and write through it, so the server learns,
without reaching into the catalog, which lakehouse version each request read or
committed, for the response header (RS3).
"""

from __future__ import annotations

from ..iceberg.scope import OwnScope

__all__ = ["RequestScope"]


class RequestScope(OwnScope):
    """A CatalogScope for requests served on worker threads: the catalog's own scope
    (iceberg P3-P5: each call its own lakehouse transaction at the latest version, or
    read-only at ``version``; a :meth:`block` per thread is one version, its plain
    appends replayed, anything else failing as a whole with CommitFailedException) that
    also records, per thread, the version the last call read or published since
    :meth:`start_request` (RS3, RS4)."""

    def start_request(self) -> None:
        """Forget what an earlier request on this thread saw."""
        self._local.seen = None

    def seen(self) -> int | None:
        """The version the last call of this thread's request read or published."""
        return getattr(self._local, "seen", None)

    def saw_version(self, version: int) -> None:
        self._local.seen = version
