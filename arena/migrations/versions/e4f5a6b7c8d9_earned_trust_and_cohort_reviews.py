"""earned trust (voter.earned_at, vote.public_at) and cohort reviews

Votes count in public figures from ``vote.public_at``: their stamp once their voter has
earned trust. Voters and votes from before this release counted already: they keep counting
(earned_at = created_at, public_at = created_at).

Revision ID: e4f5a6b7c8d9
Revises: d6e7f8a9b0c1
Create Date: 2026-12-01 23:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = 'e4f5a6b7c8d9'
down_revision = 'd6e7f8a9b0c1'
branch_labels = None
depends_on = None

RANKING = ['criterion', 'is_validation', 'flags', 'winner_model_id', 'loser_model_id',
           'voter_id']


def upgrade():
    op.create_table(
        'cohort_review',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('criterion', sa.String(length=20), nullable=False),
        sa.Column('kind', sa.String(length=20), nullable=False),
        sa.Column('since', sa.DateTime(), nullable=False),
        sa.Column('until', sa.DateTime(), nullable=False),
        sa.Column('found_at', sa.DateTime(), nullable=False),
        sa.Column('reason', sa.String(length=300), nullable=False),
        sa.Column('evidence', sa.Text(), nullable=False),
        sa.Column('voters', sa.Integer(), nullable=False),
        sa.Column('votes', sa.Integer(), nullable=False),
        sa.Column('decided_at', sa.DateTime(), nullable=True),
        sa.Column('decision', sa.String(length=20), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_cohort_review')))
    op.add_column('voter', sa.Column('earned_at', sa.DateTime(), nullable=True))
    op.add_column('voter', sa.Column('first_gold_at', sa.DateTime(), nullable=True))
    op.add_column('voter', sa.Column('review_id', sa.Integer(), nullable=True))
    op.create_index(op.f('ix_voter_review_id'), 'voter', ['review_id'], unique=False)
    op.add_column('vote', sa.Column('public_at', sa.DateTime(), nullable=True))
    op.execute("UPDATE voter SET earned_at = created_at")
    op.execute("UPDATE vote SET public_at = created_at")
    op.drop_index('ix_vote_ranking', table_name='vote')
    op.create_index('ix_vote_ranking', 'vote', [*RANKING, 'public_at'], unique=False)
    op.create_index('ix_vote_criterion_public', 'vote', ['criterion', 'public_at'],
                    unique=False)


def downgrade():
    op.drop_index('ix_vote_criterion_public', table_name='vote')
    op.drop_index('ix_vote_ranking', table_name='vote')
    op.create_index('ix_vote_ranking', 'vote', [*RANKING, 'created_at'], unique=False)
    # (in place on SQLite too: a batch copy of these tables breaks the keys that name them)
    op.execute("ALTER TABLE vote DROP COLUMN public_at")
    op.drop_index(op.f('ix_voter_review_id'), table_name='voter')
    for column in ('review_id', 'first_gold_at', 'earned_at'):
        op.execute(f"ALTER TABLE voter DROP COLUMN {column}")
    op.drop_table('cohort_review')
