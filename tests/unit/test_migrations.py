import numpy as np
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import select, text, update

from arena.extensions import db


def test_migrations_build_exactly_the_models_schema(any_app):
    with any_app.app_context(), db.engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), db.metadata)
    assert diff == []


def test_sqlite_runs_in_wal_mode_with_foreign_keys(ctx):
    with db.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_the_queue_level_migration_carries_the_votes_both_ways(any_app):
    """``progress`` (votes * 1000 // target) gave way to ``level`` (votes * 4 // target):
    a database with votes and tasks goes down and back up with each comparison's place in
    the queue recomputed from its votes, and every task kept."""
    from flask_migrate import downgrade

    from arena.infra.instance import bind_migrations, upgrade_schema
    from arena.models import Comparison
    from arena.voting import matchmaking
    from tests.factories import make_campaign, new_voter

    counts = {}
    with any_app.app_context():
        make_campaign(n_prompts=1, n_models=2, images_per_model=2, gold=False, image_size=8)
        # tasks point at comparisons (a table rebuilt by the migration would break them)
        matchmaking.start_session(new_voter(), np.random.default_rng(0), "preference")
        ids = db.session.scalars(select(Comparison.id).order_by(Comparison.id)).all()
        for n, comparison_id in enumerate(ids):
            counts[comparison_id] = n * 3
            db.session.execute(update(Comparison).where(Comparison.id == comparison_id)
                               .values(votes_count=n * 3))
        db.session.commit()
        db.session.remove()
        bind_migrations(any_app)
        downgrade(revision="9bca0601507b")
        progress = dict(db.session.execute(text("SELECT id, progress FROM comparison")).all())
        db.session.remove()
        assert progress == {i: n * 1000 // 26 for i, n in counts.items()}
        upgrade_schema()
        level = dict(db.session.execute(text("SELECT id, level FROM comparison")).all())
        assert level == {i: n * 4 // 26 for i, n in counts.items()}
        assert max(level.values()) >= 3
        assert db.session.scalar(text("SELECT count(*) FROM task")) == 3
