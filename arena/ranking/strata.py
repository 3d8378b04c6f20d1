"""Calibration weights: post-stratification and raking to population margins.

The voters are cross-classified into cells (e.g. continent x age group x gender); each
margin (continent, age group, ...) has target shares. A cell's votes get one weight so
that the weighted share of every margin category matches its target: iterative
proportional fitting (raking), which for a single margin is plain post-stratification.
Weights are scaled so the total weight equals the number of votes.

Intervals stay honest because the weights are recomputed from each bootstrap replicate's
cell totals (arena.ranking.bootstrap) or linearised within cells (arena.ranking.sandwich),
never treated as if they were counts of real votes. :func:`effective_size` (Kish) says how
many unweighted votes the weighted sample is worth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Calibration:
    """``cells[c, m]`` is cell c's category in margin m; ``targets[m][k]`` the target share
    of category k of margin m. A NaN target keeps that category at its share of the sample
    (a category the population figures do not name, or one too small to reweight); the
    named categories share what remains in proportion to their targets."""

    cells: np.ndarray
    targets: tuple[np.ndarray, ...]
    max_iter: int = 200
    tol: float = 1e-10

    def weights(self, cell_totals) -> np.ndarray:
        """Per-cell weights for cells holding ``cell_totals`` votes. A category with no
        votes cannot be reweighted: its target share is spread over the others of its
        margin (the caller flags it). Cells without votes get weight 0."""
        totals = np.asarray(cell_totals, dtype=float)
        grand = totals.sum()
        if grand <= 0:
            return np.zeros_like(totals)
        goals = [self._goal(m, totals, grand) for m in range(len(self.targets))]
        w = np.ones_like(totals)
        for _ in range(self.max_iter):
            previous = w.copy()
            for m, goal in enumerate(goals):
                category = self.cells[:, m]
                have = np.bincount(category, weights=w * totals, minlength=goal.size)
                factor = np.divide(goal, have, out=np.ones_like(goal), where=have > 0)
                w = w * factor[category]
            if np.max(np.abs(w - previous)) < self.tol:
                break
        return np.where(totals > 0, w, 0.0)

    def _goal(self, m: int, totals: np.ndarray, grand: float) -> np.ndarray:
        """Votes each category of margin m should weigh."""
        target = np.asarray(self.targets[m], dtype=float)
        have = np.bincount(self.cells[:, m], weights=totals, minlength=target.size)
        kept = np.isnan(target) & (have > 0)
        named = ~np.isnan(target) & (have > 0)
        goal = np.where(kept, have, 0.0)
        rest = grand - goal.sum()
        if named.any() and target[named].sum() > 0:
            goal[named] = target[named] / target[named].sum() * rest
        else:
            goal[kept] = have[kept] / max(have[kept].sum(), 1e-300) * grand
        return goal


def too_small(votes, voters, min_votes: int, min_voters: int) -> np.ndarray:
    """Which categories are too small to reweight: fewer than ``min_votes`` votes or
    ``min_voters`` voters (but some). Weighting a handful of people up to speak for a large
    share makes an estimate whose intervals cannot be trusted (the coverage harness shows
    it); such a category keeps its sample share instead (a NaN target) and is flagged."""
    votes = np.asarray(votes, dtype=float)
    voters = np.asarray(voters, dtype=float)
    return (votes > 0) & ((votes < min_votes) | (voters < min_voters))


def unrepresented(target, votes, small) -> float:
    """The share of the population (of the categories with a target) that a reweighting
    cannot give its target: categories too small to reweight (:func:`too_small`) or without
    a vote. The table speaks for them through the other categories' preferences, so its
    distance from the population value can be as large as that share times how differently
    they vote, which no interval of the sample can bound."""
    target = np.asarray(target, dtype=float)
    named = ~np.isnan(target)
    total = target[named].sum()
    lost = named & (np.asarray(small, bool) | (np.asarray(votes, float) <= 0))
    return float(target[lost].sum() / total) if total > 0 else 0.0


def post_strata(targets) -> Calibration:
    """Post-stratification on one margin: cell k is category k with target ``targets[k]``."""
    targets = np.asarray(targets, dtype=float)
    return Calibration(np.arange(targets.size)[:, None], (targets / targets.sum(),))


def effective_size(vote_weights, votes) -> float:
    """Kish's effective sample size of ``votes`` votes carrying ``vote_weights``."""
    w = np.asarray(vote_weights, dtype=float)
    n = np.asarray(votes, dtype=float)
    total = (w * n).sum()
    return float(total ** 2 / (w ** 2 * n).sum()) if total > 0 else 0.0
