"""rollups for the public counts: per comparison, and per campaign voter

Revision ID: a7b8c9d0e1f2
Revises: f1c2d3e4a5b6
Create Date: 2026-11-28 18:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = 'a7b8c9d0e1f2'
down_revision = 'f1c2d3e4a5b6'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'rollup_comparison',
        sa.Column('criterion', sa.String(length=20), nullable=False),
        sa.Column('comparison_id', sa.Integer(), nullable=False),
        sa.Column('votes', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['comparison_id'], ['comparison.id']),
        sa.PrimaryKeyConstraint('criterion', 'comparison_id'),
    )
    op.create_table(
        'rollup_campaign_voter',
        sa.Column('criterion', sa.String(length=20), nullable=False),
        sa.Column('campaign_id', sa.Integer(), nullable=False),
        sa.Column('voter_id', sa.Integer(), nullable=False),
        sa.Column('votes', sa.Integer(), nullable=False),
        sa.Column('gold', sa.Integer(), nullable=False),
        sa.Column('failed', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['campaign_id'], ['campaign.id']),
        sa.ForeignKeyConstraint(['voter_id'], ['voter.id']),
        sa.PrimaryKeyConstraint('criterion', 'campaign_id', 'voter_id'),
    )
    # Rollups built before these tables existed lack their counts: built again from the log
    op.execute("DELETE FROM rollup_voter_cell")
    op.execute("DELETE FROM ranking_rollup")


def downgrade():
    op.drop_table('rollup_campaign_voter')
    op.drop_table('rollup_comparison')
