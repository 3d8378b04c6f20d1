"""Behind HTTPS every cookie the app sets is ``Secure``: the session cookie (voter, owner
sign-in, CSRF token and language all live in it) went out without the attribute unless an
operator set SESSION_COOKIE_SECURE, so a single plain-HTTP request (a typed address, a
downgrade) could carry it in clear. HTTPS is what the request says (the test client's https
base URL) or, behind TRUSTED_PROXIES, what the proxy says in X-Forwarded-Proto; a forged
header without a trusted proxy changes nothing."""

from __future__ import annotations

import pytest

from arena.web.secure_cookies import secured
from tests.web.helpers import csrf_token


def _set_cookies(client, base_url: str, scheme: str | None = None, **headers) -> list[str]:
    """Every Set-Cookie of a voter's visit: landing, start, language switch."""
    scheme = scheme or base_url.split(":")[0]
    headers["Referer"] = f"{scheme}://{base_url.split('://')[1]}/"  # (CSRF checks it on HTTPS)
    seen = []
    landing = client.get("/", base_url=base_url, headers=headers)
    seen += landing.headers.getlist("Set-Cookie")
    start = client.post("/start", base_url=base_url, headers=headers,
                        data={"csrf_token": csrf_token(landing.get_data(as_text=True))})
    assert start.status_code == 303
    seen += start.headers.getlist("Set-Cookie")
    seen += client.get("/language?lang=fr", base_url=base_url,
                       headers=headers).headers.getlist("Set-Cookie")
    assert seen, "the visit set no cookie"
    return seen


def _secure(value: str) -> bool:
    return "secure" in [part.strip().lower() for part in value.split(";")[1:]]


def test_cookies_over_https_are_secure(app, web_campaign):
    assert all(map(_secure, _set_cookies(app.test_client(), "https://arena.example")))
    assert not any(map(_secure, _set_cookies(app.test_client(), "http://localhost")))


@pytest.mark.parametrize("hops, proto, secure", [(1, "https", True), (1, "http", False),
                                                 (0, "https", False)])
def test_behind_a_trusted_proxy_the_forwarded_scheme_decides(make_app, hops, proto, secure):
    from tests.factories import make_campaign

    app = make_app(TRUSTED_PROXIES=hops)
    with app.app_context():
        make_campaign(n_prompts=1, n_models=2, images_per_model=1, gold=False)
    cookies = _set_cookies(app.test_client(), "http://localhost", proto,
                           **{"X-Forwarded-Proto": proto, "X-Forwarded-For": "203.0.113.9"})
    assert [_secure(c) for c in cookies] == [secure] * len(cookies)


def test_the_attribute_is_added_once():
    assert secured("a=b; Path=/") == "a=b; Path=/; Secure"
    assert secured("a=b; Secure; Path=/") == "a=b; Secure; Path=/"
    assert secured("secure=1; Path=/") == "secure=1; Path=/; Secure"
