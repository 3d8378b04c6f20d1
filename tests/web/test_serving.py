"""The servers as deployed: stock gunicorn replaced through its documented signals while
requests keep coming, one settings file for `arena serve` and plain gunicorn, no client
address in gunicorn's error log, and a database on an old schema refused until
`arena db upgrade` has run."""

from __future__ import annotations

import os
import runpy
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.timing import seconds

from .servers import ARENA, ROOT, free_port, serve, server_env, stop, upgrade, wait_healthy

CONFIG = ROOT / "gunicorn.conf.py"
GUNICORN = str(Path(sys.executable).parent / "gunicorn")


def gunicorn(instance: Path, port: int, log: Path, *options: str) -> subprocess.Popen:
    """Plain ``gunicorn -c gunicorn.conf.py`` as the deployment docs run it, logging to
    ``log`` (a file: a new master of a binary upgrade writes to it after the first exits)."""
    with log.open("a") as out:
        return subprocess.Popen(
            [GUNICORN, "-c", str(CONFIG),
             "--bind", f"127.0.0.1:{port}", "--pid", str(instance / "gunicorn.pid"), *options],
            env=server_env(instance), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def _children(pid: int) -> set[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return {int(p) for p in path.read_text().split()} if path.exists() else set()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def _wait(condition, timeout: float = seconds(30), what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _new_master(pid_file: Path, old: int) -> int | None:
    """The master a USR2 started: in the pid file, or (gunicorn 27) in ``<pid file>.2``
    while the old master runs."""
    for path in (pid_file, pid_file.with_name(pid_file.name + ".2")):
        text = path.read_text().strip() if path.exists() else ""
        if text and int(text) != old:
            return int(text)
    return None


def _ready(log: Path, workers: set[int]) -> int:
    """How many of ``workers`` have said they loaded the app (gunicorn.conf.py)."""
    text = log.read_text()
    return sum(f"[{pid}] [INFO] Worker ready" in text for pid in workers)


class Requests:
    """Clients asking ``/api/v1/health`` (a database read) without a pause, each on a new
    connection: how many were answered, and every failure (refused, reset, not 200)."""

    def __init__(self, port: int, count: int = 4):
        self.port, self.running, self.answered, self.slowest = port, True, 0, 0.0
        self.failures: list[str] = []
        self.threads = [threading.Thread(target=self._ask, daemon=True) for _ in range(count)]

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.running = False
        for thread in self.threads:
            thread.join(timeout=seconds(30))

    def _ask(self):
        while self.running:
            started = time.monotonic()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/health",
                                            timeout=seconds(60)) as reply:
                    assert reply.status == 200
                    reply.read()
                self.answered += 1
                self.slowest = max(self.slowest, time.monotonic() - started)
            except (OSError, AssertionError) as failed:
                self.failures.append(repr(failed))


@pytest.fixture
def instance(tmp_path) -> Path:
    return upgrade(tmp_path / "instance")


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_hup_and_a_binary_upgrade_fail_no_request(instance, tmp_path):
    """gunicorn's documented signals replace the code without refusing a request: HUP starts
    new workers and stops the old ones gracefully; USR2 starts a new master beside the old
    one (on the same sockets), then TERM stops the old master gracefully once the new
    workers have loaded the app (WINCH applies to a daemonized master only). A request
    arriving while HUP's new workers load waits in the port's queue: never refused."""
    port, log = free_port(), tmp_path / "gunicorn.log"
    first = gunicorn(instance, port, log, "--workers", "2")
    pid_file = instance / "gunicorn.pid"
    new_master = None
    try:
        wait_healthy(port, first)
        with Requests(port) as stream:
            time.sleep(1.0)
            before = _children(first.pid)
            first.send_signal(signal.SIGHUP)
            _wait(lambda: len(_children(first.pid) - before) == 2 and
                  not _children(first.pid) & before, what="new workers after HUP")
            time.sleep(1.0)

            reloaded = stream.answered
            first.send_signal(signal.SIGUSR2)
            _wait(lambda: _new_master(pid_file, first.pid), what="the new master's pid file")
            new_master = _new_master(pid_file, first.pid)
            _wait(lambda: _ready(log, _children(new_master)) == 2, timeout=seconds(60),
                  what="the new master's workers to load the app")
            first.send_signal(signal.SIGTERM)
            first.wait(timeout=seconds(60))
            time.sleep(1.0)
        assert stream.failures == [], stream.failures[:5]
        assert reloaded > 20 and stream.answered > reloaded + 20, (reloaded, stream.answered)
        assert _alive(new_master)
        health = f"http://127.0.0.1:{port}/api/v1/health"
        with urllib.request.urlopen(health, timeout=seconds(5)) as r:
            assert r.status == 200
    finally:
        new_master = new_master or _new_master(pid_file, first.pid)
        if first.poll() is None:
            first.kill()
            first.wait()
        if new_master is not None and _alive(new_master):
            os.kill(new_master, signal.SIGTERM)
            _wait(lambda: not _alive(new_master), what="the new master to stop")
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


def test_the_error_log_names_no_client_address(instance, tmp_path):
    """gunicorn writes ``Invalid request from ip=...`` for a malformed request: the address
    is written as ``[address]``, and the access log has none either."""
    port, log = free_port(), tmp_path / "gunicorn.log"
    server = gunicorn(instance, port, log, "--workers", "1")
    try:
        wait_healthy(port, server)
        with socket.create_connection(("127.0.0.1", port), timeout=seconds(5)) as client:
            client.sendall(b"NOT A REQUEST\r\n\r\n")
            assert client.recv(64).startswith(b"HTTP/1.1 400")
        time.sleep(0.5)
    finally:
        stop(server)
    text = log.read_text()
    assert "Invalid request from ip=[address]" in text, text
    assert "/api/v1/health" in text  # (the access log's line)
    assert "127.0.0.1" not in text, text


def test_arena_serve_and_plain_gunicorn_read_one_settings_file(tmp_path, monkeypatch):
    """gunicorn.conf.py takes the bind address, workers and threads from the instance's
    settings, with the same defaults `arena serve` uses."""
    monkeypatch.setenv("ARENA_INSTANCE_PATH", str(tmp_path))
    for key in ("ARENA_BIND", "ARENA_WORKERS", "ARENA_THREADS", "ARENA_DATABASE_URL",
                "ARENA_RATELIMIT_STORAGE_URI"):
        monkeypatch.delenv(key, raising=False)
    from arena.infra.serving import usable_cpus

    settings = runpy.run_path(str(CONFIG))
    assert settings["bind"] == ["127.0.0.1:5000"]
    # (rate limits in memory by default: one process counts them all)
    assert settings["workers"] == 1 and settings["threads"] == 2
    assert settings["worker_class"] == "gthread"
    assert "%(h)s" not in settings["access_log_format"]
    monkeypatch.setenv("ARENA_DATABASE_URL", "postgresql://arena@db/arena")
    assert runpy.run_path(str(CONFIG))["threads"] == 4
    monkeypatch.setenv("ARENA_RATELIMIT_STORAGE_URI", "redis://127.0.0.1:6379")
    assert runpy.run_path(str(CONFIG))["workers"] == min(usable_cpus(), 8)
    (tmp_path / "config.py").write_text("BIND = '0.0.0.0:8000'\nTHREADS = 3\n")
    monkeypatch.setenv("ARENA_WORKERS", "5")
    settings = runpy.run_path(str(CONFIG))
    assert (settings["bind"], settings["workers"], settings["threads"]) == (
        ["0.0.0.0:8000"], 5, 3)


def test_a_server_on_an_old_schema_refuses_to_start(instance, tmp_path):
    """Upgrading the schema is a release step: a server (`arena serve`, or gunicorn) whose
    database is behind the release's migrations says so and names `arena db upgrade`."""
    env = server_env(instance)
    subprocess.run([ARENA, "db", "downgrade"], env=env, cwd=ROOT, check=True,
                   capture_output=True, timeout=seconds(120))
    refused = subprocess.run([ARENA, "serve", "--port", str(free_port())], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=seconds(60))
    assert refused.returncode == 6, refused
    assert "Error: The database schema is at" in refused.stderr
    assert "Run `arena db upgrade`" in refused.stderr and "Traceback" not in refused.stderr
    log = tmp_path / "gunicorn.log"
    server = gunicorn(instance, free_port(), log, "--workers", "1")
    assert server.wait(timeout=seconds(60)) != 0
    assert "Run `arena db upgrade`" in log.read_text()
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    refused = subprocess.run([ARENA, "serve", "--port", str(free_port())],
                             env=server_env(fresh), cwd=ROOT, capture_output=True, text=True,
                             timeout=seconds(60))
    assert refused.returncode == 6 and "The database has no schema yet" in refused.stderr


def test_host_and_port_override_the_settings_files_address():
    from arena.cli.server import _bind

    assert _bind(["127.0.0.1:5000"], None, None) == "127.0.0.1:5000"
    assert _bind(["127.0.0.1:5000"], None, 8000) == "127.0.0.1:8000"
    assert _bind("127.0.0.1:5000", "0.0.0.0", None) == "0.0.0.0:5000"
    assert _bind(["127.0.0.1:5000"], "::", 80) == _bind(["x:1"], "[::]", 80) == "[::]:80"
    assert _bind(["[::1]:5000"], None, 6000) == "[::1]:6000"
    assert _bind(["127.0.0.1:5000"], "", None) == "0.0.0.0:5000"


def test_on_every_interface_it_prints_the_lan_address_a_phone_opens_and_its_qr(instance):
    """`start.sh --host 0.0.0.0` as the README says: the printed address answers from the
    network (not loopback), and the QR code under it encodes that address."""
    import segno

    port = free_port()
    process = serve(instance, port, "--host", "0.0.0.0")
    try:
        wait_healthy(port, process)
    finally:
        out = stop(process)
    lines = out.splitlines()
    assert sum("Serving on" in line for line in lines) == 1, out  # (each log line once)
    start = lines.index("Open Arena on a phone on this network (or scan the code):")
    url = lines[start + 1].strip()
    assert url.startswith("http://") and not url.startswith("http://127."), out
    # the compact code: a character per column, two rows of modules per line
    blocks = {" ": (0, 0), "▀": (1, 0), "▄": (0, 1), "█": (1, 1)}
    code = [line for line in lines[start + 2:] if line and set(line) <= set(blocks)]
    rows = [[blocks[c][half] for c in line] for line in code for half in (0, 1)]
    dark = [[1 - m for m in row] for row in rows]  # (light modules are drawn: dark terminal)
    expected = [list(map(int, row)) for row in segno.make(url, error="m").matrix]
    n = len(expected)
    inner = [row[4:4 + n] for row in dark[4:4 + n]]  # (inside the quiet zone of 4 modules)
    assert inner == expected, out
    process = serve(instance, port, "--host", "0.0.0.0")
    try:
        wait_healthy(port, process)
        # (through the LAN address)
        with urllib.request.urlopen(url, timeout=seconds(5)) as response:
            assert response.status == 200 and b"Arena" in response.read()
    finally:
        stop(process)
