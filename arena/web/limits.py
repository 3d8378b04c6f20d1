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
"""

from __future__ import annotations

import hashlib

from flask import current_app, g, request, session

from arena.extensions import limiter
from arena.infra.network import network_hash
from arena.voting import voters
from arena.web.requests import bearer_token


def shared_storage(uri: str) -> bool:
    """Whether limits stored at ``uri`` are shared between processes (not ``memory://``)."""
    return not (uri or "memory://").startswith("memory://")


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
    return limiter.limit(lambda: current_app.config[setting], key_func=network_key)


def per_voter(setting: str):
    return limiter.limit(lambda: current_app.config[setting], key_func=voter_key)


def new_identity():
    return limiter.shared_limit(lambda: current_app.config["RATE_LIMIT_NEW_VOTERS"],
                                scope="new-identity", key_func=network_key,
                                exempt_when=has_identity)
