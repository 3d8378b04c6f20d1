"""arena.infra.database.write_transaction on SQLite: what the session had open before it is
committed, not lost; pending ORM changes are written; a lock not had in time fails cleanly
and the next write goes through."""

import sqlite3

import pytest
from sqlalchemy import event, select, update
from sqlalchemy.exc import OperationalError

from arena.extensions import db
from arena.infra.database import write_transaction
from arena.models import Voter

V = Voter.__table__.c


@pytest.fixture
def on(app):
    with app.app_context():
        db.session.add(Voter(public_id="reader", trust=1.0))
        db.session.commit()
        yield app


def _set_trust(public_id: str, trust: float) -> None:
    db.session.execute(update(Voter.__table__).where(V.public_id == public_id)
                       .values(trust=trust))


def _trust_of(public_id: str) -> float:
    return db.session.execute(select(V.trust).where(V.public_id == public_id)).scalar_one()


def test_reads_that_wrote_are_committed_not_dropped(on):
    """A flush inside the reads (an autoflush, say) changed rows: the transaction is
    committed before the write begins."""
    db.session.scalar(select(Voter).where(Voter.public_id == "reader"))
    db.session.add(Voter(public_id="flushed", trust=1.0))
    db.session.flush()
    with write_transaction():
        _set_trust("reader", 0.5)
    db.session.rollback()
    assert _trust_of("flushed") == 1.0 and _trust_of("reader") == 0.5


def test_pending_orm_changes_are_written_too(on):
    db.session.scalar(select(Voter).where(Voter.public_id == "reader"))
    db.session.add(Voter(public_id="pending", trust=0.75))
    with write_transaction():
        _set_trust("reader", 0.5)
    assert _trust_of("pending") == 0.75 and _trust_of("reader") == 0.5


def test_a_lock_not_had_in_time_fails_cleanly_and_the_next_write_goes_through(on):
    other = sqlite3.connect(db.engine.url.database, isolation_level=None)
    try:
        db.session.scalar(select(Voter).where(Voter.public_id == "reader"))
        db.session.connection().connection.dbapi_connection.execute("PRAGMA busy_timeout=50")
        other.execute("BEGIN IMMEDIATE")  # another process writing
        with pytest.raises(OperationalError, match="locked"), \
                write_transaction():
            _set_trust("reader", 0.5)
        assert not db.session().in_transaction()
        other.execute("ROLLBACK")
        db.session.scalar(select(Voter).where(Voter.public_id == "reader"))
        with write_transaction():
            _set_trust("reader", 0.25)
    finally:
        other.close()
    assert _trust_of("reader") == 0.25


def test_a_fresh_write_that_cannot_have_the_lock_fails_as_sqlalchemy_says(on):
    """Without reads before it, the write's BEGIN IMMEDIATE (on the driver's cursor, in the
    engine's begin event) fails as OperationalError, what retry_on_lock catches; the
    statement counter saw the BEGIN."""
    other = sqlite3.connect(db.engine.url.database, isolation_level=None)
    seen = []

    def impatient(dbapi_connection, *_):
        dbapi_connection.execute("PRAGMA busy_timeout=50")

    def counted(_conn, _cursor, statement, *_):
        seen.append(statement)

    db.session.close()
    event.listen(db.engine, "checkout", impatient)
    event.listen(db.engine, "before_cursor_execute", counted)
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(OperationalError, match="locked"), write_transaction():
            _set_trust("reader", 0.5)
        assert not db.session().in_transaction()
        assert seen == ["BEGIN IMMEDIATE"]
        other.execute("ROLLBACK")
        with write_transaction():
            _set_trust("reader", 0.25)
    finally:
        event.remove(db.engine, "checkout", impatient)
        event.remove(db.engine, "before_cursor_execute", counted)
        other.close()
    assert _trust_of("reader") == 0.25
