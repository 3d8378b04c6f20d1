"""Rate-limit counters in a SQLite file, shared by every process on one machine: the default
store (``arena+sqlite:///INSTANCE/ratelimits.sqlite3``), so ``arena serve --workers N``
counts each limit once without Redis. With ``memory://`` each process counted on its own,
and a limit of 60 an hour let ~120 through with two workers (the operations audit).

A `limits <https://limits.readthedocs.io>`_ storage for fixed windows (what arena.web.limits
counts in): one row per key with its count and when its window ends. The counters are
not worth an fsync (``synchronous=OFF``: a power cut may forget the last seconds of counts,
never corrupt the file); WAL lets readers and the one writer overlap.
Several machines share limits through Redis (``RATELIMIT_STORAGE_URI=redis://...``).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import ClassVar

from limits.storage import Storage

SCHEME = "arena+sqlite"
# expired windows are deleted on every this many increments
SWEEP_EVERY = 1000


def default_uri(instance_path: str) -> str:
    return f"{SCHEME}:///{Path(instance_path) / 'ratelimits.sqlite3'}"


class SQLiteStorage(Storage):
    STORAGE_SCHEME: ClassVar[list[str]] = [SCHEME]

    def __init__(self, uri: str | None = None, wrap_exceptions: bool = False, **options):
        super().__init__(uri, wrap_exceptions=wrap_exceptions, **options)
        self.path = Path((uri or "").split("://", 1)[1])
        self.local = threading.local()
        self.increments = 0

    @property
    def base_exceptions(self):
        return sqlite3.Error

    def _db(self) -> sqlite3.Connection:
        connection = getattr(self.local, "connection", None)
        if connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.touch(mode=0o600, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=5, isolation_level=None)
            _in_wal_mode(connection)
            connection.execute("PRAGMA synchronous=OFF")
            connection.execute("CREATE TABLE IF NOT EXISTS counter (key TEXT PRIMARY KEY, "
                               "count INTEGER NOT NULL, ends REAL NOT NULL) WITHOUT ROWID")
            self.local.connection = connection
        return connection

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        now = time.time()
        db = self._db()
        self.increments += 1
        if self.increments % SWEEP_EVERY == 0:
            db.execute("DELETE FROM counter WHERE ends <= ?", (now,))
        # one statement, so atomic: an expired window is replaced, not added to
        (count,) = db.execute(
            "INSERT INTO counter (key, count, ends) VALUES (?1, ?2, ?3) "
            "ON CONFLICT (key) DO UPDATE SET "
            "count = CASE WHEN ends <= ?4 THEN ?2 ELSE count + ?2 END, "
            "ends = CASE WHEN ends <= ?4 THEN ?3 ELSE ends END "
            "RETURNING count", (key, amount, now + expiry, now)).fetchone()
        return int(count)

    def get(self, key: str) -> int:
        row = self._db().execute("SELECT count FROM counter WHERE key = ? AND ends > ?",
                                 (key, time.time())).fetchone()
        return int(row[0]) if row else 0

    def get_expiry(self, key: str) -> float:
        row = self._db().execute("SELECT ends FROM counter WHERE key = ? AND ends > ?",
                                 (key, time.time())).fetchone()
        return float(row[0]) if row else time.time()

    def check(self) -> bool:
        try:
            self._db().execute("SELECT 1").fetchone()
        except sqlite3.Error:
            return False
        return True

    def reset(self) -> int | None:
        return self._db().execute("DELETE FROM counter").rowcount

    def clear(self, key: str) -> None:
        self._db().execute("DELETE FROM counter WHERE key = ?", (key,))


def _in_wal_mode(connection: sqlite3.Connection, wait: float = 5.0) -> None:
    """Put the counter file in WAL mode (once: the mode stays with the file). Changing the
    mode does not wait in SQLite's busy handler: threads or processes opening a new file at
    the same moment got "database is locked" (the shared-store test's 8 threads did, about
    once in a few hundred runs), so a busy refusal is retried until ``wait`` runs out."""
    deadline = time.monotonic() + wait
    while True:
        try:
            if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
