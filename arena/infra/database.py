"""Engine set-up shared by SQLite and PostgreSQL, and the write-transaction helper.

SQLite is put in WAL mode with a busy timeout, and write transactions start with
``BEGIN IMMEDIATE`` so two writers queue on the lock instead of one failing when it upgrades
from reading to writing. PostgreSQL needs nothing special: the vote path locks the rows it
updates with ``SELECT ... FOR UPDATE``.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from typing import TypeVar

from sqlalchemy import bindparam, case, event, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError, ProgrammingError

from arena.errors import NotFound, Unavailable
from arena.extensions import db
from arena.infra import devices

T = TypeVar("T")
_SQLITE_BEGIN = "arena_sqlite_begin"
_BEGIN = {"DEFERRED": "BEGIN DEFERRED", "IMMEDIATE": "BEGIN IMMEDIATE"}


@event.listens_for(Engine, "connect")
def _sqlite_on_connect(dbapi_connection, connection_record):
    if not isinstance(dbapi_connection, sqlite3.Connection):
        return
    # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite's own handling defers it).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=15000")
    _owner_only(cursor)
    cursor.close()


def _owner_only(cursor) -> None:
    """The database file and its WAL and shared-memory files readable by their owner only
    (SQLite creates them with the process umask, 0644 by default: every local user could
    read the votes and the hashed tokens)."""
    for _seq, name, path in cursor.execute("PRAGMA database_list").fetchall():
        if name != "main" or not path:
            continue  # an in-memory database has no file
        for file in (path, f"{path}-wal", f"{path}-shm"):
            try:
                if stat.S_IMODE(os.stat(file).st_mode) != 0o600:
                    os.chmod(file, 0o600)
            except FileNotFoundError:
                pass


@event.listens_for(Engine, "begin")
def _sqlite_on_begin(conn):
    if conn.dialect.name != "sqlite":
        return
    # SQLAlchemy's documented recipe for pysqlite: the driver's own BEGIN handling is off
    conn.exec_driver_sql(_BEGIN[conn.get_execution_options().get(_SQLITE_BEGIN, "DEFERRED")])


# The request's time waiting to write on SQLite (ms: from asking for the writer lock, this
# process's and then SQLite's, until holding both), and then holding them (until the commit
# or rollback is done), each summed over its write transactions. Set to [0.0, 0.0] by
# whoever wants them (Server-Timing's ``writer`` and ``held``); None otherwise, and nothing
# is timed. Every other writer waits out what one holds, so the hold is the lever.
writer_wait: ContextVar[list | None] = ContextVar("arena_writer_wait", default=None)


@contextmanager
def write_transaction():
    """Open a write transaction on ``db.session``: immediate on SQLite (one writer thread per
    process at a time), plain on PostgreSQL. Whatever the session had open (reads) is
    committed first. Commits on success, rolls back on any exception."""
    session = db.session()
    sqlite = db.engine.dialect.name == "sqlite"
    if session.in_transaction():
        session.commit()
    waits = writer_wait.get() if sqlite else None
    asked = time.perf_counter() if waits is not None else 0.0
    holding = 0.0
    with devices.writer_queue() if sqlite else nullcontext():
        try:
            # (a BEGIN that failed, the lock not had in time, leaves the session clean for
            # retry_on_lock's next attempt)
            if sqlite:
                session.connection(execution_options={_SQLITE_BEGIN: "IMMEDIATE"})
            if waits is not None:
                holding = time.perf_counter()
                waits[0] += (holding - asked) * 1000
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            if waits is not None and holding:
                waits[1] += (time.perf_counter() - holding) * 1000


def retry_on_lock(fn: Callable[[], T], attempts: int = 5) -> T:
    """Run ``fn`` again when the database reports a lock or deadlock (SQLite busy after its
    timeout, PostgreSQL deadlock detected); the last failure is re-raised."""
    for attempt in range(attempts):
        try:
            return fn()
        except OperationalError as exc:
            message = str(exc.orig).lower()
            transient = "locked" in message or "deadlock" in message or "busy" in message
            if not transient or attempt == attempts - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


# What the drivers say when the schema or the database file is not there (SQLite, psycopg).
_NOT_SET_UP = ("no such table", "unable to open database", "does not exist", "undefinedtable")


def database_outage(exc: Exception) -> Unavailable | None:
    """The domain error for a database that is missing or down, or None when ``exc`` is not
    one: the same message on the web (a 503) and in the CLI (``Error:``, exit code 6)."""
    if not isinstance(exc, (OperationalError, ProgrammingError)):
        return None
    message = str(getattr(exc, "orig", exc)).lower()
    if any(m in message for m in _NOT_SET_UP):
        return Unavailable("The database is not set up yet. The operator should run "
                           "`arena db upgrade` (or `arena demo`).")
    return Unavailable("The database is unavailable right now. Please try again.")


def one_or_not_found(model, message: str, *conditions):
    """The one row of ``model`` matching ``conditions``. Raises NotFound with ``message``."""
    row = db.session.scalar(select(model).where(*conditions))
    if row is None:
        raise NotFound(message)
    return row


def param(name: str, column):
    """A named parameter typed like ``column``, for a statement built once and run many
    times with a dict of values (the hot paths: building a statement costs more than running
    it). The column's type makes SQLite store and compare datetimes as the column does."""
    return bindparam(name, type_=column.type)


def refresh_statistics(*models) -> None:
    """After a bulk write (a campaign published, its gold supply made), have PostgreSQL
    re-read the tables' statistics (``ANALYZE``) in the open transaction, so the next
    statements are planned for the rows just added rather than for the empty tables the
    planner last sampled. Autovacuum does it too, but up to a minute later: until then the
    gold pick, planned for one candidate row, walked a voter's tasks once per gold pair
    (p99 36 ms per session against 2.8 ms once analysed; benchmarks/request_cost.py). A
    no-op on SQLite, whose planner works without statistics."""
    if db.engine.dialect.name == "postgresql":
        for model in models:
            db.session.execute(text(f"ANALYZE {model.__table__.name}"))


def at_most(expr, limit):
    """SQL ``min(expr, limit)`` that reads the same on SQLite and PostgreSQL."""
    return case((expr > limit, limit), else_=expr)


def at_least(expr, limit):
    """SQL ``max(expr, limit)`` that reads the same on SQLite and PostgreSQL."""
    return case((expr < limit, limit), else_=expr)
