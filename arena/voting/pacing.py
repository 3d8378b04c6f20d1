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

from sqlalchemy import case, or_, update

from arena.extensions import db
from arena.infra.database import param
from arena.models import Voter

_VOTER = Voter.__table__.c


@cache
def _turn(also: tuple = ()) -> tuple:
    """take_turn's two UPDATEs, built once per set of other columns: (paced, fallback)."""
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
    return paced, fallback


def take_turn(voter_id: int, now: datetime, floor_ms: int, also: tuple = (), **params) -> bool:
    """In the caller's write transaction: record an action of ``voter_id`` at ``now``, with
    the other voter columns in ``also`` (a gold answer's trust change: ``(name, expression)``
    pairs built once, their parameters in ``params``) in the same statement. Returns whether
    at least ``floor_ms`` passed since their previous action. The time is recorded either
    way (an action too soon still restarts the clock), and never moved backwards. One UPDATE
    when paced, two otherwise."""
    paced, fallback = _turn(also)
    values = {"p_voter": voter_id, "p_now": now,
              "p_earliest": now - timedelta(milliseconds=max(floor_ms, 0)), **params}
    if db.session.execute(paced, values).rowcount:
        return True
    values.pop("p_earliest")
    db.session.execute(fallback, values)
    return False


def try_turn(voter_id: int, now: datetime, floor_ms: int) -> bool:
    """In the caller's write transaction: record an action at ``now`` only if ``floor_ms``
    passed since the previous one (a caption may be confirmed only then)."""
    paced, _ = _turn()
    return bool(db.session.execute(paced, {
        "p_voter": voter_id, "p_now": now,
        "p_earliest": now - timedelta(milliseconds=floor_ms)}).rowcount)
