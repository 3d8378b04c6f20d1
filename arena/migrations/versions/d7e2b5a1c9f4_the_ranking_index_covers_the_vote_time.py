"""the ranking index covers the vote's time: the public pages cut the votes at the hour

Revision ID: d7e2b5a1c9f4
Revises: c4f1d2a9e7b3
Create Date: 2026-11-28 04:40:00.000000

"""
from alembic import op


# revision identifiers, used by Alembic.
revision = 'd7e2b5a1c9f4'
down_revision = 'c4f1d2a9e7b3'
branch_labels = None
depends_on = None

BEFORE = ['criterion', 'is_validation', 'flags', 'winner_model_id', 'loser_model_id',
          'voter_id']


def upgrade():
    with op.batch_alter_table('vote', schema=None) as batch_op:
        batch_op.drop_index('ix_vote_ranking')
        batch_op.create_index('ix_vote_ranking', [*BEFORE, 'created_at'], unique=False)


def downgrade():
    with op.batch_alter_table('vote', schema=None) as batch_op:
        batch_op.drop_index('ix_vote_ranking')
        batch_op.create_index('ix_vote_ranking', BEFORE, unique=False)
