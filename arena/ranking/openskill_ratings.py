"""OpenSkill (Weng-Lin Bayesian ratings, Plackett-Luce) over votes in their order, through
the ``openskill`` package: each vote a game of two one-player teams, a tie a shared rank.
Order-dependent like Elo; the rating's sigma is the model's own belief, not an interval
that counts voters, so none is reported."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OpenSkillResult:
    mu: np.ndarray  # per item, the package's scale (mean 25 at the start)
    sigma: np.ndarray
    ratings: np.ndarray  # mu on the Elo scale, mean 1000 over the items played
    played: np.ndarray  # games per item
    won: np.ndarray  # wins per item, a tie half


def openskill(winners, losers, n_items: int, ties=None) -> OpenSkillResult:
    """Rate ``n_items`` from votes ``winners[k]`` over ``losers[k]`` (``ties[k]``: a tie)
    in their order. Plackett-Luce with the package's defaults; ``ratings`` put mu on the
    Elo scale by the two-player win probability when sigmas are small
    (1 / (1 + exp(-(mu_a - mu_b) / (sqrt(2) beta))), so 400 / (ln 10 sqrt(2) beta) Elo
    points per unit of mu)."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    rated = [model.rating() for _ in range(n_items)]
    winners, losers = np.asarray(winners, np.int64), np.asarray(losers, np.int64)
    tied = np.zeros(len(winners), bool) if ties is None else np.asarray(ties, bool)
    played, won = np.zeros(n_items), np.zeros(n_items)
    for a, b, tie in zip(winners.tolist(), losers.tolist(), tied.tolist(), strict=True):
        [[rated[a]], [rated[b]]] = model.rate([[rated[a]], [rated[b]]],
                                              ranks=[0, 0] if tie else [0, 1])
        played[[a, b]] += 1
        won[a] += 0.5 if tie else 1.0
        won[b] += 0.5 if tie else 0.0
    mu = np.array([r.mu for r in rated])
    sigma = np.array([r.sigma for r in rated])
    scale = 400 / (math.log(10) * math.sqrt(2) * model.beta)
    active = played > 0
    centre = mu[active].mean() if active.any() else model.mu
    return OpenSkillResult(mu, sigma, 1000 + scale * (mu - centre), played, won)
