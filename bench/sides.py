"""The systems a benchmark compares, behind one small interface.

Every side offers the same catalog operations, each one a complete user-visible action:
a write is its own committed transaction (autocommit), a read starts from the latest
version. Names are ``(namespace, table)`` pairs of plain ASCII.

* ``TrinityLakeCatalogSide``: the engine's object API, ``LakehouseCatalog``.
* ``TrinityLakeDbapiSide``: the PEP 249 driver with SQL text (when it is importable).
* ``IcebergSide``: PyIceberg 0.12 ``SqlCatalog`` on a SQLite file and a local warehouse,
  the embedded catalog a Python user would pick instead.
"""

from __future__ import annotations

import os
from typing import Any

#: The 10-column schema of issue 8, as (name, SPEC 5 type text).
COLUMNS = [
    ("c_long", "bigint"),
    ("c_str", "string"),
    ("c_dbl", "double"),
    ("c_ts", "timestamp"),
    ("c_dec", "decimal(10,2)"),
    ("c_bool", "boolean"),
    ("c_date", "date"),
    ("c_list", "list<string>"),
    ("c_map", "map<string,int>"),
    ("c_struct", "struct<a:int,b:string>"),
]

#: The same schema in the DB-API's SQL (Spark-style nested types).
CREATE_TABLE_COLUMNS_SQL = (
    "c_long BIGINT, c_str STRING, c_dbl DOUBLE, c_ts TIMESTAMP, c_dec DECIMAL(10,2), "
    "c_bool BOOLEAN, c_date DATE, c_list ARRAY<STRING>, c_map MAP<STRING, INT>, "
    "c_struct STRUCT<a: INT, b: STRING>"
)


class Side:
    """One system under test, rooted in its own fresh directory."""

    name = "?"
    #: True if ``counters()`` reports storage calls.
    has_counters = False
    #: True if the side measures its own operations (a worker process: the pipe's round
    #: trip is not the system's time); ``take_seconds()`` then returns and resets the sum.
    self_timed = False

    def create_namespace(self, ns: str) -> None: ...
    def create_table(self, ns: str, table: str) -> None: ...
    def describe(self, ns: str, table: str) -> Any: ...
    def columns(self, ns: str, table: str) -> Any: ...
    def list_tables(self, ns: str) -> list: ...
    def table_exists(self, ns: str, table: str) -> bool: ...
    def drop_table(self, ns: str, table: str) -> None: ...

    def counters(self) -> Any:
        return None

    def take_seconds(self) -> float:
        raise NotImplementedError(f"{self.name} does not time itself")

    def close(self) -> None:
        pass


def lake_uri(directory: str) -> str:
    return "file://" + os.path.abspath(directory) + "/"


class TrinityLakeCatalogSide(Side):
    name = "trinitylake"
    has_counters = True

    def __init__(self, directory: str, lakehouse_options: dict | None = None) -> None:
        from trinitylake_dbapi.catalog import LakehouseCatalog
        from trinitylake_dbapi.format.types import ColumnSpec, parse_type

        self.uri = lake_uri(directory)
        self.catalog = LakehouseCatalog(self.uri, create=True, lakehouse_options=lakehouse_options)
        self.columns = [ColumnSpec(n, parse_type(t, column=n)) for n, t in COLUMNS]

    def create_namespace(self, ns: str) -> None:
        txn = self.catalog.begin()
        txn.create_namespace(ns)
        txn.commit()

    def create_table(self, ns: str, table: str) -> None:
        txn = self.catalog.begin()
        txn.create_table(ns, table, self.columns)
        txn.commit()

    def create_tables_bulk(self, ns: str, tables: list[str]) -> None:
        """Many creates in one transaction (the bulk path of the scale benchmark)."""
        txn = self.catalog.begin()
        for table in tables:
            txn.create_table(ns, table, self.columns)
        txn.commit()

    def describe(self, ns: str, table: str) -> Any:
        return self.catalog.begin().describe_table(ns, table)

    def list_tables(self, ns: str) -> list:
        return self.catalog.begin().list_tables(ns)

    def table_exists(self, ns: str, table: str) -> bool:
        return self.catalog.begin().table_exists(ns, table)

    def drop_table(self, ns: str, table: str) -> None:
        txn = self.catalog.begin()
        txn.drop_table(ns, table)
        txn.commit()

    def counters(self) -> Any:
        return self.catalog.storage.counters.snapshot()

    def close(self) -> None:
        self.catalog.close()


def dbapi_available() -> str | None:
    """None if the DB-API driver can run the benchmark's SQL, else why not."""
    try:
        import trinitylake_dbapi
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        return f"import failed: {exc}"
    if not callable(getattr(trinitylake_dbapi, "connect", None)):
        return "trinitylake_dbapi.connect does not exist yet"
    return None


class TrinityLakeDbapiSide(Side):
    """The PEP 249 driver: one connection in autocommit mode, SQL text per operation."""

    name = "trinitylake-dbapi"
    has_counters = True

    def __init__(self, directory: str) -> None:
        import trinitylake_dbapi

        self.uri = lake_uri(directory)
        self.conn = trinitylake_dbapi.connect(self.uri, create=True, autocommit=True)
        self.cur = self.conn.cursor()

    def _run(self, sql: str) -> list:
        self.cur.execute(sql)
        if self.cur.description is None:
            return []
        return self.cur.fetchall()

    def create_namespace(self, ns: str) -> None:
        self._run(f"CREATE NAMESPACE {ns}")

    def create_table(self, ns: str, table: str) -> None:
        self._run(f"CREATE TABLE {ns}.{table} ({CREATE_TABLE_COLUMNS_SQL})")

    def describe(self, ns: str, table: str) -> Any:
        return self._run(f"DESCRIBE TABLE {ns}.{table}")

    def columns(self, ns: str, table: str) -> Any:
        return self._run("SELECT column_name, data_type FROM information_schema.columns WHERE "
                         f"table_schema = '{ns}' AND table_name = '{table}'")  # fmt: skip

    def list_tables(self, ns: str) -> list:
        return self._run(f"SHOW TABLES IN {ns}")

    def table_exists(self, ns: str, table: str) -> bool:
        return bool(self._run(f"SHOW TABLES IN {ns} LIKE '{table}'"))

    def drop_table(self, ns: str, table: str) -> None:
        self._run(f"DROP TABLE {ns}.{table}")

    def counters(self) -> Any:
        storage = _find_storage(self.conn)
        return None if storage is None else storage.counters.snapshot()

    def close(self) -> None:
        self.conn.close()


def _find_storage(conn: Any) -> Any:
    """The driver's Storage object, wherever the connection keeps it."""
    from trinitylake_dbapi.storage import Storage

    holders = [conn] + [getattr(conn, a, None) for a in ("lakehouse", "_lakehouse", "catalog")]
    for holder in holders:
        if holder is None:
            continue
        for attr in ("storage", "_storage"):
            value = getattr(holder, attr, None)
            if isinstance(value, Storage):
                return value
    return None


def iceberg_schema() -> Any:
    from pyiceberg.schema import Schema
    from pyiceberg.types import (
        BooleanType,
        DateType,
        DecimalType,
        DoubleType,
        IntegerType,
        ListType,
        LongType,
        MapType,
        NestedField,
        StringType,
        StructType,
        TimestampType,
    )

    return Schema(
        NestedField(1, "c_long", LongType()),
        NestedField(2, "c_str", StringType()),
        NestedField(3, "c_dbl", DoubleType()),
        NestedField(4, "c_ts", TimestampType()),
        NestedField(5, "c_dec", DecimalType(10, 2)),
        NestedField(6, "c_bool", BooleanType()),
        NestedField(7, "c_date", DateType()),
        NestedField(8, "c_list", ListType(11, StringType())),
        NestedField(9, "c_map", MapType(12, StringType(), 13, IntegerType())),
        NestedField(
            10,
            "c_struct",
            StructType(NestedField(14, "a", IntegerType()), NestedField(15, "b", StringType())),
        ),
    )


def iceberg_properties(directory: str) -> dict[str, str]:
    directory = os.path.abspath(directory)
    return {"uri": f"sqlite:///{directory}/catalog.db", "warehouse": f"file://{directory}/warehouse"}


class IcebergSide(Side):
    name = "pyiceberg"

    def __init__(self, directory: str) -> None:
        from pyiceberg.catalog.sql import SqlCatalog

        os.makedirs(os.path.join(directory, "warehouse"), exist_ok=True)
        self.catalog = SqlCatalog("bench", **iceberg_properties(directory))
        self.schema = iceberg_schema()

    def create_namespace(self, ns: str) -> None:
        self.catalog.create_namespace(ns)

    def create_table(self, ns: str, table: str) -> None:
        self.catalog.create_table((ns, table), self.schema)

    def describe(self, ns: str, table: str) -> Any:
        return self.catalog.load_table((ns, table)).schema()

    def list_tables(self, ns: str) -> list:
        return self.catalog.list_tables(ns)

    def table_exists(self, ns: str, table: str) -> bool:
        return self.catalog.table_exists((ns, table))

    def drop_table(self, ns: str, table: str) -> None:
        self.catalog.drop_table((ns, table))

    def close(self) -> None:
        self.catalog.engine.dispose()
