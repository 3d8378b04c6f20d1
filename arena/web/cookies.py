"""The signed session cookie (Flask's), without its per-request set-up.

Flask's cookie sessions build an itsdangerous serializer on every request, even one that
carries no cookie: every JSON API request, which identifies by bearer token. Here the
serializer is made once per set of secret keys, a request that sent no session cookie
gets its empty session without one, a cookie verified once is known by its exact text
(its data kept while it holds only plain values, its age still checked: the signature
check and the decoding were 5% of an htmx vote), and a session nobody touched costs nothing
on the way out. The cookie's format, its signature and every ``SESSION_COOKIE_*`` setting are
Flask's: a cookie signed before reads the same after, and ``SECRET_KEY_FALLBACKS`` still
verifies cookies signed with an earlier key. Paired in one process
(benchmarks/request_cost.py's API flow), API requests' medians came out 0.8-2% lower.
"""

from __future__ import annotations

import time

from flask import Flask, Request, Response
from flask.sessions import SecureCookieSessionInterface, SessionMixin
from itsdangerous import BadSignature, URLSafeTimedSerializer

VERIFIED_LIMIT = 8192  # cookies kept verified (then started afresh; ~0.5 KB each)


class CookieSessions(SecureCookieSessionInterface):
    """Flask's signed-cookie sessions (see the module's docstring)."""

    def __init__(self) -> None:
        self._serializers: dict[tuple, URLSafeTimedSerializer] = {}
        # (the secret keys, the cookie) -> its data and when it was signed
        self._verified: dict[tuple[tuple, str], tuple[dict, float]] = {}

    def get_signing_serializer(self, app: Flask) -> URLSafeTimedSerializer | None:
        if not app.secret_key:
            return None
        return self._serializer(app, self._keys(app))

    def _serializer(self, app: Flask, keys: tuple) -> URLSafeTimedSerializer:
        serializer = self._serializers.get(keys)
        if serializer is None:
            if len(self._serializers) >= 8:  # (keys changed under a long-lived app: tests)
                self._serializers.clear()
            serializer = self._serializers[keys] = super().get_signing_serializer(app)
        return serializer

    @staticmethod
    def _keys(app: Flask) -> tuple:
        return (*(app.config["SECRET_KEY_FALLBACKS"] or ()), app.secret_key)

    def open_session(self, app: Flask, request: Request):
        if not app.secret_key:
            return None
        cookie = request.cookies.get(self.get_cookie_name(app))
        if not cookie:
            return self.session_class()
        max_age = int(app.permanent_session_lifetime.total_seconds())
        keys = self._keys(app)
        known = self._verified.get((keys, cookie))
        if known is None:
            try:
                data, signed = self._serializer(app, keys).loads(
                    cookie, max_age=max_age, return_timestamp=True)
            except BadSignature:  # (forged, or expired)
                return self.session_class()
            known = (data, signed.timestamp())
            if _flat(data):
                if len(self._verified) >= VERIFIED_LIMIT:
                    self._verified.clear()
                self._verified[keys, cookie] = known
        elif time.time() - known[1] > max_age:
            return self.session_class()  # (expired since it was verified)
        return self.session_class(known[0])  # (a copy: this request may change it)

    def save_session(self, app: Flask, session: SessionMixin, response: Response) -> None:
        if not session and not session.modified and not session.accessed:
            return  # (no cookie to set or delete, and none read: not even a Vary)
        super().save_session(app, session, response)


def _flat(data) -> bool:
    """Whether ``data`` holds only immutable values, so a shallow copy of it is a copy."""
    return isinstance(data, dict) and all(
        value is None or isinstance(value, str | int | float | bool) for value in data.values())
