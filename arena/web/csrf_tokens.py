"""The CSRF token a page carries, signed once per voter and kept, not signed afresh for
every response.

Flask-WTF signs the session's raw token (a timestamped HMAC, its serializer built anew) the
first time a request renders ``csrf_token()``: on the htmx voter flow that is every card,
a tenth of a caption confirmation's server time (py-spy, benchmarks/request_cost.py
--html). A token is not single-use: any token signed for the session is accepted until it
expires (``WTF_CSRF_TIME_LIMIT``; Arena's default ties it to the session cookie instead),
so the one signed last for this raw token is handed out again while it has at least nine
tenths of its life left. Kept per app and signing key, at most ``KEPT_LIMIT`` tokens.
"""

from __future__ import annotations

import time

from flask import Flask, current_app, g, session
from flask_wtf.csrf import generate_csrf

KEPT_LIMIT = 8192  # (then started afresh: an anonymous visitor makes one, ~0.5 KB)
_KEPT = "arena_csrf_signed"


def csrf_token() -> str:
    """The template's ``csrf_token()``: Flask-WTF's token for this session, as
    :func:`flask_wtf.csrf.generate_csrf` gives it, reused while young enough."""
    field = current_app.config.get("WTF_CSRF_FIELD_NAME", "csrf_token")
    if field in g:
        return g.get(field)
    kept: dict = current_app.extensions[_KEPT]
    # (keyed by the signing key too: a key changed in a running app signs afresh)
    key = current_app.config.get("WTF_CSRF_SECRET_KEY") or current_app.secret_key
    raw = session.get(field)
    limit = current_app.config.get("WTF_CSRF_TIME_LIMIT")
    now = time.time()
    if raw is not None:
        signed = kept.get((key, raw))
        if signed is not None and (limit is None or now - signed[1] < limit / 10):
            setattr(g, field, signed[0])
            return signed[0]
    token = generate_csrf()
    if len(kept) >= KEPT_LIMIT:
        kept.clear()
    kept[key, session[field]] = (token, now)
    return token


def init_app(app: Flask) -> None:
    """After Flask-WTF's ``CSRFProtect.init_app``: templates get :func:`csrf_token`."""
    app.extensions[_KEPT] = {}
    app.jinja_env.globals["csrf_token"] = csrf_token
    # (Flask-WTF also puts its own in every template's context: this one, later, wins)
    app.context_processor(lambda: _CONTEXT)


_CONTEXT = {"csrf_token": csrf_token}
