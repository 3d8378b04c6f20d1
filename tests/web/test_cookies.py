"""The session cookie (arena.web.cookies): Flask's signed cookie, its serializer made once.
The format and the signature must stay Flask's, a rotated key must keep verifying through
SECRET_KEY_FALLBACKS and stop once it is dropped, and token requests carry no cookie."""

from __future__ import annotations

from flask import request
from flask.sessions import SecureCookieSessionInterface

from arena.web.cookies import CookieSessions

from .helpers import api_session, bearer, start_session


def _opened(app, cookie: str) -> dict:
    with app.test_request_context("/", headers={"Cookie": f"session={cookie}"}):
        return dict(app.session_interface.open_session(app, request))


def _flask_cookie(app, data: dict) -> str:
    return SecureCookieSessionInterface().get_signing_serializer(app).dumps(data)


def test_the_app_signs_and_reads_flasks_own_cookie(app, client, web_campaign):
    assert isinstance(app.session_interface, CookieSessions)
    assert start_session(client).status_code == 303
    ours = client.get_cookie("session").value
    stock = SecureCookieSessionInterface().get_signing_serializer(app)
    voter = stock.loads(ours)["voter"]  # what we signed, Flask verifies
    assert _opened(app, _flask_cookie(app, {"voter": voter}))["voter"] == voter


def test_a_rotated_key_verifies_through_the_fallbacks_until_dropped(app):
    cookie = _flask_cookie(app, {"voter": "abc"})
    assert _opened(app, cookie) == {"voter": "abc"}
    app.config["SECRET_KEY_FALLBACKS"] = [app.config["SECRET_KEY"]]
    app.config["SECRET_KEY"] = "the-next-secret"
    assert _opened(app, cookie) == {"voter": "abc"}
    app.config["SECRET_KEY_FALLBACKS"] = []
    assert _opened(app, cookie) == {}  # the serializer made for the old keys is not reused


def test_a_forged_or_tampered_cookie_opens_an_empty_session(app):
    cookie = _flask_cookie(app, {"voter": "abc"})
    assert _opened(app, cookie[:-2] + ("AA" if not cookie.endswith("AA") else "BB")) == {}
    other = SecureCookieSessionInterface().get_signing_serializer(
        type("App", (), {"secret_key": "guessed", "config": {"SECRET_KEY_FALLBACKS": []}})())
    assert _opened(app, other.dumps({"voter": "abc"})) == {}


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


def test_a_cookie_known_verified_still_expires_and_a_changed_one_is_checked_afresh(
        app, monkeypatch):
    """Cookies verified once are known by their text (arena.web.cookies): a tampered copy
    of a known cookie is checked (and refused) on its own, a known cookie past the session
    lifetime is refused, and a request that changes its session leaves the next request
    with the same cookie seeing what the cookie says."""
    from datetime import timedelta

    from arena.web import cookies

    cookie = _flask_cookie(app, {"voter": "abc", "lang": "es"})
    assert _opened(app, cookie) == {"voter": "abc", "lang": "es"}  # verified, now known
    payload, _, signature = cookie.rpartition(".")
    assert _opened(app, payload + "." + signature[::-1]) == {}
    assert _opened(app, _flask_cookie(app, {"voter": "abc"})[:-2] + "xx") == {}
    with app.test_request_context("/", headers={"Cookie": f"session={cookie}"}):
        opened = app.session_interface.open_session(app, request)
        opened["voter"] = "someone-else"
    assert _opened(app, cookie)["voter"] == "abc"
    app.permanent_session_lifetime = timedelta(seconds=60)
    later = cookies.time.time() + 61
    monkeypatch.setattr(cookies.time, "time", lambda: later)
    assert _opened(app, cookie) == {}


def test_a_cookie_holding_more_than_plain_values_is_verified_every_time(app):
    nested = _flask_cookie(app, {"voter": "abc", "seen": [1, 2]})
    assert _opened(app, nested) == {"voter": "abc", "seen": [1, 2]}
    assert not any(cookie == nested for _, cookie in app.session_interface._verified)
