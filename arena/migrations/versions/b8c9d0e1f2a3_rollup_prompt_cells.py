"""rollups keep each prompt's counts: rankings clustered by voter and prompt at once

Revision ID: b8c9d0e1f2a3
Revises: a7b8c9d0e1f2
Create Date: 2026-11-28 21:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = 'b8c9d0e1f2a3'
down_revision = 'a7b8c9d0e1f2'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'rollup_prompt_cell',
        sa.Column('criterion', sa.String(length=20), nullable=False),
        sa.Column('prompt_id', sa.Integer(), nullable=False),
        sa.Column('winner_model_id', sa.Integer(), nullable=False),
        sa.Column('loser_model_id', sa.Integer(), nullable=False),
        sa.Column('votes', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('criterion', 'prompt_id', 'winner_model_id',
                                'loser_model_id'),
    )
    # Rollups built before this table existed lack the prompts': built again from the log
    for table in ('rollup_voter_cell', 'rollup_comparison', 'rollup_campaign_voter',
                  'ranking_rollup'):
        op.execute(f"DELETE FROM {table}")


def downgrade():
    op.drop_table('rollup_prompt_cell')
