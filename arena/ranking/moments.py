"""Voter-clustered sufficient statistics: what the sandwich needs, whatever the voter count.

The clustered sandwich (:mod:`arena.ranking.sandwich`) sums each unit's score outer product.
A unit's score is linear in its vector ``x_u`` of vote counts per ordered pair ("cell": w beat
l), ``s_u = V x_u`` with ``V``'s column for cell (w, l) ``(1 - p_wl) (e_w - e_l)``, so

    sum_u s_u s_u' = V (sum_u x_u x_u') V'

and ``C = sum_u x_u x_u'`` (cells x cells) with the pooled counts ``sum_u x_u`` and the number
of units is all the sandwich needs: its size follows the number of models, not of votes or
voters. :class:`PairMoments` holds them; :func:`cross_products` builds ``C`` for a batch of
units, so a store of per-unit counts can add what new votes change.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from arena.ranking.pairs import PairCounts, effective_units


@dataclass(frozen=True)
class PairMoments:
    """Pooled decisive outcomes per cell (``winners[c]`` beat ``losers[c]`` ``counts[c]``
    times) and ``cross`` = sum over units (voters) of the outer product of their per-cell
    counts; ``prompt_cross`` the same over prompts, for two-way clustering."""

    n_items: int
    winners: np.ndarray
    losers: np.ndarray
    counts: np.ndarray
    cross: sparse.csr_matrix
    n_units: int
    prompt_cross: sparse.csr_matrix | None = None
    n_prompts: int = 0
    stratum = None  # one stratum: moments carry no post-stratification

    @classmethod
    def from_rows(cls, n_items: int, unit, winners, losers, counts) -> PairMoments:
        """From rows per (unit, winner, loser), as :meth:`PairCounts.from_rows` takes them."""
        unit = np.asarray(unit, dtype=np.int64)
        key = np.asarray(winners, dtype=np.int64) * n_items + np.asarray(losers, dtype=np.int64)
        cells, cell = np.unique(key, return_inverse=True)
        counts = np.asarray(counts, dtype=float)
        pooled = np.bincount(cell.ravel(), weights=counts, minlength=cells.size)
        n_units = int(np.unique(unit).size)
        return cls(n_items, cells // n_items, cells % n_items, pooled,
                   cross_products(unit, cell.ravel(), counts, cells.size), n_units)

    def effective_units(self) -> float:
        """As :meth:`PairCounts.effective_units`: a unit's votes squared, summed, are the sum
        of its cross products (of two-way moments, the fewer of the two ways')."""
        voters = effective_units(self.counts.sum(), self.cross.sum())
        if self.two_way:
            return min(voters, effective_units(self.counts.sum(), self.prompt_cross.sum()))
        return voters

    @property
    def two_way(self) -> bool:
        """Both ways (voters and prompts) hold two units at least."""
        return self.prompt_cross is not None and self.n_units > 1 and self.n_prompts > 1

    def pooled(self) -> PairCounts:
        """The pooled outcomes as one unit (the point estimate and the vote-level variance)."""
        return PairCounts.from_rows(self.n_items, np.zeros(self.winners.size, dtype=np.int64),
                                    self.winners, self.losers, self.counts)

    def matrix(self) -> np.ndarray:
        wins = np.zeros((self.n_items, self.n_items))
        np.add.at(wins, (self.winners, self.losers), self.counts)
        return wins

    def weighted_matrix(self, calibration=None) -> np.ndarray:
        if calibration is not None:
            raise ValueError("moments carry no post-stratification")
        return self.matrix()

    @property
    def total(self) -> float:
        return float(self.counts.sum())

    def restricted(self, items) -> PairMoments:
        """The outcomes among ``items`` only, renumbered 0..len(items)-1 in that order."""
        items = np.asarray(items, dtype=np.int64)
        index = np.full(self.n_items, -1)
        index[items] = np.arange(items.size)
        keep = np.flatnonzero((index[self.winners] >= 0) & (index[self.losers] >= 0))
        prompts = None if self.prompt_cross is None else self.prompt_cross[keep][:, keep].tocsr()
        return PairMoments(items.size, index[self.winners[keep]], index[self.losers[keep]],
                           self.counts[keep], self.cross[keep][:, keep].tocsr(), self.n_units,
                           prompts, self.n_prompts)

    def unit_meat(self, p_win: np.ndarray, way: int = 0) -> np.ndarray:
        """The centred, ``U/(U-1)``-scaled spread of the unit scores (the sandwich's meat),
        given each cell's model probability that its winner wins; units are voters
        (``way=0``) or prompts (1)."""
        n = self.n_items
        cross, units = (self.cross, self.n_units) if way == 0 else (self.prompt_cross,
                                                                    self.n_prompts)
        v = sparse.csr_matrix(
            (np.concatenate([1 - p_win, p_win - 1]),
             (np.concatenate([self.winners, self.losers]),
              np.tile(np.arange(self.winners.size), 2))),
            shape=(n, self.winners.size))
        spread = (v @ cross @ v.T).toarray()
        total = v @ self.counts
        if units < 2:
            return np.zeros((n, n))
        return units / (units - 1) * (spread - np.outer(total, total) / units)


def cross_products(unit, cell, counts, n_cells: int) -> sparse.csr_matrix:
    """``sum_u x_u x_u'`` over the units in the rows (unit, cell, count): cells x cells."""
    unit = np.unique(np.asarray(unit), return_inverse=True)[1].ravel()
    per_unit = sparse.csr_matrix((np.asarray(counts, dtype=float), (unit, np.asarray(cell))),
                                 shape=(int(unit.max()) + 1 if unit.size else 0, n_cells))
    return (per_unit.T @ per_unit).tocsr()
