"""Rate limits counted once across processes without Redis: the default store is a SQLite
file in the instance folder (arena/infra/ratelimit_store.py). The audit got ~120 sessions
through a limit of 60 with two workers, each counting in its own memory."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import threading
import time

from arena.infra.ratelimit_store import SQLiteStorage, default_uri
from arena.infra.serving import default_threads, default_workers, usable_cpus
from tests.factories import make_campaign

from .servers import ARENA, ROOT, free_port, serve, server_env, stop, upgrade, wait_healthy


def test_two_servers_share_one_limit_in_the_instance_file(make_app, tmp_path):
    config = {"RATELIMIT_ENABLED": True, "RATE_LIMIT_SESSIONS": "3/minute"}
    first = make_app(**config)
    assert first.config["RATELIMIT_STORAGE_URI"].startswith("arena+sqlite:///")
    with first.app_context():
        make_campaign()
    second = make_app(**config)  # a second process on the same instance
    codes = [app.test_client().post("/api/v1/sessions").status_code
             for app in (first, second, first, second)]
    assert codes == [201, 201, 201, 429]
    path = tmp_path / "instance" / "ratelimits.sqlite3"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with sqlite3.connect(path) as db:
        keys = [k for (k,) in db.execute("SELECT key FROM counter")]
    assert keys and not any("127.0.0.1" in k for k in keys)


def test_concurrent_increments_are_all_counted_and_windows_expire(tmp_path):
    uri = default_uri(str(tmp_path))
    stores = [SQLiteStorage(uri) for _ in range(2)]  # as two processes would open it
    barrier = threading.Barrier(8)

    def hit(store):
        barrier.wait()
        for _ in range(50):
            store.incr("k", expiry=60)

    threads = [threading.Thread(target=hit, args=(stores[i % 2],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert stores[0].get("k") == stores[1].get("k") == 400
    assert stores[0].get_expiry("k") > time.time() + 50
    assert stores[0].incr("short", expiry=1) == 1 and stores[1].incr("short", expiry=1) == 2
    time.sleep(1.1)
    assert stores[1].get("short") == 0 and stores[0].incr("short", expiry=1) == 1
    stores[0].clear("k")
    assert stores[1].get("k") == 0 and stores[0].check()
    assert stores[0].reset() == 1


def test_serve_runs_a_worker_per_core_on_the_default_store_and_one_on_memory(tmp_path):
    """By default one process per CPU core (benchmarks/ingest.py: one worker left the second
    core idle) under gunicorn; limits kept in memory get one process, and asking for more is
    refused."""
    instance = upgrade(tmp_path / "instance")
    port = free_port()
    server = serve(instance, port, "--server", "gunicorn")
    try:
        assert wait_healthy(port, server)["status"] == 200
        time.sleep(0.5)  # (every worker has said it booted)
    finally:
        out = stop(server)
    cores = min(usable_cpus(), 8)
    assert f"with {cores} worker(s) x 2 threads" in out  # (SQLite's default)
    assert out.count("Booting worker") == cores
    env = {**server_env(instance), "ARENA_RATELIMIT_STORAGE_URI": "memory://"}
    port = free_port()
    alone = subprocess.Popen([ARENA, "serve", "--server", "gunicorn", "--port", str(port)],
                             env=env, cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert wait_healthy(port, alone)["status"] == 200
    finally:
        out = stop(alone)
    assert "with 1 worker(s)" in out and out.count("Booting worker") == 1
    refused = subprocess.run([ARENA, "serve", "--server", "gunicorn", "--port",
                              str(free_port()), "--workers", "2"],
                             env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0
    assert "each process counts on its own" in refused.stderr


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


def test_threads_opening_a_new_counter_file_at_once_all_get_it(tmp_path):
    """Turning a new file to WAL does not wait in SQLite's busy handler: eight threads
    opening one at the same moment used to meet "database is locked" (73 of 300 such
    trials before the retry)."""
    failures = []
    for trial in range(30):
        store = SQLiteStorage(default_uri(str(tmp_path / str(trial))))
        barrier = threading.Barrier(8)

        def open_and_count(store=store, barrier=barrier):
            barrier.wait()
            try:
                store.incr("k", expiry=60)
            except Exception as exc:  # (collected: a thread's exception fails nothing)
                failures.append(exc)

        threads = [threading.Thread(target=open_and_count) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert store.get("k") == 8 - len(failures)
    assert failures == []
