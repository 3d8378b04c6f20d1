"""Voters whose votes favour one model beyond what the crowd's strengths predict
(:mod:`arena.ranking.favouritism`), for an operator to review."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sqlalchemy import func, select

from arena.analysis.tallies import Slice, models, vote_filter
from arena.config import check_criterion
from arena.extensions import db
from arena.models import Vote, Voter
from arena.ranking import PairCounts, bradley_terry
from arena.ranking.favouritism import favouritism


@dataclass(frozen=True)
class Suspect:
    public_id: str
    votes: int  # counted, in the selection
    model: str  # the model they favour most
    z: float  # how far beyond the crowd (about standard normal for a voter like the crowd)
    gold_passed: int
    gold_failed: int


def suspects(criterion: str, slice_: Slice | None = None, alpha: float = 0.01
             ) -> list[Suspect]:
    """The voters of ``criterion``'s counted votes in ``slice_`` whose largest favouritism
    passes the Bonferroni bound at ``alpha``, most extreme first. Raises RankingError for an
    unknown criterion, ValueError for a bad ``alpha``."""
    check_criterion(criterion)
    ids, names = models()
    counted = vote_filter(criterion, slice_ or Slice()).add_columns(Vote.voter_id).subquery()
    keys = (counted.c.voter_id, counted.c.winner_model_id, counted.c.loser_model_id)
    rows = db.session.execute(select(*keys, func.count()).group_by(*keys)).all()
    index = {model_id: i for i, model_id in enumerate(ids)}
    rows = [r for r in rows if r[1] in index and r[2] in index and r[1] != r[2]]
    if not rows:
        return []
    voters, unit = np.unique(np.array([r[0] for r in rows]), return_inverse=True)
    data = PairCounts.from_rows(len(ids), unit.ravel(), [index[r[1]] for r in rows],
                                [index[r[2]] for r in rows], [r[3] for r in rows])
    found = favouritism(data, bradley_terry(data.matrix()), alpha)
    flagged = found.flagged
    people = {v.id: v for v in db.session.scalars(
        select(Voter).where(Voter.id.in_(voters[flagged].tolist())))}
    return [Suspect(people[int(voters[u])].public_id, int(found.votes[u]),
                    names[int(found.favoured[u])], float(found.z[u].max()),
                    people[int(voters[u])].validations_passed,
                    people[int(voters[u])].validations_failed) for u in flagged]
