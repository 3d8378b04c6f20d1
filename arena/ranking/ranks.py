"""Rank bounds and tiers from one simultaneous procedure.

"i is ahead of j" is decided for every pair at once with family-wise confidence ``level``:
the differences of log-strengths ``d_ij`` get simultaneous intervals ``d_ij ± c se_ij``,
where ``c`` is the ``level`` quantile of the largest studentised deviation over all pairs
(from the bootstrap rounds, or from draws of the normal approximation). Then

* the **best rank** of i is 1 + the number of items ahead of i, its **worst rank** the
  number of items minus those i is ahead of (a confidence set for its rank);
* its **tier** is 1 + the highest tier among the items ahead of it (1 when none is): the
  length of the longest chain of "ahead of" leading to it.

So two items of one tier are never separable (if one were ahead, the other's tier would be
higher), an item in tier k > 1 has at least one item ahead of it and so a best rank of at
least 2, and all of it holds together with probability ``level`` (tests/unit/test_ranks.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RankSets:
    best: np.ndarray  # best rank each item can hold (1 = first)
    worst: np.ndarray
    tier: np.ndarray  # from 1
    ahead: np.ndarray  # ahead[i, j]: i is ahead of j at family-wise level
    critical: float  # c, the simultaneous multiplier of the standard errors


def from_samples(point, samples, level: float = 0.95) -> RankSets:
    """Simultaneous decisions from bootstrap rounds ``samples`` (rounds x items) of the
    log-strengths around the estimate ``point``."""
    point = np.asarray(point, dtype=float)
    samples = np.asarray(samples, dtype=float)
    n = point.size
    if n < 2 or samples.shape[0] < 2:
        return _sets(point, np.full((n, n), np.inf), 0.0)
    i, j = np.triu_indices(n, 1)
    diffs = samples[:, i] - samples[:, j]
    se = np.maximum(diffs.std(axis=0, ddof=1), 1e-12)
    deviation = np.abs(diffs - (point[i] - point[j])) / se
    critical = float(np.quantile(deviation.max(axis=1), level))
    return _sets(point, _square(se, n), critical)


def from_normal(point, covariance, level: float = 0.95, draws: int = 4000,
                rng: np.random.Generator | None = None) -> RankSets:
    """Simultaneous decisions from the normal approximation N(point, covariance)."""
    point = np.asarray(point, dtype=float)
    n = point.size
    if n < 2:
        return _sets(point, np.full((n, n), np.inf), 0.0)
    var = np.diag(covariance)
    i, j = np.triu_indices(n, 1)
    se = np.sqrt(np.maximum(var[i] + var[j] - 2.0 * covariance[i, j], 1e-24))
    rng = rng if rng is not None else np.random.default_rng(0)
    z = rng.multivariate_normal(np.zeros(n), covariance, size=draws, method="eigh",
                                check_valid="ignore")
    critical = float(np.quantile((np.abs(z[:, i] - z[:, j]) / se).max(axis=1), level))
    return _sets(point, _square(se, n), critical)


def _square(upper: np.ndarray, n: int) -> np.ndarray:
    out = np.full((n, n), np.inf)
    i, j = np.triu_indices(n, 1)
    out[i, j] = out[j, i] = upper
    return out


def _sets(point: np.ndarray, se: np.ndarray, critical: float) -> RankSets:
    n = point.size
    diff = point[:, None] - point[None, :]
    ahead = np.isfinite(se) & (diff - critical * np.where(np.isfinite(se), se, 0.0) > 0)
    np.fill_diagonal(ahead, False)
    best = 1 + ahead.sum(axis=0)
    worst = n - ahead.sum(axis=1)
    tier = np.ones(n, dtype=int)
    for k in np.argsort(-point, kind="stable"):
        above = np.flatnonzero(ahead[:, k])
        if above.size:
            tier[k] = 1 + tier[above].max()
    return RankSets(best.astype(int), worst.astype(int), tier, ahead, critical)
