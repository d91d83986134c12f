"""The lakehouse's Iceberg tables: the PyIceberg catalog, its durable FileIO, type
mapping and the files a metadata reaches.

``from trinitylake_dbapi.iceberg import TrinityLakeCatalog`` is the catalog's public
path (also as PyIceberg's ``py-catalog-impl``: ``trinitylake_dbapi.iceberg.TrinityLakeCatalog``,
or the longer ``trinitylake_dbapi.iceberg.catalog.TrinityLakeCatalog``). It is imported
lazily, when first asked for: importing this package imports none of PyIceberg.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .catalog import TrinityLakeCatalog

__all__ = ["TrinityLakeCatalog"]


def __getattr__(name: str) -> Any:
    """PEP 562: ``TrinityLakeCatalog`` from :mod:`.catalog`, imported when first asked."""
    if name == "TrinityLakeCatalog":
        from .catalog import TrinityLakeCatalog

        return TrinityLakeCatalog
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
