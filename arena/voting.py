"""Voting: accept a vote for an issued task, once, and update the online Elo in the same
transaction; rebuild every derived number from the vote log.

Lock before you number (DESIGN.md §4): the rating rows of both models are locked
(``SELECT ... FOR UPDATE``, in model-id order so two votes never deadlock) *before* the vote
row takes its id, so on PostgreSQL the order of ids equals the order in which the ratings were
updated and a replay in id order reproduces them exactly. SQLite serialises writers through
``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import current_app
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from .config import CRITERIA
from .database import at_least, at_most, retry_on_lock, write_transaction
from .extensions import db
from .models import Comparison, EloRating, GenModel, Image, Task, Vote, Voter, utcnow
from .ranking.elo import EloParams, elo_update


class TaskNotFound(LookupError):
    pass


class NotYourTask(PermissionError):
    pass


class InvalidVote(ValueError):
    pass


@dataclass(frozen=True)
class VoteResult:
    accepted: bool
    duplicate: bool = False
    validation_failed: bool = False


def elo_params() -> EloParams:
    cfg = current_app.config
    return EloParams(
        k=float(cfg["ELO_K"]),
        base=float(cfg["ELO_BASE"]),
        scale=float(cfg["ELO_SCALE"]),
        initial=float(cfg["ELO_INITIAL"]),
    )


def ensure_ratings(model_ids: list[int]) -> None:
    """Create missing rating rows at the initial rating (not committed). Called when models
    join, so the vote path only ever locks rows that exist."""
    initial = float(current_app.config["ELO_INITIAL"])
    have = set(
        db.session.execute(
            select(EloRating.criterion, EloRating.model_id).where(
                EloRating.model_id.in_(model_ids)
            )
        ).all()
    )
    for model_id in model_ids:
        for criterion in CRITERIA:
            if (criterion, model_id) not in have:
                db.session.add(EloRating(criterion=criterion, model_id=model_id, rating=initial))


def _validate_payload(choice, response_ms) -> int | None:
    if choice not in ("left", "right"):
        raise InvalidVote("choice must be 'left' or 'right'")
    if response_ms is None:
        return None
    if isinstance(response_ms, bool) or not isinstance(response_ms, int):
        raise InvalidVote("response_ms must be an integer number of milliseconds")
    if not 0 <= response_ms <= current_app.config["MAX_RESPONSE_MS"]:
        raise InvalidVote("response_ms out of range")
    return response_ms


def cast_vote(voter: Voter, task_id: int, choice, response_ms=None) -> VoteResult:
    """Record ``voter``'s answer to task ``task_id`` and commit it with its Elo update.

    A second answer to the same task (a double tap, a replayed request, a race between two
    requests) changes nothing and returns ``VoteResult(accepted=False, duplicate=True)``.

    Raises
    ------
    InvalidVote
        Malformed choice or response time.
    TaskNotFound
        No such task.
    NotYourTask
        The task was issued to another voter.
    """
    response_ms = _validate_payload(choice, response_ms)
    voter_id = voter.id
    params = elo_params()

    def attempt() -> VoteResult:
        task = db.session.get(Task, task_id)
        if task is None:
            raise TaskNotFound(f"no task {task_id}")
        if task.voter_id != voter_id:
            raise NotYourTask("this task was not issued to you")
        if task.answered_at is not None:
            return VoteResult(accepted=False, duplicate=True)
        comparison = db.session.get(Comparison, task.comparison_id)
        winner_id, loser_id = (
            (task.left_image_id, task.right_image_id)
            if choice == "left"
            else (task.right_image_id, task.left_image_id)
        )
        winner = db.session.get(Image, winner_id)
        loser = db.session.get(Image, loser_id)
        db.session.rollback()  # end the read snapshot; the write transaction starts clean

        with write_transaction():
            rated = (
                not comparison.is_validation
                and winner.model_id is not None
                and loser.model_id is not None
                and winner.model_id != loser.model_id
            )
            ratings = {}
            if rated:
                ratings = {
                    r.model_id: r
                    for r in db.session.scalars(
                        select(EloRating)
                        .where(
                            EloRating.criterion == comparison.criterion,
                            EloRating.model_id.in_([winner.model_id, loser.model_id]),
                        )
                        .order_by(EloRating.model_id)
                        .with_for_update()
                    )
                }
                if len(ratings) != 2:
                    raise RuntimeError("rating rows missing; run `arena elo replay`")
            correct = None
            if comparison.is_validation:
                correct = winner_id == comparison.correct_image_id
            vote = Vote(
                task_id=task_id,
                voter_id=voter_id,
                comparison_id=comparison.id,
                criterion=comparison.criterion,
                choice=choice,
                winner_image_id=winner_id,
                loser_image_id=loser_id,
                winner_model_id=winner.model_id,
                loser_model_id=loser.model_id,
                is_validation=comparison.is_validation,
                correct=correct,
                response_ms=response_ms,
            )
            db.session.add(vote)
            db.session.flush()  # the unique task_id refuses a concurrent duplicate here
            db.session.execute(
                update(Task).where(Task.id == task_id).values(answered_at=utcnow())
            )
            db.session.execute(
                update(Comparison)
                .where(Comparison.id == comparison.id)
                .values(
                    votes_count=Comparison.votes_count + 1,
                    progress=(Comparison.votes_count + 1) * 1000 / Comparison.target_votes,
                )
            )
            if rated:
                w, lo = ratings[winner.model_id], ratings[loser.model_id]
                w.rating, lo.rating = elo_update(w.rating, lo.rating, 1.0, params)
                w.votes += 1
                lo.votes += 1
                w.wins += 1
            if correct is not None:
                cfg = current_app.config
                if correct:
                    values = {
                        "validations_passed": Voter.validations_passed + 1,
                        "trust": at_most(Voter.trust + cfg["TRUST_REWARD"], 1.0),
                    }
                else:
                    values = {
                        "validations_failed": Voter.validations_failed + 1,
                        "trust": at_least(Voter.trust - cfg["TRUST_PENALTY"], 0.0),
                    }
                db.session.execute(update(Voter).where(Voter.id == voter_id).values(**values))
        return VoteResult(accepted=True, validation_failed=correct is False)

    try:
        return retry_on_lock(attempt)
    except IntegrityError:
        db.session.rollback()
        return VoteResult(accepted=False, duplicate=True)


def replay(progress=None) -> dict[str, int]:
    """Rebuild online Elo and per-comparison counters from the vote log, in vote-id order,
    with the same update function as the live path; commits. Returns votes replayed per
    criterion."""
    params = elo_params()
    model_ids = list(db.session.scalars(select(GenModel.id)))
    counts = {}
    with write_transaction():
        ensure_ratings(model_ids)
        db.session.flush()
        for criterion in CRITERIA:
            state = {m: [params.initial, 0, 0] for m in model_ids}
            rows = db.session.execute(
                select(Vote.winner_model_id, Vote.loser_model_id)
                .where(
                    Vote.criterion == criterion,
                    Vote.is_validation.is_(False),
                    Vote.winner_model_id.is_not(None),
                    Vote.loser_model_id.is_not(None),
                )
                .order_by(Vote.id)
            )
            n = 0
            for winner, loser in rows:
                if winner == loser:
                    continue
                sw, sl = state[winner], state[loser]
                sw[0], sl[0] = elo_update(sw[0], sl[0], 1.0, params)
                sw[1] += 1
                sl[1] += 1
                sw[2] += 1
                n += 1
                if progress is not None:
                    progress(1)
            for model_id, (rating, votes, wins) in state.items():
                db.session.execute(
                    update(EloRating)
                    .where(EloRating.criterion == criterion, EloRating.model_id == model_id)
                    .values(rating=rating, votes=votes, wins=wins)
                )
            counts[criterion] = n
        per_comparison = dict(
            db.session.execute(
                select(Vote.comparison_id, func.count()).group_by(Vote.comparison_id)
            ).all()
        )
        db.session.execute(update(Comparison).values(votes_count=0, progress=0))
        for comparison_id, n in per_comparison.items():
            db.session.execute(
                update(Comparison)
                .where(Comparison.id == comparison_id)
                .values(votes_count=n, progress=n * 1000 / Comparison.target_votes)
            )
    return counts


def vote_count() -> int:
    return db.session.scalar(select(func.count()).select_from(Vote))
