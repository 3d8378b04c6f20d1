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


# (no batch table rebuild: on SQLite it drops and recreates comparison, which the foreign
# keys of task and vote refuse once any task exists; SQLite 3.35+ drops a column in place)
def upgrade():
    op.drop_index('ix_comparison_queue', table_name='comparison')
    op.add_column('comparison', sa.Column('level', sa.Integer(), server_default='0', nullable=False))
    op.execute("UPDATE comparison SET level = votes_count * 4 / target_votes")
    op.create_index('ix_comparison_queue', 'comparison',
                    ['pool', 'criterion', 'is_validation', 'level', 'shuffle_key'], unique=False)
    op.drop_column('comparison', 'progress')


def downgrade():
    op.drop_index('ix_comparison_queue', table_name='comparison')
    op.add_column('comparison', sa.Column('progress', sa.Integer(), server_default='0', nullable=False))
    op.execute("UPDATE comparison SET progress = votes_count * 1000 / target_votes")
    op.create_index('ix_comparison_queue', 'comparison',
                    ['pool', 'criterion', 'is_validation', 'progress', 'shuffle_key'], unique=False)
    op.drop_column('comparison', 'level')
