"""A server's SQLite connections leave WAL checkpoints to a thread of their own: no request
waits for one (arena.infra.checkpoints)."""

from __future__ import annotations

import os
import time

from sqlalchemy import text

from arena.extensions import db
from arena.infra.checkpoints import BACKSTOP_PAGES, Checkpointer, checkpoint_in_background
from tests.timing import seconds

PAGE = 4096


def _write_pages(pages: int) -> None:
    db.session.execute(text("CREATE TABLE IF NOT EXISTS scratch (b BLOB)"))
    for _ in range(20):  # twenty commits, as many requests would make
        db.session.execute(text("INSERT INTO scratch VALUES (:b)"),
                           [{"b": os.urandom(PAGE - 200)} for _ in range(pages // 20)])
        db.session.commit()


def test_commits_leave_the_checkpoints_to_the_background_thread(make_app, tmp_path):
    app = make_app()
    running = checkpoint_in_background(app)
    path = tmp_path / "arena.sqlite3"
    with app.app_context():
        connection = db.session.connection().connection.dbapi_connection
        assert connection.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == BACKSTOP_PAGES
        running[os.getpid()].stop()  # (started by that first connection)
        before = path.stat().st_size
        # 1,500 pages: past SQLite's own threshold (1,000), so a commit would have
        # checkpointed and grown the database file
        _write_pages(1500)
        assert path.stat().st_size == before
        assert os.stat(f"{path}-wal").st_size > 1000 * PAGE
        checkpointer = Checkpointer(str(path), interval=0.05)
        try:
            deadline = time.monotonic() + seconds(10)
            while path.stat().st_size == before and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            checkpointer.stop()
        assert path.stat().st_size > before + 1000 * PAGE
        assert checkpointer.done >= 1


def test_the_backstop_checkpoints_when_the_thread_is_gone_and_a_new_one_starts(make_app,
                                                                              tmp_path):
    app = make_app()
    running = checkpoint_in_background(app)
    path = tmp_path / "arena.sqlite3"
    with app.app_context():
        db.session.connection()
        dead = running[os.getpid()]
        dead.stop()
        before = path.stat().st_size
        _write_pages(BACKSTOP_PAGES + 500)  # the commit past the backstop checkpoints
        assert path.stat().st_size > before + 1000 * PAGE
        db.session.remove()
        db.engine.dispose()
        db.session.connection()  # a new connection: the dead thread is replaced
        assert running[os.getpid()] is not dead and running[os.getpid()].alive()
        running[os.getpid()].stop()


def test_other_databases_and_memory_keep_their_own(make_app, tmp_path):
    assert checkpoint_in_background(make_app(DATABASE_URL="sqlite://")) is None


def test_a_failing_checkpoint_is_said_once_and_its_recovery_too(tmp_path, caplog):
    missing = tmp_path / "not-yet" / "arena.sqlite3"
    checkpointer = Checkpointer(str(missing), interval=0.01)
    try:
        time.sleep(0.2)  # (about twenty attempts on a folder that is not there)
        missing.parent.mkdir()
        deadline = time.monotonic() + seconds(10)
        while checkpointer.done == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        checkpointer.stop()
    said = [r.getMessage() for r in caplog.records if r.name == "arena.infra.checkpoints"]
    assert checkpointer.done >= 1
    assert said == [f"WAL checkpoint of {missing} failed",
                    f"WAL checkpoints of {missing} run again"]
