"""Instant intervals: a (clustered) sandwich variance of the Bradley-Terry fit.

The live leaderboard cannot bootstrap on every request; this is the analytic counterpart
of :mod:`arena.ranking.bootstrap`, estimating the same thing, the way LMArena's
``arena-rank`` package does. With theta the log-strengths, the fit solves
``sum_u s_u(theta) = 0`` where ``s_u`` is the score (gradient) of unit u's outcomes::

    s_u = sum over u's pairs (a, b) of  w_u (wins_ab + ties/2 - n_ab p_ab) (e_a - e_b)

The variance is ``H^+ M H^+`` with ``H`` the expected information (bread) and ``M`` the
spread of the unit scores (meat), centred within strata and scaled by ``U_s / (U_s - 1)``.
Resampling by unit (voter or prompt) becomes clustering by unit; votes as units give the
classic robust variance, in which a tie contributes ``(1/2 - p)^2`` instead of a full
win's or loss's squared residual -- so ties narrow the interval as they should, where the
plain Fisher information treats them as decisive. Weights from post-stratification or
raking enter the scores; the result is projected onto centred log-strengths (the
likelihood does not see a common shift).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.special import expit, ndtr, ndtri, stdtrit

from arena.ranking import ranks
from arena.ranking.bradley_terry import ELO_SCALE, LOG10, BTResult
from arena.ranking.moments import PairMoments
from arena.ranking.pairs import PairCounts
from arena.ranking.strata import Calibration


@dataclass(frozen=True)
class InstantResult:
    rating_low: np.ndarray
    rating_high: np.ndarray
    rating_std: np.ndarray  # standard errors on the Elo scale
    score_low: np.ndarray  # sum-100 scale, from draws of the normal approximation
    score_high: np.ndarray
    prob_ahead: np.ndarray
    ranks: ranks.RankSets
    covariance: np.ndarray  # of the centred log-strengths
    resample: str

    @property
    def rank_upper_bound(self) -> np.ndarray:
        return self.ranks.best


def instant_intervals(data, fit: BTResult, *, resample: str | None = None,
                      calibration: Calibration | None = None, level: float = 0.95,
                      draws: int = 4000, rng: np.random.Generator | None = None,
                      few_units: bool = False) -> InstantResult:
    """Sandwich intervals around ``fit`` (the :func:`bradley_terry` fit of ``data``, a
    :class:`PairCounts`, a :class:`PairMoments` or a win matrix).

    ``resample`` "unit" clusters by ``data``'s units (the default when there are several),
    "vote" treats votes as independent. Two-way data (voters and prompts both varying:
    :meth:`PairCounts.crossed`, or moments with prompts' cross products) clusters both ways
    at once, Cameron, Gelbach and Miller's sum of the voter- and the prompt-clustered meats
    less the votes' own, which stands in for the intersections' (exact where a voter meets
    a prompt once per pair, wider in expectation where they meet more often).
    ``few_units``: clustered intervals as wide as Student's t with ``G - 1`` degrees of
    freedom makes them, ``G`` the units' effective
    number (:meth:`PairCounts.effective_units`), instead of the normal's: a handful of heavy
    units make the sandwich too small (two ways: the fewer of the two). Raises ValueError
    for a level outside (0, 1), a fit of another size, or two-way data with a
    calibration."""
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    moments = data if isinstance(data, PairMoments) else None
    effective = None
    if moments is not None:
        resample = resample or ("unit" if moments.n_units > 1 else "vote")
        effective = moments.effective_units()
        data = moments.pooled()
    elif not isinstance(data, PairCounts):
        data = PairCounts.from_matrix(data)
    n = data.n_items
    if fit.log_strengths.shape != (n,):
        raise ValueError("fit does not match the data")
    resample = resample or ("unit" if data.n_units > 1 else "vote")
    theta = fit.log_strengths
    unit_w = data.unit_weights(calibration)
    w = unit_w[data.unit]
    p = expit(theta[data.a] - theta[data.b])  # P(a beats b)
    games = data.ab + data.ba + data.tie
    bread = _bread(n, data, w * games * p * (1 - p), fit)
    two_way = resample == "unit" and (data if moments is None else moments).two_way
    if two_way and calibration is not None:
        raise ValueError("two-way clustering takes no calibration")
    if moments is not None and resample == "unit":
        p_cell = expit(theta[moments.winners] - theta[moments.losers])
        meat = moments.unit_meat(p_cell) + (moments.unit_meat(p_cell, 1) if two_way else 0)
    elif two_way:
        meat = sum(_unit_meat(way, np.ones(way.a.size), expit(theta[way.a] - theta[way.b]),
                              None) for way in (data.way(0), data.way(1)))
    else:
        meat = (_vote_meat if resample == "vote" else _unit_meat)(data, w, p, unit_w)
    if two_way:  # (Cameron, Gelbach and Miller: the intersection's term at the vote level)
        meat = meat - _vote_meat(data, w, p, unit_w)
    inverse = np.linalg.pinv(bread, hermitian=True)
    centre = np.eye(n) - 1.0 / n
    covariance = centre @ inverse @ meat @ inverse @ centre
    if two_way:  # (a difference of variances: negative directions are set to none)
        values, vectors = np.linalg.eigh(covariance)
        covariance = (vectors * np.clip(values, 0.0, None)) @ vectors.T
    if few_units and resample == "unit":
        effective = data.effective_units() if effective is None else effective
        covariance = covariance * t_widening(effective, level)
    return _summarise(fit, covariance, level, draws, rng, resample)


def t_widening(effective: float, level: float) -> float:
    """What a covariance is multiplied by for intervals as wide as Student's t with
    ``effective - 1`` degrees of freedom (one at least: t's tails are finite) makes them,
    instead of the normal's; 1 for a single unit or none."""
    if effective <= 1:
        return 1.0
    q = 0.5 + level / 2.0
    return float((stdtrit(max(effective - 1.0, 1.0), q) / ndtri(q)) ** 2)


def _bread(n: int, data: PairCounts, curvature: np.ndarray, fit: BTResult) -> np.ndarray:
    h = np.zeros((n, n))
    np.add.at(h, (data.a, data.b), -curvature)
    np.add.at(h, (data.b, data.a), -curvature)
    h[np.diag_indices(n)] = -h.sum(axis=1)
    if fit.prior:
        q = np.exp(fit.log_strengths)
        h[np.diag_indices(n)] += 2.0 * fit.prior * q / (1.0 + q) ** 2
    return h


def _strata(data: PairCounts) -> np.ndarray:
    return data.stratum if data.stratum is not None else np.zeros(data.n_units, dtype=int)


def _unit_meat(data: PairCounts, w, p, unit_w) -> np.ndarray:
    n = data.n_items
    g = w * (data.ab + 0.5 * data.tie - (data.ab + data.ba + data.tie) * p)
    rows = np.concatenate([data.unit, data.unit])
    cols = np.concatenate([data.a, data.b])
    scores = sparse.csr_matrix((np.concatenate([g, -g]), (rows, cols)),
                               shape=(data.n_units, n))
    strata = _strata(data)
    meat = np.zeros((n, n))
    for s in np.unique(strata):
        members = scores[np.flatnonzero(strata == s)]
        units = members.shape[0]
        if units < 2:
            continue
        mean = np.asarray(members.mean(axis=0)).ravel()
        spread = (members.T @ members).toarray() - units * np.outer(mean, mean)
        meat += units / (units - 1) * spread
    return meat


def _vote_meat(data: PairCounts, w, p, unit_w) -> np.ndarray:
    n = data.n_items
    strata = _strata(data)[data.unit]
    squared = w ** 2 * (data.ab * (1 - p) ** 2 + data.ba * p ** 2 + data.tie * (0.5 - p) ** 2)
    g = w * (data.ab + 0.5 * data.tie - (data.ab + data.ba + data.tie) * p)
    votes = data.ab + data.ba + data.tie
    meat = np.zeros((n, n))
    for s in np.unique(strata):
        rows = strata == s
        a, b = data.a[rows], data.b[rows]
        outer = np.zeros((n, n))
        np.add.at(outer, (a, a), squared[rows])
        np.add.at(outer, (b, b), squared[rows])
        np.add.at(outer, (a, b), -squared[rows])
        np.add.at(outer, (b, a), -squared[rows])
        total = np.zeros(n)
        np.add.at(total, a, g[rows])
        np.add.at(total, b, -g[rows])
        count = votes[rows].sum()
        if count > 1:
            meat += count / (count - 1) * (outer - np.outer(total, total) / count)
    return meat


def _summarise(fit: BTResult, covariance, level, draws, rng, resample) -> InstantResult:
    theta = fit.log_strengths
    scale = ELO_SCALE / LOG10
    var = np.clip(np.diag(covariance), 0.0, None)
    se = scale * np.sqrt(var)
    z = ndtri(0.5 + level / 2.0)
    low, high = fit.ratings - z * se, fit.ratings + z * se
    diff_sd = np.sqrt(np.clip(var[:, None] + var[None, :] - 2.0 * covariance, 1e-300, None))
    prob = ndtr((theta[:, None] - theta[None, :]) / diff_sd)
    np.fill_diagonal(prob, 0.0)
    rng = rng if rng is not None else np.random.default_rng(0)
    # The sum-100 score is a non-linear function of all strengths: its interval comes from
    # draws of the normal approximation (cheap: no refitting).
    sample = rng.multivariate_normal(theta, covariance, size=draws, method="eigh",
                                     check_valid="ignore")
    strengths = np.exp(sample - sample.max(axis=1, keepdims=True))
    scores = 100.0 * strengths / strengths.sum(axis=1, keepdims=True)
    tail = 100.0 * (1.0 - level) / 2.0
    s_low, s_high = np.percentile(scores, [tail, 100.0 - tail], axis=0)
    return InstantResult(low, high, se, s_low, s_high, prob,
                         ranks.from_normal(theta, covariance, level, rng=rng), covariance,
                         resample)
