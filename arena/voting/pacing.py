"""Pacing: one voter, one clock, across every session they hold.

A voter can open many sessions at once; if the minimum vote time and the caption's reveal
were measured per task or per session, opening twenty sessions, waiting once and answering
them back to back would pass both (the audit did exactly that: 60 of 60 votes counted, at
7.7 ms apart). So the voter carries the time of their last paced action (a vote, a caption
confirmed), and:

* a vote needs the criterion's ``MIN_VOTE_MS`` since that action, or it is flagged too fast;
* a caption's reveal starts at the later of the task being shown and that action.

Both are decided by a conditional ``UPDATE ... WHERE last_action_at <= now - floor``
inside the write transaction: two requests racing each other cannot both read the same
"previous action" and pass, because the second waits for the first's row lock and then
sees its time (PostgreSQL re-checks the condition; SQLite runs writers one at a time).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import case, or_, update

from arena.extensions import db
from arena.models import Voter


def take_turn(voter_id: int, now: datetime, floor_ms: int, **also) -> bool:
    """In the caller's write transaction: record an action of ``voter_id`` at ``now``, with
    the other voter columns in ``also`` (a gold answer's trust change) in the same
    statement. Returns whether at least ``floor_ms`` passed since their previous action.
    The time is recorded either way (an action too soon still restarts the clock), and
    never moved backwards. One UPDATE when paced, two otherwise."""
    earliest = now - timedelta(milliseconds=max(floor_ms, 0))
    paced = db.session.execute(
        update(Voter).where(Voter.id == voter_id,
                            or_(Voter.last_action_at.is_(None),
                                Voter.last_action_at <= earliest))
        .values(last_action_at=now, **also)).rowcount
    if not paced:
        later = or_(Voter.last_action_at.is_(None), Voter.last_action_at < now)
        db.session.execute(
            update(Voter).where(Voter.id == voter_id)
            .values(last_action_at=case((later, now), else_=Voter.last_action_at), **also))
    return bool(paced)


def try_turn(voter_id: int, now: datetime, floor_ms: int) -> bool:
    """In the caller's write transaction: record an action at ``now`` only if ``floor_ms``
    passed since the previous one (a caption may be confirmed only then)."""
    earliest = now - timedelta(milliseconds=floor_ms)
    return bool(db.session.execute(
        update(Voter).where(Voter.id == voter_id,
                            or_(Voter.last_action_at.is_(None),
                                Voter.last_action_at <= earliest))
        .values(last_action_at=now)).rowcount)
