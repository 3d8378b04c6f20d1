"""Errors on the web: each domain error kind maps to one HTTP status, here and nowhere else.

JSON under ``/api/``, the error page elsewhere. A form view that should show a refused
request on the page it came from wraps itself in :func:`renders_errors` instead of catching.
"""

from __future__ import annotations

from functools import wraps

from flask import Flask, current_app, jsonify, render_template, request
from flask_wtf.csrf import CSRFError
from sqlalchemy.exc import OperationalError, ProgrammingError

from arena.errors import (
    ArenaError,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    Rejected,
    Unauthorized,
    Unavailable,
    kind_of,
)
from arena.extensions import db
from arena.infra.database import database_outage
from arena.web import proof
from arena.web.limits import NewVotersWait
from arena.web.requests import is_htmx

STATUS = {
    Invalid: 400,
    Rejected: 422,
    Unauthorized: 401,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    Unavailable: 503,
    ArenaError: 400,
}


def status_for(exc: ArenaError) -> int:
    return STATUS[kind_of(exc)]


def wants_json() -> bool:
    return request.path.startswith("/api/")


# HTTP's own errors: their words say no more than the page's translated heading
GENERIC = {
    400: "Bad request.",
    404: "Not found.",
    405: "Method not allowed.",
    500: "Something went wrong on our side. Please try again.",
}


def error_response(status: int, message: str, **extra):
    """The one shape of an error: ``{"error": message, ...}`` on the API, the page elsewhere."""
    if wants_json():
        return jsonify(error=message, **extra), status
    # htmx swaps the answer where the voting card was: the card alone, not a page in a page
    template = "_error_card.html" if is_htmx() else "error.html"
    return render_template(template, status=status, message=message,
                           detail=message not in GENERIC.values()), status


def renders_errors(render):
    """Let a form view show a refused request on its own page: a domain error raised by the
    view rolls the transaction back and becomes ``render(exc, status, *view_args)``."""

    def decorator(view):
        @wraps(view)
        def wrapped(*args, **kwargs):
            try:
                return view(*args, **kwargs)
            except ArenaError as exc:
                db.session.rollback()
                return render(exc, status_for(exc), *args, **kwargs)

        return wrapped

    return decorator


def captcha_policy(origin: str) -> str:
    """The Content-Security-Policy with a captcha provider's script, frame, style and
    connections allowed as its documentation asks (``origin``: one or more sources)."""
    from arena.web.headers import SECURITY_HEADERS

    policy = SECURITY_HEADERS["Content-Security-Policy"]
    for directive in ("script-src", "style-src", "connect-src"):
        policy = policy.replace(f"{directive} 'self'", f"{directive} 'self' {origin}")
    return f"{policy}; frame-src {origin}"


def register(app: Flask) -> None:
    """Install the handlers: domain errors by kind, HTTP errors, database outages."""

    @app.errorhandler(ArenaError)
    def domain_error(exc: ArenaError):
        db.session.rollback()
        details = {k: v for k, v in exc.as_dict().items() if k != "error"}
        return error_response(status_for(exc), exc.message, **details)

    for status, message in GENERIC.items():
        app.register_error_handler(status, lambda exc, s=status, m=message: error_response(s, m))

    @app.errorhandler(429)
    def too_many(exc):
        wait = exc.retry_after if isinstance(exc.retry_after, int) else None
        newcomer = isinstance(exc, NewVotersWait)
        message = ("Too many new visitors from your network right now." if newcomer
                   else "Too many requests, please slow down.")
        # a newcomer from a busy network may prove work instead of waiting (arena.web.proof)
        challenge = proof.challenge() if newcomer and proof.enabled() else None
        captcha = proof.captcha() if newcomer else None
        if wants_json():
            extra = {"retry_after_ms": wait * 1000} if wait else {}
            if challenge:
                extra["proof_challenge"] = challenge
            return jsonify(error=message, **extra), 429
        template = "_error_card.html" if is_htmx() else "error.html"
        page = render_template(template, status=429, message=message, wait_minutes=(
            -(-wait // 60) if wait else None), new_identity=newcomer, challenge=challenge,
            captcha=captcha, site_key=current_app.config["CAPTCHA_SITE_KEY"],
            resend={k: v for k, v in request.values.items()
                    if k not in (proof.FIELD, "csrf_token", *(c.field for c in
                                                              proof.CAPTCHAS.values()))})
        headers = {}
        if captcha is not None:  # (its script and frame on this page alone)
            headers["Content-Security-Policy"] = captcha_policy(captcha.origin)
        return page, 429, headers

    @app.errorhandler(413)
    def too_large(exc):
        limit = current_app.config["MAX_CONTENT_LENGTH"] // (1024 * 1024)
        return error_response(413, f"Upload too large: at most {limit} MB per request.")

    @app.errorhandler(CSRFError)
    def csrf_failed(exc):
        return error_response(400, "Your form expired. Please go back, reload the page and "
                              "try again.")

    @app.errorhandler(OperationalError)
    @app.errorhandler(ProgrammingError)
    def database_error(exc):
        app.logger.error("database error: %s", exc)
        return error_response(503, database_outage(exc).message)
