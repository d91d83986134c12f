"""The ``trinitylake`` SQLAlchemy dialect over the ``trinitylake_dbapi`` PEP 249 driver.

It holds no catalog logic: every reflection method is one statement of TrinityLake SQL
(SHOW NAMESPACES, SHOW TABLES IN, SELECTs over information_schema) and DDL is compiled
by :mod:`.compiler`. Types are read back with ``trinitylake_dbapi.parse_type``.

URLs, like sqlite's::

    trinitylake:///relative/path            a local lakehouse, relative to the cwd
    trinitylake:////absolute/path           a local lakehouse, absolute path
    trinitylake://?location=s3%3A%2F%2Fbucket%2Flake    any fsspec location, URL-encoded

Query parameters: ``create=true`` (create the lakehouse if missing), ``isolation_level=
SNAPSHOT|SERIALIZABLE``, ``version=<n or snapshot name>`` (read-only time travel).
``storage_options``, ``lakehouse_options`` and anything else go through
``create_engine(..., connect_args={...})``.

Namespaces are schemas. ``select``, ``insert``, ``update`` and ``delete`` run on the
tables' rows (TrinityLake SQL over the Iceberg data, see docs/sql.md); an executemany of
``insert(t)`` is one ``INSERT ... VALUES (?, ...)`` with every parameter set, which the
driver writes as one append. ``rowcount`` of UPDATE and DELETE is the number of rows
matched (``supports_sane_rowcount``); that of an executemany of UPDATE or DELETE is the
total over its parameter sets (``supports_sane_multi_rowcount``).

The system schemas (``information_schema``, ``system``) reflect like namespaces when
named (``get_table_names(schema="information_schema")``, ``get_columns``, ``Table(...,
autoload_with=...)``): their tables are the driver's ``system_tables()`` and their
columns' types those of a zero-row SELECT's ``description``. ``get_schema_names`` lists
the lakehouse's namespaces only, so that tools reflecting every schema (Alembic's
``include_schemas``, sqlacodegen) never take the system tables for tables of theirs.
"""

from __future__ import annotations

import os
from typing import Any

from sqlalchemy import exc
from sqlalchemy.engine import cursor as _cursor, default
from sqlalchemy.engine.url import URL

from . import compiler
from .compat import SQLALCHEMY_2, driver_connection, reflection_cache
from .types import from_type_text

__all__ = ["TrinityLakeDialect"]

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
#: Query parameters of the URL passed on to ``trinitylake_dbapi.connect``.
_URL_PARAMETERS = ("location", "create", "isolation_level", "version")
ISOLATION_LEVELS = ("SNAPSHOT", "SERIALIZABLE")


def _bool_parameter(name: str, value: str) -> bool:
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise exc.ArgumentError(f"URL parameter {name}={value!r}: expected true or false")


class TrinityLakeExecutionContext(default.DefaultExecutionContext):
    def post_exec(self) -> None:
        # Alembic's heads are read as one comment (see alembic_impl.py): one row per head.
        if self.compiled is not None and getattr(self.compiled, "split_heads", False):
            comments = [row[0] for row in self.cursor.fetchall()]
            heads = [(head,) for text in comments if text for head in text.split()]
            self.cursor_fetch_strategy = _cursor.FullyBufferedCursorFetchStrategy(
                self.cursor, self.cursor.description, heads
            )


class TrinityLakeDialect(compiler.TrinityLakeSQL):
    """The dialect: how it writes SQL (:class:`.compiler.TrinityLakeSQL`), plus the
    driver, connecting, executing and reflection."""

    driver = "trinitylake_dbapi"
    execution_ctx_cls = TrinityLakeExecutionContext

    supports_statement_cache = True
    # UPDATE and DELETE count the rows they match (copy-on-write rewrites them whether a
    # value changes or not); an executemany of them reports the total.
    supports_sane_rowcount = True
    supports_sane_multi_rowcount = True
    supports_server_side_cursors = False

    @classmethod
    def import_dbapi(cls) -> Any:
        import trinitylake_dbapi

        return trinitylake_dbapi

    if not SQLALCHEMY_2:
        # 1.4 asks the class for dbapi(), 2.x for import_dbapi().
        dbapi = import_dbapi

        # 1.4 leaves create_engine(isolation_level=...) to each dialect (2.x's default
        # dialect takes it): kept here and set on every new connection.
        def __init__(self, isolation_level: str | None = None, **kw: Any) -> None:
            super().__init__(**kw)
            self.isolation_level = isolation_level

        def on_connect(self) -> Any:
            level = self.isolation_level
            if level is None:
                return None
            return lambda dbapi_connection: self.set_isolation_level(dbapi_connection, level)

    # -- connecting ---------------------------------------------------------------

    def create_connect_args(self, url: URL) -> tuple[list[Any], dict[str, Any]]:
        """``(args, kwargs)`` for ``trinitylake_dbapi.connect`` (URL forms in the module
        docstring)."""
        if url.host or url.port or url.username or url.password:
            raise exc.ArgumentError(
                f"TrinityLake URLs have no host, port or user: use trinitylake:///relative/path, "
                f"trinitylake:////absolute/path or trinitylake://?location=<URL-encoded URI>, "
                f"not {url.render_as_string(hide_password=True)!r}"
            )
        query = dict(url.query)
        for key, value in query.items():
            if not isinstance(value, str):
                raise exc.ArgumentError(f"URL parameter {key!r} is given more than once")
            if key not in _URL_PARAMETERS:
                raise exc.ArgumentError(
                    f"unknown URL parameter {key!r}; the parameters are "
                    f"{', '.join(_URL_PARAMETERS)} (anything else goes in connect_args)"
                )
        location = query.pop("location", None)
        if url.database and location:
            raise exc.ArgumentError(
                "give the lakehouse either as the URL path or as ?location=, not both"
            )
        if url.database:
            location = os.path.abspath(url.database)
        if not location:
            raise exc.ArgumentError(
                "the URL names no lakehouse: use trinitylake:///relative/path, "
                "trinitylake:////absolute/path or trinitylake://?location=<URL-encoded URI>"
            )
        kwargs: dict[str, Any] = {}
        if "create" in query:
            kwargs["create"] = _bool_parameter("create", query["create"])
        if "isolation_level" in query:
            level = query["isolation_level"].upper()
            if level not in ISOLATION_LEVELS:
                raise exc.ArgumentError(
                    f"URL parameter isolation_level={query['isolation_level']!r}: expected "
                    f"one of {', '.join(ISOLATION_LEVELS)}"
                )
            kwargs["isolation_level"] = level
        if "version" in query:
            version = query["version"]
            kwargs["version"] = int(version) if version.isdigit() else version
        return [location], kwargs

    def do_execute(self, cursor: Any, statement: str, parameters: Any, context: Any = None) -> None:
        # DDL for what the format does not have (indexes, foreign keys, unique and
        # check constraints) compiles to nothing and is not sent.
        if not statement.strip():
            return
        cursor.execute(statement, parameters)

    def do_execute_no_params(self, cursor: Any, statement: str, context: Any = None) -> None:
        if not statement.strip():
            return
        cursor.execute(statement)

    def do_ping(self, dbapi_connection: Any) -> bool:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("SELECT 1")
            cursor.fetchall()
        finally:
            cursor.close()
        return True

    def _get_server_version_info(self, connection: Any) -> Any:
        return None

    def _get_default_schema_name(self, connection: Any) -> str:
        # The namespace of unqualified names: the one chosen by USE, else the driver's
        # default ("default").
        from trinitylake_dbapi import DEFAULT_NAMESPACE

        current = driver_connection(connection).current_namespace
        return current if current is not None else DEFAULT_NAMESPACE

    # -- isolation ----------------------------------------------------------------

    def get_isolation_level_values(self, dbapi_connection: Any) -> list[str]:
        return ["AUTOCOMMIT", *ISOLATION_LEVELS]

    def get_isolation_level(self, dbapi_connection: Any) -> str:
        if dbapi_connection.autocommit:
            return "AUTOCOMMIT"
        return dbapi_connection.isolation_level

    def set_isolation_level(self, dbapi_connection: Any, level: str) -> None:
        if level == "AUTOCOMMIT":
            dbapi_connection.autocommit = True
        else:
            dbapi_connection.autocommit = False
            dbapi_connection.isolation_level = level

    def detect_autocommit_setting(self, dbapi_conn: Any) -> bool:
        return bool(dbapi_conn.autocommit)

    # -- reflection: one statement each, cached per Inspector ------------------------

    def _rows(self, connection: Any, sql: str, params: tuple = ()) -> list[Any]:
        return list(connection.exec_driver_sql(sql, params).fetchall())

    def _schema(self, schema: str | None) -> str:
        return schema if schema is not None else self.default_schema_name

    def _quote_schema(self, schema: str | None) -> str:
        return self.identifier_preparer.quote_identifier(self._schema(schema))

    # -- the system schemas: information_schema and system ---------------------------

    @staticmethod
    def _system_tables() -> dict[tuple[str, str], tuple[str, ...]]:
        from trinitylake_dbapi import system_tables

        return system_tables()

    def _is_system_schema(self, schema: str | None) -> bool:
        return schema is not None and any(s == schema for s, _ in self._system_tables())

    def _system_columns(self, connection: Any, table_name: str, schema: str) -> list[Any]:
        """information_schema.columns' row shape for a system table: its columns' types
        are the type codes of a SELECT that reads no row."""
        if (schema, table_name) not in self._system_tables():
            raise exc.NoSuchTableError(f"{schema}.{table_name}")
        quote = self.identifier_preparer.quote_identifier
        result = connection.exec_driver_sql(f"SELECT * FROM {quote(schema)}.{quote(table_name)} LIMIT 0")
        description = result.cursor.description
        result.close()
        return [(d[0], d[1], "YES", None, None) for d in description]

    @reflection_cache
    def get_schema_names(self, connection: Any, **kw: Any) -> list[str]:
        return [row[0] for row in self._rows(connection, "SHOW NAMESPACES")]

    @reflection_cache
    def has_schema(self, connection: Any, schema_name: str, **kw: Any) -> bool:
        if self._is_system_schema(schema_name):
            return True
        return bool(self._rows(
            connection,
            "SELECT schema_name FROM information_schema.schemata WHERE schema_name = ?",
            (schema_name,),
        ))  # fmt: skip

    @reflection_cache
    def get_table_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        if self._is_system_schema(schema):
            return sorted(t for s, t in self._system_tables() if s == schema)
        if schema is None or schema == self.default_schema_name:
            # The default namespace may not exist (dropped, or a lakehouse made before it
            # was created with every new one): it then has no tables, like any name that
            # information_schema does not know. A namespace named explicitly must exist.
            return [row[0] for row in self._rows(
                connection,
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = ? ORDER BY table_name",
                (self.default_schema_name,),
            )]  # fmt: skip
        sql = f"SHOW TABLES IN {self._quote_schema(schema)}"
        return [row[1] for row in self._rows(connection, sql)]

    @reflection_cache
    def has_table(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> bool:
        self._ensure_has_table_connection(connection)
        if self._is_system_schema(schema):
            return (schema, table_name) in self._system_tables()
        return bool(self._rows(
            connection,
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = ? AND table_name = ?",
            (self._schema(schema), table_name),
        ))  # fmt: skip

    @reflection_cache
    def _table_columns(self, connection: Any, table_name: str, schema: str | None, **kw: Any) -> list[Any]:
        if self._is_system_schema(schema):
            assert schema is not None
            return self._system_columns(connection, table_name, schema)
        rows = self._rows(
            connection,
            "SELECT column_name, data_type, is_nullable, comment, primary_key_position "
            "FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
            "ORDER BY ordinal_position",
            (self._schema(schema), table_name),
        )
        if not rows:  # every table has at least one column
            raise exc.NoSuchTableError(f"{schema}.{table_name}" if schema else table_name)
        return rows

    @reflection_cache
    def get_columns(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list[dict]:
        columns = []
        for name, data_type, is_nullable, comment, _ in self._table_columns(
            connection, table_name, schema, info_cache=kw.get("info_cache")
        ):
            columns.append({
                "name": name,
                "type": from_type_text(data_type, column=name),
                "nullable": is_nullable == "YES",
                "default": None,
                "comment": comment,
            })  # fmt: skip
        return columns

    @reflection_cache
    def get_pk_constraint(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> dict:
        rows = self._table_columns(connection, table_name, schema, info_cache=kw.get("info_cache"))
        keyed = sorted((row[4], row[0]) for row in rows if row[4] is not None)
        return {"constrained_columns": [name for _, name in keyed], "name": None}

    @reflection_cache
    def get_table_comment(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> dict:
        if self._is_system_schema(schema):
            self._no_such_table(connection, table_name, schema, **kw)
            return {"text": None}
        rows = self._rows(
            connection,
            "SELECT comment FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
            (self._schema(schema), table_name),
        )
        if not rows:
            raise exc.NoSuchTableError(f"{schema}.{table_name}" if schema else table_name)
        return {"text": rows[0][0]}

    def _no_such_table(self, connection: Any, table_name: str, schema: str | None, **kw: Any) -> None:
        if not self.has_table(connection, table_name, schema, info_cache=kw.get("info_cache")):
            raise exc.NoSuchTableError(f"{schema}.{table_name}" if schema else table_name)

    # The format has no foreign keys, indexes, unique or check constraints and no views.

    @reflection_cache
    def get_foreign_keys(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list:
        self._no_such_table(connection, table_name, schema, **kw)
        return []

    @reflection_cache
    def get_indexes(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list:
        self._no_such_table(connection, table_name, schema, **kw)
        return []

    @reflection_cache
    def get_unique_constraints(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list:
        self._no_such_table(connection, table_name, schema, **kw)
        return []

    @reflection_cache
    def get_check_constraints(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list:
        self._no_such_table(connection, table_name, schema, **kw)
        return []

    @reflection_cache
    def get_table_options(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> dict:
        """``trinitylake_partitioned_by`` of a partitioned table (the fields of SHOW CREATE
        TABLE's PARTITIONED BY); {} otherwise."""
        self._no_such_table(connection, table_name, schema, **kw)
        if self._is_system_schema(schema):
            return {}
        quote = self.identifier_preparer.quote
        rows = self._rows(connection, f"SHOW CREATE TABLE {quote(self._schema(schema))}.{quote(table_name)}")
        for line in rows[0][0].splitlines():
            if line.startswith("PARTITIONED BY (") and line.endswith(")"):
                return {"trinitylake_partitioned_by": line[len("PARTITIONED BY ("):-1]}
        return {}

    def get_view_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list:
        return []

    def get_materialized_view_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list:
        return []

    def get_sequence_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list:
        return []

    def get_temp_table_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list:
        return []

    def get_temp_view_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list:
        return []

    def get_view_definition(self, connection: Any, view_name: str, schema: str | None = None, **kw: Any) -> str:
        raise exc.NoSuchTableError(f"{schema}.{view_name}" if schema else view_name)

    def has_index(self, connection: Any, table_name: str, index_name: str, schema: str | None = None, **kw: Any) -> bool:
        return False

    def has_sequence(self, connection: Any, sequence_name: str, schema: str | None = None, **kw: Any) -> bool:
        return False


dialect = TrinityLakeDialect

try:  # Alembic support, when Alembic is installed
    import alembic  # noqa: F401
except ImportError:  # pragma: no cover
    pass
else:
    from . import alembic_impl  # noqa: F401,E402
