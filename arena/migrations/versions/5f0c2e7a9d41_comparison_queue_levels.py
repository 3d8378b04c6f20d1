"""the comparison queue indexes a level that changes once per quarter of the target

Revision ID: 5f0c2e7a9d41
Revises: 9bca0601507b
Create Date: 2026-11-26 13:10:00.000000

``progress`` (votes * 1000 // target) moved with every counted vote and sat in
ix_comparison_queue, so PostgreSQL could never update a comparison in place on a vote.
``level`` (votes * 4 // target) takes its place in the index; matchmaking orders within a
level by the votes themselves.
"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '5f0c2e7a9d41'
down_revision = '9bca0601507b'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('comparison', schema=None) as batch_op:
        batch_op.add_column(sa.Column('level', sa.Integer(), server_default='0', nullable=False))
    op.execute("UPDATE comparison SET level = votes_count * 4 / target_votes")
    with op.batch_alter_table('comparison', schema=None) as batch_op:
        batch_op.drop_index('ix_comparison_queue')
        batch_op.create_index('ix_comparison_queue', ['pool', 'criterion', 'is_validation', 'level', 'shuffle_key'], unique=False)
        batch_op.drop_column('progress')


def downgrade():
    with op.batch_alter_table('comparison', schema=None) as batch_op:
        batch_op.add_column(sa.Column('progress', sa.Integer(), nullable=True))
    op.execute("UPDATE comparison SET progress = votes_count * 1000 / target_votes")
    with op.batch_alter_table('comparison', schema=None) as batch_op:
        batch_op.alter_column('progress', existing_type=sa.Integer(), nullable=False)
        batch_op.drop_index('ix_comparison_queue')
        batch_op.create_index('ix_comparison_queue', ['pool', 'criterion', 'is_validation', 'progress', 'shuffle_key'], unique=False)
        batch_op.drop_column('level')
