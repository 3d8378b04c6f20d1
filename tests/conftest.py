"""Shared fixtures: an app on a fresh SQLite file per test (schema built by the migrations),
a small campaign factory, and the same app on a throwaway PostgreSQL database when one is
reachable (ARENA_TEST_POSTGRES_URL, default postgresql://postgres@127.0.0.1:5432/test)."""

from __future__ import annotations

import os
import re
import secrets

import pytest
from flask_migrate import upgrade

from arena import create_app
from arena.extensions import db

from .factories import make_campaign

PG_URL = os.environ.get("ARENA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def _config(tmp_path, **overrides):
    return {
        "TESTING": True,
        "SECRET_KEY": "test-secret",
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'arena.sqlite3'}",
        "IMAGE_DIR": str(tmp_path / "images"),
        "RATELIMIT_ENABLED": False,
        **overrides,
    }


def _build(config):
    app = create_app(config)
    with app.app_context():
        upgrade()
    return app


@pytest.fixture
def app(tmp_path):
    app = _build(_config(tmp_path))
    yield app
    with app.app_context():
        db.engine.dispose()


@pytest.fixture
def ctx(app):
    with app.app_context():
        yield app


@pytest.fixture
def campaign(ctx):
    return make_campaign()


@pytest.fixture
def web_campaign(app):
    """A campaign built in its own app context, so requests made by the test client run in
    theirs (as in production) instead of sharing one long-lived database session."""
    with app.app_context():
        data = make_campaign()
        return {"image_shas": [i.sha256 for i in data["images"].values()]}


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


def _pg_admin():
    import psycopg

    try:
        return psycopg.connect(PG_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        message = f"PostgreSQL not reachable at {PG_URL}: {exc}"
        if os.environ.get("ARENA_REQUIRE_POSTGRES"):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_app(request, tmp_path):
    """The app on each supported database in turn."""
    if request.param == "sqlite":
        yield request.getfixturevalue("app")
    else:
        yield request.getfixturevalue("pg_app")


@pytest.fixture
def pg_app(tmp_path):
    """The app on a fresh PostgreSQL database, dropped afterwards."""
    admin = _pg_admin()
    name = f"arena_test_{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    url = re.sub(r"/[^/]*$", f"/{name}", PG_URL)
    app = _build(_config(tmp_path, DATABASE_URL=url))
    try:
        yield app
    finally:
        with app.app_context():
            db.session.remove()
            db.engine.dispose()
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
