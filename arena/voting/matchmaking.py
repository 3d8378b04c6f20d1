"""Matchmaking: which comparisons a voter sees next, grouped into a session of one criterion.

The next comparison is one with the lowest ``progress`` (votes relative to target), never one
already issued to this voter, ties broken at random. Both queries walk the
``ix_comparison_queue`` index from a random ``shuffle_key`` with an anti-join on the voter's
tasks, so a request costs a few index probes however large the campaign grows.
"""

from __future__ import annotations

import secrets

import numpy as np
from blinker import Namespace
from flask import current_app
from sqlalchemy import exists, func, select, update
from sqlalchemy.exc import IntegrityError

from arena.config import CRITERIA, check_criterion
from arena.errors import Conflict, Forbidden, NotFound
from arena.extensions import db
from arena.infra.database import retry_on_lock, write_transaction
from arena.models import Comparison, Task, Voter, VotingSession

# Sent (voter_id=, criterion=, pool=) when a voter has answered a gold pair: the campaigns
# feature checks, after the response has gone (arena.infra.deferred), whether this voter is
# due a new one for their next session (gold_due) and makes it (wired in create_app). Made
# per answered gold vote, never per session issued: sessions opened and left unanswered
# make nothing.
gold_wanted = Namespace().signal("gold-wanted")


class NoTasksAvailable(Conflict):
    """Nothing left to show this voter for the requested criterion (or any criterion)."""


class SessionNotFound(NotFound):
    pass


class NotYourSession(Forbidden):
    pass


def _candidates(voter_id: int, criterion: str, validation: bool, pool: int = 0):
    issued = exists().where(Task.voter_id == voter_id, Task.comparison_id == Comparison.id)
    query = select(Comparison).where(
        Comparison.pool == pool,
        Comparison.criterion == criterion,
        Comparison.is_validation == validation,
        ~issued,
    )
    if validation and criterion == "alignment":  # an alignment task always has a caption
        query = query.where(Comparison.prompt_id.is_not(None))
    return query


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
    voter_id: int, criterion: str, count: int, rng: np.random.Generator,
    validation: bool = False, pool: int = 0,
) -> list[Comparison]:
    """The ``count`` least-served comparisons of ``criterion`` (regular, or gold pairs with
    ``validation``) in the voter's ``pool`` not yet issued to them, lowest progress first,
    random among equals."""
    base = _candidates(voter_id, criterion, validation=validation, pool=pool)
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


GOLD_SAMPLE = 256  # gold pairs drawn from, uniformly, among the least issued


def pick_validation(voter_id: int, criterion: str, rng, pool: int = 0) -> Comparison | None:
    """A gold pair of ``criterion`` this voter has not met, uniformly among those put in the
    fewest sessions so far: none stands out by being shown more often."""
    base = _candidates(voter_id, criterion, validation=True, pool=pool)
    least = db.session.scalar(base.with_only_columns(func.min(Comparison.issued)))
    if least is None:
        return None
    ids = db.session.scalars(base.where(Comparison.issued == least)
                             .with_only_columns(Comparison.id).limit(GOLD_SAMPLE)).all()
    return db.session.get(Comparison, ids[int(rng.integers(len(ids)))])


def gold_due(voter_id: int, criterion: str, pool: int = 0) -> int | None:
    """The campaign to make a gold pair in when this voter would otherwise get none, or only
    ones put in more sessions than the freshest ordinary pair left to them (both counted in
    sessions issued, so opening sessions without answering them inflates both alike); None
    when no new pair is due (see arena.campaigns.gold)."""
    regular = db.session.execute(
        _candidates(voter_id, criterion, validation=False, pool=pool)
        .with_only_columns(Comparison.issued, Comparison.campaign_id)
        .order_by(Comparison.issued).limit(1)).first()
    if regular is None:
        return None
    least_issued = db.session.scalar(
        _candidates(voter_id, criterion, validation=True, pool=pool)
        .with_only_columns(func.min(Comparison.issued)))
    if least_issued is None or least_issued > regular.issued:
        return regular.campaign_id
    return None


def available_criteria(voter_id: int, pool: int = 0) -> list[str]:
    return [
        c
        for c in CRITERIA
        if db.session.scalar(_candidates(voter_id, c, validation=False, pool=pool).limit(1))
        is not None
    ]


def choose_criterion(voter: Voter, rng: np.random.Generator) -> str:
    """A random criterion with work left for this voter, preferring a change from the last."""
    options = available_criteria(voter.id, voter.pool or 0)
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
    Invalid
        If ``criterion`` is not one of the three criteria.
    NoTasksAvailable
        If the voter has answered everything there is.
    """
    if criterion is not None:
        check_criterion(criterion)
    voter_id = voter.id
    criterion = criterion or choose_criterion(voter, rng)  # reads, before any lock
    cfg = current_app.config
    with_gold = cfg["TASKS_PER_SESSION"] > 1 and rng.random() < cfg["VALIDATION_RATE"]
    for _ in range(3):
        try:
            session_id = retry_on_lock(lambda: _issue(voter_id, criterion, with_gold, rng))
            return db.session.get(VotingSession, session_id)
        except IntegrityError:
            # The same voter started two sessions at once and both picked one comparison;
            # the unique (voter, comparison) constraint refused the second: pick again.
            continue
    raise NoTasksAvailable("could not issue a session, please retry")


def _issue(voter_id: int, criterion: str, with_gold: bool, rng: np.random.Generator) -> int:
    """Pick the comparisons and write the session and its tasks; returns the session id."""
    with write_transaction():
        voter = db.session.get(Voter, voter_id)
        items = _pick_items(voter_id, criterion, with_gold, rng, voter.pool or 0)
        session = VotingSession(public_id=secrets.token_hex(12), voter_id=voter_id,
                                criterion=criterion)
        db.session.add(session)
        db.session.execute(update(Comparison).where(Comparison.id.in_([c.id for c in items]))
                           .values(issued=Comparison.issued + 1))
        db.session.flush()
        for position, comparison in enumerate(items):
            left, right = comparison.image_a_id, comparison.image_b_id
            if rng.random() < 0.5:
                left, right = right, left
            db.session.add(Task(session_id=session.id, voter_id=voter_id,
                                comparison_id=comparison.id, position=position,
                                left_image_id=left, right_image_id=right))
        voter.last_criterion = criterion
        return session.id


def _pick_items(voter_id: int, criterion: str, with_gold: bool,
                rng: np.random.Generator, pool: int) -> list[Comparison]:
    """The session's comparisons in the voter's pool: the least-served regular ones, and
    with ``with_gold`` one gold pair at a random position. Raises NoTasksAvailable when no
    regular one is left."""
    size = current_app.config["TASKS_PER_SESSION"]
    validation = pick_validation(voter_id, criterion, rng, pool) if with_gold else None
    items = next_comparisons(voter_id, criterion, size - (validation is not None), rng,
                             pool=pool)
    if not items:
        raise NoTasksAvailable(f"no {criterion} comparisons left for this voter")
    if validation is not None:
        items.insert(int(rng.integers(len(items) + 1)), validation)
    return items


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


def owned_session(public_id: str, voter: Voter | None) -> VotingSession:
    """Session ``public_id``, which must belong to ``voter``.

    Raises
    ------
    SessionNotFound, NotYourSession
    """
    session = session_by_public_id(public_id)
    if session is None:
        raise SessionNotFound("no such session")
    if voter is None or session.voter_id != voter.id:
        raise NotYourSession("this session belongs to another browser: start your own "
                             "from the home page")
    return session
