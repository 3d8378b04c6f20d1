"""voter.hold_reviewed_at: an operator reviewed a hold and kept the voter out

Revision ID: d6e7f8a9b0c1
Revises: c5d6e7f8a9b0
Create Date: 2026-11-29 15:30:00

"""
import sqlalchemy as sa
from alembic import op

revision = 'd6e7f8a9b0c1'
down_revision = 'c5d6e7f8a9b0'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('voter', sa.Column('hold_reviewed_at', sa.DateTime(), nullable=True))


def downgrade():
    # (in place on SQLite too: a batch copy of the voter table breaks the keys that name it)
    op.execute("ALTER TABLE voter DROP COLUMN hold_reviewed_at")
