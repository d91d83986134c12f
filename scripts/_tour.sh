#!/usr/bin/env bash
# The tour scripts/quickstart shows, on its own: needs only a `python` on PATH that
# imports trinitylake_dbapi (tests/cli/test_quickstart.py runs it so).
#
#   scripts/_tour.sh LAKE KEEP    LAKE: the lakehouse (created if missing);
#                                 KEEP: 1 keeps it afterwards, 0 removes its directory
set -euo pipefail
LAKE="$1"
KEEP="$2"

bold=$'\e[1m'; dim=$'\e[2m'; off=$'\e[0m'
[ -t 1 ] || { bold=""; dim=""; off=""; }

step() { printf '\n%s== %s ==%s\n' "$bold" "$*" "$off"; }
# Show the command, then run it through the shell (the console script when installed).
tl() {
    printf '%s$ trinitylake %s -c "%s"%s\n' "$dim" "$LAKE" "$1" "$off"
    if command -v trinitylake >/dev/null 2>&1; then
        trinitylake "$LAKE" "${@:2}" -c "$1"
    else
        python -m trinitylake_dbapi.cli "$LAKE" "${@:2}" -c "$1"
    fi
}
# The newest version of the lakehouse (to travel back to it later), as a bare value.
latest() {
    python -m trinitylake_dbapi.cli "$LAKE" --csv --no-headers -c "SELECT max(version) FROM system.versions"
}

step "1. A lakehouse at $LAKE, a namespace and two tables"
tl "CREATE NAMESPACE IF NOT EXISTS sales COMMENT 'Orders and customers';
    CREATE TABLE IF NOT EXISTS sales.customers (
      id BIGINT NOT NULL, name STRING NOT NULL, city STRING, tags ARRAY<STRING>, PRIMARY KEY (id));
    CREATE TABLE IF NOT EXISTS sales.orders (
      id BIGINT NOT NULL, customer_id BIGINT NOT NULL, total DECIMAL(12, 2),
      placed_at TIMESTAMP, status STRING, PRIMARY KEY (id))
      PARTITIONED BY (day(placed_at))" --create

step "2. Rows: one transaction over both tables, committed as one version"
tl "BEGIN;
    INSERT INTO sales.customers VALUES
      (1, 'Ana', 'Lisbon', ARRAY('vip')), (2, 'Bo', 'Oslo', NULL), (3, 'Cy', 'Lisbon', NULL);
    INSERT INTO sales.orders VALUES
      (10, 1, 99.50, TIMESTAMP '2026-11-01 09:30:00', 'paid'),
      (11, 1, 20.00, TIMESTAMP '2026-11-02 10:00:00', 'paid'),
      (12, 2, 5.25, TIMESTAMP '2026-11-02 11:15:00', 'new'),
      (13, 3, 42.00, TIMESTAMP '2026-11-03 08:45:00', 'paid');
    COMMIT"
PAID=$(latest)

step "3. A join and an aggregate"
tl "SELECT c.city, COUNT(DISTINCT c.id) AS customers, COUNT(*) AS orders, SUM(o.total) AS revenue
    FROM sales.customers c JOIN sales.orders o ON o.customer_id = c.id
    GROUP BY c.city ORDER BY revenue DESC"

step "4. A second transaction changes both tables (an upsert by MERGE among them)"
tl "BEGIN;
    DELETE FROM sales.orders WHERE customer_id = 3;
    UPDATE sales.orders SET status = 'shipped' WHERE status = 'paid';
    MERGE INTO sales.customers c
      USING (VALUES (2, 'Bo', 'Bergen'), (4, 'Dee', 'Porto')) AS s (id, name, city) ON c.id = s.id
      WHEN MATCHED THEN UPDATE SET city = s.city
      WHEN NOT MATCHED THEN INSERT (id, name, city) VALUES (s.id, s.name, s.city);
    INSERT INTO sales.orders VALUES (14, 4, 310.00, TIMESTAMP '2026-11-04 12:00:00', 'new');
    COMMIT;
    SELECT version, changes FROM system.versions ORDER BY version DESC LIMIT 3;
    SHOW PARTITIONS sales.orders"

step "5. Time travel: version $PAID is still there, next to the present"
tl "SELECT (SELECT COUNT(*) FROM sales.customers FOR SYSTEM_VERSION AS OF $PAID) AS customers_then,
           (SELECT COUNT(*) FROM sales.customers) AS customers_now,
           (SELECT SUM(total) FROM sales.orders FOR SYSTEM_VERSION AS OF $PAID) AS revenue_then,
           (SELECT SUM(total) FROM sales.orders) AS revenue_now,
           (SELECT status FROM sales.orders FOR SYSTEM_VERSION AS OF $PAID WHERE id = 10) AS order_10_then"

step "6. Undo: both tables back to version $PAID, in one new version"
tl "ROLLBACK TO VERSION $PAID;
    SELECT c.name, c.city, o.id AS order_id, o.total, o.status
    FROM sales.customers c JOIN sales.orders o ON o.customer_id = c.id ORDER BY o.id"

step "7. Errors say what and where; a primary key is enforced"
tl "CREATE TABLE sales.bad (id BIGINT, amount MONEY)" || true
tl "INSERT INTO sales.customers VALUES (1, 'Ana again', NULL, NULL)" || true
tl "SELECT name FROM sales.customers WHERE" || true

step "Done"
if [ "$KEEP" = 1 ]; then
    echo "The lakehouse is at $LAKE. Explore it interactively: .venv/bin/trinitylake $LAKE"
else
    echo "Explore a lakehouse interactively: .venv/bin/trinitylake ./mylake --create"
    echo "(or: scripts/quickstart ./mylake to keep the tour's lakehouse)"
    rm -rf "$(dirname "$LAKE")"
fi
