"""The rate limiter's contract (arena/web/limits.py): what a client is told, what is counted
and where, in one process's memory (the default store)."""

from __future__ import annotations

from typing import ClassVar

from limits.storage import MemoryStorage

from arena.accounts import tokens
from arena.web.limits import Counters
from tests.factories import make_campaign, make_owner

from .helpers import csrf_token, task_id


class RecordingStorage(MemoryStorage):
    """The in-memory store, keeping each key's count as it counts it."""

    STORAGE_SCHEME: ClassVar[list[str]] = ["arena-test-recording"]

    def __init__(self, uri=None, wrap_exceptions=False, **options):
        super().__init__(uri, wrap_exceptions=wrap_exceptions, **options)
        self.counts: dict[str, int] = {}

    def incr(self, key, expiry, amount=1):
        self.counts[key] = count = super().incr(key, expiry, amount)
        return count


def _counters(client) -> dict[str, int]:
    return client.application.extensions["arena_limits"].store.counts


def _client_of_campaign(make_app, **config):
    """A test client of an app with these settings and a campaign to vote in."""
    app = make_app(**config)
    with app.app_context():
        make_campaign()
    return app.test_client()


def test_a_client_is_told_its_budget_and_when_to_come_back(make_app):
    client = _client_of_campaign(make_app, RATELIMIT_ENABLED=True,
                                 RATE_LIMIT_SESSIONS="3/minute",
                                 RATE_LIMIT_NETWORK_SESSIONS="100/minute")
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


def test_the_default_store_is_this_processs_memory(make_app):
    app = make_app(RATELIMIT_ENABLED=True)
    assert app.config["RATELIMIT_STORAGE_URI"] == "memory://"
    assert isinstance(app.extensions["arena_limits"].store, MemoryStorage)


def test_every_limit_of_a_setting_counts_and_the_tightest_refuses(make_app):
    client = _client_of_campaign(make_app, RATELIMIT_ENABLED=True,
                                 RATELIMIT_STORAGE_URI="arena-test-recording://",
                                 RATE_LIMIT_SESSIONS="100/hour;2/minute")
    codes = [client.post("/api/v1/sessions").status_code for _ in range(3)]
    assert codes == [201, 201, 429]
    counts = _counters(client)
    # per voter (both limits), then per network and new identities (the hour's and the ten
    # minutes'), each its own bucket even where the keys are the same network: the refused
    # third request counted in the limits up to the one that refused it, not in those after
    assert sorted(counts.values()) == [2, 2, 2, 3, 3]
    assert sum("new-identity" in key for key in counts) == 2
    assert not any("127.0.0.1" in key for key in counts)


def test_same_limits_per_voter_and_per_network_are_two_buckets(make_app):
    client = _client_of_campaign(make_app, RATELIMIT_ENABLED=True,
                                 RATE_LIMIT_SESSIONS="3/minute",
                                 RATE_LIMIT_NETWORK_SESSIONS="3/minute")
    # a client without a token is keyed on its network by both limits
    assert [client.post("/api/v1/sessions").status_code for _ in range(4)] == [201] * 3 + [429]


def test_a_voter_over_their_own_limit_does_not_spend_their_networks(make_app):
    """The attack: one voter behind a shared address (a school, a mobile carrier's NAT)
    keeps asking after their own limit refuses them. Their refused requests are not counted
    against the network, so the others behind it still get in."""
    spammer = _client_of_campaign(make_app, RATELIMIT_ENABLED=True,
                                  RATE_LIMIT_SESSIONS="3/minute",
                                  RATE_LIMIT_NETWORK_SESSIONS="6/minute",
                                  RATE_LIMIT_NEW_VOTERS="100/hour")
    token = spammer.post("/api/v1/sessions").json["voter_token"]
    headers = {"Authorization": f"Bearer {token}"}
    codes = [spammer.post("/api/v1/sessions", headers=headers).status_code
             for _ in range(20)]
    assert codes == [201] * 3 + [429] * 17
    neighbour = spammer.application.test_client()  # the same network, no identity yet
    assert neighbour.post("/api/v1/sessions").status_code == 201


def test_a_disabled_limiter_counts_nothing(make_app):
    client = _client_of_campaign(make_app, RATELIMIT_ENABLED=False, RATE_LIMIT_SESSIONS="1/minute",
                                 RATELIMIT_STORAGE_URI="arena-test-recording://")
    assert [client.post("/api/v1/sessions").status_code for _ in range(3)] == [201] * 3
    assert _counters(client) == {}


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


def test_guessing_bearer_tokens_on_the_api_is_limited_per_network(make_app):
    """Thirty made-up tokens got thirty 401s and no 429. Now a network that has sent the
    limit's worth of wrong tokens gets 429 on its next request with a token, the right one
    included, before the token is looked up; another network is not touched; requests
    without a token go on."""
    app = make_app(RATELIMIT_ENABLED=True, RATE_LIMIT_BAD_TOKENS="5/minute",
                   TRUSTED_PROXIES=1)
    with app.app_context():
        token = tokens.create_token("alice")  # an analyst's
    client = app.test_client()
    here = {"X-Forwarded-For": "198.51.100.7"}

    def models(guess, network=here):
        return client.get("/api/v1/matrix?criterion=preference", headers={
            "Authorization": f"Bearer {guess}", **network})

    assert [models(f"arena_guess{n}").status_code for n in range(5)] == [401] * 5
    refused = models(token)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    assert models("arena_guess-more").status_code == 429
    assert models(token, {"X-Forwarded-For": "203.0.113.9"}).status_code == 200
    assert client.get("/api/v1/leaderboard", headers=here).status_code == 200


class FlakyStorage(MemoryStorage):
    """A store that answers its ping but cannot count while ``down`` (a full or locked
    disk, a Redis that accepts connections and refuses writes)."""

    STORAGE_SCHEME: ClassVar[list[str]] = ["arena-test-flaky"]
    down = True

    def incr(self, key, expiry, amount=1):
        if FlakyStorage.down:
            raise ConnectionError("the store refuses writes")
        return super().incr(key, expiry, amount)

    def check(self):
        return True


def test_a_failing_store_is_tried_less_and_less_often_then_used_again(caplog):
    counters = Counters("arena-test-flaky://", fallback=True)
    FlakyStorage.down = True
    waits = []
    with caplog.at_level("WARNING"):
        for _ in range(5):
            count, store = counters.incr("k", 60)
            assert store is counters.fallback  # still counted: in this process's memory
            waits.append(counters.wait)
            counters.incr("k", 60)  # before the next try: not even attempted
            counters.next_try = 0  # (time passes)
        assert waits == [1, 2, 4, 8, 16]
        assert caplog.text.count("falling back to in-memory storage") == 1
        assert "recovered" not in caplog.text  # a ping that succeeds is not a recovery
        FlakyStorage.down = False
        count, store = counters.incr("k", 60)
    assert store is counters.store and count == 1 and counters.down_since is None
    assert caplog.text.count("Rate limit storage recovered") == 1


def test_without_the_fallback_a_failing_store_refuses_with_503(make_app):
    FlakyStorage.down = True
    app = make_app(RATELIMIT_ENABLED=True, RATELIMIT_STORAGE_URI="arena-test-flaky://",
                   RATELIMIT_IN_MEMORY_FALLBACK_ENABLED=False)
    with app.app_context():
        make_campaign()
    response = app.test_client().post("/api/v1/sessions")
    assert response.status_code == 503
    assert "rate limits cannot be counted" in response.json["error"]
    assert response.json["retry_after_ms"] == 5000
    FlakyStorage.down = False
    assert app.test_client().post("/api/v1/sessions").status_code == 201


def test_settings_of_flask_limiter_are_named_as_ignored(make_app, caplog):
    with caplog.at_level("WARNING"):
        make_app(RATELIMIT_DEFAULT="1/second")
    assert "Ignored rate-limit settings" in caplog.text and "RATELIMIT_DEFAULT" in caplog.text


def test_an_htmx_vote_over_the_limit_gets_a_card_not_a_whole_page(make_app):
    client = _client_of_campaign(make_app, RATELIMIT_ENABLED=True, RATE_LIMIT_VOTES="1/hour",
                                 VALIDATION_RATE=0.0, MIN_VOTE_MS={})
    form = {"csrf_token": csrf_token(client.get("/").text), "criterion": "preference"}
    html = client.get(client.post("/start", data=form).headers["Location"]).text
    replies = []
    for _ in range(2):
        replies.append(client.post(f"/t/{task_id(html)}", headers={"HX-Request": "true"},
                                   data={"csrf_token": csrf_token(html), "choice": "left"}))
        html = replies[-1].text if replies[-1].status_code == 200 else html
    assert [r.status_code for r in replies] == [200, 429]
    card = replies[1].text
    # swapped where the voting card was: the card alone, no second page inside the page
    assert card.lstrip().startswith("<section") and "<html" not in card
    assert "Too many requests" in card and 'href="/"' in card
    assert "Retry-After" in replies[1].headers


def test_a_newcomer_over_the_networks_budget_is_told_why_and_how_long_in_their_language(
        make_app):
    """A classroom behind one address: the newcomer after the budget gets a page in their
    language saying why they wait and for how long (the window's end, as Retry-After says),
    and the API says the same wait in milliseconds."""
    app = make_app(RATELIMIT_ENABLED=True, RATE_LIMIT_NEW_VOTERS="2/hour")
    with app.app_context():
        make_campaign()
    pages = []
    for _ in range(3):
        browser = app.test_client()
        token = csrf_token(browser.get("/").get_data(as_text=True))
        pages.append(browser.post("/start", data={"csrf_token": token},
                                  headers={"Accept-Language": "es"}))
    assert [p.status_code for p in pages] == [303, 303, 429]
    refused = pages[-1]
    minutes = -(-int(refused.headers["Retry-After"]) // 60)
    html = refused.get_data(as_text=True)
    assert 55 <= minutes <= 60 and f"Vuelve a intentarlo en unos {minutes} minutos." in html
    assert "Muchas personas de tu red han empezado a votar" in html
    api = app.test_client().post("/api/v1/sessions", json={})
    assert api.status_code == 429 and api.json["retry_after_ms"] >= 55 * 60_000
    assert api.json["error"] == "Too many new visitors from your network right now."
