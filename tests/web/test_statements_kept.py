"""PostgreSQL keeps the vote path's prepared statements through requests that only read.

psycopg forgets what it prepared on a connection whenever that connection rolls back, and
every request that only read (an image, a page, the gold check after a gold answer) ended
in a rollback: under load three quarters of the vote path's statements ran unprepared,
parsed and planned afresh each time (arena.infra.database.keep_prepared_on_rollback). These
tests count on the server (``pg_prepared_statements``) and check that a rollback is still a
rollback: what was written, and what was SET, is undone."""

from __future__ import annotations

import pytest
from sqlalchemy import event, insert, select, text
from sqlalchemy.exc import DBAPIError, OperationalError

from arena.extensions import db
from arena.models import Voter
from tests.conftest import kill_backend
from tests.factories import make_campaign
from tests.web.helpers import api_session, bearer

pytestmark = pytest.mark.postgres


def _runs_of(statement_marker: str) -> int:
    """How often this connection ran its prepared statements containing the marker."""
    return db.session.execute(text(
        "SELECT coalesce(sum(generic_plans + custom_plans), 0) FROM pg_prepared_statements "
        "WHERE statement LIKE :marker"), {"marker": f"%{statement_marker}%"}).scalar()


def test_a_voters_statements_stay_prepared_through_image_fetches(pg_app):
    """One voter's sessions on one connection (the test client serves one request at a
    time, so the pool hands out the same one): every task's two images fetched between
    the votes, each fetch a request that only reads and so ends in a rollback, and gold
    answers checking the supply after the response. The read of the task, which every
    vote starts with, must have run prepared for all but the first few votes."""
    with pg_app.app_context():
        make_campaign(n_prompts=6, n_models=3, image_size=8)
        db.session.commit()
        ended = []
        event.listen(db.engine, "rollback", lambda conn: ended.append(1))
    client = pg_app.test_client()
    token, votes = None, 0
    for _ in range(10):
        body = api_session(client, {"criterion": "coherence"}, token).json
        token = token or body["voter_token"]
        for task in body["tasks"]:
            for side in ("left", "right"):
                assert client.get(task[side]["url"]).status_code == 200
            answer = client.post(f"/api/v1/tasks/{task['task_id']}/vote",
                                 json={"choice": "left"}, headers=bearer(token))
            assert answer.status_code == 201, answer.text
            votes += 1
    assert votes >= 20 and len(ended) >= 2 * votes  # (the image fetches did end in rollbacks)
    with pg_app.app_context():
        reads = _runs_of("AS caption")  # (arena.voting.tasks.owned_task)
    # psycopg prepares a statement at its sixth run; a rollback that forgot them would
    # leave at most the runs since the last image fetch (one)
    assert reads >= votes - 6, (reads, votes)


def _count_voters() -> int:
    return db.session.scalar(select(db.func.count()).select_from(Voter))


@pytest.mark.parametrize("how", ["orm", "core", "driver"])
def test_a_rollback_still_undoes_what_was_written(pg_app, how):
    """A transaction that wrote, whichever way, is rolled back by the driver (PostgreSQL
    assigns a transaction id at the first write)."""
    with pg_app.app_context():
        before = _count_voters()
        db.session.rollback()
        if how == "orm":
            db.session.add(Voter(public_id="undone", trust=1.0))
            db.session.flush()
        elif how == "core":
            db.session.execute(insert(Voter.__table__).values(public_id="undone", trust=1.0,
                                               validations_passed=0, validations_failed=0,
                                               pool=0, created_at=db.func.now()))
        else:
            cursor = db.session.connection().connection.dbapi_connection.cursor()
            cursor.execute("INSERT INTO voter (public_id, trust, validations_passed, "
                           "validations_failed, pool, created_at) "
                           "VALUES ('undone', 1, 0, 0, 0, now())")
        db.session.rollback()
        assert _count_voters() == before
        db.session.rollback()


def _prepared_here() -> int:
    return db.session.execute(text("SELECT count(*) FROM pg_prepared_statements")).scalar()


def test_what_a_transaction_set_is_undone_though_it_wrote_nothing(pg_app):
    """Rolled back, not committed: a session-wide SET made in a transaction that wrote
    nothing goes with it (as a NOTIFY, a LISTEN or a SET ROLE would), and the statements
    stay prepared."""
    with pg_app.app_context():
        for _ in range(6):  # (prepared by psycopg at the sixth run)
            db.session.execute(select(Voter.id).where(Voter.public_id == "nobody")).all()
        db.session.commit()
        kept = _prepared_here()
        default = db.session.execute(text("SHOW statement_timeout")).scalar()
        db.session.execute(text("SET statement_timeout = '1234ms'"))
        db.session.rollback()
        assert db.session.execute(text("SHOW statement_timeout")).scalar() == default
        assert _prepared_here() == kept >= 1


def test_a_failed_transaction_still_rolls_back(pg_app):
    with pg_app.app_context():
        with pytest.raises(DBAPIError):  # (division by zero fails the transaction)
            db.session.execute(text("SELECT 1 / 0")).all()
        db.session.rollback()  # (a failed transaction is left to the driver's rollback)
        assert db.session.execute(text("SELECT 2")).scalar() == 2


def test_a_connection_lost_after_reads_fails_its_rollback_as_before(pg_app):
    """The backend gone between a read and the rollback (a restart): the check fails, the
    driver's rollback reports the lost connection as SQLAlchemy reports one, and the next
    statement runs on a fresh connection."""
    with pg_app.app_context():
        backend = db.session.execute(select(db.func.pg_backend_pid())).scalar()
        kill_backend(backend)
        with pytest.raises(OperationalError):
            db.session.rollback()
        assert db.session.execute(select(db.func.pg_backend_pid())).scalar() != backend
