"""Signing out ends the sign-in everywhere: an operator's cookie saved, signed out and put
back used to be the operator still. Tried here as the attacker
would, for operators and model owners."""

from __future__ import annotations

from arena.accounts import tokens
from tests.factories import make_owner
from tests.web.helpers import csrf_token


def _sign_in(client, area: str, token: str) -> None:
    html = client.get(f"/{area}/").get_data(as_text=True)
    response = client.post(f"/{area}/sign-in", data={"csrf_token": csrf_token(html),
                                                       "token": token})
    assert response.status_code == 303


def _signed_in(client, area: str) -> bool:
    return "Sign out" in client.get(f"/{area}/").get_data(as_text=True)


def _cookie(client) -> str:
    return client.get_cookie("session").value


def _replay_after_sign_out(app, area: str, token: str) -> None:
    client = app.test_client()
    _sign_in(client, area, token)
    assert _signed_in(client, area)
    saved = _cookie(client)
    html = client.get(f"/{area}/").get_data(as_text=True)
    assert client.post(f"/{area}/sign-out",
                       data={"csrf_token": csrf_token(html)}).status_code == 303
    assert not _signed_in(client, area)
    attacker = app.test_client()
    attacker.set_cookie("session", saved)
    assert not _signed_in(attacker, area), "a cookie saved before signing out still works"
    again = app.test_client()  # signing in afresh works as before
    _sign_in(again, area, token)
    assert _signed_in(again, area)


def test_a_saved_operator_cookie_dies_with_sign_out(app):
    with app.app_context():
        token = tokens.create_token("ops", role="operator")
    _replay_after_sign_out(app, "admin", token)


def test_a_saved_owner_cookie_dies_with_sign_out(app):
    with app.app_context():
        _, token = make_owner("acme")
    _replay_after_sign_out(app, "owner", token)
