"""Rate limits: per network (a keyed hash of its prefix, never the address) and per voter,
so that neither many identities on one network nor one identity on many networks goes far.

* ``per_network`` and ``per_voter`` wrap a route with a limit from the configuration.
* ``new_identity`` counts, per network and across every route that can create a voter
  (the voter start page, the API's sessions, HYPE stages, a panel's join link), only the
  requests that would create one: a new identity costs more than one request.

An identity is what the route itself reads: the bearer token on the JSON API, the signed
cookie everywhere else, and only when it belongs to a voter who exists. A made-up token on a
cookie route (or a cookie naming nobody) is no identity: it neither lifts the new-identity
limit nor gets a per-voter bucket of its own.

The counting is the `limits <https://limits.readthedocs.io>`_ library's fixed windows, in
the store ``RATELIMIT_STORAGE_URI`` names (``memory://``, one process's, by default; Redis
across processes), one increment per limit and request and nothing else: this sits on every
vote, and Flask-Limiter, which did the same job before, cost a vote 11% of its server time
in its own Python (benchmarks/request_cost.py). Each limit has one bucket per key and route
(``new_identity`` one per key across its routes). A refused request gets 429 with
``Retry-After``; every limited response says ``X-RateLimit-Limit`` and
``X-RateLimit-Remaining`` of its tightest limit. A request one limit refuses is not
counted by the limits after it. When the store fails (Redis down), each
process counts in its own memory meanwhile, logs it, and tries the store again with a real
increment after 1, 2, 4, ... up to 60 seconds; with ``RATELIMIT_IN_MEMORY_FALLBACK_ENABLED``
off, limited requests get 503 meanwhile. ``X-RateLimit-Reset`` comes with a 429 only (on
other responses it would cost a read of the store per limit).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import threading
import time
from functools import cache, wraps

from flask import Flask, current_app, g, request, session
from limits import RateLimitItem, parse_many
from limits.storage import MemoryStorage, Storage, storage_from_string
from werkzeug.exceptions import TooManyRequests

from arena.errors import Unavailable
from arena.web import proof
from arena.web.requests import bearer_token, request_network, request_voter

log = logging.getLogger(__name__)
MAX_RETRY_SECONDS = 60
SETTINGS = {"RATELIMIT_ENABLED", "RATELIMIT_STORAGE_URI", "RATELIMIT_STORAGE_OPTIONS",
            "RATELIMIT_KEY_PREFIX", "RATELIMIT_HEADERS_ENABLED",
            "RATELIMIT_IN_MEMORY_FALLBACK_ENABLED"}


class NewVotersWait(TooManyRequests):
    """The network's new-identity budget is spent: its next newcomer waits (its page says
    why, and how long)."""


def shared_storage(uri: str) -> bool:
    """Whether limits stored at ``uri`` are shared between processes (not ``memory://``)."""
    return not (uri or "memory://").startswith("memory://")


class Counters:
    """The app's counter store, with the in-memory stand-in for when it fails."""

    def __init__(self, uri: str, fallback: bool, options: dict | None = None):
        self.store: Storage = storage_from_string(uri, **(options or {}))
        self.fallback = MemoryStorage() if fallback else None
        self.lock = threading.Lock()
        self.down_since: float | None = None  # while the store is failing
        self.next_try = 0.0
        self.wait = 1.0

    def incr(self, key: str, expiry: int) -> tuple[int, Storage]:
        """The key's count after this request, and the store that counted it."""
        if not self._worth_trying():
            return self.fallback.incr(key, expiry), self.fallback
        try:
            count = self.store.incr(key, expiry)
        except Exception as exc:
            self._failed(exc)
            if self.fallback is None:
                raise Unavailable("rate limits cannot be counted right now: please retry "
                                  "in a few seconds", retry_after_ms=5000) from exc
            return self.fallback.incr(key, expiry), self.fallback
        if self.down_since is not None:
            with self.lock:
                if self.down_since is not None:
                    log.warning("Rate limit storage recovered: counting in it again")
                    self.down_since = None
        return count, self.store

    def get(self, key: str) -> int:
        """The key's count so far (0 when the store cannot say)."""
        if not self._worth_trying():
            return self.fallback.get(key)
        try:
            return self.store.get(key)
        except Exception as exc:
            self._failed(exc)
            return self.fallback.get(key) if self.fallback is not None else 0

    def _worth_trying(self) -> bool:
        """Whether to use the store: it is up, or it is time to try it again (one thread
        of the process tries; a real increment is the probe, so a store that answers a
        ping but cannot count stays down and is tried less and less often)."""
        if self.down_since is None or self.fallback is None:
            return True
        with self.lock:
            now = time.monotonic()
            if self.down_since is None or now >= self.next_try:
                self.next_try = now + self.wait
                return True
            return False

    def _failed(self, exc: Exception) -> None:
        with self.lock:
            if self.down_since is None:
                log.warning("Rate limit storage unreachable (%s) - falling back to "
                            "in-memory storage", exc)
                self.down_since = time.monotonic()
                self.wait = 1.0
            else:
                self.wait = min(2 * self.wait, MAX_RETRY_SECONDS)
            self.next_try = time.monotonic() + self.wait


def init_app(app: Flask) -> None:
    config = app.config
    app.extensions["arena_limits"] = Counters(
        config["RATELIMIT_STORAGE_URI"], config.get("RATELIMIT_IN_MEMORY_FALLBACK_ENABLED", True),
        config.get("RATELIMIT_STORAGE_OPTIONS"))

    ignored = sorted(k for k in config if k.startswith("RATELIMIT_") and k not in SETTINGS)
    if ignored:
        log.warning("Ignored rate-limit settings (Flask-Limiter's, not Arena's): %s",
                    ", ".join(ignored))

    @app.before_request
    def refuse_a_guessing_network():
        """A network that sent too many wrong bearer tokens to the API gets 429 before its
        next token is even looked up (RATE_LIMIT_BAD_TOKENS): tokens cannot be guessed
        at the server's speed."""
        if request.blueprint == "api" and _counting() and bearer_token():
            over("RATE_LIMIT_BAD_TOKENS", network_key(), BAD_TOKENS)

    @app.after_request
    def count_wrong_tokens(response):
        if (response.status_code == 401 and request.blueprint == "api" and _counting()
                and bearer_token()):
            with contextlib.suppress(TooManyRequests):  # (this answer is given: a 401)
                check(current_app.config["RATE_LIMIT_BAD_TOKENS"], network_key(), BAD_TOKENS)
        return response

    @app.after_request
    def rate_limit_headers(response):
        g.pop("arena_identity", None)
        tightest = g.pop("arena_rate_limit", None)
        if tightest is not None and current_app.config.get("RATELIMIT_HEADERS_ENABLED", True):
            item, count = tightest
            response.headers["X-RateLimit-Limit"] = str(item.amount)
            response.headers["X-RateLimit-Remaining"] = str(max(0, item.amount - count))
        retry = g.pop("arena_retry_after", None)
        if retry is not None:
            response.headers["Retry-After"] = str(retry)
            response.headers["X-RateLimit-Reset"] = str(int(time.time()) + retry)
        return response


@cache
def _parsed(text: str) -> tuple[RateLimitItem, ...]:
    return tuple(parse_many(text))


def check(text: str, key: str, scope: str) -> None:
    """Count one request against each limit of ``text`` (e.g. "60/hour;5/minute") for
    ``key`` on ``scope``; 429 once one of them is over."""
    counters: Counters = current_app.extensions["arena_limits"]
    prefix = current_app.config.get("RATELIMIT_KEY_PREFIX") or ""
    for item in _parsed(text):
        bucket = item.key_for(prefix, key, scope) if prefix else item.key_for(key, scope)
        count, store = counters.incr(bucket, item.get_expiry())
        tightest = g.get("arena_rate_limit")
        if tightest is None or item.amount - count < tightest[0].amount - tightest[1]:
            g.arena_rate_limit = (item, count)
        if count > item.amount:
            g.arena_retry_after = max(1, math.ceil(_window_end(store, bucket) - time.time()))
            log.info("rate limit %s exceeded on %s", item, scope)
            refused = NewVotersWait if scope == "new-identity" else TooManyRequests
            raise refused(retry_after=g.arena_retry_after)


BAD_TOKENS = "bad-token"


def _counting() -> bool:
    return current_app.config.get("RATELIMIT_ENABLED", True)


def over(setting: str, key: str, scope: str) -> None:
    """429 when one of the limits of ``setting`` is already spent for ``key`` on ``scope``
    (counted elsewhere: :func:`check` on the requests that spend it)."""
    counters: Counters = current_app.extensions["arena_limits"]
    prefix = current_app.config.get("RATELIMIT_KEY_PREFIX") or ""
    for item in _parsed(current_app.config[setting]):
        bucket = item.key_for(prefix, key, scope) if prefix else item.key_for(key, scope)
        if counters.get(bucket) >= item.amount:
            g.arena_retry_after = max(1, math.ceil(
                _window_end(counters.store, bucket) - time.time()))
            raise TooManyRequests(retry_after=g.arena_retry_after)


def _window_end(store: Storage, bucket: str) -> float:
    try:
        return store.get_expiry(bucket)
    except Exception:  # (the store failed since it counted): a second's wait
        return time.time() + 1


def _limited(setting: str, key_func):
    def decorator(view):
        # the setting too: a per-voter limit keyed on the network (no identity yet) and the
        # per-network limit of the same route and amount must not share a bucket
        bucket = f"{view.__module__}.{view.__name__}/{setting}"

        @wraps(view)
        def wrapped(*args, **kwargs):
            config = current_app.config
            if config.get("RATELIMIT_ENABLED", True):
                check(config[setting], key_func(), bucket)
            return view(*args, **kwargs)

        return wrapped

    return decorator


def network_key() -> str:
    return "n:" + request_network()


def _identity() -> str | None:
    """The key of the existing voter this route identifies (cached for the request)."""
    if "arena_identity" in g:
        return g.arena_identity
    key = None
    if request_voter() is not None:
        if request.blueprint == "api":
            key = "t:" + hashlib.sha256(bearer_token().encode()).hexdigest()[:32]
        else:
            key = "v:" + hashlib.sha256(str(session.get("voter")).encode()).hexdigest()[:32]
    g.arena_identity = key
    return key


def voter_key() -> str:
    """The existing voter making the request, else their network."""
    return _identity() or network_key()


def has_identity() -> bool:
    return _identity() is not None


def per_network(setting: str):
    return _limited(setting, network_key)


def per_voter(setting: str):
    return _limited(setting, voter_key)


def new_identity(returning=None):
    """The new-identity limit: counted unless the request carries an existing voter's
    identity, or ``returning()`` (a route's own test that it names an existing voter, in
    place of the identity the request carries) says so. A newcomer with a proof of work
    (:mod:`arena.web.proof`) is counted on the network's budget of proven newcomers."""
    existing = returning or has_identity

    def decorator(view):
        @wraps(view)
        def wrapped(*args, **kwargs):
            config = current_app.config
            if config.get("RATELIMIT_ENABLED", True) and not existing():
                if proof.proven():
                    check(config["RATE_LIMIT_PROVEN_VOTERS"], network_key(), "proven-identity")
                else:
                    check(config["RATE_LIMIT_NEW_VOTERS"], network_key(), "new-identity")
            return view(*args, **kwargs)

        return wrapped

    return decorator
