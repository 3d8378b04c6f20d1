"""SQLite's WAL checkpoints in a background thread of each server process, not in a request.

In WAL mode SQLite copies the log back into the database file (a checkpoint, with its fsync)
once the log passes 1,000 pages, in whichever connection commits then: one write request in
about a hundred carried a checkpoint, and its response waited for it (the slowest request
took three times the others'). ``arena serve`` checkpoints every ``INTERVAL_S``
from a thread of its own (``PASSIVE``: it never waits for, nor blocks, a reader or a
writer), and its connections keep SQLite's own checkpoint only as a backstop at
``BACKSTOP_PAGES``: a checkpoint from another thread rarely leaves the log fully copied at
the moment a writer starts, which is when SQLite rewinds it, so under steady writes the log
grew without end (161 MB after 30 s at 200 writes/s; 18 MB, stable, with the backstop),
and the backstop also covers a thread that died. The command line and tests
keep SQLite's own.
"""

from __future__ import annotations

import atexit
import logging
import os
import sqlite3
import threading

from flask import Flask
from sqlalchemy import event

from arena.extensions import db

log = logging.getLogger(__name__)
INTERVAL_S = 0.2
BACKSTOP_PAGES = 4000  # (SQLite's default: 1,000)


class Checkpointer:
    """The thread that checkpoints one SQLite file; ``stop()`` ends it."""

    def __init__(self, path: str, interval: float = INTERVAL_S):
        self.path, self.interval = path, interval
        self.done = 0  # checkpoints run
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="arena-wal-checkpoints",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        connection, failing = None, False
        try:
            while not self._stop.wait(self.interval):
                try:
                    connection = connection or sqlite3.connect(self.path,
                                                               check_same_thread=False)
                    connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    self.done += 1
                    if failing:
                        log.warning("WAL checkpoints of %s run again", self.path)
                    failing = False
                except sqlite3.Error:  # (the file could not be opened, say: tried again
                    # next time, the backstop meanwhile; said once, not five times a second)
                    if not failing:
                        log.warning("WAL checkpoint of %s failed", self.path, exc_info=True)
                    failing = True
        finally:
            if connection is not None:
                connection.close()

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def checkpoint_in_background(app: Flask) -> dict[int, Checkpointer] | None:
    """For an app on an SQLite file: its connections checkpoint on commit only as a
    backstop (``BACKSTOP_PAGES``), and a :class:`Checkpointer` does it instead, started in
    each process by its first connection (a server that loads the app before forking its
    workers gets one per worker), and again by the next connection if it has died.
    Returns those checkpointers by process id; None on other databases (and in-memory
    SQLite)."""
    with app.app_context():
        engine = db.engine
    path = engine.url.database
    if engine.dialect.name != "sqlite" or not path or path == ":memory:":
        return None
    running: dict[int, Checkpointer] = {}
    lock = threading.Lock()

    @event.listens_for(engine, "connect")
    def checkpoint_on_commit_as_backstop(dbapi_connection, connection_record):
        dbapi_connection.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")
        with lock:
            current = running.get(os.getpid())
            if current is None or not current.alive():
                running[os.getpid()] = checkpointer = Checkpointer(path)
                # (its connection closed at exit, so the last one out removes the log)
                atexit.register(checkpointer.stop)

    engine.dispose()  # (connections opened before keep SQLite's automatic checkpoints)
    return running
