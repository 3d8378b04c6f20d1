"""Voting: accept a vote for an issued task, once: the vote appended to the log with its
task's and pair's counters, in one short transaction that locks only the voter's row; rebuild
every derived number from the vote log. The online Elo is the log replayed in id order
(:mod:`arena.voting.live_elo`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from functools import cache

from flask import current_app
from sqlalchemy import case, func, insert, literal_column, select, update
from sqlalchemy.exc import IntegrityError

from arena import criteria, events
from arena.errors import Conflict, Invalid
from arena.extensions import db
from arena.infra.database import at_least, at_most, param, retry_on_lock, write_transaction
from arena.models import (
    QUEUE_LEVELS,
    STOPPED,
    Comparison,
    EloRating,
    GenModel,
    Task,
    Vote,
    Voter,
    utcnow,
)
from arena.voting import flags as vote_flags
from arena.voting import live_elo, pacing, trust
from arena.voting.tasks import NotYourTask, ReadNotConfirmed, TaskNotFound, owned_task

__all__ = ["InvalidVote", "NotYourTask", "TaskNotFound", "VoteResult", "cast_vote",
           "ensure_ratings", "replay"]


class InvalidVote(Invalid):
    pass


class TaskSkipped(Conflict):
    """A vote on a task the voter skipped."""


@dataclass(frozen=True)
class VoteResult:
    """``uncounted``: why an accepted vote does not count in any ranking ("too_fast",
    "distrusted"; empty when it counts). A held voter is not told (the screen's verdict is
    the operator's to share), nor is a gold pair told apart: it says what an ordinary vote
    would. (Whether it waits for the voter's trust is not said either: the vote after which
    it stops waiting would name the gold answer that earned it.)"""

    accepted: bool
    session_id: str  # public id of the task's session, for the next card
    duplicate: bool = False
    validation_failed: bool = False
    uncounted: tuple[str, ...] = ()


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
    language: str | None = None  # the page's (arena.web.i18n)
    public: bool = True  # counts in public figures as stamped (arena.voting.trust)
    earns: bool = False  # completes the voter's record: their waiting votes count from it
    reviewed: bool = False  # the voter's votes wait on a cohort review


def ensure_ratings(model_ids: list[int]) -> None:
    """Create missing rating rows at the initial rating, and each criterion's checkpoint
    (:mod:`arena.voting.live_elo`), not committed. Called when models join and by
    ``arena db upgrade``."""
    initial = float(current_app.config["ELO_INITIAL"])
    have = set(db.session.execute(
        select(EloRating.criterion, EloRating.model_id).where(EloRating.model_id.in_(model_ids))
    ).all())
    for model_id in model_ids:
        for criterion in criteria.names():
            if (criterion, model_id) not in have:
                db.session.add(EloRating(criterion=criterion, model_id=model_id, rating=initial))
    live_elo.ensure_checkpoints()


def ensure_all_ratings() -> None:
    """Every model's rating row for every criterion, one added to ``EXTRA_CRITERIA`` too
    (after ``arena db upgrade``). Commits."""
    ensure_ratings(db.session.scalars(select(GenModel.id)).all())
    db.session.commit()


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
              now: datetime | None = None, language: str | None = None) -> VoteResult:
    """Record ``voter``'s answer to task ``task_id`` and commit it with its Elo update.
    ``now`` is the server's clock (simulations pass their own; requests never do);
    ``language`` the code of the language the voter's page was in, stored with the vote.

    A second answer to the same task (a double tap, a replayed request, a race between two
    requests) changes nothing and returns ``VoteResult(accepted=False, duplicate=True)``.

    One read (the task with its session, comparison and both images' models), then one
    write transaction that re-reads nothing: the voter's turn, the rating pair, the vote, the
    task and the comparison's counter.

    Raises
    ------
    TaskNotFound, NotYourTask
        No such task, or one issued to another voter.
    ReadNotConfirmed
        An alignment task whose caption the voter has not confirmed reading.
    InvalidVote
        Malformed choice or response time.
    """
    response_ms = _validate_payload(choice, response_ms)  # (a malformed replay is no duplicate)
    context = owned_task(voter, task_id)
    if context.skipped_at is not None:
        raise TaskSkipped("this task was skipped; go on with the next one")
    if context.answered_at is not None:
        return VoteResult(accepted=False, session_id=context.session_public_id, duplicate=True)
    if context.caption is not None and context.read_confirmed_at is None:
        raise ReadNotConfirmed("confirm that you read the caption before choosing")
    ballot = replace(_ballot(context, voter, choice, response_ms, now or utcnow()),
                     language=language)
    pool = voter.pool or 0  # (read before the commit expires the voter)
    try:
        flags = retry_on_lock(
            lambda: _record(ballot, stamp_now=now is None))
    except IntegrityError:  # the unique task_id: a concurrent request recorded it first
        db.session.rollback()
        return VoteResult(accepted=False, session_id=context.session_public_id, duplicate=True)
    if ballot.is_validation:
        events.gold_wanted.send(None, voter_id=ballot.voter_id,
                                     criterion=ballot.criterion, pool=pool)
    told = vote_flags.names(flags & (vote_flags.TOO_FAST | vote_flags.DISTRUSTED))
    return VoteResult(accepted=True, session_id=context.session_public_id,
                      validation_failed=ballot.correct is False, uncounted=tuple(told))


def _ballot(context, voter: Voter, choice: str, response_ms: int | None, now) -> Ballot:
    sides = {"left": (context.left_image_id, context.left_model_id),
             "right": (context.right_image_id, context.right_model_id)}
    (winner_id, winner_model), (loser_id, loser_model) = (
        sides[choice], sides["right" if choice == "left" else "left"])
    server_ms = _server_ms(context, voter, now)
    correct = (winner_id == context.correct_image_id) if context.is_validation else None
    return Ballot(
        task_id=context.id, voter_id=context.voter_id, comparison_id=context.comparison_id,
        criterion=context.criterion, choice=choice, winner_image_id=winner_id,
        loser_image_id=loser_id, winner_model_id=winner_model, loser_model_id=loser_model,
        is_validation=context.is_validation, correct=correct,
        response_ms=response_ms, server_ms=server_ms,
        flags=_flags(context.criterion, server_ms, voter), at=now,
        public=trust.counts_now(voter), reviewed=voter.review_id is not None,
        earns=trust.earns(voter, correct, now) if context.is_validation else False)


def _server_ms(context, voter: Voter, now) -> int:
    """Time since the voter's previous action the server saw: the task shown (or issued),
    its caption confirmed, or their last vote in any session (arena.voting.pacing)."""
    ready = max(t for t in (context.shown_at or context.issued_at, context.read_confirmed_at,
                            voter.last_action_at) if t is not None)
    return max(0, round((now - ready).total_seconds() * 1000))


def _floor_ms(criterion: str) -> int:
    floors = current_app.config["MIN_VOTE_MS"]
    return int(criteria.get(criterion).min_vote_ms if floors is None
               else floors.get(criterion, 0))


def _flags(criterion: str, server_ms: int, voter: Voter) -> int:
    cfg = current_app.config
    flags = 0
    if server_ms < _floor_ms(criterion):
        flags |= vote_flags.TOO_FAST
    if voter.trust < cfg["TRUST_FLOOR"]:
        flags |= vote_flags.DISTRUSTED
    if voter.held_at is not None:
        flags |= vote_flags.HELD
    return flags


def _record(ballot: Ballot, *, stamp_now: bool = False) -> int:
    """One write transaction: the voter's turn (the pacing floor, decided under the voter's
    row lock, with the trust change of a gold answer), then the vote inserted, the task
    marked answered and the comparison's counter moved (one statement on PostgreSQL, three on
    SQLite; one more when the vote came too fast). No rating is moved here: the online Elo
    is the log replayed in id order (:mod:`arena.voting.live_elo`), so a vote locks no row
    another model's votes wait for. Every statement is built once per shape of vote
    (:func:`_writes`) and run with this vote's values.

    With ``stamp_now`` the vote is stamped once its locks are held (the writer lock on
    SQLite, the voter's row on PostgreSQL), not when the request came (the pacing's time,
    ``ballot.at``): it commits within milliseconds of its stamp, which the public pages'
    cut-off and the live Elo's checkpoint count on (arena.analysis.published.SETTLED).
    Returns the vote's flags."""
    with write_transaction():
        also, trust_step = _trust_change(ballot.correct, ballot.earns)
        if not pacing.take_turn(ballot.voter_id, ballot.at, _floor_ms(ballot.criterion), also,
                                **trust_step):
            ballot = replace(ballot, flags=ballot.flags | vote_flags.TOO_FAST)
        values = {f"v_{name}": getattr(ballot, name) for name in _VOTE_COLUMNS}
        values["v_created_at"] = max(utcnow(), ballot.at) if stamp_now else ballot.at
        counts = ballot.public or (ballot.earns and not ballot.reviewed)
        values["v_public_at"] = values["v_created_at"] if counts else None
        # (the unique task_id refuses a concurrent duplicate at the INSERT: all of it, then)
        postgres = db.session.get_bind().dialect.name == "postgresql"
        for statement in _writes(counted=not ballot.flags, combined=postgres):
            db.session.execute(statement, values)
        if ballot.earns and not ballot.reviewed:  # (once in a voter's life)
            trust.admit(ballot.voter_id, values["v_created_at"])
    return ballot.flags


_VOTE_COLUMNS = ("task_id", "voter_id", "comparison_id", "criterion", "choice",
                 "winner_image_id", "loser_image_id", "winner_model_id", "loser_model_id",
                 "is_validation", "correct", "response_ms", "server_ms", "flags", "language")


@cache
def _writes(*, counted: bool, combined: bool) -> tuple:
    """The vote, then the task answered and the comparison's counter (only counted votes fill
    a comparison's quota). ``combined`` (PostgreSQL): one statement, the others as
    data-modifying WITH clauses (one round trip instead of three); else one statement each.
    The same rows either way. Parameters: ``v_<column>`` of the vote."""
    vote, task, comparison = Vote.__table__.c, Task.__table__.c, Comparison.__table__.c
    values = {name: param(f"v_{name}", vote[name])
              for name in (*_VOTE_COLUMNS, "created_at", "public_at")}
    writes = [update(Task.__table__).where(task.id == values["task_id"])
              .values(answered_at=values["created_at"])]
    if counted:
        writes.append(update(Comparison.__table__).where(
            comparison.id == values["comparison_id"]).values(
            votes_count=comparison.votes_count + 1,
            level=_level(comparison, comparison.votes_count + 1)))
    insert_vote = insert(Vote.__table__).values(values)
    if combined:
        ctes = [w.returning(literal_column("1")).cte(f"w{k}") for k, w in enumerate(writes)]
        return (insert_vote.add_cte(*ctes),)
    return (insert_vote, *writes)


def _trust_change(correct: bool | None, earns: bool = False) -> tuple[tuple, dict]:
    """The voter columns a gold answer changes (none for an ordinary vote), as pacing's
    ``also`` (built once) and its parameters; with ``earns``, the trust it earns too
    (:mod:`arena.voting.trust`)."""
    if correct is None:
        return (), {}
    cfg = current_app.config
    if correct:
        return _trust_columns(True, earns), {"p_trust_step": float(cfg["TRUST_REWARD"])}
    return _trust_columns(False), {"p_trust_step": float(cfg["TRUST_PENALTY"])}


@cache
def _trust_columns(correct: bool, earns: bool = False) -> tuple:
    voter = Voter.__table__.c
    step = param("p_trust_step", voter.trust)
    if correct:
        now = param("p_now", voter.first_gold_at)
        earned = (("earned_at", param("p_now", voter.earned_at)),) if earns else ()
        return (("validations_passed", voter.validations_passed + 1),
                ("trust", at_most(voter.trust + step, 1.0)),
                ("first_gold_at", func.coalesce(voter.first_gold_at, now)), *earned)
    return (("validations_failed", voter.validations_failed + 1),
            ("trust", at_least(voter.trust - step, 0.0)))


# sent after a replay rewrote the derived numbers (the public pages take theirs afresh)


def replay(progress=None) -> dict[str, int]:
    """Rebuild online Elo and per-comparison counters from the vote log, in vote-id order,
    with the same update function and the same rule as the live path (flagged votes do not
    count); commits, then sends :data:`arena.events.log_replayed`. Returns votes replayed per
    criterion."""
    with write_transaction():
        ensure_ratings(list(db.session.scalars(select(GenModel.id))))
        db.session.flush()
        counts = live_elo.rebuild(progress)
        _replay_counters()
    events.log_replayed.send(None)
    return counts


def _replay_counters() -> None:
    per_comparison = db.session.execute(
        select(Vote.comparison_id, func.count()).where(Vote.flags == 0)
        .group_by(Vote.comparison_id)).all()
    db.session.execute(update(Comparison).values(votes_count=0, level=_level(Comparison, 0)))
    for comparison_id, n in per_comparison:
        db.session.execute(
            update(Comparison).where(Comparison.id == comparison_id)
            .values(votes_count=n, level=_level(Comparison, n)))


def _level(comparison, votes):
    """The queue level of ``comparison`` (a table or an entity) with ``votes``: the quarter
    of its target they reach, or STOPPED if it is (a settled pair stays out of the queue)."""
    return case((comparison.level == STOPPED, STOPPED),
                else_=votes * QUEUE_LEVELS // comparison.target_votes)


def vote_count() -> int:
    return db.session.scalar(select(func.count()).select_from(Vote))
