"""MERGE INTO and INSERT ... ON CONFLICT: the statement runs in DuckDB on a working
copy of the target's rows, and what changed is written as one Iceberg commit.

Rules:

  MG1. One statement, one commit: the target's live rows (at the statement's version,
       position deletes applied) are copied into a temporary DuckDB table keyed by
       their place (file, row); DuckDB runs the statement there (its own MERGE INTO and
       INSERT ... ON CONFLICT, so WHEN clauses are tried in order and the first whose
       condition holds acts, as in the SQL standard). The data files holding a row that
       was updated or deleted are replaced by their rows after the statement, and the
       inserted rows are appended, in one overwrite snapshot, new files written by
       partition (iceberg.writing W8; the whole table is rewritten when it has delete
       files); with inserts only, one append. Nothing changed: nothing is written. The
       rows the statement updated or inserted pass Q3's checks first; the rows it left
       are written as they were. ``rowcount`` is the number of rows inserted,
       updated or deleted.
  MG2. A MERGE with a WHEN MATCHED clause in which one target row matches several
       source rows is refused before anything is changed: ProgrammingError "one target
       row matches several source rows" naming the table and the row's key (the SQL
       standard's cardinality violation; DuckDB itself would apply one of them).
  MG3. INSERT ... ON CONFLICT needs a table with a PRIMARY KEY, and a conflict target,
       when given, must be exactly its columns (ProgrammingError naming the table and
       its key otherwise). DO NOTHING skips a row whose key exists (or came earlier in
       the same statement); DO UPDATE SET col = excluded.col [WHERE ...] updates the
       existing row instead, with DuckDB's meaning for keys repeated in one statement.
  MG4. The working copy declares the table's PRIMARY KEY: a MERGE or ON CONFLICT whose
       rows there would hold one key twice is IntegrityError naming the table, the key
       and the duplicate value, before anything is written; rows the copy does not
       hold (MG7) are compared at the commit (iceberg.keys PK2, IntegrityError too). A
       table whose rows in the copy already hold a key twice (written by another engine)
       is IntegrityError naming it, and nothing is written.
  MG6. Merge-on-read by default: on a table of format version 2 whose
       ``write.merge.mode`` (Iceberg's property of MERGE) is ``merge-on-read`` or
       unset, the rows a MERGE or ON CONFLICT updates or deletes are deleted by position
       delete files and their new versions added with the inserted rows, in one
       snapshot (iceberg.deletes RD2-RD4); ``copy-on-write`` rewrites their files
       (MG1).
  MG7. The working copy holds the target rows the statement can act on: those some
       source row matches by the ON condition (every row when a WHEN NOT MATCHED BY
       SOURCE clause acts on the others), or for ON CONFLICT those holding a key of a
       row proposed for insertion (the proposed rows are evaluated once, before). Keys
       stay unique across the whole table by iceberg.keys PK2 at the commit.
  MG5. No name of ours can be reached by the statement: the working copy, its key and
       its marker column are named with words the statement's text and the table's
       columns do not contain; ``INSERT *`` and ``UPDATE SET *`` (which would reach
       them) are refused, and an INSERT without a column list lists the table's.
"""

from __future__ import annotations

import itertools
import re
from typing import Any, Sequence

from sqlglot import exp

from trinitylake_dbapi.errors import (
    IntegrityError,
    NotSupportedError,
    ObjectNotFoundError,
    OperationalError,
    ProgrammingError,
)
from trinitylake_dbapi.format.types import ColumnSpec
from trinitylake_dbapi.sql.compat import duckdb_dialect
from trinitylake_dbapi.sql.dialect import TrinityLake
from trinitylake_dbapi.sql.query.bulk import bound_rows, bulk_insert_template, parameter_table
from trinitylake_dbapi.sql.query.engine import data_file_key
from trinitylake_dbapi.sql.query.positions import KEY_COLUMN, ROW_KEY_SHIFT
from trinitylake_dbapi.sql.query.translate import duckdb_message, text_position, translating, with_position
from trinitylake_dbapi.sql.query.types import duck_type, quote_identifier, stored_arrow_type, string_literal
from trinitylake_dbapi.sql.query.views import DataStatement, TableScan, column_expr, data_read, schema_map
from trinitylake_dbapi.sql.query.writes import (
    as_iceberg, checked_values, load_iceberg_table, overwrite_table, replace_files, write_target,
)
from trinitylake_dbapi.sql.session import Result, Session, refuse_write

__all__ = ["run_merge", "run_upsert"]

#: A row's key in the working copy: its file's position in the scan times 2**40 plus
#: its row number in that file (as sql.query.rewrite keys rows).
_SHIFT = ROW_KEY_SHIFT


class _WorkingCopy:
    """The target's live rows in a temporary DuckDB table (MG1, MG4, MG5)."""

    def __init__(self, statement: DataStatement, scan: TableScan, table: str, text: str) -> None:
        self.statement = statement
        self.scan = scan
        self.table = table
        self.columns: list[ColumnSpec] = list(scan.info.columns)
        self._words = (text + " " + " ".join(c.name for c in self.columns)).lower()
        self._fresh = itertools.count(1)
        self.name, self.key, self.mark = self.fresh("target"), self.fresh("k"), self.fresh("m")
        self.primary_key = list(scan.info.primary_key)
        self.before: dict[int, int] = {}

    def fresh(self, base: str) -> str:
        """A name the statement and the table's columns do not contain (MG5)."""
        while True:
            candidate = f"__tl_{base}_{next(self._fresh)}"
            if candidate not in self._words:
                return candidate

    def load(self, alias: str, restrict: str | None, bind: str | None = None) -> None:
        """Copy the live rows (under ``alias``) meeting ``restrict`` (SQL, None: all of
        them) into the working copy: the rows the statement can act on (MG7). ``bind``:
        a query over the (still empty) working copy, bound first so that its errors
        are the statement's own (a correlated subquery's are less precise)."""
        statement = self.statement
        definitions = [f"{quote_identifier(c.name)} {duck_type(c.type, stored=False)}" for c in self.columns]
        definitions += [f"{self.key} BIGINT", f"{self.mark} BOOLEAN DEFAULT false"]
        if self.primary_key:
            definitions.append(f"PRIMARY KEY ({', '.join(quote_identifier(k) for k in self.primary_key)})")
        statement.run(f"CREATE TEMP TABLE {self.name} ({', '.join(definitions)})")
        if bind is not None:
            statement.relation(bind)
        if self.scan.data_files and self.columns:
            where = "" if restrict is None else f" WHERE {restrict}"
            try:
                statement.run(f"INSERT INTO {self.name} SELECT * FROM ({self._live_rows()}) AS {alias}{where}")
            except statement.engine.errors.ConstraintException:
                raise IntegrityError(
                    f"table {self.table} already holds duplicate values of its primary key "
                    f"({', '.join(self.primary_key)}){self._duplicate_hint()}; MERGE and ON CONFLICT need "
                    "unique keys (see VERIFY)"
                ) from None
            rows = statement.run(f"SELECT {self.key} // {_SHIFT}, count(*) FROM {self.name} GROUP BY 1")
            self.before = {int(f): int(n) for f, n in rows}
        # The keys before the statement: those a DELETE removes are gone from the copy.
        statement.run(f"CREATE TEMP TABLE {self.name}_keys AS SELECT {self.key} FROM {self.name}")

    def _live_rows(self) -> str:
        """SELECT the live rows of the scan: the table's columns, the row's key, false."""
        scan = self.scan
        everything = range(len(scan.data_files))
        files = ", ".join(string_literal(f) for f in scan.data_files)
        read = data_read(scan, everything, sql_types=True) or (
            f"read_parquet([{files}], schema = {schema_map(self.columns, named=False, sql_types=True)})"
        )
        select = ", ".join(
            f"{column_expr(c, f'd.c{i}')} AS {quote_identifier(c.name)}" for i, c in enumerate(self.columns)
        )
        key = f"CAST(d.file_index AS BIGINT) * {_SHIFT} + d.file_row_number"
        sql = f"SELECT {select}, {key} AS {self.key}, false AS {self.mark} FROM {read} d"
        deleted = self.statement.deleted_rows(scan)  # as a view reads them (Q2, positions DP2)
        if deleted is not None:
            sql += f" ANTI JOIN {deleted} x ON x.{KEY_COLUMN} = {key}"
        return sql

    def _duplicate_hint(self) -> str:
        """`` (id = 3)``: one key value the scan holds twice (MG4), or ""."""
        if not self.primary_key:
            return ""
        keys = ", ".join(quote_identifier(k) for k in self.primary_key)
        rows = self.statement.run(
            f"SELECT {keys} FROM ({self._live_rows()}) GROUP BY {keys} HAVING count(*) > 1 LIMIT 1"
        )
        return _key_text(self.primary_key, rows[0]) if rows else ""

    def run(self, sql: str, node: exp.Expr) -> int:
        """Run the statement's DuckDB SQL on the working copy; the rows it changed."""
        statement = self.statement
        try:
            rows = statement.run(sql)
        except statement.engine.errors.ConstraintException as e:
            raise IntegrityError(
                f"{_title(node)} {self.table}: {_constraint_message(duckdb_message(e), self.primary_key)}"
            ) from None
        return int(rows[0][0]) if rows and rows[0] else 0

    def changes(self) -> tuple[list[int], int]:
        """The positions of the files a row of which was updated or deleted, and the
        number of rows inserted; the keys of the rows updated or deleted are stored."""
        statement = self.statement
        rows = statement.run(
            f"SELECT {self.key} // {_SHIFT}, count(*) FILTER (WHERE NOT {self.mark}) FROM {self.name} "
            f"WHERE {self.key} IS NOT NULL GROUP BY 1"
        )
        after = {int(f): int(n) for f, n in rows}
        touched = sorted(f for f, n in self.before.items() if after.get(f, 0) != n)
        inserted = int(statement.scalar(f"SELECT count(*) FROM {self.name} WHERE {self.key} IS NULL"))
        statement.run(
            f"CREATE TEMP TABLE {self.name}_changed AS SELECT {self.key} FROM {self.name}_keys WHERE {self.key} NOT IN "
            f"(SELECT {self.key} FROM {self.name} WHERE NOT {self.mark} AND {self.key} IS NOT NULL)"
        )
        return touched, inserted

    def positions(self) -> Any:
        """The rows the statement updated or deleted, as Arrow (``f``: the file's
        position in the scan, ``pos``: the row's position in it), sorted."""
        return self.statement.arrow(
            f"SELECT CAST({self.key} // {_SHIFT} AS BIGINT) AS f, {self.key} % {_SHIFT} AS pos "
            f"FROM {self.name}_changed ORDER BY 1, 2"
        )

    def kept(self, where: str, schema: Any, new: Any) -> Any:
        """The live rows meeting ``where`` that the statement left as they were, in
        their files' order, as Arrow in the stored types (``schema``: that of the
        checked new rows), followed by ``new``. Read from the table's files: the working
        copy holds only the rows the statement could act on (MG7)."""
        import pyarrow as pa

        stored = ", ".join(
            f"CAST({quote_identifier(c.name)} AS {duck_type(c.type, stored=True)}) AS {quote_identifier(c.name)}"
            for c in self.columns
        )
        rows = self.statement.arrow(
            f"SELECT {stored} FROM ({self._live_rows()}) l WHERE ({where}) "
            f"AND {self.key} NOT IN (SELECT {self.key} FROM {self.name}_changed) ORDER BY {self.key}"
        )
        return pa.concat_tables([rows.cast(schema), new])

    def rows(self, where: str) -> str:
        """SELECT the table's columns of the working copy's rows meeting ``where``, in
        their files' order, inserted rows last."""
        select = ", ".join(quote_identifier(c.name) for c in self.columns)
        return f"SELECT {select} FROM {self.name} WHERE {where} ORDER BY {self.key} NULLS LAST"


def _title(node: exp.Expr) -> str:
    return "MERGE INTO" if isinstance(node, exp.Merge) else "INSERT INTO"


_DUPLICATE = re.compile(r'[Dd]uplicate key "(.*?)"')
_NOT_NULL = re.compile(r"NOT NULL constraint failed: \.?(\S+)")


def _constraint_message(message: str, primary_key: Sequence[str]) -> str:
    """DuckDB's constraint message as MG4 says it."""
    null = _NOT_NULL.search(message)
    if null and primary_key:
        return (
            f"NOT NULL constraint failed: column {null.group(1)!r} would hold NULL; it is part of the "
            f"primary key ({', '.join(primary_key)})"
        )
    found = _DUPLICATE.search(message)
    if found and primary_key:
        return (
            f"duplicate key value violates the primary key ({', '.join(primary_key)}): "
            f"{_key_value(found.group(1), primary_key)} would be held twice"
        )
    return message


def _key_value(text: str, primary_key: Sequence[str]) -> str:
    """DuckDB's ``id: 3`` (or, in a MERGE, ``3``) as ``id = 3``."""
    if ": " in text:
        return text.replace(": ", " = ")
    return f"{', '.join(primary_key)} = {text}"


def _key_text(columns: Sequence[str], values: Sequence[Any]) -> str:
    return " (" + ", ".join(f"{c} = {v!r}" for c, v in zip(columns, values)) + ")"


def _write(session: Session, work: _WorkingCopy, namespace: str, name: str, changed: int) -> Result:
    """MG1: the files holding changed rows replaced and the inserted rows appended, in
    one Iceberg commit of the statement's transaction. Only the rows the statement
    updated or inserted are checked (Q3); the rows it left are written as they were."""
    statement = work.statement
    touched, inserted = work.changes()
    if not touched and not inserted:
        return Result(None, [], changed)
    table = load_iceberg_table(session, namespace, name)
    file_level = not work.scan.position_deletes  # new files are written by partition (iceberg.writing W8)
    full = f"{namespace}.{name}"
    new = checked_values(statement, work.rows(f"{work.key} IS NULL OR {work.mark}"), work.columns, full)
    if not touched:
        table.append(as_iceberg(new, table))
        return Result(None, [], changed)
    if _merge_on_read(table.metadata, full):
        _delete_positions(table, work.scan, work.positions(), as_iceberg(new, table))
        return Result(None, [], changed)
    if not file_level:
        overwrite_table(table, as_iceberg(work.kept("true", new.schema, new), table))
        return Result(None, [], changed)
    files = ", ".join(str(f) for f in touched)
    rows = work.kept(f"{work.key} // {_SHIFT} IN ({files})", new.schema, new)
    replace_files(table, {work.scan.data_files[f] for f in touched}, as_iceberg(rows, table))
    return Result(None, [], changed)


#: Iceberg's table property of a MERGE's mode (as write.update.mode and
#: write.delete.mode are UPDATE's and DELETE's, iceberg.deletes RD1).
MERGE_MODE = "write.merge.mode"


def _merge_on_read(metadata: Any, table: str) -> bool:
    """MG6: whether a MERGE or ON CONFLICT on the table of ``metadata`` deletes the rows
    it changes by position delete files (iceberg.deletes RD1's rule, read from
    ``write.merge.mode``) rather than rewriting their files."""
    from trinitylake_dbapi.iceberg.deletes import MERGE_ON_READ, MODE_DEFAULT

    raw = metadata.properties.get(MERGE_MODE)
    mode = MODE_DEFAULT if raw is None else raw.strip().lower()
    if mode not in (MERGE_ON_READ, "copy-on-write"):
        raise ProgrammingError(
            f"table {table}: {MERGE_MODE} is {raw!r}; it must be 'merge-on-read' or 'copy-on-write'"
        )
    return mode == MERGE_ON_READ and metadata.format_version == 2


def _delete_positions(table: Any, scan: TableScan, positions: Any, rows: Any) -> None:
    """MG6: the rows at ``positions`` (file position in ``scan``, row number) deleted
    by position delete files and ``rows`` added, in one snapshot (iceberg.deletes)."""
    import numpy as np

    from trinitylake_dbapi.iceberg.deletes import delete_rows

    indexes = positions.column("f").to_numpy()
    starts = np.flatnonzero(np.r_[True, indexes[1:] != indexes[:-1]]) if len(indexes) else np.array([], np.int64)
    wanted = {data_file_key(scan.data_files[int(indexes[s])]): int(s) for s in starts}
    found = {data_file_key(f.file_path): f for f in table.data_files(lambda p: data_file_key(p) in wanted)}
    if set(found) != set(wanted):  # iceberg.planning PC6
        raise OperationalError(f"table {table.name()}: the files whose rows change are not all in its snapshot")
    ends = [*(int(s) for s in starts[1:]), len(indexes)]
    pos = positions.column("pos")
    deleted = [(found[key], pos.slice(start, end - start)) for (key, start), end in zip(wanted.items(), ends)]
    delete_rows(table, deleted, rows)


def _known_column(column: exp.Expr, known: dict[str, ColumnSpec], node: exp.Expr, title: str) -> str:
    """The name of the table column an assignment or INSERT column list names."""
    if not isinstance(column, (exp.Column, exp.Identifier)):
        raise ProgrammingError(f"{title}: expected a column name, not {column.sql(dialect=TrinityLake)!r}")
    name = column.name
    if name.lower() not in known:
        raise ObjectNotFoundError(f"{title}: no column {name!r}{text_position(node, name)}")
    return known[name.lower()].name


def _assignments(assignments: Sequence[exp.Expr], known: dict[str, ColumnSpec], node: exp.Expr, title: str,
                 mark: str) -> str:  # fmt: skip
    """``SET col = value, ...`` as DuckDB SQL, with ``mark = true`` (MG1)."""
    out, seen = [], set()
    for assignment in assignments:
        if not isinstance(assignment, exp.EQ):
            raise ProgrammingError(f"{title}: expected column = value, not {assignment.sql(dialect=TrinityLake)!r}")
        column = _known_column(assignment.this, known, node, title)
        if column.lower() in seen:
            raise ProgrammingError(f"{title}: column {column!r} is set twice")
        seen.add(column.lower())
        value = assignment.expression.sql(dialect=duckdb_dialect())
        if known[column.lower()].type.kind == "map":  # a bound dict is a struct
            value = f"CAST(({value}) AS {duck_type(known[column.lower()].type, stored=False)})"
        out.append(f"{quote_identifier(column)} = {value}")
    out.append(f"{mark} = true")
    return ", ".join(out)


def _unqualify_target(statement: exp.Expr, target: exp.Table) -> None:
    """``ns.t.column`` (as SQLAlchemy writes the target's columns) as ``t.column``: the
    working copy is aliased by the target's name."""
    if target.args.get("alias") is not None or not target.text("db"):
        return
    db, name = target.text("db").lower(), target.name.lower()
    for column in statement.find_all(exp.Column):
        if column.args.get("db") is not None and column.text("db").lower() == db and column.table.lower() == name:
            column.set("db", None)


def run_merge(merge: exp.Merge, session: Session) -> Result:
    """MERGE INTO target [AS t] USING source [AS s] ON ... WHEN ... (MG1, MG2, MG4-MG7)."""
    refuse_write(session, "MERGE")
    target, namespace, name = write_target(session, merge.this, "MERGE")
    full = f"{namespace}.{name}"
    if merge.args.get("returning"):
        raise NotSupportedError("MERGE with RETURNING is not supported")
    whens = merge.args.get("whens")
    clauses = list(whens.expressions) if whens is not None else []
    if not clauses:
        raise ProgrammingError(f"MERGE INTO {full}: at least one WHEN clause is needed")
    with DataStatement(session) as statement, translating(merge, statement):
        try:
            _, scan = statement.view_of_table(namespace, name)
        except ObjectNotFoundError as e:
            raise with_position(e, target) from None
        copy = merge.copy()
        statement.replace_tables(copy, skip=copy.this)
        _unqualify_target(copy, target)
        work = _WorkingCopy(statement, scan, full, merge.sql(dialect=TrinityLake))
        known = {c.name.lower(): c for c in work.columns}
        alias = quote_identifier(target.alias_or_name)
        using = copy.args["using"]
        on = copy.args["on"].sql(dialect=duckdb_dialect())
        using_sql = using.sql(dialect=duckdb_dialect())
        if isinstance(using, exp.Values) and not using_sql.startswith("("):
            using_sql = f"({using_sql})"
        parts = []
        for when in copy.args["whens"].expressions:
            then = when.args.get("then")
            condition = when.args.get("condition")
            head = "WHEN MATCHED" if when.args.get("matched") else "WHEN NOT MATCHED"
            if when.args.get("source"):
                head += " BY SOURCE"
            elif not when.args.get("matched") and "BY TARGET" in when.sql(dialect=TrinityLake).upper():
                head += " BY TARGET"
            if condition is not None:
                head += f" AND {condition.sql(dialect=duckdb_dialect())}"
            inserts = not when.args.get("matched") and not when.args.get("source")
            nothing = isinstance(then, exp.Var) and then.name.upper() in ("DO NOTHING", "NOTHING")
            if isinstance(then, exp.Insert) != inserts and not nothing:
                raise ProgrammingError(
                    f"MERGE INTO {full}: {head.split(' AND ')[0]} takes "
                    f"{'INSERT' if inserts else 'UPDATE or DELETE'}, not {when.sql(dialect=TrinityLake)!r}"
                )
            if isinstance(then, exp.Update):
                if any(isinstance(e, exp.Star) for e in then.expressions) or not then.expressions:
                    raise NotSupportedError(f"MERGE INTO {full}: UPDATE SET * is not supported; name the columns")
                parts.append(f"{head} THEN UPDATE SET {_assignments(then.expressions, known, merge, 'MERGE', work.mark)}")
            elif isinstance(then, exp.Insert):
                values = then.expression
                if not isinstance(values, exp.Tuple):
                    raise NotSupportedError(f"MERGE INTO {full}: INSERT * is not supported; list the values")
                columns = (
                    [_known_column(c, known, merge, "MERGE") for c in then.this.expressions]
                    if isinstance(then.this, exp.Tuple) else [c.name for c in work.columns]
                )  # fmt: skip
                if len({c.lower() for c in columns}) != len(columns):
                    raise ProgrammingError(f"MERGE INTO {full}: a column is named twice in INSERT")
                if len(values.expressions) != len(columns):
                    raise ProgrammingError(
                        f"MERGE INTO {full}: INSERT has {len(values.expressions)} value(s) for {len(columns)} column(s)"
                    )
                listed = ", ".join(quote_identifier(c) for c in columns)
                parts.append(f"{head} THEN INSERT ({listed}) VALUES {values.sql(dialect=duckdb_dialect())}")
            elif isinstance(then, exp.Var) and then.name.upper() == "DELETE":
                parts.append(f"{head} THEN DELETE")
            elif isinstance(then, exp.Var) and then.name.upper() in ("DO NOTHING", "NOTHING"):
                parts.append(f"{head} THEN DO NOTHING")
            else:
                raise NotSupportedError(f"MERGE INTO {full}: {when.sql(dialect=TrinityLake)!r} is not supported")
        # MG7: the target rows some source row matches; every row when a clause acts on the others.
        by_source = any(w.args.get("source") for w in clauses)
        work.load(alias, None if by_source else f"EXISTS (SELECT 1 FROM {using_sql} WHERE {on})",
                  bind=f"SELECT 1 FROM {work.name} AS {alias} JOIN {using_sql} ON {on}")
        if any(w.args.get("matched") for w in clauses):
            _refuse_multiple_matches(work, alias, using_sql, on, full)
        sql = f"MERGE INTO {work.name} AS {alias} USING {using_sql} ON {on} {' '.join(parts)}"
        changed = work.run(sql, merge)
        return _write(session, work, namespace, name, changed)


def _refuse_multiple_matches(work: _WorkingCopy, alias: str, using_sql: str, on: str, table: str) -> None:
    """MG2: ProgrammingError when a target row matches several source rows."""
    shown = work.primary_key or [c.name for c in work.columns[:3]]
    keys = ", ".join(f"{alias}.{quote_identifier(c)}" for c in shown)
    rows = work.statement.run(
        f"SELECT {keys} FROM {work.name} AS {alias} JOIN {using_sql} ON {on} "
        f"GROUP BY {alias}.{work.key}, {keys} HAVING count(*) > 1 LIMIT 1"
    )
    if rows:
        raise ProgrammingError(
            f"MERGE INTO {table}: one target row matches several source rows{_key_text(shown, rows[0])}; "
            "the source must match each target row at most once (SQL cardinality violation)"
        )


def run_upsert(insert: exp.Insert, session: Session, parameter_rows: Sequence[Any] | None = None) -> Result:
    """INSERT INTO t [(columns)] VALUES ... | SELECT ... ON CONFLICT [(key)] DO NOTHING |
    DO UPDATE SET ... [WHERE ...] (MG1, MG3-MG7). ``parameter_rows``: the
    parameter sets of an ``executemany``, inserted as one statement."""
    refuse_write(session, "INSERT")
    conflict = insert.args["conflict"]
    target, namespace, name = write_target(session, insert.this, "INSERT")
    full = f"{namespace}.{name}"
    if conflict.args.get("duplicate") or conflict.args.get("constraint"):
        raise NotSupportedError(
            f"INSERT INTO {full}: ON DUPLICATE KEY and ON CONFLICT ON CONSTRAINT are not supported; "
            "use ON CONFLICT (key columns)"
        )
    with DataStatement(session) as statement, translating(insert, statement):
        try:
            _, scan = statement.view_of_table(namespace, name)
        except ObjectNotFoundError as e:
            raise with_position(e, target) from None
        info = scan.info
        key = list(info.primary_key)
        if not key:
            raise ProgrammingError(
                f"INSERT INTO {full} ... ON CONFLICT: the table has no PRIMARY KEY; ON CONFLICT works on "
                "tables whose key is declared (CREATE TABLE ... PRIMARY KEY (...))"
            )
        named = [k.this if isinstance(k, exp.Ordered) else k for k in conflict.args.get("conflict_keys") or []]
        if named and sorted(n.name.lower() for n in named) != sorted(k.lower() for k in key):
            given = ", ".join(n.name for n in named)
            raise ProgrammingError(
                f"INSERT INTO {full} ... ON CONFLICT ({given}): the conflict target must be the table's "
                f"primary key ({', '.join(key)})"
            )
        parameters = None
        if parameter_rows is not None:  # an executemany: its rows as one Arrow table when they type
            listed = [c.name for c in insert.this.expressions] if isinstance(insert.this, exp.Schema) else None
            names = listed if listed is not None else [c.name for c in info.columns]
            holes = bulk_insert_template(insert)
            if holes is not None and not any(True for _ in conflict.find_all(exp.Placeholder)) and (
                {n.lower() for n in names} <= {c.name.lower() for c in info.columns}
            ):
                parameters = parameter_table(holes, parameter_rows, lambda i: stored_arrow_type(info.columns, names[i]))
            if parameters is None:
                insert = bound_rows(insert, parameter_rows)
        copy = insert.copy()
        statement.replace_tables(copy, skip=copy.this if isinstance(copy.this, exp.Table) else copy.this.this)
        _unqualify_target(copy, target)
        conflict = copy.args["conflict"]
        work = _WorkingCopy(statement, scan, full, insert.sql(dialect=TrinityLake))
        known = {c.name.lower(): c for c in work.columns}
        if isinstance(copy.this, exp.Schema):
            columns = [_known_column(c, known, insert, "INSERT") for c in copy.this.expressions]
            if len({c.lower() for c in columns}) != len(columns):
                raise ProgrammingError(f"INSERT INTO {full}: a column is named twice")
        else:
            columns = [c.name for c in work.columns]
        if parameters is not None:
            registered = work.fresh("parameters")
            statement.cursor.register(registered, parameters)
            source_sql = f"SELECT * FROM {registered}"
        else:
            source_sql = copy.expression.sql(dialect=duckdb_dialect())
        width = len(statement.relation(source_sql).columns)
        if width != len(columns):
            raise ProgrammingError(f"INSERT INTO {full}: {width} value(s) per row for {len(columns)} column(s)")
        # The rows proposed, evaluated once; MG7: the target rows holding one of their keys.
        proposed = work.fresh("proposed")
        names = [work.fresh("c") for _ in columns]
        statement.run(
            f"CREATE TEMP TABLE {proposed} AS SELECT * FROM ({source_sql}) "
            f"AS {proposed}({', '.join(names)})"
        )
        alias = quote_identifier(target.alias_or_name)
        by_name = {c.lower(): n for c, n in zip(columns, names)}
        if all(k.lower() in by_name for k in key):
            same = " AND ".join(f"{proposed}.{by_name[k.lower()]} = {alias}.{quote_identifier(k)}" for k in key)
            work.load(alias, f"EXISTS (SELECT 1 FROM {proposed} WHERE {same})")
        else:
            work.load(alias, "false")  # a key column left NULL: NOT NULL fails (MG4)
        action = conflict.args.get("action")
        action_text = action.name.upper() if action is not None else ""
        keys = ", ".join(quote_identifier(k) for k in key)
        if action_text == "DO NOTHING":
            tail = f"ON CONFLICT ({keys}) DO NOTHING"
        elif action_text == "DO UPDATE":
            tail = f"ON CONFLICT ({keys}) DO UPDATE SET " + _assignments(
                conflict.expressions, known, insert, "INSERT ... ON CONFLICT", work.mark
            )
            where = conflict.args.get("where")
            if where is not None:
                tail += f" WHERE {where.this.sql(dialect=duckdb_dialect())}"
        else:
            raise NotSupportedError(f"INSERT INTO {full}: ON CONFLICT {action_text or '?'} is not supported")
        listed = ", ".join(quote_identifier(c) for c in columns)
        sql = f"INSERT INTO {work.name} AS {alias} ({listed}) SELECT * FROM {proposed} {tail}"
        changed = work.run(sql, insert)
        return _write(session, work, namespace, name, changed)
