"""CSRF tokens (Flask-WTF's CSRFProtect), tried as an attacker would use them: a voter's
token must not open another voter's forms, must not outlive its time limit, and must not
cross from one app (one secret key) to another."""

from __future__ import annotations

import time

from tests.web.helpers import csrf_token


def _token(client) -> str:
    return csrf_token(client.get("/").get_data(as_text=True))


def _start(client, token: str) -> int:
    return client.post("/start", data={"csrf_token": token}).status_code


def test_a_voters_token_opens_only_their_forms(app, web_campaign):
    voter, attacker = app.test_client(), app.test_client()
    mine, theirs = _token(voter), _token(attacker)
    assert mine != theirs
    assert _start(attacker, mine) == 400
    assert _start(voter, theirs) == 400
    assert _start(voter, "") == 400
    assert _start(voter, mine) == 303


def test_a_token_past_its_time_limit_is_refused(app, web_campaign, monkeypatch):
    app.config["WTF_CSRF_TIME_LIMIT"] = 100
    voter = app.test_client()
    signed_long_ago = time.time() - 101
    with monkeypatch.context() as patched:
        patched.setattr(time, "time", lambda: signed_long_ago)
        old = _token(voter)
    assert _start(voter, old) == 400
    assert _start(voter, _token(voter)) == 303


def test_tokens_do_not_cross_apps(make_app, web_campaign):
    """Two apps (two secret keys) sharing a database: one's token, with its session cookie,
    is refused by the other's forms."""
    first, second = make_app(SECRET_KEY="a" * 64), make_app(SECRET_KEY="b" * 64)
    client = first.test_client()
    token = _token(client)
    other = second.test_client()
    other.set_cookie("session", client.get_cookie("session").value)
    assert _start(other, token) == 400


def test_a_signing_key_changed_in_a_running_app_refuses_old_tokens(app, web_campaign):
    """The CSRF key changed under a running app (the session cookie still valid): the
    token signed with the old key is refused; a page's new token works."""
    voter = app.test_client()
    old = _token(voter)
    app.config["WTF_CSRF_SECRET_KEY"] = "c" * 64
    new = _token(voter)
    assert new != old
    assert _start(voter, old) == 400 and _start(voter, new) == 303
