"""Analytic (Wald) intervals from the Fisher information of the Bradley-Terry likelihood.

Instant where a bootstrap would take a second: the live leaderboard uses these; exports use
the bootstrap. With theta = log p, the observed information is
``H_ii = sum_j n_ij p_i p_j / (p_i + p_j)^2``, ``H_ij = -n_ij p_i p_j / (p_i + p_j)^2``
(n_ij = comparisons between i and j), plus ``2a p_i / (1 + p_i)^2`` on the diagonal for a
prior of weight ``a``. H is singular along the all-ones direction (strengths are defined up to
a common factor), so the covariance of the centred log-strengths is ``P pinv(H) P`` with
``P = I - 11'/n``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from .bootstrap import rank_upper_bounds
from .bradley_terry import ELO_SCALE, LOG10, BTResult


@dataclass(frozen=True)
class FisherResult:
    rating_low: np.ndarray
    rating_high: np.ndarray
    rating_se: np.ndarray
    rank_upper_bound: np.ndarray
    prob_ahead: np.ndarray
    covariance: np.ndarray  # of the centred log-strengths
    score_low: np.ndarray  # sum-100 scale, from draws of the normal approximation
    score_high: np.ndarray


def fisher_intervals(wins, fit: BTResult, level: float = 0.95, draws: int = 2000,
                     rng: np.random.Generator | None = None) -> FisherResult:
    """Wald intervals on the Elo scale around ``fit`` (a :func:`bradley_terry` result of
    ``wins``), and the normal-approximation probability that each item is ahead of another.

    Raises
    ------
    ValueError
        If ``level`` is not in (0, 1) or shapes disagree.
    """
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    wins = np.asarray(wins, dtype=float)
    n = wins.shape[0]
    if fit.log_strengths.shape != (n,):
        raise ValueError("fit does not match wins")
    p = np.exp(fit.log_strengths)
    games = wins + wins.T
    weight = games * np.outer(p, p) / (p[:, None] + p[None, :]) ** 2
    info = -weight
    np.fill_diagonal(info, weight.sum(axis=1) - np.diag(weight))
    info[np.diag_indices(n)] += 2.0 * fit.prior * p / (1.0 + p) ** 2
    centre = np.eye(n) - 1.0 / n
    covariance = centre @ np.linalg.pinv(info, hermitian=True) @ centre
    scale = ELO_SCALE / LOG10
    se = scale * np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    z = ndtri(0.5 + level / 2.0)
    low, high = fit.ratings - z * se, fit.ratings + z * se
    var = np.diag(covariance)
    diff_sd = np.sqrt(np.clip(var[:, None] + var[None, :] - 2.0 * covariance, 1e-300, None))
    diff = fit.log_strengths[:, None] - fit.log_strengths[None, :]
    prob = ndtr(diff / diff_sd)
    np.fill_diagonal(prob, 0.0)
    # The sum-100 score is a non-linear function of all strengths: take its interval from
    # draws of the normal approximation (cheap: no refitting).
    rng = rng if rng is not None else np.random.default_rng(0)
    sample = rng.multivariate_normal(fit.log_strengths, covariance, size=draws,
                                     method="eigh", check_valid="ignore")
    strengths = np.exp(sample - sample.max(axis=1, keepdims=True))
    scores = 100.0 * strengths / strengths.sum(axis=1, keepdims=True)
    tail = 100.0 * (1.0 - level) / 2.0
    s_low, s_high = np.percentile(scores, [tail, 100.0 - tail], axis=0)
    return FisherResult(low, high, se, rank_upper_bounds(low, high), prob, covariance,
                        s_low, s_high)
