"""campaign.allocated_votes: a refresh re-decides once a round of votes has come in

Revision ID: f2a3b4c5d6e7
Revises: e1f2a3b4c5d6
Create Date: 2026-11-29 08:00:00

"""
from alembic import op
import sqlalchemy as sa


revision = 'f2a3b4c5d6e7'
down_revision = 'e1f2a3b4c5d6'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('campaign', schema=None) as batch_op:
        batch_op.add_column(sa.Column('allocated_votes', sa.Integer(), nullable=True))


def downgrade():
    with op.batch_alter_table('campaign', schema=None) as batch_op:
        batch_op.drop_column('allocated_votes')
