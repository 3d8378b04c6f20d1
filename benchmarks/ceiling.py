"""The ceiling for benchmarks/ingest.py: a bare Flask + Flask-SQLAlchemy app that INSERTs one
vote-shaped row per request, on the same database with the same engine settings as Arena
(SQLite in WAL with BEGIN IMMEDIATE writes; PostgreSQL as is). Nothing else: no lookup, no
rule, no lock. Served by gunicorn with Arena's worker and thread counts:

    CEILING_DATABASE_URL=sqlite:////tmp/x.sqlite3 .venv/bin/gunicorn benchmarks.ceiling:app
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from datetime import datetime

from flask import Flask, jsonify, request
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import DateTime, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

import arena.infra.database  # (the same SQLite pragmas, BEGIN handling and pool pings)

app = Flask(__name__)
app.config["SQLALCHEMY_DATABASE_URI"] = os.environ["CEILING_DATABASE_URL"]
db = SQLAlchemy(app)


class CeilingVote(db.Model):
    __tablename__ = "ceiling_vote"
    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[int] = mapped_column(Integer)
    voter_id: Mapped[int] = mapped_column(Integer)
    comparison_id: Mapped[int] = mapped_column(Integer)
    criterion: Mapped[str] = mapped_column(String(20))
    choice: Mapped[str] = mapped_column(String(5))
    winner_image_id: Mapped[int] = mapped_column(Integer)
    loser_image_id: Mapped[int] = mapped_column(Integer)
    response_ms: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime)


with app.app_context():
    db.create_all()
    arena.infra.database.ping_when_idle(db.engine)  # (as Arena's pool: pinged after idling)


@app.get("/healthz")
def healthz():
    return "ok"


@app.post("/vote")
def vote():
    body = request.get_json(silent=True) or {}
    with _write():
        db.session.add(CeilingVote(
            task_id=1, voter_id=1, comparison_id=1, criterion="preference",
            choice=body.get("choice", "left"), winner_image_id=1, loser_image_id=2,
            response_ms=body.get("response_ms"), created_at=datetime.utcnow()))
    return jsonify(accepted=True), 201


@contextmanager
def _write():
    """A write transaction on this app's session, as Arena opens them (immediate on SQLite)."""
    session = db.session()
    session.connection(execution_options={"arena_sqlite_begin": "IMMEDIATE"})
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
