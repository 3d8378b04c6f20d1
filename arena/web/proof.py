"""A proof of work for newcomers from a busy network, so a classroom or a carrier's shared
address is not turned away by the budget that keeps one person from voting under many names.

When a network's new-identity budget (``RATE_LIMIT_NEW_VOTERS``) is spent and
``NEW_VOTER_PROOF`` is on, the refusal carries a challenge (:func:`challenge`): ALTCHA's
proof of work (v2, iterated SHA-256, signed with a key derived from ``SECRET_KEY``; made and
checked by the ``altcha`` library, no third party asked) that the voter's page answers in a
few seconds. A request that carries the answer (form field ``arena_proof`` or header
``Arena-Proof``: ALTCHA's base64 payload) is counted on the network's budget of proven
newcomers (``RATE_LIMIT_PROVEN_VOTERS``) instead (:func:`proven`). Each challenge admits one
newcomer, for ``NEW_VOTER_PROOF_MINUTES``.
"""

from __future__ import annotations

import hashlib
import hmac
import time

import altcha
from flask import current_app, g, request

FIELD = "arena_proof"
HEADER = "Arena-Proof"


def enabled() -> bool:
    return bool(current_app.config["NEW_VOTER_PROOF"])


def _secret() -> bytes:
    return hmac.new(current_app.config["SECRET_KEY"].encode(), b"arena proof of work",
                    hashlib.sha256).digest()


def challenge() -> dict:
    """A new challenge, as ALTCHA's clients take it."""
    config = current_app.config
    made = altcha.create_challenge(
        "SHA-256", 1, key_prefix=config["NEW_VOTER_PROOF_PREFIX"], hmac_secret=_secret(),
        expires_at=int(time.time() + 60 * config["NEW_VOTER_PROOF_MINUTES"]))
    return made.to_dict()


def proven() -> bool:
    """Whether the request carries the answer to one of our challenges, not expired and
    not used before (this request uses it up); cached for the request."""
    if "arena_proven" not in g:
        g.arena_proven = enabled() and _check(request.headers.get(HEADER)
                                              or request.values.get(FIELD))
    return g.arena_proven


def _check(payload: str | None) -> bool:
    if not payload or len(payload) > 4096:
        return False
    try:
        parsed = altcha.Payload.from_base64(payload)
        answer = altcha.verify_solution(parsed, _secret())
    except (ValueError, KeyError, TypeError, AttributeError):
        return False
    if not answer.verified:
        return False
    left = int(parsed.challenge.parameters.expires_at - time.time())
    counters = current_app.extensions["arena_limits"]
    count, _ = counters.incr(f"proof/{parsed.challenge.signature}", max(left, 1))
    return count == 1
