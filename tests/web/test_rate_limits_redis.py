"""Rate limits shared through a real Redis, as several app servers would share them."""

import secrets

import pytest

from tests.conftest import REDIS_URL
from tests.factories import make_campaign
from tests.timing import seconds


def test_two_servers_share_one_limit_and_store_no_ip(make_app, redis_client):
    prefix = f"arena-test-{secrets.token_hex(4)}"
    config = {"RATELIMIT_ENABLED": True, "RATELIMIT_STORAGE_URI": REDIS_URL,
              "RATELIMIT_KEY_PREFIX": prefix, "RATE_LIMIT_SESSIONS": "3/minute"}
    first = make_app(**config)
    with first.app_context():
        make_campaign()
    second = make_app(**config)  # a second "server" on the same database and Redis
    codes = []
    for app in (first, second, first, second):
        codes.append(app.test_client().post("/api/v1/sessions").status_code)
    assert codes == [201, 201, 201, 429]
    keys = [k.decode() for k in redis_client.scan_iter(f"*{prefix}*")]
    assert keys and not any("127.0.0.1" in k for k in keys)
    redis_client.delete(*keys)


def test_redis_down_keeps_voting_open_and_recovers_on_its_own(make_app, tmp_path, caplog):
    """The rate-limit store goes away: requests are still served, limited per process in
    memory, with a log line naming the cause; when it comes back the limits are counted
    in it again, without a restart (a real redis-server on a port of its own)."""
    import shutil
    import socket
    import subprocess
    import time

    import redis

    server_binary = shutil.which("redis-server")
    if server_binary is None:
        pytest.skip("redis-server not installed")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"redis://127.0.0.1:{port}"
    app = make_app(RATELIMIT_ENABLED=True, RATELIMIT_STORAGE_URI=url,
                   RATE_LIMIT_SESSIONS="100/minute")
    with app.app_context():
        make_campaign()
    client = app.test_client()
    with caplog.at_level("WARNING"):
        assert client.post("/api/v1/sessions").status_code == 201  # nothing listens there
    assert "falling back to in-memory storage" in caplog.text
    server = subprocess.Popen([server_binary, "--port", str(port), "--save", "",
                               "--appendonly", "no", "--dir", str(tmp_path)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        store = redis.Redis.from_url(url, socket_connect_timeout=1)
        deadline = time.monotonic() + seconds(60)
        while time.monotonic() < deadline:  # (the limiter retries after 1, 2, 4, ... s)
            assert client.post("/api/v1/sessions").status_code == 201
            try:
                if store.dbsize() > 0:
                    break
            except redis.ConnectionError:
                pass
            time.sleep(0.5)
        assert store.dbsize() > 0, "the limits never went back to Redis"
        store.close()
    finally:
        server.terminate()
        server.wait(timeout=seconds(10))
