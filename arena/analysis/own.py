"""A voter's own leaderboard: the models as their own votes rank them, beside the crowd's
public ranking, once they have ``OWN_RANKING_MIN_VOTES`` counted votes on a criterion.

Only the votes stamped before the period's cut-off count (:func:`arena.analysis.published.cutoff`):
a ranking that moved with the last answer would tell which image of that task was which
model. Bradley-Terry with the core's weak prior (one voter's few votes rarely connect every
model), over the models they voted on. Nobody but the voter is shown it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from flask import current_app
from sqlalchemy import func, select

from arena import criteria
from arena.analysis import published
from arena.extensions import db
from arena.models import GenModel, Vote
from arena.ranking import bradley_terry
from arena.ranking.bradley_terry import DEFAULT_PRIOR


@dataclass(frozen=True)
class OwnRow:
    model: str
    rank: int
    rating: float  # Elo scale, from the voter's votes alone
    votes: int  # the voter's votes with this model
    wins: int
    crowd_rank: int | None  # the public leaderboard's place (None: not listed there)


@dataclass(frozen=True)
class OwnRanking:
    """``votes``: the voter's counted votes on ``criterion`` before ``as_of``; ``models``
    empty until they reach ``needed``."""

    criterion: str
    votes: int
    needed: int
    as_of: datetime
    models: list[OwnRow] = field(default_factory=list)


def own_ranking(voter_id: int, criterion: str) -> OwnRanking:
    """The voter's own ranking of ``criterion``. Raises Invalid for an unknown criterion."""
    from arena.analysis.leaderboard import rank_models

    criteria.check(criterion)
    as_of = published.cutoff()
    needed = int(current_app.config["OWN_RANKING_MIN_VOTES"])
    rows = db.session.execute(
        select(Vote.winner_model_id, Vote.loser_model_id, func.count())
        .where(Vote.voter_id == voter_id, Vote.criterion == criterion,
               Vote.is_validation.is_(False), Vote.flags == 0, Vote.created_at < as_of,
               Vote.winner_model_id.is_not(None), Vote.loser_model_id.is_not(None))
        .group_by(Vote.winner_model_id, Vote.loser_model_id)).all()
    votes = sum(n for _, _, n in rows)
    if votes < needed:
        return OwnRanking(criterion, votes, needed, as_of)
    ids = sorted({model for pair in rows for model in pair[:2]})
    index = {model_id: i for i, model_id in enumerate(ids)}
    wins = np.zeros((len(ids), len(ids)))
    for winner, loser, n in rows:
        wins[index[winner], index[loser]] += n
    fit = bradley_terry(wins, prior=DEFAULT_PRIOR)
    names = dict(db.session.execute(select(GenModel.id, GenModel.name).where(
        GenModel.id.in_(ids))).all())
    crowd = {m.model: m.rank for m in rank_models(
        criterion, intervals="instant", include_idle=False, public=True).models}
    order = np.argsort(-fit.ratings, kind="stable")
    played, won = wins.sum(axis=0) + wins.sum(axis=1), wins.sum(axis=1)
    return OwnRanking(criterion, votes, needed, as_of, [
        OwnRow(names[ids[k]], place, float(fit.ratings[k]), int(played[k]), int(won[k]),
               crowd.get(names[ids[k]]))
        for place, k in enumerate(order, start=1)])
