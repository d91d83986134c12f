"""Data files without Iceberg field ids (rule Q10 of trinitylake_dbapi.sql.query.views).

``Table.add_files`` (through ``Connection.iceberg_catalog()``) adds Parquet files
written by other tools, which carry no field ids, and sets the table's name mapping
(``schema.name-mapping.default``). PyIceberg reads such files by column name through
that mapping; SQL must read the same rows (it read NULL in every column). The oracles:
PyIceberg's scan of the same table, and DuckDB's own read of the same files (by name)
with the rows inserted through SQL.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Iterator

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trinitylake_dbapi as tl
from tests.lakes import Lake, new_lake
from tests.sql.test_dml_rows import _delete_positions
from trinitylake_dbapi.errors import CorruptFileError, MissingFileError
from trinitylake_dbapi.sql.query import engine as query_engine
from trinitylake_dbapi.sql.query import Engine

COLUMNS = "id BIGINT, name STRING, score DOUBLE, s STRUCT<x: BIGINT, y: STRING>"
DUCK_COLUMNS = "id BIGINT, name VARCHAR, score DOUBLE, s STRUCT(x BIGINT, y VARCHAR)"
#: The Arrow types of COLUMNS, as a tool other than Iceberg writes them.
ARROW = {
    "id": pa.int64(),
    "name": pa.string(),
    "score": pa.float64(),
    "s": pa.struct([("x", pa.int64()), ("y", pa.string())]),
}


def _arrow(rows: list[dict[str, Any]], columns: list[str], types: dict[str, Any] = ARROW) -> pa.Table:
    """Rows as an Arrow table of ``columns`` (in that order), no field ids."""
    return pa.table({c: pa.array([r.get(c) for r in rows], types[c]) for c in columns})


def _add_files(conn: tl.Connection, name: str, tables: list[pa.Table], local: Path | None = None) -> list[str]:
    """Write each Arrow table as a Parquet file in the table's data directory (plain
    pyarrow: no field ids) and add them with PyIceberg's ``add_files``; a copy of each
    goes to ``local`` too (for DuckDB's own read). The files' locations."""
    table = conn.iceberg_catalog().load_table(name)
    paths = []
    for arrow in tables:
        path = f"{table.location()}/data/added-{uuid.uuid4().hex}.parquet"
        with table.io.new_output(path).create() as out:
            pq.write_table(arrow, out)
        if local is not None:
            pq.write_table(arrow, local / f"{len(list(local.iterdir()))}.parquet")
        paths.append(path)
    table.add_files(paths)
    return paths


def _key(row: tuple) -> str:
    return repr(row)


def _sql(cur: Any, sql: str) -> list[tuple]:
    cur.execute(sql)
    return sorted(cur.fetchall(), key=_key)


def _pyiceberg(conn: tl.Connection, name: str) -> list[tuple]:
    """Every row of the table as PyIceberg reads it (the oracle), in column order."""
    arrow = conn.iceberg_catalog().load_table(name).scan().to_arrow()
    maps = [isinstance(f.type, pa.MapType) for f in arrow.schema]
    rows = [
        tuple(dict(v) if is_map and v is not None else v for v, is_map in zip(r.values(), maps))
        for r in arrow.to_pylist()
    ]
    return sorted(rows, key=_key)


def _same_as_pyiceberg(conn: tl.Connection, name: str = "default.t") -> list[tuple]:
    rows = _sql(conn.cursor(), f"SELECT * FROM {name}")
    assert rows == _pyiceberg(conn, name)
    return rows


ROWS_A = [
    {"id": 10, "name": "ten", "score": 1.5, "s": {"x": 1, "y": "a"}},
    {"id": 11, "name": None, "score": -2.0, "s": None},
    {"id": 12, "name": "twelve", "score": None, "s": {"x": None, "y": "c"}},
]
INSERTED = [(1, "one", 0.5, {"x": 7, "y": "q"}), (2, None, None, None)]
ROWS_B = [{"id": 20 + i, "name": f"n{i % 3}", "s": {"x": i, "y": None}} for i in range(7)]


@pytest.fixture
def lakehouse(memory_lake: Lake) -> Iterator[tl.Connection]:
    conn = memory_lake.connect(autocommit=True)
    yield conn
    conn.close()


def _table_with_added_files(conn: tl.Connection, local: Path | None = None) -> list[str]:
    """default.t: two rows inserted through SQL, then two files added by add_files
    (one with its columns in another order, one without ``score``)."""
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE default.t ({COLUMNS})")
    cur.executemany("INSERT INTO default.t VALUES (?, ?, ?, ?)", INSERTED)
    return _add_files(conn, "default.t", [
        _arrow(ROWS_A, ["s", "score", "name", "id"]),
        _arrow(ROWS_B, ["id", "name", "s"]),
    ], local)  # fmt: skip


QUERIES = [
    "SELECT * FROM t",
    "SELECT count(*) FROM t",
    "SELECT count(name), count(score), count(s) FROM t",
    "SELECT id, name FROM t WHERE id > 10",
    "SELECT id FROM t WHERE name = 'n1'",
    "SELECT id FROM t WHERE s.x >= 2 AND score IS NULL",
    "SELECT name, count(*), sum(id), min(score), max(s.y) FROM t GROUP BY name",
    "SELECT sum(score), avg(id), max(name) FROM t",
]


@pytest.mark.parametrize("lake", ["local", "memory", pytest.param("s3", marks=pytest.mark.s3)], indirect=True)
def test_added_files_read_like_pyiceberg_and_duckdb(lake: Lake, tmp_path: Path) -> None:
    local = tmp_path / "files"
    local.mkdir()
    conn = lake.connect(autocommit=True)
    try:
        _table_with_added_files(conn, local)
        rows = _same_as_pyiceberg(conn)
        assert len(rows) == 12 and (10, "ten", 1.5, {"x": 1, "y": "a"}) in rows
        duck = duckdb.connect()
        duck.execute(f"CREATE TABLE t ({DUCK_COLUMNS})")
        duck.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", INSERTED)
        duck.execute(f"INSERT INTO t BY NAME SELECT * FROM read_parquet('{local}/*.parquet', union_by_name = true)")
        cur = conn.cursor()
        for query in QUERIES:
            ours = _sql(cur, query.replace("FROM t", "FROM default.t"))
            assert ours == sorted(duck.execute(query).fetchall(), key=_key), query
    finally:
        conn.close()


def test_renamed_columns_keep_their_data(lakehouse: tl.Connection) -> None:
    """A column renamed through SQL or through PyIceberg (which adds the new name to the
    mapping as an alias) reads the added files' data under its new name; a file added
    after the rename, spelling the new name, reads through the alias; rows inserted
    through SQL after the rename (field ids, the new name) too."""
    conn = lakehouse
    _table_with_added_files(conn)
    cur = conn.cursor()
    cur.execute("ALTER TABLE default.t RENAME COLUMN name TO label")
    _same_as_pyiceberg(conn)
    assert _sql(cur, "SELECT id FROM default.t WHERE label = 'twelve'") == [(12,)]
    table = conn.iceberg_catalog().load_table("default.t")
    with table.update_schema() as update:
        update.rename_column("score", "points")
    mapping = conn.iceberg_catalog().load_table("default.t").metadata.name_mapping()
    assert mapping is not None and ["score", "points"] in [list(f.names) for f in mapping]
    _add_files(conn, "default.t", [pa.table({"id": pa.array([30], pa.int64()), "points": [3.25]})])
    cur.execute("INSERT INTO default.t VALUES (40, 'forty', 4.0, NULL)")
    rows = _same_as_pyiceberg(conn)
    assert (30, None, 3.25, None) in rows and (10, "ten", 1.5, {"x": 1, "y": "a"}) in rows
    assert (40, "forty", 4.0, None) in rows
    assert _sql(cur, "SELECT sum(points) FROM default.t") == [(3.25 + 1.5 - 2.0 + 0.5 + 4.0,)]


def test_update_and_delete_rewrite_added_files(lakehouse: tl.Connection) -> None:
    """Copy-on-write UPDATE and DELETE read the added files by name: they count, keep
    and change the same rows as DuckDB on a plain table, and PyIceberg reads the result
    the same."""
    conn = lakehouse
    _table_with_added_files(conn)
    cur = conn.cursor()
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t AS SELECT * FROM (VALUES (0)) WHERE false")
    duck.execute("DROP TABLE t")
    duck.execute(f"CREATE TABLE t ({DUCK_COLUMNS})")
    duck.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", _same_as_pyiceberg(conn))
    for sql in [
        "UPDATE t SET name = coalesce(name, '?') || '!' WHERE id >= 11 AND id < 22",
        "DELETE FROM t WHERE name = 'n1!' OR id = 1",
        "UPDATE t SET score = id * 2 WHERE score IS NULL",
        "DELETE FROM t WHERE s.x = 5",
        "UPDATE t SET s = struct_pack(x := -1, y := name) WHERE id IN (SELECT max(id) FROM t)",
    ]:
        cur.execute(sql.replace(" t ", " default.t ").replace("FROM t", "FROM default.t"))
        assert cur.rowcount == duck.execute(sql).fetchall()[0][0], sql
        assert _same_as_pyiceberg(conn) == sorted(duck.execute("SELECT * FROM t").fetchall(), key=_key), sql
    assert cur.rowcount == 1


def test_position_deletes_apply_to_added_files(lakehouse: tl.Connection) -> None:
    """A position delete file naming rows of an added file deletes those rows, in a
    SELECT and in the copy-on-write of an UPDATE and a DELETE."""
    conn = lakehouse
    added = _table_with_added_files(conn)
    table = conn.iceberg_catalog().load_table("default.t")
    _delete_positions(table, {added[0]: [1], added[1]: [0, 6]})
    rows = _same_as_pyiceberg(conn)
    assert {r[0] for r in rows} == {1, 2, 10, 12, 21, 22, 23, 24, 25}
    cur = conn.cursor()
    cur.execute("UPDATE default.t SET name = 'u' WHERE id IN (10, 11, 20, 21)")
    assert cur.rowcount == 2
    cur.execute("DELETE FROM default.t WHERE id >= 24 OR id = 11")
    assert cur.rowcount == 2
    assert {r[0]: r[1] for r in _same_as_pyiceberg(conn)} == {
        1: "one", 2: None, 10: "u", 12: "twelve", 21: "u", 22: "n2", 23: "n0",
    }  # fmt: skip


def test_a_file_with_some_field_ids_reads_by_name(lakehouse: tl.Connection) -> None:
    """PyIceberg reads a file by id only when every field has one; a file where some do
    not is read through the name mapping, wholly; a narrower integer is widened."""
    conn = lakehouse
    _table_with_added_files(conn)
    schema = pa.schema([
        pa.field("id", pa.int32(), metadata={b"PARQUET:field_id": b"1"}),
        pa.field("name", pa.string()),
    ])  # fmt: skip
    _add_files(conn, "default.t", [pa.table({"id": [50, 51], "name": ["a", "b"]}, schema=schema)])
    rows = _same_as_pyiceberg(conn)
    assert (50, "a", None, None) in rows and (51, "b", None, None) in rows


def test_nested_and_collection_columns(lakehouse: tl.Connection) -> None:
    """Lists, maps and structs of added files read like PyIceberg's; files written with
    field ids in such columns (their middle LIST/MAP groups carry none) are still read
    by id, so a column renamed before they were written keeps their data."""
    conn = lakehouse
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.t (id BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, BIGINT>, "
                "p STRUCT<a: BIGINT, b: STRUCT<c: STRING>>)")  # fmt: skip
    types = {
        "id": pa.int64(), "tags": pa.list_(pa.string()), "attrs": pa.map_(pa.string(), pa.int64()),
        "p": pa.struct([("a", pa.int64()), ("b", pa.struct([("c", pa.string())]))]),
    }  # fmt: skip
    rows = [
        {"id": 1, "tags": ["x", None], "attrs": [("k", 1)], "p": {"a": 1, "b": {"c": "z"}}},
        {"id": 2, "tags": [], "attrs": [], "p": {"a": None, "b": None}},
        {"id": 3, "tags": None, "attrs": None, "p": None},
    ]
    _add_files(conn, "default.t", [_arrow(rows, ["id", "tags", "attrs", "p"], types)])
    cur.execute("ALTER TABLE default.t RENAME COLUMN tags TO labels")
    cur.execute("INSERT INTO default.t VALUES (4, ['w'], MAP {'m': 2}, ?)", ({"a": 4, "b": {"c": "y"}},))
    got = _same_as_pyiceberg(conn)
    assert got[-1] == (4, ["w"], {"m": 2}, {"a": 4, "b": {"c": "y"}})
    assert got[0] == (1, ["x", None], {"k": 1}, {"a": 1, "b": {"c": "z"}})
    assert _sql(cur, "SELECT id FROM default.t WHERE len(labels) > 0") == [(1,), (4,)]


def test_tables_without_a_name_mapping_never_read_footers(
    lakehouse: tl.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a table with a name mapping pays for Q10, and an engine reads a data
    file's footer for it once."""
    conn = lakehouse
    cur = conn.cursor()
    calls: list[list[str]] = []
    real = Engine.files_without_ids

    def counted(self: Engine, cursor: Any, files: Any) -> Any:
        calls.append(list(files))
        return real(self, cursor, files)

    monkeypatch.setattr(Engine, "files_without_ids", counted)
    read: list[Any] = []
    real_names = query_engine._names_without_ids
    monkeypatch.setattr(query_engine, "_names_without_ids", lambda schema: read.append(schema) or real_names(schema))
    cur.execute("CREATE TABLE default.plain (id BIGINT)")
    for i in range(3):
        cur.execute(f"INSERT INTO default.plain VALUES ({i})")
    cur.execute("UPDATE default.plain SET id = id + 1 WHERE id = 0")
    assert _sql(cur, "SELECT * FROM default.plain") == [(1,), (1,), (2,)]
    assert calls == [] and read == []
    _table_with_added_files(conn)
    first = _same_as_pyiceberg(conn)
    assert calls and all(len(c) == 3 for c in calls)
    assert len(read) == 3
    assert _same_as_pyiceberg(conn) == first
    assert _sql(cur, "SELECT id FROM default.t WHERE id = 10") == [(10,)]
    assert len(read) == 3


# ---------------------------------------------------------------------------
# Property: any split of rows between SQL inserts and added files, any column order
# and any columns left out of a file, reads like PyIceberg
# ---------------------------------------------------------------------------

_ROW = st.fixed_dictionaries({
    "id": st.integers(-(2**40), 2**40),
    "name": st.none() | st.text(max_size=4),
    "score": st.none() | st.floats(allow_nan=False, allow_infinity=False, width=32),
    "s": st.none() | st.fixed_dictionaries({"x": st.none() | st.integers(-9, 9), "y": st.none() | st.text(max_size=2)}),
})  # fmt: skip
_BATCH = st.tuples(
    st.booleans(),  # added by add_files (else INSERTed through SQL)
    st.permutations(["id", "name", "score", "s"]).flatmap(
        lambda cols: st.integers(1, 4).map(lambda n: cols[:n])
    ),
    st.lists(_ROW, min_size=1, max_size=4),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(batches=st.lists(_BATCH, min_size=1, max_size=4), renamed=st.booleans())
def test_any_mix_reads_like_pyiceberg(tmp_path: Path, request: pytest.FixtureRequest, batches: list, renamed: bool) -> None:
    for lake in new_lake("memory", request, tmp_path):
        conn = lake.connect(autocommit=True)
        try:
            cur = conn.cursor()
            cur.execute(f"CREATE TABLE default.t ({COLUMNS})")
            _add_files(conn, "default.t", [_arrow([], ["id"])])  # the name mapping, always
            names = {c: c for c in ARROW}
            for i, (added, columns, rows) in enumerate(batches):
                if renamed and i == len(batches) // 2:
                    # PyIceberg's rename adds the new name to the mapping (SQL's does not)
                    with conn.iceberg_catalog().load_table("default.t").update_schema() as update:
                        update.rename_column("name", "label")
                    names["name"] = "label"
                if added:
                    arrow = _arrow(rows, list(columns))
                    _add_files(conn, "default.t", [arrow.rename_columns([names[c] for c in columns])])
                else:
                    kept = [{c: (r[c] if c in columns else None) for c in ARROW} for r in rows]
                    cur.executemany("INSERT INTO default.t VALUES (?, ?, ?, ?)", [tuple(r.values()) for r in kept])
            rows = _same_as_pyiceberg(conn)
            assert len(rows) == sum(len(b[2]) for b in batches)
            expected = sorted(((r[0],) for r in rows if r[0] is not None and r[0] >= 0), key=_key)
            assert _sql(cur, "SELECT id FROM default.t WHERE id >= 0") == expected
        finally:
            conn.close()


@pytest.mark.parametrize("damage", ["truncated", "missing"])
def test_a_damaged_file_of_a_mapped_table_is_named(tmp_path: Path, damage: str) -> None:
    """Q8 holds where Q10 reads footers: a truncated or missing data file of a table
    with a name mapping is CorruptFileError / MissingFileError naming it, for a SELECT
    and for a DELETE, and nothing is written."""
    conn = tl.connect(str(tmp_path / "lake"), create=True, autocommit=True)
    try:
        _table_with_added_files(conn)
        victim = _add_files(conn, "default.t", [_arrow(ROWS_A, ["id"])])[0]
        path = victim.split("://", 1)[-1]
        if damage == "missing":
            Path(path).unlink()
        else:
            data = Path(path).read_bytes()
            Path(path).write_bytes(data[: len(data) // 2])
        error = MissingFileError if damage == "missing" else CorruptFileError
        version = conn.lakehouse.latest_version()
        for sql in ["SELECT * FROM default.t", "DELETE FROM default.t WHERE id = 1"]:
            fresh = tl.connect(str(tmp_path / "lake"), autocommit=True)  # no footer remembered
            try:
                with pytest.raises(error) as e:
                    fresh.cursor().execute(sql)
                assert path in str(e.value)
            finally:
                fresh.close()
        assert conn.lakehouse.latest_version() == version
    finally:
        conn.close()
