"""Alembic environment of tests/sqlalchemy/test_sqla_alembic.py: runs on the connection
the test passes in ``config.attributes["connection"]``, one transaction (one lakehouse
version) per migration step."""

from alembic import context

config = context.config
context.configure(
    connection=config.attributes["connection"],
    version_table_schema=config.attributes.get("version_table_schema"),
    transaction_per_migration=True,
)
with context.begin_transaction():
    context.run_migrations()
