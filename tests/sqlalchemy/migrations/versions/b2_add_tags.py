"""add ns.items.tags, comment on name

Revision ID: b2
Revises: a1
"""

import sqlalchemy as sa
from alembic import op

revision = "b2"
down_revision = "a1"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column("items", sa.Column("tags", sa.ARRAY(sa.String)), schema="ns")
    op.alter_column("items", "name", schema="ns", comment="display name")


def downgrade():
    op.alter_column("items", "name", schema="ns", comment=None, existing_comment="display name")
    op.drop_column("items", "tags", schema="ns")
