"""The catalog: namespaces, tables and history, on top of transactions (SPEC 3, 5, 7).

This is the object API that the SQL layer, the Iceberg layer and Spark call:
:class:`LakehouseCatalog` is a lakehouse location opened for catalog work (versions,
history, rollback, export; expiration, which also reclaims Iceberg files, is
``maintenance.expire_versions`` above it); :class:`CatalogTransaction` is one transaction's
view of the namespaces and tables, begun by ``LakehouseCatalog.begin()``; and
:class:`DefinitionCache` is the one cache of definition files (and of what is derived
from them) by path, which a LakehouseCatalog hands to each of its transactions. The
catalog knows what a namespace and a table are; it never builds a node file (that is
the tree's job) and never parses SQL: listings keep names by a predicate, not by a
pattern language.

One module per part, each stating the rules it keeps:

  model              info records, reserved property names, name and property checks
  definitions        the cache of definition files (K7)
  transactions       CatalogTransaction (K1-K5, K8)
  lakehouse_catalog  LakehouseCatalog (K6)
  session_scope      SessionScope: a DB-API session's transaction and its rules (SS1-SS3)
"""

from __future__ import annotations

from trinitylake_dbapi.catalog.lakehouse_catalog import LakehouseCatalog
from trinitylake_dbapi.catalog.model import DEFAULT_NAMESPACE, LAST_COLUMN_ID, MANAGED, TableInfo
from trinitylake_dbapi.catalog.transactions import CatalogTransaction

__all__ = ["DEFAULT_NAMESPACE", "LAST_COLUMN_ID", "MANAGED", "CatalogTransaction", "LakehouseCatalog", "TableInfo"]
