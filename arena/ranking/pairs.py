"""Pairwise outcomes aggregated by resampling unit: the data every interval is built from.

A row says that within unit ``unit[r]`` (a voter, a prompt, or nothing finer than the vote),
item ``a[r]`` beat item ``b[r]`` ``ab[r]`` times, lost ``ba[r]`` times and tied ``tie[r]``
times (``a[r] < b[r]``). Units may belong to strata (post-stratification cells). The
aggregation is one pass over the votes (``numpy.unique``) or one SQL ``GROUP BY`` in the
services, so the cost of everything downstream follows the number of rows, not of votes.

Ties stay ties: a tie is resampled with its unit, and only the point estimate counts it as
half a win each way (:meth:`PairCounts.matrix`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import sparse


@dataclass(frozen=True)
class PairCounts:
    """Outcomes per (unit, unordered pair). See the module docstring.

    ``stratum[u]`` is unit u's post-stratification cell (None: one stratum). Two-way data
    (:meth:`crossed`) has the (voter, prompt) intersections as units and ``ways`` each
    one's voter and prompt."""

    n_items: int
    unit: np.ndarray
    a: np.ndarray
    b: np.ndarray
    ab: np.ndarray
    ba: np.ndarray
    tie: np.ndarray
    n_units: int
    stratum: np.ndarray | None = None
    ways: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def from_outcomes(cls, winners, losers, n_items: int, ties=None, units=None,
                      strata=None) -> PairCounts:
        """Aggregate per-vote outcomes. ``units[k]`` names vote k's resampling unit (any
        hashable labels; None: every vote its own unit); ``strata[k]`` its stratum label,
        which must be the same for every vote of a unit.

        Raises
        ------
        ValueError
            On mismatched lengths, indices out of range, self-comparisons, or a unit
            spread over strata.
        """
        winners = np.asarray(winners, dtype=np.int64)
        losers = np.asarray(losers, dtype=np.int64)
        n = winners.size
        if winners.shape != losers.shape or winners.ndim != 1:
            raise ValueError("winners and losers must be 1-d arrays of the same length")
        if n and (min(winners.min(), losers.min()) < 0
                  or max(winners.max(), losers.max()) >= n_items):
            raise ValueError(f"item index out of range for {n_items} items")
        if np.any(winners == losers):
            raise ValueError("an item cannot be compared with itself")
        ties = np.zeros(n, bool) if ties is None else np.asarray(ties, dtype=bool)
        if ties.shape != winners.shape:
            raise ValueError("ties must have the same length as winners")
        unit_index = (np.arange(n) if units is None
                      else np.unique(np.asarray(units), return_inverse=True)[1].ravel())
        a, b = np.minimum(winners, losers), np.maximum(winners, losers)
        kind = np.where(ties, 2, np.where(winners == a, 0, 1))  # 0 a won, 1 b won, 2 tie
        key = (unit_index * n_items + a) * n_items + b
        rows, inverse = np.unique(key, return_inverse=True)
        counts = np.zeros((rows.size, 3))
        np.add.at(counts, (inverse.ravel(), kind), 1.0)
        n_units = int(unit_index.max()) + 1 if n else 0
        stratum = None
        if strata is not None:
            labels = np.unique(np.asarray(strata), return_inverse=True)[1].ravel()
            stratum = np.full(n_units, -1)
            stratum[unit_index] = labels
            if np.any(stratum[unit_index] != labels):
                raise ValueError("every vote of a unit must be in the same stratum")
        return cls(n_items, rows // (n_items * n_items), (rows // n_items) % n_items,
                   rows % n_items, counts[:, 0], counts[:, 1], counts[:, 2], n_units, stratum)

    @classmethod
    def from_rows(cls, n_items: int, unit, winners, losers, counts, ties=None,
                  stratum=None) -> PairCounts:
        """From rows already aggregated per (unit, winner, loser) — a SQL GROUP BY —
        with ``counts`` votes each (``ties[r]`` marks rows of tied votes). ``unit`` holds
        unit indices 0..U-1; ``stratum`` (one per unit) their cells."""
        unit = np.asarray(unit, dtype=np.int64)
        winners = np.asarray(winners, dtype=np.int64)
        losers = np.asarray(losers, dtype=np.int64)
        counts = np.asarray(counts, dtype=float)
        ties = np.zeros(unit.size, bool) if ties is None else np.asarray(ties, dtype=bool)
        a, b = np.minimum(winners, losers), np.maximum(winners, losers)
        kind = np.where(ties, 2, np.where(winners == a, 0, 1))
        key = (unit * n_items + a) * n_items + b
        rows, inverse = np.unique(key, return_inverse=True)
        totals = np.zeros((rows.size, 3))
        np.add.at(totals, (inverse.ravel(), kind), counts)
        n_units = int(unit.max()) + 1 if unit.size else 0
        strata = None if stratum is None else np.asarray(stratum, dtype=np.int64)
        return cls(n_items, rows // (n_items * n_items), (rows // n_items) % n_items,
                   rows % n_items, totals[:, 0], totals[:, 1], totals[:, 2], n_units, strata)

    @classmethod
    def crossed(cls, n_items: int, voter, prompt, winners, losers, counts, ties=None
                ) -> PairCounts:
        """From rows per (voter, prompt, winner, loser), as :meth:`from_rows` takes them
        with two unit columns (any integer labels): clustered both ways at once."""
        # each column's labels as their ranks, then one int64 key a (voter, prompt): a 1-d
        # unique, not a row-wise one (np.unique(axis=0) on 2M rows: 3.4 s against 0.7 s)
        v = np.unique(np.asarray(voter, dtype=np.int64).ravel(), return_inverse=True)[1]
        p = np.unique(np.asarray(prompt, dtype=np.int64).ravel(), return_inverse=True)[1]
        n_p = int(p.max()) + 1 if p.size else 1
        keys, unit = np.unique(v.ravel() * n_p + p.ravel(), return_inverse=True)
        ways = (keys // n_p, keys % n_p)
        return replace(cls.from_rows(n_items, unit.ravel(), winners, losers, counts, ties),
                       ways=ways)

    @classmethod
    def from_matrix(cls, wins) -> PairCounts:
        """Treat a win matrix (fractional cells allowed) as one unit of decisive outcomes."""
        wins = np.asarray(wins, dtype=float)
        n = wins.shape[0]
        a, b = np.triu_indices(n, 1)
        keep = (wins[a, b] + wins[b, a]) > 0
        a, b = a[keep], b[keep]
        zeros = np.zeros(a.size, dtype=np.int64)
        return cls(n, zeros, a, b, wins[a, b], wins[b, a], np.zeros(a.size), 1 if a.size else 0)

    # --- views ---------------------------------------------------------------------------

    @property
    def total(self) -> float:
        return float(self.ab.sum() + self.ba.sum() + self.tie.sum())

    @property
    def n_strata(self) -> int:
        if self.stratum is None or not self.stratum.size:
            return 1
        return int(self.stratum.max()) + 1

    def matrix(self, unit_weights=None) -> np.ndarray:
        """The win matrix with a tie as half a win each way, each unit's rows multiplied
        by ``unit_weights[u]`` when given."""
        w = 1.0 if unit_weights is None else np.asarray(unit_weights, float)[self.unit]
        n = self.n_items
        wins = np.zeros(n * n)
        np.add.at(wins, self.a * n + self.b, w * (self.ab + 0.5 * self.tie))
        np.add.at(wins, self.b * n + self.a, w * (self.ba + 0.5 * self.tie))
        return wins.reshape(n, n)

    def unit_weights(self, calibration=None) -> np.ndarray:
        """Each unit's calibration weight (all 1 without one, without strata, or without
        units: an empty slice)."""
        if calibration is None or self.stratum is None or not self.stratum.size:
            return np.ones(max(self.n_units, 1))
        totals = np.bincount(self.stratum, weights=self.unit_totals(), minlength=self.n_strata)
        return calibration.weights(totals)[self.stratum]

    def weighted_matrix(self, calibration=None) -> np.ndarray:
        """The half-win matrix with every unit's votes weighted by its calibration weight."""
        if calibration is None or self.stratum is None or not self.stratum.size:
            return self.matrix()
        return self.matrix(self.unit_weights(calibration))

    def effective_size(self, calibration=None) -> float:
        """Kish's effective number of votes under the calibration weights."""
        from arena.ranking.strata import effective_size

        return effective_size(self.unit_weights(calibration), self.unit_totals())

    def restricted(self, items) -> PairCounts:
        """The outcomes among ``items`` only, renumbered 0..len(items)-1 in that order."""
        items = np.asarray(items, dtype=np.int64)
        index = np.full(self.n_items, -1)
        index[items] = np.arange(items.size)
        keep = (index[self.a] >= 0) & (index[self.b] >= 0)
        a, b = index[self.a[keep]], index[self.b[keep]]
        swap = a > b
        ab = np.where(swap, self.ba[keep], self.ab[keep])
        ba = np.where(swap, self.ab[keep], self.ba[keep])
        return PairCounts(items.size, self.unit[keep], np.minimum(a, b), np.maximum(a, b),
                          ab, ba, self.tie[keep], self.n_units, self.stratum, self.ways)

    def unit_totals(self) -> np.ndarray:
        """Votes per unit."""
        return np.bincount(self.unit, weights=self.ab + self.ba + self.tie,
                           minlength=self.n_units)

    def effective_units(self) -> float:
        """How many units of equal size the units' votes are worth (see
        :func:`effective_units`); of two-way data, the fewer of its two ways'."""
        if self.two_way:
            return min(self.way(0).effective_units(), self.way(1).effective_units())
        totals = self.unit_totals()
        return effective_units(totals.sum(), (totals ** 2).sum())

    @property
    def two_way(self) -> bool:
        """Clustered two ways, each with two units at least (else it is one-way data)."""
        return self.ways is not None and all(w.size and w.max() >= 1 for w in self.ways)

    def way(self, k: int) -> PairCounts:
        """Two-way data clustered one way: by voter (``k=0``) or by prompt (1)."""
        labels = self.ways[k][self.unit]
        n = self.n_items
        key = (labels * n + self.a) * n + self.b
        rows, inverse = np.unique(key, return_inverse=True)
        sums = np.zeros((rows.size, 3))
        np.add.at(sums, inverse.ravel(), np.stack([self.ab, self.ba, self.tie], axis=1))
        return PairCounts(n, rows // (n * n), (rows // n) % n, rows % n, sums[:, 0],
                          sums[:, 1], sums[:, 2], int(self.ways[k].max()) + 1)

    def unit_cells(self) -> sparse.csr_matrix:
        """Units x (n*n) cells of the half-win matrix: ``unit_weights @ unit_cells()`` is
        the flattened win matrix of any reweighting of the units."""
        n = self.n_items
        rows = np.concatenate([self.unit, self.unit])
        cols = np.concatenate([self.a * n + self.b, self.b * n + self.a])
        vals = np.concatenate([self.ab + 0.5 * self.tie, self.ba + 0.5 * self.tie])
        return sparse.csr_matrix((vals, (rows, cols)), shape=(self.n_units, n * n))

    def collapsed(self) -> PairCounts:
        """The same outcomes as a single unit (for vote-level resampling)."""
        n = self.n_items
        key = self.a * n + self.b
        cells, inverse = np.unique(key, return_inverse=True)
        sums = np.zeros((cells.size, 3))
        np.add.at(sums, inverse.ravel(), np.stack([self.ab, self.ba, self.tie], axis=1))
        zeros = np.zeros(cells.size, dtype=np.int64)
        return PairCounts(n, zeros, cells // n, cells % n, sums[:, 0], sums[:, 1],
                          sums[:, 2], 1 if cells.size else 0)


def effective_units(votes: float, squares: float) -> float:
    """``(sum n_u)^2 / sum n_u^2`` over units casting ``n_u`` votes each: their number when
    all cast alike, far fewer when a few cast most (three voters with a fifth each: under
    ten, however many others vote). Clustered intervals need many effective units, not many
    units."""
    return float(votes ** 2 / squares) if squares > 0 else 0.0
