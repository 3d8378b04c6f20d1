"""arena.infra.database.write_transaction after reads on SQLite: when the reads wrote nothing,
the write begins on the same connection (ROLLBACK, BEGIN IMMEDIATE) instead of a pool
round; when they did write, or left ORM changes pending, nothing of it is lost or silently
rolled back; a lock not had in time fails cleanly and the next write goes through."""

import sqlite3

import pytest
from sqlalchemy import event, select, update
from sqlalchemy.exc import OperationalError

from arena.extensions import db
from arena.infra.database import end_reads, write_transaction
from arena.infra.prepared import run
from arena.models import Voter

V = Voter.__table__.c


@pytest.fixture
def on(app):
    with app.app_context():
        db.session.add(Voter(public_id="reader", trust=1.0))
        db.session.commit()
        yield app


class _Checkouts:
    def __enter__(self):
        self.count = 0
        event.listen(db.engine, "checkout", self._seen)
        return self

    def _seen(self, *_):
        self.count += 1

    def __exit__(self, *_):
        event.remove(db.engine, "checkout", self._seen)


def _trust_of(public_id: str) -> float:
    return db.session.execute(select(V.trust).where(V.public_id == public_id)).scalar_one()


def test_the_write_after_reads_begins_on_the_same_connection(on):
    with _Checkouts() as checkouts:
        voter = db.session.scalar(select(Voter).where(Voter.public_id == "reader"))
        end_reads()
        with write_transaction(after_reads=True):
            run(update(Voter.__table__).where(V.id == voter.id).values(trust=0.5))
        assert checkouts.count == 1
    assert "trust" not in voter.__dict__  # (expired, as a commit expires what it loaded)
    assert voter.trust == 0.5


def test_keep_loaded_keeps_what_the_reads_loaded(on):
    voter = db.session.scalar(select(Voter).where(Voter.public_id == "reader"))
    with write_transaction(after_reads=True, keep_loaded=True):
        run(update(Voter.__table__).where(V.id == voter.id).values(trust=0.5))
    assert voter.__dict__["trust"] == 1.0
    assert _trust_of("reader") == 0.5


def test_reads_that_wrote_are_committed_not_dropped(on):
    """A flush inside the "reads" (an autoflush, say) changed rows: the old way is taken,
    the transaction is committed before the write begins."""
    db.session.scalar(select(Voter).where(Voter.public_id == "reader"))
    db.session.add(Voter(public_id="flushed", trust=1.0))
    db.session.flush()
    with _Checkouts() as checkouts, write_transaction(after_reads=True):
        run(update(Voter.__table__).where(V.public_id == "reader").values(trust=0.5))
    assert checkouts.count == 1  # (the second transaction's connection)
    db.session.rollback()
    assert _trust_of("flushed") == 1.0 and _trust_of("reader") == 0.5


def test_pending_orm_changes_are_written_too(on):
    db.session.scalar(select(Voter).where(Voter.public_id == "reader"))
    db.session.add(Voter(public_id="pending", trust=0.75))
    with write_transaction(after_reads=True):
        run(update(Voter.__table__).where(V.public_id == "reader").values(trust=0.5))
    assert _trust_of("pending") == 0.75 and _trust_of("reader") == 0.5


def test_end_reads_still_drops_what_the_reads_wrote(on):
    """end_reads ends reads: a change flushed before it is rolled back, as it always was."""
    db.session.add(Voter(public_id="dropped", trust=1.0))
    db.session.flush()
    end_reads()
    assert db.session.scalar(select(Voter).where(Voter.public_id == "dropped")) is None


def test_a_lock_not_had_in_time_fails_cleanly_and_the_next_write_goes_through(on):
    other = sqlite3.connect(db.engine.url.database, isolation_level=None)
    try:
        db.session.scalar(select(Voter).where(Voter.public_id == "reader"))
        db.session.connection().connection.dbapi_connection.execute("PRAGMA busy_timeout=50")
        other.execute("BEGIN IMMEDIATE")  # another process writing
        with pytest.raises(OperationalError, match="locked"), \
                write_transaction(after_reads=True):
            run(update(Voter.__table__).where(V.public_id == "reader").values(trust=0.5))
        assert not db.session().in_transaction()
        other.execute("ROLLBACK")
        db.session.scalar(select(Voter).where(Voter.public_id == "reader"))
        with write_transaction(after_reads=True):
            run(update(Voter.__table__).where(V.public_id == "reader").values(trust=0.25))
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
            run(update(Voter.__table__).where(V.public_id == "reader").values(trust=0.5))
        assert not db.session().in_transaction()
        assert seen == ["BEGIN IMMEDIATE"]
        other.execute("ROLLBACK")
        with write_transaction():
            run(update(Voter.__table__).where(V.public_id == "reader").values(trust=0.25))
    finally:
        event.remove(db.engine, "checkout", impatient)
        event.remove(db.engine, "before_cursor_execute", counted)
        other.close()
    assert _trust_of("reader") == 0.25
