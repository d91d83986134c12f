"""MERGE INTO and INSERT ... ON CONFLICT (issue 36, "MERGE and upsert" and acceptance 1;
rules MG1-MG5 of trinitylake_dbapi.sql.query.merge).

The oracle: the same randomized CREATE/INSERT/UPDATE/DELETE/MERGE/ON CONFLICT
statements run on a plain DuckDB database and on the lakehouse give the same rows, the
same rowcount, and an error on one exactly when the other has one. DuckDB applies one
of several source rows matching one target row where the SQL standard (and this
project, MG2) refuses the statement: for those the oracle expects ProgrammingError and
no change.
"""

from __future__ import annotations

from typing import Any, Iterator

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trinitylake_dbapi as tl
from tests.lakes import Lake
from tests.sql.test_dml_rows import twin_database


@pytest.fixture
def lakehouse(memory_lake: Lake) -> Iterator[tl.Connection]:
    conn = memory_lake.connect(autocommit=True)
    yield conn
    conn.close()


def _rows(cur: Any, table: str = "default.f") -> list[tuple]:
    cur.execute(f"SELECT * FROM {table}")
    return sorted(cur.fetchall(), key=repr)


def _versions(cur: Any) -> int:
    cur.execute("SELECT count(*) FROM system.versions")
    return cur.fetchone()[0]


def _keyed(conn: tl.Connection, files: int = 2) -> Any:
    cur = conn.cursor()
    cur.execute("CREATE TABLE default.f (id INT PRIMARY KEY, a INT, b STRING)")
    for f in range(files):
        rows = ", ".join(f"({f * 3 + i}, {i}, 'r{f * 3 + i}')" for i in range(3))
        cur.execute(f"INSERT INTO default.f VALUES {rows}")
    return cur


# ---------------------------------------------------------------------------
# MERGE INTO
# ---------------------------------------------------------------------------


def test_merge_updates_deletes_and_inserts_in_one_version(lakehouse: tl.Connection) -> None:
    cur = _keyed(lakehouse)
    before = _versions(cur)
    cur.execute(
        "MERGE INTO default.f AS t USING (VALUES (0, 10, 'x'), (4, 0, 'gone'), (9, 9, 'new')) AS s(id, a, b) "
        "ON t.id = s.id "
        "WHEN MATCHED AND s.b = 'gone' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET a = s.a, b = s.b "
        "WHEN NOT MATCHED THEN INSERT (id, a, b) VALUES (s.id, s.a, s.b)"
    )
    assert cur.rowcount == 3
    assert _versions(cur) == before + 1
    assert _rows(cur) == [(0, 10, "x"), (1, 1, "r1"), (2, 2, "r2"), (3, 0, "r3"), (5, 2, "r5"), (9, 9, "new")]


def test_merge_first_matching_clause_wins(lakehouse: tl.Connection) -> None:
    cur = _keyed(lakehouse, 1)
    cur.execute(
        "MERGE INTO default.f USING (SELECT id, a FROM default.f) AS s ON f.id = s.id "
        "WHEN MATCHED AND s.a >= 1 THEN UPDATE SET b = 'first' "
        "WHEN MATCHED AND s.a >= 2 THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET b = 'last'"
    )
    assert _rows(cur) == [(0, 0, "last"), (1, 1, "first"), (2, 2, "first")]


@pytest.mark.parametrize(
    "source",
    [
        "default.g",
        "default.g AS s",
        "(SELECT id, a, b FROM default.g WHERE id > 0) AS s",
        "(VALUES (?, ?, ?), (?, ?, ?)) AS s(id, a, b)",
    ],
)
def test_merge_sources_table_subquery_and_bound_values(lakehouse: tl.Connection, source: str) -> None:
    cur = _keyed(lakehouse, 1)
    cur.execute("CREATE TABLE default.g (id INT, a INT, b STRING)")
    cur.execute("INSERT INTO default.g VALUES (1, 100, 'u'), (7, 70, 'i')")
    alias = "s" if " s" in source else "g"
    params = (1, 100, "u", 7, 70, "i") if "?" in source else None
    cur.execute(
        f"MERGE INTO default.f USING {source} ON f.id = {alias}.id "
        f"WHEN MATCHED THEN UPDATE SET a = {alias}.a, b = {alias}.b "
        f"WHEN NOT MATCHED THEN INSERT VALUES ({alias}.id, {alias}.a, {alias}.b)",
        params,
    )
    assert cur.rowcount == 2
    assert _rows(cur) == [(0, 0, "r0"), (1, 100, "u"), (2, 2, "r2"), (7, 70, "i")]


def test_merge_refuses_a_target_row_matching_several_source_rows(lakehouse: tl.Connection) -> None:
    cur = _keyed(lakehouse, 1)
    before, rows = _versions(cur), _rows(cur)
    with pytest.raises(tl.ProgrammingError, match=r"MERGE INTO default\.f: one target row matches several source rows \(id = 1\)"):
        cur.execute(
            "MERGE INTO default.f USING (VALUES (1, 'x'), (1, 'y')) AS s(id, b) ON f.id = s.id "
            "WHEN MATCHED THEN UPDATE SET b = s.b"
        )
    assert (_versions(cur), _rows(cur)) == (before, rows)
    # Without a WHEN MATCHED clause the duplicates only insert (one key twice: MG4).
    with pytest.raises(tl.IntegrityError, match=r"default\.f.*primary key \(id\).*id = 8"):
        cur.execute(
            "MERGE INTO default.f USING (VALUES (8, 'x'), (8, 'y')) AS s(id, b) ON f.id = s.id "
            "WHEN NOT MATCHED THEN INSERT (id, b) VALUES (s.id, s.b)"
        )
    assert (_versions(cur), _rows(cur)) == (before, rows)


def test_merge_that_changes_nothing_writes_nothing(lakehouse: tl.Connection) -> None:
    cur = _keyed(lakehouse, 1)
    before = _versions(cur)
    cur.execute(
        "MERGE INTO default.f USING (VALUES (50, 'x')) AS s(id, b) ON f.id = s.id "
        "WHEN MATCHED THEN DELETE WHEN NOT MATCHED AND s.b = 'no' THEN INSERT (id) VALUES (s.id)"
    )
    assert cur.rowcount == 0
    assert _versions(cur) == before


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read", None])
def test_merge_writes_only_what_it_changes(lakehouse: tl.Connection, mode: str | None) -> None:
    """MG1 and MG6: copy-on-write replaces the one file holding the updated row;
    merge-on-read (also a table that sets no write.merge.mode) deletes that row by a
    position delete file and adds its new version with the inserted row."""
    cur = _keyed(lakehouse, 3)
    if mode is not None:
        cur.execute(f"ALTER TABLE default.f SET TBLPROPERTIES ('write.merge.mode' = '{mode}')")
    table = lakehouse.iceberg_catalog().load_table("default.f")
    files = {t.file.file_path for t in table.scan().plan_files()}
    cur.execute(
        "MERGE INTO default.f USING (VALUES (4, 'x'), (20, 'n')) AS s(id, b) ON f.id = s.id "
        "WHEN MATCHED THEN UPDATE SET b = s.b WHEN NOT MATCHED THEN INSERT (id, b) VALUES (s.id, s.b)"
    )
    table = lakehouse.iceberg_catalog().load_table("default.f")
    tasks = list(table.scan().plan_files())
    after = {t.file.file_path for t in tasks}
    deletes = [d for t in tasks for d in t.delete_files]
    if mode == "copy-on-write":
        assert len(files - after) == 1 and len(after - files) == 1  # the file of row 4: its rows + row 20
        assert not deletes
    else:
        assert files < after and len(after - files) == 1  # rows 4 (new version) and 20
        assert {d.record_count for d in deletes} == {1}
    assert table.current_snapshot().summary.operation.value == "overwrite"
    expected = [(0, 0, "r0"), (1, 1, "r1"), (2, 2, "r2"), (3, 0, "r3"), (4, 1, "x"), (5, 2, "r5"),
                (6, 0, "r6"), (7, 1, "r7"), (8, 2, "r8"), (20, None, "n")]  # fmt: skip
    assert sorted(_rows(cur)) == expected
    assert sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist()) == expected  # PyIceberg agrees


def test_a_bad_merge_mode_is_named(lakehouse: tl.Connection) -> None:
    cur = _keyed(lakehouse, 1)
    cur.execute("ALTER TABLE default.f SET TBLPROPERTIES ('write.merge.mode' = 'merge-on-write')")
    with pytest.raises(tl.ProgrammingError, match=r"default\.f: write\.merge\.mode is 'merge-on-write'"):
        cur.execute("INSERT INTO default.f VALUES (1, 5, 'x') ON CONFLICT (id) DO UPDATE SET a = excluded.a")


def test_merge_errors_name_what_is_wrong(lakehouse: tl.Connection) -> None:
    cur = _keyed(lakehouse, 1)
    cases = [
        ("MERGE INTO default.nope USING default.f AS s ON nope.id = s.id WHEN MATCHED THEN DELETE", tl.ProgrammingError, "nope"),
        ("MERGE INTO default.f USING default.f AS s ON f.id = s.id WHEN MATCHED THEN UPDATE SET zz = 1", tl.ProgrammingError, "zz"),
        ("MERGE INTO default.f USING default.f AS s ON f.id = s.id WHEN MATCHED THEN UPDATE SET a = 1, a = 2", tl.ProgrammingError, "set twice"),
        ("MERGE INTO default.f USING default.f AS s ON f.id = s.id WHEN NOT MATCHED THEN INSERT (id) VALUES (1, 2)", tl.ProgrammingError, "2 value"),
        ("MERGE INTO default.f USING default.f AS s ON f.id = s.zz WHEN MATCHED THEN DELETE", tl.ProgrammingError, "zz"),
        ("MERGE INTO system.versions USING default.f AS s ON true WHEN MATCHED THEN DELETE", tl.ProgrammingError, "read-only"),
        ("MERGE INTO default.f USING (VALUES (9, 'x')) AS s(id, b) ON f.id = s.id WHEN NOT MATCHED THEN INSERT (a) VALUES (1)",
         tl.IntegrityError, r"column 'id' would hold NULL; it is part of the primary key \(id\)"),
        ("INSERT INTO default.f (a) VALUES (1) ON CONFLICT DO NOTHING", tl.IntegrityError, r"INSERT INTO default\.f: .*'id'"),
        ("MERGE INTO default.f USING (VALUES (1)) AS s(id) ON f.id = s.id WHEN MATCHED THEN INSERT (id) VALUES (2)",
         tl.ProgrammingError, "WHEN MATCHED takes UPDATE or DELETE"),
        ("MERGE INTO default.f USING (VALUES (1)) AS s(id) ON f.id = s.id WHEN NOT MATCHED THEN DELETE",
         tl.ProgrammingError, "WHEN NOT MATCHED takes INSERT"),
        ("MERGE INTO default.f USING (VALUES (1)) AS s(id) ON f.id = s.id WHEN MATCHED THEN UPDATE SET *",
         tl.NotSupportedError, r"UPDATE SET \*"),
    ]
    for sql, error, word in cases:
        with pytest.raises(error, match=word):
            cur.execute(sql)
    assert len(_rows(cur)) == 3


def test_merge_on_a_table_without_a_key_and_with_nulls(lakehouse: tl.Connection) -> None:
    cur = lakehouse.cursor()
    cur.execute("CREATE TABLE default.f (id INT, b STRING)")
    cur.execute("INSERT INTO default.f VALUES (1, 'a'), (NULL, 'n'), (1, 'dup')")
    cur.execute(
        "MERGE INTO default.f USING (VALUES (1, 'x'), (NULL, 'y')) AS s(id, b) ON f.id = s.id "
        "WHEN MATCHED THEN UPDATE SET b = f.b || s.b WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.b)"
    )
    assert cur.rowcount == 3
    assert _rows(cur) == [(1, "ax"), (1, "dupx"), (None, "n"), (None, "y")]


def test_merge_in_a_transaction_is_one_version_with_the_rest(memory_lake: Lake) -> None:
    conn = memory_lake.connect()
    cur = _keyed(conn, 1)
    conn.commit()
    before = _versions(cur)
    cur.execute("MERGE INTO default.f USING (VALUES (1)) AS s(id) ON f.id = s.id WHEN MATCHED THEN DELETE")
    cur.execute("INSERT INTO default.f VALUES (1, 5, 'back') ON CONFLICT (id) DO NOTHING")
    conn.rollback()
    assert _versions(cur) == before and len(_rows(cur)) == 3
    cur.execute("MERGE INTO default.f USING (VALUES (1)) AS s(id) ON f.id = s.id WHEN MATCHED THEN DELETE")
    cur.execute("INSERT INTO default.f VALUES (1, 5, 'back') ON CONFLICT (id) DO NOTHING")
    conn.commit()
    assert _versions(cur) == before + 1
    assert (1, 5, "back") in _rows(cur)
    conn.close()


# ---------------------------------------------------------------------------
# INSERT ... ON CONFLICT
# ---------------------------------------------------------------------------


def test_on_conflict_do_nothing_and_do_update(lakehouse: tl.Connection) -> None:
    cur = _keyed(lakehouse, 1)
    before = _versions(cur)
    cur.execute("INSERT INTO default.f VALUES (1, 9, 'no'), (5, 5, 'yes') ON CONFLICT (id) DO NOTHING")
    assert cur.rowcount == 1
    cur.execute("INSERT INTO default.f VALUES (2, 9, 'up'), (6, 6, 'new') ON CONFLICT (id) DO UPDATE SET b = excluded.b || f.b")
    assert cur.rowcount == 2
    cur.execute("INSERT INTO default.f (id, a) VALUES (0, 7), (1, 7) ON CONFLICT (id) DO UPDATE SET a = excluded.a WHERE f.a > 0")
    assert cur.rowcount == 1
    cur.execute("INSERT INTO default.f VALUES (5, 0, 'z') ON CONFLICT DO NOTHING")
    assert cur.rowcount == 0
    assert _versions(cur) == before + 3
    assert _rows(cur) == [(0, 0, "r0"), (1, 7, "r1"), (2, 2, "upr2"), (5, 5, "yes"), (6, 6, "new")]


def test_on_conflict_with_executemany_and_a_select(lakehouse: tl.Connection) -> None:
    cur = _keyed(lakehouse, 1)
    cur.executemany(
        "INSERT INTO default.f VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET a = excluded.a",
        [(1, 11, "x"), (8, 8, "y")],
    )
    cur.execute("INSERT INTO default.f SELECT id + 1, a * 10, b FROM default.f ON CONFLICT (id) DO NOTHING")
    assert _rows(cur) == [(0, 0, "r0"), (1, 11, "r1"), (2, 2, "r2"), (3, 20, "r2"), (8, 8, "y"), (9, 80, "y")]


def test_on_conflict_needs_the_primary_key(lakehouse: tl.Connection) -> None:
    cur = _keyed(lakehouse, 1)
    with pytest.raises(tl.ProgrammingError, match=r"default\.f .*ON CONFLICT \(b\).*primary key \(id\)"):
        cur.execute("INSERT INTO default.f VALUES (1, 1, 'x') ON CONFLICT (b) DO NOTHING")
    cur.execute("CREATE TABLE default.g (id INT, b STRING)")
    with pytest.raises(tl.ProgrammingError, match=r"default\.g .*no PRIMARY KEY"):
        cur.execute("INSERT INTO default.g VALUES (1, 'x') ON CONFLICT (id) DO NOTHING")
    with pytest.raises(tl.ProgrammingError, match=r"zz"):
        cur.execute("INSERT INTO default.f VALUES (1, 1, 'x') ON CONFLICT (id) DO UPDATE SET zz = 1")
    with pytest.raises(tl.NotSupportedError):
        cur.execute("INSERT INTO default.f VALUES (1, 1, 'x') ON CONFLICT (id) DO NOTHING RETURNING id")
    assert len(_rows(cur)) == 3


def test_on_conflict_update_of_the_key_cannot_duplicate_it(lakehouse: tl.Connection) -> None:
    cur = _keyed(lakehouse, 1)
    with pytest.raises(tl.IntegrityError, match=r"default\.f"):
        cur.execute("MERGE INTO default.f USING (VALUES (1, 2)) AS s(a, b) ON f.id = s.a WHEN MATCHED THEN UPDATE SET id = s.b")
    assert len(_rows(cur)) == 3


# ---------------------------------------------------------------------------
# Acceptance 1: the oracle
# ---------------------------------------------------------------------------

_IDS = st.integers(0, 7)
_VALS = st.one_of(st.none(), st.integers(-3, 3))
_CONDITIONS = ["s.a > 0", "s.a IS NULL", "t.a < s.a", "t.b LIKE 'i%'", "s.id % 2 = 0", "t.a IS NOT NULL"]
_WHERES = ["a > 0", "a IS NULL", "id % 3 = 0", "b LIKE 'u%'", "id < 4", "true"]


def _merge_sql(data: Any) -> tuple[str, list[Any], bool]:
    """A random MERGE: its text (on a table ``{t}``), its parameters, and whether it has a
    WHEN MATCHED clause."""
    kind = data.draw(st.sampled_from(["values", "params", "self"]), label="source")
    params: list[Any] = []
    if kind == "self":
        shift = data.draw(st.integers(-2, 2), label="shift")
        source = f"(SELECT id + {shift} AS id, a, 'm' || b AS b FROM {{t}} WHERE a IS NOT NULL OR id > 2)"
    else:
        rows = data.draw(st.lists(st.tuples(_IDS, _VALS), min_size=1, max_size=5), label="rows")
        if kind == "params":
            source = "(VALUES " + ", ".join("(?, ?, ?)" for _ in rows) + ")"
            for i, a in rows:
                params += [i, a, f"p{i}"]
        else:
            source = "(VALUES " + ", ".join(f"({i}, {'NULL' if a is None else a}, 'v{i}')" for i, a in rows) + ")"
    clauses = []
    for _ in range(data.draw(st.integers(1, 3), label="clauses")):
        if data.draw(st.integers(0, 5), label="by source") == 0:  # DuckDB's and SQL Server's extension
            cond = data.draw(st.sampled_from(["", " AND t.a > 0", " AND t.b LIKE 'r%'"]), label="condition")
            action = data.draw(st.sampled_from(["DELETE", "UPDATE SET a = 0"]), label="action")
            clauses.append((False, f"WHEN NOT MATCHED BY SOURCE{cond} THEN {action}"))
            continue
        matched = data.draw(st.booleans(), label="matched")
        cond = data.draw(st.sampled_from([None, *_CONDITIONS]), label="condition")
        if not matched and cond is not None and cond.startswith("t."):
            cond = None  # a NOT MATCHED condition sees the source only
        head = ("WHEN MATCHED" if matched else "WHEN NOT MATCHED") + (f" AND {cond}" if cond else "")
        if matched:
            action = data.draw(st.sampled_from([
                "UPDATE SET a = s.a", "UPDATE SET a = t.a + 1, b = s.b", "DELETE", "UPDATE SET b = NULL",
            ]), label="action")  # fmt: skip
        else:
            action = data.draw(st.sampled_from([
                "INSERT (id, a, b) VALUES (s.id, s.a, s.b)", "INSERT VALUES (s.id, s.a * 2, 'i')", "INSERT (id) VALUES (s.id)",
            ]), label="action")  # fmt: skip
        clauses.append((matched, f"{head} THEN {action}"))
    sql = f"MERGE INTO {{t}} AS t USING {source} AS s(id, a, b) ON t.id = s.id {' '.join(c for _, c in clauses)}"
    return sql, params, any(m for m, _ in clauses)


def _statement(data: Any) -> tuple[str, list[Any], bool]:
    kind = data.draw(st.sampled_from(
        ["insert", "update", "update_key", "delete", "merge", "merge", "conflict", "conflict"]), label="kind")
    if kind == "insert":  # keys new, present or repeated: the key is enforced (iceberg.keys) as DuckDB does
        ids = data.draw(st.lists(st.integers(0, 11), min_size=1, max_size=3), label="ids")
        vals = [data.draw(_VALS) for _ in ids]
        rows = ", ".join(f"({i}, {'NULL' if a is None else a}, 'i{i}')" for i, a in zip(ids, vals))
        return f"INSERT INTO {{t}} VALUES {rows}", [], False
    if kind == "update_key":
        where = data.draw(st.sampled_from(_WHERES), label="where")
        shift = data.draw(st.sampled_from([1, 5, 20]), label="shift")
        return f"UPDATE {{t}} SET id = id + {shift} WHERE {where}", [], False
    if kind == "update":
        where = data.draw(st.sampled_from(_WHERES), label="where")
        return f"UPDATE {{t}} SET a = coalesce(a, 0) + 1, b = 'u' || id WHERE {where}", [], False
    if kind == "delete":
        return f"DELETE FROM {{t}} WHERE {data.draw(st.sampled_from(_WHERES), label='where')}", [], False
    if kind == "merge":
        return _merge_sql(data)
    rows = data.draw(st.lists(st.tuples(_IDS, _VALS), min_size=1, max_size=4), label="rows")
    values = ", ".join(f"({i}, {'NULL' if a is None else a}, 'c{i}')" for i, a in rows)
    action = data.draw(st.sampled_from([
        "DO NOTHING", "DO UPDATE SET a = excluded.a", "DO UPDATE SET b = excluded.b || f.b, a = f.a + 1",
        "DO UPDATE SET a = excluded.a WHERE f.a IS NULL OR f.a < excluded.a",
    ]), label="conflict")  # fmt: skip
    keys = data.draw(st.sampled_from(["(id) ", ""]), label="target") if action == "DO NOTHING" else "(id) "
    return f"INSERT INTO {{t}} VALUES {values} ON CONFLICT {keys}{action}", [], False


def _several_matches(duck: Any, sql: str, params: list[Any]) -> bool:
    """Whether a target row of the MERGE ``sql`` matches several source rows (MG2)."""
    source = sql.split(" USING ", 1)[1].split(" ON t.id = s.id ", 1)[0]
    query = f"SELECT count(*) FROM f AS t JOIN {source} ON t.id = s.id GROUP BY t.id HAVING count(*) > 1"
    return bool(duck.execute(query.format(t="f"), params).fetchall())


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), files=st.integers(1, 3))
def test_statements_agree_with_duckdb(lakehouse: tl.Connection, data: Any, files: int) -> None:
    """Acceptance 1: each statement gives the same rows, rowcount and error/no error on
    DuckDB and on the lakehouse (and a MERGE whose target row matches several source
    rows is ProgrammingError on the lakehouse, leaving the rows as they were). The
    examples share one connection (each drops and creates the table again)."""
    cur = lakehouse.cursor()
    cur.execute("DROP TABLE IF EXISTS default.f")
    duck = twin_database()
    modes = {kind: data.draw(st.sampled_from(["merge-on-read", "copy-on-write"]), label=kind)
             for kind in ("merge", "update", "delete")}  # MG6 both ways, with UPDATE's and DELETE's delete files
    properties = ", ".join(f"'write.{kind}.mode' = '{mode}'" for kind, mode in modes.items())
    cur.execute(f"CREATE TABLE default.f (id INT PRIMARY KEY, a INT, b VARCHAR) TBLPROPERTIES ({properties})")
    duck.execute("CREATE OR REPLACE TABLE f (id INT PRIMARY KEY, a INT, b VARCHAR)")
    for f in range(files):
        rows = ", ".join(f"({f * 4 + i}, {i - 1}, 'r{f}')" for i in range(4))
        cur.execute(f"INSERT INTO default.f VALUES {rows}")
        duck.execute(f"INSERT INTO f VALUES {rows}")
    for _ in range(data.draw(st.integers(1, 6), label="statements")):
        sql, params, matched = _statement(data)
        ours: Exception | None = None
        try:
            cur.execute(sql.format(t="default.f"), params or None)
        except tl.Error as e:
            ours = e
        if matched and _several_matches(duck, sql, params):
            assert isinstance(ours, tl.ProgrammingError) and "several source rows" in str(ours), (sql, ours)
        else:
            theirs: Exception | None = None
            count = None
            try:
                result = duck.execute(sql.format(t="f"), params or None).fetchall()
                count = result[0][0]
            except duckdb.Error as e:
                theirs = e
            assert (ours is None) == (theirs is None), (sql, params, ours, theirs)
            if ours is None:
                assert cur.rowcount == count, sql
        assert _rows(cur) == sorted(duck.execute("SELECT * FROM f").fetchall(), key=repr), (sql, params)


# ---------------------------------------------------------------------------
# Names of ours and partitioned tables
# ---------------------------------------------------------------------------

_OURS = ["__tl_target_1", "__tl_k_1", "__tl_k_2", "__tl_m_1", "__tl_m_3", "__tl_src", "file_index", "file_row_number",
         "filename", "excluded_x"]  # fmt: skip


def test_columns_named_like_our_names_merge_like_any_other(lakehouse: tl.Connection) -> None:
    """MG5: the working copy's names are not the table's or the statement's."""
    columns = ", ".join(f'"{n}" INT' for n in _OURS)
    cur = lakehouse.cursor()
    cur.execute(f"CREATE TABLE default.f (id INT PRIMARY KEY, {columns})")
    duck = duckdb.connect()
    duck.execute(f"CREATE TABLE f (id INT PRIMARY KEY, {columns})")
    values = ", ".join(f"({i}, {', '.join(str(i * 10 + j) for j in range(len(_OURS)))})" for i in range(4))
    for sql in [
        f"INSERT INTO {{t}} VALUES {values}",
        f'MERGE INTO {{t}} AS t USING (SELECT id, "__tl_k_1" FROM {{t}} WHERE id < 3) AS s ON t.id = s.id + 1 '
        'WHEN MATCHED THEN UPDATE SET "__tl_m_1" = s."__tl_k_1", "file_index" = -1 '
        'WHEN NOT MATCHED THEN INSERT (id, "__tl_target_1") VALUES (s.id + 1, 99)',
        'INSERT INTO {t} (id, "__tl_k_2", "filename") VALUES (0, 5, 6), (9, 7, 8) '
        'ON CONFLICT (id) DO UPDATE SET "__tl_k_2" = excluded."__tl_k_2" + excluded."filename"',
    ]:
        cur.execute(sql.format(t="default.f"))
        expected = duck.execute(sql.format(t="f")).fetchall()[0][0]
        assert cur.rowcount == expected, sql
        assert _rows(cur) == sorted(duck.execute("SELECT * FROM f").fetchall(), key=repr), sql


def test_merge_and_on_conflict_on_a_partitioned_table(lakehouse: tl.Connection) -> None:
    cur = lakehouse.cursor()
    cur.execute("CREATE TABLE default.f (id INT NOT NULL, region STRING, a INT, PRIMARY KEY (id)) PARTITIONED BY (region)")
    cur.execute("INSERT INTO default.f VALUES (1, 'eu', 1), (2, 'us', 2), (3, 'eu', 3)")
    before = _versions(cur)
    cur.execute(
        "MERGE INTO default.f USING (VALUES (1, 'eu', 10), (4, 'us', 4)) AS s(id, region, a) ON f.id = s.id "
        "WHEN MATCHED THEN UPDATE SET a = s.a WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.region, s.a)"
    )
    cur.execute("INSERT INTO default.f VALUES (2, 'us', 20), (5, 'eu', 5) ON CONFLICT (id) DO UPDATE SET a = excluded.a")
    assert _versions(cur) == before + 2
    assert _rows(cur) == [(1, "eu", 10), (2, "us", 20), (3, "eu", 3), (4, "us", 4), (5, "eu", 5)]
    table = lakehouse.iceberg_catalog().load_table("default.f")
    assert not table.spec().is_unpartitioned()
    regions = {t.file.partition[0] for t in table.scan().plan_files()}
    assert regions == {"eu", "us"}
    assert sorted(r["id"] for r in table.scan().to_arrow().to_pylist()) == [1, 2, 3, 4, 5]


@pytest.mark.slow  # three threads' 30 upserts, retried as they conflict (~5-6 s of CPU): the full run only
def test_racing_upserts_lose_no_update(tmp_path: Any) -> None:
    """Three connections upsert the same key 10 times each (autocommit): every statement
    either commits or fails with SerializationError, and the counter equals the number
    of commits (a lost update would leave it lower); each statement's new key is there."""
    import threading

    from deadlines import HANG_S

    path = str(tmp_path / "lake")
    with tl.connect(path, create=True, autocommit=True) as conn:
        conn.cursor().execute("CREATE TABLE default.f (id INT PRIMARY KEY, n INT)")
        conn.cursor().execute("INSERT INTO default.f VALUES (1, 0)")
    committed: list[int] = []
    failures: list[Exception] = []

    def work(k: int) -> None:
        with tl.connect(path, autocommit=True) as mine:
            cur = mine.cursor()
            for i in range(10):
                key = 100 * (k + 1) + i
                try:
                    cur.execute("INSERT INTO default.f VALUES (1, 1), (?, 1) ON CONFLICT (id) DO UPDATE SET n = f.n + 1", (key,))
                    committed.append(key)
                except tl.Error as e:  # noqa: PERF203
                    failures.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANG_S)
        assert not thread.is_alive()
    assert all(isinstance(e, tl.SerializationError) for e in failures), failures
    with tl.connect(path) as conn:
        cur = conn.cursor()
        cur.execute("SELECT id, n FROM default.f ORDER BY id")
        rows = cur.fetchall()
    assert rows[0] == (1, len(committed))
    assert sorted(r[0] for r in rows[1:]) == sorted(committed)


def test_executemany_upserts_every_parameter_set(lakehouse: tl.Connection) -> None:
    """An executemany of INSERT ... VALUES (?, ...) ON CONFLICT runs as one statement
    over its parameter sets as one Arrow table (with a column list, decimals and lists),
    and binds them as literals when the ON CONFLICT clause has markers of its own."""
    from decimal import Decimal

    cur = lakehouse.cursor()
    cur.execute("CREATE TABLE default.p (id BIGINT PRIMARY KEY, price DECIMAL(8, 2), tags ARRAY<STRING>, n INT)")
    cur.executemany("INSERT INTO default.p (id, price, tags) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
                    [(i, Decimal(i) / 4, [f"t{i}"] * (i % 3)) for i in range(300)])  # fmt: skip
    assert cur.rowcount == 300
    before = _versions(cur)
    cur.executemany(
        "INSERT INTO default.p (id, price, tags) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET price = excluded.price",
        [(i * 2, Decimal("9.99"), ["x"]) for i in range(200)],
    )
    assert cur.rowcount == 200 and _versions(cur) == before + 1
    cur.executemany(
        "INSERT INTO default.p (id, n) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET n = excluded.n + ?",
        [(1, 5, 100), (1000, 1, 100)],  # the last set's 100 binds the clause's marker
    )
    cur.execute("SELECT count(*), sum(price), count(*) FILTER (WHERE price = 9.99), max(n) FROM default.p")
    count, total, updated, top = cur.fetchone()
    assert (count, updated, top) == (300 + 50 + 1, 200, 105)
    assert total == sum(Decimal(i) / 4 for i in range(1, 300, 2)) + Decimal("9.99") * 200
    cur.execute("SELECT tags FROM default.p WHERE id IN (5, 6, 398) ORDER BY id")
    assert [r[0] for r in cur.fetchall()] == [["t5", "t5"], [], ["x"]]
