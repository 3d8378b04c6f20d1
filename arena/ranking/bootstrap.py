"""Bootstrap confidence intervals for Bradley-Terry rankings, resampling aggregated counts.

Each round redraws the win-count matrix itself -- a multinomial over its cells with the same
total, or an independent Poisson count per cell -- so the cost does not grow with the number
of votes. Rounds are fitted in vectorised batches, warm-started at the point estimate.
A round whose resampled graph is no longer strongly connected is fitted with the weak prior
(as the point fit would be) and counted in ``prior_rounds``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse.csgraph import connected_components

from .bradley_terry import DEFAULT_PRIOR, ELO_SCALE, LOG10, BTResult, _iterate, bradley_terry

METHODS = ("multinomial", "poisson")


@dataclass(frozen=True)
class BootstrapResult:
    """Percentile intervals from ``rounds`` resamples.

    ``rating_*`` are on the Elo scale (mean 1000), ``score_*`` on the sum-100 scale.
    ``prob_ahead[i, j]`` is the share of rounds in which i rated above j (separability).
    ``rank_upper_bound[i]`` = 1 + number of items whose lower bound exceeds i's upper bound.
    """

    point: BTResult
    rounds: int
    method: str
    level: float
    rating_low: np.ndarray
    rating_high: np.ndarray
    rating_std: np.ndarray
    score_low: np.ndarray
    score_high: np.ndarray
    rank_upper_bound: np.ndarray
    prob_ahead: np.ndarray
    prior_rounds: int
    unconverged_rounds: int


def rank_upper_bounds(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """1 + the number of items whose lower bound is above this item's upper bound."""
    return 1 + (low[None, :] > high[:, None]).sum(axis=1)


def _resample(wins: np.ndarray, size: int, method: str, rng: np.random.Generator):
    n = wins.shape[0]
    flat = wins.ravel()
    if method == "poisson":
        return rng.poisson(flat, size=(size, flat.size)).astype(float).reshape(size, n, n)
    total = round(flat.sum())
    counts = rng.multinomial(total, flat / flat.sum(), size=size)
    return counts.astype(float).reshape(size, n, n)


def _strongly_connected_each(batch: np.ndarray, original: np.ndarray) -> np.ndarray:
    """Strong connectivity of each resampled matrix. A resample keeping every edge of a
    strongly connected original is connected too; only the others need a graph search."""
    out = np.ones(batch.shape[0], dtype=bool)
    edges = original > 0
    lost_an_edge = ~np.all(batch[:, edges] > 0, axis=1)
    for k in np.flatnonzero(lost_an_edge):
        n, _ = connected_components(batch[k] > 0, directed=True, connection="strong")
        out[k] = n == 1
    return out


def bootstrap(
    wins,
    *,
    rounds: int = 1000,
    method: str = "multinomial",
    rng: np.random.Generator | None = None,
    level: float = 0.95,
    prior: float | None = None,
    tol: float = 1e-8,
    max_iter: int = 10_000,
    batch_size: int = 100,
) -> BootstrapResult:
    """Confidence intervals for :func:`bradley_terry` by resampling ``wins``.

    Parameters
    ----------
    wins : array-like (n, n)
    rounds : int
        Number of resamples (>= 1; 1000 by default).
    method : {"multinomial", "poisson"}
    rng : numpy.random.Generator
        Source of randomness; pass a seeded one for reproducible intervals. Independent
        generators (``rng.spawn``) make parallel runs safe.
    level : float
        Central interval mass (0.95: 2.5th to 97.5th percentile).
    prior : float, optional
        As in :func:`bradley_terry`.

    Raises
    ------
    ValueError
        Unknown method, rounds < 1, level outside (0, 1), or invalid ``wins``.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}")
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    rng = rng if rng is not None else np.random.default_rng()
    point = bradley_terry(wins, prior=prior, tol=min(tol, 1e-10), max_iter=max_iter)
    wins = np.asarray(wins, dtype=float)
    n = wins.shape[0]
    samples = np.empty((rounds, n))
    prior_rounds = unconverged = 0
    done = 0
    while done < rounds:
        size = min(batch_size, rounds - done)
        batch = _resample(wins, size, method, rng) if n else np.zeros((size, 0, 0))
        if prior is not None:
            priors = np.full(size, float(prior))
        else:
            connected = _strongly_connected_each(batch, wins) if n > 1 else np.ones(size, bool)
            priors = np.where(connected, point.prior, DEFAULT_PRIOR)
            prior_rounds += int((priors > 0).sum()) if point.prior == 0 else 0
        log_p0 = np.broadcast_to(point.log_strengths, (size, n))
        fitted, _, converged = _iterate(batch, log_p0, priors[:, None], tol, max_iter)
        unconverged += 0 if converged else size
        samples[done : done + size] = fitted
        done += size
    ratings = ELO_SCALE * samples / LOG10
    ratings = ratings - ratings.mean(axis=1, keepdims=True) + 1000.0
    strengths = np.exp(samples)
    scores = 100.0 * strengths / strengths.sum(axis=1, keepdims=True)
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(ratings, [tail, 100.0 - tail], axis=0)
    s_low, s_high = np.percentile(scores, [tail, 100.0 - tail], axis=0)
    prob_ahead = (ratings[:, :, None] > ratings[:, None, :]).mean(axis=0)
    return BootstrapResult(
        point=point,
        rounds=rounds,
        method=method,
        level=level,
        rating_low=low,
        rating_high=high,
        rating_std=ratings.std(axis=0, ddof=1) if rounds > 1 else np.zeros(n),
        score_low=s_low,
        score_high=s_high,
        rank_upper_bound=rank_upper_bounds(low, high),
        prob_ahead=prob_ahead,
        prior_rounds=prior_rounds,
        unconverged_rounds=unconverged,
    )
