"""ranking rollups: per-criterion sums of the counted votes, and the index on vote stamps

Revision ID: f1c2d3e4a5b6
Revises: e3a8c6f1b2d7
Create Date: 2026-11-28 17:05:00

"""
import sqlalchemy as sa
from alembic import op

revision = 'f1c2d3e4a5b6'
down_revision = 'e3a8c6f1b2d7'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'ranking_rollup',
        sa.Column('criterion', sa.String(length=20), nullable=False),
        sa.Column('through', sa.DateTime(), nullable=False),
        sa.Column('last_vote_id', sa.Integer(), nullable=False),
        sa.Column('voters', sa.Integer(), nullable=False),
        sa.Column('moments', sa.LargeBinary(), nullable=True),
        sa.Column('refreshed_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('criterion'),
    )
    op.create_table(
        'rollup_voter_cell',
        sa.Column('criterion', sa.String(length=20), nullable=False),
        sa.Column('voter_id', sa.Integer(), nullable=False),
        sa.Column('winner_model_id', sa.Integer(), nullable=False),
        sa.Column('loser_model_id', sa.Integer(), nullable=False),
        sa.Column('votes', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['voter_id'], ['voter.id']),
        sa.PrimaryKeyConstraint('criterion', 'voter_id', 'winner_model_id', 'loser_model_id'),
    )
    with op.batch_alter_table('vote', schema=None) as batch_op:
        batch_op.create_index('ix_vote_criterion_created', ['criterion', 'created_at'],
                              unique=False)


def downgrade():
    with op.batch_alter_table('vote', schema=None) as batch_op:
        batch_op.drop_index('ix_vote_criterion_created')
    op.drop_table('rollup_voter_cell')
    op.drop_table('ranking_rollup')
