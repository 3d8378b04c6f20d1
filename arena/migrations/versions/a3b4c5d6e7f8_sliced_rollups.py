"""sliced rollups: the leaderboard's slices read summed counts, not the log

Revision ID: a3b4c5d6e7f8
Revises: f2a3b4c5d6e7
Create Date: 2026-11-29 11:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = 'a3b4c5d6e7f8'
down_revision = 'f2a3b4c5d6e7'
branch_labels = None
depends_on = None

def key():
    return [sa.Column('criterion', sa.String(length=20), nullable=False),
            sa.Column('field', sa.String(length=20), nullable=False),
            sa.Column('value', sa.String(length=120), nullable=False)]


def upgrade():
    op.create_table(
        'rollup_slice', *key(),
        sa.Column('voters', sa.Integer(), nullable=False),
        sa.Column('moments', sa.LargeBinary(), nullable=True),
        sa.PrimaryKeyConstraint('criterion', 'field', 'value'),
    )
    op.create_table(
        'rollup_slice_prompt', *key(),
        sa.Column('prompt_id', sa.Integer(), nullable=False),
        sa.Column('cells', sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint('criterion', 'field', 'value', 'prompt_id'),
    )
    op.create_table(
        'rollup_slice_member',
        sa.Column('criterion', sa.String(length=20), nullable=False),
        sa.Column('voter_id', sa.Integer(), nullable=False),
        sa.Column('age_group', sa.String(length=10), nullable=True),
        sa.Column('gender', sa.String(length=20), nullable=True),
        sa.Column('continent', sa.String(length=2), nullable=True),
        sa.Column('trusted', sa.String(length=3), nullable=True),
        sa.PrimaryKeyConstraint('criterion', 'voter_id'),
    )
    op.add_column('voter', sa.Column('profile_at', sa.DateTime(), nullable=True))
    op.create_index('ix_voter_profile_at', 'voter', ['profile_at'], unique=False)
    # Rollups built before the slices were: built again from the log, slices and all
    for table in ('rollup_voter_cell', 'rollup_prompt_cell', 'rollup_comparison',
                  'rollup_campaign_voter', 'ranking_rollup'):
        op.execute(f"DELETE FROM {table}")


def downgrade():
    op.drop_index('ix_voter_profile_at', table_name='voter')
    # (in place on SQLite too: a batch copy of the voter table breaks the keys that name it)
    op.execute("ALTER TABLE voter DROP COLUMN profile_at")
    op.drop_table('rollup_slice_member')
    op.drop_table('rollup_slice_prompt')
    op.drop_table('rollup_slice')
