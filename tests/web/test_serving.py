"""The server as deployed (``arena serve``), attacked and crashed the way the operations
audit did: half-sent requests, trickled bodies and idle connections must not hold its
threads, and a master killed with kill -9 must not keep the port from the README's
restart command. A release through `arena restart` (the README's way) must refuse no
voter's request, whatever goes wrong during it."""

from __future__ import annotations

import gc
import http.client
import json
import os
import signal
import socket
import sqlite3
import subprocess
import threading
import time
import urllib.error
import urllib.request
import weakref
from pathlib import Path
from types import SimpleNamespace

import pytest

from arena.infra import restart
from arena.infra.worker import BUFFERED_BODY, READ_TIMEOUT, BufferingWorker, request_is_complete

from .servers import ARENA, ROOT, free_port, serve, server_env, stop, wait_healthy

HEAD = b"POST /api/v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


class _Cycle:
    """An object that can refer to itself, and be referred to weakly."""


def test_a_worker_keeps_its_built_app_out_of_the_collectors_way(app):
    """Every full collection walked all the objects a worker built its app with (50 ms with
    the GIL held, about once per 1,000 requests in-process). A worker freezes them once its
    app is loaded, so the collector tracks only what came after; garbage made while loading
    is collected first, not frozen."""
    gc.unfreeze()
    gc.collect()
    tracked = len(gc.get_objects())
    kept, dropped = [], []

    def load():  # (gunicorn's loader, handing over the app; what loading makes, kept or not)
        kept.append([app])
        cycle = _Cycle()
        cycle.me = cycle
        dropped.append(weakref.ref(cycle))
        return app

    worker = BufferingWorker.__new__(BufferingWorker)
    worker.app = SimpleNamespace(wsgi=load)
    try:
        worker.load_wsgi()
        assert worker.wsgi is app
        assert dropped[0]() is None  # the cycle left over from loading: collected
        assert not any(o is kept[0] for o in gc.get_objects())  # what loading kept: frozen
        assert gc.get_freeze_count() > 0.9 * tracked
        assert len(gc.get_objects()) < 0.1 * tracked
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("body", [b"", b"{}", b'{"criterion": "coherence"}'])
def test_a_request_is_complete_only_with_its_head_and_small_body(body):
    whole = HEAD + b"Content-Length: %d\r\n\r\n" % len(body) + body
    for cut in range(len(whole)):
        assert not request_is_complete(whole[:cut]), whole[:cut]
    assert request_is_complete(whole)
    assert request_is_complete(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    # a large or chunked body is streamed by the thread; a huge head goes to the parser
    assert request_is_complete(HEAD + b"content-length: %d\r\n\r\n" % (BUFFERED_BODY + 1))
    assert request_is_complete(HEAD + b"Transfer-Encoding: chunked\r\n\r\n")
    assert request_is_complete(b"GET /" + b"a" * 70_000)


def _get(port: int, path: str, timeout: float = 5.0) -> tuple[int, float]:
    started = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as reply:
        return reply.status, time.monotonic() - started


def _post_json(port: int, path: str, body: dict, token: str | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                     data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(request, timeout=10) as reply:
        return reply.status, json.loads(reply.read())


@pytest.fixture
def demo_instance(tmp_path) -> Path:
    instance = tmp_path / "instance"
    subprocess.run([ARENA, "demo", "--prompts", "1", "--images", "1", "--votes", "0"],
                   env=server_env(instance), cwd=ROOT, check=True, capture_output=True,
                   timeout=120)
    return instance


def test_slow_and_idle_clients_do_not_hold_the_threads(demo_instance):
    """Before: four connections that each sent half a request head stopped the service
    (its four threads waited on them). Now 64 such clients, 16 trickling a body, 16 idle
    ones and a kept-alive connection halfway through its second request cost no thread:
    health answers at once and a voter votes; the half-sent ones are cut off after
    READ_TIMEOUT."""
    port = free_port()
    server = serve(demo_instance, port)
    clients = []
    try:
        wait_healthy(port, server)
        for _ in range(64):
            clients.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            clients[-1].sendall(b"GET /api/v1/health/live HTTP/1.1\r\nHost: x\r\n")
        for _ in range(16):
            clients.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            clients[-1].sendall(HEAD + b"Content-Length: 100\r\n\r\n{")
        for _ in range(16):
            clients.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        kept = socket.create_connection(("127.0.0.1", port), timeout=5)
        kept.sendall(b"GET /api/v1/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        assert kept.recv(4096).startswith(b"HTTP/1.1 200")
        kept.sendall(b"GET /api/v1/health/live HTTP/1.1\r\nHo")
        clients.append(kept)
        sent_at = time.monotonic()
        time.sleep(0.5)

        for _ in range(3):
            status, took = _get(port, "/api/v1/health/live")
            assert status == 200 and took < 2.0, took
        status, session = _post_json(port, "/api/v1/sessions", {"criterion": "preference"})
        assert status == 201 and session["tasks"]
        task = session["tasks"][0]["task_id"]
        status, vote = _post_json(port, f"/api/v1/tasks/{task}/vote", {"choice": "left"},
                                  session["voter_token"])
        assert status == 201 and vote["accepted"] is True
        # a body larger than the worker buffers is streamed to a thread, and answered
        big = json.dumps({"criterion": "x" * (BUFFERED_BODY * 2)}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/sessions",
                                         data=big,
                                         headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 400
        refused.value.close()

        # the half-sent requests are closed by the server, not held for ever
        first = clients[0]
        first.settimeout(READ_TIMEOUT + 10)
        assert first.recv(1) == b""
        assert READ_TIMEOUT - 1 <= time.monotonic() - sent_at <= READ_TIMEOUT + 5
    finally:
        for client in clients:
            client.close()
        log = stop(server)
    assert "Traceback" not in log, log


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except (ProcessLookupError, FileNotFoundError):
        return True


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_killed_master_can_be_restarted_with_the_readme_command(tmp_path):
    """Before: after kill -9 of the master its workers served on for 30-45 s and held the
    port, so `arena serve` failed with "Connection in use". Now they stop with it and the
    same command serves again at once; a clean stop removes the pid file."""
    instance = tmp_path / "instance"
    port = free_port()
    first = serve(instance, port)
    wait_healthy(port, first)
    pid_file = instance / "arena.pid"
    master = int(pid_file.read_text())
    assert master == first.pid
    workers = _children(master)
    assert workers
    os.kill(master, signal.SIGKILL)
    first.wait(timeout=10)
    first.stdout.close()

    second = serve(instance, port)
    try:
        # (an old worker may still answer a request that reached it in the instant its
        # master died, before the new master has written its pid: wait for that too)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
                pid_file.exists() and pid_file.read_text().strip() == str(second.pid)):
            time.sleep(0.1)
        assert int(pid_file.read_text()) == second.pid
        assert wait_healthy(port, second, timeout=30)["status"] == 200
        deadline = time.monotonic() + 5
        while not all(_gone(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(_gone(w) for w in workers)
    finally:
        log = stop(second)
    assert "Connection in use" not in log
    assert not pid_file.exists()



def test_a_starting_server_queues_requests_instead_of_refusing_them(demo_instance):
    """Before: `arena serve` built the app (0.6 s of the 0.9 s until it listened) before it
    bound its port, so every request meanwhile was refused: after a crash, a restart under
    load refused 48 (benchmarks/faults.py). Now the port is bound first. Here the app's
    build is made slow (its config.py sleeps 3 s): a connection made within the first
    seconds is accepted, and its request answered once the workers are up."""
    config = demo_instance / "config.py"
    config.write_text("import time\ntime.sleep(3)\n" + config.read_text())
    port = free_port()
    started = time.monotonic()
    server = serve(demo_instance, port)
    try:
        while True:
            assert server.poll() is None, server.stdout.read()
            try:
                connection = socket.create_connection(("127.0.0.1", port), timeout=30)
                break
            except ConnectionRefusedError:
                assert time.monotonic() - started < 2.5, "the port was not bound first"
                time.sleep(0.02)
        listening = time.monotonic() - started
        with connection:
            connection.sendall(b"GET /api/v1/health/live HTTP/1.1\r\nHost: x\r\n"
                               b"Connection: close\r\n\r\n")
            answer = connection.recv(4096)
        answered = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 200"), answer
        assert listening < 2.5 and answered > 3, (listening, answered)
    finally:
        stop(server)
    # a second server on a port in use says so at once, without building the app
    taken = socket.create_server(("127.0.0.1", 0))
    with taken:
        started = time.monotonic()
        refused = subprocess.run([ARENA, "serve", "--port", str(taken.getsockname()[1])],
                                 env=server_env(demo_instance), cwd=ROOT, capture_output=True,
                                 text=True, timeout=60)
    assert refused.returncode == 1 and "Address already in use" in refused.stderr, refused
    assert time.monotonic() - started < 2.5  # (the app, 3 s to build, was not built)

class Voters:
    """Phone voters through the JSON API, one thread each, voting without a pause until
    stopped: what each acknowledged and every request that failed (refused, reset, 5xx)."""

    def __init__(self, port: int, count: int = 2):
        self.port, self.running = port, True
        self.acknowledged: list[int] = []
        self.failures: list[str] = []
        self.threads = [threading.Thread(target=self._vote, daemon=True) for _ in range(count)]

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.running = False
        for thread in self.threads:
            thread.join(timeout=30)

    def _vote(self):
        token = None
        while self.running:
            try:
                status, session = _post_json(self.port, "/api/v1/sessions",
                                             {"criterion": "preference"}, token)
                token = token or session["voter_token"]  # (sent to a new voter only)
                for task in session["tasks"]:
                    status, vote = _post_json(self.port, f"/api/v1/tasks/{task['task_id']}"
                                              "/vote", {"choice": "left"}, token)
                    assert status == 201 and vote["accepted"], (status, vote)
                    self.acknowledged.append(task["task_id"])
            except urllib.error.HTTPError as refused:
                if refused.code != 409:  # (this voter has seen every pair: a new one)
                    self.failures.append(f"{refused.code} {refused.read()[:200]!r}")
                refused.close()
                token = None
            except (OSError, AssertionError) as failed:
                self.failures.append(repr(failed))
                time.sleep(0.05)


def _redis_url() -> str:
    """The test Redis (ARENA_TEST_REDIS_URL), else the test is skipped."""
    import redis

    url = os.environ.get("ARENA_TEST_REDIS_URL", "redis://127.0.0.1:6379")
    client = redis.Redis.from_url(url, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.ConnectionError as exc:
        pytest.skip(f"Redis not reachable at {url}: {exc}")
    finally:
        client.close()
    return url


def test_a_release_replaces_the_server_while_voters_vote(demo_instance, tmp_path):
    """Before: a new version meant stopping the server and starting it again, and for the
    3.0-3.5 s the new one took to import the app and bind the port every voter's request
    was refused (benchmarks/faults.py). Now `arena restart` starts the new server beside
    the old one on the same port and stops the old one once every new worker is ready:
    voters voting throughout see no failure, every acknowledged vote is stored, and new
    processes serve. A release that cannot start is caught before the old server is
    touched: it serves on, and the command says why."""
    port, log = free_port(), tmp_path / "server.log"
    # (limits on, as in production, but above what these voters from one address reach)
    env = server_env(demo_instance) | {f"ARENA_RATE_LIMIT_{name}": "1000000/hour" for name in (
        "SESSIONS", "VOTES", "NETWORK_SESSIONS", "NETWORK_VOTES", "NEW_VOTERS")}
    config = demo_instance / "config.py"  # (two processes: their limits shared in Redis)
    config.write_text(config.read_text() + f'RATELIMIT_STORAGE_URI = "{_redis_url()}"\n'
                      f'RATELIMIT_KEY_PREFIX = "arena-test-{os.getpid()}-{port}"\n')
    gone = subprocess.Popen(["true"])
    gone.wait()  # (a master killed long ago left its ready file: removed at the next start)
    stale = demo_instance / f"arena.pid.ready-{gone.pid}"
    stale.write_text(f"{gone.pid + 1} 2\n")
    with log.open("w") as out:  # (a file: the new master writes to it after the old exits)
        first = subprocess.Popen([ARENA, "serve", "--port", str(port), "--workers", "2"],
                                 env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    pid_file = demo_instance / "arena.pid"
    new_master = None
    try:
        wait_healthy(port, first)
        assert not stale.exists()
        old_workers = _children(first.pid)
        with Voters(port) as voters:
            time.sleep(1.0)
            # releases that cannot start: settings `arena serve` refuses, and settings
            # that break the app itself (which `arena restart` must not need to say so)
            settings = config.read_text()
            for bad in ('RATELIMIT_STORAGE_URI = "memory://"\n',
                        'raise RuntimeError("a broken release")\n'):
                config.write_text(settings + bad)
                broken = subprocess.run([ARENA, "restart"], env=env, cwd=ROOT, text=True,
                                        capture_output=True, timeout=150)
                config.write_text(settings)
                assert broken.returncode == 6, broken
                assert "serves on" in broken.stderr, broken.stderr
                assert int(pid_file.read_text()) == first.pid and first.poll() is None
            before = len(voters.acknowledged)

            done = subprocess.run([ARENA, "restart"], env=env, cwd=ROOT, text=True,
                                  capture_output=True, timeout=150)
            assert done.returncode == 0, done
            first.wait(timeout=60)  # the old master stopped by itself
            new_master = int(pid_file.read_text())
            assert new_master != first.pid and f"pid {new_master}" in done.stdout
            during = len(voters.acknowledged) - before
            time.sleep(1.0)
        assert voters.failures == [], voters.failures
        assert during > 0 and len(voters.acknowledged) > before + during  # (and after)
        assert all(_gone(w) for w in old_workers)
        new_workers = _children(new_master)
        assert len(new_workers) == 2 and not set(new_workers) & set(old_workers)
        with sqlite3.connect(demo_instance / "arena.sqlite3") as database:
            stored = {row[0] for row in database.execute("SELECT task_id FROM vote")}
        assert set(voters.acknowledged) <= stored
        assert len(stored) - len(voters.acknowledged) <= 2  # (in flight as voters stopped)
    finally:
        if first.poll() is None:
            first.terminate()
            first.wait(timeout=40)
        if new_master is not None:
            os.kill(new_master, signal.SIGTERM)
            deadline = time.monotonic() + 40
            while not _gone(new_master) and time.monotonic() < deadline:
                time.sleep(0.1)
    text = log.read_text()  # (the one traceback: the broken release's, as it failed)
    assert text.count("Traceback") == text.count("RuntimeError: a broken release") == 1, \
        text[-3000:]
    assert not pid_file.exists() and not [
        p for p in demo_instance.glob("arena.pid.*") if p.name != "arena.pid.lock"], \
        list(demo_instance.iterdir())


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_kept_alive_request_is_answered_while_the_worker_stops(demo_instance):
    """Before: a worker that was stopping (a release, a restart) closed every connection
    whose request it had not read yet, including the next request of a kept-alive
    connection, already sent: the client saw "connection reset" (the audit of `arena
    restart`: 16 in 9 releases). Now it is read and answered, with the connection closed
    after it."""
    port = free_port()
    server = serve(demo_instance, port, "--workers", "1")
    try:
        wait_healthy(port, server)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/api/v1/health/live")
        first = connection.getresponse()
        assert first.status == 200 and first.read()
        (worker,) = _children(server.pid)
        os.kill(worker, signal.SIGTERM)  # (the master starts another)
        time.sleep(0.8)  # the worker has left its loop and lingers (2 s) on its connections
        connection.request("GET", "/api/v1/health/live")
        second = connection.getresponse()
        assert second.status == 200 and second.read()
        assert second.getheader("Connection", "").lower() == "close"
        connection.close()
    finally:
        log = stop(server)
    assert "Traceback" not in log, log


def test_restart_signals_no_process_that_is_not_an_arena_server(tmp_path):
    """Before: a stale pid file (after kill -9, a reboot, a container's restart) naming a
    process that had taken that pid got it SIGUSR2, whose default action ended it. Now a
    process without an Arena server's ready file beside the pid file is not signalled."""
    bystander = subprocess.Popen(["sleep", "60"])
    pid_file = tmp_path / "arena.pid"
    try:
        pid_file.write_text(f"{bystander.pid}\n")
        refused = subprocess.run([ARENA, "restart", "--pid", str(pid_file)], cwd=ROOT,
                                 env=server_env(tmp_path), text=True, capture_output=True,
                                 timeout=60)
        assert refused.returncode == 3, refused
        assert "nothing was signalled" in refused.stderr, refused.stderr
        time.sleep(0.5)
        assert bystander.poll() is None
        # a server killed (kill -9, a reboot) leaves its ready file: a process that later
        # took its pid is still not signalled (it does not run `arena serve`)
        (tmp_path / f"arena.pid.ready-{bystander.pid}").write_text(f"{bystander.pid + 1} 1\n")
        refused = subprocess.run([ARENA, "restart", "--pid", str(pid_file)], cwd=ROOT,
                                 env=server_env(tmp_path), text=True, capture_output=True,
                                 timeout=60)
        assert refused.returncode == 3 and "nothing was signalled" in refused.stderr, refused
        time.sleep(0.5)
        assert bystander.poll() is None
        pid_file.unlink()
        missing = subprocess.run([ARENA, "restart", "--pid", str(pid_file)], cwd=ROOT,
                                 env=server_env(tmp_path), text=True, capture_output=True,
                                 timeout=60)
        assert missing.returncode == 3 and "no server is running" in missing.stderr, missing
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_restart_cut_short_leaves_one_server(demo_instance, tmp_path):
    """The audit of `arena restart`: interrupted (Ctrl+C) while the new server started, it
    left both serving, old and new code side by side, and refused every later restart;
    with the old master killed midway, the new one stopped too (it took its dead parent's
    pid, still in the pid file, for a running server) and nothing served. Now an
    interrupted restart stops the new server and the old one serves on, ready for the next;
    and a new server whose old one died midway takes over."""
    port, log = free_port(), tmp_path / "server.log"
    env = server_env(demo_instance)
    with log.open("w") as out:
        first = subprocess.Popen([ARENA, "serve", "--port", str(port), "--workers", "1"],
                                 env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    pid_file, next_file = demo_instance / "arena.pid", demo_instance / "arena.pid.next"
    survivor = None

    def restart_until_the_new_server_starts() -> tuple[subprocess.Popen, int]:
        command = subprocess.Popen([ARENA, "restart"], env=env, cwd=ROOT, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not (next_file.exists() and next_file.read_text().strip()):
            assert command.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        return command, int(next_file.read_text())

    try:
        wait_healthy(port, first)
        command, new = restart_until_the_new_server_starts()
        command.send_signal(signal.SIGINT)
        out, _ = command.communicate(timeout=60)
        assert command.returncode == 6 and "serves on" in out, out
        deadline = time.monotonic() + 30
        while not _gone(new) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(new) and int(pid_file.read_text()) == first.pid
        assert _get(port, "/api/v1/health/live")[0] == 200

        # (the service in this process this time: what the command runs)
        done = {}
        replacing = threading.Thread(target=lambda: done.update(
            replaced=restart.replace(pid_file)))
        replacing.start()
        deadline = time.monotonic() + 60
        while not (next_file.exists() and next_file.read_text().strip()):
            assert replacing.is_alive() and time.monotonic() < deadline
            time.sleep(0.02)
        new = int(next_file.read_text())
        os.kill(first.pid, signal.SIGKILL)  # (left unreaped: a zombie, as under a slow init)
        replacing.join(timeout=150)
        assert done["replaced"].new_pid == new and done["replaced"].old_pid == first.pid
        survivor = new
        assert int(pid_file.read_text()) == new and not _gone(new)
        assert _get(port, "/api/v1/health/live")[0] == 200

        # the terminal went away (its output cannot be written): the hand-over completes
        command = subprocess.Popen([ARENA, "restart"], env=env, cwd=ROOT,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        command.stdout.close()
        command.wait(timeout=150)
        deadline = time.monotonic() + 30
        while int(pid_file.read_text()) == survivor and time.monotonic() < deadline:
            time.sleep(0.1)
        previous, survivor = survivor, int(pid_file.read_text())
        assert survivor != previous and not _gone(survivor)
        assert _get(port, "/api/v1/health/live")[0] == 200
    finally:
        first.kill()
        first.wait()
        if survivor is not None:
            os.kill(survivor, signal.SIGTERM)
            deadline = time.monotonic() + 40
            while not _gone(survivor) and time.monotonic() < deadline:
                time.sleep(0.1)
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


def _dual_stack() -> bool:
    try:
        return socket.has_ipv6 and Path("/proc/sys/net/ipv6/bindv6only").read_text() == "0\n"
    except OSError:
        return False


@pytest.mark.skipif(not _dual_stack(), reason="no IPv6, or the system binds IPv6 alone")
def test_the_early_socket_on_all_addresses_takes_ipv4_too():
    """`arena serve --host ::` binds its port itself now, before gunicorn (which sets no
    IPV6_V6ONLY): it takes IPv4 connections too, as gunicorn's own socket did."""
    from arena.cli.server import _listen_early

    fd = _listen_early("::", 0)
    listener = socket.socket(fileno=fd)
    with listener:
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        with socket.create_connection(("::1", port), timeout=5):
            pass


def test_the_hosts_gunicorn_took_are_taken_as_it_took_them():
    """The early socket and a restart's new server (which gunicorn binds from the setting)
    read --host as gunicorn did: an IPv6 address bare or in brackets, "" for every IPv4
    address. The review found `arena restart` failing for --host :: (gunicorn split ":::80"
    on its colons)."""
    from arena.cli.server import _bind

    assert _bind("::", 5000) == _bind("[::]", 5000) == "[::]:5000"
    assert _bind("[::1]", 80) == "[::1]:80"
    assert _bind("", 5000) == "0.0.0.0:5000"
    assert _bind("127.0.0.1", 5000) == "127.0.0.1:5000"
    assert _bind("localhost", 5000) == "localhost:5000"
