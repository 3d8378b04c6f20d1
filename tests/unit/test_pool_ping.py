"""PostgreSQL's pooled connections are pinged at check-out (SQLAlchemy's ``pool_pre_ping``):
a connection whose backend is gone (a server restart, an administrator's
``pg_terminate_backend``) is replaced before a request meets it, however recently it was
used. The failure each test stages: the connection's backend killed."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import func, select

from arena.accounts import tokens
from arena.extensions import db
from tests.conftest import kill_backend
from tests.factories import make_campaign, vote_as

pytestmark = pytest.mark.postgres
PID = select(func.pg_backend_pid())


def _only_connection_checked_in() -> int:
    """The pool emptied, then one connection used and given back (as a request ends): the
    next check-out gets that one. Returns its backend's pid."""
    db.session.remove()
    db.engine.dispose()
    backend = db.session.execute(PID).scalar()
    db.session.remove()
    return backend


def test_a_lost_connection_is_replaced_before_the_request_meets_it(pg_app):
    client = pg_app.test_client()
    with pg_app.app_context():
        backend = _only_connection_checked_in()
        kill_backend(backend)  # (at once: no idle time for the pool to go by)
        ready = client.get("/api/v1/health/ready")
        assert ready.status_code == 200, ready.text
        assert db.session.execute(PID).scalar() != backend
        db.session.remove()
    assert client.get("/api/v1/health/ready").status_code == 200


def test_every_check_out_pings_once(pg_app, monkeypatch):
    """The cost, counted at the driver: one cursor (the SELECT 1) per check-out."""
    opened = []
    real = psycopg.Connection.cursor

    def counted(self, *args, **kwargs):
        opened.append(self)
        return real(self, *args, **kwargs)

    with pg_app.app_context():
        _only_connection_checked_in()
        monkeypatch.setattr(psycopg.Connection, "cursor", counted)
        db.session.connection()
        assert len(opened) == 1
        db.session.remove()
        db.session.connection()
        assert len(opened) == 2


def test_a_pinged_connection_is_left_outside_any_transaction(pg_app):
    """The ping runs in autocommit (the dialect's own): a ping that opened a transaction
    would leave the connection "idle in transaction", and the vote export, which asks for
    REPEATABLE READ, would fail on it."""
    with pg_app.app_context():
        make_campaign()
        vote_as({}, ["model-0", "model-1", "model-2"])
        token = tokens.create_token("alice")
        _only_connection_checked_in()
        status = db.session.connection().connection.dbapi_connection.info.transaction_status
        assert status == psycopg.pq.TransactionStatus.IDLE
        db.session.remove()
    exported = pg_app.test_client().get("/api/v1/votes",
                                        headers={"Authorization": f"Bearer {token}"})
    assert exported.status_code == 200 and exported.text.count("\n") > 1
