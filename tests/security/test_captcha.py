"""An operator's third-party check for newcomers from a busy network (Cloudflare Turnstile or
hCaptcha, instead of or beside the proof of work): the refusal page shows the provider's
widget with its script allowed on that page alone, and a token counts only once the
provider's siteverify confirms it. The providers cannot be reached from the test machine,
so a server on 127.0.0.1 answers as their documentation says siteverify does (form fields
``secret`` and ``response``; JSON ``success``; each token confirmed once)."""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from arena.web import proof
from tests.factories import make_campaign
from tests.timing import seconds
from tests.web.helpers import csrf_token

SECRET = "0x-secret-of-the-site"


class Siteverify(BaseHTTPRequestHandler):
    issued: ClassVar[set[str]] = set()  # tokens the "provider" handed out, each good once
    seen: ClassVar[list[dict]] = []  # what it was sent

    def do_POST(self):
        length = int(self.headers["Content-Length"])
        fields = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
        Siteverify.seen.append(fields)
        ok = fields.get("secret") == SECRET and fields.get("response") in Siteverify.issued
        Siteverify.issued.discard(fields.get("response"))
        body = json.dumps({"success": ok}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def siteverify():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Siteverify)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Siteverify.issued.clear()
    Siteverify.seen.clear()
    yield f"http://127.0.0.1:{server.server_port}/siteverify"
    server.shutdown()
    server.server_close()
    thread.join(timeout=seconds(5))


def _start(app, host: int, **fields):
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = f"203.0.113.{host}"
    page = client.get("/").get_data(as_text=True)
    return client.post("/start", data={"csrf_token": csrf_token(page), **fields})


@pytest.mark.parametrize("provider,field,origin", [
    ("turnstile", "cf-turnstile-response", "https://challenges.cloudflare.com"),
    ("hcaptcha", "h-captcha-response", "https://*.hcaptcha.com"),
])
def test_a_newcomer_past_the_budget_goes_on_once_the_provider_confirms(
        make_app, siteverify, provider, field, origin):
    app = make_app(RATELIMIT_ENABLED=True, RATE_LIMIT_NEW_VOTERS="1/hour",
                   RATE_LIMIT_PROVEN_VOTERS="5/hour", NEW_VOTER_CAPTCHA=provider,
                   CAPTCHA_SITE_KEY="site-key-1", CAPTCHA_SECRET_KEY=SECRET,
                   CAPTCHA_VERIFY_URL=siteverify)
    with app.app_context():
        make_campaign()
    assert _start(app, 1).status_code in (302, 303)  # the network's one newcomer this hour
    refused = _start(app, 2)
    assert refused.status_code == 429
    page = refused.get_data(as_text=True)
    assert 'data-sitekey="site-key-1"' in page
    assert f'<script src="{proof.CAPTCHAS[provider].script}"' in page
    policy = refused.headers["Content-Security-Policy"]
    assert f"script-src 'self' {origin}" in policy and f"frame-src {origin}" in policy
    # other pages keep the policy that allows nothing from elsewhere
    assert origin not in app.test_client().get("/").headers["Content-Security-Policy"]

    # a made-up token: the provider does not confirm it, the newcomer still waits
    assert _start(app, 2, **{field: "made-up"}).status_code == 429
    Siteverify.issued.add("token-1")
    assert _start(app, 2, **{field: "token-1"}).status_code in (302, 303)
    # the same token again (a farm sharing one solved check): refused
    assert _start(app, 3, **{field: "token-1"}).status_code == 429
    # what the provider was told: the site's secret and the token, never the voter's address
    assert Siteverify.seen and all(set(f) == {"secret", "response"} for f in Siteverify.seen)


def test_a_provider_that_does_not_answer_admits_no_one(make_app):
    app = make_app(RATELIMIT_ENABLED=True, RATE_LIMIT_NEW_VOTERS="1/hour",
                   NEW_VOTER_CAPTCHA="turnstile", CAPTCHA_SITE_KEY="k",
                   CAPTCHA_SECRET_KEY=SECRET, CAPTCHA_VERIFY_URL="http://127.0.0.1:9/")
    with app.app_context():
        make_campaign()
    assert _start(app, 1).status_code in (302, 303)
    refused = _start(app, 2, **{"cf-turnstile-response": "token"})
    assert refused.status_code == 429 and "cf-turnstile" in refused.get_data(as_text=True)


def test_without_both_keys_no_third_party_is_shown(make_app):
    app = make_app(RATELIMIT_ENABLED=True, RATE_LIMIT_NEW_VOTERS="1/hour",
                   NEW_VOTER_CAPTCHA="turnstile", CAPTCHA_SITE_KEY="k")
    with app.app_context():
        make_campaign()
    assert _start(app, 1).status_code in (302, 303)
    refused = _start(app, 2)
    assert refused.status_code == 429 and "cf-turnstile" not in refused.get_data(as_text=True)
    assert "cloudflare" not in refused.headers["Content-Security-Policy"]
