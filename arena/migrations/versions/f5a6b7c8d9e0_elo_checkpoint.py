"""the live Elo's checkpoint: how far each criterion's rating rows have replayed the log

A vote no longer moves the rating rows; they hold the log replayed to a checkpoint, and a
reading replays the votes after it (arena.voting.live_elo). Until this release every vote
moved them in its own transaction, so they hold the whole log: each criterion's checkpoint
starts at the last vote.

Revision ID: f5a6b7c8d9e0
Revises: e4f5a6b7c8d9
Create Date: 2026-12-03 08:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = 'f5a6b7c8d9e0'
down_revision = 'e4f5a6b7c8d9'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'elo_checkpoint',
        sa.Column('criterion', sa.String(length=20), nullable=False),
        sa.Column('through_vote_id', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('criterion', name=op.f('pk_elo_checkpoint')))
    op.execute("INSERT INTO elo_checkpoint (criterion, through_vote_id) "
               "SELECT DISTINCT criterion, (SELECT coalesce(max(id), 0) FROM vote) "
               "FROM elo_rating")


def downgrade():
    # (the rows then lag the log by what the checkpoint had not taken: arena elo replay)
    op.drop_table('elo_checkpoint')
