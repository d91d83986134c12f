"""An Alembic migration against a local lakehouse (issue 6, acceptance 5)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext

from sqla_helpers import versions

MIGRATIONS = Path(__file__).parent / "migrations"


def _run(engine: sa.Engine, fn, *args) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.connect() as conn:
        config.attributes["connection"] = conn
        fn(config, *args)


def _heads(engine: sa.Engine) -> tuple:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_heads()


def test_upgrade_and_downgrade_one_version_per_step(engine):
    start = versions(engine)[-1][0]

    _run(engine, command.upgrade, "a1")
    insp = sa.inspect(engine)
    assert insp.get_table_names("ns") == ["items"]
    assert insp.get_table_names() == ["alembic_version"]  # in the default namespace
    assert [c["name"] for c in insp.get_columns("items", "ns")] == ["id", "name", "price"]
    assert insp.get_table_comment("items", "ns") == {"text": "things we sell"}
    assert insp.get_pk_constraint("items", "ns")["constrained_columns"] == ["id"]
    assert _heads(engine) == ("a1",)

    _run(engine, command.upgrade, "head")
    insp = sa.inspect(engine)
    columns = insp.get_columns("items", "ns")
    assert [c["name"] for c in columns] == ["id", "name", "price", "tags"]
    assert isinstance(columns[3]["type"], sa.ARRAY)
    assert columns[1]["comment"] == "display name"
    assert _heads(engine) == ("b2",)

    _run(engine, command.downgrade, "a1")
    columns = sa.inspect(engine).get_columns("items", "ns")
    assert [c["name"] for c in columns] == ["id", "name", "price"]
    assert columns[1]["comment"] is None
    assert _heads(engine) == ("a1",)

    _run(engine, command.downgrade, "base")
    assert not sa.inspect(engine).has_table("items", "ns")
    assert _heads(engine) == ()

    steps = [v for v in versions(engine) if v[0] > start]
    assert [v[0] for v in steps] == [start + 1, start + 2, start + 3, start + 4]
    assert all(previous == version - 1 for version, previous, _ in steps)
    # Each step changed the table and the heads (in alembic_version's comment) together.
    assert [set(changes.split(", ")) for *_, changes in steps] == [
        {"table default.alembic_version", "table ns.items"},
    ] * 4
