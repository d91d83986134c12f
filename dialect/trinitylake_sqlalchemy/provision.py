"""Hooks for SQLAlchemy's dialect compliance suite (loaded by
``Dialect.load_provisioning``): the suite's engine needs the namespaces ``default`` (where
unqualified names live), ``test_schema`` and ``test_schema_2``."""

from __future__ import annotations

from typing import Any

from sqlalchemy.testing.provision import post_configure_engine, temp_table_keyword_args

SUITE_NAMESPACES = ("test_schema", "test_schema_2")


@post_configure_engine.for_db("trinitylake")
def _create_namespaces(url: Any, engine: Any, follower_ident: Any) -> None:
    with engine.begin() as conn:
        names = [engine.dialect.default_schema_name, *SUITE_NAMESPACES]
        for name in names:
            quoted = engine.dialect.identifier_preparer.quote_identifier(name)
            conn.exec_driver_sql(f"CREATE NAMESPACE IF NOT EXISTS {quoted}")


@temp_table_keyword_args.for_db("trinitylake")
def _temp_table_keyword_args(cfg: Any, eng: Any) -> dict:
    raise NotImplementedError("TrinityLake has no temporary tables")
