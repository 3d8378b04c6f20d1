"""Rate limits shared through a real Redis, as several app servers would share them."""

import os
import secrets

import pytest

from tests.factories import make_campaign

REDIS_URL = os.environ.get("ARENA_TEST_REDIS_URL", "redis://127.0.0.1:6379")


@pytest.fixture
def redis_client():
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.ConnectionError as exc:
        if os.environ.get("ARENA_REQUIRE_REDIS"):
            pytest.fail(f"Redis not reachable at {REDIS_URL}: {exc}")
        pytest.skip(f"Redis not reachable at {REDIS_URL}: {exc}")
    yield client
    client.close()


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
