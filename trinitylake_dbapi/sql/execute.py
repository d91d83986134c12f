"""Bound statement -> catalog call -> result set.

:func:`execute` takes one parsed and bound statement (see dialect.py and binding.py) and
a :class:`Session` (the connection's side: its transaction, its lakehouse, its current
namespace) and returns a :class:`Result`. It holds no catalog logic: each statement is
one or a few calls on :class:`~trinitylake_dbapi.catalog.CatalogTransaction` or
:class:`~trinitylake_dbapi.catalog.LakehouseCatalog`, whose errors (already PEP 249
classes naming the object) pass through unchanged.

Names and timestamps follow :mod:`.session`; ``SHOW TABLES`` without ``IN`` lists the
current namespace, or every namespace before any ``USE``. Data statements (INSERT,
UPDATE, DELETE, CREATE TABLE AS SELECT, and SELECT over tables' rows) go to
:mod:`.query`, which runs them in DuckDB.

Every handler here is registered in :mod:`.registry` under its statement's kind (the
node's ``title``; SELECT, INSERT, UPDATE and DELETE too), with its category, and
:func:`execute` runs a node through the registry (sql.registry SR1). DESCRIBE, SHOW
TABLES and DROP TABLE are prepared into sql.plain's statement and run by its handlers
(sql.plain PS3). Adding a statement: docs/architecture.md, "Add a statement".
"""

from __future__ import annotations

import decimal
from typing import Any, Callable, Sequence

from sqlglot import exp

from trinitylake_dbapi import views
from trinitylake_dbapi.catalog import DEFAULT_NAMESPACE, CatalogTransaction
from trinitylake_dbapi.errors import (
    InvalidNameError,
    NotSupportedError,
    ProgrammingError,
)
from trinitylake_dbapi.format.types import ColumnSpec
from trinitylake_dbapi.sql import plain, registry
from trinitylake_dbapi.sql import statements as st
from trinitylake_dbapi.sql.binding import constant
from trinitylake_dbapi.sql.columns import column_specs, create_table_sql
from trinitylake_dbapi.sql.like import like_filter, like_literal
from trinitylake_dbapi.sql.registry import CATALOG, DATA, LAKEHOUSE, SESSION
from trinitylake_dbapi.sql.session import (
    EMPTY_RESULT,
    QueryShape,
    Result,
    Session,
    reading,
    rows_result,
    show_value,
    table_name,
    time_travel,
    to_millis,
)

# sql.system_tables (sqlglot's optimizer, planner and executor) is imported by the first
# SELECT: no other statement needs it, and it is ~10 ms of the import of the driver.

__all__ = ["Session", "Result", "execute", "DEFAULT_NAMESPACE", "to_millis"]




# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------


def _string(node: exp.Expr | None, what: str, *, null: bool = False) -> str | None:
    value = constant(node, what)
    if value is None and null:
        return None
    if not isinstance(value, str):
        raise ProgrammingError(f"{what} must be a string, not {show_value(value)}")
    return value


def _int(node: exp.Expr | None, what: str) -> int:
    value = constant(node, what)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProgrammingError(f"{what} must be an integer, not {show_value(value)}")
    return value



def _property_value(node: exp.Expr, key: str) -> str:
    value = constant(node, f"the value of property {key!r}")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, decimal.Decimal)):
        return str(value)
    if not isinstance(value, str):
        raise ProgrammingError(f"the value of property {key!r} must be a string, not {show_value(value)}")
    return value


def _properties(props: list[exp.Expr] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in props or []:
        key = _string(p.this, "a property name")
        assert key is not None
        if key in out:
            raise ProgrammingError(f"property {key!r} is given twice")
        out[key] = _property_value(p.args["value"], key)
    return out


def _keys(keys: list[exp.Expr] | None) -> list[str]:
    return [_string(k, "a property name") or "" for k in keys or []]


# ---------------------------------------------------------------------------
# Names and catalogs
# ---------------------------------------------------------------------------


def _namespace_name(node: exp.Expr) -> str:
    if not isinstance(node, exp.Identifier):
        raise ProgrammingError(f"expected a namespace name, not {node.sql()!r}")
    return node.this


# ---------------------------------------------------------------------------
# Statements
# ---------------------------------------------------------------------------

_Handler = Callable[[Any, Session], Result]
#: The kind (sql.registry) of each node class of a parsed statement; a query (SELECT,
#: UNION, ...) is the kind SELECT.
_KINDS: dict[type, str] = {exp.Insert: "INSERT", exp.Update: "UPDATE", exp.Delete: "DELETE", exp.Merge: "MERGE"}
#: Preparations: node class -> what the registry's handler of its kind takes, made from
#: the node (the kinds sql.plain also recognises take its PlainStatement, PS3).
_PREPARATIONS: dict[type, Callable[[Any], Any]] = {}


def _handles(cls: type, category: str = CATALOG) -> Callable[[_Handler], _Handler]:
    """Register the handler of the parsed statement ``cls`` in sql.registry, under its
    title, with its category (catalog unless said) and whether it writes."""

    def register(fn: _Handler) -> _Handler:
        registry.register(cls.title, category, writes=cls.writes)(
            lambda statement, session, parameter_rows: fn(statement, session)
        )
        _KINDS[cls] = cls.title
        return fn

    return register


def _prepares(cls: type) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Register the preparation of the parsed statement ``cls``: its kind is sql.plain's."""

    def add(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        _KINDS[cls] = cls.title
        _PREPARATIONS[cls] = fn
        return fn

    return add


def execute(statement: exp.Expr, session: Session, parameter_rows: Sequence[Any] | None = None) -> Result:
    """Run one bound statement through sql.registry. Writes on a read-only session raise
    ReadOnlyError before anything is touched; a node this module does not know raises
    NotSupportedError. ``parameter_rows``: the parameter sets of an ``executemany`` of a
    bulk INSERT (:func:`trinitylake_dbapi.sql.query.bulk_insert_template`), run as one
    statement."""
    kind = "SELECT" if isinstance(statement, exp.Query) else _KINDS.get(type(statement))
    if kind is None:
        raise NotSupportedError(f"statement {type(statement).__name__} is not supported")
    prepare = _PREPARATIONS.get(type(statement))
    return registry.run(kind, statement if prepare is None else prepare(statement), session, parameter_rows)


@registry.register("SELECT", DATA)
def _run_select(query: exp.Query, session: Session, parameter_rows: Any = None) -> Result:
    """A query: over tables' rows in DuckDB, over system tables alone in the catalog's
    executor (:func:`_select`)."""
    return _select(query, session)


@registry.register("INSERT", DATA, writes=True)
def _run_insert(insert: exp.Insert, session: Session, parameter_rows: Sequence[Any] | None = None) -> Result:
    from trinitylake_dbapi.sql import query as data

    if insert.args.get("conflict") and not insert.args.get("overwrite") and not insert.args.get("returning"):
        from trinitylake_dbapi.sql.query.merge import run_upsert  # INSERT ... ON CONFLICT (MG3)

        return run_upsert(insert, session, parameter_rows)
    return data.run_insert(insert, session, parameter_rows)


@registry.register("UPDATE", DATA, writes=True)
def _run_update(update: exp.Update, session: Session, parameter_rows: Any = None) -> Result:
    from trinitylake_dbapi.sql import query as data

    return data.run_update(update, session)


@registry.register("DELETE", DATA, writes=True)
def _run_delete(delete: exp.Delete, session: Session, parameter_rows: Any = None) -> Result:
    from trinitylake_dbapi.sql import query as data

    return data.run_delete(delete, session)


@registry.register("MERGE", DATA, writes=True)
def _run_merge(merge: exp.Merge, session: Session, parameter_rows: Any = None) -> Result:
    from trinitylake_dbapi.sql.query.merge import run_merge

    return run_merge(merge, session)


@_handles(st.CreateNamespace)
def _create_namespace(s: st.CreateNamespace, session: Session) -> Result:
    properties = _properties(s.args.get("properties"))
    comment = _string(s.args.get("comment"), "the comment", null=True)
    if comment is None and "comment" in properties:
        comment = properties.pop("comment")
    session.transaction().create_namespace(
        _namespace_name(s.this), properties=properties, comment=comment,
        if_not_exists=bool(s.args.get("exists")),
    )  # fmt: skip
    return EMPTY_RESULT


@_handles(st.AlterNamespace)
def _alter_namespace(s: st.AlterNamespace, session: Session) -> Result:
    name = _namespace_name(s.this)
    props = _properties(s.args.get("set_properties"))
    unset = _keys(s.args.get("unset_properties"))
    kwargs: dict[str, Any] = {}
    if "comment" in props:
        kwargs["comment"] = props.pop("comment")
    if "comment" in unset:
        unset.remove("comment")
        kwargs["comment"] = None
    session.transaction().alter_namespace(name, set_properties=props, unset_properties=unset, **kwargs)
    return EMPTY_RESULT


@_handles(st.DropNamespace)
def _drop_namespace(s: st.DropNamespace, session: Session) -> Result:
    session.transaction().drop_namespace(
        _namespace_name(s.this), cascade=bool(s.args.get("cascade")),
        if_exists=bool(s.args.get("exists")),
    )  # fmt: skip
    return EMPTY_RESULT


_SHOW_NAMESPACES_COLUMNS = (("namespace", "varchar"),)


@_handles(st.ShowNamespaces)
def _show_namespaces(s: st.ShowNamespaces, session: Session) -> Result:
    pattern = _string(s.args.get("like"), "the LIKE pattern", null=True)
    with reading(session, s.args.get("version")) as catalog:
        name = None if pattern is None else like_literal(pattern)
        names = None if name is None else _namespace_named(catalog, name)
        if names is None:
            names = catalog.list_namespaces(like_filter(pattern))
    return rows_result(_SHOW_NAMESPACES_COLUMNS, [(n,) for n in names])


def _namespace_named(catalog: CatalogTransaction, name: str) -> list[str] | None:
    """SHOW NAMESPACES LIKE 'name' without wildcards, as one key lookup: what the
    listing would give, or None to let the listing answer (a name that no namespace can
    have, which the lookup refuses and the listing matches nothing with)."""
    try:
        return [name] if catalog.namespace_exists(name) else []
    except InvalidNameError:
        return None


@_handles(st.DescribeNamespace)
def _describe_namespace(s: st.DescribeNamespace, session: Session) -> Result:
    with reading(session, s.args.get("version")) as catalog:
        info = catalog.describe_namespace(_namespace_name(s.this))
    rows = [("namespace", info.name), ("comment", info.comment)]
    rows += sorted(info.properties.items())
    return rows_result((("property", "varchar"), ("value", "varchar")), rows)


def _table_changed(session: Session, namespace: str, name: str, partitioning: Any = None) -> None:
    """After DDL on a table through the catalog, its Iceberg metadata follows the new
    definition in the same transaction (iceberg.catalog P7); ``partitioning``: see
    :meth:`~trinitylake_dbapi.iceberg.tables.TableStates.follow_definition`."""
    session.table_states().follow_definition(session.transaction(), namespace, name, partitioning=partitioning)


def _field_requests(nodes: Sequence[exp.Expr]) -> list[Any]:
    """PARTITIONED BY's fields as iceberg.partitioning's requests (PT1)."""
    from trinitylake_dbapi.iceberg.partitioning import FieldRequest

    requests = []
    for node in nodes:
        argument = node.args.get("argument")
        alias = node.args.get("alias")
        requests.append(FieldRequest(
            transform=node.this.this, column=node.args["column"].this,
            argument=None if argument is None else int(argument.this),
            name=None if alias is None else alias.this,
        ))  # fmt: skip
    return requests


@_handles(st.CreateTable)
def _create_table(s: st.CreateTable, session: Session) -> Result:
    namespace, name = table_name(session, s.this)
    columns, key = column_specs(
        s.args.get("columns") or [], [i.this for i in s.args.get("primary_key") or []]
    )
    properties = _properties(s.args.get("properties"))
    comment = _string(s.args.get("comment"), "the table comment", null=True)
    if comment is None and "comment" in properties:
        comment = properties.pop("comment")
    location = _string(s.args.get("location"), "the location", null=True)
    using = s.args.get("using")

    requests = _field_requests(s.args.get("partitioned_by") or [])
    partitioning = None
    if requests:
        from trinitylake_dbapi.iceberg.partitioning import create_spec

        def partitioning(metadata: Any) -> Any:
            return create_spec(metadata.schema(), requests, f"{namespace}.{name}")

    def create(columns: list[ColumnSpec]) -> bool:
        created = session.transaction().create_table(
            namespace, name, columns, primary_key=key, comment=comment, properties=properties,
            location=location, table_format=using.this if using is not None else "ICEBERG",
            if_not_exists=bool(s.args.get("exists")),
        )  # fmt: skip
        if created:
            _table_changed(session, namespace, name, partitioning)
        return created

    query = s.args.get("query")
    if query is None:
        create(columns)
        return EMPTY_RESULT
    from trinitylake_dbapi.sql import query as data

    return data.run_create_as(session, namespace, name, query, create)


@_handles(st.AddColumns)
def _add_columns(s: st.AddColumns, session: Session) -> Result:
    namespace, name = table_name(session, s.this)
    columns, key = column_specs(s.args["columns"])
    if key:
        raise NotSupportedError("ADD COLUMN cannot change the primary key")
    session.transaction().add_columns(namespace, name, columns)
    _table_changed(session, namespace, name)
    return EMPTY_RESULT


@_handles(st.AddPartitionField)
def _add_partition_field(s: st.AddPartitionField, session: Session) -> Result:
    return _evolve_partitioning(s, session, add=True)


@_handles(st.DropPartitionField)
def _drop_partition_field(s: st.DropPartitionField, session: Session) -> Result:
    return _evolve_partitioning(s, session, add=False)


def _evolve_partitioning(s: st.Statement, session: Session, *, add: bool) -> Result:
    """ALTER TABLE t ADD | DROP PARTITION FIELD (iceberg.partitioning PT3): a new
    default spec in the table's metadata; files already written keep theirs."""
    from trinitylake_dbapi.iceberg.partitioning import evolve_spec

    namespace, name = table_name(session, s.this)
    session.transaction().describe_table(namespace, name)  # the precise error first
    requests = _field_requests([s.args["field"]])

    def partitioning(metadata: Any) -> Any:
        table = f"{namespace}.{name}"
        return evolve_spec(metadata, requests if add else [], [] if add else requests, table)

    _table_changed(session, namespace, name, partitioning)
    return EMPTY_RESULT


@_handles(st.DropColumn)
def _drop_column(s: st.DropColumn, session: Session) -> Result:
    namespace, name = table_name(session, s.this)
    session.transaction().drop_column(namespace, name, s.args["column"].this)
    _table_changed(session, namespace, name)
    return EMPTY_RESULT


@_handles(st.RenameColumn)
def _rename_column(s: st.RenameColumn, session: Session) -> Result:
    namespace, name = table_name(session, s.this)
    session.transaction().rename_column(namespace, name, s.args["old"].this, s.args["new"].this)
    _table_changed(session, namespace, name)
    return EMPTY_RESULT


@_handles(st.RenameTable)
def _rename_table(s: st.RenameTable, session: Session) -> Result:
    namespace, name = table_name(session, s.this)
    target: exp.Table = s.args["to"]
    # An unqualified new name stays in the table's namespace.
    new_namespace = target.text("db") or namespace
    session.transaction().rename_table(namespace, name, new_namespace, target.name)
    return EMPTY_RESULT


# Each statement is atomic: the call that can fail on its input comes first.


@_handles(st.SetTableProperties)
def _set_table_properties(s: st.SetTableProperties, session: Session) -> Result:
    namespace, name = table_name(session, s.this)
    props = _properties(s.args["properties"])
    comment = props.pop("comment", None)
    catalog = session.transaction()
    if props or comment is None:
        catalog.set_table_properties(namespace, name, props)
    if comment is not None:
        catalog.set_table_comment(namespace, name, comment)
    _table_changed(session, namespace, name)
    return EMPTY_RESULT


@_handles(st.UnsetTableProperties)
def _unset_table_properties(s: st.UnsetTableProperties, session: Session) -> Result:
    namespace, name = table_name(session, s.this)
    keys = _keys(s.args["keys"])
    exists = bool(s.args.get("exists"))
    catalog = session.transaction()
    unset_comment = "comment" in keys
    if unset_comment:
        keys = [k for k in keys if k != "comment"]
        if catalog.describe_table(namespace, name).comment is None and not exists:
            raise ProgrammingError(f"table {namespace!r}.{name!r} has no property 'comment'")
    if keys or not unset_comment:
        catalog.unset_table_properties(namespace, name, keys, if_exists=exists)
    if unset_comment:
        catalog.set_table_comment(namespace, name, None)
    _table_changed(session, namespace, name)
    return EMPTY_RESULT


@_handles(st.AlterColumn)
def _alter_column(s: st.AlterColumn, session: Session) -> Result:
    namespace, name = table_name(session, s.this)
    kwargs: dict[str, Any] = {}
    if s.args.get("nullable") is not None:
        kwargs["nullable"] = bool(s.args["nullable"])
    if "comment" in s.args and s.args["comment"] is not None:
        kwargs["comment"] = _string(s.args["comment"], "the comment", null=True)
    session.transaction().alter_column(namespace, name, s.args["column"].this, **kwargs)
    _table_changed(session, namespace, name)
    return EMPTY_RESULT


@_prepares(st.DropTable)
def _prepare_drop_table(s: st.DropTable) -> plain.PlainStatement:
    return plain.PlainStatement(
        plain.DROP_TABLE, s.this.text("db") or None, s.this.name, if_exists=bool(s.args.get("exists"))
    )


@_handles(st.CommentOn)
def _comment_on(s: st.CommentOn, session: Session) -> Result:
    comment = _string(s.args["comment"], "the comment", null=True)
    catalog = session.transaction()
    kind = s.args["kind"]
    if kind == "NAMESPACE":
        catalog.alter_namespace(_namespace_name(s.this), comment=comment)
    elif kind == "TABLE":
        namespace, name = table_name(session, s.this)
        catalog.set_table_comment(namespace, name, comment)
        _table_changed(session, namespace, name)
    else:
        namespace, name = table_name(session, s.this)
        catalog.alter_column(namespace, name, s.args["column"].this, comment=comment)
        _table_changed(session, namespace, name)
    return EMPTY_RESULT


@_prepares(st.ShowTables)
def _prepare_show_tables(s: st.ShowTables) -> plain.PlainStatement:
    ns_node = s.args.get("namespace")
    namespace = _namespace_name(ns_node) if ns_node is not None else None  # None: the current one
    pattern = _string(s.args.get("like"), "the LIKE pattern", null=True)
    return plain.PlainStatement(plain.SHOW_TABLES, namespace, pattern=pattern, version=s.args.get("version"))


@_prepares(st.DescribeTable)
def _prepare_describe_table(s: st.DescribeTable) -> plain.PlainStatement:
    return plain.PlainStatement(
        plain.DESCRIBE, s.this.text("db") or None, s.this.name, version=s.args.get("version"),
        extended=bool(s.args.get("extended")),
    )  # fmt: skip


@_handles(st.ShowCreateTable)
def _show_create_table(s: st.ShowCreateTable, session: Session) -> Result:
    with reading(session, s.args.get("version")) as catalog:
        info = catalog.describe_table(*table_name(session, s.this))
        partitioned_by = _partitioned_by(session, catalog, info)
    return rows_result((("create_statement", "varchar"),), [(create_table_sql(info, partitioned_by),)])


def _partitioned_by(session: Session, catalog: CatalogTransaction, info: Any) -> str:
    """The PARTITIONED BY fields of a managed Iceberg table's current spec (partitioning
    PT4), "" for an unpartitioned or other table (whose metadata is not read)."""
    from trinitylake_dbapi.format.paths import METADATA_LOCATION

    if info.table_format.upper() != "ICEBERG" or METADATA_LOCATION not in info.format_properties:
        return ""
    from trinitylake_dbapi.iceberg.partitioning import spec_sql
    from trinitylake_dbapi.sql.dialect import quote_identifier

    _, metadata, _ = session.table_states().state(catalog, info.namespace, info.name)
    return spec_sql(metadata.schema(), metadata.spec(), quote_identifier)


@_handles(st.ShowPartitions)
def _show_partitions(s: st.ShowPartitions, session: Session) -> Result:
    """SHOW PARTITIONS t: the partitions view of the table (views CV5), at the
    statement's version; an unpartitioned table shows one row of spec 0 and '' when it
    holds data files."""
    from trinitylake_dbapi.iceberg.partitioning import partition_summaries

    with reading(session, s.args.get("version")) as catalog:
        namespace, name = table_name(session, s.this)
        states = session.table_states()
        info, metadata, location = states.state(catalog, namespace, name)
        if info.table_format.upper() != "ICEBERG":
            raise NotSupportedError(f"table {namespace}.{name} is a {info.table_format} table: it has no partitions")
        summaries = [] if location is None else partition_summaries(
            f"{namespace}.{name}", metadata, states.reader_io(catalog), states.confinement(info, metadata)
        )  # fmt: skip
    rows = views.partition_rows(info.namespace, info.name, summaries)
    return rows_result(views.sql_columns(views.SHOW_PARTITIONS), views.sql_rows(views.SHOW_PARTITIONS, rows))


#: SHOW VERSIONS shows system.versions' columns (trinitylake_dbapi.views CV2).
_VERSIONS = views.SQL[("system", "versions")]


@_handles(st.ShowVersions, LAKEHOUSE)
def _show_versions(s: st.ShowVersions, session: Session) -> Result:
    """Newest first, read lazily (H3): LIMIT n reads about n roots, not the history."""
    limit = None if s.args.get("limit") is None else _int(s.args["limit"], "SHOW VERSIONS LIMIT")
    if limit is not None and limit < 0:
        raise ProgrammingError(f"SHOW VERSIONS LIMIT must be at least 0, not {limit}")
    rows = []
    for v in session.lakehouse.iter_versions():
        if limit is not None and len(rows) >= limit:
            break
        session.control.check()  # sql.control CT1
        rows.append(views.version_row(v))
    return rows_result(views.sql_columns(_VERSIONS), views.sql_rows(_VERSIONS, rows))


@_handles(st.UseNamespace, SESSION)
def _use(s: st.UseNamespace, session: Session) -> Result:
    name = _namespace_name(s.this)
    session.transaction().describe_namespace(name)  # raises if it does not exist
    session.use(name)
    return EMPTY_RESULT


@_handles(st.Begin, SESSION)
def _begin(s: st.Begin, session: Session) -> Result:
    session.begin(s.args.get("isolation"))
    return EMPTY_RESULT


@_handles(st.CommitWork, SESSION)
def _commit(s: st.CommitWork, session: Session) -> Result:
    session.commit()
    return EMPTY_RESULT


@_handles(st.RollbackWork, SESSION)
def _rollback(s: st.RollbackWork, session: Session) -> Result:
    session.rollback()
    return EMPTY_RESULT


@_handles(st.RollbackToVersion, LAKEHOUSE)
def _rollback_to_version(s: st.RollbackToVersion, session: Session) -> Result:
    version = _int(s.this, "ROLLBACK TO VERSION")
    session.before_lakehouse_operation(s.title)
    new_version = session.lakehouse.rollback_to(version)
    return rows_result((("version", "int8"),), [(new_version,)])


@_handles(st.ExportSnapshot, LAKEHOUSE)
def _export_snapshot(s: st.ExportSnapshot, session: Session) -> Result:
    name = _string(s.this, "the snapshot name")
    assert name is not None
    version = None if s.args.get("version") is None else _int(s.args["version"], "AS OF VERSION")
    session.before_lakehouse_operation(s.title)
    session.lakehouse.export_snapshot(name, version)
    exported = session.lakehouse.resolve_version(name)
    return rows_result((("snapshot", "varchar"), ("version", "int8")), [(name, exported)])


@_handles(st.ExpireVersions, LAKEHOUSE)
def _expire_versions(s: st.ExpireVersions, session: Session) -> Result:
    retain = None if s.args.get("retain") is None else _int(s.args["retain"], "RETAIN LAST")
    if retain is not None and retain < 1:
        raise ProgrammingError(f"RETAIN LAST must be at least 1, not {retain}")
    older = s.args.get("older_than")
    older_millis = None if older is None else to_millis(constant(older, "OLDER THAN"), "OLDER THAN")
    from trinitylake_dbapi.maintenance import expire_versions  # also reclaims Iceberg files

    session.before_lakehouse_operation(s.title)
    result = expire_versions(
        session.lakehouse, retain_last=retain, older_than_millis=older_millis, dry_run=bool(s.args.get("dry_run"))
    )
    rows = [("version", str(v)) for v in result.versions] + [("file", f) for f in result.files]
    rows += [("snapshot", f"{table}@{snapshot_id}") for table, ids in result.snapshots.items() for snapshot_id in ids]
    return rows_result((("object", "varchar"), ("name", "varchar")), rows)


@_handles(st.OptimizeTable, DATA)
def _optimize(s: st.OptimizeTable, session: Session) -> Result:
    """OPTIMIZE t: compaction in the statement's transaction (iceberg.compaction)."""
    from trinitylake_dbapi.sql.query.writes import optimize_table

    return optimize_table(session, s.this)


@_handles(st.ExpireSnapshots, DATA)
def _expire_snapshots(s: st.ExpireSnapshots, session: Session) -> Result:
    """ALTER TABLE t EXECUTE expire_snapshots(...): the table's Iceberg snapshots its
    retention no longer keeps are dropped, in the statement's transaction
    (iceberg.retention RT1-RT5); one row per dropped snapshot."""
    namespace, name = table_name(session, s.this)
    session.transaction().describe_table(namespace, name)  # the precise PEP 249 error
    older = s.args.get("older_than")
    older_millis = None if older is None else to_millis(constant(older, "older_than"), "older_than")
    retain = None if s.args.get("retain_last") is None else _int(s.args["retain_last"], "retain_last")
    if retain is not None and retain < 1:
        raise ProgrammingError(f"retain_last must be at least 1, not {retain}")
    dropped = session.statement_catalog().expire_snapshots((namespace, name), older_millis, retain)
    return rows_result((("snapshot_id", "int8"),), [(snapshot_id,) for snapshot_id in dropped])


def _select(query: exp.Query, session: Session) -> Result:
    from trinitylake_dbapi.sql import query as data

    shape = QueryShape.of(query)  # one walk, for both questions
    if data.reads_table_data(query, shape):
        return data.run_select(query, session)
    owned: list[CatalogTransaction] = []

    def catalog_for(version: exp.Version | None) -> CatalogTransaction:
        if version is None:
            return session.transaction()
        catalog = time_travel(session, version)
        owned.append(catalog)
        return catalog

    def resolve_table(node: exp.Table) -> tuple[str, str]:
        namespace, name = table_name(session, node)
        session.transaction().describe_table(namespace, name)  # precise not-found errors
        return namespace, name

    try:
        from trinitylake_dbapi.sql import system_tables

        result = system_tables.run_query(
            query, catalog_for=catalog_for, lakehouse=session.lakehouse,
            resolve_table=resolve_table, control=session.control, shape=shape,
        )  # fmt: skip
    finally:
        for catalog in owned:
            catalog.rollback()
    return rows_result(result.columns, result.rows)
