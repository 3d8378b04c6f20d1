"""published_figures: what the public pages show, fixed for a period

Revision ID: c4f1d2a9e7b3
Revises: 7d3a91c2e5b8
Create Date: 2026-11-28 04:10:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'c4f1d2a9e7b3'
down_revision = '7d3a91c2e5b8'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'published_figures',
        sa.Column('kind', sa.String(length=20), nullable=False),
        sa.Column('key', sa.Integer(), nullable=False),
        sa.Column('period', sa.DateTime(), nullable=False),
        sa.Column('as_of', sa.DateTime(), nullable=False),
        sa.Column('payload', sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint('kind', 'key', 'period'),
    )


def downgrade():
    op.drop_table('published_figures')
