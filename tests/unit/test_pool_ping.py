"""PostgreSQL's pooled connections are pinged at check-out only after lying idle
(arena.infra.database.PING_AFTER_IDLE_S): a server restart takes longer than that, so a
connection that lived through one is found dead and replaced before a request meets it,
while one back in use within milliseconds (every connection under load) costs no round trip.
The attack-free failure each test stages: the connection's backend killed, as a restart or
an administrator's ``pg_terminate_backend`` kills it."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError

from arena.accounts import tokens
from arena.extensions import db
from arena.infra import database
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


def test_a_connection_lost_while_idle_is_replaced_before_the_request_meets_it(
        pg_app, monkeypatch):
    client = pg_app.test_client()
    with pg_app.app_context():
        backend = _only_connection_checked_in()
        kill_backend(backend)
        monkeypatch.setattr(database, "PING_AFTER_IDLE_S", 0.0)  # (idle long enough)
        ready = client.get("/api/v1/health/ready")
        assert ready.status_code == 200, ready.text  # the request never met the dead one
        assert db.session.execute(PID).scalar() != backend


def test_a_connection_back_in_use_at_once_is_not_pinged(pg_app, monkeypatch):
    """The trade-off, stated: no ping within PING_AFTER_IDLE_S of the last use, so a
    connection lost in that second fails the one request that meets it (503, asking to
    retry), is dropped, and the next request gets a fresh one."""
    monkeypatch.setattr(database, "PING_AFTER_IDLE_S", 3600.0)
    client = pg_app.test_client()
    with pg_app.app_context():
        backend = _only_connection_checked_in()
        kill_backend(backend)
        with pytest.raises(DBAPIError) as lost:
            db.session.execute(PID)
        assert lost.value.connection_invalidated
        db.session.rollback()
        assert db.session.execute(PID).scalar() != backend
        db.session.remove()
    assert client.get("/api/v1/health/ready").status_code == 200


def test_pinged_once_after_idling_and_not_when_back_at_once(pg_app, monkeypatch):
    """Counted at the driver: a cursor opened at check-out (the SELECT 1) only when the
    connection has idled for PING_AFTER_IDLE_S."""
    opened = []
    real = psycopg.Connection.cursor

    def counted(self, *args, **kwargs):
        opened.append(self)
        return real(self, *args, **kwargs)

    with pg_app.app_context():
        _only_connection_checked_in()
        monkeypatch.setattr(psycopg.Connection, "cursor", counted)
        monkeypatch.setattr(database, "PING_AFTER_IDLE_S", 3600.0)
        db.session.connection()
        assert opened == []
        db.session.remove()
        monkeypatch.setattr(database, "PING_AFTER_IDLE_S", 0.0)
        db.session.connection()
        assert len(opened) == 1


def test_a_pinged_connection_is_left_outside_any_transaction(pg_app, monkeypatch):
    """The ping runs in autocommit (the dialect's own): a ping that opened a transaction
    left the connection "idle in transaction", and the vote export, which asks for
    REPEATABLE READ, failed on every connection that had idled (found by an audit)."""
    with pg_app.app_context():
        make_campaign()
        vote_as({}, ["model-0", "model-1", "model-2"])
        token = tokens.create_token("alice")
        _only_connection_checked_in()
        monkeypatch.setattr(database, "PING_AFTER_IDLE_S", 0.0)
        status = db.session.connection().connection.dbapi_connection.info.transaction_status
        assert status == psycopg.pq.TransactionStatus.IDLE
        db.session.remove()
    exported = pg_app.test_client().get("/api/v1/votes",
                                        headers={"Authorization": f"Bearer {token}"})
    assert exported.status_code == 200 and exported.text.count("\n") > 1


def test_a_ping_that_fails_for_another_reason_is_raised_not_taken_for_a_disconnect(
        pg_app, monkeypatch):
    with pg_app.app_context():
        _only_connection_checked_in()
        dialect = db.engine.dialect

        def broken(dbapi_connection):
            raise psycopg.ProgrammingError("not a disconnect")

        monkeypatch.setattr(dialect, "do_ping", broken)
        monkeypatch.setattr(database, "PING_AFTER_IDLE_S", 0.0)
        with pytest.raises(DBAPIError, match="not a disconnect"):  # (SQLAlchemy wraps it)
            db.session.connection()
