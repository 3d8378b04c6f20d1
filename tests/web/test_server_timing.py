"""Server-Timing (SERVER_TIMING on): the app's time, its statements and, on SQLite, how long
the request waited to write. benchmarks/ingest.py reads these under load, so each must say
what happened, not only be present."""

from __future__ import annotations

import re
import sqlite3
import threading

import pytest

from arena import create_app
from arena.extensions import db
from tests.conftest import app_config
from tests.web.helpers import api_session, bearer

TIMING = re.compile(r'app;dur=([\d.]+), sql;desc="statements";dur=(\d+)'
                    r"(?:, writer;dur=([\d.]+), held;dur=([\d.]+))?")
HELD_S = 0.3  # how long another process keeps SQLite's writer lock in the test below


def _timing(response) -> tuple[float, int, float | None, float | None]:
    """The app's time, its statements, and on SQLite the writer lock waited for and held."""
    match = TIMING.fullmatch(response.headers["Server-Timing"])
    assert match, response.headers["Server-Timing"]
    waited, held = (None, None) if match[3] is None else (float(match[3]), float(match[4]))
    return float(match[1]), int(match[2]), waited, held


def test_a_vote_says_how_long_it_waited_for_another_processs_writer(make_app, web_campaign,
                                                                    tmp_path):
    client = make_app(SERVER_TIMING=True).test_client()
    body = api_session(client, {"criterion": "preference"}).json
    token, tasks = body["voter_token"], [t["task_id"] for t in body["tasks"]]
    answer = {"choice": "left", "response_ms": 900}

    alone = client.post(f"/api/v1/tasks/{tasks[0]}/vote", json=answer, headers=bearer(token))
    assert alone.status_code == 201
    took, statements, waited, holding = _timing(alone)
    assert statements > 0 and waited is not None and 0 <= waited <= took
    assert holding > 0 and waited + holding <= took  # (its write transaction held the lock)

    # another process holds the writer lock; it lets go after HELD_S
    other = sqlite3.connect(tmp_path / "arena.sqlite3", isolation_level=None,
                            check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    release = threading.Timer(HELD_S, lambda: other.execute("ROLLBACK"))
    release.start()
    try:
        held = client.post(f"/api/v1/tasks/{tasks[1]}/vote", json=answer,
                           headers=bearer(token))
    finally:
        release.join()
        other.close()
    assert held.status_code == 201, held.json
    took, _, waited, holding = _timing(held)
    assert HELD_S * 1000 * 0.9 <= waited <= took, held.headers["Server-Timing"]
    # (the other's hold is this one's wait, not its own hold)
    assert 0 < holding < HELD_S * 1000 / 3 and waited + holding <= took


def test_a_request_that_writes_nothing_waited_for_no_writer(make_app, web_campaign):
    client = make_app(SERVER_TIMING=True).test_client()
    _, _, waited, holding = _timing(client.get("/api/v1/health"))
    assert waited == 0 and holding == 0


@pytest.mark.postgres
def test_postgresql_has_no_writer_to_wait_for(pg_app, tmp_path):
    app = create_app(app_config(tmp_path, SERVER_TIMING=True,
                                DATABASE_URL=pg_app.config["SQLALCHEMY_DATABASE_URI"]))
    try:
        _, _, waited, holding = _timing(app.test_client().get("/api/v1/health"))
    finally:
        with app.app_context():
            db.session.remove()
            db.engine.dispose()
    assert waited is None and holding is None
