"""The session cookie: Flask's own signed cookie with the attributes Arena configures
(HttpOnly, SameSite=Lax, a year's lifetime, Secure when asked). A rotated key keeps
verifying through SECRET_KEY_FALLBACKS until dropped, a forged, tampered or expired cookie
opens an empty session, and token requests carry no cookie."""

from __future__ import annotations

import time
from datetime import timedelta

from flask import request
from flask.sessions import SecureCookieSessionInterface

from .helpers import api_session, bearer, start_session


def _opened(app, cookie: str) -> dict:
    with app.test_request_context("/", headers={"Cookie": f"session={cookie}"}):
        return dict(app.session_interface.open_session(app, request))


def _flask_cookie(app, data: dict) -> str:
    return SecureCookieSessionInterface().get_signing_serializer(app).dumps(data)


def test_the_voters_cookie_is_flasks_signed_cookie_with_arenas_attributes(
        app, client, web_campaign):
    response = start_session(client)
    assert response.status_code == 303
    set_cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in set_cookie and "SameSite=Lax" in set_cookie
    assert "Secure" not in set_cookie and "Expires=" in set_cookie  # (permanent: a year)
    ours = client.get_cookie("session").value
    stock = SecureCookieSessionInterface().get_signing_serializer(app)
    voter = stock.loads(ours)["voter"]  # what the app signed, Flask verifies
    assert _opened(app, _flask_cookie(app, {"voter": voter}))["voter"] == voter


def test_the_cookie_is_secure_when_configured(make_app, web_campaign):
    client = make_app(SESSION_COOKIE_SECURE=True).test_client()
    set_cookie = start_session(client).headers["Set-Cookie"]
    assert "Secure" in set_cookie and "HttpOnly" in set_cookie


def test_a_rotated_key_verifies_through_the_fallbacks_until_dropped(app):
    cookie = _flask_cookie(app, {"voter": "abc"})
    assert _opened(app, cookie) == {"voter": "abc"}
    app.config["SECRET_KEY_FALLBACKS"] = [app.config["SECRET_KEY"]]
    app.config["SECRET_KEY"] = "the-next-secret"
    assert _opened(app, cookie) == {"voter": "abc"}
    app.config["SECRET_KEY_FALLBACKS"] = []
    assert _opened(app, cookie) == {}


def test_a_forged_tampered_or_expired_cookie_opens_an_empty_session(app, monkeypatch):
    cookie = _flask_cookie(app, {"voter": "abc", "lang": "es"})
    assert _opened(app, cookie) == {"voter": "abc", "lang": "es"}
    payload, _, signature = cookie.rpartition(".")
    assert _opened(app, payload + "." + signature[::-1]) == {}
    assert _opened(app, cookie[:-2] + ("AA" if not cookie.endswith("AA") else "BB")) == {}
    other = SecureCookieSessionInterface().get_signing_serializer(
        type("App", (), {"secret_key": "guessed", "config": {"SECRET_KEY_FALLBACKS": []}})())
    assert _opened(app, other.dumps({"voter": "abc"})) == {}
    app.permanent_session_lifetime = timedelta(seconds=60)
    signed_long_ago = time.time() - 61
    with monkeypatch.context() as patched:
        patched.setattr(time, "time", lambda: signed_long_ago)
        old = _flask_cookie(app, {"voter": "abc"})
    assert _opened(app, old) == {}
    assert _opened(app, _flask_cookie(app, {"voter": "abc"})) == {"voter": "abc"}


def test_token_requests_get_no_cookie(make_app, web_campaign):
    client = make_app(REVEAL_WORD_MS=0).test_client()  # (a caption confirmed at once)
    response = api_session(client)
    assert response.status_code == 201
    assert "Set-Cookie" not in response.headers
    body = response.get_json()
    task = body["tasks"][0]
    if task["prompt"] is not None:
        client.post(f"/api/v1/tasks/{task['task_id']}/read", headers=bearer(body["voter_token"]))
    vote = client.post(f"/api/v1/tasks/{task['task_id']}/vote",
                       headers=bearer(body["voter_token"]), json={"choice": "left"})
    assert vote.status_code == 201
    assert "Set-Cookie" not in vote.headers
