"""Two servers of a release running `arena db upgrade` at once on a fresh PostgreSQL
database: one migrates, the other waits on the advisory lock, then finds the schema current."""

from __future__ import annotations

import secrets
import subprocess

import psycopg
import pytest

from tests.conftest import _pg_admin, _pg_url
from tests.timing import seconds
from tests.web.servers import ARENA, ROOT, server_env

pytestmark = pytest.mark.postgres


@pytest.fixture
def fresh_database():
    admin = _pg_admin()
    name = f"arena_upgrade_{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _pg_url(name)
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def test_two_upgrades_at_once_both_succeed(fresh_database, tmp_path):
    upgrades = []
    for k in range(2):
        env = server_env(tmp_path / f"server-{k}") | {"ARENA_DATABASE_URL": fresh_database}
        upgrades.append(subprocess.Popen([ARENA, "db", "upgrade"], env=env, cwd=ROOT,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         text=True))
    outputs = [process.communicate(timeout=seconds(180))[0] for process in upgrades]
    assert [process.returncode for process in upgrades] == [0, 0], outputs
    with psycopg.connect(fresh_database, autocommit=True) as connection:
        versions = connection.execute("SELECT version_num FROM alembic_version").fetchall()
    assert len(versions) == 1, versions
    # each ran the whole chain or nothing: only one says it ran the first migration
    assert sum("Running upgrade  -> " in out for out in outputs) == 1, outputs
