"""voter.network: the keyed hash of the network a voter was first seen on, for the farm screen

Revision ID: b4c5d6e7f8a9
Revises: a3b4c5d6e7f8
Create Date: 2026-11-29 11:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = 'b4c5d6e7f8a9'
down_revision = 'a3b4c5d6e7f8'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('voter', sa.Column('network', sa.String(length=32), nullable=True))


def downgrade():
    # (in place on SQLite too: a batch copy of the voter table breaks the keys that name it)
    op.execute("ALTER TABLE voter DROP COLUMN network")
