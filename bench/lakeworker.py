"""A lakehouse engine behind a pipe: the benchmark's peers run in processes of their own.

DuckLake loads only into duckdb 1.5.5 (NOTES, "DuckDB offline"), while this project's
venv has duckdb 2.x, so the DuckLake peer runs in a venv of its own (bench/ducklake.py
builds it) as a long-lived worker: ``python lakeworker.py ducklake DIR`` reads requests
from stdin and answers on stdout, one pickle each. A request is ``(operation, args)``;
the answer ``("ok", seconds, result)`` or ``("error", message)``, where ``seconds`` is
``time.perf_counter()`` around the operation only, measured in the worker: the pipe's
round trip is never part of a measurement.

Rules of this module: it imports only the standard library at the top (it runs under
another venv's Python, as a script, without the ``bench`` package); an engine offers
``execute(sql)`` (the rows, fetched to the end, or None), ``each(sql, params)`` (the
statement once per parameter tuple, each its own commit in autocommit: the seconds of
each and its rows), ``insert(table, columns, rows)`` (Python rows in, one commit) and ``mark(label)`` (an ``openat`` of a path that
does not exist, which bench/durability.py finds in a system call trace to cut it into
windows). ``TrinityLakeEngine`` offers the same for this project's DB-API, so the
durability count runs every side the same way; ``PyIcebergEngine`` (no SQL) offers
PyIceberg's catalog calls and ``insert`` for that count.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pickle
import re
import sys
import time
from typing import Any, BinaryIO

#: The path prefix of a marker ``openat`` (it never exists: the call fails with ENOENT).
MARK_PREFIX = "/nonexistent-bench-mark/"


def mark(label: str) -> None:
    """Leave ``label`` in a system call trace (an ``openat`` that fails)."""
    try:
        os.close(os.open(MARK_PREFIX + label, os.O_RDONLY))
    except OSError:
        pass


def ducklake_extension() -> str:
    """The ``.duckdb_extension`` file inside the installed duckdb-extension-ducklake wheel."""
    spec = importlib.util.find_spec("duckdb_extension_ducklake")
    if spec is None or spec.origin is None:
        raise RuntimeError("duckdb-extension-ducklake is not installed in this Python")
    found = glob.glob(os.path.join(os.path.dirname(spec.origin), "extensions", "*", "ducklake.duckdb_extension"))
    if not found:
        raise RuntimeError(f"no ducklake.duckdb_extension under {os.path.dirname(spec.origin)}")
    return found[0]


_DECIMAL = re.compile(r"DECIMAL\((\d+),\s*(\d+)\)$", re.IGNORECASE)


def _arrow_type(sql_type: str) -> Any:
    import pyarrow as pa

    simple = {"BIGINT": pa.int64(), "VARCHAR": pa.string(), "STRING": pa.string(), "DOUBLE": pa.float64(),
              "DATE": pa.date32(), "BOOLEAN": pa.bool_(), "INTEGER": pa.int32()}  # fmt: skip
    if sql_type.upper() in simple:
        return simple[sql_type.upper()]
    decimal = _DECIMAL.match(sql_type)
    if decimal:
        return pa.decimal128(int(decimal.group(1)), int(decimal.group(2)))
    raise ValueError(f"no Arrow type for column type {sql_type!r}")


def arrow_table(columns: list[tuple[str, str]], rows: list[tuple]) -> Any:
    """An Arrow table of ``rows`` with the columns' types (``(name, SQL type)`` pairs)."""
    import pyarrow as pa

    values = list(zip(*rows))
    return pa.table({name: pa.array(values[i], _arrow_type(kind)) for i, (name, kind) in enumerate(columns)})


def _each(run: Any, sql: str, params: list[tuple]) -> tuple[list[float], list]:
    seconds, answers = [], []
    for p in params:
        started = time.perf_counter()
        answers.append(run(sql, p))
        seconds.append(time.perf_counter() - started)
    return seconds, answers


class DuckLakeEngine:
    """DuckLake 1.0 in duckdb 1.5.5, offline: the extension loaded from its wheel, the
    catalog ``lake`` attached with its metadata in a DuckDB file and its data files
    under ``DIR/data``. One connection, autocommit: every statement commits."""

    def __init__(self, directory: str) -> None:
        import duckdb

        os.makedirs(directory, exist_ok=True)
        self.conn = duckdb.connect(config={"autoinstall_known_extensions": "false",
                                           "autoload_known_extensions": "false"})  # fmt: skip
        self.conn.execute(f"LOAD '{ducklake_extension()}'")
        target = "ducklake:" + os.path.join(directory, "metadata.duckdb")
        data_path = os.path.join(directory, "data") + "/"
        self.conn.execute(f"ATTACH '{target}' AS lake (DATA_PATH '{data_path}')")
        self.versions = {"duckdb": duckdb.__version__}

    def execute(self, sql: str) -> list | None:
        result = self.conn.execute(sql)
        return result.fetchall() if result.description is not None else None

    def each(self, sql: str, params: list[tuple]) -> tuple[list[float], list]:
        """``sql`` once per tuple of ``params``: each statement's seconds (execute and
        fetch) and its rows (None for a statement without a result)."""
        return _each(self.execute_params, sql, params)

    def execute_params(self, sql: str, params: tuple) -> list | None:
        result = self.conn.execute(sql, list(params))
        return result.fetchall() if result.description is not None else None

    def table_exists(self, table: str) -> bool:
        """DESCRIBE, False on a catalog error: DuckLake's cheapest existence check (a query
        of ``information_schema.tables`` or ``duckdb_tables()`` reads every table of the
        catalog: 1-5 s at 1,000 tables)."""
        import duckdb

        try:
            self.conn.execute(f"DESCRIBE {table}").fetchall()
        except duckdb.CatalogException:
            return False
        return True

    def insert(self, table: str, columns: list[tuple[str, str]], rows: list[tuple]) -> None:
        """Rows to an Arrow table (the fastest way into DuckDB from Python rows), then one
        ``INSERT ... SELECT``: one DuckLake snapshot."""
        self.conn.register("bench_batch", arrow_table(columns, rows))
        try:
            self.conn.execute(f"INSERT INTO {table} SELECT * FROM bench_batch")
        finally:
            self.conn.unregister("bench_batch")

    def mark(self, label: str) -> None:
        mark(label)

    def close(self) -> None:
        self.conn.close()


class TrinityLakeEngine:
    """This project's DB-API in autocommit mode (the lakehouse at ``DIR``)."""

    def __init__(self, directory: str) -> None:
        import trinitylake_dbapi

        self.conn = trinitylake_dbapi.connect(directory, create=True, autocommit=True)
        self.cur = self.conn.cursor()

    def execute(self, sql: str) -> list | None:
        self.cur.execute(sql)
        return self.cur.fetchall() if self.cur.description is not None else None

    def each(self, sql: str, params: list[tuple]) -> tuple[list[float], list]:
        """As DuckLakeEngine.each, through the DB-API cursor."""
        return _each(self.execute_params, sql, params)

    def execute_params(self, sql: str, params: tuple) -> list | None:
        self.cur.execute(sql, params)
        return self.cur.fetchall() if self.cur.description is not None else None

    def insert(self, table: str, columns: list[tuple[str, str]], rows: list[tuple]) -> None:
        """``executemany`` of ``INSERT ... VALUES (?, ...)``: one append, one version."""
        self.cur.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})", rows)

    def mark(self, label: str) -> None:
        mark(label)

    def close(self) -> None:
        self.conn.close()


class PyIcebergEngine:
    """PyIceberg's ``SqlCatalog`` (SQLite, local warehouse, PyIceberg's own FileIO) as
    shipped, for the durability count of bench/durability.py: no SQL, catalog calls."""

    def __init__(self, directory: str) -> None:
        from pyiceberg.catalog.sql import SqlCatalog

        from bench.sides import iceberg_properties

        os.makedirs(os.path.join(directory, "warehouse"), exist_ok=True)
        self.catalog = SqlCatalog("bench", **iceberg_properties(directory))

    def create_namespace(self, ns: str) -> None:
        self.catalog.create_namespace(ns)

    def create_table(self, name: str, columns: list[tuple[str, str]] | None) -> None:
        """The benchmark's 10-column schema, or an Arrow schema of ``columns``."""
        import pyarrow as pa

        from bench.sides import iceberg_schema

        schema = iceberg_schema() if columns is None else pa.schema([(n, _arrow_type(k)) for n, k in columns])
        self.catalog.create_table(name, schema)

    def insert(self, table: str, columns: list[tuple[str, str]], rows: list[tuple]) -> None:
        """One ``append`` of an Arrow table built from the rows: one snapshot."""
        self.catalog.load_table(table).append(arrow_table(columns, rows))

    def drop_table(self, name: str) -> None:
        self.catalog.drop_table(name)

    def mark(self, label: str) -> None:
        mark(label)

    def close(self) -> None:
        self.catalog.engine.dispose()


def serve(engine: Any, requests: BinaryIO, answers: BinaryIO) -> None:
    """Answer requests until end of input or ``("close", ())``; errors are answered, not raised."""
    while True:
        try:
            operation, args = pickle.load(requests)
        except EOFError:
            return
        if operation == "close":
            engine.close()
            pickle.dump(("ok", 0.0, None), answers)
            answers.flush()
            return
        try:
            method = getattr(engine, operation)
            started = time.perf_counter()
            result = method(*args)
            seconds = time.perf_counter() - started
            answer: tuple = ("ok", seconds, result)
        except Exception as exc:  # noqa: BLE001 - sent to the parent, which raises it
            answer = ("error", f"{type(exc).__name__}: {exc}")
        pickle.dump(answer, answers)
        answers.flush()


ENGINES = {"ducklake": DuckLakeEngine, "trinitylake": TrinityLakeEngine, "pyiceberg": PyIcebergEngine}


def main(argv: list[str]) -> int:
    """``lakeworker.py ENGINE DIR``: build the engine, answer ``("ready", versions)``, serve."""
    kind, directory = argv
    answers = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but answers on the pipe
    try:
        engine = ENGINES[kind](directory)
    except Exception as exc:  # noqa: BLE001 - the parent reports why the peer is missing
        pickle.dump(("error", f"{type(exc).__name__}: {exc}"), answers)
        answers.flush()
        return 1
    pickle.dump(("ok", 0.0, getattr(engine, "versions", {})), answers)
    answers.flush()
    serve(engine, sys.stdin.buffer, answers)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
