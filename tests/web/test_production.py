"""Production defaults: real servers started the way the README says, a reverse proxy's
headers trusted only when configured, and no serving with secrets that exist in one process."""

from __future__ import annotations

import contextlib
import stat
import subprocess
import sys

import pytest
from sqlalchemy import func, select

from arena import EphemeralSecretError, wsgi_app
from arena.extensions import db
from arena.infra import devices
from arena.models import Vote
from tests.factories import answer, make_campaign, start
from tests.timing import seconds

from .servers import ROOT, free_port, serve, server_env, stop, upgrade, wait_healthy


def test_each_performance_device_can_be_turned_off_and_plain_arena_votes(
        tmp_path, monkeypatch, make_app):
    """DEVICES names the devices on (arena.infra.devices): a name that is not a device is
    refused with the names there are; with none at all a voter's session and votes go
    through as ever."""
    monkeypatch.setenv("ARENA_INSTANCE_PATH", str(upgrade(tmp_path / "served")))
    monkeypatch.setenv("ARENA_SECRET_KEY", "k1")
    monkeypatch.setenv("ARENA_PSEUDONYM_KEY", "k2")
    monkeypatch.setenv("ARENA_DEVICES", "writer-queue,turbo")
    with pytest.raises(ValueError, match="ARENA_DEVICES names turbo: the devices are "
                                         "writer-queue"):
        wsgi_app()
    monkeypatch.delenv("ARENA_DEVICES")
    with make_app(DEVICES="", VALIDATION_RATE=0.0).app_context():
        assert isinstance(devices.writer_queue(), contextlib.nullcontext)
        make_campaign()
        voter, session = start()
        for task in session.tasks:
            answer(voter, task, "left")
        assert db.session.scalar(select(func.count()).select_from(Vote)) == 3


def test_serving_refuses_secrets_that_live_in_one_process(tmp_path, monkeypatch):
    for key in ("ARENA_SECRET_KEY", "ARENA_PSEUDONYM_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("ARENA_INSTANCE_PATH", str(tmp_path / "fresh"))
    with pytest.raises(EphemeralSecretError,
                       match=r"SECRET_KEY and PSEUDONYM_KEY.*arena db upgrade"):
        wsgi_app()
    monkeypatch.setenv("ARENA_INSTANCE_PATH", str(upgrade(tmp_path / "upgraded")))
    monkeypatch.setenv("ARENA_SECRET_KEY", "k1")
    monkeypatch.setenv("ARENA_PSEUDONYM_KEY", "k2")
    app = wsgi_app()
    assert app.config["SECRET_KEY"] == "k1" and app.config["PSEUDONYM_KEY"] == "k2"


def test_db_upgrade_writes_keys_then_both_servers_share_them(tmp_path):
    """`arena db upgrade` on a fresh instance persists both keys (0600) and the schema;
    `arena serve` then serves, and so does a plain `gunicorn wsgi:app` on that instance,
    while on an instance without keys it refuses with the reason instead of giving each
    worker its own key."""
    instance = upgrade(tmp_path / "instance")
    config = instance / "config.py"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    port = free_port()
    served = serve(instance, port, "--threads", "2")
    try:
        assert wait_healthy(port, served) == {"status": 200, "body": '{"status":"ok"}\n'}
    finally:
        log = stop(served)
    assert "Wrote a new" not in log and "127.0.0.1" not in log.split("\n", 1)[1], log
    # the votes readable by the server's user alone
    assert stat.S_IMODE((instance / "arena.sqlite3").stat().st_mode) == 0o600
    assert stat.S_IMODE(instance.stat().st_mode) == 0o700
    assert "SECRET_KEY =" in config.read_text() and "PSEUDONYM_KEY =" in config.read_text()

    gunicorn = [sys.executable, "-m", "gunicorn", "--workers", "2", "wsgi:app"]
    port = free_port()
    # the access log comes from ./gunicorn.conf.py, as for `gunicorn wsgi:app` in the README
    shared = subprocess.Popen([*gunicorn, "--bind", f"127.0.0.1:{port}"],
                              env=server_env(instance), cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert wait_healthy(port, shared)["status"] == 200
    finally:
        log = stop(shared)
    # no client address in the access log (the README says none is stored anywhere)
    access = [line for line in log.splitlines() if "/api/v1/health" in line]
    assert access and not any("127.0.0.1" in line for line in access), access

    refused = subprocess.run([*gunicorn, "--bind", f"127.0.0.1:{free_port()}"],
                             env=server_env(tmp_path / "no-keys"), cwd=ROOT,
                             capture_output=True, text=True, timeout=seconds(60))
    assert refused.returncode != 0
    assert "will not serve without a persistent SECRET_KEY" in refused.stdout + refused.stderr


def _sessions(client, forwarded_for: str | None, proto: str | None = None):
    headers = {}
    if forwarded_for:
        headers["X-Forwarded-For"] = forwarded_for
    if proto:
        headers["X-Forwarded-Proto"] = proto
    return client.post("/api/v1/sessions", headers=headers)


def test_behind_a_trusted_proxy_each_client_has_its_own_limit(make_app):
    app = make_app(TRUSTED_PROXIES=1, RATELIMIT_ENABLED=True, RATE_LIMIT_SESSIONS="2/minute")
    with app.app_context():
        make_campaign()
    client = app.test_client()
    codes = {ip: [_sessions(client, ip).status_code for _ in range(3)]
             for ip in ("203.0.113.1", "198.51.100.7")}
    assert codes == {"203.0.113.1": [201, 201, 429], "198.51.100.7": [201, 201, 429]}
    # the proxy said the client came over HTTPS: links the API hands out say so too
    url = _sessions(client, "192.0.2.3", "https").json["tasks"][0]["left"]["url"]
    assert url.startswith("https://")


def test_without_trusted_proxies_forwarded_headers_are_ignored(make_app):
    """Anyone can send X-Forwarded-For: unless a proxy is configured it must not pick the
    rate-limit key, or a client could rotate it to escape the limit."""
    app = make_app(RATELIMIT_ENABLED=True, RATE_LIMIT_SESSIONS="2/minute")
    with app.app_context():
        make_campaign()
    client = app.test_client()
    codes = [_sessions(client, f"203.0.113.{k}", "https").status_code for k in range(3)]
    assert codes == [201, 201, 429]
