"""The performance devices: where Arena departs from plain SQLAlchemy or from Python's
defaults for speed. Each is kept while a benchmark of the current tree shows it earns more
than 25% (its figure and command in its comment). ``DEVICES`` lists those on, all by default;
``ARENA_DEVICES=""`` is plain SQLAlchemy and Python's defaults, and leaving one name out
measures what that one earns (``benchmarks/request_cost.py --paired DEVICES=...``,
``benchmarks/ingest.py --paired DEVICES=...``). Read where each device is set up: when the
app is made, or when a statement built once per process is built.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from contextlib import nullcontext

from flask import current_app
from sqlalchemy import Integer, String, event, literal_column
from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

NAMES = ("keep-prepared", "fixed-values", "writer-queue", "switch-interval")


def chosen(value) -> frozenset[str]:
    """The devices a ``DEVICES`` setting names. Raises ValueError on a name not in NAMES."""
    names = frozenset(n.strip() for n in str(value).split(",") if n.strip())
    if names - set(NAMES):
        raise ValueError(f"ARENA_DEVICES names {', '.join(sorted(names - set(NAMES)))}: "
                         f"the devices are {', '.join(NAMES)}")
    return names


def on(name: str) -> bool:
    return name in chosen(current_app.config["DEVICES"])


# -- keep-prepared ----------------------------------------------------------------------------
# psycopg forgets its prepared statements at every rollback (DEALLOCATE ALL), and most
# rollbacks here end transactions that only read. A transaction that wrote nothing
# (PostgreSQL gave it no id) is rolled back on libpq's own connection, which psycopg does not
# watch, so the statements stay prepared.
_WROTE = {True: "SELECT pg_current_xact_id_if_assigned() IS NOT NULL",
          False: "SELECT txid_current_if_assigned() IS NOT NULL"}  # (before PostgreSQL 13)


def keep_prepared_on_rollback(engine: Engine) -> None:
    """On PostgreSQL (psycopg), roll back a transaction that wrote nothing without the
    driver forgetting its prepared statements (see above). Nothing on other databases or
    drivers."""
    if engine.dialect.name != "postgresql" or engine.dialect.driver != "psycopg":
        return
    from psycopg import Error as DriverError
    from psycopg.pq import ExecStatus, TransactionStatus

    def rollback_keeping_statements(conn) -> None:
        if conn.invalidated or not conn.connection.is_valid:
            return  # (its connection was lost or dropped: there is nothing to keep)
        driver = conn.connection.dbapi_connection
        if driver is None or driver.prepare_threshold is None:
            return  # (nothing prepared to keep)
        if driver.info.transaction_status != TransactionStatus.INTRANS:
            return  # idle, or failed (an error inside it): the driver's rollback as ever
        try:
            cursor = driver.cursor()
            try:
                cursor.execute(_WROTE[driver.info.server_version >= 130000])
                wrote = cursor.fetchone()[0]
            finally:
                cursor.close()
            if not wrote:
                ended = driver.pgconn.exec_(b"ROLLBACK")
                if ended.status != ExecStatus.COMMAND_OK:
                    log.warning("rollback on libpq failed (%s); the driver's follows",
                                ended.error_message.decode(errors="replace"))
        except DriverError as error:  # (a lost connection: the driver's rollback follows)
            log.debug("keeping prepared statements over a rollback failed: %s", error)

    event.listen(engine, "rollback", rollback_keeping_statements)


# -- fixed-values -----------------------------------------------------------------------------
_WORD = re.compile(r"[a-z_]+")


def fixed(value: int | str):
    """``value`` (a count, or a word of the code's own such as a criterion) written into a
    statement built once, where it would otherwise be sent as a parameter. PostgreSQL plans
    a prepared statement for its values each time it runs unless its plan for any values
    (the generic plan) costs no more, and without the value it guesses: a LIMIT at a tenth
    of the rows, a criterion as the average of all three (tests/unit/test_matchmaking.py
    holds the session's statements to their kept plans). Plain: the value itself."""
    if isinstance(value, str) and not _WORD.fullmatch(value):
        raise ValueError(f"not a word to write into a statement: {value!r}")
    if not on("fixed-values"):
        return value
    if isinstance(value, str):
        return literal_column(f"'{value}'", type_=String)
    return literal_column(str(int(value)), type_=Integer)


# -- writer-queue -----------------------------------------------------------------------------
# The writer threads of one process queue here and wake the moment it is free, instead of
# sleeping in SQLite's busy handler (1-100 ms steps). Other processes still meet at SQLite's
# lock.
sqlite_writer = threading.RLock()


def writer_queue():
    """What a write transaction on SQLite holds first: this process's queue, or nothing."""
    return sqlite_writer if on("writer-queue") else nullcontext()


# -- switch-interval --------------------------------------------------------------------------
def switch_interval(app) -> None:
    """Hand the GIL on every ``SWITCH_INTERVAL_MS`` in this process (a server's)."""
    interval = app.config["SWITCH_INTERVAL_MS"]
    if isinstance(interval, bool) or not isinstance(interval, int | float) or interval <= 0:
        raise ValueError(f"ARENA_SWITCH_INTERVAL_MS must be a positive number of "
                         f"milliseconds, not {interval!r}")
    if "switch-interval" in chosen(app.config["DEVICES"]):
        sys.setswitchinterval(interval / 1000)
