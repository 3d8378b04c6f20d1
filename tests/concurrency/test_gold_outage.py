"""A gold top-up stopped by a PostgreSQL restart is made later.

After a gold answer, matchmaking asks for one more gold pair, made after the response. When
PostgreSQL restarted during that work the pair was never made: the answer that asked for it
is not given again, and a voter with no gold left stayed without validation. Here the
top-up's connection is killed (as a restart kills it) in the middle of writing the new pair:
the top-up waits in the job queue's store (not in the process's memory) and the job worker,
started afterwards, makes it."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import event, func, select

from arena.extensions import db
from arena.infra import jobs
from arena.models import Comparison
from tests import timing
from tests.conftest import kill_backend
from tests.security.test_gold import publish_live
from tests.web.helpers import bearer

pytestmark = pytest.mark.postgres


def _gold(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Comparison).where(
            Comparison.is_validation, Comparison.criterion == "coherence"))


def test_a_top_up_killed_by_a_restart_waits_in_the_queue_and_the_worker_makes_it(pg_app):
    pg_app.config["VALIDATION_RATE"] = 1.0  # (every session carries a gold pair)
    with pg_app.app_context():
        publish_live()
        engine = db.engine
    killed = []

    def kill_mid_top_up(conn, cursor, statement, *args):
        if not killed and statement.lstrip().upper().startswith("INSERT INTO image".upper()):
            killed.append(conn.connection.dbapi_connection.info.backend_pid)
            kill_backend(killed[0])

    client = pg_app.test_client()
    token = client.post("/api/v1/sessions", json={"criterion": "coherence"}).json["voter_token"]
    before = _gold(pg_app)
    event.listen(engine, "before_cursor_execute", kill_mid_top_up)
    try:
        for _ in range(5):  # until a gold answer has asked for a pair (the first, mostly)
            body = client.post("/api/v1/sessions", json={"criterion": "coherence"},
                               headers=bearer(token)).json
            for task in body["tasks"]:
                before = _gold(pg_app)
                vote = client.post(f"/api/v1/tasks/{task['task_id']}/vote",
                                   json={"choice": "left"}, headers=bearer(token),
                                   buffered=False)
                assert vote.status_code == 201
                vote.close()  # the response has gone: a top-up runs now, and is killed
                if killed:
                    break
            if killed:
                break
    finally:
        event.remove(engine, "before_cursor_execute", kill_mid_top_up)
    assert killed, "no top-up was under way"
    assert _gold(pg_app) == before  # the pair was not made
    with pg_app.app_context():
        assert jobs.pending() == {"gold-replenish": 1}  # (due in RETRY_WAIT_S: not hammered)
    worker = pg_app.extensions["arena_jobs"].start_embedded()
    try:
        deadline = time.monotonic() + timing.seconds(30)
        while _gold(pg_app) == before:
            assert time.monotonic() < deadline, "the worker did not make the pair"
            time.sleep(0.1)
    finally:
        worker.stop(graceful=True)
    assert _gold(pg_app) == before + 1
    with pg_app.app_context():
        assert jobs.pending() == {}
