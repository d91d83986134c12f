"""Data statements: SELECT over tables' rows, INSERT, UPDATE, DELETE and CREATE TABLE AS
SELECT, run in DuckDB over the tables' Iceberg data.

The statement is parsed by the project's dialect like every other; this package replaces
each table reference with a view over that table's data at the right lakehouse version,
turns the statement into DuckDB SQL with sqlglot, and runs it on a DuckDB cursor of the
connection's :class:`Engine`. What DuckDB cannot know (versions, definitions, Iceberg
snapshots, the lakehouse's filesystem) is decided here; everything relational is
DuckDB's.

One module per concern, each stating the rules it enforces:

  engine     the locked DuckDB database per connection, its cursors (Q6, QX2)
  names      which statements are data statements; names and functions allowed (QX1)
  types      SPEC 5 kinds <-> DuckDB <-> Arrow
  pruning    files pruned by a query's conditions (Q7)
  views      table references -> DuckDB views, one statement's cursor (Q1, Q2, Q10)
  translate  DuckDB's errors as PEP 249 errors; damaged files named (Q8)
  reads      SELECT as a streaming result (Q5)
  writes     INSERT and CREATE TABLE AS SELECT: checks and appends (Q3, Q9)
  bulk       executemany templates and their parameter sets
  rewrite    UPDATE and DELETE, merge-on-read or copy-on-write (Q4, Q4b)
  merge      MERGE INTO and INSERT ... ON CONFLICT on a working copy (MG1-MG5)

DuckDB is imported by the first data statement only: catalog statements never pay for
it (nor for PyIceberg's data path).
"""

from __future__ import annotations

from trinitylake_dbapi.sql.query.bulk import bulk_insert_template, multi_row_template, multi_row_text
from trinitylake_dbapi.sql.query.engine import Engine, check_memory_limit
from trinitylake_dbapi.sql.query.names import reads_table_data
from trinitylake_dbapi.sql.query.reads import run_select
from trinitylake_dbapi.sql.query.rewrite import run_delete, run_update
from trinitylake_dbapi.sql.query.writes import run_create_as, run_insert

__all__ = [
    "Engine",
    "check_memory_limit",
    "reads_table_data",
    "run_select",
    "run_insert",
    "run_create_as",
    "bulk_insert_template",
    "multi_row_template",
    "multi_row_text",
    "run_update",
    "run_delete",
]
