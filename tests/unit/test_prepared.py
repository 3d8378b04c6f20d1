"""arena.infra.prepared.run: the hot path's statements on the driver's cursor give what
SQLAlchemy's own execution gives, on SQLite and PostgreSQL: the same rows and conversions,
the same stored values, the same errors, the same listeners called."""

from datetime import datetime

import pytest
from sqlalchemy import event, func, insert, select, text, update
from sqlalchemy.exc import DBAPIError, IntegrityError

from arena.extensions import db
from arena.infra.database import param
from arena.infra.prepared import run, run_many
from arena.models import Voter

V = Voter.__table__.c
BY_ID = select(V.id, V.public_id, V.trust, V.last_action_at, V.pool, V.country).where(
    V.id == param("p_id", V.id))
STAMP = update(Voter.__table__).where(V.id == param("p_id", V.id)).values(
    last_action_at=param("p_at", V.last_action_at), trust=V.trust - 0.25)
ADD = insert(Voter.__table__).values(public_id=param("p_public", V.public_id), trust=1.0,
                                     validations_passed=0, validations_failed=0, pool=0,
                                     created_at=param("p_at", V.created_at))


def _voters(*stamps):
    voters = [Voter(public_id=f"v{k}", last_action_at=at, country="FR")
              for k, at in enumerate(stamps)]
    db.session.add_all(voters)
    db.session.commit()
    return [v.id for v in voters]


@pytest.fixture
def on(any_app):
    with any_app.app_context():
        yield any_app


def test_rows_are_what_sqlalchemy_reads(on):
    ids = _voters(datetime(2026, 1, 2, 3, 4, 5, 678901), datetime(2026, 1, 2, 3, 4, 5), None)
    for voter_id in ids:
        ours = run(BY_ID, {"p_id": voter_id}).first()
        theirs = db.session.execute(BY_ID, {"p_id": voter_id}).first()
        assert tuple(ours) == tuple(theirs)
        assert ours.last_action_at == theirs.last_action_at  # (by name, as the callers read)
        assert type(ours.trust) is float and type(ours.pool) is int
    assert run(BY_ID, {"p_id": -1}).first() is None
    assert run(BY_ID, {"p_id": -1}).scalar() is None


def test_written_values_are_stored_as_sqlalchemy_stores_them(on):
    """A datetime written by run is the same text (SQLite) or timestamp (PostgreSQL) as the
    ORM's, so comparisons between the two in SQL hold; constants of the statement (the
    ``- 0.25``) are sent too."""
    at = datetime(2026, 5, 6, 7, 8, 9)  # no microseconds: Python's own adapter differs there
    by_orm, by_run = _voters(at, None)
    assert run(STAMP, {"p_id": by_run, "p_at": at}).rowcount == 1
    raw = text("SELECT last_action_at, trust FROM voter WHERE id = :id")
    assert (db.session.execute(raw, {"id": by_run}).one()[0]
            == db.session.execute(raw, {"id": by_orm}).one()[0])
    db.session.commit()
    assert db.session.get(Voter, by_run).last_action_at == at
    assert db.session.get(Voter, by_run).trust == 0.75
    assert run(STAMP, {"p_id": -1, "p_at": at}).rowcount == 0


def test_an_insert_gives_its_row_id_on_sqlite(on):
    outcome = run(ADD, {"p_public": "fresh", "p_at": datetime(2026, 1, 1)})
    assert outcome.rowcount == 1
    if db.engine.dialect.name == "sqlite":
        assert db.session.scalar(select(V.id).where(V.public_id == "fresh")) == outcome.lastrowid


def test_driver_errors_are_sqlalchemys_and_the_session_goes_on(on):
    _voters(None)
    with pytest.raises(IntegrityError):
        run(ADD, {"p_public": "v0", "p_at": datetime(2026, 1, 1)})  # unique public_id
    db.session.rollback()
    assert run(ADD, {"p_public": "v1", "p_at": datetime(2026, 1, 1)}).rowcount == 1
    db.session.commit()
    assert db.session.scalar(select(V.public_id).where(V.public_id == "v1")) == "v1"


def test_the_engines_listeners_see_each_statement(on):
    """Server-Timing counts statements with a before_cursor_execute listener."""
    seen = []

    def listener(_conn, _cursor, statement, *_args):
        seen.append(statement)

    event.listen(db.engine, "before_cursor_execute", listener)
    try:
        run(BY_ID, {"p_id": 1})
        run(BY_ID, {"p_id": 2})
    finally:
        event.remove(db.engine, "before_cursor_execute", listener)
    assert [s.split()[0] for s in seen if s.startswith("SELECT")] == ["SELECT", "SELECT"]


def test_statements_that_need_sqlalchemy_at_run_time_are_refused(on):
    expanding = select(V.id).where(V.id.in_([1, 2, 3]))
    with pytest.raises(ValueError, match="needs SQLAlchemy"):
        run(expanding)
    defaulted = insert(Voter.__table__).values(public_id="x")  # created_at's Python default
    with pytest.raises(ValueError, match="needs SQLAlchemy"):
        run(defaulted)


def test_the_way_out_through_sqlalchemy_gives_the_same(on):
    """PREPARED_STATEMENTS=false (a driver that disagrees): the same rows, counts and ids."""
    (voter_id,) = _voters(datetime(2026, 1, 2, 3, 4, 5, 678901))
    at = datetime(2026, 5, 6, 7, 8, 9)

    def both():
        return (run(BY_ID, {"p_id": voter_id}).first(),
                run(STAMP, {"p_id": voter_id, "p_at": at}).rowcount)

    ours = both()
    db.session.rollback()
    on.config["PREPARED_STATEMENTS"] = False
    theirs = both()
    assert tuple(ours[0]) == tuple(theirs[0]) and ours[0].trust == theirs[0].trust
    assert ours[1] == theirs[1] == 1
    added = run(ADD, {"p_public": "fresh", "p_at": at})
    if db.engine.dialect.name == "sqlite":
        assert db.session.scalar(select(V.id).where(V.public_id == "fresh")) == added.lastrowid


def test_run_many_writes_each_item_as_sqlalchemys_executemany_does(on):
    """A session's tasks and counts: one executemany, the same rows and stored values as
    through the session, the listeners told once, a driver error SQLAlchemy's."""
    at = datetime(2026, 5, 6, 7, 8, 9)
    seen = []

    def listener(_conn, _cursor, statement, _params, _context, executemany):
        seen.append((statement.split()[0], executemany))

    ids = _voters(None, None, None, None)
    event.listen(db.engine, "before_cursor_execute", listener)
    try:
        changed = run_many(STAMP, [{"p_id": voter_id, "p_at": at} for voter_id in ids[:2]])
    finally:
        event.remove(db.engine, "before_cursor_execute", listener)
    assert changed == 2 and seen == [("UPDATE", True)]
    assert db.session.execute(STAMP, [{"p_id": voter_id, "p_at": at}
                                      for voter_id in ids[2:]]).rowcount == 2
    raw = text("SELECT last_action_at, trust FROM voter ORDER BY id")
    assert len(set(db.session.execute(raw).all())) == 1  # all four alike
    assert run_many(ADD, [{"p_public": f"n{k}", "p_at": at} for k in range(3)]) == 3
    db.session.commit()
    assert db.session.scalar(select(func.count()).select_from(Voter)) == 7
    assert run_many(STAMP, []) == 0
    with pytest.raises(IntegrityError):
        run_many(ADD, [{"p_public": "n9", "p_at": at}, {"p_public": "n0", "p_at": at}])
    db.session.rollback()
    assert db.session.scalar(select(func.count()).select_from(Voter)) == 7  # none of the two
    on.config["PREPARED_STATEMENTS"] = False
    assert run_many(STAMP, [{"p_id": voter_id, "p_at": at} for voter_id in ids]) == 4


@pytest.mark.postgres
def test_a_lost_connection_is_dropped_and_the_next_request_gets_a_fresh_one(pg_app):
    """The database server restarted (its backend killed): the statement fails as SQLAlchemy
    says a lost connection fails, and the pool does not hand that connection out again."""
    from tests.conftest import kill_backend

    with pg_app.app_context():
        backend = run(select(func.pg_backend_pid())).scalar()
        kill_backend(backend)
        with pytest.raises(DBAPIError) as lost:
            run(BY_ID, {"p_id": 1})
        assert lost.value.connection_invalidated
        db.session.rollback()
        assert run(select(func.pg_backend_pid())).scalar() != backend
