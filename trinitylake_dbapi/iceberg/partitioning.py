"""Partition specs of the lakehouse's Iceberg tables, as SQL spells them.

A table's partitioning lives in its Iceberg metadata only (a PyIceberg ``PartitionSpec``,
Iceberg's own field ids and transforms): the lakehouse definition does not repeat it, so
every Iceberg reader (PyIceberg, DuckDB's iceberg extension, Spark) sees the same spec.

Rules:

  PT1 A partition field is written ``transform(column)`` (``year``, ``month``, ``day``,
      ``hour``, also Spark's plural ``years`` ... ``hours``), ``bucket(n, column)``,
      ``truncate(width, column)`` (either argument order), ``identity(column)`` or a bare
      column name (identity), optionally followed by ``AS name``. Field names default to
      PyIceberg's (``ts_day``, ``id_bucket_16``, ``name_trunc_4``, the column's name for
      identity), so a spec evolved by PyIceberg names fields alike.
  PT2 Bad input is refused before anything is written, naming the field as written:
      an unknown column (ObjectNotFoundError), an unknown transform, a transform that
      cannot take the column's type (``day`` of a string), a bucket count or a truncate
      width below 1, a field given twice, two time transforms (year, month, day, hour)
      of one column in one spec (Iceberg's redundant partitions), or a name taken
      (ProgrammingError); truncate of a binary and bucket of a time column, which
      PyIceberg cannot write (NotSupportedError).
  PT3 CREATE TABLE's spec is spec 0 with field ids from 1000 (Iceberg's start), as an
      Iceberg engine creates it. Evolution (ADD / DROP PARTITION FIELD) is PyIceberg's
      ``UpdateSpec`` (field ids reused for a field seen in an earlier spec, a compatible
      earlier spec reused, format 1 keeping a dropped field as ``void``): one new
      default spec; files written earlier keep the spec they were written with.
  PT5 :func:`partition_summaries`: a snapshot's live data and position delete files
      grouped by (spec, partition value), with their record counts, file counts and
      data sizes (views CV5);
      the files are first planned (planning PC3: a managed table's manifests are
      checked to lie under its location before they are read).
  PT4 :func:`spec_sql` renders a spec in PT1's syntax (``AS name`` only where the name is
      not the default), so SHOW CREATE TABLE's text creates the same spec again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from pyiceberg.partitioning import PARTITION_FIELD_ID_START, PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import TableUpdate
from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)

from ..errors import NotSupportedError, ObjectNotFoundError, ProgrammingError

__all__ = ["FieldRequest", "TRANSFORMS", "create_spec", "evolve_spec", "field_sql", "partition_summaries", "spec_sql",
           "transform_of"]

#: PT1: the transforms by the words that name them (Spark's plurals too).
TRANSFORMS = {
    "identity": "identity", "bucket": "bucket", "truncate": "truncate",
    "year": "year", "years": "year", "month": "month", "months": "month",
    "day": "day", "days": "day", "date": "day", "hour": "hour", "hours": "hour", "date_hour": "hour",
}  # fmt: skip
_WITH_ARGUMENT = ("bucket", "truncate")


@dataclass(frozen=True)
class FieldRequest:
    """One partition field as written in SQL (PT1): ``transform`` is a key of
    :data:`TRANSFORMS` (as written), ``argument`` the bucket count or truncate width."""

    transform: str
    column: str
    argument: int | None = None
    name: str | None = None

    def text(self) -> str:
        """The field as SQL writes it, for messages."""
        kind = self.transform.lower()
        if kind == "identity" and self.argument is None:
            body = self.column
        elif self.argument is not None:
            body = f"{kind}({self.argument}, {self.column})"
        else:
            body = f"{kind}({self.column})"
        return body if self.name is None else f"{body} AS {self.name}"


def transform_of(request: FieldRequest) -> Transform[Any, Any]:
    """The Iceberg transform ``request`` names (PT1, PT2)."""
    kind = TRANSFORMS.get(request.transform.lower())
    if kind is None:
        raise ProgrammingError(
            f"partition field {request.text()}: unknown transform {request.transform!r}; Iceberg's are "
            "identity, bucket(n, column), truncate(width, column), year, month, day and hour"
        )
    if kind in _WITH_ARGUMENT:
        if request.argument is None:
            raise ProgrammingError(f"partition field {request.text()}: {kind} takes a number and a column")
        if request.argument < 1:
            what = "bucket count" if kind == "bucket" else "truncate width"
            raise ProgrammingError(f"partition field {request.text()}: the {what} must be at least 1, not {request.argument}")
        return BucketTransform(request.argument) if kind == "bucket" else TruncateTransform(request.argument)
    if request.argument is not None:
        raise ProgrammingError(f"partition field {request.text()}: {kind} takes only a column")
    return {"identity": IdentityTransform, "year": YearTransform, "month": MonthTransform,
            "day": DayTransform, "hour": HourTransform}[kind]()  # fmt: skip


def _column(schema: Schema, request: FieldRequest, table: str) -> Any:
    """The schema field ``request`` partitions by (names compared without case, as SQL's)."""
    try:
        return schema.find_field(request.column, case_sensitive=False)
    except ValueError:
        raise ObjectNotFoundError(f"partition field {request.text()}: table {table} has no column {request.column!r}") from None


def _field_name(schema: Schema, field: Any, transform: Transform[Any, Any]) -> str:
    """PT1's default name of a field of ``transform`` over schema field ``field``."""
    if isinstance(transform, BucketTransform):
        return f"{field.name}_bucket_{transform.num_buckets}"
    if isinstance(transform, TruncateTransform):
        return f"{field.name}_trunc_{transform.width}"
    if isinstance(transform, (YearTransform, MonthTransform, DayTransform, HourTransform)):
        return f"{field.name}_{str(transform)}"
    return field.name


def _unsupported(transform: Transform[Any, Any], field_type: Any) -> bool:
    """PT2: transforms Iceberg allows that PyIceberg 0.12 cannot write: truncate of a
    binary column (pyiceberg-core has no truncate of large_binary) and bucket of a time
    column (its bucket hash fails on the time's microseconds)."""
    from pyiceberg.types import BinaryType, TimeType

    return (isinstance(transform, TruncateTransform) and isinstance(field_type, BinaryType)) or (
        isinstance(transform, BucketTransform) and isinstance(field_type, TimeType)
    )


def _checked(schema: Schema, request: FieldRequest, table: str) -> tuple[Any, Transform[Any, Any]]:
    transform = transform_of(request)
    field = _column(schema, request, table)
    if not transform.can_transform(field.field_type):
        raise ProgrammingError(
            f"partition field {request.text()}: {TRANSFORMS[request.transform.lower()]} cannot partition "
            f"column {field.name!r} of type {field.field_type}"
        )
    if _unsupported(transform, field.field_type):
        raise NotSupportedError(
            f"partition field {request.text()}: {TRANSFORMS[request.transform.lower()]} of a {field.field_type} "
            "column is not supported (PyIceberg cannot write it); use another transform"
        )
    return field, transform


def create_spec(schema: Schema, requests: Sequence[FieldRequest], table: str) -> PartitionSpec:
    """PT3: spec 0 of a new table partitioned by ``requests`` (checked, PT2)."""
    fields: list[PartitionField] = []
    seen: dict[tuple[int, str], str] = {}
    names: set[str] = set()
    times: dict[int, str] = {}
    for request in requests:
        source, transform = _checked(schema, request, table)
        key = (source.field_id, str(transform))
        if key in seen:
            raise ProgrammingError(f"partition field {request.text()}: the table is already partitioned by {seen[key]}")
        seen[key] = request.text()
        if isinstance(transform, _TIME):
            if source.field_id in times:
                raise _redundant(request, times[source.field_id])
            times[source.field_id] = request.text()
        name = request.name or _field_name(schema, source, transform)
        _check_name(schema, name, source.field_id, transform, names, request)
        names.add(name)
        fields.append(PartitionField(source.field_id, PARTITION_FIELD_ID_START + len(fields), transform, name))
    return PartitionSpec(*fields, spec_id=0)


_TIME = (YearTransform, MonthTransform, DayTransform, HourTransform)


def _redundant(request: FieldRequest, other: str) -> ProgrammingError:
    return ProgrammingError(
        f"partition field {request.text()}: redundant with {other} (Iceberg allows one time transform of a "
        "column per spec; drop the other first)"
    )


def _check_name(schema: Schema, name: str, source_id: int, transform: Any, names: set[str], request: FieldRequest) -> None:
    if name in names:
        raise ProgrammingError(f"partition field {request.text()}: a partition field is already named {name!r}")
    try:
        column = schema.find_field(name)
    except ValueError:
        return
    if not isinstance(transform, (IdentityTransform, VoidTransform)) or column.field_id != source_id:
        raise ProgrammingError(
            f"partition field {request.text()}: its name {name!r} is a column's; name it with AS"
        )


def evolve_spec(
    metadata: TableMetadata, add: Sequence[FieldRequest], drop: Sequence[FieldRequest], table: str
) -> tuple[TableUpdate, ...]:
    """PT3: the updates that make the table's default spec its current one with the fields
    ``add`` added and ``drop`` (each by its transform and column, or by its field name
    when written as a bare name that is no identity field) removed; () when unchanged."""
    from pyiceberg.table.update.spec import UpdateSpec

    schema = metadata.schema()
    recorder = _Recorder(metadata)
    update = UpdateSpec(recorder, case_sensitive=False)  # type: ignore[arg-type]
    current = metadata.spec()
    try:
        for request in drop:
            update.remove_field(_drop_name(schema, current, request, table))
        dropped = {_drop_name(schema, current, request, table) for request in drop}
        for request in add:
            source, transform = _checked(schema, request, table)
            for field in current.fields:
                if field.source_id != source.field_id or field.name in dropped:
                    continue
                if field.transform == transform:
                    raise ProgrammingError(f"partition field {request.text()}: the table is already partitioned by it")
                if isinstance(transform, _TIME) and isinstance(field.transform, _TIME):
                    raise _redundant(request, field_sql(schema, field))
            update.add_field(source.name, transform, request.name)
        update.commit()
    except ValueError as e:
        raise ProgrammingError(f"table {table}: {e}") from None
    return recorder.updates


class _Recorder:
    """What PyIceberg's ``UpdateSpec`` needs of a transaction: the metadata it evolves,
    and a place to hand its updates to (kept, not applied: tables M4 publishes them)."""

    def __init__(self, metadata: TableMetadata) -> None:
        self.table_metadata = metadata
        self.updates: tuple[TableUpdate, ...] = ()

    def _apply(self, updates: tuple[TableUpdate, ...], requirements: tuple[Any, ...] = ()) -> None:
        self.updates = (*self.updates, *updates)


def _drop_name(schema: Schema, spec: PartitionSpec, request: FieldRequest, table: str) -> str:
    """The name of the field of ``spec`` that ``request`` (DROP PARTITION FIELD) means."""
    if request.transform.lower() == "identity" and request.argument is None:
        for field in spec.fields:  # a bare name: an identity field's column, or a field's name
            if isinstance(field.transform, IdentityTransform) and schema.find_column_name(field.source_id).lower() == request.column.lower():
                return field.name
        for field in spec.fields:
            if field.name.lower() == request.column.lower():
                return field.name
    else:
        source, transform = _checked(schema, request, table)
        for field in spec.fields:
            if field.source_id == source.field_id and field.transform == transform:
                return field.name
    raise ObjectNotFoundError(f"table {table} is not partitioned by {request.text()}")


def field_sql(schema: Schema, field: PartitionField, quote: Any = str) -> str:
    """One field of a spec in PT1's syntax (PT4); ``quote`` quotes a name."""
    column = schema.find_column_name(field.source_id) or f"<column {field.source_id}>"
    transform = field.transform
    if isinstance(transform, IdentityTransform):
        text = quote(column)
    elif isinstance(transform, BucketTransform):
        text = f"bucket({transform.num_buckets}, {quote(column)})"
    elif isinstance(transform, TruncateTransform):
        text = f"truncate({transform.width}, {quote(column)})"
    else:
        text = f"{transform}({quote(column)})"
    source = schema.find_field(field.source_id) if column else None
    if source is None or field.name != _field_name(schema, source, transform):
        text += f" AS {quote(field.name)}"
    return text


def spec_sql(schema: Schema, spec: PartitionSpec, quote: Any = str) -> str:
    """PT4: ``spec``'s fields in PT1's syntax, comma-separated ("" when unpartitioned).
    A void field (a field dropped from a format 1 table) is left out."""
    return ", ".join(field_sql(schema, f, quote) for f in spec.fields if not isinstance(f.transform, VoidTransform))


def partition_summaries(table: str, metadata: TableMetadata, io: Any, confinement: Any) -> list[tuple]:
    """PT5: (spec id, partition path, records, files, bytes, position delete records,
    position delete files) of each partition of the live files of ``metadata``'s
    current snapshot."""
    from pyiceberg.manifest import DataFileContent

    from .manifests import manifest_entries, snapshot_manifests
    from .planning import plan_snapshot

    snapshot = metadata.current_snapshot()
    if snapshot is None:
        return []
    plan_snapshot(table, snapshot, io, confinement)  # PC3's checks before the reads below
    schema = metadata.schema()
    specs = metadata.specs()
    totals: dict[tuple[int, str], list[int]] = {}
    for manifest in snapshot_manifests(io, snapshot):
        for entry in manifest_entries(io, manifest):
            data = entry.data_file
            if data.content not in (DataFileContent.DATA, DataFileContent.POSITION_DELETES):
                continue
            spec = specs.get(data.spec_id or 0)
            path = "" if spec is None or spec.is_unpartitioned() else spec.partition_to_path(data.partition, schema)
            total = totals.setdefault((data.spec_id or 0, path), [0, 0, 0, 0, 0])
            if data.content == DataFileContent.DATA:
                total[0] += data.record_count
                total[1] += 1
                total[2] += data.file_size_in_bytes
            else:
                total[3] += data.record_count
                total[4] += 1
    return [(spec_id, path, *total) for (spec_id, path), total in totals.items()]
