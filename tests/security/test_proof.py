"""A crowd behind one network, and a farm behind one network: the new-identity budget is
spread over the hour (a burst gets a third of it), and past it a newcomer may prove work
(ALTCHA's proof, answered here with the ``altcha`` library as any ALTCHA client would)
instead of waiting, on a budget of its own; an answer admits once, a forged or stale one
never."""

from __future__ import annotations

import base64
import json
import time

import altcha

from arena.web import proof
from tests.factories import make_campaign
from tests.web.helpers import api_session, csrf_token

PREFIX = "203.0.113."


def _client(app, host: int):
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = f"{PREFIX}{host}"
    return client


def _answered(challenge: dict) -> str:
    """The payload an ALTCHA client sends for ``challenge``."""
    made = altcha.Challenge.from_dict(challenge)
    return altcha.Payload(made, altcha.solve_challenge(made)).to_base64()


def _newcomer(app, host: int, payload: str | None = None):
    headers = {proof.HEADER: payload} if payload else {}
    return _client(app, host).post("/api/v1/sessions", json={}, headers=headers)


def test_a_burst_of_newcomers_gets_a_third_of_the_hours_budget(make_app):
    app = make_app(RATELIMIT_ENABLED=True)  # the default: 30 an hour, 10 in ten minutes
    with app.app_context():
        make_campaign()
    codes = [api_session(_client(app, k)).status_code for k in range(1, 13)]
    assert codes == [201] * 10 + [429, 429]
    assert "proof_challenge" not in _newcomer(app, 99).json  # (off unless turned on)


def test_past_the_budget_a_proof_of_work_admits_one_newcomer_each(make_app):
    app = make_app(RATELIMIT_ENABLED=True, NEW_VOTER_PROOF=True,
                   RATE_LIMIT_NEW_VOTERS="2/hour", RATE_LIMIT_PROVEN_VOTERS="3/hour")
    with app.app_context():
        make_campaign()
    assert [_newcomer(app, k).status_code for k in (1, 2)] == [201, 201]
    refused = _newcomer(app, 3)
    assert refused.status_code == 429
    challenge = refused.json["proof_challenge"]
    assert challenge["parameters"]["keyPrefix"] == "0000"

    payload = _answered(challenge)
    assert _newcomer(app, 3, payload).status_code == 201
    # the same answer again (a farm sharing one solved challenge): refused, a new challenge
    again = _newcomer(app, 4, payload)
    assert again.status_code == 429 and again.json["proof_challenge"] != challenge

    # a challenge made easier by the client: its signature no longer holds
    easy = dict(challenge, parameters={**challenge["parameters"], "keyPrefix": ""})
    assert _newcomer(app, 5, _answered(easy)).status_code == 429
    # an answer to a challenge that has run out
    with app.app_context():
        stale = altcha.create_challenge("SHA-256", 1, key_prefix="0", hmac_secret=proof._secret(),
                                        expires_at=int(time.time()) - 1).to_dict()
    assert _newcomer(app, 6, _answered(stale)).status_code == 429
    # garbage in the header
    for junk in ("x", base64.b64encode(b"{}").decode(), "A" * 10_000,
                 base64.b64encode(json.dumps({"challenge": 1, "solution": 2}).encode()).decode()):
        assert _newcomer(app, 7, junk).status_code == 429

    # the proven budget is the network's: two more, then no proof helps
    codes = [_newcomer(app, 8 + k, _answered(_newcomer(app, 8 + k).json["proof_challenge"]))
             .status_code for k in range(3)]
    assert codes == [201, 201, 429]


def test_a_browser_form_sent_again_with_the_answer_starts_a_session(make_app):
    """The voter page: the refusal's form carries the voter's answers and the challenge;
    sent again with the answer, the session starts."""
    app = make_app(RATELIMIT_ENABLED=True, NEW_VOTER_PROOF=True,
                   RATE_LIMIT_NEW_VOTERS="1/hour")
    with app.app_context():
        make_campaign()
    assert _newcomer(app, 1).status_code == 201
    browser = _client(app, 2)
    token = csrf_token(browser.get("/").get_data(as_text=True))
    refused = browser.post("/start", data={"csrf_token": token, "country": "KE"})
    assert refused.status_code == 429
    page = refused.get_data(as_text=True)
    assert 'name="country" value="KE"' in page and 'data-proof="' in page
    start = page.index('data-proof="') + len('data-proof="')
    challenge = json.loads(page[start:page.index('"', start)].replace("&#34;", '"'))
    sent = browser.post("/start", data={"csrf_token": csrf_token(page), "country": "KE",
                                        proof.FIELD: _answered(challenge)})
    assert sent.status_code == 303 and "/s/" in sent.headers["Location"]
