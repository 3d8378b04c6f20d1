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
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.security.slow_clients import attacked_health
from tests.timing import seconds
from tests.web.servers import ARENA, ROOT, free_port, server_env, stop, upgrade, wait_healthy

pytestmark = [pytest.mark.slow, pytest.mark.serial]

WITHIN = 0.2  # seconds a health check may take
SECONDS = 8.0  # how long the health checker watches under the attack (a trickled body
# sends a byte every 7 s)


def _check(watch, attack) -> None:
    assert attack.refused == 0 and attack.opened == 3 * 256, attack.refused
    assert all(t is not None for t in watch.latencies), watch.latencies
    answered = watch.answered(WITHIN)
    assert answered >= 0.95, (answered, watch.worst(), watch.latencies)


@pytest.fixture
def instance(tmp_path) -> Path:
    return upgrade(tmp_path / "instance")


def _warm(port: int, process: subprocess.Popen) -> None:
    """A few requests first: each server thread's first (its database connection, the
    proxy's connections to gunicorn) is slower than the checks are allowed to be."""
    for _ in range(8):
        wait_healthy(port, process)


def test_the_embedded_server_serves_through_slow_and_idle_clients(instance):
    """waitress reads every request whole in its I/O thread before a thread serves it: the
    attack holds sockets, and every health check is answered."""
    port = free_port()
    server = subprocess.Popen([ARENA, "serve", "--port", str(port)], env=server_env(instance),
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        _warm(port, server)
        watch, attack = attacked_health(port, seconds=SECONDS, path="/api/v1/health")
    finally:
        log = stop(server)
    _check(watch, attack)
    assert "Traceback" not in log, log[-3000:]


def _binary(name: str) -> str:
    found = shutil.which(name) or next(
        (p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.path.exists(p)), None)
    if found is None:
        message = f"{name} is not installed (scripts/test.sh installs Debian's as root)"
        if os.environ.get("ARENA_REQUIRE_PROXY"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def _rendered_nginx(folder: Path, port: int, upstream: int | Sequence[int]) -> Path:
    """deploy/nginx as shipped, with this test's ports (one app server or several) and its
    files under ``folder``."""
    deploy = ROOT / "deploy" / "nginx"
    upstreams = [upstream] if isinstance(upstream, int) else list(upstream)
    servers = (deploy / "arena-upstreams.conf").read_text()
    assert "\nserver 127.0.0.1:8000;\n" in servers
    servers = servers.replace("server 127.0.0.1:8000;", "\n".join(
        f"server 127.0.0.1:{each};" for each in upstreams))
    site = (deploy / "arena.conf").read_text()
    site = site.replace("listen 80;", f"listen 127.0.0.1:{port};")
    site = re.sub(r"access_log \S+ arena;", f"access_log {folder}/access.log arena;", site)
    main = (deploy / "nginx.conf").read_text()
    main = main.replace("user www-data;", "user root;" if os.geteuid() == 0 else "")
    main = re.sub(r"^pid .*;$", f"pid {folder}/nginx.pid;", main, flags=re.M)
    main = re.sub(r"^error_log \S+", f"error_log {folder}/error.log", main, flags=re.M)
    main = main.replace("http {", "http {\n" + "".join(
        f"    {kind}_temp_path {folder}/{kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")), 1)
    (folder / "arena-upstreams.conf").write_text(servers)
    (folder / "arena.conf").write_text(site)
    (folder / "nginx.conf").write_text(main)
    return folder / "nginx.conf"


def _listening(port: int, process: subprocess.Popen, timeout: float = seconds(30)) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "it exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=seconds(1)).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


def _rendered_caddy(folder: Path, port: int, upstream: int | Sequence[int]) -> Path:
    """deploy/Caddyfile as shipped, on plain HTTP at this test's ports for any host name,
    without the admin endpoint (one port for every Caddy on the machine); several app
    servers as docs/deployment.md lists them (tried in turn for up to 5 s, a server that
    failed or fails its health check skipped)."""
    upstreams = [upstream] if isinstance(upstream, int) else list(upstream)
    text = (ROOT / "deploy" / "Caddyfile").read_text()
    text = text.replace("arena.example.org {", f"http://:{port} {{\n\tbind 127.0.0.1")
    proxied = "reverse_proxy " + " ".join(f"127.0.0.1:{each}" for each in upstreams)
    if len(upstreams) > 1:
        proxied += (" {\n\t\tlb_policy round_robin\n\t\tlb_try_duration 5s\n\t\tfail_duration 10s"
                    "\n\t\thealth_uri /api/v1/health\n\t\thealth_interval 1s")
        text = text.replace("reverse_proxy 127.0.0.1:8000 {", proxied)
    text = text.replace("reverse_proxy 127.0.0.1:8000", proxied)
    text = text.replace("{\n\tservers", "{\n\tadmin off\n\tservers", 1)
    (folder / "Caddyfile").write_text(text)
    return folder / "Caddyfile"


def _start_nginx(folder: Path, port: int, upstream: int | Sequence[int]) -> subprocess.Popen:
    config = _rendered_nginx(folder, port, upstream)
    return subprocess.Popen([_binary("nginx"), "-c", str(config), "-p", str(folder), "-e",
                             str(folder / "error.log"), "-g", "daemon off;"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _start_caddy(folder: Path, port: int, upstream: int | Sequence[int]) -> subprocess.Popen:
    config = _rendered_caddy(folder, port, upstream)
    env = os.environ | {"XDG_CONFIG_HOME": str(folder), "XDG_DATA_HOME": str(folder),
                        "HOME": str(folder)}
    # (its log to a file: a request's line in a pipe nobody reads would soon block it)
    with (folder / "caddy.log").open("w") as log:
        return subprocess.Popen([_binary("caddy"), "run", "--config", str(config),
                                 "--adapter", "caddyfile"], env=env, stdout=log,
                                stderr=subprocess.STDOUT, text=True)


@pytest.mark.parametrize("proxy_name", ["nginx", "caddy"])
def test_a_proxy_in_front_of_stock_gunicorn_absorbs_slow_and_idle_clients(
        proxy_name, instance, tmp_path):
    """deploy/'s proxy buffers each request whole before gunicorn (stock threaded workers)
    sees it: the attack costs the proxy sockets, gunicorn's threads stay free for the health
    check."""
    _binary(proxy_name)  # (before anything starts: missing, it skips or fails)
    start_proxy = {"nginx": _start_nginx, "caddy": _start_caddy}[proxy_name]
    folder = tmp_path / "proxy"
    folder.mkdir()
    upstream, port = free_port(), free_port()
    env = server_env(instance) | {"ARENA_TRUSTED_PROXIES": "1"}
    gunicorn = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "-c", str(ROOT / "gunicorn.conf.py"),
         "--bind", f"127.0.0.1:{upstream}", "--pid", str(tmp_path / "gunicorn.pid")],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    proxy = None
    try:
        wait_healthy(upstream, gunicorn)
        proxy = start_proxy(folder, port, upstream)
        _listening(port, proxy)
        _warm(port, proxy)
        watch, attack = attacked_health(port, seconds=SECONDS, path="/api/v1/health")
    finally:
        if proxy is not None:
            stop(proxy)
        log = stop(gunicorn)
    _check(watch, attack)
    assert "Traceback" not in log, log[-3000:]
    # no client address in the access log: nginx's format has none, Caddy's drops the fields
    if proxy_name == "nginx":
        access = (folder / "access.log").read_text().splitlines()
        assert not any("127.0.0.1" in line for line in access), access[:3]
    else:
        access = [line for line in (folder / "caddy.log").read_text().splitlines()
                  if '"handled request"' in line]
        assert not any('"remote_ip"' in line or '"client_ip"' in line for line in access)
    assert any("/api/v1/health" in line for line in access), access[:3]
