"""Pacing: one voter, one clock, across every session they hold.

A voter can open many sessions at once; if the minimum vote time and the caption's reveal
were measured per task or per session, opening twenty sessions, waiting once and answering
them back to back would pass both (60 of 60 votes counted, 7.7 ms apart). So the voter
carries the time of their last paced action (a vote, a caption confirmed), and:

* a vote needs the criterion's ``MIN_VOTE_MS`` since that action, or it is flagged too fast;
* a caption's reveal starts at the later of the task being shown and that action.

Both are decided by a conditional ``UPDATE ... WHERE last_action_at <= now - floor``
inside the write transaction: two requests racing each other cannot both read the same
"previous action" and pass, because the second waits for the first's row lock and then
sees its time (PostgreSQL re-checks the condition; SQLite runs writers one at a time).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import cache

from sqlalchemy import case, func, literal_column, or_, select, update

from arena.extensions import db
from arena.infra.database import param
from arena.models import Voter

_VOTER = Voter.__table__.c


@cache
def _turn(also: tuple = (), returning: tuple = ()) -> tuple:
    """take_turn's two UPDATEs, built once per set of other columns (and of columns
    returned): (paced, fallback)."""
    now = param("p_now", _VOTER.last_action_at)
    voter = _VOTER.id == param("p_voter", _VOTER.id)
    paced = (update(Voter.__table__)
             .where(voter, or_(_VOTER.last_action_at.is_(None),
                               _VOTER.last_action_at <= param("p_earliest",
                                                              _VOTER.last_action_at)))
             .values(last_action_at=now, **dict(also)))
    later = or_(_VOTER.last_action_at.is_(None), _VOTER.last_action_at < now)
    fallback = (update(Voter.__table__).where(voter)
                .values(last_action_at=case((later, now), else_=_VOTER.last_action_at),
                        **dict(also)))
    if returning:
        return paced.returning(*returning), fallback.returning(*returning)
    return paced, fallback


def take_turn(voter_id: int, now: datetime, floor_ms: int, also: tuple = (), then=None,
              then_params: dict | None = None, *, returning: tuple = (), **params):
    """In the caller's write transaction: record an action of ``voter_id`` at ``now``, with
    the other voter columns in ``also`` (a gold answer's trust change: ``(name, expression)``
    pairs built once, their parameters in ``params``) in the same statement. Returns whether
    at least ``floor_ms`` passed since their previous action. The time is recorded either
    way (an action too soon still restarts the clock), and never moved backwards. One UPDATE
    when paced, two otherwise.

    With ``then`` (a SELECT built once, e.g. rows to lock; its parameters in
    ``then_params``) its rows are read after the turn is recorded, and ``(paced, rows)``
    returned: on PostgreSQL in the turn's own statement (:func:`_turn_then`, one round trip
    less), elsewhere right after it.

    With ``returning`` (columns built once, e.g. scalar subqueries reading other rows; their
    parameters in ``params``) the turn's UPDATE returns them, and ``(paced, row)`` is
    returned: on SQLite, where a data-modifying WITH clause does not exist, this is how a
    read goes into the turn's statement (one statement fewer inside the writer lock)."""
    paced, fallback = _turn(also, returning)
    values = {"p_voter": voter_id, "p_now": now,
              "p_earliest": now - timedelta(milliseconds=max(floor_ms, 0)), **params}
    rows = None
    if returning:
        row = db.session.execute(paced, values).first()
        if row is not None:
            return True, row
        values.pop("p_earliest")  # (no row: the turn came too soon)
        return False, db.session.execute(fallback, values).first()
    if then is None:
        ok = bool(db.session.execute(paced, values).rowcount)
    elif db.session.get_bind().dialect.name == "postgresql":
        rows = db.session.execute(_turn_then(also, then),
                                  {**values, **(then_params or {})}).all()
        # (no row read: whether the turn was taken shows in the time it recorded)
        ok = bool(rows[0].arena_paced if rows
                  else db.session.execute(_recorded_at(), values).scalar())
    else:
        ok = bool(db.session.execute(paced, values).rowcount)
        rows = db.session.execute(then, then_params or {}).all()
    if not ok:
        values.pop("p_earliest")
        db.session.execute(fallback, values)
    return ok if then is None else (ok, rows)


@cache
def _turn_then(also: tuple, then):
    """The paced UPDATE of :func:`_turn` as a data-modifying WITH clause and ``then`` read
    after it, with ``arena_paced`` (1 when the turn was taken, else 0) on every row. The
    condition on the turn's count makes PostgreSQL run the UPDATE first (a one-time filter
    before ``then``'s scan): the voter's row is locked before any row ``then`` locks, in the
    order the separate statements took them."""
    paced, _ = _turn(also)
    turn = paced.returning(literal_column("1")).cte("arena_turn")
    taken = select(func.count()).select_from(turn).scalar_subquery()
    after = then.where(taken >= 0).subquery("arena_then")
    return select(taken.label("arena_paced"), *after.c)


@cache
def _recorded_at():
    return select(_VOTER.last_action_at == param("p_now", _VOTER.last_action_at)).where(
        _VOTER.id == param("p_voter", _VOTER.id))


def try_turn(voter_id: int, now: datetime, floor_ms: int) -> bool:
    """In the caller's write transaction: record an action at ``now`` only if ``floor_ms``
    passed since the previous one (a caption may be confirmed only then)."""
    paced, _ = _turn()
    return bool(db.session.execute(paced, {
        "p_voter": voter_id, "p_now": now,
        "p_earliest": now - timedelta(milliseconds=floor_ms)}).rowcount)
