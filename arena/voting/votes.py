"""Voting: accept a vote for an issued task, once, and update the online Elo in the same
transaction; rebuild every derived number from the vote log.

Lock before you number (DESIGN.md §4): the rating rows of both models are locked
(``SELECT ... FOR UPDATE``, in model-id order so two votes never deadlock) *before* the vote
row takes its id, so on PostgreSQL the order of ids equals the order in which the ratings were
updated and a replay in id order reproduces them exactly. SQLite serialises writers through
``BEGIN IMMEDIATE``; everything the vote needs is read before that lock is taken.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from flask import current_app
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from arena.config import CRITERIA
from arena.errors import Invalid
from arena.extensions import db
from arena.infra.database import at_least, at_most, retry_on_lock, write_transaction
from arena.models import Comparison, EloRating, GenModel, Image, Task, Vote, Voter, utcnow
from arena.ranking.elo import EloParams, elo_update
from arena.voting import flags as vote_flags
from arena.voting import matchmaking, pacing
from arena.voting.tasks import NotYourTask, TaskNotFound, owned_task, require_read

__all__ = ["InvalidVote", "NotYourTask", "TaskNotFound", "VoteResult", "cast_vote",
           "ensure_ratings", "replay"]


class InvalidVote(Invalid):
    pass


@dataclass(frozen=True)
class VoteResult:
    accepted: bool
    session_id: str  # public id of the task's session, for the next card
    duplicate: bool = False
    validation_failed: bool = False


@dataclass(frozen=True)
class Ballot:
    """Everything a vote writes, read before the write transaction begins."""

    task_id: int
    voter_id: int
    comparison_id: int
    criterion: str
    choice: str
    winner_image_id: int
    loser_image_id: int
    winner_model_id: int | None
    loser_model_id: int | None
    is_validation: bool
    correct: bool | None
    response_ms: int | None
    server_ms: int
    flags: int
    at: datetime

    @property
    def rated(self) -> bool:
        """Whether the vote moves the online Elo: an unflagged vote on a regular pair of two
        different models."""
        return (not self.is_validation and not self.flags
                and None not in (self.winner_model_id, self.loser_model_id)
                and self.winner_model_id != self.loser_model_id)


def elo_params() -> EloParams:
    cfg = current_app.config
    return EloParams(k=float(cfg["ELO_K"]), base=float(cfg["ELO_BASE"]),
                     scale=float(cfg["ELO_SCALE"]), initial=float(cfg["ELO_INITIAL"]))


def ensure_ratings(model_ids: list[int]) -> None:
    """Create missing rating rows at the initial rating (not committed). Called when models
    join, so the vote path only ever locks rows that exist."""
    initial = float(current_app.config["ELO_INITIAL"])
    have = set(db.session.execute(
        select(EloRating.criterion, EloRating.model_id).where(EloRating.model_id.in_(model_ids))
    ).all())
    for model_id in model_ids:
        for criterion in CRITERIA:
            if (criterion, model_id) not in have:
                db.session.add(EloRating(criterion=criterion, model_id=model_id, rating=initial))


def _validate_payload(choice, response_ms) -> int | None:
    if choice not in ("left", "right"):
        raise InvalidVote("choice must be 'left' or 'right'", field="choice")
    if response_ms is None:
        return None
    if isinstance(response_ms, bool) or not isinstance(response_ms, int):
        raise InvalidVote("response_ms must be an integer number of milliseconds",
                          field="response_ms")
    if not 0 <= response_ms <= current_app.config["MAX_RESPONSE_MS"]:
        raise InvalidVote("response_ms out of range", field="response_ms")
    return response_ms


def cast_vote(voter: Voter, task_id: int, choice, response_ms=None, *,
              now: datetime | None = None) -> VoteResult:
    """Record ``voter``'s answer to task ``task_id`` and commit it with its Elo update.
    ``now`` is the server's clock (simulations pass their own; requests never do).

    A second answer to the same task (a double tap, a replayed request, a race between two
    requests) changes nothing and returns ``VoteResult(accepted=False, duplicate=True)``.

    Raises
    ------
    TaskNotFound, NotYourTask
        No such task, or one issued to another voter.
    ReadNotConfirmed
        An alignment task whose caption the voter has not confirmed reading.
    InvalidVote
        Malformed choice or response time.
    """
    task = owned_task(voter, task_id)
    session_id = task.session.public_id
    if task.answered_at is not None:
        return VoteResult(accepted=False, session_id=session_id, duplicate=True)
    require_read(task)
    response_ms = _validate_payload(choice, response_ms)
    now = now or utcnow()
    ballot = _ballot(task, voter, choice, response_ms, now)
    db.session.rollback()  # end the read snapshot; the write transaction starts clean
    try:
        retry_on_lock(lambda: _record(ballot, elo_params()))
    except IntegrityError:  # the unique task_id: a concurrent request recorded it first
        db.session.rollback()
        return VoteResult(accepted=False, session_id=session_id, duplicate=True)
    if ballot.is_validation:
        matchmaking.gold_wanted.send(None, voter_id=ballot.voter_id,
                                     criterion=ballot.criterion, pool=voter.pool or 0)
    return VoteResult(accepted=True, session_id=session_id,
                      validation_failed=ballot.correct is False)


def _ballot(task: Task, voter: Voter, choice: str, response_ms: int | None, now) -> Ballot:
    comparison = db.session.get(Comparison, task.comparison_id)
    winner_id, loser_id = ((task.left_image_id, task.right_image_id) if choice == "left"
                           else (task.right_image_id, task.left_image_id))
    models = dict(db.session.execute(
        select(Image.id, Image.model_id).where(Image.id.in_([winner_id, loser_id]))).all())
    server_ms = _server_ms(task, voter, now)
    return Ballot(
        task_id=task.id, voter_id=task.voter_id, comparison_id=comparison.id,
        criterion=comparison.criterion, choice=choice, winner_image_id=winner_id,
        loser_image_id=loser_id, winner_model_id=models[winner_id],
        loser_model_id=models[loser_id], is_validation=comparison.is_validation,
        correct=(winner_id == comparison.correct_image_id) if comparison.is_validation
        else None,
        response_ms=response_ms, server_ms=server_ms,
        flags=_flags(comparison.criterion, server_ms, voter), at=now)


def _server_ms(task: Task, voter: Voter, now) -> int:
    """Time since the voter's previous action the server saw: the task shown (or issued),
    its caption confirmed, or their last vote in any session (arena.voting.pacing)."""
    ready = max(t for t in (task.shown_at or task.issued_at, task.read_confirmed_at,
                            voter.last_action_at) if t is not None)
    return max(0, round((now - ready).total_seconds() * 1000))


def _floor_ms(criterion: str) -> int:
    return int(current_app.config["MIN_VOTE_MS"].get(criterion, 0))


def _flags(criterion: str, server_ms: int, voter: Voter) -> int:
    cfg = current_app.config
    flags = 0
    if server_ms < _floor_ms(criterion):
        flags |= vote_flags.TOO_FAST
    if voter.trust < cfg["TRUST_FLOOR"]:
        flags |= vote_flags.DISTRUSTED
    return flags


def _record(ballot: Ballot, params: EloParams) -> None:
    """One write transaction: take the voter's turn (the pacing floor, decided under the
    voter's row lock), lock the ratings, insert the vote, move the counters."""
    with write_transaction():
        if not pacing.take_turn(ballot.voter_id, ballot.at, _floor_ms(ballot.criterion)):
            ballot = replace(ballot, flags=ballot.flags | vote_flags.TOO_FAST)
        ratings = _lock_ratings(ballot) if ballot.rated else {}
        db.session.add(Vote(
            task_id=ballot.task_id, voter_id=ballot.voter_id,
            comparison_id=ballot.comparison_id, criterion=ballot.criterion,
            choice=ballot.choice, winner_image_id=ballot.winner_image_id,
            loser_image_id=ballot.loser_image_id, winner_model_id=ballot.winner_model_id,
            loser_model_id=ballot.loser_model_id, is_validation=ballot.is_validation,
            correct=ballot.correct, response_ms=ballot.response_ms,
            server_ms=ballot.server_ms, flags=ballot.flags, created_at=ballot.at))
        db.session.flush()  # the unique task_id refuses a concurrent duplicate here
        db.session.execute(update(Task).where(Task.id == ballot.task_id)
                           .values(answered_at=ballot.at))
        if not ballot.flags:  # only counted votes fill a comparison's quota
            db.session.execute(
                update(Comparison).where(Comparison.id == ballot.comparison_id).values(
                    votes_count=Comparison.votes_count + 1,
                    progress=(Comparison.votes_count + 1) * 1000 / Comparison.target_votes))
        if ratings:
            winner, loser = ratings[ballot.winner_model_id], ratings[ballot.loser_model_id]
            winner.rating, loser.rating = elo_update(winner.rating, loser.rating, 1.0, params)
            winner.votes += 1
            loser.votes += 1
            winner.wins += 1
        if ballot.correct is not None:
            _adjust_trust(ballot.voter_id, ballot.correct)


def _lock_ratings(ballot: Ballot) -> dict[int, EloRating]:
    rows = db.session.scalars(
        select(EloRating)
        .where(EloRating.criterion == ballot.criterion,
               EloRating.model_id.in_([ballot.winner_model_id, ballot.loser_model_id]))
        .order_by(EloRating.model_id)
        .with_for_update())
    ratings = {r.model_id: r for r in rows}
    if len(ratings) != 2:
        raise RuntimeError("rating rows missing; run `arena elo replay`")
    return ratings


def _adjust_trust(voter_id: int, correct: bool) -> None:
    cfg = current_app.config
    if correct:
        values = {"validations_passed": Voter.validations_passed + 1,
                  "trust": at_most(Voter.trust + cfg["TRUST_REWARD"], 1.0)}
    else:
        values = {"validations_failed": Voter.validations_failed + 1,
                  "trust": at_least(Voter.trust - cfg["TRUST_PENALTY"], 0.0)}
    db.session.execute(update(Voter).where(Voter.id == voter_id).values(**values))


def replay(progress=None) -> dict[str, int]:
    """Rebuild online Elo and per-comparison counters from the vote log, in vote-id order,
    with the same update function and the same rule as the live path (flagged votes do not
    count); commits. Returns votes replayed per criterion."""
    params = elo_params()
    model_ids = list(db.session.scalars(select(GenModel.id)))
    with write_transaction():
        ensure_ratings(model_ids)
        db.session.flush()
        counts = {c: _replay_criterion(c, model_ids, params, progress) for c in CRITERIA}
        _replay_counters()
    return counts


def _replay_criterion(criterion: str, model_ids: list[int], params: EloParams,
                      progress) -> int:
    state = {m: [params.initial, 0, 0] for m in model_ids}
    rows = db.session.execute(
        select(Vote.winner_model_id, Vote.loser_model_id)
        .where(Vote.criterion == criterion, Vote.is_validation.is_(False), Vote.flags == 0,
               Vote.winner_model_id.is_not(None), Vote.loser_model_id.is_not(None))
        .order_by(Vote.id))
    n = 0
    for winner, loser in rows:
        if winner == loser:
            continue
        sw, sl = state[winner], state[loser]
        sw[0], sl[0] = elo_update(sw[0], sl[0], 1.0, params)
        sw[1], sl[1], sw[2] = sw[1] + 1, sl[1] + 1, sw[2] + 1
        n += 1
        if progress is not None:
            progress(1)
    for model_id, (rating, votes, wins) in state.items():
        db.session.execute(
            update(EloRating)
            .where(EloRating.criterion == criterion, EloRating.model_id == model_id)
            .values(rating=rating, votes=votes, wins=wins))
    return n


def _replay_counters() -> None:
    per_comparison = db.session.execute(
        select(Vote.comparison_id, func.count()).where(Vote.flags == 0)
        .group_by(Vote.comparison_id)).all()
    db.session.execute(update(Comparison).values(votes_count=0, progress=0))
    for comparison_id, n in per_comparison:
        db.session.execute(
            update(Comparison).where(Comparison.id == comparison_id)
            .values(votes_count=n, progress=n * 1000 / Comparison.target_votes))


def vote_count() -> int:
    return db.session.scalar(select(func.count()).select_from(Vote))
