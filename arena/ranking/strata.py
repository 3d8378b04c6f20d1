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
    # the share of the population the weights leave off its target (:func:`held_share`,
    # summed over the margins): each pair's win rate may be off by up to that much
    held: float = 0.0
    held_groups: tuple[str, ...] = ()  # (their names, for what is said about them)

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
    ``min_voters`` voters (but some; effective voters, :func:`effective_voters`, where the
    caller has them). Weighting a handful of people up to speak for a large
    share makes an estimate whose intervals cannot be trusted (the coverage harness shows
    it); such a category keeps its sample share instead (a NaN target) and is flagged."""
    votes = np.asarray(votes, dtype=float)
    voters = np.asarray(voters, dtype=float)
    return (votes > 0) & ((votes < min_votes) | (voters < min_voters))


def effective_voters(category, votes, squares, weights=None, size: int = 0) -> np.ndarray:
    """Per category (``category[c]`` of each cell c), how many voters of equal votes its
    voters are worth under the cells' calibration ``weights`` (default 1):
    (sum w N)^2 / sum w^2 S, N a cell's votes and S the sum of its voters' votes squared. A
    category where one voter of twenty casts 40% of the votes is worth about six: reweighted,
    that voter would speak for most of its share of the population."""
    category = np.asarray(category, dtype=np.int64)
    w = np.ones(category.size) if weights is None else np.asarray(weights, dtype=float)
    size = max(size, int(category.max(initial=-1)) + 1)
    total = np.bincount(category, weights=w * np.asarray(votes, float), minlength=size)
    spread = np.bincount(category, weights=w * w * np.asarray(squares, float), minlength=size)
    return np.divide(total ** 2, spread, out=np.zeros(size), where=spread > 0)


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


def held_share(category, votes, weights, target) -> float:
    """How far the reweighted sample's shares of one margin's categories with a target
    (``target[k]``, NaN for none) are from those targets: half their L1 distance, the most by
    which any pair's win rate in the population can differ from the reweighted one whatever
    the categories held at their sample share (or without votes) prefer. ``category[c]``,
    ``votes[c]`` and ``weights[c]`` per cell."""
    target = np.asarray(target, dtype=float)
    named = ~np.isnan(target)
    have = np.bincount(np.asarray(category, dtype=np.int64),
                       weights=np.asarray(weights, float) * np.asarray(votes, float),
                       minlength=target.size)[named]
    goal = target[named]
    if have.sum() <= 0 or goal.sum() <= 0:
        return 0.0
    return float(0.5 * np.abs(have / have.sum() - goal / goal.sum()).sum())


def held_shift(weighted, theta, share: float) -> np.ndarray:
    """Per item, the most (to first order) its centred log-strength ``theta`` fitted to the
    ``weighted`` win matrix can be off when every pair's win rate may be off by ``share``
    (:attr:`Calibration.held`): share x sum over pairs of n_ab |H+_ia - H+_ib|, H the fit's
    information. A bias that does not shrink with the sample, unlike the intervals."""
    w = np.asarray(weighted, dtype=float)
    theta = np.asarray(theta, dtype=float)
    games = w + w.T
    p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))
    info = games * p * p.T
    h = np.diag(info.sum(axis=1)) - info
    h_inv = np.linalg.pinv(h, hermitian=True)
    a, b = np.triu_indices(w.shape[0], 1)
    return share * (np.abs(h_inv[:, a] - h_inv[:, b]) * games[a, b]).sum(axis=1)


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
