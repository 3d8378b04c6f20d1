"""Where a campaign's next votes do the most for its ranking, and when its order is settled.

From the votes so far, the Bradley-Terry fit orders the models; a pair's order is **settled**
once one model is surely ahead of the other as the leaderboard says it (its instant intervals,
clustered by voter and prompt, and its rank sets: every pair at once at ``level``). The fit
uses every pair's votes, so a pair far apart settles through the others without a vote of
its own. Active allocation spends the next ``budget`` votes on the models that are adjacent
in the current order and not settled yet (each such pair alike), and an ``exploration``
share on every unsettled pair, so a wrong current order is found out. A pair never asks for
more votes than ``cap`` (what balanced allocation would give it). With ``stop``, settled
pairs get no more votes; the ranking is settled once every adjacent pair is settled or at
its cap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from arena.ranking import sandwich
from arena.ranking.bradley_terry import bradley_terry
from arena.ranking.pairs import PairCounts
from arena.ranking.ranks import RankSets


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


def pair_z(data, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, RankSets]:
    """The fit's log-strengths, each pair's gap over its standard error (0 where the data
    cannot tell the two apart at all) and the rank sets (``ahead[i, j]``: i is surely ahead
    of j, past the ``critical`` number of standard errors), all from the leaderboard's own
    instant intervals (:func:`arena.ranking.sandwich.instant_intervals`): clustered by voter
    and prompt when ``data`` is a :class:`PairCounts` with both, single votes for a win
    matrix."""
    if not isinstance(data, PairCounts):
        data = PairCounts.from_matrix(np.asarray(data, dtype=float))
    fit = bradley_terry(data.matrix())
    theta = fit.log_strengths
    n = len(theta)
    found = sandwich.instant_intervals(data, fit, level=level, rng=np.random.default_rng(0),
                                       few_units=True)  # (as the leaderboard: t, not normal)
    diagonal = np.diag(found.covariance)
    variance = diagonal[:, None] + diagonal[None, :] - 2 * found.covariance
    gap = np.abs(theta[:, None] - theta[None, :])
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(variance > 1e-12, gap / np.sqrt(np.maximum(variance, 1e-300)), 0.0)
    z[np.diag_indices(n)] = 0.0
    return theta, z, found.ranks


def allocate(data, cap, budget: int, *, level: float = 0.95, exploration: float = 0.2,
             stop: bool = True) -> Allocation:
    """Decide where the next ``budget`` votes go.

    Parameters
    ----------
    data : the votes so far: a :class:`PairCounts` (with voters and prompts, as the
        leaderboard counts them) or a win matrix (``wins[i, j]`` = times i beat j).
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
    if not isinstance(data, PairCounts):
        data = PairCounts.from_matrix(np.asarray(data, dtype=float))
    wins = data.matrix()
    cap = np.asarray(cap, dtype=float)
    n = wins.shape[0]
    if cap.shape != wins.shape:
        raise ValueError("cap must have the shape of the data's win matrix")
    if budget < 0 or not 0 <= exploration <= 1 or not 0 < level < 1:
        raise ValueError("budget must be >= 0, exploration between 0 and 1 and level "
                         "between 0 and 1")
    theta, z, sets = pair_z(data, level)
    votes, limit = wins + wins.T, (cap + cap.T) / 2
    held = limit > 0
    np.fill_diagonal(held, False)
    settled = (sets.ahead | sets.ahead.T) & held
    open_ = held & (votes < limit)
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
