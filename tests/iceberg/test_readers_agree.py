"""Readers agree (issue 34, acceptance 2): a randomized history of INSERTs, merge-on-read
(and copy-on-write) UPDATEs and DELETEs, compactions (OPTIMIZE, and automatic ones) and
rollbacks; at every lakehouse version of it, our SELECT (time travel), PyIceberg's scan
(a catalog opened at that version) and DuckDB's ``iceberg_scan`` of the metadata file the
version names read exactly the rows a plain Python model of the history holds; with
the table's data files PLAIN and dictionary-encoded, or DELTA_BINARY_PACKED where the
table opts in (iceberg.encodings PE3)."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trinitylake_dbapi as tl
from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog
from trinitylake_dbapi.verify import verify
from tests.iceberg.duck_iceberg import available, duckdb_scans

Rows = dict[int, tuple[str, int]]  # id -> (name, grp)

_MODES = ("merge-on-read", "copy-on-write")

_step = st.one_of(
    st.tuples(st.just("insert"), st.integers(1, 40)),
    st.tuples(st.just("update"), st.integers(1, 7), st.integers(0, 6), st.booleans()),
    st.tuples(st.just("delete"), st.integers(1, 7), st.integers(0, 6)),
    st.tuples(st.just("optimize")),
    st.tuples(st.just("rollback"), st.integers(0, 1000)),
    st.tuples(st.just("mode"), st.sampled_from(["delete", "update"]), st.sampled_from(_MODES)),
)


def _text(rows: Rows) -> list[tuple]:
    return sorted(((str(i), name, str(grp)) for i, (name, grp) in rows.items()), key=repr)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    partitioned=st.booleans(),
    auto=st.sampled_from([None, 2, 3]),
    steps=st.lists(_step, min_size=4, max_size=14),
    delta=st.booleans(),
)
def test_every_version_reads_the_same_rows_in_every_reader(
    tmp_path_factory: Any, partitioned: bool, auto: int | None, steps: list, delta: bool
) -> None:
    # A directory per example under the run's basetemp (pytest keeps the last 3 runs'),
    # as cheap as mkdtemp; the system temp directory kept one per example for ever.
    location = os.path.join(tmp_path_factory.mktemp("agree"), "lake")
    con = tl.connect(location, create=True, autocommit=True)
    cur = con.cursor()
    properties = [] if auto is None else [f"'compaction.auto.min-delete-files' = '{auto}'"]
    if delta:  # iceberg.encodings PE3: the unique ids are written DELTA_BINARY_PACKED
        properties.append("'write.parquet.integer-encoding' = 'delta'")
    props = f" TBLPROPERTIES ({', '.join(properties)})" if properties else ""
    cur.execute(f"CREATE TABLE t (id BIGINT, name VARCHAR, grp BIGINT){' PARTITIONED BY (grp)' if partitioned else ''}{props}")
    first = con.lakehouse.latest_version()
    model: Rows = {}
    at: dict[int, Rows] = {first: {}}  # lakehouse version -> the rows the table holds there
    next_id = 0

    def record() -> None:
        latest = con.lakehouse.latest_version()
        for version in range(max(at) + 1, latest + 1):
            at[version] = dict(model)

    for n, step in enumerate(steps):
        kind = step[0]
        if kind == "insert":
            ids = list(range(next_id, next_id + step[1]))
            next_id += step[1]
            cur.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, f"n{i}", i % 3) for i in ids])
            model.update({i: (f"n{i}", i % 3) for i in ids})
        elif kind == "update":
            _, m, r, move = step
            r %= m
            if move:
                cur.execute("UPDATE t SET grp = grp + 1, name = name || ? WHERE id % ? = ?", (f"u{n}", m, r))
            else:
                cur.execute("UPDATE t SET name = name || ? WHERE id % ? = ?", (f"u{n}", m, r))
            hit = [i for i in model if i % m == r]
            assert cur.rowcount == len(hit)
            for i in hit:
                name, grp = model[i]
                model[i] = (name + f"u{n}", grp + 1 if move else grp)
        elif kind == "delete":
            _, m, r = step
            r %= m
            cur.execute("DELETE FROM t WHERE id % ? = ?", (m, r))
            hit = [i for i in model if i % m == r]
            assert cur.rowcount == len(hit)
            for i in hit:
                del model[i]
        elif kind == "optimize":
            cur.execute("OPTIMIZE t")
        elif kind == "rollback":
            earlier = sorted(at)[:-1]  # the latest version is refused as a target
            if not earlier:
                continue
            target = earlier[step[1] % len(earlier)]
            cur.execute(f"ROLLBACK TO VERSION {target}")
            model = dict(at[target])
        else:
            _, statement, mode = step
            cur.execute(f"ALTER TABLE t SET TBLPROPERTIES ('write.{statement}.mode' = '{mode}')")
        record()
    locations: dict[int, str] = {}
    for version, rows in sorted(at.items()):
        expected = _text(rows)
        cur.execute(f"SELECT CAST(id AS VARCHAR), name, CAST(grp AS VARCHAR) FROM t FOR SYSTEM_VERSION AS OF {version}")
        assert sorted((tuple(r) for r in cur.fetchall()), key=repr) == expected, version
        table = TrinityLakeCatalog("c", uri=location, version=str(version)).load_table("default.t")
        arrow = table.scan().to_arrow()
        theirs = zip(arrow["id"].to_pylist(), arrow["name"].to_pylist(), arrow["grp"].to_pylist())
        assert sorted(((str(i), n, str(g)) for i, n, g in theirs), key=repr) == expected, version
        if table.metadata.current_snapshot() is not None:
            locations[version] = table.metadata_location
    if available() and locations:
        for (version, _), rows in zip(locations.items(), duckdb_scans(list(locations.values()))):
            assert rows == _text(at[version]), version
    assert verify(location, data=True).ok
    con.close()
