"""Rate limits: per network (a keyed hash of its prefix, never the address) and per voter,
so that neither many identities on one network nor one identity on many networks goes far.

* ``per_network`` and ``per_voter`` wrap a route with a limit from the configuration.
* ``new_identity`` counts, per network and across every route that can create a voter
  (the voter start page, the API's sessions, HYPE stages), only the requests that would
  create one: a new identity costs more than one request.

An identity is what the route itself reads: the bearer token on the JSON API, the signed
cookie everywhere else, and only when it belongs to a voter who exists. A made-up token on a
cookie route (or a cookie naming nobody) is no identity: it neither lifts the new-identity
limit nor gets a per-voter bucket of its own.

The counting is the `limits <https://limits.readthedocs.io>`_ library's fixed windows, in
the store ``RATELIMIT_STORAGE_URI`` names (arena.infra.ratelimit_store by default, Redis
across machines), one increment per limit and request and nothing else: this sits on every
vote, and Flask-Limiter, which did the same job before, cost a vote 11% of its server time
in its own Python (benchmarks/request_cost.py). Each limit has one bucket per key and route
(``new_identity`` one per key across its routes). A refused request gets 429 with
``Retry-After``; every limited response says ``X-RateLimit-Limit`` and
``X-RateLimit-Remaining`` of its tightest limit. A request one limit refuses is not
counted by the limits after it. When the store fails (Redis down), each
process counts in its own memory meanwhile, logs it, and tries the store again after 1, 2,
4, ... up to 60 seconds.
"""

from __future__ import annotations

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

from arena.infra.network import network_hash
from arena.voting import voters
from arena.web.requests import bearer_token

log = logging.getLogger(__name__)
MAX_RETRY_SECONDS = 60


def shared_storage(uri: str) -> bool:
    """Whether limits stored at ``uri`` are shared between processes (not ``memory://``)."""
    return not (uri or "memory://").startswith("memory://")


class Counters:
    """The app's counter store, with the in-memory stand-in for when it fails."""

    def __init__(self, uri: str, fallback: bool, options: dict | None = None):
        self.store: Storage = storage_from_string(uri, **(options or {}))
        self.fallback = MemoryStorage() if fallback else None
        self.lock = threading.Lock()
        self.failed_at: float | None = None  # when the store last failed, while it is down
        self.retry_after = 1.0

    def incr(self, key: str, expiry: int) -> int:
        if self.failed_at is not None and not self._recovered():
            return self.fallback.incr(key, expiry)
        try:
            return self.store.incr(key, expiry)
        except Exception as exc:
            if self.fallback is None:
                raise
            with self.lock:
                if self.failed_at is None:
                    log.warning("Rate limit storage unreachable (%s) - falling back to "
                                "in-memory storage", exc)
                    self.retry_after = 1.0
                self.failed_at = time.monotonic()
            return self.fallback.incr(key, expiry)

    def _recovered(self) -> bool:
        with self.lock:
            if time.monotonic() - self.failed_at < self.retry_after:
                return False
            self.failed_at = time.monotonic()  # one process thread probes at a time
            self.retry_after = min(2 * self.retry_after, MAX_RETRY_SECONDS)
        try:
            alive = self.store.check()
        except Exception:
            alive = False
        if alive:
            log.warning("Rate limit storage recovered: counting in it again")
            self.failed_at = None
        return alive

    def expiry(self, key: str) -> float:
        store = self.fallback if self.failed_at is not None else self.store
        try:
            return store.get_expiry(key)
        except Exception:
            return time.time() + 1


def init_app(app: Flask) -> None:
    config = app.config
    app.extensions["arena_limits"] = Counters(
        config["RATELIMIT_STORAGE_URI"], config.get("RATELIMIT_IN_MEMORY_FALLBACK_ENABLED", True),
        config.get("RATELIMIT_STORAGE_OPTIONS"))

    @app.after_request
    def rate_limit_headers(response):
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
        count = counters.incr(bucket, item.get_expiry())
        tightest = g.get("arena_rate_limit")
        if tightest is None or item.amount - count < tightest[0].amount - tightest[1]:
            g.arena_rate_limit = (item, count)
        if count > item.amount:
            g.arena_retry_after = max(1, math.ceil(counters.expiry(bucket) - time.time()))
            log.info("rate limit %s exceeded on %s", item, scope)
            raise TooManyRequests()


def _limited(setting: str, key_func, scope: str | None = None, exempt_when=None):
    def decorator(view):
        # the setting too: a per-voter limit keyed on the network (no identity yet) and the
        # per-network limit of the same route and amount must not share a bucket
        bucket = scope or f"{view.__module__}.{view.__name__}/{setting}"

        @wraps(view)
        def wrapped(*args, **kwargs):
            config = current_app.config
            if config.get("RATELIMIT_ENABLED", True) and not (exempt_when and exempt_when()):
                check(config[setting], key_func(), bucket)
            return view(*args, **kwargs)

        return wrapped

    return decorator


def network_key() -> str:
    return "n:" + network_hash(current_app.config["SECRET_KEY"], request.remote_addr)


def _uses_tokens() -> bool:
    return request.blueprint == "api"


def _identity() -> str | None:
    """The key of the existing voter this route identifies (cached for the request)."""
    if "arena_identity" in g:
        return g.arena_identity
    key = None
    if _uses_tokens():
        token = bearer_token()
        if voters.voter_by_token(token) is not None:
            key = "t:" + hashlib.sha256(token.encode()).hexdigest()[:32]
    else:
        public_id = session.get("voter")
        if voters.voter_by_public_id(public_id) is not None:
            key = "v:" + hashlib.sha256(str(public_id).encode()).hexdigest()[:32]
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


def new_identity():
    return _limited("RATE_LIMIT_NEW_VOTERS", network_key, scope="new-identity",
                    exempt_when=has_identity)
