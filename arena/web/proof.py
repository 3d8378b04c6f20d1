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

An operator who prefers a third party's check sets ``NEW_VOTER_CAPTCHA`` to ``turnstile``
(Cloudflare) or ``hcaptcha`` with the site's ``CAPTCHA_SITE_KEY`` and
``CAPTCHA_SECRET_KEY``: the refusal page then shows that provider's widget (its script and
frame allowed on that page alone), and the token it adds to the form is checked with the
provider's siteverify endpoint (the secret and the token; never the voter's address).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass

import altcha
from flask import current_app, g, request

FIELD = "arena_proof"
HEADER = "Arena-Proof"


@dataclass(frozen=True)
class Captcha:
    """A third party's check, as its documentation describes it."""

    name: str
    origin: str  # where its script and frame come from (the page's CSP allows it)
    script: str
    widget_class: str  # the element its script turns into the widget
    field: str  # the form field its widget adds the token in
    verify_url: str


CAPTCHAS = {
    "turnstile": Captcha("turnstile", "https://challenges.cloudflare.com",
                         "https://challenges.cloudflare.com/turnstile/v0/api.js",
                         "cf-turnstile", "cf-turnstile-response",
                         "https://challenges.cloudflare.com/turnstile/v0/siteverify"),
    "hcaptcha": Captcha("hcaptcha", "https://*.hcaptcha.com https://hcaptcha.com",
                        "https://js.hcaptcha.com/1/api.js", "h-captcha", "h-captcha-response",
                        "https://api.hcaptcha.com/siteverify"),
}


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


def captcha() -> Captcha | None:
    """The third party's check the operator configured (with both keys), or None."""
    config = current_app.config
    if not (config["CAPTCHA_SITE_KEY"] and config["CAPTCHA_SECRET_KEY"]):
        return None
    return CAPTCHAS.get(config["NEW_VOTER_CAPTCHA"] or "")


def proven() -> bool:
    """Whether the request carries the answer to one of our challenges, not expired and
    not used before (this request uses it up), or a token the configured captcha's
    provider confirms; cached for the request."""
    if "arena_proven" not in g:
        check = captcha()
        g.arena_proven = (enabled() and _check(request.headers.get(HEADER)
                                               or request.values.get(FIELD))) or (
            check is not None and _confirmed(check, request.values.get(check.field)))
    return g.arena_proven


def _confirmed(check: Captcha, token: str | None) -> bool:
    """Whether ``check``'s provider confirms ``token`` (it accepts each token once). A
    provider that does not answer in time confirms nothing: the newcomer waits, as without
    a check."""
    if not token or len(token) > 4096:
        return False
    config = current_app.config
    body = urllib.parse.urlencode({"secret": config["CAPTCHA_SECRET_KEY"],
                                   "response": token}).encode()
    url = config["CAPTCHA_VERIFY_URL"] or check.verify_url
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=5) as answer:
            verdict = json.loads(answer.read(65_536))
    except (OSError, ValueError):  # (URLError and timeouts are OSErrors)
        current_app.logger.warning("%s siteverify did not answer", check.name)
        return False
    return isinstance(verdict, dict) and verdict.get("success") is True


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
