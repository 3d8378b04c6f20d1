"""Each session's signed CSRF token is kept and handed out again (arena.web.csrf_tokens)
instead of being signed for every card. Tried as an attacker would use it: a kept token
must not open another voter's forms, must not outlive its time limit, and must not cross
from one app (one secret key) to another."""

from __future__ import annotations

from arena.web import csrf_tokens
from tests.web.helpers import csrf_token


def _token(client) -> str:
    return csrf_token(client.get("/").get_data(as_text=True))


def _start(client, token: str) -> int:
    return client.post("/start", data={"csrf_token": token}).status_code


def test_a_voters_pages_carry_one_kept_token_that_opens_only_their_forms(
        app, web_campaign, monkeypatch):
    signed = []
    monkeypatch.setattr(csrf_tokens, "generate_csrf",
                        lambda real=csrf_tokens.generate_csrf: signed.append(1) or real())
    voter, attacker = app.test_client(), app.test_client()
    first, again = _token(voter), _token(voter)
    assert first == again and len(signed) == 1  # signed once, then kept
    theirs = _token(attacker)
    assert theirs != first and len(signed) == 2
    assert _start(attacker, first) == 400  # the voter's kept token is not the attacker's
    assert _start(voter, theirs) == 400
    assert _start(voter, first) == 303


def test_a_kept_token_is_signed_afresh_before_a_tenth_of_its_time_limit_has_passed(
        app, web_campaign, monkeypatch):
    app.config["WTF_CSRF_TIME_LIMIT"] = 100
    signed, clock = [], [1_000_000.0]
    monkeypatch.setattr(csrf_tokens, "generate_csrf",
                        lambda real=csrf_tokens.generate_csrf: signed.append(1) or real())
    monkeypatch.setattr(csrf_tokens.time, "time", lambda: clock[0])
    voter = app.test_client()
    _token(voter)
    clock[0] += 9
    _token(voter)
    assert len(signed) == 1
    clock[0] += 2  # 11 s after signing: more than a tenth of 100 s
    _token(voter)
    assert len(signed) == 2


def test_kept_tokens_do_not_cross_apps(make_app, web_campaign):
    """Two apps in one process (two secret keys): a token kept by one is never handed out
    by the other, whose forms refuse it."""
    first, second = make_app(SECRET_KEY="a" * 64), make_app(SECRET_KEY="b" * 64)
    client = first.test_client()
    token = _token(client)
    assert token not in {v[0] for v in second.extensions["arena_csrf_signed"].values()}
    other = second.test_client()
    other.set_cookie("session", client.get_cookie("session").value)
    assert _start(other, token) == 400


def test_a_signing_key_changed_in_a_running_app_signs_afresh(app, web_campaign):
    """The CSRF key changed under a running app (the session cookie still valid): the kept
    token, signed with the old key, is not handed out again; forms keep working."""
    voter = app.test_client()
    old = _token(voter)
    app.config["WTF_CSRF_SECRET_KEY"] = "c" * 64
    new = _token(voter)
    assert new != old
    assert _start(voter, old) == 400 and _start(voter, new) == 303
