"""The catalog views, defined once: namespaces, tables, columns, versions and partitions.

SQL (``information_schema.schemata`` / ``tables`` / ``columns``, ``system.versions``,
``SHOW VERSIONS``) and Spark (the ``trinitylake`` data source's objects ``namespaces``,
``tables``, ``columns``, ``versions``) present these views; neither builds a row itself.
The views sit below ``sql`` and ``spark`` and read only the catalog's records
(NamespaceInfo, TableInfo, VersionInfo).

Rules (CV = catalog views):

  CV1 One definition. A view is its fields (a ColumnSpec each: name, SPEC 5 type,
      nullability) and one function from a catalog record to its rows, both here. The
      types reach an engine through that engine's one type mapping (``spark.schema``
      for Spark; for SQL the type kinds, :func:`sql_columns`).
  CV2 A presentation (:data:`SQL` and :data:`SPARK`) picks fields by name, may show one
      under another name (Spark's ``namespace`` is information_schema's
      ``table_schema``), and may add a constant column a standard asks for
      (``table_catalog``, ``column_default``, ``schema_owner``). It computes no value.
  CV3 Where SQL and Spark showed the same thing differently, one won:
      * information_schema is a standard, so its values win in both: ``is_nullable``
        'YES' / 'NO' (Spark's ``columns`` showed a boolean ``nullable``), and
        ``table_type`` 'BASE TABLE' with MANAGED / EXTERNAL in ``table_kind``
        (Spark's ``tables`` showed the kind in ``table_type``).
      * ``changes`` of the versions view is text, the changes joined by ", " (SQL's;
        no standard; SHOW VERSIONS and LIKE filters rely on it). Spark showed an array;
        ``LakehouseCatalog.versions()`` keeps the tuple for programs.
      * A table without a format shows NULL in ``table_format`` (Spark's; SQL showed '').
      The struct of a column inside Spark's ``tables`` row keeps a boolean
      ``nullable``: it describes a column the way schemas do (Spark's, Iceberg's),
      it is not the columns view.
  CV4 Timestamps are instants: ``created_at`` is a timestamptz field holding an aware
      UTC datetime. SQL shows every timestamp in UTC without a time zone
      (``sql.session``), so :func:`sql_rows` drops the zone of timestamptz fields and
      :func:`sql_columns` calls them ``timestamp``; Spark shows a TimestampType.
  CV5 (issue 36) The partitions view has one row per partition of a table's live data
      files at one snapshot: the spec the files were written with, the partition as
      Iceberg names it in paths (``ts_day=2024-01-01/region=eu``; '' for files of an
      unpartitioned spec), its rows (data files' record counts, before position
      deletes), files and bytes, and its position delete files' rows and files (merge-on-read
      deletes: the live rows are ``record_count - position_delete_record_count``). Its rows come from :mod:`.iceberg.partitioning`'s
      summaries; SQL shows it as ``SHOW PARTITIONS t``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from .format.types import ColumnSpec, TypeSpec, list_type, map_type, struct_type, type_to_sql

if TYPE_CHECKING:
    from .catalog.model import NamespaceInfo, TableInfo, VersionInfo

__all__ = [
    "CATALOG_NAME",
    "COLUMNS",
    "NAMESPACES",
    "PARTITIONS",
    "SPARK",
    "SHOW_PARTITIONS",
    "SQL",
    "TABLES",
    "VERSIONS",
    "Constant",
    "Presentation",
    "View",
    "column_rows",
    "namespace_row",
    "partition_rows",
    "present",
    "sql_columns",
    "sql_rows",
    "table_row",
    "table_name_row",
    "version_row",
]

#: The catalog name information_schema shows (``table_catalog``, ``catalog_name``).
CATALOG_NAME = "trinitylake"

_VARCHAR = TypeSpec("varchar")
_INT4 = TypeSpec("int4")
_INT8 = TypeSpec("int8")
_BOOLEAN = TypeSpec("boolean")


def _field(name: str, type: TypeSpec, nullable: bool = True) -> ColumnSpec:
    return ColumnSpec(name, type, nullable)


@dataclass(frozen=True)
class View:
    """One catalog view: its fields, in the order of its rows (CV1)."""

    name: str
    fields: tuple[ColumnSpec, ...]

    def field(self, name: str) -> ColumnSpec:
        for spec in self.fields:
            if spec.name == name:
                return spec
        raise KeyError(f"view {self.name} has no field {name!r}")

    def position(self, name: str) -> int:
        return [spec.name for spec in self.fields].index(name)


_PROPERTIES = map_type(_VARCHAR, _VARCHAR, value_nullable=False)

NAMESPACES = View("namespaces", (
    _field("namespace", _VARCHAR, False),
    _field("comment", _VARCHAR),
    _field("properties", _PROPERTIES, False),
))  # fmt: skip

#: A column as a table row of Spark's ``tables`` object shows it (CV3: a schema's view
#: of a column, with a boolean ``nullable``).
TABLE_COLUMN = struct_type(
    _field("id", _INT8, False),
    _field("name", _VARCHAR, False),
    _field("type", _VARCHAR, False),
    _field("nullable", _BOOLEAN, False),
    _field("comment", _VARCHAR),
)

TABLES = View("tables", (
    _field("namespace", _VARCHAR, False),
    _field("table_name", _VARCHAR, False),
    _field("table_type", _VARCHAR, False),  # 'BASE TABLE' (information_schema)
    _field("table_kind", _VARCHAR, False),  # MANAGED | EXTERNAL
    _field("table_format", _VARCHAR),
    _field("location", _VARCHAR),
    _field("comment", _VARCHAR),
    _field("columns", list_type(TABLE_COLUMN, element_nullable=False), False),
    _field("primary_key", list_type(_VARCHAR, element_nullable=False), False),
    _field("properties", _PROPERTIES, False),
))  # fmt: skip

COLUMNS = View("columns", (
    _field("namespace", _VARCHAR, False),
    _field("table_name", _VARCHAR, False),
    _field("ordinal_position", _INT4, False),  # 1-based
    _field("column_name", _VARCHAR, False),
    _field("column_id", _INT8, False),
    _field("data_type", _VARCHAR, False),  # canonical type text, e.g. varchar(20)
    _field("is_nullable", _VARCHAR, False),  # 'YES' | 'NO' (information_schema)
    _field("character_maximum_length", _INT4),
    _field("numeric_precision", _INT4),
    _field("numeric_scale", _INT4),
    _field("datetime_precision", _INT4),
    _field("comment", _VARCHAR),
    _field("primary_key_position", _INT4),  # 1-based position in the key, NULL if not in it
))  # fmt: skip

VERSIONS = View("versions", (
    _field("version", _INT8, False),
    _field("created_at", TypeSpec("timestamptz"), False),
    _field("previous_version", _INT8),
    _field("rollback_from_version", _INT8),
    _field("changes", _VARCHAR, False),  # joined by ", " (CV3)
))  # fmt: skip

PARTITIONS = View("partitions", (
    _field("namespace", _VARCHAR, False),
    _field("table_name", _VARCHAR, False),
    _field("spec_id", _INT4, False),
    _field("partition", _VARCHAR, False),  # Iceberg's partition path (CV5)
    _field("record_count", _INT8, False),
    _field("file_count", _INT8, False),
    _field("total_size_bytes", _INT8, False),
    _field("position_delete_record_count", _INT8, False),
    _field("position_delete_file_count", _INT8, False),
))  # fmt: skip


# ---------------------------------------------------------------------------
# Rows (CV1): the value of every field, computed here only
# ---------------------------------------------------------------------------


def partition_rows(namespace: str, table_name: str, summaries: Iterable[tuple]) -> list[tuple]:
    """The PARTITIONS rows of a table (CV5) from its partitions' (spec id, partition
    path, records, files, bytes, position delete records, position delete files),
    ordered by spec and partition."""
    return [(namespace, table_name, *summary) for summary in sorted(summaries, key=lambda s: (s[0], s[1]))]


def namespace_row(info: "NamespaceInfo") -> tuple:
    """The NAMESPACES row of a namespace."""
    return (info.name, info.comment, dict(info.properties))


def table_row(info: "TableInfo") -> tuple:
    """The TABLES row of a table."""
    return (
        info.namespace,
        info.name,
        "BASE TABLE",
        info.table_type,
        info.table_format or None,
        info.location,
        info.comment,
        [(c.id, c.name, type_to_sql(c.type), c.nullable, c.comment) for c in info.columns],
        list(info.primary_key),
        dict(info.properties),
    )


def table_name_row(namespace: str, name: str) -> tuple:
    """The TABLES row of a table whose definition was not read: its names and
    ``table_type``, every other field None. Only for a reader that uses no other field
    (SQL's information_schema.tables when a query names no other column: listing a
    namespace's tables then reads no definition)."""
    return (namespace, name, "BASE TABLE", None, None, None, None, None, None, None)


#: information_schema's numeric_precision of the types with a fixed one (bits; decimal
#: gives its own precision).
_NUMERIC_PRECISION = {"int2": 16, "int4": 32, "int8": 64, "float4": 24, "float8": 53}


def column_rows(info: "TableInfo") -> list[tuple]:
    """The COLUMNS rows of a table's top-level columns, in their order."""
    key = {column: i for i, column in enumerate(info.primary_key, start=1)}
    rows = []
    for position, c in enumerate(info.columns, start=1):
        t = c.type
        precision = _NUMERIC_PRECISION.get(t.kind, t.precision if t.kind == "decimal" else None)
        rows.append((
            info.namespace, info.name, position, c.name, c.id, type_to_sql(t),
            "YES" if c.nullable else "NO",
            t.length if t.kind in ("char", "varchar", "fixed", "binary") else None,
            precision,
            t.scale if t.kind == "decimal" else (0 if t.kind in ("int2", "int4", "int8") else None),
            t.precision if t.kind in ("time", "timetz", "timestamp", "timestamptz") else None,
            c.comment, key.get(c.name),
        ))  # fmt: skip
    return rows


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def version_row(info: "VersionInfo") -> tuple:
    """The VERSIONS row of a version."""
    created = _EPOCH + dt.timedelta(milliseconds=info.created_at_millis)
    return (info.version, created, info.previous_version, info.rollback_from_version, ", ".join(info.changes))


# ---------------------------------------------------------------------------
# Presentations (CV2)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Constant:
    """A column a standard asks for whose value is the same in every row."""

    value: Any
    type: TypeSpec = _VARCHAR


@dataclass(frozen=True)
class Presentation:
    """How one engine shows a view: (shown name, field name or Constant) per column."""

    view: View
    columns: tuple[tuple[str, "str | Constant"], ...]

    def specs(self) -> list[ColumnSpec]:
        """The columns as shown: name, type and nullability."""
        out = []
        for name, source in self.columns:
            if isinstance(source, Constant):
                out.append(ColumnSpec(name, source.type, source.value is None))
            else:
                spec = self.view.field(source)
                out.append(ColumnSpec(name, spec.type, spec.nullable))
        return out


def _same(view: View, *names: str) -> tuple[tuple[str, str], ...]:
    """Fields of ``view`` shown under their own names."""
    return tuple((view.field(name).name, name) for name in names)


SQL: dict[tuple[str, str], Presentation] = {
    ("information_schema", "schemata"): Presentation(NAMESPACES, (
        ("catalog_name", Constant(CATALOG_NAME)), ("schema_name", "namespace"),
        ("schema_owner", Constant(None)), ("comment", "comment"),
    )),
    ("information_schema", "tables"): Presentation(TABLES, (
        ("table_catalog", Constant(CATALOG_NAME)), ("table_schema", "namespace"),
        *_same(TABLES, "table_name", "table_type", "table_kind", "table_format", "location", "comment"),
    )),
    ("information_schema", "columns"): Presentation(COLUMNS, (
        ("table_catalog", Constant(CATALOG_NAME)), ("table_schema", "namespace"),
        *_same(COLUMNS, "table_name", "column_name", "ordinal_position"),
        ("column_default", Constant(None)),
        *_same(COLUMNS, "is_nullable", "data_type", "character_maximum_length", "numeric_precision",
               "numeric_scale", "datetime_precision", "comment", "primary_key_position"),
    )),
    ("system", "versions"): Presentation(VERSIONS, _same(VERSIONS, *(f.name for f in VERSIONS.fields))),
}  # fmt: skip

#: SHOW PARTITIONS t (CV5): the partitions view of one table, without the table's name.
SHOW_PARTITIONS = Presentation(PARTITIONS, _same(
    PARTITIONS, "spec_id", "partition", "record_count", "file_count", "total_size_bytes",
    "position_delete_record_count", "position_delete_file_count",
))  # fmt: skip

SPARK: dict[str, Presentation] = {
    "tables": Presentation(TABLES, _same(TABLES, *(f.name for f in TABLES.fields))),
    "namespaces": Presentation(NAMESPACES, _same(NAMESPACES, *(f.name for f in NAMESPACES.fields))),
    "columns": Presentation(COLUMNS, _same(
        COLUMNS, "namespace", "table_name", "ordinal_position", "column_name", "column_id", "data_type",
        "is_nullable", "comment",
    )),
    "versions": Presentation(VERSIONS, _same(VERSIONS, *(f.name for f in VERSIONS.fields))),
}  # fmt: skip


def present(presentation: Presentation, rows: Iterable[tuple]) -> list[tuple]:
    """The view's ``rows`` as ``presentation`` shows them (CV2)."""
    picks: list[tuple[bool, Any]] = []
    for _, source in presentation.columns:
        if isinstance(source, Constant):
            picks.append((True, source.value))
        else:
            picks.append((False, presentation.view.position(source)))
    return [tuple(value if constant else row[value] for constant, value in picks) for row in rows]


def sql_columns(presentation: Presentation) -> tuple[tuple[str, str], ...]:
    """(name, SQL type kind) of the columns SQL shows (CV4: timestamptz as timestamp)."""
    out = []
    for spec in presentation.specs():
        kind = spec.type.kind
        out.append((spec.name, "timestamp" if kind == "timestamptz" else kind))
    return tuple(out)


def sql_rows(presentation: Presentation, rows: Sequence[tuple]) -> list[tuple]:
    """The view's ``rows`` as SQL shows them: presented (CV2), instants in UTC without a
    time zone (CV4)."""
    shown = present(presentation, rows)
    zoned = [i for i, spec in enumerate(presentation.specs()) if spec.type.kind == "timestamptz"]
    if not zoned:
        return shown
    out = []
    for row in shown:
        values = list(row)
        for i in zoned:
            if values[i] is not None:
                values[i] = values[i].astimezone(dt.timezone.utc).replace(tzinfo=None)
        out.append(tuple(values))
    return out
