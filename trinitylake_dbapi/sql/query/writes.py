"""INSERT and CREATE TABLE AS SELECT: rows checked (Q3, Q9) and appended in the
statement's transaction.

Rules:

  Q3. Writes check before they write: values are cast to each column's SQL type in
      DuckDB (a value that does not fit is DataError naming the column), NOT NULL is
      IntegrityError naming the column, and CHAR(n) / VARCHAR(n) / BINARY(n) /
      FIXED(n) lengths are DataError naming the column. Only then is one Iceberg
      commit made, through the connection's Iceberg catalog, in the statement's
      transaction (iceberg.catalog P4): it is published with the transaction, as one
      lakehouse version with everything else the transaction did, or not at all.
      (A one-row INSERT of plain values is checked and converted in Python with the
      same results, sql.query.onerow Q12; every row that would fail comes here.)
  Q9. Values a client cannot read back are refused before they are written (Q3's
      DataError naming the column): a DATE or TIMESTAMP outside the years 1-9999
      (DuckDB holds them; Python's datetime and PyIceberg's statistics do not), and
      bytes bound to a STRING/VARCHAR/CHAR column that are not UTF-8 (UTF-8 bytes are
      stored as the text they encode). A result value outside Python's range is a
      DataError naming its column, never an OverflowError.

  Q13. Rows are brought to the Arrow schema of the Iceberg table's current schema
      (:func:`as_iceberg`); rows already in exactly that schema (metadata included), as
      a one-row INSERT's are (Q12), are used as they are, without a cast. The Arrow
      schema of the last Iceberg schema converted is kept (one, per process): it is
      reused for the same Schema object or an equal one (PyIceberg's schemas are
      immutable), so it is always the conversion of the schema given.

(Q4's first sentence, INSERT appends one set of data files, is enforced here; the rest
of Q4 in sql.query.rewrite.)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from sqlglot import exp

from trinitylake_dbapi.catalog import TableInfo
from trinitylake_dbapi.errors import (
    DataError,
    Error,
    IntegrityError,
    NotSupportedError,
    ObjectNotFoundError,
    OperationalError,
    ProgrammingError,
)
from trinitylake_dbapi.format.types import ColumnSpec
from trinitylake_dbapi.sql.compat import duckdb_dialect
from trinitylake_dbapi.sql.dialect import TrinityLake
from trinitylake_dbapi.sql.query.bulk import (
    bound_rows,
    bulk_insert_template,
    parameter_table,
)
from trinitylake_dbapi.sql.query.engine import data_file_key
from trinitylake_dbapi.sql.query.names import is_system_table
from trinitylake_dbapi.sql.query.onerow import plain_row
from trinitylake_dbapi.sql.query.types import stored_arrow_type
from trinitylake_dbapi.sql.query.translate import (
    duckdb_message,
    raise_undecodable,
    text_position,
    translating,
    with_position,
)
from trinitylake_dbapi.sql.query.types import duck_type, quote_identifier, type_of_duck
from trinitylake_dbapi.sql.query.views import DataStatement
from trinitylake_dbapi.sql.session import Result, Session, refuse_write, table_name


def write_target(session: Session, node: exp.Expr, title: str) -> tuple[exp.Table, str, str]:
    table = node.this if isinstance(node, exp.Schema) else node
    if not isinstance(table, exp.Table) or not table.name:
        raise ProgrammingError(f"{title} needs a table name, not {node.sql(dialect=TrinityLake)!r}")
    if table.args.get("version") is not None:
        raise ProgrammingError(f"{title}: a table written to cannot take a time travel clause")
    if is_system_table(table):
        raise ProgrammingError(f"{title}: system table {table.text('db')}.{table.name} is read-only")
    namespace, name = table_name(session, table)
    return table, namespace, name


def _describe_target(session: Session, node: exp.Table, namespace: str, name: str) -> TableInfo:
    try:
        return session.transaction().describe_table(namespace, name)
    except ObjectNotFoundError as e:
        raise with_position(e, node) from None


#: Q9: kinds that store text (bytes bound to them must be UTF-8) and dates and times
#: whose values must lie in the years 1-9999 (Python's datetime, Iceberg's readers).
_TEXT_KINDS = frozenset({"char", "varchar"})
_DATETIME_KINDS = frozenset({"date", "timestamp", "timestamptz"})


#: Nodes of a VALUES list whose rows are the same each time DuckDB evaluates them:
#: literals and what sql.binding makes of bound parameters (no function that could
#: differ between two evaluations, no column, no subquery).
_CONSTANT_NODES = (
    exp.Values, exp.Tuple, exp.TableAlias, exp.Identifier, exp.Literal, exp.Null, exp.Boolean, exp.Neg,
    exp.Cast, exp.DataType, exp.DataTypeParam, exp.Unhex, exp.Array, exp.Struct, exp.PropertyEQ, exp.Map,
    exp.Paren,
)  # fmt: skip


def constant_rows(source: exp.Expr) -> bool:
    """Whether ``source`` (an INSERT's source) is a VALUES list of constants only, whose
    rows :func:`checked_values` may read twice instead of copying them first."""
    return isinstance(source, exp.Values) and all(type(node) in _CONSTANT_NODES for node in source.walk())


def checked_values(
    statement: DataStatement,
    source: str,
    columns: Sequence[ColumnSpec],
    table: str,
    provided: Sequence[str] | None = None,
    primary_key: Sequence[str] = (),
    constant_types: Sequence[Any] | None = None,
) -> Any:
    """Q3: the rows of DuckDB relation ``source`` (one column per name in ``provided``,
    else per table column, in order) as an Arrow table of the table's stored types,
    after every check; DataError or IntegrityError naming the column otherwise. An
    INSERT passes the table's ``primary_key``: a NULL integer key column's message says
    that nothing fills it (SQLAlchemy's default model leaves such a key to the database).

    ``constant_types``: the DuckDB types of ``source``'s columns when its rows are
    constants (:func:`constant_rows`, e.g. a one-row INSERT of bound parameters): the
    checks and the conversion then read ``source`` itself, without copying it into a
    temporary table first (two DuckDB statements fewer: about 1 ms of a one-row INSERT)."""
    provided = [c.name for c in columns] if provided is None else list(provided)
    by_name = {p.lower(): i for i, p in enumerate(provided)}
    source_columns = [f"c{i}" for i in range(len(provided))]
    if constant_types is not None:
        rows = f"({source}) s({', '.join(source_columns)})"
        source_types = {c: str(t).upper() for c, t in zip(source_columns, constant_types)}
    else:
        rows = "__tl_src"
        statement.run(
            f"CREATE OR REPLACE TEMP TABLE __tl_src AS SELECT * FROM ({source}) s({', '.join(source_columns)})"
        )
        source_types = {row[0]: str(row[1]).upper() for row in statement.run("DESCRIBE __tl_src")}
    selects = []
    checks = []
    decoded: set[str] = set()
    for c in columns:
        position = by_name.get(c.name.lower())
        value = "NULL" if position is None else f"c{position}"
        sql_type = duck_type(c.type, stored=False)
        if c.type.kind in _TEXT_KINDS and source_types.get(value) == "BLOB":
            value = f"decode({value})"  # Q9: UTF-8 bytes are text; other bytes fail here
            decoded.add(c.name)
        selects.append((c, value, sql_type))
        if c.type.kind in _DATETIME_KINDS and value != "NULL":
            cast = f"CAST({value} AS {sql_type})"
            checks.append((f"count(*) FILTER (WHERE NOT isfinite({cast}) OR year({cast}) NOT BETWEEN 1 AND 9999)", c, "range"))
        if not c.nullable:
            checks.append((f"count(*) FILTER (WHERE {value} IS NULL)", c, "null"))
        if c.type.kind in ("char", "varchar") and c.type.length is not None:
            checks.append((f"max(length(CAST({value} AS VARCHAR)))", c, "length"))
        if c.type.kind in ("binary", "fixed") and c.type.length is not None:
            checks.append((f"max(octet_length(CAST({value} AS BLOB)))", c, "length"))
        if c.type.kind == "fixed" and c.type.length is not None:
            checks.append((f"min(octet_length(CAST({value} AS BLOB)))", c, "fixed"))
    # Every conversion and check in one pass; when one fails, the conversions again
    # column by column, so that the failure names its column.
    casts = [f"count(CAST({value} AS {sql_type}))" for _, value, sql_type in selects if value != "NULL"]
    found: Sequence[Any] | None = None
    try:
        found = statement.run(f"SELECT {', '.join(casts + [sql for sql, _, _ in checks]) or 'NULL'} FROM {rows}")[0][len(casts):]
    except statement.engine.errors.Error as e:
        if isinstance(e, statement.engine.errors.InterruptException):
            raise
    for c, value, sql_type in selects if found is None else ():
        if value == "NULL":
            continue
        try:
            statement.run(f"SELECT count(CAST({value} AS {sql_type})) FROM {rows}")
        except statement.engine.errors.Error as e:
            if isinstance(e, statement.engine.errors.InterruptException):
                raise
            detail = duckdb_message(e)
            if c.name in decoded:
                raise DataError(
                    f"column {c.name!r} of table {table} ({sql_type}): a bytes value is not UTF-8 text "
                    "(bind str, or bytes that are UTF-8; to store bytes, use a BINARY column)"
                ) from None
            raise DataError(f"column {c.name!r} of table {table} ({sql_type}): {detail}") from None
    if checks:
        if found is None:
            found = statement.run(f"SELECT {', '.join(sql for sql, _, _ in checks)} FROM {rows}")[0]
        for (sql, c, what), value in zip(checks, found):
            if what == "null" and value:
                raise IntegrityError(
                    f"NOT NULL constraint failed: column {c.name!r} of table {table} would hold NULL"
                    f" ({value} row{'s' if value != 1 else ''}){_no_identity(c, primary_key)}"
                )
            if what == "length" and value is not None and value > c.type.length:
                raise DataError(
                    f"column {c.name!r} of table {table}: a value of length {value} is too long for "
                    f"{c.type}"
                )
            if what == "range" and value:
                raise DataError(
                    f"column {c.name!r} of table {table}: a {c.type} value outside the years 1-9999 "
                    f"({value} row{'s' if value != 1 else ''}); Iceberg readers and Python cannot hold it"
                )
            if what == "fixed" and value is not None and value != c.type.length:
                raise DataError(
                    f"column {c.name!r} of table {table}: a value of {value} bytes does not fit {c.type}"
                )
    stored = ", ".join(
        f"CAST(CAST({value} AS {sql_type}) AS {duck_type(c.type, stored=True)}) AS {quote_identifier(c.name)}"
        if value != "NULL" else f"CAST(NULL AS {duck_type(c.type, stored=True)}) AS {quote_identifier(c.name)}"
        for c, value, sql_type in selects
    )  # fmt: skip
    return statement.arrow(f"SELECT {stored} FROM {rows}")


def _no_identity(column: ColumnSpec, primary_key: Sequence[str]) -> str:
    """For an integer primary key column left NULL: that TrinityLake tables have no
    autoincrement or identity columns and how to supply the keys ("" otherwise)."""
    if column.type.kind not in ("int2", "int4", "int8") or column.name.lower() not in {k.lower() for k in primary_key}:
        return ""
    return (
        f": {column.name!r} is the table's primary key, and TrinityLake tables have no "
        "autoincrement or identity columns, so nothing fills it; supply the key's values "
        "in the INSERT (with SQLAlchemy, set the primary key attribute, e.g. Item(id=...))"
    )


def as_iceberg(arrow: Any, table: Any) -> Any:
    """``arrow`` with the Arrow schema of the Iceberg table's current schema.

    Columns holding a map are first rebuilt without a validity bitmap on any map's keys
    (:func:`_map_keys_unmasked`): pyarrow 23 to 25 abort the process (a failed C++ check,
    SIGABRT, not an exception) when a cast rebuilds a map whose keys carry one.
    """
    import pyarrow as pa

    target = iceberg_arrow_schema(table.schema())
    if arrow.schema.equals(target, check_metadata=True):
        return arrow  # Q13: nothing to cast
    for i, field in enumerate(arrow.schema):
        if _holds_map(field.type):
            chunks = [_map_keys_unmasked(chunk, field.name) for chunk in arrow.column(i).chunks]
            arrow = arrow.set_column(i, field, pa.chunked_array(chunks, field.type))
    return arrow.cast(target)


#: Q13: the last Iceberg schema :func:`iceberg_arrow_schema` converted, with its Arrow schema.
_last_arrow_schema: tuple[Any, Any] | None = None


def iceberg_arrow_schema(schema: Any) -> Any:
    """Q13: PyIceberg's ``schema_to_pyarrow(schema, include_field_ids=False)``, kept for
    the last schema converted."""
    global _last_arrow_schema
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    found = _last_arrow_schema
    if found is not None and (found[0] is schema or found[0] == schema):
        return found[1]
    target = schema_to_pyarrow(schema, include_field_ids=False)
    _last_arrow_schema = (schema, target)
    return target


def _holds_map(arrow_type: Any) -> bool:
    """Whether a value of ``arrow_type`` can hold a map (it is one, or a list or struct
    of one, at any depth)."""
    import pyarrow as pa

    if pa.types.is_map(arrow_type):
        return True
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _holds_map(arrow_type.value_type)
    if pa.types.is_struct(arrow_type):
        return any(_holds_map(arrow_type.field(i).type) for i in range(arrow_type.num_fields))
    return False


def _map_keys_unmasked(array: Any, column: str) -> Any:
    """``array`` (holding maps, see :func:`_holds_map`) with the same values, where no
    map's keys carry a validity bitmap.

    DuckDB gives every map's keys one (all valid: DuckDB refuses NULL keys), and a cast
    that converts the keys (string to large_string, as Iceberg's Arrow schema has them)
    makes pyarrow 23 to 25 abort in ``MapArray::SetData`` ("Map array keys array should
    have no nulls", apache/arrow#51029: a bitmap with a null count not yet counted is
    taken for nulls). Keys rebuilt without the bitmap cast on every version. The arrays
    are rebuilt around the same value buffers: nothing is copied but bitmaps of lists,
    structs and maps with NULLs. A NULL key (no valid map has one) is DataError naming
    the column.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    t = array.type
    mask = array.is_null() if array.null_count else None
    if pa.types.is_map(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        # The offsets from 0 over the slice of the children this array spans (a slice of
        # a longer array, as DuckDB's batches can be, has neither).
        offsets = array.offsets
        start, end = offsets[0].as_py(), offsets[-1].as_py()
        if start or offsets.offset:
            offsets = pc.subtract(offsets, pa.scalar(start, offsets.type))
    if pa.types.is_map(t):
        keys = array.keys.slice(start, end - start)
        if keys.null_count:
            raise DataError(f"column {column!r}: a map key is NULL")
        if keys.buffers()[0] is not None:
            keys = _unmasked(keys)
        items = array.items.slice(start, end - start)
        if _holds_map(t.item_type):
            items = _map_keys_unmasked(items, column)
        return pa.MapArray.from_arrays(offsets, keys, items, type=t, mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        kind = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        values = _map_keys_unmasked(array.values.slice(start, end - start), column)
        return kind.from_arrays(offsets, values, type=t, mask=mask)
    if pa.types.is_struct(t):
        children = [
            _map_keys_unmasked(array.field(i), column) if _holds_map(t.field(i).type) else array.field(i)
            for i in range(t.num_fields)
        ]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    return array


def _unmasked(array: Any) -> Any:
    """``array``, which holds no NULL at its top level, without a validity bitmap there."""
    import pyarrow as pa

    t = array.type
    if pa.types.is_struct(t):
        return pa.StructArray.from_arrays([array.field(i) for i in range(t.num_fields)], fields=list(t))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        kind = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        return kind.from_arrays(array.offsets, array.values, type=t)
    if pa.types.is_map(t):
        return pa.MapArray.from_arrays(array.offsets, array.keys, array.items, type=t)
    if t.num_fields:  # another nested type (none is a map key here): left as it is
        return array
    buffers = array.buffers()
    return pa.Array.from_buffers(t, len(array), [None, *buffers[1:]], null_count=0, offset=array.offset)


def replace_files(table: Any, replaced: set[str], rows: Any) -> None:
    """One overwrite snapshot of ``table``: the data files named in ``replaced`` (as
    DuckDB opened them) go, new files holding ``rows`` come (Q4 of UPDATE and DELETE,
    MG1 of MERGE, both copy-on-write)."""
    import uuid

    from trinitylake_dbapi.iceberg.writing import write_data_files

    keys = {data_file_key(f) for f in replaced}
    old = table.data_files(lambda path: data_file_key(path) in keys)  # iceberg.planning PC6
    if len(old) != len(keys):
        raise OperationalError(f"table {table.name()}: the files to rewrite are not all in its snapshot")
    with table.transaction() as transaction:
        with transaction.update_snapshot().overwrite() as overwrite:
            for data_file in old:
                overwrite.delete_data_file(data_file)
            for data_file in write_data_files(table, rows, uuid.uuid4()):
                overwrite.append_data_file(data_file)


def overwrite_table(table: Any, rows: Any) -> None:
    """One overwrite snapshot of ``table`` holding exactly ``rows`` (copy-on-write UPDATE,
    DELETE and MERGE of a table whose delete files must be carried over). PyIceberg warns
    "Merge on read is not yet supported" when ``write.delete.mode`` asks merge-on-read:
    the statement does what the table's properties say (its own mode, RD1), so that
    warning, about PyIceberg's API, never reaches the user."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Merge on read is not yet supported")
        table.overwrite(rows)


def load_iceberg_table(session: Session, namespace: str, name: str) -> Any:
    from pyiceberg.exceptions import NoSuchTableError

    try:
        return session.statement_catalog().load_table((namespace, name))
    except NoSuchTableError:
        session.transaction().describe_table(namespace, name)  # the precise PEP 249 error
        raise


def run_insert(insert: exp.Insert, session: Session, parameter_rows: Sequence[Any] | None = None) -> Result:
    """INSERT INTO t [(columns)] VALUES ... | SELECT ... (Q3, Q4). ``parameter_rows``:
    the parameter sets of an ``executemany`` whose statement is a
    :func:`bulk_insert_template`; they are inserted as one append."""
    refuse_write(session, "INSERT")
    if insert.args.get("overwrite") or insert.args.get("conflict") or insert.args.get("returning"):
        raise NotSupportedError("INSERT OVERWRITE, ON CONFLICT and RETURNING are not supported")
    target, namespace, name = write_target(session, insert.this, "INSERT")
    info = _describe_target(session, target, namespace, name)
    provided: list[str] | None = None
    if isinstance(insert.this, exp.Schema):
        provided = [c.name for c in insert.this.expressions]
        known = {c.name.lower() for c in info.columns}
        for column in insert.this.expressions:
            if column.name.lower() not in known:
                raise ObjectNotFoundError(
                    f"table {namespace}.{name} has no column {column.name!r}{text_position(insert, column.name)}"
                )
        if len({p.lower() for p in provided}) != len(provided):
            raise ProgrammingError(f"INSERT INTO {namespace}.{name}: a column is named twice")
    width = len(provided) if provided is not None else len(info.columns)
    parameters = None
    if parameter_rows is not None:
        holes = bulk_insert_template(insert)
        assert holes is not None, "parameter_rows need an INSERT ... VALUES (?, ...) statement"
        names = provided if provided is not None else [c.name for c in info.columns]
        parameters = parameter_table(holes, parameter_rows, lambda i: stored_arrow_type(info.columns, names[i]))
        if parameters is None:
            insert = bound_rows(insert, parameter_rows)
    if parameters is None:
        plain = plain_row(insert.expression, info.columns, provided)  # Q12: without DuckDB
        if plain is not None:
            return _append(session, namespace, name, plain)
    with DataStatement(session) as statement, translating(insert, statement):
        if parameters is not None:
            statement.cursor.register("__tl_parameters", parameters)
            sql = "SELECT * FROM __tl_parameters"
        else:
            source = insert.expression.copy()
            statement.replace_tables(source)
            _maps_as_maps(source, info.columns, provided)
            sql = source.sql(dialect=duckdb_dialect())
        relation = statement.relation(sql)
        found = len(relation.columns)
        if found != width:
            raise ProgrammingError(
                f"INSERT INTO {namespace}.{name}: {found} value(s) per row for {width} column(s)"
            )
        constant = parameters is None and constant_rows(source)
        data = checked_values(statement, sql, info.columns, f"{namespace}.{name}", provided, info.primary_key,
                              constant_types=relation.types if constant else None)  # fmt: skip
    return _append(session, namespace, name, data)


def _maps_as_maps(source: exp.Expr, columns: Sequence[ColumnSpec], provided: Sequence[str] | None) -> None:
    """In VALUES rows, a struct literal for a map column (a bound dict, see binding) is
    written as the map it stands for, so that rows of one column agree on their type
    (DuckDB does not unify ``{'a': 1}`` with ``MAP([], [])``)."""
    if not isinstance(source, exp.Values):
        return
    by_name = {c.name.lower(): c for c in columns}
    targets = [by_name.get(n.lower()) for n in provided] if provided is not None else list(columns)
    for row in source.expressions:
        if not isinstance(row, exp.Tuple):
            continue
        for value, column in zip(row.expressions, targets):
            if column is not None and column.type.kind == "map" and isinstance(value, exp.Struct):
                pairs = [e for e in value.expressions if isinstance(e, exp.PropertyEQ)]
                if len(pairs) == len(value.expressions):
                    value.replace(exp.Map(
                        keys=exp.Array(expressions=[exp.Literal.string(p.name) for p in pairs]),
                        values=exp.Array(expressions=[p.expression for p in pairs]),
                    ))  # fmt: skip


def _append(session: Session, namespace: str, name: str, data: Any) -> Result:
    """Append checked rows (Q3) to a table in the statement's transaction (Q4)."""
    if data.num_rows:
        from trinitylake_dbapi.iceberg.writing import new_append, write_data_files

        table = load_iceberg_table(session, namespace, name)
        rows = as_iceberg(data, table)
        try:
            with table.transaction() as transaction:
                with new_append(transaction) as append:  # iceberg.writing W5: merges manifests
                    for data_file in write_data_files(table, rows, append.commit_uuid):  # W8: by partition
                        append.append_data_file(data_file)
        except Error:
            raise
        except Exception:  # Q8: the parent's manifest list may not decode (iceberg.files IF4)
            if table.metadata.current_snapshot() is not None:
                raise_undecodable(table.io, table.metadata.current_snapshot())
            raise
        _auto_compact(table)
    return Result(None, [], data.num_rows)


def _auto_compact(table: Any) -> None:
    """iceberg.compaction CP6: after an append, compact the table if its properties ask
    (a SerializationError of the compaction's own commit is CP6's skip too)."""
    from trinitylake_dbapi.errors import SerializationError
    from trinitylake_dbapi.iceberg.compaction import auto_compact, auto_compaction_due

    if not auto_compaction_due(table.metadata):
        return
    try:
        auto_compact(table)
    except SerializationError:
        pass


def run_create_as(
    session: Session, namespace: str, name: str, query: exp.Query, create: Callable[[list[ColumnSpec]], bool]
) -> Result:
    """CREATE TABLE t AS SELECT: ``create(columns)`` makes the table (in the
    statement's transaction) with the query's columns, then its rows are appended. When
    ``create`` makes nothing (IF NOT EXISTS on an existing table), nothing is inserted."""
    refuse_write(session, "CREATE TABLE AS SELECT")
    with DataStatement(session) as statement, translating(query, statement):
        source = query.copy()
        statement.replace_tables(source)
        sql = source.sql(dialect=duckdb_dialect())
        relation = statement.relation(sql)
        columns = [ColumnSpec(n, type_of_duck(t, n)) for n, t in zip(relation.columns, relation.types)]
        if not create(columns):
            return Result(None, [], 0)
        info = session.transaction().describe_table(namespace, name)
        data = checked_values(statement, sql, info.columns, f"{namespace}.{name}")
    return _append(session, namespace, name, data)


#: OPTIMIZE's result columns: what the compaction did (iceberg.compaction CompactionResult).
OPTIMIZE_COLUMNS = (
    ("rewritten_data_files", "int8"),
    ("added_data_files", "int8"),
    ("removed_delete_files", "int8"),
    ("rewritten_bytes", "int8"),
    ("added_bytes", "int8"),
)


def optimize_table(session: Session, node: exp.Expr) -> Result:
    """OPTIMIZE t: the table's small files (and their position deletes) rewritten into
    files of its target size and its manifests rewritten, as one replace commit in the
    statement's transaction (iceberg.compaction CP1-CP5); one row saying what changed
    (all zero when the table was already compact: nothing is committed)."""
    from trinitylake_dbapi.iceberg.compaction import compact
    from trinitylake_dbapi.sql.session import rows_result

    refuse_write(session, "OPTIMIZE")
    target, namespace, name = write_target(session, node, "OPTIMIZE")
    _describe_target(session, target, namespace, name)
    table = load_iceberg_table(session, namespace, name)
    done = compact(table)
    row = (done.rewritten_data_files, done.added_data_files, done.removed_delete_files,
           done.rewritten_bytes, done.added_bytes)  # fmt: skip
    return rows_result(OPTIMIZE_COLUMNS, [row])
