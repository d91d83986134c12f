"""create ns.items

Revision ID: a1
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "a1"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "items",
        sa.Column("id", sa.BigInteger, primary_key=True, comment="item id"),
        sa.Column("name", sa.String(50), nullable=False),
        sa.Column("price", sa.Numeric(10, 2)),
        sa.Index("ix_items_name", "name"),
        schema="ns",
        comment="things we sell",
    )


def downgrade():
    op.drop_table("items", schema="ns")
