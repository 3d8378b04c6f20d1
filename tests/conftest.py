"""Shared fixtures: an app on its own SQLite file per test, copied from a template database
the migrations built once per run; the same on a throwaway PostgreSQL database (cloned from a
migrated template) when one is reachable (ARENA_TEST_POSTGRES_URL, default
postgresql://postgres@127.0.0.1:5432/test); a small campaign; Redis, and a real S3-compatible
server (moto's) for the image store in a bucket."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
from dataclasses import dataclass

import pytest

from arena import create_app
from arena.extensions import db
from arena.infra.instance import upgrade_schema

from .factories import make_campaign

PG_URL = os.environ.get("ARENA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("ARENA_TEST_REDIS_URL", "redis://127.0.0.1:6379")


def app_config(tmp_path, **overrides) -> dict:
    return {
        "TESTING": True,
        "SECRET_KEY": "test-secret",
        "PSEUDONYM_KEY": "test-pseudonyms",
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'arena.sqlite3'}",
        "IMAGE_DIR": str(tmp_path / "images"),
        "RATELIMIT_ENABLED": False,
        # tests vote in milliseconds; the timing floor is switched on where it is tested
        "MIN_VOTE_MS": {},
        # and with new voters: earned trust (gold on separate visits) is switched on where
        # it is tested
        "EARN_TRUST_GOLD": 0,
        # images are rendered when stored: small sizes keep the suite quick; the blinding
        # tests and the production tests use the shipped sizes
        "PRESENT_SIZES": (96, 192),
        "HYPE_PRESENT_SIZE": 192,
        "DEMO_IMAGE_SIZE": 256,
        # the job worker's own schedule of the period's tick: tests run the tick themselves
        "TICK_EVERY_MIN": 0,
        **overrides,
    }


def _migrate(config: dict) -> None:
    """Build a database through the migrations, then close every connection to it."""
    app = create_app(config)
    with app.app_context():
        upgrade_schema()
        if db.engine.dialect.name == "sqlite":
            with db.engine.connect() as connection:  # fold the WAL into the file
                connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        db.engine.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory):
    """A migrated SQLite file; each test gets a copy (one migration run per session)."""
    folder = tmp_path_factory.mktemp("template")
    _migrate(app_config(folder))
    return folder / "arena.sqlite3"


@pytest.fixture
def make_app(tmp_path, sqlite_template):
    """Build apps on this test's copy of the template database, with config overrides; a
    second app built in the same test shares the database (as a second server would)."""
    database = tmp_path / "arena.sqlite3"
    apps = []

    def build(**overrides):
        if not database.exists():
            shutil.copyfile(sqlite_template, database)
        app = create_app(app_config(tmp_path, **overrides))
        apps.append(app)
        return app

    yield build
    for app in apps:
        with app.app_context():
            db.session.remove()
            db.engine.dispose()


@pytest.fixture
def app(make_app):
    return make_app()


@contextlib.contextmanager
def job_worker_of(app):
    """The job worker ``arena serve`` runs beside ``app`` (huey's consumer, in this process),
    taking the jobs of its queue until the block ends."""
    worker = app.extensions["arena_jobs"].start_embedded()
    try:
        yield worker
    finally:
        worker.stop(graceful=True)


@pytest.fixture
def job_worker(app):
    with job_worker_of(app) as worker:
        yield worker


@pytest.fixture(scope="session")
def _seeds(tmp_path_factory):
    return {"root": tmp_path_factory.mktemp("seeds"), "built": {}}


@pytest.fixture
def seeded(app, tmp_path, _seeds):
    """``seeded(key, build)``: this test's database and images in the state ``build()``
    leaves them (run in an app context), built by the first test that asks for ``key`` and
    copied for the others, so a costly data set (hundreds of votes cast through the real
    services) is built once per run. Returns what ``build`` returned (plain data only)."""

    def use(key: str, build):
        store = _seeds["root"] / key
        with app.app_context():
            if key not in _seeds["built"]:
                _seeds["built"][key] = build()
                db.session.remove()
                with db.engine.connect() as connection:
                    connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
                db.engine.dispose()
                store.mkdir()
                shutil.copyfile(tmp_path / "arena.sqlite3", store / "arena.sqlite3")
                if (tmp_path / "images").exists():
                    shutil.copytree(tmp_path / "images", store / "images")
                return _seeds["built"][key]
            db.session.remove()
            db.engine.dispose()
        for suffix in ("-wal", "-shm"):
            (tmp_path / f"arena.sqlite3{suffix}").unlink(missing_ok=True)
        shutil.copyfile(store / "arena.sqlite3", tmp_path / "arena.sqlite3")
        if (store / "images").exists():
            shutil.copytree(store / "images", tmp_path / "images", dirs_exist_ok=True)
        return _seeds["built"][key]

    return use


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


def kill_backend(backend: int) -> None:
    """End the PostgreSQL backend ``backend`` as a server restart or an administrator's
    ``pg_terminate_backend`` would, and wait (up to 5 s) until it is gone."""
    admin = _pg_admin()
    try:
        admin.execute("SELECT pg_terminate_backend(%s, 5000)", (backend,))
    finally:
        admin.close()


def _pg_url(name: str) -> str:
    return re.sub(r"/[^/]*$", f"/{name}", PG_URL)


@pytest.fixture(scope="session")
def pg_template(tmp_path_factory):
    """A migrated PostgreSQL database that each test's database is cloned from."""
    admin = _pg_admin()
    name = f"arena_tmpl_{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        _migrate(app_config(tmp_path_factory.mktemp("pg"), DATABASE_URL=_pg_url(name)))
        yield name
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture
def pg_app(tmp_path, pg_template):
    """The app on a fresh PostgreSQL database (a clone of the template), dropped afterwards."""
    admin = _pg_admin()
    name = f"arena_test_{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{pg_template}"')
    app = create_app(app_config(tmp_path, DATABASE_URL=_pg_url(name)))
    try:
        yield app
    finally:
        with app.app_context():
            db.session.remove()
            db.engine.dispose()
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_app(request):
    """The app on each supported database in turn."""
    return request.getfixturevalue("app" if request.param == "sqlite" else "pg_app")


def connected_redis():
    """A client of the test Redis (ARENA_TEST_REDIS_URL) that answered a ping; skipped
    without one, unless ARENA_REQUIRE_REDIS."""
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.ConnectionError as exc:
        client.close()
        if os.environ.get("ARENA_REQUIRE_REDIS"):
            pytest.fail(f"Redis not reachable at {REDIS_URL}: {exc}")
        pytest.skip(f"Redis not reachable at {REDIS_URL}: {exc}")
    return client


@pytest.fixture
def redis_client():
    client = connected_redis()
    yield client
    client.close()


@pytest.fixture(scope="session")
def s3_server():
    """A real S3-compatible server (moto's) on a free port of 127.0.0.1 for the session; its
    URL. Skipped without moto, unless ARENA_REQUIRE_S3."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        if os.environ.get("ARENA_REQUIRE_S3"):
            pytest.fail(f"moto is not installed: {exc}")
        pytest.skip(f"moto is not installed: {exc}")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@dataclass
class Bucket:
    """A bucket of the test S3 server: ``url`` is the ``STORAGE_URL`` that stores under
    ``prefix`` in it."""

    name: str
    prefix: str
    client: object

    @property
    def url(self) -> str:
        return f"s3://{self.name}/{self.prefix}"

    def names(self) -> list[str]:
        """The keys under the bucket's prefix (nothing read: safe while another deletes)."""
        listed = self.client.list_objects_v2(Bucket=self.name, Prefix=f"{self.prefix}/")
        return [item["Key"] for item in listed.get("Contents", ())]

    def objects(self, prefix: str | None = None) -> dict[str, bytes]:
        """Every object under ``prefix`` (default the bucket's), by name after the prefix."""
        start = f"{self.prefix if prefix is None else prefix}/"
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.name,
                                                                      Prefix=start)
        return {item["Key"][len(start):]: self.client.get_object(
                    Bucket=self.name, Key=item["Key"])["Body"].read()
                for page in pages for item in page.get("Contents", ())}


def s3_env(endpoint: str) -> dict:
    """boto3's standard variables for the test S3 server at ``endpoint`` (fake credentials,
    us-east-1, none of this machine's AWS files)."""
    return {"AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture
def s3_bucket(s3_server, monkeypatch):
    """A new bucket on the test S3 server, with boto3's standard variables pointing at it
    (fake credentials, us-east-1) and none of this machine's AWS settings in the way."""
    import boto3

    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    for name, value in s3_env(s3_server).items():
        monkeypatch.setenv(name, value)
    client = boto3.client("s3")
    name = f"arena-{secrets.token_hex(6)}"
    client.create_bucket(Bucket=name)
    yield Bucket(name, "arena", client)
    client.close()
