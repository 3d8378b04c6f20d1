"""Is the service able to do its job? What ``/api/v1/health`` reports."""

from __future__ import annotations

from sqlalchemy import select

from arena.extensions import db


def check() -> dict:
    """``{"status": "ok"}`` once the database answers a query (a database error propagates
    and is reported as 503 by the web edge)."""
    db.session.execute(select(1))
    return {"status": "ok"}
