"""A query over the system tables means the same whether or not it also reads a data
table (issue 33 item 1; sql.query.names Q11): alone, the catalog's own executor may
answer it; joined with a table's rows, DuckDB does, over the same system tables as
Arrow views. The rows and the result's type codes must be the same either way.

Each query runs twice: as written, and with a CROSS JOIN to a one-row subquery over a
data table (which changes no row). Queries the executor cannot run exactly as DuckDB
does (a function it lacks or types differently, FILTER, ...) go to DuckDB alone too.
"""

from __future__ import annotations

from typing import Any

import pytest

import trinitylake_dbapi as tl
from trinitylake_dbapi.sql.dialect import parse_marked
from trinitylake_dbapi.sql.query import reads_table_data

JOIN = " CROSS JOIN (SELECT a AS zz FROM ns.t LIMIT 1) j"
QUERIES = [
    "SELECT c.* FROM information_schema.columns c{J} ORDER BY table_name, ordinal_position",
    "SELECT t.* FROM information_schema.tables t{J} ORDER BY table_schema, table_name",
    "SELECT s.* FROM information_schema.schemata s{J} ORDER BY 1",
    "SELECT version, created_at, previous_version, changes FROM system.versions v{J} ORDER BY version",
    "SELECT count(*) AS n FROM information_schema.columns c{J}",
    "SELECT table_name, count(*) AS n FROM information_schema.columns c{J} GROUP BY table_name ORDER BY table_name",
    "SELECT sum(ordinal_position) AS s, avg(ordinal_position) AS a FROM information_schema.columns c{J}",
    "SELECT max(ordinal_position) AS s, min(column_name) AS m FROM information_schema.columns c{J}",
    "SELECT column_name || '_' || data_type AS x FROM information_schema.columns c{J} ORDER BY 1",
    "SELECT upper(column_name) AS x, length(column_name) AS l FROM information_schema.columns c{J} ORDER BY 1",
    "SELECT length(column_name) + 1 AS l, char_length(column_name) AS c FROM information_schema.columns c{J} ORDER BY 1",
    "SELECT strpos(column_name, 'a') AS p, position('a' IN column_name) AS q FROM information_schema.columns c{J} ORDER BY 1",
    "SELECT column_name FROM information_schema.columns c{J} WHERE column_name LIKE 'a%' OR column_name IN ('b', 'c') ORDER BY 1",
    "SELECT CASE WHEN is_nullable = 'YES' THEN 1 ELSE 0 END AS n, column_name FROM information_schema.columns c{J} ORDER BY 2",
    "SELECT ordinal_position / 2 AS h, ordinal_position * 1.5 AS f, ordinal_position % 2 AS m FROM information_schema.columns c{J} ORDER BY 1, 2",
    "SELECT coalesce(NULL, column_name) AS x, nullif(column_name, 'a') AS y FROM information_schema.columns c{J} ORDER BY 1",
    "SELECT DISTINCT table_schema FROM information_schema.tables t{J} ORDER BY 1",
    "SELECT table_name FROM information_schema.tables t{J} ORDER BY table_name DESC LIMIT 1 OFFSET 1",
    "SELECT CAST(ordinal_position AS VARCHAR) AS v, CAST(ordinal_position AS DOUBLE) AS d FROM information_schema.columns c{J} ORDER BY 1",
    "SELECT substring(column_name, 1, 1) AS s, trim(' a ') AS t, lower('AB') AS l FROM information_schema.columns c{J} ORDER BY 1",
    "SELECT ordinal_position > 2 AS g, column_name = 'a' AS e FROM information_schema.columns c{J} ORDER BY column_name",
    "SELECT count(DISTINCT table_name) AS n, count(column_name) AS m FROM information_schema.columns c{J}",
    "SELECT 7 / 2 AS a, 7 % 3 AS b, -7 / 2 AS c, 1 + 2 * 3 AS d FROM information_schema.schemata s{J} LIMIT 1",
    "SELECT column_name FROM information_schema.columns c{J} WHERE ordinal_position BETWEEN 2 AND 3 ORDER BY 1",
    "SELECT string_agg(column_name, ',') AS g FROM information_schema.columns c{J}",
    "SELECT count(*) FILTER (WHERE ordinal_position > 1) AS f FROM information_schema.columns c{J}",
    "SELECT greatest(ordinal_position, 2) AS g, least(ordinal_position, 2) AS l FROM information_schema.columns c{J} ORDER BY 1, 2",
    "SELECT abs(-ordinal_position) AS a, round(ordinal_position / 3.0, 2) AS r FROM information_schema.columns c{J} ORDER BY 1",
    "SELECT left(column_name, 1) AS l, concat(column_name, 'x') AS c FROM information_schema.columns c{J} ORDER BY 1",
    "SELECT column_name ILIKE 'A%' AS il, ordinal_position IS NULL AS n FROM information_schema.columns c{J} ORDER BY 1, 2",
]


@pytest.fixture(scope="module")
def cur(tmp_path_factory: pytest.TempPathFactory) -> Any:
    conn = tl.connect(str(tmp_path_factory.mktemp("meaning") / "lake"), create=True, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE NAMESPACE ns")
    cur.execute("CREATE TABLE ns.t (a BIGINT NOT NULL, b STRING, c DECIMAL(10,2), d TIMESTAMP)")
    cur.execute("INSERT INTO ns.t VALUES (1, 'x', 1.5, TIMESTAMP '2024-01-01 00:00:00')")
    cur.execute("COMMENT ON TABLE ns.t IS 'commented'")
    yield cur
    conn.close()


def outcome(cur: Any, sql: str) -> tuple[Any, Any]:
    """(rows, type codes) of a query, or the error it raises."""
    try:
        rows = cur.execute(sql).fetchall()
    except tl.Error as e:
        return type(e).__name__, str(e)
    return rows, [d[1] for d in cur.description]


@pytest.mark.parametrize("query", QUERIES)
def test_a_system_query_means_the_same_joined_with_a_data_table(cur: Any, query: str) -> None:
    alone, joined = outcome(cur, query.format(J="")), outcome(cur, query.format(J=JOIN))
    assert not isinstance(alone[0], str), alone  # both run
    assert alone == joined


def test_plain_catalog_queries_stay_with_the_catalogs_executor() -> None:
    """What catalog clients send (SQLAlchemy's reflection) is still answered without
    DuckDB; what the executor would answer otherwise than DuckDB goes there."""
    for sql, data in [
        ("SELECT table_name FROM information_schema.tables WHERE table_schema = 'ns' ORDER BY 1", False),
        ("SELECT count(*) FROM information_schema.columns c JOIN information_schema.tables t "
         "ON c.table_name = t.table_name WHERE t.table_schema LIKE 'n%' OR NOT c.column_name IN ('a')", False),
        ("SELECT length(column_name) FROM information_schema.columns", True),
        ("SELECT nullif(column_name, 'a') FROM information_schema.columns", True),
    ]:
        query, _ = parse_marked(sql)
        assert reads_table_data(query) is data, sql
