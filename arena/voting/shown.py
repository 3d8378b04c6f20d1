"""What a voter is shown of a session: its tasks in order, each with its caption and the
sizes of its two images, read in one statement as plain values.

The card of every htmx vote and the JSON API's new session are built from this, as Core
rows rather than ORM objects (a card's ORM row handling cost several times the statement).
Whatever the voter may see of a task is decided from these values by
:mod:`arena.web.presenters`, for the pages and the API alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import NamedTuple

from sqlalchemy import and_, case, select, true

from arena import criteria
from arena.extensions import db
from arena.infra.database import param
from arena.models import Comparison, Image, Prompt, Task, VotingSession


class ImageSize(NamedTuple):
    width: int | None
    height: int | None


@dataclass(frozen=True)
class ShownTask:
    """One task of a session as its voter is shown it. ``caption`` is the prompt of an
    alignment task (the read gate's caption), else None; ``total`` the session's task
    count."""

    id: int
    position: int
    total: int
    criterion: str
    caption: str | None
    shown_at: datetime | None
    read_confirmed_at: datetime | None
    answered_at: datetime | None
    left_image: ImageSize
    right_image: ImageSize


@dataclass(frozen=True)
class ShownSession:
    id: int
    public_id: str
    voter_id: int
    criterion: str
    tasks: tuple[ShownTask, ...]  # by position

    def task(self, task_id: int) -> ShownTask | None:
        return next((t for t in self.tasks if t.id == task_id), None)


def session(key: int | str) -> ShownSession | None:
    """The session whose id (``key`` an int) or public id (a str) is ``key``, or None."""
    by = "id" if isinstance(key, int) else "public_id"
    return shown_from_rows(db.session.execute(_query(by, criteria.captioned()),
                                              {"p_key": key}).all())


def session_of_task(task_id: int) -> ShownSession | None:
    """The session task ``task_id`` belongs to, or None."""
    return shown_from_rows(db.session.execute(_query("task", criteria.captioned()),
                                              {"p_key": task_id}).all())


def shown_from_rows(rows: list) -> ShownSession | None:
    """The session of ``rows`` (those of :func:`session`'s statement, or of
    :func:`shown_query`'s), None without any."""
    if not rows:
        return None
    first = rows[0]
    rows = [row for row in rows if row.id is not None]  # (a session without tasks: none)
    tasks = tuple(ShownTask(
        id=row.id, position=row.position, total=len(rows),
        criterion=row.criterion, caption=row.caption, shown_at=row.shown_at,
        read_confirmed_at=row.read_confirmed_at, answered_at=row.answered_at,
        left_image=ImageSize(row.left_width, row.left_height),
        right_image=ImageSize(row.right_width, row.right_height)) for row in rows)
    return ShownSession(id=first.session_id, public_id=first.public_id,
                        voter_id=first.voter_id, criterion=first.criterion, tasks=tasks)


def caption_column(comparison, prompt, captioned: tuple[str, ...]):
    """The read gate's caption in SQL, as :func:`arena.voting.tasks.caption_of` decides it
    for an ORM task: the prompt's text for a comparison of a criterion in ``captioned`` with
    a prompt, else NULL (``comparison`` and ``prompt`` the columns of their tables, the
    prompt outer-joined)."""
    return case((and_(comparison.criterion.in_(captioned), prompt.id.is_not(None)),
                 prompt.text))


@cache
def _query(by: str, captioned: tuple[str, ...]):
    """The session's tasks with their captions and image sizes, one row each, by position;
    ``by`` "id", "public_id" or "task" (the session of task ``p_key``)."""
    session, task = VotingSession.__table__.c, Task.__table__.c
    if by == "task":
        owner = select(task.session_id).where(task.id == param("p_key", task.id))
        where = session.id == owner.scalar_subquery()
    else:
        where = session[by] == param("p_key", session[by])
    return _select(session, task, VotingSession.__table__.outerjoin(
        Task.__table__, task.session_id == session.id), captioned).where(where)


def shown_query(new_session, made, captioned: tuple[str, ...]):
    """The rows of :func:`session`'s statement for a session being written, from the WITH
    clauses that write it: ``new_session`` returns the session's id, public id, voter and
    criterion, ``made`` its tasks' id, position, comparison_id, left_image_id,
    right_image_id, shown_at, read_confirmed_at and answered_at."""
    return _select(new_session.c, made.c, made.join(new_session, true()), captioned)


def _select(session, task, tasks_of_session, captioned: tuple[str, ...]):
    """The session's tasks with their captions and image sizes by position: ``session`` and
    ``task`` the columns of the session and its tasks, ``tasks_of_session`` both joined."""
    comparison, prompt = Comparison.__table__.c, Prompt.__table__.c
    left, right = Image.__table__.alias("left_image"), Image.__table__.alias("right_image")
    joined = (tasks_of_session
              .outerjoin(Comparison.__table__, comparison.id == task.comparison_id)
              .outerjoin(Prompt.__table__, prompt.id == comparison.prompt_id)
              .outerjoin(left, left.c.id == task.left_image_id)
              .outerjoin(right, right.c.id == task.right_image_id))
    return (select(session.id.label("session_id"), session.public_id, session.voter_id,
                   session.criterion, task.id, task.position, task.shown_at,
                   task.read_confirmed_at, task.answered_at,
                   caption_column(comparison, prompt, captioned).label("caption"),
                   left.c.width.label("left_width"), left.c.height.label("left_height"),
                   right.c.width.label("right_width"), right.c.height.label("right_height"))
            .select_from(joined).order_by(task.position))
