"""Rankings weighted by each voter's reliability (:mod:`arena.ranking.reliability`): an
analyst's choice (``arena rank --weights reliability``), from the log, never the public
board's. A voter's gold answers of every criterion count as evidence of attention."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import numpy as np
from sqlalchemy import case, func, select

from arena.analysis.tallies import Tally
from arena.extensions import db
from arena.models import Vote
from arena.ranking import reliability

WEIGHTS = ("reliability", "gold")  # from votes and gold answers / from gold answers alone
CHUNK = 5_000  # voters per statement (SQLite's limit on parameters)


def weigh(counted: Tally, as_of: datetime | None = None, weights: str = "reliability"
          ) -> Tally:
    """``counted`` (units are voters) with each voter's votes scaled by their reliability,
    from those votes and their gold answers stamped before ``as_of`` (all when None), or
    with ``weights="gold"`` from the gold answers alone, and flags saying how much the
    weighting took and whether the voters it took for blind answer as a taste of their own
    (:func:`arena.ranking.reliability.taste_check`)."""
    voters = counted.voters.tolist()
    if not voters:
        return counted
    right, wrong = np.zeros(len(voters)), np.zeros(len(voters))
    place = {v: k for k, v in enumerate(voters)}
    for start in range(0, len(voters), CHUNK):
        query = (select(Vote.voter_id, func.sum(case((Vote.correct.is_(True), 1), else_=0)),
                        func.sum(case((Vote.correct.is_(False), 1), else_=0)))
                 .where(Vote.is_validation.is_(True),
                        Vote.voter_id.in_(voters[start:start + CHUNK]))
                 .group_by(Vote.voter_id))
        if as_of is not None:
            query = query.where(Vote.created_at < as_of)
        for voter, ok, failed in db.session.execute(query):
            right[place[voter]], wrong[place[voter]] = ok or 0, failed or 0
    counts = counted.counts
    found, strengths = reliability.fit(counts, right, wrong, votes=weights != "gold")
    votes = counts.ab + counts.ba + counts.tie
    kept = float((votes * found.r[counts.unit]).sum())
    source = "gold answers" if weights == "gold" else "reliability"
    flags = [f"weighted by {source}: the {len(voters):,d} voters' {votes.sum():,.0f} votes "
             f"weigh {kept:,.0f}; {int((found.r < 0.5).sum()):,d} voters more likely blind "
             f"than attentive (the crowd's share of attentive voters: {found.crowd:.0%})"]
    check = None if weights == "gold" else reliability.taste_check(counts, found.r, strengths)
    if check is not None and check.taste:
        favourites = ", ".join(counted.names[k] for k in check.order[:3])
        flags.append(f"the {check.voters:,d} voters taken for blind agree with one another "
                     f"(first {favourites}; p = {check.p:.1g}): a taste of their own, which "
                     "the weights silence; compare with the unweighted ranking, or weigh by "
                     "gold answers alone")
    return replace(counted, counts=reliability.weighted(counts, found.r),
                   flags=[*counted.flags, *flags])
