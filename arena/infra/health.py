"""Is the service able to do its job? What ``/api/v1/health/*`` reports.

- **live**: the process answers (no database): restart it if not.
- **ready**: the database takes a write, and the disks of the SQLite file and the image
  store have room (``READY_MIN_FREE_MB``): send it traffic if so. A read-only file, a full
  disk, or a lost primary show here, not on the next voter's vote. (A no-op write alone
  passed on a full disk: SQLite reuses its WAL file, while a vote needs new pages.)
- ``/api/v1/health`` (kept for existing monitors): the database answers a read.

A database error propagates; the web edge logs its cause and answers 503.
"""

from __future__ import annotations

import logging
import os
import shutil

from flask import current_app
from sqlalchemy import select, text

from arena.errors import Unavailable
from arena.extensions import db
from arena.infra.database import write_transaction

log = logging.getLogger(__name__)


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
    _check_room()
    return {"status": "ready"}


def _check_room() -> None:
    """Raises Unavailable, with a log line, when a disk Arena writes to is (nearly) full."""
    need = current_app.config["READY_MIN_FREE_MB"]
    folders = [current_app.config["IMAGE_DIR"]]
    database = db.engine.url.database if db.engine.url.get_backend_name() == "sqlite" else None
    if database and database != ":memory:" and not database.startswith("file:"):
        folders.append(os.path.dirname(os.path.abspath(database)))
    for folder in folders:
        if not os.path.isdir(folder):
            continue
        free = shutil.disk_usage(folder).free / 2**20
        if free < need:
            log.error("not ready: %.0f MB free on the disk of %s (READY_MIN_FREE_MB=%s)",
                      free, folder, need)
            raise Unavailable(f"disk full: {free:.0f} MB free where Arena writes "
                              f"({folder}), {need} MB needed")
