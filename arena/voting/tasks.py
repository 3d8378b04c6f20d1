"""Issued tasks: whose they are, when they were shown, and the read gate of alignment tasks.

The read gate (docs/design.md): an alignment caption is revealed one word at a time and the
voter must confirm having read it before choosing. The server is the clock of record for
every channel (HTML, htmx, JSON API): it records when a task was first shown, accepts the
confirmation only once the reveal of that caption could have ended (``REVEAL_WORD_MS`` per
word after it was shown, or after the voter's last action in any session, whichever is
later: see :mod:`arena.voting.pacing`), and :func:`arena.voting.votes.cast_vote` refuses a vote on a
captioned task that was not confirmed (``ReadNotConfirmed``).
"""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import cache

from flask import current_app
from sqlalchemy import select, update

from arena import criteria
from arena.errors import Conflict, Forbidden, NotFound
from arena.extensions import db
from arena.infra.database import param, retry_on_lock, write_transaction
from arena.models import Comparison, Image, Prompt, Task, Voter, VotingSession, utcnow
from arena.voting import matchmaking, pacing, shown
from arena.voting.shown import ShownSession, ShownTask


class TaskNotFound(NotFound):
    pass


class NotYourTask(Forbidden):
    pass


class ReadNotConfirmed(Conflict):
    """A vote on a captioned task whose caption was not confirmed as read."""


class StillRevealing(Conflict):
    """A confirmation that came before the caption's reveal could have ended."""


def owned_task(voter: Voter, task_id: int):
    """Task ``task_id``, which must have been issued to ``voter``, as one row
    (:data:`OwnedTask`): the task, its session's public id, its comparison's criterion,
    validation answer and id, both images' models, and its caption
    (:func:`arena.voting.shown.caption_column`). What every task route (a vote, a caption
    confirmed, a skip, a report) checks before it acts.

    Raises
    ------
    TaskNotFound, NotYourTask
    """
    task = db.session.execute(_owned_query(criteria.captioned()), {"p_task": task_id}).first()
    if task is None:
        raise TaskNotFound(f"no task {task_id}")
    if task.voter_id != voter.id:
        raise NotYourTask("this task was not issued to you")
    return task


OwnedTask = namedtuple("OwnedTask", [
    "id", "voter_id", "session_id", "session_public_id", "left_image_id", "right_image_id",
    "issued_at", "shown_at", "read_confirmed_at", "answered_at", "skipped_at",
    "comparison_id", "criterion", "is_validation", "correct_image_id", "left_model_id",
    "right_model_id", "caption"])


@cache
def _owned_query(captioned: tuple[str, ...]):
    task, session = Task.__table__.c, VotingSession.__table__.c
    comparison, prompt = Comparison.__table__.c, Prompt.__table__.c
    left, right = Image.__table__.alias("left_image"), Image.__table__.alias("right_image")
    columns = (task.id, task.voter_id, task.session_id,
               session.public_id.label("session_public_id"), task.left_image_id,
               task.right_image_id, task.issued_at, task.shown_at, task.read_confirmed_at,
               task.answered_at, task.skipped_at, comparison.id.label("comparison_id"),
               comparison.criterion, comparison.is_validation, comparison.correct_image_id,
               left.c.model_id.label("left_model_id"), right.c.model_id.label("right_model_id"),
               shown.caption_column(comparison, prompt, captioned).label("caption"))
    assert tuple(c.name for c in columns) == OwnedTask._fields
    return (select(*columns)
            .select_from(Task.__table__
                         .join(VotingSession.__table__, session.id == task.session_id)
                         .join(Comparison.__table__, comparison.id == task.comparison_id)
                         .join(left, left.c.id == task.left_image_id)
                         .join(right, right.c.id == task.right_image_id)
                         .outerjoin(Prompt.__table__, prompt.id == comparison.prompt_id))
            .where(task.id == param("p_task", task.id)))


def for_display(task_id: int) -> tuple[ShownSession, ShownTask]:
    """Task ``task_id`` as its voter is shown it, with its session (one statement).

    Raises
    ------
    TaskNotFound
    """
    loaded = shown.session_of_task(task_id)
    if loaded is None:
        raise TaskNotFound(f"no task {task_id}")
    return loaded, loaded.task(task_id)


@dataclass(frozen=True)
class Card:
    """A session as the voter's card shows it (:mod:`arena.voting.shown`); ``task`` the
    open one (the first not answered or skipped), None once the session is done;
    ``following`` the one after it, whose images the page fetches ahead."""

    session: ShownSession
    task: ShownTask | None
    following: ShownTask | None


def card(voter: Voter | None, session: int | str, *, present: bool = True,
         now: datetime | None = None) -> Card:
    """Session ``session`` (its id, or its public id), which must be ``voter``'s, as the
    card shows it, in one statement. With ``present`` its open task is recorded as on the
    voter's screen from ``now`` unless it was before (the reveal of a caption starts then):
    one more statement.

    Raises
    ------
    SessionNotFound, NotYourSession
    """
    loaded = shown.session(session)
    if loaded is None:
        raise matchmaking.SessionNotFound("no such session")
    if voter is None or loaded.voter_id != voter.id:
        raise matchmaking.NotYourSession("this session belongs to another browser: start "
                                         "your own from the home page")
    task = _open_task(loaded)
    if present and task is not None and task.shown_at is None:
        now = now or utcnow()

        def write():
            with write_transaction():
                _mark_shown(task.id, now)

        retry_on_lock(write)
        task = replace(task, shown_at=now)
    return _card(loaded, task)


def _open_task(loaded: ShownSession) -> ShownTask | None:
    """The first task not answered (or skipped) yet, None once the session is done."""
    return next((t for t in loaded.tasks if t.answered_at is None), None)


def _mark_shown(task_id: int, now: datetime) -> None:
    db.session.execute(_first_time_statement("shown_at"), {"p_task": task_id, "p_now": now})


def _card(loaded: ShownSession, task: ShownTask | None) -> Card:
    waiting = [t for t in loaded.tasks if t.answered_at is None]
    return Card(loaded, task, waiting[1] if len(waiting) > 1 else None)


@cache
def _first_time_statement(column: str):
    """Task ``p_task``'s timestamp ``column`` set to ``p_now`` unless it is set already
    (when the task was first shown, its caption first confirmed)."""
    task, stamp = Task.__table__.c, Task.__table__.c[column]
    return (update(Task.__table__)
            .where(task.id == param("p_task", task.id), stamp.is_(None))
            .values({column: param("p_now", stamp)}))


def caption_of(task: Task) -> str | None:
    """The caption a voter must read before choosing: the prompt of a task of a criterion
    that shows one (arena.criteria).
    (Through the task's relationships: free when the session was loaded with them. The
    same rule in SQL: :func:`arena.voting.shown.caption_column`.)"""
    comparison = task.comparison
    if not criteria.get(comparison.criterion).caption or comparison.prompt is None:
        return None
    return comparison.prompt.text


def reveal_ms(caption: str | None) -> int:
    """How long the word-by-word reveal of ``caption`` lasts (0 without one)."""
    if not caption:
        return 0
    return len(caption.split()) * int(current_app.config["REVEAL_WORD_MS"])


def present(tasks: list[Task], now: datetime | None = None) -> None:
    """Record that ``tasks`` are on the voter's screen now, unless they were before (the
    reveal of a caption starts then). Commits."""
    pending = [t.id for t in tasks if t.shown_at is None]
    if not pending:
        return
    now = now or utcnow()

    def write():
        with write_transaction():
            db.session.execute(update(Task).where(Task.id.in_(pending), Task.shown_at.is_(None))
                               .values(shown_at=now))

    retry_on_lock(write)


def confirm_read(voter: Voter, task_id: int, now: datetime | None = None):
    """Record that ``voter`` confirmed reading the caption of task ``task_id``. Commits.
    Confirming twice changes nothing. Returns the task's row as :func:`owned_task` read it
    (before the confirmation).

    Raises
    ------
    TaskNotFound, NotYourTask
    Conflict
        The task has no caption, or was not shown yet.
    StillRevealing
        Before the caption's reveal could have ended (``retry_after_ms`` says how long to
        wait).
    """
    task = owned_task(voter, task_id)
    if task.read_confirmed_at is not None:
        return task
    caption = task.caption
    if caption is None:
        raise Conflict("this task has no caption to confirm")
    if task.shown_at is None:
        raise Conflict("this task has not been shown yet: answer the ones before it first")
    now = now or utcnow()
    reveal = reveal_ms(caption)
    # the reveal starts when the task is shown, or at the voter's last action if later:
    # one caption at a time, however many sessions are open (arena.voting.pacing)
    start = max(t for t in (task.shown_at, voter.last_action_at) if t is not None)
    ready = start + timedelta(milliseconds=reveal)
    if now < ready:
        raise _still_revealing(math.ceil((ready - now).total_seconds() * 1000))
    task_id, voter_id = task.id, voter.id

    def write():
        with write_transaction():
            if not pacing.try_turn(voter_id, now, reveal):  # another action raced this one
                raise _still_revealing(reveal)
            db.session.execute(_first_time_statement("read_confirmed_at"),
                               {"p_task": task_id, "p_now": now})

    retry_on_lock(write)
    return task


def skip(voter: Voter, task_id: int, now: datetime | None = None):
    """The voter cannot decide (or will not judge this pair): the task is closed without a
    vote, so it moves nothing, and the session goes on. Commits. Skipping twice, or a task
    already voted on, changes nothing. Returns the task's row (:func:`owned_task`).

    Raises
    ------
    TaskNotFound, NotYourTask
    """
    task = owned_task(voter, task_id)
    if task.answered_at is not None:
        return task
    now = now or utcnow()
    task_id = task.id

    def write():
        with write_transaction():
            close_without_vote(task_id, now)

    retry_on_lock(write)
    return task


def close_without_vote(task_id: int, now: datetime) -> None:
    """In the caller's write transaction: task ``task_id`` answered and skipped at ``now``
    unless it was answered already (a skip, an image report)."""
    db.session.execute(update(Task).where(Task.id == task_id, Task.answered_at.is_(None))
                       .values(answered_at=now, skipped_at=now))


def _still_revealing(wait_ms: int) -> StillRevealing:
    return StillRevealing("the caption is still being revealed: read it to the end, then "
                          "confirm", retry_after_ms=wait_ms)
