"""Cookies marked ``Secure`` on every HTTPS request, whatever sets them.

Flask's ``SESSION_COOKIE_SECURE`` is one setting for the whole process, so a server reached
over HTTPS (directly, or behind ``TRUSTED_PROXIES`` proxies saying so in X-Forwarded-Proto)
sent its session cookie without ``Secure`` unless the operator remembered the setting. This
WSGI middleware sits inside ProxyFix, so it sees the scheme the client used, and adds
``Secure`` to each ``Set-Cookie`` of a response to an HTTPS request. Plain HTTP (a laptop
demo) keeps working: its cookies are left as the app wrote them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


def secured(value: str) -> str:
    """A ``Set-Cookie`` value with the ``Secure`` attribute (unchanged if it has one)."""
    attributes = [part.strip().lower() for part in value.split(";")[1:]]
    return value if "secure" in attributes else f"{value}; Secure"


class SecureCookies:
    """WSGI middleware: ``Secure`` on every cookie set in reply to an HTTPS request."""

    def __init__(self, app: Callable):
        self.app = app

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        if environ.get("wsgi.url_scheme") != "https":
            return self.app(environ, start_response)

        def start(status, headers, exc_info=None):
            headers = [(name, secured(value) if name.lower() == "set-cookie" else value)
                       for name, value in headers]
            return start_response(status, headers, exc_info)

        return self.app(environ, start)
