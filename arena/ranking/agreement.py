"""How much voters agree on one criterion: Krippendorff's alpha over repeated comparisons,
and the share of votes that side with their pair's majority, with 95% intervals.

A unit is one comparison (an image pair); its values are the votes for either image. Only
pairs voted at least twice are pairable. Nominal alpha from the units' counts ``a`` and
``b`` (votes for each image, ``n = a + b``)::

    alpha = 1 - (N - 1) * sum(a * b / (n - 1)) / (N_a * N_b)

with ``N_a``, ``N_b`` the pairable votes for the first and the second images and ``N`` their
sum (Krippendorff 2011, "Computing Krippendorff's alpha-reliability", section C; equal to
the ``krippendorff`` package's value, tests/unit/test_agreement.py). 1 is perfect agreement,
0 agreement as by chance.

The population is new pairs voted by new voters, so the intervals count both: a crowd of
thirty voters, six of them clicking at random, says as much about the crowd as the six do.
Both figures are smooth functions of four sums over comparisons; their variance comes
through the gradient (the delta method) from each comparison's part (clustered by pair) and
from each vote's (the parts of its pair with and without it, summed per voter), two ways at
once as Cameron, Gelbach and Miller sum them: pairs' plus voters' less the votes' own. The
intervals are Student's t with the fewer effective units (pairs, voters) less one degrees
of freedom, and none is given where the voters are worth fewer than ``min_voters`` of
equal size (``benchmarks/agreement.py`` measures their coverage).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import stdtrit

from arena.ranking.pairs import effective_units


@dataclass(frozen=True)
class Agreement:
    alpha: float
    alpha_low: float | None  # (None: too few voters for an interval; see ``note``)
    alpha_high: float | None
    majority: float  # share of pairable votes on their pair's side with more votes
    majority_low: float | None
    majority_high: float | None
    pairs: int  # comparisons voted at least twice
    votes: int  # their votes
    voters: int | None = None  # who cast them (None: not known, each vote taken as a voter's)
    effective_voters: float | None = None  # what they are worth as voters of equal votes
    note: str | None = None  # why there are no intervals


def agreement(counts, *, level: float = 0.95) -> Agreement | None:
    """Alpha and the majority share of ``counts`` (one row per comparison: votes for its
    first and its second image), each vote taken as a different voter's (as in a file
    without voters), or None with fewer than two pairable comparisons or no variation at
    all. A tie within a pair counts half its votes as with the majority."""
    counts = np.asarray(counts, dtype=float).reshape(-1, 2)
    return _agreement(counts, None, level, 0)


def agreement_of_votes(comparison, voter, first, *, level: float = 0.95,
                       min_voters: int = 20) -> Agreement | None:
    """As :func:`agreement`, from the votes themselves: each one's comparison and voter (any
    integer labels) and whether it went to the comparison's first image; the intervals
    count the voters as well as the pairs."""
    comparison, voter = np.asarray(comparison), np.asarray(voter)
    first = np.asarray(first, dtype=bool)
    pairs, pair = np.unique(comparison, return_inverse=True)
    pair = pair.ravel()
    counts = np.column_stack([np.bincount(pair, first, len(pairs)),
                              np.bincount(pair, ~first, len(pairs))])
    pairable = counts.sum(axis=1) >= 2
    kept = pairable[pair]
    at = (np.cumsum(pairable) - 1)[pair[kept]]  # (each pairable vote's row among the pairable)
    for_first, for_second = _vote_parts(counts[pairable])
    parts = np.where(first[kept, None], for_first[at], for_second[at])
    labels, unit = np.unique(voter[kept], return_inverse=True)
    voters = np.zeros((len(labels), 5))
    np.add.at(voters, unit.ravel(), np.column_stack([np.ones(kept.sum()), parts]))
    return agreement_of_voters(counts, voters, level=level, min_voters=min_voters)


def agreement_of_voters(counts, voters, *, level: float = 0.95,
                        min_voters: int = 20) -> Agreement | None:
    """As :func:`agreement_of_votes`, from each comparison's ``counts`` (votes for its first
    and its second image) and one row per voter: their pairable votes, and the sum over
    them of their pair's four parts (:func:`_parts`) less those of the pair without the
    vote (what a database can sum per voter without sending a row a vote)."""
    counts = np.asarray(counts, dtype=float).reshape(-1, 2)
    voters = np.asarray(voters, dtype=float).reshape(-1, 5)
    return _agreement(counts, voters, level, min_voters)


def _agreement(counts: np.ndarray, voters, level: float, min_voters: int) -> Agreement | None:
    pairable = counts.sum(axis=1) >= 2
    if pairable.sum() < 2:
        return None
    counts = counts[pairable]
    parts = _parts(counts)
    sums = parts.sum(axis=0)
    point = _ratios(sums)
    if not np.isfinite(point).all():
        return None
    step = np.maximum(np.abs(sums), 1.0) * 1e-6
    gradient = np.stack([(_ratios(sums + step[k] * np.eye(4)[k]) - point) / step[k]
                         for k in range(4)])  # (4 sums) x (alpha, majority)
    variance = _clustered(parts @ gradient)  # by pair
    units = len(counts)
    effective = None
    if voters is not None:
        # the votes' own term from each pair's two kinds of vote (one for either image)
        influence = np.concatenate(_vote_parts(counts)) @ gradient
        weight = np.concatenate([counts[:, 0], counts[:, 1]])
        per_voter = voters[:, 1:] @ gradient
        two_way = variance + _clustered(per_voter) - _clustered(influence, weight)
        # (a difference of variances: where it is not positive, the larger one way's)
        variance = np.where(two_way > 0, two_way,
                            np.maximum(variance, _clustered(per_voter)))
        cast = voters[:, 0]
        effective = effective_units(cast.sum(), (cast ** 2).sum())
        units = min(units, effective)
    note = None
    if effective is not None and effective < min_voters:
        note = (f"no intervals: the {len(voters):,d} voters are worth {effective:.0f} of "
                f"equal votes (fewer than {min_voters})")
        low = high = (None, None)
    else:
        q = float(stdtrit(max(units - 1.0, 1.0), 0.5 + level / 2))
        spread = q * np.sqrt(variance)
        low = (float(point[0] - spread[0]), float(max(point[1] - spread[1], 0.5)))
        high = (float(min(point[0] + spread[0], 1.0)), float(min(point[1] + spread[1], 1.0)))
    return Agreement(alpha=float(point[0]), alpha_low=low[0], alpha_high=high[0],
                     majority=float(point[1]), majority_low=low[1], majority_high=high[1],
                     pairs=len(counts), votes=int(counts.sum()),
                     voters=None if voters is None else len(voters), note=note,
                     effective_voters=None if effective is None else round(effective, 1))


def _clustered(influence: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
    """The variance of a sum over units from each unit's share of it (rows; ``weight``:
    how many units each row stands for), with the usual G / (G - 1) for G units."""
    weight = np.ones(len(influence)) if weight is None else weight
    units = weight.sum()
    if units < 2:
        return np.zeros(influence.shape[1])
    mean = (weight[:, None] * influence).sum(axis=0) / units
    return units / (units - 1) * (weight[:, None] * (influence - mean) ** 2).sum(axis=0)


def _vote_parts(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pairable comparison, a vote's part for either image: the comparison's parts less
    those of the comparison without one vote for its first (then its second) image."""
    whole = _parts(counts)
    found = []
    for side in (0, 1):
        rest = counts - np.eye(2)[side]
        part = whole.copy()
        left = rest.sum(axis=1) >= 2
        part[left] -= _parts(rest[left])
        found.append(part)
    return found[0], found[1]


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
