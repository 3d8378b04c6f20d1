"""Is the service able to do its job? What ``/api/v1/health/*`` reports.

- **live**: the process answers (no database): restart it if not.
- **ready**: the database takes a write: send it traffic if so. A read-only file, a full disk,
  or a lost primary show here, not on the next voter's vote.
- ``/api/v1/health`` (kept for existing monitors): the database answers a read.

A database error propagates; the web edge logs its cause and answers 503.
"""

from __future__ import annotations

from sqlalchemy import select, text

from arena.extensions import db
from arena.infra.database import write_transaction


def check() -> dict:
    """``{"status": "ok"}`` once the database answers a query."""
    db.session.execute(select(1))
    return {"status": "ok"}


def alive() -> dict:
    return {"status": "alive"}


def ready() -> dict:
    """``{"status": "ready"}`` once a write commits: a no-op UPDATE of the one row every
    migrated database has (it takes the write lock, writes the journal or WAL, commits)."""
    with write_transaction() as session:
        session.execute(text("UPDATE alembic_version SET version_num = version_num"))
    return {"status": "ready"}
