"""Data files without Iceberg field ids (PyIceberg's ``add_files``, Hive/Spark migrations:
read through the table's name mapping, ``schema.name-mapping.default``).

Found by the hostile run of issue 31 (tests/reliability/test_issue31_hostile.py): SQL
read such a file through ``read_parquet(..., schema = MAP {field id: ...})`` (sql.query
Q2), which matches columns by field id only, so every column of the file read as NULL;
an UPDATE then rewrote the file with those NULLs (the values lost for every reader), and
a DELETE by value found nothing. PyIceberg's own scan reads the rows.

Now (sql.query Q10) SQL reads them by name through the mapping, for reads and DML
(more in tests/sql/test_name_mapping.py); before it refused them (NotSupportedError),
and before that read NULLs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import trinitylake_dbapi

def _table_with_added_file(tmp_path: Path) -> tuple[str, object]:
    root = str(tmp_path / "lake")
    conn = trinitylake_dbapi.connect(root, create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.s (id BIGINT, name STRING)")
    cur.execute("INSERT INTO default.s VALUES (7, 'x')")
    table = conn.iceberg_catalog().load_table("default.s")
    directory = table.metadata.location.replace("file://", "")
    os.makedirs(directory + "/data", exist_ok=True)
    pq.write_table(pa.table({"name": ["p", "q"], "id": pa.array([1, 2], pa.int64())}), directory + "/data/added.parquet")
    table.add_files([directory + "/data/added.parquet"])
    return root, conn


def test_sql_reads_an_added_file_by_its_names(tmp_path: Path) -> None:
    _, conn = _table_with_added_file(tmp_path)
    cur = conn.cursor()
    cur.execute("SELECT id, name FROM default.s ORDER BY id")
    assert cur.fetchall() == [(1, "p"), (2, "q"), (7, "x")]


def test_an_update_keeps_the_values_of_an_added_file(tmp_path: Path) -> None:
    _, conn = _table_with_added_file(tmp_path)
    conn.cursor().execute("UPDATE default.s SET name = 'z'")
    rows = conn.iceberg_catalog().load_table("default.s").scan().to_arrow().to_pylist()
    assert sorted(r["id"] for r in rows) == [1, 2, 7]


@pytest.mark.parametrize("sql, rowcount, rows", [
    ("SELECT id, name FROM default.s", -1, [(1, "p"), (2, "q"), (7, "x")]),
    ("UPDATE default.s SET name = 'z' WHERE id < 7", 2, [(1, "z"), (2, "z"), (7, "x")]),
    ("DELETE FROM default.s WHERE id = 1", 1, [(2, "q"), (7, "x")]),
    ("INSERT INTO default.s SELECT id + 10, name FROM default.s", 3,
     [(1, "p"), (2, "q"), (7, "x"), (11, "p"), (12, "q"), (17, "x")]),
])  # fmt: skip
def test_sql_reads_a_file_without_field_ids(tmp_path: Path, sql: str, rowcount: int, rows: list) -> None:
    """Q10: the file's rows by name, never NULLs and never a refusal; PyIceberg reads
    what the statement wrote."""
    _, conn = _table_with_added_file(tmp_path)
    cur = conn.cursor()
    cur.execute(sql)
    assert cur.rowcount == rowcount
    cur.execute("SELECT count(*) FROM default.s WHERE id = 1")
    assert cur.fetchall() == [(int((1, "p") in rows or (1, "z") in rows),)]
    cur.execute("SELECT id, name FROM default.s ORDER BY id")
    assert cur.fetchall() == rows
    scanned = conn.iceberg_catalog().load_table("default.s").scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["name"]) for r in scanned) == rows


def test_a_name_mapped_table_whose_files_have_field_ids_reads(tmp_path: Path) -> None:
    """A table with a name mapping whose files all carry field ids reads them by id
    and updates as before."""
    root = str(tmp_path / "lake")
    conn = trinitylake_dbapi.connect(root, create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.s (id BIGINT, name STRING)")
    cur.execute("INSERT INTO default.s VALUES (7, 'x')")
    table = conn.iceberg_catalog().load_table("default.s")
    with table.transaction() as txn:
        txn.set_properties({"schema.name-mapping.default": '[{"names":["id"],"field-id":1},{"names":["name"],"field-id":2}]'})
    cur.execute("INSERT INTO default.s VALUES (8, 'y')")
    cur.execute("UPDATE default.s SET name = 'z' WHERE id = 8")
    cur.execute("SELECT id, name FROM default.s ORDER BY id")
    assert cur.fetchall() == [(7, "x"), (8, "z")]
