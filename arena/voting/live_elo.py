"""The online Elo: each criterion's ratings as the vote log replayed in id order with the
live update (:func:`arena.ranking.elo.elo_update`; base 10, scale 400, ``ELO_K``).

A vote moves no rating: it is appended to the log (:mod:`arena.voting.votes`), so no vote
waits for another's lock on a model's row, and the ratings cannot drift from the log. The
rating rows (``EloRating``) hold each criterion's replay up to its checkpoint
(``EloCheckpoint.through_vote_id``); the period's tick moves the checkpoint on over the votes
settled by then (stamped at least ``SETTLED`` before: every vote with a lower id has
committed), and a reading replays the counted votes after it. A reading is therefore the
replay of the whole log to its last committed vote, however far behind the checkpoint is;
the checkpoint only bounds what a reading replays (a period's votes).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy import func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from arena import criteria
from arena.extensions import db
from arena.infra.database import write_transaction
from arena.models import EloCheckpoint, EloRating, Vote, utcnow
from arena.ranking.elo import EloParams, elo_update

# A vote is stamped once it holds its locks and commits milliseconds later, so every vote
# stamped this long ago, and every lower id, has committed (as the public cut-off assumes:
# arena.analysis.published.SETTLED)
SETTLED = timedelta(minutes=2)


def elo_params() -> EloParams:
    cfg = current_app.config
    return EloParams(k=float(cfg["ELO_K"]), base=float(cfg["ELO_BASE"]),
                     scale=float(cfg["ELO_SCALE"]), initial=float(cfg["ELO_INITIAL"]))


def ratings(criterion: str) -> dict[int, list]:
    """``{model_id: [rating, votes, wins]}``: the checkpoint's rows and every counted vote
    after it (one statement reads the rows and their checkpoint: a tick that commits
    meanwhile cannot pair new rows with an old checkpoint)."""
    start, through = _checkpoint(criterion)
    return replayed(criterion, elo_params(), start=start, after=through)


def behind() -> int:
    """How many votes the oldest checkpoint is behind the log (what a reading replays at
    most; the period's tick takes them): for operators."""
    oldest = db.session.scalar(select(func.min(EloCheckpoint.through_vote_id))) or 0
    return db.session.scalar(select(func.count()).select_from(Vote).where(Vote.id > oldest))


def every_rating() -> dict[tuple[str, int], tuple[float, int, int]]:
    """``{(criterion, model_id): (rating, votes, wins)}`` of every criterion now."""
    return {(criterion, m): tuple(row) for criterion in criteria.names()
            for m, row in ratings(criterion).items()}


def replayed(criterion: str, params: EloParams, progress=None, *,
             start: dict[int, list] | None = None, after: int = 0,
             through: int | None = None) -> dict[int, list]:
    """The counted votes of ``criterion`` with ids above ``after`` (and not above
    ``through``, when given) replayed in id order from ``start`` (``{model_id: [rating,
    votes, wins]}``; a model not in it starts at the initial rating)."""
    state = {m: list(row) for m, row in (start or {}).items()}
    query = (select(Vote.winner_model_id, Vote.loser_model_id)
             .where(Vote.criterion == criterion, Vote.is_validation.is_(False), Vote.flags == 0,
                    Vote.winner_model_id.is_not(None), Vote.loser_model_id.is_not(None),
                    Vote.id > after)
             .order_by(Vote.id))
    if through is not None:
        query = query.where(Vote.id <= through)
    for winner, loser in db.session.execute(query):
        if winner == loser:
            continue
        sw = state.setdefault(winner, [params.initial, 0, 0])
        sl = state.setdefault(loser, [params.initial, 0, 0])
        sw[0], sl[0] = elo_update(sw[0], sl[0], 1.0, params)
        sw[1], sl[1], sw[2] = sw[1] + 1, sl[1] + 1, sw[2] + 1
        if progress is not None:
            progress(1)
    return state


def advance(now: datetime | None = None) -> dict[str, int]:
    """Move every criterion's checkpoint on to its votes settled by ``now`` (default: now):
    ``{criterion: votes folded in}``. Safe to run twice at once: the second finds the
    checkpoint moved and writes nothing."""
    settled = db.session.scalar(select(func.max(Vote.id)).where(
        Vote.created_at < (now or utcnow()) - SETTLED)) or 0
    db.session.commit()
    return {criterion: _advance(criterion, settled, elo_params())
            for criterion in criteria.names()}


def rebuild(progress=None) -> dict[str, int]:
    """Replay every criterion's whole log into its rows, the checkpoint at the last vote (in
    the caller's write transaction): ``{criterion: votes replayed}``."""
    last = db.session.scalar(select(func.max(Vote.id))) or 0
    initial = elo_params().initial
    done = {}
    for criterion in criteria.names():
        start = {m: [initial, 0, 0] for m in db.session.scalars(
            select(EloRating.model_id).where(EloRating.criterion == criterion))}
        state = replayed(criterion, elo_params(), progress, start=start, through=last)
        _store(criterion, state, last)
        done[criterion] = sum(wins for _, _, wins in state.values())
    return done


def _advance(criterion: str, settled: int, params: EloParams) -> int:
    start, through = _checkpoint(criterion)
    if settled <= through:
        return 0
    state = replayed(criterion, params, start=start, after=through, through=settled)
    db.session.commit()  # (the reads: the write below is short)
    with write_transaction():
        if not _store(criterion, state, settled, was=through):
            return 0  # (another tick moved it first)
    return sum(row[2] for row in state.values()) - sum(row[2] for row in start.values())


def ensure_checkpoints() -> None:
    """Each criterion's checkpoint row, at no vote where it is missing (not committed; two
    servers upgrading at once both may: the second finds it there)."""
    dialect = postgresql if db.session.get_bind().dialect.name == "postgresql" else sqlite
    db.session.execute(dialect.insert(EloCheckpoint).values(
        [{"criterion": c, "through_vote_id": 0} for c in criteria.names()])
        .on_conflict_do_nothing())


def _checkpoint(criterion: str) -> tuple[dict[int, list], int]:
    """The criterion's rows and its checkpoint, in one statement (0, the rows at the initial
    rating, before the first)."""
    through = (select(EloCheckpoint.through_vote_id)
               .where(EloCheckpoint.criterion == criterion).scalar_subquery())
    rows = db.session.execute(
        select(EloRating.model_id, EloRating.rating, EloRating.votes, EloRating.wins,
               func.coalesce(through, 0)).where(EloRating.criterion == criterion)).all()
    return ({m: [rating, votes, wins] for m, rating, votes, wins, _ in rows},
            rows[0][4] if rows else 0)


def _store(criterion: str, state: dict[int, list], through: int, was: int | None = None
           ) -> bool:
    """Write ``state`` into the rows and the checkpoint at ``through``, if the checkpoint is
    still at ``was`` (when given). Returns whether it was written (its row is made with the
    criterion's rating rows: :func:`arena.voting.votes.ensure_ratings`)."""
    moved = update(EloCheckpoint).where(EloCheckpoint.criterion == criterion).values(
        through_vote_id=through)
    if was is not None:
        moved = moved.where(EloCheckpoint.through_vote_id == was)
    if not db.session.execute(moved).rowcount:
        return False
    for model_id, (rating, votes, wins) in state.items():
        db.session.execute(
            update(EloRating)
            .where(EloRating.criterion == criterion, EloRating.model_id == model_id)
            .values(rating=rating, votes=votes, wins=wins))
    return True
