"""Rate limits across processes: the default store (``memory://``) counts in each process
alone, so several processes count each limit once only through Redis
(``RATELIMIT_STORAGE_URI=redis://...``); ``arena serve`` runs one process unless the limits
are shared."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time

import pytest

from arena.infra.serving import default_threads, default_workers, usable_cpus
from tests.conftest import REDIS_URL, app_config
from tests.factories import make_campaign
from tests.timing import seconds

from .servers import ARENA, ROOT, free_port, serve, server_env, stop, upgrade, wait_healthy

# one app server process: builds the app on the shared database, asks for sessions
PROCESS = """
import json, sys
from arena import create_app
config, requests = json.loads(sys.argv[1]), int(sys.argv[2])
client = create_app(config).test_client()
print(json.dumps([client.post("/api/v1/sessions").status_code for _ in range(requests)]))
"""


@pytest.fixture
def redis_url(redis_client):
    """The test Redis's URL and a key prefix of this test's own, its keys deleted after."""
    prefix = f"arena-test-{secrets.token_hex(4)}"
    yield REDIS_URL, prefix
    keys = list(redis_client.scan_iter(f"*{prefix}*"))
    if keys:
        redis_client.delete(*keys)


def _in_processes(tmp_path, requests: list[int], **settings) -> list[list[int]]:
    """Status codes of ``/api/v1/sessions`` asked ``requests[i]`` times by process ``i``,
    one process after the other, each its own app on the same database."""
    config = app_config(tmp_path, RATELIMIT_ENABLED=True, RATE_LIMIT_SESSIONS="3/minute",
                        **settings)
    return [json.loads(subprocess.run(
        [sys.executable, "-c", PROCESS, json.dumps(config), str(n)], cwd=ROOT, check=True,
        capture_output=True, text=True, timeout=seconds(120)).stdout.splitlines()[-1])
        for n in requests]


def test_two_processes_share_one_limit_through_redis(make_app, tmp_path, redis_url):
    url, prefix = redis_url
    with make_app().app_context():
        make_campaign()
    shared = _in_processes(tmp_path, [2, 2], RATELIMIT_STORAGE_URI=url,
                           RATELIMIT_KEY_PREFIX=prefix)
    assert shared == [[201, 201], [201, 429]]
    # in memory each process counts alone: the limit is passed once per process
    alone = _in_processes(tmp_path, [2, 2])
    assert alone == [[201, 201], [201, 201]]


def test_gunicorn_runs_one_process_on_memory_and_a_worker_per_core_on_redis(tmp_path,
                                                                          redis_url):
    """Limits kept in memory (the default) get one process, and asking for more is refused;
    on Redis, one process per CPU core (one worker left the second core idle)."""
    instance = upgrade(tmp_path / "instance")
    port = free_port()
    alone = serve(instance, port, "--server", "gunicorn")
    try:
        assert wait_healthy(port, alone)["status"] == 200
    finally:
        out = stop(alone)
    assert "with 1 worker(s)" in out and out.count("Booting worker") == 1
    refused = subprocess.run([ARENA, "serve", "--server", "gunicorn", "--port",
                              str(free_port()), "--workers", "2"],
                             env=server_env(instance), cwd=ROOT, capture_output=True,
                             text=True, timeout=seconds(60))
    assert refused.returncode != 0
    assert "each process counts on its own" in refused.stderr
    url, prefix = redis_url
    env = {**server_env(instance), "ARENA_RATELIMIT_STORAGE_URI": url,
           "ARENA_RATELIMIT_KEY_PREFIX": prefix}
    port = free_port()
    server = subprocess.Popen([ARENA, "serve", "--server", "gunicorn", "--port", str(port)],
                              env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert wait_healthy(port, server)["status"] == 200
        time.sleep(0.5)  # (every worker has said it booted)
    finally:
        out = stop(server)
    cores = min(usable_cpus(), 8)
    assert f"with {cores} worker(s) x 2 threads" in out  # (SQLite's default)
    assert out.count("Booting worker") == cores


def test_the_default_worker_count_follows_the_cores_and_the_limit_store():
    assert default_workers(True, cpus=8) == 8
    assert default_workers(True, cpus=64) == 8  # (within PostgreSQL's default connections)
    assert default_workers(True, cpus=None) == min(usable_cpus(), 8)
    assert 1 <= usable_cpus() <= (os.cpu_count() or 1)
    assert default_workers(False, cpus=8) == 1


def test_the_default_thread_count_follows_the_database():
    """SQLite: two threads took as many votes as four with a third of the p99; PostgreSQL
    gains from more threads (benchmarks/ingest.py, arena.infra.serving.default_threads)."""
    assert default_threads("sqlite:////srv/arena/instance/arena.sqlite3") == 2
    assert default_threads("postgresql+psycopg://arena@db/arena") == 4
