"""No client address in the app's logs: the README promises no IP address is stored, and
a log is storage. Requests are sent from a known address, directly and through a trusted
proxy (X-Forwarded-For), down every path that logs: a normal session, refusals (bad input,
CSRF, rate limits), a crash (500), a database failure (503) and deferred work that fails;
every record of every logger, at every level, with its traceback, is read for the address."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import text

from arena.extensions import db
from tests.web.helpers import csrf_token, start_session, task_id

DIRECT = "203.0.113.45"
FORWARDED = "198.51.100.77"
FORWARDED_V6 = "2001:db8::4242"


def _visit(app, client) -> None:
    client.get("/")
    page = client.get(start_session(client).headers["Location"]).get_data(as_text=True)
    client.post(f"/t/{task_id(page)}", data={"csrf_token": csrf_token(page), "choice": "left"})
    client.post(f"/t/{task_id(page)}", data={"csrf_token": "forged", "choice": "left"})
    client.post("/api/v1/sessions", json={"criterion": "nope"})
    client.get("/leaderboard?category=a%00b")
    client.get("/no/such/page")
    client.get("/boom")
    for _ in range(4):
        client.post("/api/v1/sessions", json={})  # over the per-network limit set below
    with app.app_context():  # the database fails under the next request
        db.session.execute(text("ALTER TABLE voter RENAME TO voter_gone"))
        db.session.commit()
    client.post("/api/v1/sessions", json={})
    client.get("/")
    with app.app_context():
        db.session.execute(text("ALTER TABLE voter_gone RENAME TO voter"))
        db.session.commit()


@pytest.mark.parametrize("hops, environ, headers", [
    (0, {"REMOTE_ADDR": DIRECT}, {}),
    (1, {"REMOTE_ADDR": "127.0.0.1"}, {"X-Forwarded-For": FORWARDED}),
    (1, {"REMOTE_ADDR": "127.0.0.1"}, {"X-Forwarded-For": FORWARDED_V6}),
])
def test_no_request_logs_the_clients_address(make_app, caplog, hops, environ, headers):
    from tests.factories import make_campaign

    app = make_app(TRUSTED_PROXIES=hops, RATELIMIT_ENABLED=True,
                   RATE_LIMIT_NETWORK_SESSIONS="3/minute", PROPAGATE_EXCEPTIONS=False)
    app.testing = False  # (a crash is logged and answered 500, as in production)

    @app.get("/boom")
    def boom():
        raise RuntimeError("a bug")

    with app.app_context():
        make_campaign(n_prompts=1, n_models=2, images_per_model=1, gold=False)
    client = app.test_client()
    client.environ_base.update(environ)
    for name, value in headers.items():
        client.environ_base["HTTP_" + name.upper().replace("-", "_")] = value
    with caplog.at_level(logging.DEBUG):
        _visit(app, client)
    logged = caplog.text
    assert "a bug" in logged and "database error" in logged and "rate limit" in logged
    address = environ["REMOTE_ADDR"] if not hops else headers["X-Forwarded-For"]
    assert address not in logged
    for record in caplog.records:
        assert address not in record.getMessage()
