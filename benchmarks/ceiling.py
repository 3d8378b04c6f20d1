"""The ceilings for benchmarks/ingest.py and request_cost.py: a bare Flask + Flask-SQLAlchemy
app on the same database with the same engine settings as Arena (SQLite in WAL with BEGIN
IMMEDIATE writes; PostgreSQL as is). Served by gunicorn with Arena's worker and thread counts:

    CEILING_DATABASE_URL=sqlite:////tmp/x.sqlite3 .venv/bin/gunicorn benchmarks.ceiling:app

Two of them:

- ``POST /vote``, the bare INSERT: one vote-shaped row per request, nothing else (no lookup,
  no rule, no lock). The issue's goal is a share of its requests per second.
- The protocol floor, Arena's voter API (``POST /api/v1/sessions``, ``/api/v1/tasks/<id>/read``
  and ``/vote``, answered in the same JSON shape) with only the writes the protocol records,
  each request in one transaction: a session and its three tasks (every third session a
  captioned one, as Arena's rotation of the three criteria gives), a caption's read time, a
  vote and its task answered. No lookup, no rule, no lock either: no voter read by token, no
  matchmaking, no gold, no pacing, no rate limit, no Elo, no blinded names. The same voter
  flow drives it as drives Arena, so what a vote costs beyond it is what Arena's rules and
  reads cost.
"""

from __future__ import annotations

import itertools
import os
import secrets
from contextlib import contextmanager
from datetime import UTC, datetime

from flask import Flask, jsonify, request
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import DateTime, ForeignKey, Integer, String, bindparam, insert, update
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


class FloorSession(db.Model):
    __tablename__ = "floor_session"
    id: Mapped[int] = mapped_column(primary_key=True)
    public_id: Mapped[str] = mapped_column(String(32))
    voter_id: Mapped[int] = mapped_column(Integer)
    criterion: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(DateTime)


class FloorTask(db.Model):
    __tablename__ = "floor_task"
    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("floor_session.id"))
    voter_id: Mapped[int] = mapped_column(Integer)
    comparison_id: Mapped[int] = mapped_column(Integer)
    position: Mapped[int] = mapped_column(Integer)
    issued_at: Mapped[datetime] = mapped_column(DateTime)
    read_at: Mapped[datetime | None] = mapped_column(DateTime)
    answered_at: Mapped[datetime | None] = mapped_column(DateTime)


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
            response_ms=body.get("response_ms"), created_at=_now()))
    return jsonify(accepted=True), 201


CRITERIA = ("preference", "coherence", "alignment")
_sessions = itertools.count()  # (the criteria in turn, per process)
CAPTION = "A red colored car parked beside a triangular purple flower pot."


@app.post("/api/v1/sessions")
def floor_session():
    """The protocol floor's session: it and its three tasks inserted (SQLAlchemy Core, two
    statements), answered as Arena's API answers (a new voter's token with their first)."""
    token = request.headers.get("Authorization", "").removeprefix("Bearer ")
    voter_id = int(token) if token.isdigit() else 1
    criterion = CRITERIA[next(_sessions) % len(CRITERIA)]
    now, public_id = _now(), secrets.token_hex(12)
    sessions, tasks = FloorSession.__table__, FloorTask.__table__
    with _write() as session:
        session_id = session.execute(insert(sessions).returning(sessions.c.id), {
            "public_id": public_id, "voter_id": voter_id, "criterion": criterion,
            "created_at": now}).scalar_one()
        ids = session.execute(insert(tasks).returning(tasks.c.id, sort_by_parameter_order=True), [
            {"session_id": session_id, "voter_id": voter_id, "comparison_id": position + 1,
             "position": position, "issued_at": now} for position in range(3)]).scalars().all()
    payload = {"criterion": criterion, "question": "Which image do you prefer?",
               "session_id": public_id, "voter_id": voter_id,
               "tasks": [_task_view(task_id, criterion) for task_id in ids]}
    if not token:
        payload["voter_token"] = str(voter_id)
    return jsonify(payload), 201


def _task_view(task_id: int, criterion: str) -> dict:
    view = {"task_id": task_id, "prompt": CAPTION if criterion == "alignment" else None,
            "reveal_ms": 0}
    for side in ("left", "right"):
        url = f"{request.host_url}img/t{task_id}{side[0]}-{secrets.token_urlsafe(16)}/384.webp"
        view[side] = {"url": url, "urls": {"384": url}}
    return view


@app.post("/api/v1/tasks/<int:task_id>/read")
def floor_read(task_id: int):
    with _write() as session:
        session.execute(_TASK_READ, {"p_task": task_id, "p_now": _now()})
    return jsonify(read_confirmed=True)


@app.post("/api/v1/tasks/<int:task_id>/vote")
def floor_vote(task_id: int):
    body = request.get_json(silent=True) or {}
    now = _now()
    with _write() as session:
        session.execute(insert(CeilingVote.__table__), {
            "task_id": task_id, "voter_id": 1, "comparison_id": 1, "criterion": "preference",
            "choice": body.get("choice", "left"), "winner_image_id": 1, "loser_image_id": 2,
            "response_ms": body.get("response_ms"), "created_at": now})
        session.execute(_TASK_ANSWERED, {"p_task": task_id, "p_now": now})
    return jsonify(accepted=True, task_id=task_id), 201


# (Core statements on the table: the ORM's bulk UPDATE added its own bookkeeping)
_TASK = FloorTask.__table__
_TASK_READ = (update(_TASK).where(_TASK.c.id == bindparam("p_task"))
              .values(read_at=bindparam("p_now")))
_TASK_ANSWERED = (update(_TASK).where(_TASK.c.id == bindparam("p_task"))
                  .values(answered_at=bindparam("p_now")))


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


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
