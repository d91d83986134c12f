"""Table references -> DuckDB views: one data statement's DuckDB cursor
(:class:`DataStatement`) and the views its table references become.

Rules:

  Q1. One consistent read per table reference: it reads the lakehouse version of the
      statement's transaction (its own uncommitted writes included), or the version
      its time travel clause names (``FOR SYSTEM_VERSION AS OF n | 'snapshot'``,
      ``FOR SYSTEM_TIME AS OF ts``), and there the Iceberg snapshot that version's
      table definition names. A table whose definition names no metadata yet reads as
      empty with its declared columns (iceberg.tables M3).
  Q2. A table reference is a DuckDB view over ``read_parquet`` of the snapshot's data
      files, mapped by Iceberg field id (a column added later reads as NULL in older
      files; a renamed one keeps its data), with position delete files applied per
      (file, row): a bitmap per data file with deleted rows, tested with ``get_bit``
      on the row number (sql.query.positions DP4), or, beyond DP4's bounds, an
      anti-join of the deleted rows' keys. Equality deletes are refused (PyIceberg cannot read
      them either). Files are read where they are: a local path, or the lakehouse's
      fsspec filesystem registered in DuckDB; nothing is ever downloaded or installed.
      A deleted row is matched by its data file's position in the scan (the delete
      file's ``file_path`` compared with each data file's canonical key) and its row
      number (read_parquet's ``file_index`` and ``file_row_number``): the bitmaps or
      keys of the deleted rows are an Arrow table registered on the statement's
      cursor (or a table of the engine's, engine QX5), from delete files decoded
      once per engine (sql.query.positions DP1, DP2, DP4).
      A view can be scanned any number of times (self-joins, CTEs, recursion).
      System tables (information_schema.*, system.versions) are Arrow tables of the
      same version and join with data tables in one query.
  Q10. A data file whose Parquet schema lacks Iceberg field ids (``Table.add_files``
      of files written by other tools) is read by column name through the table's
      name mapping (``schema.name-mapping.default``), as PyIceberg and the Iceberg
      spec read it: a top-level column of the file takes the field id of the mapping
      entry listing its exact name (any of its aliases), and a table column no
      name of the file maps to reads as NULL; fields nested in a struct are matched
      by their current names. Only tables with a name mapping pay for this: their
      data files' footers are read once per engine (``parquet_schema``) to find the
      files without ids, which are read in branches of their own (UNION ALL BY NAME
      with the files read by id; an UPDATE or DELETE then keys rows through that
      subquery, Q4b's slower way). A table without a name mapping reads every file by
      field id, as before, and pays nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from sqlglot import exp

from trinitylake_dbapi.catalog import CatalogTransaction, TableInfo
from trinitylake_dbapi.errors import (
    CorruptFileError,
    Error,
    NotSupportedError,
    ObjectNotFoundError,
    ProgrammingError,
)
from trinitylake_dbapi.format.types import ColumnSpec
from trinitylake_dbapi.sql.dialect import TrinityLake
from trinitylake_dbapi.sql.query.engine import duck_path, interruptible, read_all
from trinitylake_dbapi.sql.query.names import (
    TABLE_FUNCTIONS,
    is_system_table,
    refuse_engine_functions,
    table_function_name,
)
from trinitylake_dbapi.sql.query.positions import (
    BITS_COLUMN,
    KEY_COLUMN,
    ROW_KEY_SHIFT,
    SLOTS_COLUMN,
    data_file_key,
)
from trinitylake_dbapi.sql.query.pruning import prunable_conditions
from trinitylake_dbapi.sql.query.translate import duckdb_message, raise_undecodable, with_position
from trinitylake_dbapi.sql.query.types import arrow_table, duck_type, quote_identifier, string_literal
from trinitylake_dbapi.sql.session import QueryShape, Session, table_name, time_travel


@dataclass(frozen=True)
class TableScan:
    """The data of one table at one version: its definition and its files."""

    info: TableInfo
    data_files: tuple[str, ...]
    position_deletes: tuple[str, ...]
    #: The table's name mapping (Q10), top level: (field id, its names) of each entry;
    #: None when the table has none.
    name_mapping: tuple[tuple[int, tuple[str, ...]], ...] | None = None
    #: The data files without field ids (Q10): (position in ``data_files``, the file's
    #: top-level column names); filled in by ``DataStatement.laid_out``.
    by_name: tuple[tuple[int, tuple[str, ...]], ...] = ()
    #: (rows, bytes) of each of ``data_files`` as its manifest entry states them
    #: (iceberg.planning PC8; empty: unknown), for sql.query.smallfiles SF1.
    data_sizes: tuple[tuple[int, int], ...] = ()


def _plan(
    session: Session,
    catalog: CatalogTransaction,
    namespace: str,
    name: str,
    reference: exp.Table | None = None,
) -> TableScan:
    """The files of a table's snapshot at ``catalog``'s version; the conditions on the
    table ``reference`` (Q7) skip files whose statistics rule every row out
    (iceberg.planning, from manifests decoded once per process)."""
    states = session.table_states()
    info, metadata, location = states.state(catalog, namespace, name)
    conditions = prunable_conditions(reference, info.columns) if reference is not None else []
    if info.table_format.upper() != "ICEBERG":
        raise NotSupportedError(
            f"table {namespace}.{name} is a {info.table_format} table: only Iceberg tables hold rows here"
        )
    snapshot = metadata.current_snapshot() if location is not None else None
    if snapshot is None or location is None:
        return TableScan(info, (), ())

    def plan() -> tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[int, int], ...]]:
        from trinitylake_dbapi.iceberg.planning import plan_snapshot_files

        ids = {c.name: c.id for c in info.columns}
        try:
            data, deletes = plan_snapshot_files(
                f"{namespace}.{name}", snapshot, states.reader_io(catalog), states.confinement(info, metadata),
                [(ids[column], op, value) for column, op, value in conditions],
                partitioning=(metadata.schema(), metadata.specs()),  # PC7
            )  # fmt: skip
        except Error:
            raise
        except Exception:  # Q8: a manifest that does not decode is named (iceberg.files IF4)
            raise_undecodable(states.reader_io(catalog), snapshot)
            raise
        paths = tuple(duck_path(f[0]) for f in data)
        return paths, tuple(sorted({duck_path(d) for d in deletes})), tuple((f[1], f[2]) for f in data)

    key = repr(sorted(conditions)) if conditions else ""
    data, deletes, sizes = session.data_engine().planned_files(location, snapshot.snapshot_id, key, plan)
    return TableScan(info, data, deletes, _name_mapping(metadata, location), data_sizes=sizes)


#: The Iceberg table property of a name mapping (set by PyIceberg's add_files and by
#: migrations): the table may hold data files without field ids (Q10).
NAME_MAPPING = "schema.name-mapping.default"


def _name_mapping(metadata: Any, location: str) -> tuple[tuple[int, tuple[str, ...]], ...] | None:
    """The top level of a table's name mapping (Q10): (field id, names) of each entry
    that has an id; None when the table (metadata file ``location``) has no
    ``schema.name-mapping.default``."""
    if not metadata.properties.get(NAME_MAPPING):
        return None
    try:
        mapping = metadata.name_mapping()
    except Exception as e:  # noqa: BLE001 - a damaged property is the table's fault
        raise CorruptFileError(
            location, f"its schema.name-mapping.default does not parse: {duckdb_message(e)}"
        ) from None
    return tuple((f.field_id, tuple(f.names)) for f in mapping or () if f.field_id is not None)


def column_expr(c: ColumnSpec, source: str) -> str:
    """One column of a view: the stored value as SQL sees it."""
    if c.type.kind == "int2":
        return f"CAST({source} AS SMALLINT)"
    return source


def schema_map(columns: Sequence[ColumnSpec], *, named: bool, sql_types: bool = False) -> str:
    """read_parquet's ``schema`` argument for a table's columns, mapped by field id (Q2).
    Each column is read under its own name (``named``) or under ``c<position>``: a
    name of ours, so that no column of the user's can take the name of one read_parquet
    adds (``filename``, ``file_row_number``) (Q4b). ``sql_types``: a SMALLINT column is
    read as SMALLINT rather than as its INTEGER carrier (as a view shows it)."""
    entries = []
    for i, c in enumerate(columns):
        kind = "SMALLINT" if sql_types and c.type.kind == "int2" else duck_type(c.type, stored=True)
        name = c.name if named else f"c{i}"
        entries.append(f"{c.id}: {{name: {string_literal(name)}, type: {string_literal(kind)}, default_value: NULL}}")
    return f"MAP {{{', '.join(entries)}}}"


def _name_schema_map(
    columns: Sequence[ColumnSpec], mapping: dict[int, tuple[str, ...]], names: Sequence[str], *, sql_types: bool
) -> str:
    """read_parquet's ``schema`` argument for a file without field ids whose top-level
    columns are ``names`` (Q10): each table column ``c<position>`` is read from the
    file's column that one of its names in ``mapping`` (field id -> names) spells
    exactly, else from a name the file does not have (NULL; DuckDB matches names
    without regard to case, so it is one no name of the file spells in any case)."""
    present = set(names)
    folded = {n.lower() for n in names}
    entries = []
    for i, c in enumerate(columns):
        source = next((n for n in mapping.get(c.id, ()) if n in present), None)
        if source is None:
            absent = (f"__tl_absent_{i}_{k}" for k in itertools.count())
            source = next(n for n in absent if n not in folded)
        kind = "SMALLINT" if sql_types and c.type.kind == "int2" else duck_type(c.type, stored=True)
        entry = f"{{name: 'c{i}', type: {string_literal(kind)}, default_value: NULL}}"
        entries.append(f"{string_literal(source)}: {entry}")
    return f"MAP {{{', '.join(entries)}}}"


def data_read(scan: TableScan, files: Sequence[int], *, sql_types: bool = False) -> str | None:
    """Q10: the FROM item reading the scan's data files at positions ``files`` when one
    of them lacks field ids: columns ``c<position>``, ``filename``, ``file_row_number``
    and ``file_index`` (the file's position in ``scan.data_files``), the files with
    ids read by id and those without by name, one branch per set of columns read,
    UNION ALL BY NAME. None when every one of them has ids (one read_parquet does)."""
    wanted = set(files)
    without = {i: names for i, names in scan.by_name if i in wanted}
    if not without:
        return None
    columns = scan.info.columns
    mapping: dict[int, tuple[str, ...]] = dict(scan.name_mapping or ())
    groups: dict[str, list[int]] = {}
    with_ids = [i for i in files if i not in without]
    if with_ids:
        groups[schema_map(columns, named=False, sql_types=sql_types)] = with_ids
    for i in files:
        if i in without:
            schema = _name_schema_map(columns, mapping, without[i], sql_types=sql_types)
            groups.setdefault(schema, []).append(i)
    select = ", ".join(f"c{i}" for i in range(len(columns)))
    branches = []
    for schema, positions in groups.items():
        paths = ", ".join(string_literal(scan.data_files[i]) for i in positions)
        index = f"[{', '.join(str(i) for i in positions)}][CAST(file_index AS BIGINT) + 1]"
        branches.append(
            f"SELECT {select}, filename, file_row_number, {index} AS file_index "
            f"FROM read_parquet([{paths}], schema = {schema})"
        )
    return f"({' UNION ALL BY NAME '.join(branches)})"


def _view_sql(
    scan: TableScan,
    deleted: str | None = None,
    read: str | None = None,
    bitmaps: tuple[str, tuple[int, ...]] | None = None,
) -> str:
    """The SELECT a table reference's view runs (Q2); ``deleted``: the relation of the
    keys of the rows its position delete files delete (positions DP2), or ``bitmaps``:
    the relation of their bitmaps and the positions of the files they are of (DP4);
    ``read``: the FROM item of its rows when not read_parquet of its files (smallfiles
    SF1)."""
    columns = scan.info.columns
    if not columns:
        return "SELECT NULL WHERE false"
    if not scan.data_files:
        select = ", ".join(
            f"CAST(NULL AS {duck_type(c.type, stored=False)}) AS {quote_identifier(c.name)}" for c in columns
        )
        return f"SELECT {select} WHERE false"
    entries = schema_map(columns, named=False)
    files = ", ".join(string_literal(f) for f in scan.data_files)
    read = read or data_read(scan, range(len(scan.data_files))) or f"read_parquet([{files}], schema = {entries})"
    select = ", ".join(f"{column_expr(c, f'd.c{i}')} AS {quote_identifier(c.name)}" for i, c in enumerate(columns))
    if bitmaps is not None and bitmaps[1]:
        # DP4: a row of a file with deleted rows is live when its bit is 0 (a bitmap has
        # a bit for every row of its file), a row of another file (no slot) is. The
        # one-row join keeps the scan parallel and its filters pushed into read_parquet.
        bitmap = f"x.{BITS_COLUMN}[x.{SLOTS_COLUMN}[CAST(d.file_index AS BIGINT) + 1]]"
        return (
            f"SELECT {select} FROM {read} d, "
            f"(SELECT CAST({BITS_COLUMN} AS BIT[]) AS {BITS_COLUMN}, {SLOTS_COLUMN} FROM {bitmaps[0]}) x "
            f"WHERE coalesce(get_bit({bitmap}, CAST(d.file_row_number AS INTEGER)) = 0, true)"
        )
    if deleted is None:
        return f"SELECT {select} FROM {read} d"
    return (
        # ``file_index`` and ``file_row_number``: read_parquet's hidden columns, which no
        # column of the file shadows (its own are read as c0, c1...), where the options
        # of those names fail on a file holding such a column (DuckDB 1.5). Rows are
        # matched by one BIGINT (file position * 2**40 + row) against keys computed
        # once (positions DP2): reading the delete files and matching their paths in
        # SQL at every statement made the GROUP BY after three 1 % merge-on-read UPDATEs
        # and DELETEs of 1,000,000 rows about twice the CPU of the one before them.
        f"SELECT {select} FROM {read} d ANTI JOIN {deleted} y "
        f"ON y.{KEY_COLUMN} = CAST(d.file_index AS BIGINT) * {ROW_KEY_SHIFT} + d.file_row_number"
    )


class DataStatement:
    """One data statement's DuckDB cursor and the views its table references became."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.engine = session.data_engine()
        self.cursor, self._generation = self.engine.cursor_of_database()
        self._count = itertools.count(1)
        self._owned: list[CatalogTransaction] = []
        self._catalogs: dict[str, CatalogTransaction] = {}
        #: (name, view SQL or Arrow table) of each view made, to make again on a new cursor.
        self._views: list[tuple[str, Any]] = []
        #: The files the statement's views read (Q8: a failed read names its file).
        self.files: list[str] = []
        #: (data files, delete files) of a scan -> the relation of its deleted rows.
        self._deleted: dict[tuple[tuple[str, ...], tuple[str, ...]], str] = {}
        #: Those of them that are tables of the engine's database (engine QX5).
        self._shared_keys: set[str] = set()
        #: Whether a scan's keys become such a table when none is there yet (QX5: not
        #: for a statement that reads its scan once, an UPDATE or DELETE).
        self.make_shared_keys = True
        #: smallfiles SF1: the FROM items reading kept rows this statement's views use,
        #: and each such view's SQL -> the arguments of :func:`_view_sql` giving the same
        #: SQL reading the files (made only for a new database).
        self._small_reads: list[str] = []
        self._direct: dict[str, tuple[Any, ...]] = {}
        #: Whether views apply deletes by bitmaps (positions DP4): not for a statement
        #: that anti-joins the keys of its scan anyway (UPDATE, DELETE), which would
        #: make both.
        self.bitmaps = True

    def close(self) -> None:
        for catalog in self._owned:
            catalog.rollback()
        self._owned.clear()

    def close_cursor(self) -> None:
        with contextlib.suppress(Exception):
            self.cursor.close()

    def __enter__(self) -> "DataStatement":
        return self

    def __exit__(self, *exc: Any) -> None:
        """A write's statement ends whole: its catalogs and its DuckDB cursor."""
        self.close()
        self.close_cursor()

    def catalog_for(self, version: exp.Version | None) -> CatalogTransaction:
        if version is None:
            return self.session.transaction()
        key = version.sql(dialect=TrinityLake)
        if key not in self._catalogs:
            catalog = time_travel(self.session, version)
            self._owned.append(catalog)
            self._catalogs[key] = catalog
        return self._catalogs[key]

    def view_of_table(
        self, namespace: str, name: str, version: exp.Version | None = None, reference: exp.Table | None = None
    ) -> tuple[str, TableScan]:
        """A new view over a table's data (Q1, Q2), pruned by the conditions on
        ``reference`` (Q7); its name and the scan it reads."""
        scan = self.scan_of_table(namespace, name, version, reference)
        return self.view_of_scan(scan), scan

    def scan_of_table(
        self, namespace: str, name: str, version: exp.Version | None = None, reference: exp.Table | None = None
    ) -> TableScan:
        """The scan of a table's data (Q1), pruned by the conditions on ``reference``
        (Q7), without a view (:meth:`scan_sql` reads it)."""
        return self.laid_out(_plan(self.session, self.catalog_for(version), namespace, name, reference))

    def laid_out(self, scan: TableScan) -> TableScan:
        """``scan`` with its data files that lack field ids (Q10), found when the table
        has a name mapping (else every file is read by id and nothing is looked at)."""
        if scan.name_mapping is None or not scan.data_files:
            return scan
        if self.engine.admit(scan.data_files + scan.position_deletes):
            self._move_to_new_cursor()
        self.files += scan.data_files
        without = self.engine.files_without_ids(self.cursor, scan.data_files)
        if not without:
            return scan
        by_name = tuple((i, without[f]) for i, f in enumerate(scan.data_files) if f in without)
        return dataclasses.replace(scan, by_name=by_name)

    def view_of_scan(self, scan: TableScan) -> str:
        """A view over ``scan`` (see :func:`_view_sql`): the engine's shared one of
        the same text when the scan has no delete files (engine QX3) or its deleted
        rows are a table of the database's (QX5), else a new one of this statement's (it
        reads the deleted rows registered on this cursor); its name."""
        body = self.scan_sql(scan)
        view = None
        key = (scan.data_files, scan.position_deletes)
        if not scan.position_deletes or self._deleted.get(key + ("bits",), self._deleted.get(key)) in self._shared_keys:
            view = self.engine.shared_view(body, self._generation, self.run, [name for name, _ in self._views])
        if view is None:
            view = f"__tl_{next(self._count)}"
            self.run(f"CREATE TEMP VIEW {view} AS {body}")
        # On a new cursor (another database) it is made again as this statement's own,
        # reading the files (the kept rows are the old database's, smallfiles SF3).
        self._views.append((view, body))
        return view

    def scan_sql(self, scan: TableScan) -> str:
        """The SELECT of the rows of ``scan`` as a view over it reads them (Q2), for use
        on this statement's cursor (its files admitted, its deleted rows registered)."""
        if self.engine.admit(scan.data_files + scan.position_deletes):
            self._move_to_new_cursor()
        self.files += (*scan.data_files, *scan.position_deletes)
        read = None
        if self.make_shared_keys and not scan.by_name and scan.data_sizes:
            read = self.engine.small_file_rows(  # smallfiles SF1: small files' rows kept
                schema_map(scan.info.columns, named=False), len(scan.info.columns),
                [(f, *size) for f, size in zip(scan.data_files, scan.data_sizes)], self._generation, self.run,
                self._small_reads, keys=bool(scan.position_deletes),
            )  # fmt: skip
        bitmaps = self.deleted_bitmaps(scan)
        deleted = None if bitmaps else self.deleted_rows(scan)
        body = _view_sql(scan, deleted, read, bitmaps)
        if read is not None:
            self._small_reads.append(read)
            self._direct[body] = (scan, deleted, None, bitmaps)
        return body

    def deleted_bitmaps(self, scan: TableScan) -> tuple[str, tuple[int, ...]] | None:
        """The name of a relation on this statement's cursor holding the bitmaps of the
        scan's deleted rows, and the positions of the files they are of (positions DP4);
        None when the scan has no delete files, too many or too large bitmaps, or the
        statement reads by keys (the anti-join of :meth:`deleted_rows` instead)."""
        if not scan.position_deletes or not self.bitmaps:
            return None
        if self.engine.admit(scan.data_files + scan.position_deletes):
            self._move_to_new_cursor()
        found = self.engine.deleted_rows.bitmaps_of_scan(
            scan.data_files, scan.position_deletes, self._read_deletes, self._row_counts
        )
        if found is None:
            return None
        if not found.files:
            return "", ()
        table = found.table
        return self._relation((scan.data_files, scan.position_deletes, "bits"), lambda: table), found.files

    def deleted_rows(self, scan: TableScan) -> str | None:
        """The name of a relation on this statement's cursor holding the keys
        (``row_key``: file position * 2**40 + row) of the rows the scan's position
        delete files delete (sql.query.positions DP2), registered once per statement
        and scan; None when the scan has no delete files."""
        if not scan.position_deletes:
            return None
        return self._relation(
            (scan.data_files, scan.position_deletes),
            lambda: self.engine.deleted_rows.of_scan(scan.data_files, scan.position_deletes, self._read_deletes),
        )

    def deleted_keys(self, scan: TableScan) -> Any:
        """The Arrow table of the keys (as :meth:`deleted_rows` holds them) of the rows
        the scan's position delete files delete, without registering it (a DELETE
        without WHERE, rewrite Q4c, computes its positions from it)."""
        return self.engine.deleted_rows.of_scan(scan.data_files, scan.position_deletes, self._read_deletes)

    def _relation(self, key: tuple, make: Callable[[], Any]) -> str:
        """The relation of this statement's cursor registered under ``key`` (a scan's
        keys or bitmaps), made once from the Arrow table ``make()`` returns: a table
        of the engine's database (QX5) or registered on the cursor."""
        name = self._deleted.get(key)
        if name is None:
            if self.engine.admit(key[0] + key[1]):
                self._move_to_new_cursor()
            table = make()
            name = self.engine.shared_deleted_rows(
                key, table, self._generation, self.run, self.cursor.register, self.cursor.unregister,
                [n for n, _ in self._views], make=self.make_shared_keys,
            )  # QX5: a table of the database's, which a shared view can name
            if name is not None:
                self._shared_keys.add(name)
            else:
                name = f"__tl_{next(self._count)}"
                self.cursor.register(name, table)
            # On a new cursor (another database) the keys are registered under the same name.
            self._views.append((name, table))
            self._deleted[key] = name
        return name

    def _read_deletes(self, files: Sequence[str]) -> Any:
        """The (``file_index``, ``file_path``, ``pos``) rows of position delete files."""
        paths = ", ".join(string_literal(f) for f in files)
        return self.arrow(f"SELECT file_index, file_path, pos FROM read_parquet([{paths}])")

    def _row_counts(self, files: Sequence[str]) -> dict[str, int]:
        """Each Parquet data file's row count, from its footer (positions DP4)."""
        paths = ", ".join(string_literal(f) for f in files)
        rows = self.run(f"SELECT file_name, num_rows FROM parquet_file_metadata([{paths}])")
        by_key = {data_file_key(f): f for f in files}
        return {by_key[data_file_key(name)]: n for name, n in rows if data_file_key(name) in by_key}

    def _move_to_new_cursor(self) -> None:
        """Continue on a cursor of the engine's new database (QX2: it may read more),
        with the views made so far."""
        old = self.cursor
        self.cursor, self._generation = self.engine.cursor_of_database()
        with contextlib.suppress(Exception):
            old.close()
        for view, made in self._views:
            if isinstance(made, str):  # a view's SQL
                direct = self._direct.get(made)
                self.run(f"CREATE TEMP VIEW {view} AS {made if direct is None else _view_sql(*direct)}")
            else:
                self.cursor.register(view, made)

    def _view_of_reference(self, node: exp.Table, version: exp.Version | None) -> str:
        namespace, name = table_name(self.session, node)
        try:
            return self.view_of_table(namespace, name, version, reference=node)[0]
        except ObjectNotFoundError as e:
            raise with_position(e, node) from None


    def replace_tables(self, statement: exp.Expr, *, skip: exp.Table | None = None) -> None:
        """Point every table reference of ``statement`` (but ``skip``) at a view of its
        data or an Arrow table of a system table, in place."""
        refuse_engine_functions(statement)
        shape = QueryShape.of(statement)  # QX1: CTE names count in their scope only
        qualified: set[tuple[str, str]] = set()
        for node in shape.tables:
            if node is skip:
                # UPDATE's and DELETE's target keeps its name: ``ns.t.column`` is ``t.column``.
                if node.args.get("alias") is None and node.text("db"):
                    qualified.add((node.text("db").lower(), node.name.lower()))
                continue
            if not node.name:
                function = table_function_name(node)
                if function in TABLE_FUNCTIONS:
                    continue
                raise NotSupportedError(
                    f"unsupported FROM item {node.sql(dialect=TrinityLake)!r}; the table functions "
                    f"are {', '.join(sorted(TABLE_FUNCTIONS))}"
                )
            if shape.is_cte(node):
                continue
            if node.args.get("catalog"):
                raise ProgrammingError(f"table {node.sql(dialect=TrinityLake)!r}: names have at most two parts")
            version = node.args.get("version")
            if is_system_table(node):
                view = self._system_view(node, version)
            else:
                view = self._view_of_reference(node, version)
            alias = node.args.get("alias")
            if alias is None:
                alias = exp.TableAlias(this=exp.to_identifier(node.name))
                if node.text("db"):
                    qualified.add((node.text("db").lower(), node.name.lower()))
            node.replace(exp.Table(this=exp.to_identifier(view), alias=alias))
        # ``ns.t.column`` (as SQLAlchemy writes it) names the table by its alias now.
        for column in statement.find_all(exp.Column):
            if column.args.get("db") is not None and (column.text("db").lower(), column.table.lower()) in qualified:
                column.set("db", None)

    def _system_view(self, node: exp.Table, version: exp.Version | None) -> str:
        from trinitylake_dbapi.sql.system_tables import SYSTEM_TABLES, Scope

        key = (node.text("db").lower(), node.name.lower())
        spec = SYSTEM_TABLES.get(key)
        if spec is None:
            names = ", ".join(f"{d}.{n}" for d, n in SYSTEM_TABLES)
            raise ObjectNotFoundError(f"system table {key[0]}.{key[1]} does not exist; the system tables are {names}")
        rows = spec.build(self.catalog_for(version), self.session.lakehouse, Scope({}, control=self.session.control))
        view = f"__tl_{next(self._count)}"
        table = arrow_table(spec.columns, rows)
        self.cursor.register(view, table)
        self._views.append((view, table))
        return view

    def run(self, sql: str) -> list[tuple]:
        """Run DuckDB SQL on this statement's cursor, under the statement's control;
        its rows (a statement's result is always read to its end)."""
        with interruptible(self.session.control, self.cursor):
            return self.cursor.execute(sql).fetchall()

    def relation(self, sql: str) -> Any:
        with interruptible(self.session.control, self.cursor):
            return self.cursor.sql(sql)

    def scalar(self, sql: str) -> Any:
        rows = self.run(sql)
        return rows[0][0] if rows else None

    def arrow(self, sql: str) -> Any:
        """The whole result of ``sql`` as an Arrow table."""
        with interruptible(self.session.control, self.cursor):
            return read_all(self.cursor.sql(sql))
