"""The ceilings for benchmarks/ingest.py and request_cost.py: a bare Flask + Flask-SQLAlchemy
app on the same database with the same engine settings as Arena (SQLite in WAL with BEGIN
IMMEDIATE writes; PostgreSQL as is). Served by gunicorn with Arena's worker and thread counts:

    CEILING_DATABASE_URL=sqlite:////tmp/x.sqlite3 .venv/bin/gunicorn benchmarks.ceiling:app

Two of them:

- ``POST /vote``, the bare INSERT: one vote-shaped row per request, nothing else (no lookup,
  no rule, no lock). The issue's goal is a share of its requests per second.
- The protocol floor, Arena's voter API (``POST /api/v1/sessions``, ``/api/v1/tasks/<id>/read``
  and ``/vote``, answered in the same JSON shape) as a minimal correct implementation would
  answer it: the voter found by their hashed token (an indexed read), a session and its
  three tasks inserted (every third session a captioned one, as Arena's rotation of the
  three criteria gives; a pair never issued twice to one voter, by a unique index), a
  caption's read time recorded only on the voter's own unread task, a vote only on the
  voter's own unanswered task whose caption was read (a conditional UPDATE, its rowcount
  checked) and at most once (a unique index). Each write request in one transaction, the
  statements run on the driver's cursor, and on SQLite a process's threads queuing for the
  writer on Arena's lock for them. What it leaves out is what Arena adds beyond the protocol's
  records: matchmaking, gold pairs, pacing, rate limits, Elo, trust, blinded image names.
  The same voter flow drives it as drives Arena, so Arena's share of it is what those cost.

Both report their server times in ``Server-Timing`` as Arena does (``SERVER_TIMING``).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import secrets
import time
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime

from flask import Flask, abort, jsonify, request
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import DateTime, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from arena.infra.database import writer_wait
from arena.infra.devices import sqlite_writer
from arena.web import server_timing

app = Flask(__name__)
app.config["SQLALCHEMY_DATABASE_URI"] = os.environ["CEILING_DATABASE_URL"]
if not app.config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite"):  # (as Arena's pool)
    app.config["SQLALCHEMY_ENGINE_OPTIONS"] = {"pool_pre_ping": True}
app.config["SERVER_TIMING"] = True  # (as the benchmarks run Arena: its own times reported)
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


class FloorVoter(db.Model):
    __tablename__ = "floor_voter"
    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime)


class FloorSession(db.Model):
    __tablename__ = "floor_session"
    id: Mapped[int] = mapped_column(primary_key=True)
    public_id: Mapped[str] = mapped_column(String(32))
    voter_id: Mapped[int] = mapped_column(ForeignKey("floor_voter.id"))
    criterion: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(DateTime)


class FloorTask(db.Model):
    __tablename__ = "floor_task"
    __table_args__ = (UniqueConstraint("voter_id", "comparison_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("floor_session.id"))
    voter_id: Mapped[int] = mapped_column(ForeignKey("floor_voter.id"))
    comparison_id: Mapped[int] = mapped_column(Integer)
    position: Mapped[int] = mapped_column(Integer)
    captioned: Mapped[int] = mapped_column(Integer)
    left_image_id: Mapped[int] = mapped_column(Integer)
    right_image_id: Mapped[int] = mapped_column(Integer)
    issued_at: Mapped[datetime] = mapped_column(DateTime)
    read_at: Mapped[datetime | None] = mapped_column(DateTime)
    answered_at: Mapped[datetime | None] = mapped_column(DateTime)


class FloorVote(db.Model):
    __tablename__ = "floor_vote"
    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("floor_task.id"), unique=True)
    voter_id: Mapped[int] = mapped_column(Integer)
    comparison_id: Mapped[int] = mapped_column(Integer)
    winner_image_id: Mapped[int] = mapped_column(Integer)
    loser_image_id: Mapped[int] = mapped_column(Integer)
    response_ms: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime)


with app.app_context():
    db.create_all()
    POSTGRES = db.engine.dialect.name == "postgresql"
server_timing.install(app)


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
            response_ms=body.get("response_ms"),
            created_at=datetime.now(UTC).replace(tzinfo=None)))
    return jsonify(accepted=True), 201


CRITERIA = ("preference", "coherence", "alignment")
_sessions = itertools.count()  # (the criteria in turn, per process)
CAPTION = "A red colored car parked beside a triangular purple flower pot."
_SQL = {  # (named :parameters, as SQLite takes them; see _run for PostgreSQL's)
    "voter": "SELECT id FROM floor_voter WHERE token_hash = :hash",
    "new_voter": "INSERT INTO floor_voter (token_hash, created_at) VALUES (:hash, :now) "
                 "RETURNING id",
    "session": "INSERT INTO floor_session (public_id, voter_id, criterion, created_at) "
               "VALUES (:public_id, :voter, :criterion, :now) RETURNING id",
    "tasks": "INSERT INTO floor_task (session_id, voter_id, comparison_id, position, captioned, "
             "left_image_id, right_image_id, issued_at) VALUES " + ", ".join(
                 f"(:session, :voter, :comparison{p}, {p}, :captioned, :left{p}, :right{p}, "
                 ":now)" for p in range(3)) + " RETURNING id, position",
    "read": "UPDATE floor_task SET read_at = :now WHERE id = :task AND voter_id = :voter "
            "AND captioned = 1 AND read_at IS NULL",
    "answer": "UPDATE floor_task SET answered_at = :now WHERE id = :task AND voter_id = :voter "
              "AND answered_at IS NULL AND (captioned = 0 OR read_at IS NOT NULL)",
    "vote": "INSERT INTO floor_vote (task_id, voter_id, comparison_id, winner_image_id, "
            "loser_image_id, response_ms, created_at) SELECT id, voter_id, comparison_id, "
            "CASE WHEN :left_won = 1 THEN left_image_id ELSE right_image_id END, "
            "CASE WHEN :left_won = 1 THEN right_image_id ELSE left_image_id END, "
            ":response_ms, :now FROM floor_task WHERE id = :task",
}
_POSTGRES_SQL = {name: re.sub(r":(\w+)", r"%(\1)s", sql) for name, sql in _SQL.items()}


@app.post("/api/v1/sessions")
def floor_session():
    """The protocol floor's session: the voter found by their token (or made, with a new
    token), the session and its three tasks inserted, answered as Arena's API answers."""
    token = _bearer()
    now = _now()
    voter = _voter(token) if token else None
    if token and voter is None:
        abort(401)
    criterion = CRITERIA[next(_sessions) % len(CRITERIA)]
    public_id, new_token = secrets.token_hex(12), None if token else secrets.token_urlsafe(32)
    with _written() as on:
        if voter is None:
            voter = _run(on, "new_voter", hash=_hash(new_token), now=now)[0][0]
        session_id = _run(on, "session", public_id=public_id, voter=voter,
                          criterion=criterion, now=now)[0][0]
        first = 3 * session_id  # (a voter's pairs all differ: sessions never share one)
        tasks = _run(on, "tasks", session=session_id, voter=voter,
                     captioned=int(criterion == "alignment"), now=now,
                     **{f"{key}{p}": value for p in range(3) for key, value in (
                         ("comparison", first + p), ("left", 2 * (first + p)),
                         ("right", 2 * (first + p) + 1))})
    payload = {"criterion": criterion, "question": "Which image do you prefer?",
               "session_id": public_id, "voter_id": voter,
               "tasks": [_task_view(task_id, criterion) for task_id, _ in sorted(
                   tasks, key=lambda row: row[1])]}
    if new_token:
        payload["voter_token"] = new_token
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
    """The caption's read time, on the voter's own captioned task not confirmed before."""
    voter = _voter(_bearer()) or abort(401)
    with _written() as on:
        confirmed = _run(on, "read", task=task_id, voter=voter, now=_now()) == 1
    return jsonify(read_confirmed=confirmed)


@app.post("/api/v1/tasks/<int:task_id>/vote")
def floor_vote(task_id: int):
    """A vote on the voter's own unanswered task (its caption read first), at most once."""
    voter = _voter(_bearer()) or abort(401)
    body = request.get_json(silent=True) or {}
    if body.get("choice") not in ("left", "right"):
        abort(400)
    now = _now()
    with _written() as on:
        if _run(on, "answer", task=task_id, voter=voter, now=now) != 1:
            abort(409)  # (not theirs, answered already, or its caption not read)
        _run(on, "vote", task=task_id, left_won=int(body["choice"] == "left"),
             response_ms=body.get("response_ms"), now=now)
    return jsonify(accepted=True), 201


def _bearer() -> str:
    return request.headers.get("Authorization", "").removeprefix("Bearer ").strip()


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _voter(token: str) -> int | None:
    """The voter of ``token`` (its hash looked up by the unique index), read outside any
    write transaction."""
    if not token:
        return None
    connection = db.session.connection()
    cursor = connection.connection.dbapi_connection.cursor()
    try:
        rows = _run((connection, cursor), "voter", hash=_hash(token))
    finally:
        cursor.close()
    db.session.commit()  # (the read ends: the write begins afresh, as Arena's do)
    return rows[0][0] if rows else None


def _run(on: tuple, name: str, **values):
    """Statement ``name`` on ``on``, a connection (SQLAlchemy's) and its driver's cursor: its
    rows when it returns any, else its rowcount. The engine's listeners are told of it first,
    as Arena's statements tell them (Server-Timing counts them)."""
    connection, cursor = on
    sql = (_POSTGRES_SQL if POSTGRES else _SQL)[name]
    for listener in connection.dispatch.before_cursor_execute:
        listener(connection, cursor, sql, values, None, False)
    cursor.execute(sql, values)
    return cursor.fetchall() if cursor.description else cursor.rowcount


def _now():
    """Now, as the driver stores it: a datetime for psycopg, text for sqlite3 (whose own
    datetime adapter is deprecated), both as SQLAlchemy writes them."""
    now = datetime.now(UTC).replace(tzinfo=None)
    return now if POSTGRES else now.isoformat(" ")


@contextmanager
def _write(queue: bool = False):
    """A write transaction on this app's session, as Arena opens them (immediate on SQLite).
    With ``queue`` (the protocol floor's) a process's threads first queue for SQLite's writer
    on Arena's lock for them (``sqlite_writer``), as Arena's write transactions do; without
    (the bare INSERT's) they meet at SQLite's lock alone, as at every earlier stop. The wait
    and the hold are timed as Arena times them (Server-Timing's ``writer`` and ``held``)."""
    session = db.session()
    waits = writer_wait.get()  # (None on PostgreSQL: no writer lock)
    asked = time.perf_counter()
    with sqlite_writer if queue and not POSTGRES else nullcontext():
        session.connection(execution_options={"arena_sqlite_begin": "IMMEDIATE"})
        holding = time.perf_counter()
        if waits is not None:
            waits[0] += (holding - asked) * 1000
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            if waits is not None:
                waits[1] += (time.perf_counter() - holding) * 1000


@contextmanager
def _written():
    """:func:`_write` queued (the protocol floor's), and its connection with a cursor of the
    driver's."""
    with _write(queue=True) as session:
        connection = session.connection()
        cursor = connection.connection.dbapi_connection.cursor()
        try:
            yield connection, cursor
        finally:
            cursor.close()
