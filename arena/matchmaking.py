"""Matchmaking: which comparisons a voter sees next, grouped into a session of one criterion.

The next comparison is one with the lowest ``progress`` (votes relative to target), never one
already issued to this voter, ties broken at random. Both queries walk the
``ix_comparison_queue`` index from a random ``shuffle_key`` with an anti-join on the voter's
tasks, so a request costs a few index probes however large the campaign grows.
"""

from __future__ import annotations

import secrets

import numpy as np
from flask import current_app
from sqlalchemy import exists, select
from sqlalchemy.exc import IntegrityError

from .config import CRITERIA
from .database import retry_on_lock, write_transaction
from .extensions import db
from .models import Comparison, Task, Voter, VotingSession


class NoTasksAvailable(LookupError):
    """Nothing left to show this voter for the requested criterion (or any criterion)."""


class UnknownCriterion(ValueError):
    pass


def _candidates(voter_id: int, criterion: str, validation: bool):
    issued = exists().where(Task.voter_id == voter_id, Task.comparison_id == Comparison.id)
    return select(Comparison).where(
        Comparison.criterion == criterion,
        Comparison.is_validation == validation,
        ~issued,
    )


def _pick_at_random_start(query, limit: int, rng: np.random.Generator) -> list[Comparison]:
    """Up to ``limit`` rows of ``query`` taken from a random point of ``shuffle_key``."""
    start = int(rng.integers(0, 2**31))
    rows = list(
        db.session.scalars(
            query.where(Comparison.shuffle_key >= start)
            .order_by(Comparison.shuffle_key)
            .limit(limit)
        )
    )
    if len(rows) < limit:
        rows += db.session.scalars(
            query.where(Comparison.shuffle_key < start)
            .order_by(Comparison.shuffle_key)
            .limit(limit - len(rows))
        )
    return rows


def next_comparisons(
    voter_id: int, criterion: str, count: int, rng: np.random.Generator
) -> list[Comparison]:
    """The ``count`` least-served regular comparisons of ``criterion`` not yet issued to the
    voter, lowest progress first, random among equals."""
    base = _candidates(voter_id, criterion, validation=False)
    chosen: list[Comparison] = []
    floor = -1
    while len(chosen) < count:
        level = db.session.scalar(
            base.where(Comparison.progress > floor)
            .with_only_columns(Comparison.progress)
            .order_by(Comparison.progress)
            .limit(1)
        )
        if level is None:
            break
        chosen += _pick_at_random_start(
            base.where(Comparison.progress == level), count - len(chosen), rng
        )
        floor = level
    return chosen


def pick_validation(voter_id: int, criterion: str, rng) -> Comparison | None:
    rows = _pick_at_random_start(_candidates(voter_id, criterion, validation=True), 1, rng)
    return rows[0] if rows else None


def available_criteria(voter_id: int) -> list[str]:
    return [
        c
        for c in CRITERIA
        if db.session.scalar(_candidates(voter_id, c, validation=False).limit(1)) is not None
    ]


def choose_criterion(voter: Voter, rng: np.random.Generator) -> str:
    """A random criterion with work left for this voter, preferring a change from the last."""
    options = available_criteria(voter.id)
    if not options:
        raise NoTasksAvailable("no comparisons left for this voter")
    if len(options) > 1 and voter.last_criterion in options:
        options.remove(voter.last_criterion)
    return options[int(rng.integers(len(options)))]


def start_session(
    voter: Voter, rng: np.random.Generator, criterion: str | None = None
) -> VotingSession:
    """Issue a session of up to ``TASKS_PER_SESSION`` tasks of one criterion and commit it.

    One task may be a hidden validation pair (with probability ``VALIDATION_RATE``) at a random
    position; left/right order is random per task.

    Raises
    ------
    UnknownCriterion
        If ``criterion`` is not one of the three criteria.
    NoTasksAvailable
        If the voter has answered everything there is.
    """
    if criterion is not None and criterion not in CRITERIA:
        raise UnknownCriterion(f"criterion must be one of {', '.join(CRITERIA)}")
    voter_id = voter.id

    def attempt() -> int:
        with write_transaction():
            fresh = db.session.get(Voter, voter_id)
            chosen_criterion = criterion or choose_criterion(fresh, rng)
            size = current_app.config["TASKS_PER_SESSION"]
            validation = None
            if size > 1 and rng.random() < current_app.config["VALIDATION_RATE"]:
                validation = pick_validation(voter_id, chosen_criterion, rng)
            regular = next_comparisons(
                voter_id, chosen_criterion, size - (validation is not None), rng
            )
            if not regular:
                raise NoTasksAvailable(f"no {chosen_criterion} comparisons left for this voter")
            items = list(regular)
            if validation is not None:
                items.insert(int(rng.integers(len(items) + 1)), validation)
            session = VotingSession(
                public_id=secrets.token_hex(12), voter_id=voter_id, criterion=chosen_criterion
            )
            db.session.add(session)
            db.session.flush()
            for position, comparison in enumerate(items):
                left, right = comparison.image_a_id, comparison.image_b_id
                if rng.random() < 0.5:
                    left, right = right, left
                db.session.add(
                    Task(
                        session_id=session.id,
                        voter_id=voter_id,
                        comparison_id=comparison.id,
                        position=position,
                        left_image_id=left,
                        right_image_id=right,
                    )
                )
            fresh.last_criterion = chosen_criterion
            return session.id

    for _ in range(3):
        try:
            session_id = retry_on_lock(attempt)
            break
        except IntegrityError:
            # The same voter started two sessions at once and both picked one comparison;
            # the unique (voter, comparison) constraint refused the second: pick again.
            continue
    else:
        raise NoTasksAvailable("could not issue a session, please retry")
    return db.session.get(VotingSession, session_id)


def open_task(session: VotingSession) -> Task | None:
    """The first unanswered task of ``session``, or None when the session is complete."""
    return db.session.scalar(
        select(Task)
        .where(Task.session_id == session.id, Task.answered_at.is_(None))
        .order_by(Task.position)
        .limit(1)
    )


def session_by_public_id(public_id: str) -> VotingSession | None:
    return db.session.scalar(select(VotingSession).where(VotingSession.public_id == public_id))
