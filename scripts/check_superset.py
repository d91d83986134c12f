"""Apache Superset end to end against trinitylake (run by scripts/check-superset, in its
own environment). Usage: check_superset.py OUTPUT_DIR.

Every step prints one line; any failure raises, so the exit status is non-zero.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else ".check-superset").resolve()
LAKE = OUT / "lake"
META = OUT / "superset.db"
URL = f"trinitylake:///{LAKE}"
STARTED = time.monotonic()


def step(message: str) -> None:
    print(f"[{time.monotonic() - STARTED:6.1f}s] {message}", flush=True)


def check(condition: bool, message: str) -> None:
    if not condition:
        raise SystemExit(f"FAILED: {message}")


# -- the lakehouse, through the DB-API --------------------------------------------------

QUERY = (
    "SELECT date_trunc('month', ordered_at) AS month, SUM(amount) AS total "
    "FROM sales.orders GROUP BY date_trunc('month', ordered_at) ORDER BY month"
)


def make_lake() -> list[tuple]:
    import trinitylake_dbapi as tl

    shutil.rmtree(LAKE, ignore_errors=True)
    with tl.connect(str(LAKE), create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE sales")
        cur.execute(
            "CREATE TABLE sales.orders (id BIGINT NOT NULL, ordered_at TIMESTAMP, "
            "amount DECIMAL(10,2), region VARCHAR, PRIMARY KEY (id))"
        )
        rows = [
            (i, dt.datetime(2026, 1 + i % 4, 1 + i % 28, 9 + i % 8, 30),
             decimal.Decimal(i * 137 % 1000) / 4, ("eu", "us", "apac")[i % 3])
            for i in range(200)
        ]  # fmt: skip
        cur.executemany("INSERT INTO sales.orders VALUES (?, ?, ?, ?)", rows)
        cur.execute(QUERY)
        expected = cur.fetchall()
    step(f"lakehouse {LAKE}: sales.orders with {len(rows)} rows; through the DB-API "
         f"the query gives {len(expected)} months")  # fmt: skip
    return expected


# -- Superset ---------------------------------------------------------------------------


def write_config() -> Path:
    config = OUT / "superset_config.py"
    config.write_text(
        f"SQLALCHEMY_DATABASE_URI = {('sqlite:///' + str(META))!r}\n"
        "SECRET_KEY = 'check-superset-not-secret-0123456789abcdef'\n"
        "WTF_CSRF_ENABLED = False\n"
        "TESTING = True\n"
        "PREVENT_UNSAFE_DB_CONNECTIONS = False\n"
        "SQLLAB_CTAS_NO_LIMIT = True\n"
        "FEATURE_FLAGS = {}\n"
        "RESULTS_BACKEND = None\n"
        # In-process caches: Superset's default metastore cache for filter state and
        # explore form data needs a key-value table and a running app; not needed here.
        "CACHE_CONFIG = {'CACHE_TYPE': 'NullCache'}\n"
        "DATA_CACHE_CONFIG = {'CACHE_TYPE': 'NullCache'}\n"
        "FILTER_STATE_CACHE_CONFIG = {'CACHE_TYPE': 'SimpleCache'}\n"
        "EXPLORE_FORM_DATA_CACHE_CONFIG = {'CACHE_TYPE': 'SimpleCache'}\n"
        "RATELIMIT_ENABLED = False\n"
        "TALISMAN_ENABLED = False\n"
    )
    return config


def init_superset() -> Any:
    os.environ["SUPERSET_CONFIG_PATH"] = str(write_config())
    if META.exists():
        META.unlink()
    from superset.app import create_app

    app = create_app()
    with app.app_context():
        from flask_migrate import upgrade
        from superset import security_manager
        from superset.extensions import appbuilder

        upgrade(directory=str(Path(__import__("superset").__file__).parent / "migrations"))
        appbuilder.add_permissions(update_perms=True)
        security_manager.sync_role_definitions()
        admin = security_manager.find_role("Admin")
        security_manager.add_user("admin", "Check", "Superset", "admin@example.com", admin,
                                  password="admin")  # fmt: skip
    step(f"Superset initialised on {META} (migrations, roles, an admin user)")
    return app


class Api:
    def __init__(self, app: Any) -> None:
        self.client = app.test_client()
        r = self.client.post(
            "/api/v1/security/login",
            json={"username": "admin", "password": "admin", "provider": "db", "refresh": False},
        )
        check(r.status_code == 200, f"login: {r.status_code} {r.get_data(as_text=True)[:300]}")
        self.headers = {"Authorization": f"Bearer {r.get_json()['access_token']}"}

    def call(self, method: str, path: str, body: Any = None, ok: tuple = (200, 201)) -> Any:
        r = self.client.open(path, method=method, json=body, headers=self.headers)
        text = r.get_data(as_text=True)
        check(r.status_code in ok, f"{method} {path}: HTTP {r.status_code}: {text[:800]}")
        return json.loads(text) if text else None


def run_superset(app: Any, expected: list[tuple]) -> None:
    with app.app_context():
        from superset.db_engine_specs import load_engine_specs

        engines = {spec.engine: spec for spec in load_engine_specs()}
        check("trinitylake" in engines, "no engine spec for trinitylake was discovered")
        spec = engines["trinitylake"]
        step(f"engine spec discovered through the entry point: {spec.__module__}."
             f"{spec.__name__} ({spec.engine_name})")  # fmt: skip

    api = Api(app)
    api.call("POST", "/api/v1/database/test_connection/",
             {"database_name": "lake", "sqlalchemy_uri": URL})  # fmt: skip
    step(f"test connection to {URL}: ok")

    created = api.call("POST", "/api/v1/database/", {
        "database_name": "TrinityLake", "sqlalchemy_uri": URL, "expose_in_sqllab": True,
    })  # fmt: skip
    db_id = created["id"]
    step(f"database added by its SQLAlchemy URL: id {db_id}")

    schemas = api.call("GET", f"/api/v1/database/{db_id}/schemas/")["result"]
    check("sales" in schemas, f"schemas {schemas} lack sales")
    step(f"schemas: {schemas}")
    tables = api.call("GET", f"/api/v1/database/{db_id}/tables/?q=(schema_name:sales)")
    names = [t["value"] for t in tables["result"]]
    check(names == ["orders"], f"tables of sales: {names}")
    step(f"tables in sales: {names}")

    meta = api.call("GET", f"/api/v1/database/{db_id}/table_metadata/?name=orders&schema=sales",
                    ok=(200, 404))  # fmt: skip
    if meta and "columns" in meta:
        step("table metadata: " + ", ".join(f"{c['name']} {c['type']}" for c in meta["columns"]))

    preview = api.call("GET", f"/api/v1/database/{db_id}/select_star/orders/sales/")["result"]
    step(f"SELECT preview: {' '.join(preview.split())}")

    lab = api.call("POST", "/api/v1/sqllab/execute/", {
        "database_id": db_id, "schema": "sales", "sql": QUERY, "runAsync": False,
        "queryLimit": 1000, "client_id": "check1",
    })  # fmt: skip
    check(lab.get("status") == "success", f"SQL Lab: {lab}")
    lab_rows = [(r["month"], r["total"]) for r in lab["data"]]
    check(len(lab_rows) == len(expected), f"SQL Lab rows {lab_rows} vs DB-API {expected}")
    for (month, total), (e_month, e_total) in zip(lab_rows, expected):
        check(decimal.Decimal(str(total)) == e_total, f"SQL Lab total {total} != {e_total}")
    step(f"SQL Lab ran the query: {len(lab_rows)} rows, totals equal the DB-API's "
         f"(executed SQL: {' '.join(lab.get('query', {}).get('executedSql', '').split())})")

    preview_lab = api.call("POST", "/api/v1/sqllab/execute/", {
        "database_id": db_id, "schema": "sales", "sql": preview, "runAsync": False,
        "queryLimit": 1000, "client_id": "check2",
    })  # fmt: skip
    check(preview_lab.get("status") == "success" and preview_lab["data"], "preview query")
    step(f"SQL Lab ran the preview: {len(preview_lab['data'])} rows")

    dataset = api.call("POST", "/api/v1/dataset/",
                       {"database": db_id, "schema": "sales", "table_name": "orders"})
    ds_id = dataset["id"]
    columns = api.call("GET", f"/api/v1/dataset/{ds_id}")["result"]["columns"]
    kinds = {c["column_name"]: (c["type"], c.get("is_dttm")) for c in columns}
    check(kinds.get("ordered_at", (None, False))[1], f"ordered_at is not temporal: {kinds}")
    step(f"dataset sales.orders created: id {ds_id}, columns {kinds}")

    form = {
        "datasource": {"id": ds_id, "type": "table"},
        "force": True,
        "queries": [{
            "columns": [{"timeGrain": "P1M", "columnType": "BASE_AXIS", "sqlExpression":
                         "ordered_at", "label": "ordered_at", "expressionType": "SQL"}],
            "metrics": [{"expressionType": "SIMPLE", "column": {"column_name": "amount"},
                         "aggregate": "SUM", "label": "SUM(amount)"}],
            "orderby": [[{"expressionType": "SIMPLE", "column": {"column_name": "amount"},
                          "aggregate": "SUM", "label": "SUM(amount)"}, False]],
            "row_limit": 1000,
            "time_range": "No filter",
        }],
        "result_format": "json",
        "result_type": "full",
    }  # fmt: skip
    chart = api.call("POST", "/api/v1/chart/data", form)
    result = chart["result"][0]
    data = sorted((r["ordered_at"], r["SUM(amount)"]) for r in result["data"])
    step(f"chart query (GROUP BY month, SUM(amount)): {' '.join(result['query'].split())}")
    check(len(data) == len(expected), f"chart rows {data} vs DB-API {expected}")
    for (when, total), (e_month, e_total) in zip(data, expected):
        month = dt.datetime.fromtimestamp(when / 1000, dt.timezone.utc).replace(tzinfo=None) \
            if isinstance(when, (int, float)) else dt.datetime.fromisoformat(str(when))
        check(month == e_month, f"chart month {month} != {e_month}")
        check(decimal.Decimal(str(total)) == e_total, f"chart total {total} != {e_total}")
    shown = ", ".join(f"{m:%Y-%m}: {t}" for m, t in expected)
    step(f"chart data equals the DB-API's: {shown}")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    expected = make_lake()
    app = init_superset()
    run_superset(app, expected)
    step("all checks passed")


if __name__ == "__main__":
    main()
