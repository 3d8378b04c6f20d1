"""campaign.allocation and campaign.early_stop: active allocation and early stopping

Revision ID: e1f2a3b4c5d6
Revises: d0e1f2a3b4c5
Create Date: 2026-11-29 05:00:00

"""
from alembic import op
import sqlalchemy as sa


revision = 'e1f2a3b4c5d6'
down_revision = 'd0e1f2a3b4c5'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('campaign', schema=None) as batch_op:
        batch_op.add_column(sa.Column('allocation', sa.String(length=10),
                                      server_default='balanced', nullable=False))
        batch_op.add_column(sa.Column('early_stop', sa.Boolean(), server_default=sa.false(),
                                      nullable=False))


def downgrade():
    with op.batch_alter_table('campaign', schema=None) as batch_op:
        batch_op.drop_column('early_stop')
        batch_op.drop_column('allocation')
