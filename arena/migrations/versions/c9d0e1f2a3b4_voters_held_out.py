"""voters an operator holds out of the rankings

Revision ID: c9d0e1f2a3b4
Revises: b8c9d0e1f2a3
Create Date: 2026-11-28 21:10:00

"""
import sqlalchemy as sa
from alembic import op

revision = 'c9d0e1f2a3b4'
down_revision = 'b8c9d0e1f2a3'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('voter', sa.Column('held_at', sa.DateTime(), nullable=True))
    op.add_column('voter', sa.Column('released_at', sa.DateTime(), nullable=True))


def downgrade():
    # (in place on SQLite too: a batch copy of the voter table breaks the keys that name it)
    op.execute("ALTER TABLE voter DROP COLUMN released_at")
    op.execute("ALTER TABLE voter DROP COLUMN held_at")
