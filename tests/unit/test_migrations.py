from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from arena.extensions import db


def test_migrations_build_exactly_the_models_schema(any_app):
    with any_app.app_context(), db.engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), db.metadata)
    assert diff == []


def test_sqlite_runs_in_wal_mode_with_foreign_keys(ctx):
    with db.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
