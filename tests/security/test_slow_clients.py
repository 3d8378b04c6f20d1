"""Slow and idle clients against both shapes of deployment: the embedded server that
`arena serve` (and scripts/start.sh) runs alone, and stock gunicorn behind deploy/'s nginx
configuration. 256 half-sent request heads, 256 trickled bodies and 256 silent connections
at once; meanwhile a health checker asks every 0.25 s and must be answered within 200 ms."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.security.slow_clients import attacked_health
from tests.web.servers import ARENA, ROOT, free_port, server_env, stop, upgrade, wait_healthy

pytestmark = pytest.mark.slow

WITHIN = 0.2  # seconds a health check may take
SECONDS = 20.0  # how long the health checker watches under the attack


def _check(watch, attack) -> None:
    assert attack.refused == 0 and attack.opened == 3 * 256, attack.refused
    assert all(t is not None for t in watch.latencies), watch.latencies
    answered = watch.answered(WITHIN)
    assert answered >= 0.95, (answered, watch.worst(), watch.latencies)


@pytest.fixture
def instance(tmp_path) -> Path:
    return upgrade(tmp_path / "instance")


def test_the_embedded_server_serves_through_slow_and_idle_clients(instance):
    """waitress reads every request whole in its I/O thread before a thread serves it: the
    attack holds sockets, and every health check is answered."""
    port = free_port()
    server = subprocess.Popen([ARENA, "serve", "--port", str(port)], env=server_env(instance),
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        wait_healthy(port, server)
        watch, attack = attacked_health(port, seconds=SECONDS, path="/api/v1/health")
    finally:
        log = stop(server)
    _check(watch, attack)
    assert "Traceback" not in log, log[-3000:]


def _nginx() -> str:
    found = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.path.exists(p)), None)
    if found is None:
        message = "nginx is not installed (scripts/test.sh installs Debian's as root)"
        if os.environ.get("ARENA_REQUIRE_PROXY"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def _rendered_nginx(folder: Path, port: int, upstream: int) -> Path:
    """deploy/nginx as shipped, with this test's ports and its files under ``folder``."""
    deploy = ROOT / "deploy" / "nginx"
    site = (deploy / "arena.conf").read_text()
    site = site.replace("listen 80;", f"listen 127.0.0.1:{port};")
    site = site.replace("server 127.0.0.1:8000;", f"server 127.0.0.1:{upstream};")
    site = re.sub(r"access_log \S+ arena;", f"access_log {folder}/access.log arena;", site)
    main = (deploy / "nginx.conf").read_text()
    main = main.replace("user www-data;", "user root;" if os.geteuid() == 0 else "")
    main = re.sub(r"^pid .*;$", f"pid {folder}/nginx.pid;", main, flags=re.M)
    main = re.sub(r"^error_log \S+", f"error_log {folder}/error.log", main, flags=re.M)
    main = main.replace("http {", "http {\n" + "".join(
        f"    {kind}_temp_path {folder}/{kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")), 1)
    (folder / "arena.conf").write_text(site)
    (folder / "nginx.conf").write_text(main)
    return folder / "nginx.conf"


def _listening(port: int, process: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


def test_nginx_in_front_of_stock_gunicorn_absorbs_slow_and_idle_clients(instance, tmp_path):
    """deploy/nginx buffers each request whole before gunicorn (stock threaded workers) sees
    it: the attack costs nginx sockets, gunicorn's threads stay free for the health check."""
    nginx = _nginx()
    folder = tmp_path / "nginx"
    folder.mkdir()
    upstream, port = free_port(), free_port()
    config = _rendered_nginx(folder, port, upstream)
    env = server_env(instance) | {"ARENA_TRUSTED_PROXIES": "1"}
    gunicorn = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "-c", str(ROOT / "gunicorn.conf.py"),
         "--bind", f"127.0.0.1:{upstream}", "--pid", str(tmp_path / "gunicorn.pid")],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    proxy = None
    try:
        wait_healthy(upstream, gunicorn)
        proxy = subprocess.Popen([nginx, "-c", str(config), "-p", str(folder), "-e",
                                  str(folder / "error.log"), "-g", "daemon off;"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        _listening(port, proxy)
        watch, attack = attacked_health(port, seconds=SECONDS, path="/api/v1/health")
    finally:
        if proxy is not None:
            stop(proxy)
        log = stop(gunicorn)
    _check(watch, attack)
    assert "Traceback" not in log, log[-3000:]
    access = (folder / "access.log").read_text()
    assert "/api/v1/health" in access and "127.0.0.1" not in access
