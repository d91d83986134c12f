"""The query corpus of tests/sql/test_tpch.py: the 22 TPC-H queries over the
namespace ``tpch`` (TPC-H's text with this scale's substitution parameters, written so
that both TrinityLake SQL and DuckDB read it), then queries of time travel, system
tables, window functions and NULL handling.

``{orders@first}`` stands for table ``tpch.orders`` as of a named lakehouse version:
``tpch.orders FOR SYSTEM_VERSION AS OF <n>`` on the driver's side, the oracle's schema
holding that version's rows on DuckDB's (``{orders@first_time}``: the same version
named by its commit time, ``FOR SYSTEM_TIME AS OF``). ``tl_information_schema`` and
``tl_system`` are the driver's system tables: the oracle holds a copy of their rows;
plain ``information_schema`` in a query marked NATIVE is DuckDB's own.
"""

from __future__ import annotations

TPCH = {
    "q01": """
SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, sum(l_extendedprice) AS sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
       avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc,
       count(*) AS count_order
FROM tpch.lineitem
WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL '90' DAY
GROUP BY l_returnflag, l_linestatus
ORDER BY l_returnflag, l_linestatus""",
    "q02": """
SELECT s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
FROM tpch.part, tpch.supplier, tpch.partsupp, tpch.nation, tpch.region
WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND p_size > 25 AND p_type LIKE '%BRASS'
  AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = 'ASIA'
  AND ps_supplycost = (
    SELECT min(ps_supplycost) FROM tpch.partsupp, tpch.supplier, tpch.nation, tpch.region
    WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND s_nationkey = n_nationkey
      AND n_regionkey = r_regionkey AND r_name = 'ASIA')
ORDER BY s_acctbal DESC, n_name, s_name, p_partkey
LIMIT 100""",
    "q03": """
SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate, o_shippriority
FROM tpch.customer, tpch.orders, tpch.lineitem
WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey AND l_orderkey = o_orderkey
  AND o_orderdate < DATE '1995-03-15' AND l_shipdate > DATE '1995-03-15'
GROUP BY l_orderkey, o_orderdate, o_shippriority
ORDER BY revenue DESC, o_orderdate
LIMIT 10""",
    "q04": """
SELECT o_orderpriority, count(*) AS order_count
FROM tpch.orders
WHERE o_orderdate >= DATE '1993-07-01' AND o_orderdate < DATE '1993-07-01' + INTERVAL '3' MONTH
  AND EXISTS (SELECT * FROM tpch.lineitem WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate)
GROUP BY o_orderpriority
ORDER BY o_orderpriority""",
    "q05": """
SELECT n_name, sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM tpch.customer, tpch.orders, tpch.lineitem, tpch.supplier, tpch.nation, tpch.region
WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey
  AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey
  AND r_name = 'ASIA' AND o_orderdate >= DATE '1994-01-01'
  AND o_orderdate < DATE '1994-01-01' + INTERVAL '1' YEAR
GROUP BY n_name
ORDER BY revenue DESC""",
    "q06": """
SELECT sum(l_extendedprice * l_discount) AS revenue
FROM tpch.lineitem
WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1994-01-01' + INTERVAL '1' YEAR
  AND l_discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01 AND l_quantity < 24""",
    "q07": """
SELECT supp_nation, cust_nation, l_year, sum(volume) AS revenue
FROM (
  SELECT n1.n_name AS supp_nation, n2.n_name AS cust_nation, extract(year FROM l_shipdate) AS l_year,
         l_extendedprice * (1 - l_discount) AS volume
  FROM tpch.supplier, tpch.lineitem, tpch.orders, tpch.customer, tpch.nation n1, tpch.nation n2
  WHERE s_suppkey = l_suppkey AND o_orderkey = l_orderkey AND c_custkey = o_custkey
    AND s_nationkey = n1.n_nationkey AND c_nationkey = n2.n_nationkey
    AND ((n1.n_name = 'JAPAN' AND n2.n_name = 'CHINA') OR (n1.n_name = 'CHINA' AND n2.n_name = 'JAPAN'))
    AND l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1996-12-31'
) AS shipping
GROUP BY supp_nation, cust_nation, l_year
ORDER BY supp_nation, cust_nation, l_year""",
    "q08": """
SELECT o_year, sum(CASE WHEN nation = 'CHINA' THEN volume ELSE 0 END) / sum(volume) AS mkt_share
FROM (
  SELECT extract(year FROM o_orderdate) AS o_year, l_extendedprice * (1 - l_discount) AS volume,
         n2.n_name AS nation
  FROM tpch.part, tpch.supplier, tpch.lineitem, tpch.orders, tpch.customer, tpch.nation n1,
       tpch.nation n2, tpch.region
  WHERE p_partkey = l_partkey AND s_suppkey = l_suppkey AND l_orderkey = o_orderkey
    AND o_custkey = c_custkey AND c_nationkey = n1.n_nationkey AND n1.n_regionkey = r_regionkey
    AND r_name = 'AMERICA' AND s_nationkey = n2.n_nationkey
    AND o_orderdate BETWEEN DATE '1995-01-01' AND DATE '1996-12-31' AND p_type LIKE 'ECONOMY%'
) AS all_nations
GROUP BY o_year
ORDER BY o_year""",
    "q09": """
SELECT nation, o_year, sum(amount) AS sum_profit
FROM (
  SELECT n_name AS nation, extract(year FROM o_orderdate) AS o_year,
         l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity AS amount
  FROM tpch.part, tpch.supplier, tpch.lineitem, tpch.partsupp, tpch.orders, tpch.nation
  WHERE s_suppkey = l_suppkey AND ps_suppkey = l_suppkey AND ps_partkey = l_partkey
    AND p_partkey = l_partkey AND o_orderkey = l_orderkey AND s_nationkey = n_nationkey
    AND p_name LIKE '%green%'
) AS profit
GROUP BY nation, o_year
ORDER BY nation, o_year DESC""",
    "q10": """
SELECT c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) AS revenue, c_acctbal, n_name,
       c_address, c_phone, c_comment
FROM tpch.customer, tpch.orders, tpch.lineitem, tpch.nation
WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND o_orderdate >= DATE '1993-10-01'
  AND o_orderdate < DATE '1993-10-01' + INTERVAL '3' MONTH AND l_returnflag = 'R'
  AND c_nationkey = n_nationkey
GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
ORDER BY revenue DESC, c_custkey
LIMIT 20""",
    "q11": """
SELECT ps_partkey, sum(ps_supplycost * ps_availqty) AS part_value
FROM tpch.partsupp, tpch.supplier, tpch.nation
WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = 'JAPAN'
GROUP BY ps_partkey
HAVING sum(ps_supplycost * ps_availqty) > (
  SELECT sum(ps_supplycost * ps_availqty) * 0.01
  FROM tpch.partsupp, tpch.supplier, tpch.nation
  WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = 'JAPAN')
ORDER BY part_value DESC, ps_partkey""",
    "q12": """
SELECT l_shipmode,
       sum(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END) AS high_line_count,
       sum(CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH' THEN 1 ELSE 0 END) AS low_line_count
FROM tpch.orders, tpch.lineitem
WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP') AND l_commitdate < l_receiptdate
  AND l_shipdate < l_commitdate AND l_receiptdate >= DATE '1994-01-01'
  AND l_receiptdate < DATE '1994-01-01' + INTERVAL '1' YEAR
GROUP BY l_shipmode
ORDER BY l_shipmode""",
    "q13": """
SELECT c_count, count(*) AS custdist
FROM (
  SELECT c_custkey, count(o_orderkey)
  FROM tpch.customer LEFT OUTER JOIN tpch.orders
    ON c_custkey = o_custkey AND o_comment NOT LIKE '%special%requests%'
  GROUP BY c_custkey
) AS c_orders (c_custkey, c_count)
GROUP BY c_count
ORDER BY custdist DESC, c_count DESC""",
    "q14": """
SELECT 100.00 * sum(CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END)
       / sum(l_extendedprice * (1 - l_discount)) AS promo_revenue
FROM tpch.lineitem, tpch.part
WHERE l_partkey = p_partkey AND l_shipdate >= DATE '1995-09-01'
  AND l_shipdate < DATE '1995-09-01' + INTERVAL '1' MONTH""",
    "q15": """
WITH revenue0 AS (
  SELECT l_suppkey AS supplier_no, sum(l_extendedprice * (1 - l_discount)) AS total_revenue
  FROM tpch.lineitem
  WHERE l_shipdate >= DATE '1996-01-01' AND l_shipdate < DATE '1996-01-01' + INTERVAL '3' MONTH
  GROUP BY l_suppkey)
SELECT s_suppkey, s_name, s_address, s_phone, total_revenue
FROM tpch.supplier, revenue0
WHERE s_suppkey = supplier_no AND total_revenue = (SELECT max(total_revenue) FROM revenue0)
ORDER BY s_suppkey""",
    "q16": """
SELECT p_brand, p_type, p_size, count(DISTINCT ps_suppkey) AS supplier_cnt
FROM tpch.partsupp, tpch.part
WHERE p_partkey = ps_partkey AND p_brand <> 'Brand#45' AND p_type NOT LIKE 'MEDIUM POLISHED%'
  AND p_size IN (49, 14, 23, 45, 19, 3, 36, 9)
  AND ps_suppkey NOT IN (SELECT s_suppkey FROM tpch.supplier WHERE s_comment LIKE '%Customer%Complaints%')
GROUP BY p_brand, p_type, p_size
ORDER BY supplier_cnt DESC, p_brand, p_type, p_size""",
    "q17": """
SELECT sum(l_extendedprice) / 7.0 AS avg_yearly
FROM tpch.lineitem, tpch.part
WHERE p_partkey = l_partkey AND p_brand = 'Brand#23' AND p_container LIKE 'MED%'
  AND l_quantity < (SELECT 0.2 * avg(l_quantity) FROM tpch.lineitem WHERE l_partkey = p_partkey)""",
    "q18": """
SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
FROM tpch.customer, tpch.orders, tpch.lineitem
WHERE o_orderkey IN (SELECT l_orderkey FROM tpch.lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > 250)
  AND c_custkey = o_custkey AND o_orderkey = l_orderkey
GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
ORDER BY o_totalprice DESC, o_orderdate
LIMIT 100""",
    "q19": """
SELECT sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM tpch.lineitem, tpch.part
WHERE (p_partkey = l_partkey AND p_brand = 'Brand#12'
       AND p_container IN ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
       AND l_quantity >= 1 AND l_quantity <= 1 + 10 AND p_size BETWEEN 1 AND 5
       AND l_shipmode IN ('AIR', 'REG AIR') AND l_shipinstruct = 'DELIVER IN PERSON')
   OR (p_partkey = l_partkey AND p_brand = 'Brand#23'
       AND p_container IN ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
       AND l_quantity >= 10 AND l_quantity <= 10 + 10 AND p_size BETWEEN 1 AND 10
       AND l_shipmode IN ('AIR', 'REG AIR') AND l_shipinstruct = 'DELIVER IN PERSON')
   OR (p_partkey = l_partkey AND p_brand LIKE 'Brand#3%'
       AND p_container IN ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
       AND l_quantity >= 20 AND l_quantity <= 20 + 10 AND p_size BETWEEN 1 AND 50
       AND l_shipmode IN ('AIR', 'REG AIR') AND l_shipinstruct = 'DELIVER IN PERSON')""",
    "q20": """
SELECT s_name, s_address
FROM tpch.supplier, tpch.nation
WHERE s_suppkey IN (
    SELECT ps_suppkey FROM tpch.partsupp
    WHERE ps_partkey IN (SELECT p_partkey FROM tpch.part WHERE p_name LIKE 'f%')
      AND ps_availqty > (
        SELECT 0.5 * sum(l_quantity) FROM tpch.lineitem
        WHERE l_partkey = ps_partkey AND l_suppkey = ps_suppkey
          AND l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1994-01-01' + INTERVAL '1' YEAR))
  AND s_nationkey = n_nationkey AND n_name IN ('CHINA', 'JAPAN', 'PERU', 'FRANCE')
ORDER BY s_name""",
    "q21": """
SELECT s_name, count(*) AS numwait
FROM tpch.supplier, tpch.lineitem l1, tpch.orders, tpch.nation
WHERE s_suppkey = l1.l_suppkey AND o_orderkey = l1.l_orderkey AND o_orderstatus = 'F'
  AND l1.l_receiptdate > l1.l_commitdate
  AND EXISTS (SELECT * FROM tpch.lineitem l2
              WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_suppkey <> l1.l_suppkey)
  AND NOT EXISTS (SELECT * FROM tpch.lineitem l3
                  WHERE l3.l_orderkey = l1.l_orderkey AND l3.l_suppkey <> l1.l_suppkey
                    AND l3.l_receiptdate > l3.l_commitdate)
  AND s_nationkey = n_nationkey AND n_name IN ('CHINA', 'JAPAN', 'PERU', 'FRANCE')
GROUP BY s_name
ORDER BY numwait DESC, s_name
LIMIT 100""",
    "q22": """
SELECT cntrycode, count(*) AS numcust, sum(c_acctbal) AS totacctbal
FROM (
  SELECT substring(c_phone FROM 1 FOR 2) AS cntrycode, c_acctbal
  FROM tpch.customer
  WHERE substring(c_phone FROM 1 FOR 2) IN ('13', '31', '23', '29', '30', '18', '17')
    AND c_acctbal > (SELECT avg(c_acctbal) FROM tpch.customer
                     WHERE c_acctbal > 0.00
                       AND substring(c_phone FROM 1 FOR 2) IN ('13', '31', '23', '29', '30', '18', '17'))
    AND NOT EXISTS (SELECT * FROM tpch.orders WHERE o_custkey = c_custkey)
) AS custsale
GROUP BY cntrycode
ORDER BY cntrycode""",
}

TIME_TRAVEL = {
    "tt_counts_per_version": """
SELECT (SELECT count(*) FROM {lineitem@first}) AS first_lines,
       (SELECT count(*) FROM {lineitem@second}) AS second_lines,
       (SELECT count(*) FROM tpch.lineitem) AS current_lines,
       (SELECT sum(o_totalprice) FROM {orders@first}) AS first_total""",
    "tt_q01_first": """
SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice * (1 - l_discount)), count(*)
FROM {lineitem@first}
WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL '90' DAY
GROUP BY l_returnflag, l_linestatus
ORDER BY l_returnflag, l_linestatus""",
    "tt_deleted_since_second": """
SELECT o.o_orderkey, o.o_orderdate
FROM {orders@second} o LEFT JOIN tpch.orders c ON o.o_orderkey = c.o_orderkey
WHERE c.o_orderkey IS NULL
ORDER BY o.o_orderkey""",
    "tt_added_since_first": """
SELECT o_orderkey, o_custkey FROM {orders@second}
EXCEPT
SELECT o_orderkey, o_custkey FROM {orders@first}""",
    "tt_updated_nicknames": """
SELECT f.c_custkey, f.c_nickname AS before, c.c_nickname AS after
FROM {customer@first} f JOIN tpch.customer c ON f.c_custkey = c.c_custkey
WHERE f.c_nickname IS DISTINCT FROM c.c_nickname
ORDER BY f.c_custkey""",
    "tt_q03_three_versions": """
SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate
FROM {customer@first}, {orders@second}, tpch.lineitem
WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey AND l_orderkey = o_orderkey
  AND o_orderdate < DATE '1995-03-15' AND l_shipdate > DATE '1995-03-15'
GROUP BY l_orderkey, o_orderdate
ORDER BY revenue DESC, l_orderkey
LIMIT 10""",
    "tt_by_commit_time": """
SELECT o_orderstatus, count(*), sum(o_totalprice)
FROM {orders@first_time}
GROUP BY o_orderstatus""",
    "tt_lines_per_order_then_and_now": """
SELECT o.o_orderpriority, count(DISTINCT l.l_orderkey), count(*)
FROM {orders@first} o JOIN {lineitem@first} l ON l.l_orderkey = o.o_orderkey
GROUP BY o.o_orderpriority
UNION ALL
SELECT o.o_orderpriority, count(DISTINCT l.l_orderkey), count(*)
FROM tpch.orders o JOIN tpch.lineitem l ON l.l_orderkey = o.o_orderkey
GROUP BY o.o_orderpriority""",
    "tt_window_first": """
SELECT o_custkey, o_orderkey, row_number() OVER (PARTITION BY o_custkey ORDER BY o_totalprice DESC, o_orderkey) AS rn
FROM {orders@first}
WHERE o_custkey < 20""",
}

#: Queries over the driver's system tables (the oracle: a copy of their rows).
SYSTEM = {
    "sys_columns_per_table": """
SELECT t.table_name, count(c.column_name) AS columns, max(c.ordinal_position) AS last
FROM tl_information_schema.tables t
JOIN tl_information_schema.columns c ON c.table_schema = t.table_schema AND c.table_name = t.table_name
WHERE t.table_schema = 'tpch'
GROUP BY t.table_name
ORDER BY t.table_name""",
    "sys_rows_per_table": """
SELECT t.table_name, n.row_count
FROM tl_information_schema.tables t
JOIN (SELECT 'orders' AS name, count(*) AS row_count FROM tpch.orders
      UNION ALL SELECT 'lineitem', count(*) FROM tpch.lineitem
      UNION ALL SELECT 'customer', count(*) FROM tpch.customer
      UNION ALL SELECT 'nation', count(*) FROM tpch.nation) n ON n.name = t.table_name
WHERE t.table_schema = 'tpch'""",
    "sys_decimal_columns_sum": """
SELECT c.column_name, c.numeric_precision, c.numeric_scale
FROM tl_information_schema.columns c
WHERE c.table_schema = 'tpch' AND c.table_name = 'lineitem' AND c.data_type LIKE 'decimal%'
  AND c.column_name IN (SELECT 'l_' || lower(r_name) FROM tpch.region UNION ALL SELECT 'l_tax')
ORDER BY c.ordinal_position""",
    "sys_versions_join_data": """
SELECT v.version, r.r_name
FROM tl_system.versions v JOIN tpch.region r ON v.version % 5 = r.r_regionkey
WHERE v.version >= {version_first}""",
    "sys_versions_window": """
SELECT version, previous_version, version - lag(version) OVER (ORDER BY version) AS step
FROM tl_system.versions
WHERE version >= {version_first}""",
    "sys_columns_rollup": """
SELECT table_name, is_nullable = 'NO' AS required, count(*)
FROM tl_information_schema.columns
WHERE table_schema = 'tpch'
GROUP BY ROLLUP (table_name, is_nullable = 'NO')""",
    "sys_tables_at_first_version": """
SELECT t.table_name, count(*)
FROM tl_information_schema.tables t JOIN {orders@first} o ON o.o_orderkey < 40
WHERE t.table_schema = 'tpch'
GROUP BY t.table_name""",
}

#: Queries over DuckDB's own information_schema on the oracle's side.
NATIVE = {
    "native_not_null_columns": """
SELECT table_name, column_name, ordinal_position
FROM information_schema.columns
WHERE table_schema = 'tpch' AND is_nullable = 'NO'""",
    "native_columns_join_data": """
SELECT c.table_name, c.column_name, count(*)
FROM information_schema.columns c JOIN tpch.nation n ON c.ordinal_position = n.n_regionkey + 1
WHERE c.table_schema = 'tpch' AND c.table_name IN ('orders', 'part')
GROUP BY c.table_name, c.column_name""",
}

WINDOWS = {
    "w_row_number": """
SELECT o_custkey, o_orderkey, row_number() OVER (PARTITION BY o_custkey ORDER BY o_orderdate, o_orderkey) AS rn
FROM tpch.orders""",
    "w_rank_top3": """
SELECT * FROM (
  SELECT o_orderpriority, o_orderkey, o_totalprice,
         rank() OVER (PARTITION BY o_orderpriority ORDER BY o_totalprice DESC) AS r,
         dense_rank() OVER (PARTITION BY o_orderpriority ORDER BY o_totalprice DESC) AS dr
  FROM tpch.orders) ranked
WHERE r <= 3
ORDER BY o_orderpriority, r, o_orderkey""",
    "w_running_sum": """
SELECT l_orderkey, l_linenumber,
       sum(l_extendedprice) OVER (PARTITION BY l_orderkey ORDER BY l_linenumber
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running
FROM tpch.lineitem
WHERE l_orderkey < 300""",
    "w_moving_avg_monthly": """
WITH monthly AS (
  SELECT date_trunc('month', o_orderdate) AS m, sum(o_totalprice) AS rev
  FROM tpch.orders GROUP BY date_trunc('month', o_orderdate))
SELECT m, rev, avg(rev) OVER (ORDER BY m ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING) AS smooth
FROM monthly
ORDER BY m""",
    "w_lag_lead": """
SELECT o_custkey, o_orderkey, o_orderdate,
       lag(o_orderdate) OVER (PARTITION BY o_custkey ORDER BY o_orderdate, o_orderkey) AS previous,
       lead(o_totalprice, 2) OVER (PARTITION BY o_custkey ORDER BY o_orderdate, o_orderkey) AS after_next
FROM tpch.orders
WHERE o_custkey <= 40""",
    "w_ntile": """
SELECT c_custkey, c_acctbal, ntile(4) OVER (ORDER BY c_acctbal, c_custkey) AS quartile
FROM tpch.customer""",
    "w_first_last_value": """
SELECT s_suppkey, s_nationkey,
       first_value(s_name) OVER (PARTITION BY s_nationkey ORDER BY s_acctbal DESC, s_suppkey) AS richest,
       last_value(s_name) OVER (PARTITION BY s_nationkey ORDER BY s_acctbal DESC, s_suppkey
                                ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS poorest
FROM tpch.supplier""",
    "w_percent_rank_cume_dist": """
SELECT p_partkey, percent_rank() OVER (PARTITION BY p_mfgr ORDER BY p_retailprice) AS pr,
       cume_dist() OVER (PARTITION BY p_mfgr ORDER BY p_retailprice) AS cd
FROM tpch.part""",
    "w_rank_of_aggregate": """
SELECT n_name, sum(l_extendedprice * (1 - l_discount)) AS revenue,
       rank() OVER (ORDER BY sum(l_extendedprice * (1 - l_discount)) DESC) AS place
FROM tpch.lineitem, tpch.supplier, tpch.nation
WHERE l_suppkey = s_suppkey AND s_nationkey = n_nationkey
GROUP BY n_name
ORDER BY place, n_name""",
    "w_share_of_total": """
SELECT c_mktsegment, count(*) AS customers,
       count(*) * 100.0 / sum(count(*)) OVER () AS pct,
       sum(c_acctbal) AS balance,
       sum(sum(c_acctbal)) OVER (ORDER BY c_mktsegment) AS running_balance
FROM tpch.customer
GROUP BY c_mktsegment
ORDER BY c_mktsegment""",
    "w_range_frame": """
SELECT o_orderkey, o_totalprice,
       count(*) OVER (ORDER BY o_totalprice RANGE BETWEEN 1000 PRECEDING AND 1000 FOLLOWING) AS near
FROM tpch.orders
WHERE o_custkey < 30""",
    "w_named_window": """
SELECT l_orderkey, l_linenumber, min(l_quantity) OVER w AS lo, max(l_quantity) OVER w AS hi
FROM tpch.lineitem
WHERE l_orderkey < 200
WINDOW w AS (PARTITION BY l_orderkey ORDER BY l_linenumber ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)""",
}

NULLS = {
    "n_counts": """
SELECT count(*), count(o_clerk), count(DISTINCT o_clerk), count(o_comment),
       sum(CASE WHEN o_comment IS NULL THEN 1 ELSE 0 END)
FROM tpch.orders""",
    "n_order_nulls_first": """
SELECT c_custkey, c_nickname FROM tpch.customer
ORDER BY c_nickname NULLS FIRST, c_custkey""",
    "n_order_desc_nulls_last": """
SELECT c_custkey, c_nickname FROM tpch.customer
ORDER BY c_nickname DESC NULLS LAST, c_custkey
LIMIT 40""",
    "n_order_asc_nulls_last_limit": """
SELECT o_orderkey, o_clerk FROM tpch.orders
ORDER BY o_clerk ASC NULLS LAST, o_orderkey DESC
LIMIT 25 OFFSET 1300""",
    "n_coalesce_group": """
SELECT coalesce(c_nickname, lower(c_mktsegment)) AS label, count(*)
FROM tpch.customer
GROUP BY coalesce(c_nickname, lower(c_mktsegment))""",
    "n_is_null_group": """
SELECT c_nickname IS NULL AS no_nickname, count(*), avg(c_acctbal), min(c_nickname), max(c_nickname)
FROM tpch.customer
GROUP BY c_nickname IS NULL""",
    "n_customers_without_orders": """
SELECT c.c_custkey, c.c_name
FROM tpch.customer c LEFT JOIN tpch.orders o ON c.c_custkey = o.o_custkey
WHERE o.o_orderkey IS NULL
ORDER BY c.c_custkey""",
    "n_full_outer_join": """
SELECT n.n_name, s.s_name
FROM tpch.nation n FULL OUTER JOIN tpch.supplier s ON s.s_nationkey = n.n_nationkey""",
    "n_aggregates_over_nulls": """
SELECT o_orderstatus, sum(CASE WHEN o_clerk IS NULL THEN o_totalprice END) AS no_clerk_total,
       avg(CASE WHEN o_totalprice < 0 THEN o_totalprice END) AS never,
       max(o_comment), count(CASE WHEN o_clerk IS NULL THEN 1 END)
FROM tpch.orders
GROUP BY o_orderstatus""",
    "n_not_in_with_null": """
SELECT count(*) FROM tpch.customer
WHERE c_nickname NOT IN (SELECT c_nickname FROM tpch.customer WHERE c_custkey < 10)""",
    "n_not_in_without_null": """
SELECT count(*) FROM tpch.customer
WHERE c_nickname NOT IN (SELECT c_nickname FROM tpch.customer
                         WHERE c_custkey < 10 AND c_nickname IS NOT NULL)""",
    "n_is_not_distinct_from": """
SELECT a.c_mktsegment, count(*)
FROM tpch.customer a JOIN tpch.customer b
  ON a.c_nickname IS NOT DISTINCT FROM b.c_nickname AND a.c_custkey < b.c_custkey
GROUP BY a.c_mktsegment""",
    "n_nullif_concat": """
SELECT nullif(o_orderpriority, '5-LOW') AS priority, o_clerk || '/' || o_orderstatus AS tag, count(*)
FROM tpch.orders
GROUP BY nullif(o_orderpriority, '5-LOW'), o_clerk || '/' || o_orderstatus""",
    "n_rollup": """
SELECT c_mktsegment, c_nickname IS NULL AS no_nick, count(*), sum(c_acctbal)
FROM tpch.customer
GROUP BY ROLLUP (c_mktsegment, c_nickname IS NULL)""",
    "n_empty_aggregates": """
SELECT sum(l_quantity), max(l_shipdate), avg(l_discount), count(*), count(l_comment)
FROM tpch.lineitem WHERE l_quantity > 1000""",
    "n_left_join_coalesce_zero": """
SELECT c.c_custkey, coalesce(sum(o.o_totalprice), 0) AS spent, count(o.o_orderkey) AS orders
FROM tpch.customer c LEFT JOIN tpch.orders o ON o.o_custkey = c.c_custkey
GROUP BY c.c_custkey""",
}

MISC = {
    "m_intersect_except": """
SELECT n_nationkey FROM tpch.nation
INTERSECT
SELECT s_nationkey FROM tpch.supplier
EXCEPT
SELECT c_nationkey FROM tpch.customer WHERE c_acctbal > 9900""",
    "m_grouping_sets": """
SELECT l_returnflag, l_shipmode, count(*), sum(l_quantity)
FROM tpch.lineitem
GROUP BY GROUPING SETS ((l_returnflag), (l_shipmode), ())""",
    "m_correlated_scalar_in_select": """
SELECT s_suppkey, s_name,
       (SELECT count(*) FROM tpch.partsupp WHERE ps_suppkey = s_suppkey) AS parts,
       (SELECT max(l_shipdate) FROM tpch.lineitem WHERE l_suppkey = s_suppkey) AS last_ship
FROM tpch.supplier""",
    "m_cte_twice": """
WITH per_customer AS (
  SELECT o_custkey, count(*) AS n, sum(o_totalprice) AS total FROM tpch.orders GROUP BY o_custkey)
SELECT a.o_custkey, a.n, b.o_custkey AS same_n_customer
FROM per_customer a JOIN per_customer b ON a.n = b.n AND a.o_custkey < b.o_custkey
WHERE a.total > 900000""",
    "m_string_functions": """
SELECT upper(substring(p_name, 1, 5)) AS head, length(p_type), replace(p_container, ' ', '_'),
       p_brand LIKE 'Brand#1%' AS brand1, trim(concat('  ', p_mfgr, '  ')) AS mfgr
FROM tpch.part
WHERE p_partkey % 7 = 0""",
    "m_date_parts": """
SELECT extract(year FROM o_orderdate) AS y, extract(quarter FROM o_orderdate) AS q,
       count(*), min(o_orderdate), max(o_orderdate)
FROM tpch.orders
GROUP BY extract(year FROM o_orderdate), extract(quarter FROM o_orderdate)
ORDER BY y, q""",
    "m_casts": """
SELECT CAST(o_totalprice AS DOUBLE) AS price, CAST(o_orderdate AS STRING) AS day,
       CAST(o_orderkey AS STRING) || '-' || o_orderpriority AS label, CAST(o_totalprice AS BIGINT)
FROM tpch.orders
WHERE o_orderkey < 100""",
    "m_distinct_limit_offset": """
SELECT DISTINCT l_shipmode, l_shipinstruct
FROM tpch.lineitem
ORDER BY l_shipmode, l_shipinstruct
LIMIT 10 OFFSET 5""",
    "m_having_join": """
SELECT n_name, count(DISTINCT c_custkey) AS customers, avg(o_totalprice) AS avg_order
FROM tpch.nation JOIN tpch.customer ON c_nationkey = n_nationkey
JOIN tpch.orders ON o_custkey = c_custkey
GROUP BY n_name
HAVING count(*) > 40
ORDER BY customers DESC, n_name""",
    "m_in_list_and_between": """
SELECT l_orderkey, l_linenumber, l_quantity
FROM tpch.lineitem
WHERE l_shipmode IN ('RAIL', 'FOB') AND l_quantity BETWEEN 45 AND 50
  AND l_receiptdate BETWEEN DATE '1996-01-01' AND DATE '1996-06-30'""",
}


def corpus() -> dict[str, str]:
    """Every query of the corpus by its id."""
    return {**TPCH, **TIME_TRAVEL, **SYSTEM, **NATIVE, **WINDOWS, **NULLS, **MISC}
