"""Where a campaign's next votes do the most for its ranking, and when its order is settled.

From the win counts so far (``wins[i, j]`` = times i beat j), the Bradley-Terry fit orders the
models; a pair's order is **settled** once one model is surely ahead of the other by the
leaderboard's own procedure (:func:`arena.ranking.ranks.from_normal`: every pair at once at
``level``), here from the fit's model-based covariance. The fit uses every pair's votes, so
a pair far apart settles through the others without a vote of its own. Active allocation
spends the next ``budget`` votes on the models that are adjacent in the current order and
not settled yet (each such pair alike), and an ``exploration`` share on every unsettled
pair, so a wrong current order is found out. A pair never asks for more votes than
``cap`` (what balanced allocation would give it). With ``stop``, settled pairs get no more
votes; the ranking is settled once every adjacent pair is settled or at its cap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from arena.ranking import ranks
from arena.ranking.bradley_terry import bradley_terry


@dataclass(frozen=True)
class Allocation:
    """What :func:`allocate` decided.

    Attributes
    ----------
    order : model indices, best first, by the current fit.
    z : (n, n) each pair's gap over its standard error (0 on the diagonal).
    settled : (n, n) bool, symmetric: the pair's order is settled.
    wanted : (n, n) int, symmetric: the votes each pair should have once the budget is
        spent (its votes so far when it wants no more).
    done : every adjacent pair is settled or at its cap.
    to_settle : about how many more votes the unsettled adjacent pairs need (each its own,
        from its gap and precision now; at most what balanced allocation would still give).
    """

    order: np.ndarray
    z: np.ndarray
    settled: np.ndarray
    wanted: np.ndarray
    done: bool
    to_settle: int = 0

    def adjacent(self) -> list[tuple[int, int]]:
        """The pairs next to each other in the current order, better model first."""
        return list(zip(self.order[:-1].tolist(), self.order[1:].tolist(), strict=True))


def pair_z(wins) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fit's log-strengths, their model-based covariance (the inverse of the
    Bradley-Terry information, its prior included when the data needs one) and each pair's
    gap over its standard error (0 where the data cannot tell the two apart at all)."""
    wins = np.asarray(wins, dtype=float)
    fit = bradley_terry(wins)
    theta = fit.log_strengths
    n = len(theta)
    votes = wins + wins.T
    p = expit(theta[:, None] - theta[None, :])
    weight = votes * p * (1 - p)
    information = np.diag(weight.sum(axis=1)) - weight
    if fit.prior:  # the prior's virtual games against a model of strength 1 (exp 0)
        strength = np.exp(theta)
        information += np.diag(2 * fit.prior * strength / (1 + strength) ** 2)
    centre = np.eye(n) - 1 / n
    covariance = centre @ np.linalg.pinv(information) @ centre
    covariance = (covariance + covariance.T) / 2
    diagonal = np.diag(covariance)
    variance = diagonal[:, None] + diagonal[None, :] - 2 * covariance
    gap = np.abs(theta[:, None] - theta[None, :])
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(variance > 1e-12, gap / np.sqrt(np.maximum(variance, 1e-300)), 0.0)
    z[np.diag_indices(n)] = 0.0
    return theta, covariance, z


def allocate(wins, cap, budget: int, *, level: float = 0.95, exploration: float = 0.2,
             stop: bool = True) -> Allocation:
    """Decide where the next ``budget`` votes go.

    Parameters
    ----------
    wins : (n, n) win counts so far.
    cap : (n, n) the most votes each pair may have (0: a pair the campaign does not hold).
    budget : votes to spend before the next decision.
    level : confidence at which a pair's order counts as settled.
    exploration : share of the budget spread over every pair still open.
    stop : settled pairs get no more votes (early stopping); without it every pair stays
        open until its cap, and only the weights move.

    Raises
    ------
    ValueError
        On a bad level, a negative budget, an exploration share outside [0, 1], or shapes
        that do not match.
    """
    wins = np.asarray(wins, dtype=float)
    cap = np.asarray(cap, dtype=float)
    n = wins.shape[0]
    if cap.shape != wins.shape:
        raise ValueError("cap must have the shape of wins")
    if budget < 0 or not 0 <= exploration <= 1 or not 0 < level < 1:
        raise ValueError("budget must be >= 0, exploration between 0 and 1 and level "
                         "between 0 and 1")
    theta, covariance, z = pair_z(wins)
    votes = wins + wins.T
    held = (cap + cap.T) / 2 > 0
    np.fill_diagonal(held, False)
    sets = ranks.from_normal(theta, covariance, level, rng=np.random.default_rng(0))
    settled = (sets.ahead | sets.ahead.T) & held
    open_ = held & (votes < (cap + cap.T) / 2)
    if stop:
        open_ &= ~settled
    order = np.argsort(-theta, kind="stable")
    adjacent = np.zeros((n, n), dtype=bool)
    adjacent[order[:-1], order[1:]] = adjacent[order[1:], order[:-1]] = True
    focus = adjacent & open_ & ~settled
    if not stop and not focus.any():  # all adjacent settled: keep sharpening them
        focus = adjacent & open_
    weight = np.zeros((n, n))
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    if (focus & upper).any():
        weight[focus & upper] += (1 - exploration) / (focus & upper).sum()
        spread = exploration
    else:
        spread = 1.0 if not stop else exploration
    if (open_ & upper).any():
        weight[open_ & upper] += spread / (open_ & upper).sum()
    weight = weight + weight.T
    limit = (cap + cap.T) / 2
    wanted = np.minimum(votes + np.ceil(budget * weight), np.maximum(limit, votes))
    waiting = adjacent & held & ~settled & (votes < limit)
    # votes of their own each unsettled adjacent pair needs for its gap to reach the critical
    # value: its precision grows by p(1-p) per vote (capped at what balanced would give it)
    p = expit(theta[:, None] - theta[None, :])
    gap = np.abs(theta[:, None] - theta[None, :])
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(z > 0, (z / np.maximum(gap, 1e-12)) ** 2, 0.0)
        need = (sets.critical ** 2 / np.maximum(gap, 1e-12) ** 2 - precision) / (p * (1 - p))
    need = np.minimum(np.maximum(need, 0), np.maximum(limit - votes, 0))
    return Allocation(order=order, z=z, settled=settled, wanted=wanted.astype(int),
                      done=not waiting.any(), to_settle=int(np.ceil(need[waiting & upper].sum())))
