"""skipped tasks are indexed per comparison: a campaign's progress counts its skips from them

Revision ID: e3a8c6f1b2d7
Revises: d7e2b5a1c9f4
Create Date: 2026-11-28 06:10:00.000000

"""
import sqlalchemy as sa
from alembic import op


# revision identifiers, used by Alembic.
revision = 'e3a8c6f1b2d7'
down_revision = 'd7e2b5a1c9f4'
branch_labels = None
depends_on = None

SKIPPED = sa.text("skipped_at IS NOT NULL")


def upgrade():
    op.create_index('ix_task_skipped', 'task', ['comparison_id', 'skipped_at'], unique=False,
                    sqlite_where=SKIPPED, postgresql_where=SKIPPED)


def downgrade():
    op.drop_index('ix_task_skipped', table_name='task')
