"""Liveness and readiness: a database that cannot take a write is named in the log and
answered with 503, on the probe and on the voter's request alike.

With the SQLite files made unwritable under load, workers died, no 503, no
log line naming the cause, and ``/api/v1/health`` said ok because it only reads."""

from __future__ import annotations

import logging

import pytest

from tests.factories import make_campaign


def test_live_and_ready_on_a_working_database(client):
    assert client.get("/api/v1/health/live").json == {"status": "alive"}
    response = client.get("/api/v1/health/ready")
    assert response.status_code == 200 and response.json == {"status": "ready"}


def test_a_read_only_database_is_not_ready_and_says_why(make_app, tmp_path, caplog):
    writable = make_app()
    with writable.app_context():
        make_campaign(gold=False)
    # the same file, opened as the database a full or read-only disk leaves
    read_only = make_app(DATABASE_URL=f"sqlite:///file:{tmp_path / 'arena.sqlite3'}"
                                      "?mode=ro&uri=true")
    client = read_only.test_client()
    assert client.get("/api/v1/health").status_code == 200  # (reads still work)
    assert client.get("/api/v1/health/live").status_code == 200
    with caplog.at_level(logging.ERROR):
        response = client.get("/api/v1/health/ready")
    assert response.status_code == 503
    assert "unavailable" in response.json["error"]
    assert any("readonly database" in r.getMessage() for r in caplog.records)
    # and a voter's request gets the same answer, not a dead worker or a 500
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        voter = client.post("/api/v1/sessions", json={})
    assert voter.status_code == 503
    assert any("readonly database" in r.getMessage() for r in caplog.records)


def test_a_full_disk_is_not_ready_and_says_why(make_app, caplog):
    """The fault benchmark filled the disk under load: votes got 503 and the log named the
    cause, but readiness said ready (its no-op write fit in SQLite's existing WAL). It now
    also checks the room left where the database and images are written."""
    app = make_app(READY_MIN_FREE_MB=10**9)  # more than any disk has free
    client = app.test_client()
    with caplog.at_level(logging.ERROR):
        response = client.get("/api/v1/health/ready")
    assert response.status_code == 503 and response.json["error"].startswith("disk full:")
    assert any("MB free on the disk of" in r.getMessage() for r in caplog.records)
    app.config["READY_MIN_FREE_MB"] = 0
    assert client.get("/api/v1/health/ready").status_code == 200


def test_an_unreachable_postgresql_is_not_ready(make_app):
    pytest.importorskip("psycopg")
    app = make_app(DATABASE_URL="postgresql://postgres@127.0.0.1:1/nothing")
    client = app.test_client()
    assert client.get("/api/v1/health/live").status_code == 200
    assert client.get("/api/v1/health/ready").status_code == 503
