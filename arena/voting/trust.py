"""Trust earned over time: a voter's votes count in public figures once the voter has
answered ``EARN_TRUST_GOLD`` gold pairs right, each in its own session (a session carries
one at most), the first and the last at least ``EARN_TRUST_HOURS`` apart.

An identity costs a script nothing, and votes shaped to every score's threshold can be cast
in minutes; what a farm cannot make cheaply is time, with gold answered right on every
visit. Until a voter has earned trust their votes are stored, count in the live figures an
analyst may ask for (``arena rank --live``) and wait (``Vote.public_at`` is None); the gold
answer that completes the record stamps every waiting vote of theirs with its own moment
(one UPDATE, in that vote's transaction), and from then on each vote is stamped as it is
cast, so the public figures take them all from the next period on. A cohort review
(:mod:`arena.analysis.cohorts`) sends a voter's votes back to waiting until an operator
decides. A panel's participants (verified by the panel platform) and the demo's simulated
crowd are trusted from the start; with ``EARN_TRUST_GOLD`` 0, everyone is.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import cache

from flask import current_app
from sqlalchemy import update

from arena.extensions import db
from arena.infra.database import param
from arena.models import Vote, Voter


def trusted_from_the_start() -> bool:
    """Whether every new voter's votes count in public figures from their first."""
    return int(current_app.config["EARN_TRUST_GOLD"]) <= 0


def counts_now(voter: Voter) -> bool:
    """Whether a vote ``voter`` casts now counts in public figures as it is stamped."""
    return voter.earned_at is not None and voter.review_id is None


def earns(voter: Voter, correct: bool | None, now: datetime) -> bool:
    """Whether this gold answer (``correct``; None: not a gold pair) completes ``voter``'s
    record: right, the last of the gold answers needed, far enough from the first, and
    leaving their trust at or above ``TRUST_FLOOR``. Read from the voter row as the vote
    read it (a concurrent answer may make it one answer late, never early)."""
    if not correct or voter.earned_at is not None:
        return False
    cfg = current_app.config
    first = voter.first_gold_at or now
    trust = min(1.0, (voter.trust if voter.trust is not None else 1.0)
                + float(cfg["TRUST_REWARD"]))
    return ((voter.validations_passed or 0) + 1 >= int(cfg["EARN_TRUST_GOLD"])
            and now - first >= timedelta(hours=float(cfg["EARN_TRUST_HOURS"]))
            and trust >= float(cfg["TRUST_FLOOR"]))


@cache
def admit_waiting():
    """UPDATE: a voter's waiting votes begin to count (``p_voter``, at ``p_at``), built once."""
    vote = Vote.__table__.c
    return (update(Vote.__table__)
            .where(vote.voter_id == param("p_voter", vote.voter_id), vote.public_at.is_(None))
            .values(public_at=param("p_at", vote.public_at)))


def admit(voter_id: int, at: datetime) -> int:
    """In the caller's write transaction: ``voter_id``'s waiting votes count from ``at``.
    Returns how many."""
    return db.session.execute(admit_waiting(), {"p_voter": voter_id, "p_at": at}).rowcount
