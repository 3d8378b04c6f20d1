"""How many voters an order hinges on: the fewest whose removal would flip it.

Dropping a set S of units (voters) moves the Bradley-Terry fit by about
``-H^+ sum_{u in S} s_u`` (``H`` the information, ``s_u`` unit u's score at the fit): the
approximate maximum influence perturbation of Broderick, Giordano and Meager. For models i
ahead of j by ``g`` (log units), unit u's influence on the gap is ``a_u = (e_i - e_j)' H^+
s_u``, and removing the units of largest ``a_u`` first closes the gap fastest; the
approximation says the order flips once their sum reaches ``g``. Every count published is
confirmed by exact refits: the smallest number of those units, taken in that order, whose
removal flips the order when the model is fitted again without them. It is an upper bound
on the fewest that could (another set might do with fewer) and exact for what it names.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy import sparse
from scipy.special import expit

from arena.ranking.bradley_terry import BTResult, bradley_terry
from arena.ranking.pairs import PairCounts


@dataclass(frozen=True)
class Flip:
    """Models ``ahead`` and ``behind`` (item indices): removing ``units`` of the ``total``
    units (None: none of the units that favour ``ahead`` would do, all of them removed)
    makes the refit put ``behind`` level with ``ahead`` or ahead of it."""

    ahead: int
    behind: int
    units: int | None
    total: int

    @property
    def share(self) -> float | None:
        return None if self.units is None else self.units / self.total


def unit_scores(data: PairCounts, theta: np.ndarray) -> sparse.csr_matrix:
    """Each unit's score (gradient of its log-likelihood) at ``theta``: units x items."""
    p = expit(theta[data.a] - theta[data.b])
    g = data.ab + 0.5 * data.tie - (data.ab + data.ba + data.tie) * p
    return sparse.csr_matrix(
        (np.concatenate([g, -g]), (np.concatenate([data.unit, data.unit]),
                                   np.concatenate([data.a, data.b]))),
        shape=(data.n_units, data.n_items))


def information(data: PairCounts, fit: BTResult) -> np.ndarray:
    """The Bradley-Terry information at the fit (the prior's curvature included)."""
    from arena.ranking.sandwich import _bread

    p = expit(fit.log_strengths[data.a] - fit.log_strengths[data.b])
    return _bread(data.n_items, data, (data.ab + data.ba + data.tie) * p * (1 - p), fit)


def flips(data: PairCounts, fit: BTResult, pairs) -> list[Flip]:
    """For each (ahead, behind) of ``pairs`` (item indices, ``ahead`` rated higher by
    ``fit``, the fit of ``data``): the fewest of ``data``'s units, taken by influence,
    whose removal flips that order in an exact refit."""
    theta = fit.log_strengths
    scores = unit_scores(data, theta)
    inverse = np.linalg.pinv(information(data, fit), hermitian=True)
    cells = data.unit_cells()  # units x (n*n) half-wins: a refit without some is a subtraction
    whole = np.asarray(cells.sum(axis=0)).ravel()
    out = []
    for ahead, behind in pairs:
        contrast = inverse[:, ahead] - inverse[:, behind]
        influence = np.asarray(scores @ contrast).ravel()
        order = np.argsort(-influence, kind="stable")
        helping = order[influence[order] > 0]
        flipped = partial(_undone, cells, whole, helping, ahead, behind)
        out.append(Flip(ahead, behind, _fewest(helping.size, flipped,
                                               _predicted(influence[helping],
                                                          theta[ahead] - theta[behind])),
                        data.n_units))
    return out


def _undone(cells, whole, helping, ahead: int, behind: int, k: int) -> bool:
    """Whether the refit without the first ``k`` units of ``helping`` puts ``behind`` level
    with ``ahead`` or ahead of it."""
    n = int(np.sqrt(whole.size))
    kept = whole - np.asarray(cells[helping[:k]].sum(axis=0)).ravel()
    theta = bradley_terry(kept.reshape(n, n)).log_strengths
    return theta[behind] >= theta[ahead] - 1e-9


def _predicted(influence: np.ndarray, gap: float) -> int:
    """How many units, largest influence first, the linear approximation says flip a gap."""
    reached = np.flatnonzero(np.cumsum(influence) >= gap)
    return int(reached[0]) + 1 if reached.size else influence.size


def _fewest(available: int, flipped, guess: int) -> int | None:
    """The smallest k in 1..available with ``flipped(k)`` (assumed monotone), searched from
    ``guess`` with a few refits; None if even all of them do not flip it."""
    if available == 0:
        return None
    guess = min(max(guess, 1), available)
    if flipped(guess):
        low, high = 0, guess  # low does not flip (0 never does: the order is the fit's)
    else:
        low, high = guess, None
        step = max(1, guess // 2)
        while high is None:
            nxt = min(available, low + step)
            if flipped(nxt):
                high = nxt
            elif nxt == available:
                return None
            else:
                low, step = nxt, step * 2
    while high - low > 1:
        middle = (low + high) // 2
        if flipped(middle):
            high = middle
        else:
            low = middle
    return high
