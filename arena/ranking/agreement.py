"""How much voters agree on one criterion: Krippendorff's alpha over repeated comparisons,
and the share of votes that side with their pair's majority, with 95% intervals.

A unit is one comparison (an image pair); its values are the votes for either image. Only
pairs voted at least twice are pairable. Nominal alpha from the units' counts ``a`` and
``b`` (votes for each image, ``n = a + b``)::

    alpha = 1 - (N - 1) * sum(a * b / (n - 1)) / (N_a * N_b)

with ``N_a``, ``N_b`` the pairable votes for the first and the second images and ``N`` their
sum (Krippendorff 2011, "Computing Krippendorff's alpha-reliability", section C; equal to
the ``krippendorff`` package's value, tests/unit/test_agreement.py). 1 is perfect agreement,
0 agreement as by chance. Intervals are normal ones from the delta method over the pairs:
the population is the comparisons a campaign could have asked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri


@dataclass(frozen=True)
class Agreement:
    alpha: float
    alpha_low: float
    alpha_high: float
    majority: float  # share of pairable votes on their pair's side with more votes
    majority_low: float
    majority_high: float
    pairs: int  # comparisons voted at least twice
    votes: int  # their votes


def agreement(counts, *, level: float = 0.95) -> Agreement | None:
    """Alpha and the majority share of ``counts`` (one row per comparison: votes for its
    first and its second image), or None with fewer than two pairable comparisons or no
    variation at all. A tie within a pair counts half its votes as with the majority."""
    counts = np.asarray(counts, dtype=float).reshape(-1, 2)
    counts = counts[counts.sum(axis=1) >= 2]
    if len(counts) < 2:
        return None
    parts = _parts(counts)
    sums = parts.sum(axis=0)
    point = _ratios(sums)
    if not np.isfinite(point).all():
        return None
    # both are smooth functions of sums over comparisons drawn alike: their variance from
    # the sums' (n times the comparisons' covariance) through the gradient (the delta method,
    # O(comparisons) where a bootstrap costs rounds x comparisons on every ranking)
    covariance = len(counts) * np.atleast_2d(np.cov(parts, rowvar=False))
    step = np.maximum(np.abs(sums), 1.0) * 1e-6
    gradient = np.stack([(_ratios(sums + step[k] * np.eye(4)[k]) - point) / step[k]
                         for k in range(4)])  # (4 sums) x (alpha, majority)
    spread = np.sqrt(np.maximum(np.einsum("ki,kl,li->i", gradient, covariance, gradient), 0))
    z = float(ndtri(0.5 + level / 2))
    low, high = point - z * spread, point + z * spread
    return Agreement(alpha=float(point[0]), alpha_low=float(low[0]),
                     alpha_high=float(min(high[0], 1.0)), majority=float(point[1]),
                     majority_low=float(max(low[1], 0.5)), majority_high=float(min(high[1], 1)),
                     pairs=len(counts), votes=int(counts.sum()))


def _parts(counts: np.ndarray) -> np.ndarray:
    """Per comparison, the sums both figures are ratios of: votes for each image, the
    disagreeing pairings ``a b / (n - 1)``, and the votes with the majority."""
    a, b = counts[:, 0], counts[:, 1]
    n = a + b
    return np.column_stack([a, b, a * b / (n - 1), np.maximum(a, b)])


def _ratios(sums: np.ndarray) -> np.ndarray:
    """(alpha, majority share) from the summed parts (nan where every vote went one way)."""
    first, second, pairings, majority = sums
    total = first + second
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1 - (total - 1) * pairings / (first * second)
    return np.array([alpha, majority / total])
