"""URLs, connect_args, the entry point and isolation levels (issue 6, build and
acceptance 1)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.engine import make_url

from trinitylake_sqlalchemy.base import TrinityLakeDialect
from deadlines import HANG_S


def connect_args(url: str) -> tuple[list, dict]:
    return TrinityLakeDialect().create_connect_args(make_url(url))


def test_entry_point_names_the_dialect():
    (ep,) = importlib.metadata.entry_points(group="sqlalchemy.dialects", name="trinitylake")
    assert ep.load() is TrinityLakeDialect


def test_create_engine_after_installation_needs_no_registry_call(tmp_path):
    # A fresh interpreter: nothing registered by a conftest, only the entry point.
    lake = tmp_path / "data" / "lake"
    code = (
        "import sqlalchemy as sa\n"
        f"e = sa.create_engine('trinitylake:///{lake}?create=true')\n"
        "with e.begin() as c:\n"
        "    c.exec_driver_sql('CREATE NAMESPACE n')\n"
        "print(sa.inspect(e).get_schema_names())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=HANG_S)  # fmt: skip
    assert out.stdout.strip() == "['default', 'n']"
    assert (lake / "_latest_hint.txt").exists() or any(lake.iterdir())


@pytest.mark.parametrize(
    ("url", "location"),
    [
        ("trinitylake:////data/lake", "/data/lake"),
        ("trinitylake:///rel/lake", os.path.abspath("rel/lake")),
        ("trinitylake://?location=s3%3A%2F%2Fbucket%2Flake", "s3://bucket/lake"),
        ("trinitylake://?location=memory%3A%2F%2Fx%2Flake", "memory://x/lake"),
        ("trinitylake://?location=file%3A%2F%2F%2Fdata%2Fa%20b", "file:///data/a b"),
    ],
)
def test_url_forms(url, location):
    assert connect_args(url) == ([location], {})


def test_url_parameters():
    args, kwargs = connect_args(
        "trinitylake:////l?create=true&isolation_level=serializable&version=3"
    )
    assert kwargs == {"create": True, "isolation_level": "SERIALIZABLE", "version": 3}
    assert connect_args("trinitylake:////l?create=false&version=snap1")[1] == {
        "create": False, "version": "snap1"
    }


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("trinitylake://", "names no lakehouse"),
        ("trinitylake://host/lake", "no host"),
        ("trinitylake:////l?location=memory%3A%2F%2Fx", "not both"),
        ("trinitylake:////l?colour=red", "unknown URL parameter 'colour'"),
        ("trinitylake:////l?create=maybe", "expected true or false"),
        ("trinitylake:////l?isolation_level=dirty", "expected one of SNAPSHOT, SERIALIZABLE"),
        ("trinitylake:////l?create=true&create=false", "more than once"),
    ],
)
def test_bad_urls(url, message):
    with pytest.raises(exc.ArgumentError, match=message):
        connect_args(url)


def test_connect_args_reach_the_driver():
    url = f"trinitylake://?location=memory%3A%2F%2Fsqla-{uuid.uuid4().hex}%2Flake"
    engine = sa.create_engine(url, connect_args={
        "create": True, "storage_options": {}, "lakehouse_options": {"order": 8},
    })  # fmt: skip
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SHOW VERSIONS").fetchall()[0][0] == 0
    engine.dispose()


def test_missing_lakehouse_without_create_is_an_error(tmp_path):
    engine = sa.create_engine(f"trinitylake:///{tmp_path}/nothing")
    with pytest.raises(exc.DBAPIError):
        engine.connect()


def test_isolation_levels(lake_url, engine):
    with engine.connect() as conn:
        assert conn.get_isolation_level() == "SNAPSHOT"
    serializable = sa.create_engine(lake_url + "&isolation_level=serializable")
    with serializable.connect() as conn:
        assert conn.get_isolation_level() == "SERIALIZABLE"
    levels = sa.create_engine(lake_url, isolation_level="SERIALIZABLE")
    with levels.connect() as conn:
        assert conn.get_isolation_level() == "SERIALIZABLE"
        conn.execution_options(isolation_level="SNAPSHOT")
        assert conn.get_isolation_level() == "SNAPSHOT"
    # The pool gives the connection back at the engine's level.
    with levels.connect() as conn:
        assert conn.get_isolation_level() == "SERIALIZABLE"


def test_autocommit_publishes_each_statement(engine):
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("CREATE NAMESPACE auto")
        # Seen by another connection without a commit.
        assert "auto" in sa.inspect(engine).get_schema_names()


def test_rollback_discards(engine):
    with engine.connect() as conn:
        transaction = conn.begin()  # explicit: SQLAlchemy 1.4's Connection has no rollback()
        conn.exec_driver_sql("CREATE NAMESPACE gone")
        transaction.rollback()
    assert "gone" not in sa.inspect(engine).get_schema_names()


def test_time_travel_engine_is_read_only(lake_path, lake_url, engine):
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE ns.later (a INT)")
    old = sa.create_engine(f"trinitylake:///{lake_path}?version=1")
    assert sa.inspect(old).get_table_names("ns") == []  # version 1: before the table
    with old.connect() as conn, pytest.raises(exc.DBAPIError, match="read"):
        conn.exec_driver_sql("CREATE NAMESPACE x")
    assert sa.inspect(engine).get_table_names("ns") == ["later"]


def test_ping(engine):
    with engine.connect() as conn:
        assert engine.dialect.do_ping(conn.connection.dbapi_connection)
