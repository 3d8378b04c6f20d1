"""voter.held_reason: why the farm screen (or an operator) held the voter out, for the review

Revision ID: c5d6e7f8a9b0
Revises: b4c5d6e7f8a9
Create Date: 2026-11-29 14:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = 'c5d6e7f8a9b0'
down_revision = 'b4c5d6e7f8a9'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('voter', sa.Column('held_reason', sa.String(length=200), nullable=True))


def downgrade():
    # (in place on SQLite too: a batch copy of the voter table breaks the keys that name it)
    op.execute("ALTER TABLE voter DROP COLUMN held_reason")
