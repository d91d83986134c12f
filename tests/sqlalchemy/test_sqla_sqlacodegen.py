"""sqlacodegen 4 on a real lakehouse, its output executed (issue 15, items 1, 2, 3).

sqlacodegen renders a column type from its constructor's arguments and imports only the
column's own type class (and an ARRAY's item class): the dialect's nested types must
render their inner types so that the output runs with what it imports.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

import trinitylake_dbapi
import trinitylake_sqlalchemy
import warm_cli

# Slow: sqlacodegen and the generated models, in processes (scripts/test --quick leaves it out).
pytestmark = pytest.mark.slow

#: The code under test, first on the child's import path.
_PATH = os.pathsep.join(
    [os.path.dirname(os.path.dirname(m.__file__)) for m in (trinitylake_sqlalchemy, trinitylake_dbapi)]
    + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
)


def sqlacodegen(url: str, *args: str) -> str:
    """The output of the real sqlacodegen command line (``python -m sqlacodegen``, in a
    process forked from a warm one that has SQLAlchemy and the dialect imported:
    tests/warm_cli.py; a fresh interpreter's imports were most of these tests' CPU)."""
    done = subprocess.run(
        warm_cli.module("sqlacodegen", *args, url),
        capture_output=True, text=True, env=warm_cli.env({**os.environ, "PYTHONPATH": _PATH}, bash_function=False),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def run(code: str, directory: Path) -> sa.MetaData:
    """Imports generated code as a module of its own (declarative classes resolve their
    annotations in their module); its MetaData."""
    path = directory / "generated_models.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location("generated_models", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module.Base.metadata if hasattr(module, "Base") else module.metadata


def _lakehouse(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "CREATE TABLE ns.nested (id BIGINT NOT NULL, "
            "tags MAP<VARCHAR, ARRAY<BIGINT>> COMMENT 'by kind', "
            "address STRUCT<city: VARCHAR, zip: VARCHAR(10) NOT NULL COMMENT 'postal'>, "
            "history ARRAY<STRUCT<at: TIMESTAMPTZ(6), what: MAP<INT, FIXED(2)>>>, "
            "grid ARRAY<ARRAY<DECIMAL(10,2)>>, opens TIME(3), raw BINARY, PRIMARY KEY (id))"
        )
        conn.exec_driver_sql("CREATE TABLE ns.keyless (m MAP<INT, STRUCT<\"a-b\": DATE>>)")


def _columns(engine: sa.Engine, table: str) -> list[tuple]:
    return [(c["name"], c["type"].compile(engine.dialect), c["nullable"], c["comment"])
            for c in sa.inspect(engine).get_columns(table, "ns")]  # fmt: skip


@pytest.mark.parametrize("generator", ["declarative", "tables"])
def test_generated_models_of_nested_types_run(engine, lake_path, tmp_path, generator):
    _lakehouse(engine)
    code = sqlacodegen(f"trinitylake:///{lake_path}", "--schemas", "ns", "--generator", generator)
    assert "MAP('VARCHAR', 'ARRAY<BIGINT>')" in code
    metadata = run(code, tmp_path)
    assert sorted(metadata.tables) == ["ns.keyless", "ns.nested"]
    for name in ("keyless", "nested"):
        table = metadata.tables[f"ns.{name}"]
        assert [(c.name, c.type.compile(engine.dialect), c.nullable, c.comment)
                for c in table.columns] == _columns(engine, name)  # fmt: skip


def test_sqlacodegen_without_a_default_namespace(lake_url, lake_path, tmp_path):
    # Issue 15, item 2: sqlacodegen reflects the default schema when none is named.
    engine = sa.create_engine(lake_url)
    with engine.begin() as conn:
        conn.exec_driver_sql('DROP NAMESPACE IF EXISTS "default"')
        conn.exec_driver_sql("CREATE NAMESPACE ns")
    engine.dispose()
    metadata = run(sqlacodegen(f"trinitylake:///{lake_path}"), tmp_path)
    assert list(metadata.tables) == []
