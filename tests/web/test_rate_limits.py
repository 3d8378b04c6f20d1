"""The rate limiter's contract (arena/web/limits.py): what a client is told, what is counted
and where, on the default store (the instance's SQLite counter file)."""

from __future__ import annotations

import sqlite3

from tests.factories import make_campaign, make_owner

from .helpers import csrf_token


def _counters(tmp_path) -> dict[str, int]:
    with sqlite3.connect(tmp_path / "instance" / "ratelimits.sqlite3") as db:
        return dict(db.execute("SELECT key, count FROM counter"))


def test_a_client_is_told_its_budget_and_when_to_come_back(make_app, tmp_path):
    app = make_app(RATELIMIT_ENABLED=True, RATE_LIMIT_SESSIONS="3/minute",
                   RATE_LIMIT_NETWORK_SESSIONS="100/minute")
    with app.app_context():
        make_campaign()
    client = app.test_client()
    seen = []
    for _ in range(4):
        response = client.post("/api/v1/sessions")
        seen.append((response.status_code, response.headers.get("X-RateLimit-Limit"),
                     response.headers.get("X-RateLimit-Remaining")))
    # a client without a token is keyed on its network: 3 a minute, the tightest limit
    assert seen == [(201, "3", "2"), (201, "3", "1"), (201, "3", "0"), (429, "3", "0")]
    assert "Too many requests" in response.json["error"]
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    assert int(response.headers["X-RateLimit-Reset"]) > 0
    ok = client.get("/api/v1/leaderboard?criterion=preference")
    assert "X-RateLimit-Limit" not in ok.headers and "Retry-After" not in ok.headers


def test_every_limit_of_a_setting_counts_and_the_tightest_refuses(make_app, tmp_path):
    app = make_app(RATELIMIT_ENABLED=True, RATE_LIMIT_SESSIONS="100/hour;2/minute")
    with app.app_context():
        make_campaign()
    client = app.test_client()
    codes = [client.post("/api/v1/sessions").status_code for _ in range(3)]
    assert codes == [201, 201, 429]
    counts = _counters(tmp_path)
    # per voter (both limits), then per network and new identities, each its own bucket
    # even where the keys are the same network: the refused third request counted in the
    # limits up to the one that refused it, not in those after it
    assert sorted(counts.values()) == [2, 2, 3, 3]
    assert sum("new-identity" in key for key in counts) == 1
    assert not any("127.0.0.1" in key for key in counts)


def test_same_limits_per_voter_and_per_network_are_two_buckets(make_app, tmp_path):
    app = make_app(RATELIMIT_ENABLED=True, RATE_LIMIT_SESSIONS="3/minute",
                   RATE_LIMIT_NETWORK_SESSIONS="3/minute")
    with app.app_context():
        make_campaign()
    client = app.test_client()
    # a client without a token is keyed on its network by both limits
    assert [client.post("/api/v1/sessions").status_code for _ in range(4)] == [201] * 3 + [429]


def test_a_disabled_limiter_counts_nothing(make_app, tmp_path):
    app = make_app(RATELIMIT_ENABLED=False, RATE_LIMIT_SESSIONS="1/minute")
    with app.app_context():
        make_campaign()
    client = app.test_client()
    assert [client.post("/api/v1/sessions").status_code for _ in range(3)] == [201] * 3
    path = tmp_path / "instance" / "ratelimits.sqlite3"
    assert not path.exists() or _counters(tmp_path) == {}


def test_guessing_owner_tokens_is_limited_per_network(make_app):
    app = make_app(RATELIMIT_ENABLED=True, RATE_LIMIT_SIGN_IN="3/hour")
    with app.app_context():
        _, token = make_owner("acme")
    client = app.test_client()
    html = client.get("/owner/").get_data(as_text=True)
    guesses = [client.post("/owner/sign-in", data={"csrf_token": csrf_token(html),
                                                   "token": f"owner_guess{n}"}).status_code
               for n in range(3)]
    assert guesses == [401, 401, 401]
    # the right token too, once the network has spent its guesses
    response = client.post("/owner/sign-in", data={"csrf_token": csrf_token(html),
                                                   "token": token})
    assert response.status_code == 429 and "Retry-After" in response.headers
