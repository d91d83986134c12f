"""A lakehouse location opened for catalog work (:class:`LakehouseCatalog`): versions,
history, rollback, export, and the transactions begun on it.

Rules:

  K6 A new lakehouse has the namespace ``default`` (DEFAULT_NAMESPACE), written in
     version 0 itself, as Spark's and Hive's catalogs have one: tools that reflect the
     default schema work on a fresh lakehouse. It is an ordinary namespace (it can be
     dropped), and opening an existing lakehouse never creates it: opening never writes.
     A lakehouse whose namespace names are limited to fewer bytes than "default" has
     no such namespace. The format asks nothing of version 0 but its root (SPEC 7):
     this is this library's choice. PyIceberg's ``create_namespace("default")`` claims
     it while it has no property, comment or table (iceberg.catalog P10), so code
     written for a catalog that starts empty works too.
  K9 A rollback never publishes a version naming a missing metadata file: the metadata
     files the target version's MANAGED tables name under the root are checked right
     before the new root is published (transaction ``rollback_to``), and a missing one
     (deleted by ``write.metadata.delete-after-commit.enabled``, iceberg.oldmetadata
     OM4) refuses the rollback with MissingFileError naming the table, the version and
     the file.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Iterator, Mapping

from trinitylake_dbapi.catalog.definitions import DefinitionCache
from trinitylake_dbapi.catalog.model import DEFAULT_NAMESPACE, MANAGED, VersionInfo
from trinitylake_dbapi.catalog.transactions import CatalogTransaction
from trinitylake_dbapi.errors import (
    InvalidDefinitionError,
    InvalidNameError,
    ObjectExistsError,
    ObjectNotFoundError,
    ProgrammingError,
)
from trinitylake_dbapi.format import keys as keyfmt, paths
from trinitylake_dbapi.format.definitions import (
    LakehouseDef,
    LakehouseSettings,
    NamespaceDef,
    encode,
    new_lakehouse_def,
)
from trinitylake_dbapi.lakehouse import Lakehouse, Snapshot
from trinitylake_dbapi.storage.locations import location_within
from trinitylake_dbapi.storage import Storage
from trinitylake_dbapi.transaction import Isolation, begin, rollback_to


def _create_lakehouse(storage: Storage, options: dict) -> Lakehouse:
    """Open the lakehouse at ``storage``, creating it with the namespace ``default`` (K6)
    when there is none."""
    definition = new_lakehouse_def(**options)
    settings = LakehouseSettings.from_proto(definition)
    codec = keyfmt.KeyCodec(settings.namespace_name_max_size_bytes, settings.table_name_max_size_bytes)
    try:
        key = codec.namespace_key(DEFAULT_NAMESPACE)
    except InvalidNameError:  # name limits too small for it: the lakehouse has none
        return Lakehouse.create(storage, definition)
    path = paths.new_namespace_def_path(DEFAULT_NAMESPACE)
    return Lakehouse.create(
        storage,
        definition,
        files={path: encode(NamespaceDef(name=DEFAULT_NAMESPACE))},
        entries=[(key, path)],
    )


class LakehouseCatalog:
    """A lakehouse location opened for catalog work: transactions and history."""

    def __init__(
        self,
        location: str,
        *,
        create: bool = False,
        lakehouse_options: dict | None = None,
        storage_options: dict | None = None,
        storage: Storage | None = None,
    ) -> None:
        if lakehouse_options is not None and not isinstance(lakehouse_options, Mapping):
            raise InvalidDefinitionError(
                "lakehouse_options must be a mapping of option names to values (e.g. "
                f"{{'order': 16}}), not {type(lakehouse_options).__name__}"
            )
        self.storage = storage if storage is not None else Storage(location, storage_options)
        #: The storage options it was opened with (fsspec's), for the tables' FileIO.
        self.storage_options: dict = dict(storage_options or {})
        if create:
            self.lakehouse = _create_lakehouse(self.storage, dict(lakehouse_options or {}))
        else:
            self.lakehouse = Lakehouse.open(self.storage)
        #: Decoded definition files and what is derived from them, by path: shared by
        #: every transaction begun here (time travel included).
        self.definitions = DefinitionCache()

    # -- transactions ---------------------------------------------------------------------

    def begin(
        self, isolation: Isolation | str | None = Isolation.SNAPSHOT, version: int | str | None = None
    ) -> CatalogTransaction:
        """A catalog transaction at the latest version, or read-only at ``version``."""
        resolved = None if version is None else self.resolve_version(version)
        txn = begin(self.lakehouse, Isolation.parse(isolation), resolved)
        return CatalogTransaction(txn, self.definitions)

    def latest_version(self) -> int:
        return self.lakehouse.latest_version()

    def resolve_version(self, spec: int | str) -> int:
        """A version number that exists, or an exported snapshot's version."""
        if isinstance(spec, bool):
            raise ProgrammingError(f"version {spec!r} is not a version number or snapshot name")
        if isinstance(spec, int):
            return self.lakehouse.snapshot(spec).version
        if isinstance(spec, str):
            return self.lakehouse.snapshot_named(spec).version
        raise ProgrammingError(f"version {spec!r} is not a version number or snapshot name")

    def resolve_version_text(self, spec: str) -> int:
        """A version given as text, as users write it in a property or a URL: a version
        number, an exported snapshot's name, or an ISO-8601 timestamp (the latest version
        at that moment; UTC when it names no zone). Raises ObjectNotFoundError naming an
        unknown version or snapshot."""
        text = str(spec).strip()
        if text.isdigit():
            return self.resolve_version(int(text))
        if text in self.snapshots():
            return self.resolve_version(text)
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return self.resolve_version(text)  # raises naming the unknown snapshot
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        return self.version_at(int(moment.timestamp() * 1000))

    def has_version(self, version: int) -> bool:
        """Whether ``version`` can be read: it was committed and has not expired."""
        try:
            self.lakehouse.snapshot(version)
        except ObjectNotFoundError:
            return False
        return True

    def version_at(self, millis: int) -> int:
        return self.lakehouse.snapshot_at(millis).version

    # -- history ------------------------------------------------------------------------------

    def changes_of(self, snapshot: Snapshot, previous: Snapshot | None) -> tuple[str, ...]:
        """What ``snapshot`` changed, as the history shows it (``VersionInfo.changes``):
        ``namespace NS``, ``table NS.T``, ``lakehouse definition`` (against ``previous``,
        its predecessor, if given) and ``rollback of version V``."""
        codec = keyfmt.KeyCodec(
            snapshot.settings.namespace_name_max_size_bytes, snapshot.settings.table_name_max_size_bytes
        )
        changes = []
        for key in snapshot.changed_keys():
            try:
                decoded = codec.decode(key)
            except ValueError:
                changes.append(key)
                continue
            if decoded.kind == "namespace":
                changes.append(f"namespace {decoded.namespace}")
            else:
                changes.append(f"table {decoded.namespace}.{decoded.table}")
        if previous is not None and previous.lakehouse_def_path != snapshot.lakehouse_def_path:
            changes.append("lakehouse definition")
        if snapshot.rollback_from_version is not None:
            # The format records where a rollback came from, not its target.
            changes.append(f"rollback of version {snapshot.rollback_from_version}")
        return tuple(changes)

    def versions(self) -> list[VersionInfo]:
        """Every version of the history, newest first (see iter_versions)."""
        return list(self.iter_versions())

    def iter_versions(self, newest: int | None = None, oldest: int = 0) -> Iterator[VersionInfo]:
        """The versions from ``newest`` (default the latest) down to ``oldest``, newest
        first, read lazily one root at a time (plus the one below, to tell what changed):
        the history chain, and past an expired gap the exported snapshots below it."""
        chain = self.lakehouse.history(newest, max(0, oldest - 1))
        snapshot = next(chain, None)
        while snapshot is not None and snapshot.version >= oldest:
            previous = next(chain, None)
            before = previous if previous is not None and previous.version == snapshot.previous_version else None
            if before is None and snapshot.previous_version is not None:
                try:
                    before = self.lakehouse.snapshot(snapshot.previous_version)
                except ObjectNotFoundError:
                    before = None
            yield VersionInfo(
                version=snapshot.version,
                created_at_millis=snapshot.created_at_millis,
                previous_version=snapshot.previous_version,
                rollback_from_version=snapshot.rollback_from_version,
                changes=self.changes_of(snapshot, before),
            )
            snapshot = previous

    def rollback_to(self, version: int) -> int:
        """K9: commit a version whose content is ``version``'s, unless a metadata file one
        of its managed tables names has been deleted since (iceberg.oldmetadata OM4):
        MissingFileError naming the table, the version and the file, nothing published."""
        return rollback_to(self.lakehouse, version, self.metadata_files_named(version))

    def metadata_files_named(self, version: int) -> dict[str, str]:
        """K9: the Iceberg metadata files under the root that the MANAGED tables of
        ``version`` name (path under the root -> "the metadata file of table ns.t")."""
        named: dict[str, str] = {}
        txn = self.begin(version=version)
        try:
            for namespace, name in txn.list_tables():
                info = txn.describe_table(namespace, name)
                location = info.format_properties.get(paths.METADATA_LOCATION)
                if info.table_type != MANAGED or not location:
                    continue
                relative = location_within(location, self.storage.root_uri)
                if relative is not None:
                    named[relative] = f"the metadata file {location} of table {namespace}.{name}"
        finally:
            txn.rollback()
        return named

    def export_snapshot(self, name: str, version: int | None = None) -> int:
        """Record ``name`` for a version in the lakehouse definition (a new version)."""
        keyfmt.validate_new_name(name, keyfmt.MAX_SNAPSHOT_NAME_BYTES, "snapshot")
        target = self.lakehouse.snapshot(version)
        root_path = paths.root_node_path(target.version)
        if version is not None and not self.storage.exists(root_path):
            # cached before another connection expired it: never name a deleted root
            raise ObjectNotFoundError(f"version {version} does not exist any more (expired)")
        txn = begin(self.lakehouse)

        def record(definition: LakehouseDef) -> LakehouseDef:
            if name in definition.exported_snapshots:
                raise ObjectExistsError(f"an exported snapshot named {name!r} already exists")
            definition.exported_snapshots[name] = root_path
            return definition

        trial = LakehouseDef()
        trial.CopyFrom(txn.base.lakehouse_def)
        record(trial)  # fail early, before writing anything
        txn.update_lakehouse_def(record)
        return txn.commit()

    def snapshots(self) -> dict[str, int]:
        """Exported snapshots of the latest version: name -> version."""
        exported = self.lakehouse.snapshot().settings.exported_snapshots
        return {name: paths.parse_root_node_path(root) for name, root in sorted(exported.items())}

    def close(self) -> None:
        """Drop the cached definitions (the lakehouse's files are untouched)."""
        self.definitions.clear()
