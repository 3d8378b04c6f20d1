"""rollups count each comparison's votes for its first image: agreement per criterion

Revision ID: d0e1f2a3b4c5
Revises: c9d0e1f2a3b4
Create Date: 2026-11-28 23:45:00

"""
import sqlalchemy as sa
from alembic import op

revision = 'd0e1f2a3b4c5'
down_revision = 'c9d0e1f2a3b4'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('rollup_comparison') as batch:
        batch.add_column(sa.Column('first_votes', sa.Integer(), nullable=False, server_default='0'))
    # Rollups built before this column lack it: built again from the log
    for table in ('rollup_voter_cell', 'rollup_prompt_cell', 'rollup_comparison',
                  'rollup_campaign_voter', 'ranking_rollup'):
        op.execute(f"DELETE FROM {table}")


def downgrade():
    with op.batch_alter_table('rollup_comparison') as batch:
        batch.drop_column('first_votes')
