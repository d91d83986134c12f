"""Alembic against a local lakehouse: migrations (issue 6, acceptance 5) and autogenerate
(issue 15, item 3)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext

from sqla_helpers import versions
from trinitylake_sqlalchemy.types import FIXED, MAP, STRUCT, TIME, TIMESTAMP, StructField

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


# -- autogenerate (issue 15, item 3) -------------------------------------------------------

_AUTOGENERATE_ENV = '''"""Environment of an autogenerate test: the connection and the models come from
config.attributes."""
from alembic import context

config = context.config
context.configure(
    connection=config.attributes["connection"],
    target_metadata=config.attributes["target_metadata"],
    include_schemas=True,
)
with context.begin_transaction():
    context.run_migrations()
'''


def _models() -> sa.MetaData:
    """Models with every dialect type, nested, and the constraints the format does not
    store (foreign key, index, unique constraint)."""
    metadata = sa.MetaData()
    sa.Table(
        "items", metadata,
        sa.Column("id", sa.BigInteger, primary_key=True),
        sa.Column("name", sa.String(50), nullable=False, unique=True),
        sa.Column("tags", MAP(sa.String(), sa.ARRAY(sa.BigInteger()))),
        sa.Column("address", STRUCT(StructField("city", sa.String()),
                                    StructField("zip", sa.String(10), False, "postal"))),
        sa.Column("history", sa.ARRAY(STRUCT(("at", TIMESTAMP(timezone=True, precision=6)),
                                             ("what", MAP(sa.Integer, FIXED(2)))))),
        sa.Column("opens", TIME(precision=3)),
        sa.Column("digest", FIXED(16)),
        sa.Index("ix_items_name_tags", "name", "id"),
        schema="ns",
    )  # fmt: skip
    sa.Table(
        "orders", metadata,
        sa.Column("id", sa.BigInteger, primary_key=True),
        sa.Column("item_id", sa.ForeignKey("ns.items.id"), nullable=False, index=True),
        sa.Column("code", sa.String(8)),
        sa.UniqueConstraint("item_id", "code"),
        sa.ForeignKeyConstraint(["code"], ["ns.items.name"], name="fk_code"),
        schema="ns",
    )  # fmt: skip
    return metadata


def _project(tmp_path: Path, conn: sa.Connection, metadata: sa.MetaData) -> Config:
    """A real Alembic project in tmp_path (``alembic init``), its env.py replaced."""
    directory = tmp_path / "project"
    command.init(Config(str(tmp_path / "alembic.ini")), str(directory))
    (directory / "env.py").write_text(_AUTOGENERATE_ENV)
    config = Config()
    config.set_main_option("script_location", str(directory))
    config.attributes["connection"] = conn
    config.attributes["target_metadata"] = metadata
    return config


def test_autogenerated_migration_of_dialect_types_runs(engine, tmp_path):
    metadata = _models()
    with engine.connect() as conn:
        config = _project(tmp_path, conn, metadata)
        script = command.revision(config, message="models", autogenerate=True, rev_id="m1")
        text = Path(script.path).read_text()
        assert "import trinitylake_sqlalchemy.types\n" in text
        assert "trinitylake_sqlalchemy.types.MAP('VARCHAR', 'ARRAY<BIGINT>')" in text
        command.upgrade(config, "head")  # the generated file imports and runs

        insp = sa.inspect(conn)
        assert insp.get_table_names("ns") == ["items", "orders"]
        for table in metadata.tables.values():
            reflected = insp.get_columns(table.name, table.schema)
            assert [(c["name"], c["type"].compile(conn.dialect)) for c in reflected] == [
                (c.name, c.type.compile(conn.dialect)) for c in table.columns
            ]
        assert _heads(engine) == ("m1",)

        # Nothing changed: an empty diff, though the lakehouse stores no foreign key,
        # index or unique constraint of the models.
        command.check(config)
        context = MigrationContext.configure(conn, opts={"include_schemas": True})
        assert compare_metadata(context, metadata) == []


def test_autogenerate_still_sees_a_new_column_of_a_dialect_type(engine, tmp_path):
    metadata = _models()
    metadata.create_all(engine)
    metadata.tables["ns.orders"].append_column(sa.Column("extra", STRUCT(("a", sa.Integer))))
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_schemas": True})
        diff = compare_metadata(context, metadata)
    assert [(d[0], d[3].name) for d in diff] == [("add_column", "extra")]


def test_autogenerate_on_a_lakehouse_without_the_default_namespace(lake_url):
    # Issue 15, item 2 (the dialect's half): Alembic's first autogenerate reflects the
    # default schema, which may not exist.
    engine = sa.create_engine(lake_url)
    with engine.begin() as conn:
        conn.exec_driver_sql('DROP NAMESPACE IF EXISTS "default"')
    with engine.connect() as conn:
        context = MigrationContext.configure(conn)
        metadata = sa.MetaData()
        sa.Table("t", metadata, sa.Column("a", sa.Integer))
        assert [d[0] for d in compare_metadata(context, metadata)] == ["add_table"]
    engine.dispose()
