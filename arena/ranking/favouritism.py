"""Voters who favour a model beyond what the crowd's strengths predict.

At the crowd's Bradley-Terry fit, each of voter u's votes on a pair with model m goes m's way
with probability p. The voter's residual for m, ``r_um = sum(outcome toward m - p)`` (a tie
half a win), has variance about ``v_um = sum p (1 - p)``, so ``z_um = r_um / sqrt(v_um)`` is
about standard normal for a voter who votes as the crowd does, and a little wider for one
with tastes of their own. An identity voting one model up in every pair it meets drifts away
by about the square root of its votes; but 60 such votes make z only 4 to 5, where the most
opinionated of a few hundred honest voters reach too (a real taste, cast often, is real
favour). What a farm cannot hide is that its identities favour **the same model together**.
So a model is **targeted** when more of its voters pass ``level`` (z of 3) than the largest
share of such voters among the other models makes likely, a binomial tail below ``alpha``
over the models; and a voter is flagged when their z for a targeted model passes ``level``.
A crowd that votes as it likes targets no model but with chance about ``alpha``; a targeted
model's flags include the honest voters who like it that much (about 1% of its voters), for
an operator to review.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import bdtr, bdtrc, expit, ndtr, ndtri

from arena.ranking.bradley_terry import BTResult
from arena.ranking.pairs import PairCounts


@dataclass(frozen=True)
class Favouritism:
    """``z[u, m]``: how far unit u's votes favour model m beyond the fit (0 where u met no
    pair with m); ``votes[u]``; ``targeted[m]``: many units favour model m together (their
    z past ``level``)."""

    z: np.ndarray
    votes: np.ndarray
    level: float
    targeted: np.ndarray
    met: np.ndarray  # [u, m]: u had enough games with m for a z

    @property
    def flagged(self) -> np.ndarray:
        """The units past ``level`` for a targeted model, most extreme first."""
        past = np.where(self.targeted, self.z, 0.0).max(axis=1, initial=0.0)
        units = np.flatnonzero(past > self.level)
        return units[np.argsort(-past[units], kind="stable")]

    @property
    def favoured(self) -> np.ndarray:
        """Each unit's most favoured targeted model (its most favoured model if none is)."""
        if not self.targeted.any():
            return self.z.argmax(axis=1)
        return np.where(self.targeted, self.z, -np.inf).argmax(axis=1)


def favouritism(data: PairCounts, fit: BTResult, alpha: float = 0.01,
                level: float = 3.0, min_games: int = 5) -> Favouritism:
    """Each of ``data``'s units (voters) against ``fit`` (the crowd's strengths). A z counts
    from ``min_games`` of the unit's games with the model on: one upset against a weak model
    makes z = 3 by itself. Raises ValueError for ``alpha`` outside (0, 1)."""
    if not 0 < alpha < 1:
        raise ValueError("alpha must be between 0 and 1")
    theta = fit.log_strengths
    p = expit(theta[data.a] - theta[data.b])
    games = data.ab + data.ba + data.tie
    toward_a = data.ab + 0.5 * data.tie - games * p
    spread = games * p * (1 - p)
    shape = (data.n_units, data.n_items)
    residual, variance, met = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    np.add.at(residual, (data.unit, data.a), toward_a)
    np.add.at(residual, (data.unit, data.b), -toward_a)
    for side in (data.a, data.b):
        np.add.at(variance, (data.unit, side), spread)
        np.add.at(met, (data.unit, side), games)
    met = (met >= min_games) & (variance > 0)
    z = np.divide(residual, np.sqrt(variance), out=np.zeros(shape), where=met)
    above = (z > level).sum(axis=0)
    voters = met.sum(axis=0)
    shares = np.divide(above, voters, out=np.zeros(above.size), where=voters > 0)
    # the usual share: the largest among the other models (weak models' fans stand out
    # more than strong models'), no less than the normal's tail
    others = np.array([np.delete(shares, m).max(initial=0.0) for m in range(shares.size)])
    usual = np.maximum(others, ndtr(-level))
    # (P(K >= k) for K binomial over the model's voters at the usual share)
    tail = bdtrc(np.maximum(above - 1, 0), voters, usual)
    targeted = (above > 0) & (tail < alpha / max(data.n_items, 1))
    return Favouritism(z, data.unit_totals(), level, targeted, met)


@dataclass(frozen=True)
class Groups:
    """``t[g, m]``: how far group g's members together favour model m beyond the crowd's
    spread of voters' z; ``flagged``: the (group, model) cells past the level;
    ``members``: the units named through them (their own z for the model past
    ``member_level``), each with its model."""

    t: np.ndarray
    level: float
    flagged: list[tuple[int, int]]
    members: dict[int, int]


def groups(found: Favouritism, group: np.ndarray, alpha: float = 0.01,
           min_members: int = 3, member_level: float | None = None) -> Groups:
    """Groups of units (``group[u]``, -1 for none: voters on one network) whose members
    favour one model together. A farm spread thin over many identities, each too short to
    stand out alone, still moves its network's members the same way. Under the null a
    group's members are like any voters, so the sum of their z for m over the root of their
    number, centred and scaled by the median and standard deviation of the other voters' z
    for m (at least 1: z's own spread), is about standard normal; a
    cell is flagged past the normal's ``alpha`` tail shared by every cell (groups of
    ``min_members`` or more, with a z, times models). Its members past ``member_level`` are
    named: by default the line a voter alone must cross (``found.level``), so that a
    network's signal names no voter whose own votes do not cross it (five identities on
    the network of a few honest voters with a taste of their own would frame them)."""
    member_level = found.level if member_level is None else member_level
    if not 0 < alpha < 1:
        raise ValueError("alpha must be between 0 and 1")
    n_groups = int(group.max(initial=-1)) + 1
    shape = (n_groups, found.z.shape[1])
    known = group >= 0
    total, count = np.zeros(shape), np.zeros(shape)
    for m in range(shape[1]):
        use = known & found.met[:, m]
        np.add.at(total[:, m], group[use], found.z[use, m])
        np.add.at(count[:, m], group[use], 1)
    tested = count >= min_members
    t = np.zeros(shape)
    for g, m in zip(*np.nonzero(tested), strict=True):
        # (the crowd without the group: a farm that is most of a young crowd's voters with a
        # z must not set the scale it is measured by)
        others = found.z[found.met[:, m] & (group != g), m]
        centre, spread = _robust(others)
        t[g, m] = (total[g, m] - count[g, m] * centre) / (np.sqrt(count[g, m]) * spread)
    level = float(ndtri(1 - alpha / max(int(tested.sum()), 1)))
    flagged = [(int(g), int(m)) for g, m in zip(*np.nonzero(tested & (t > level)),
                                                strict=True)]
    members: dict[int, int] = {}
    for g, m in flagged:
        for u in np.flatnonzero((group == g) & found.met[:, m] & (found.z[:, m] > member_level)):
            members.setdefault(int(u), m)
    return Groups(t, level, flagged, members)


def _robust(values: np.ndarray) -> tuple[float, float]:
    """The median (which a few others' farms cannot move) and the standard deviation (which
    heavy voters' tastes widen, as they widen a group's sum), no less than 1; (0, 1), z's
    own null, with fewer than 10 values: too few to say."""
    if values.size < 10:
        return 0.0, 1.0
    return float(np.median(values)), max(1.0, float(np.std(values)))


def one_sided(left: np.ndarray, votes: np.ndarray, alpha: float = 0.01,
              min_votes: int = 20) -> np.ndarray:
    """The units (of ``min_votes`` or more) that choose one side of the screen far beyond
    chance. Each task's sides are drawn at random, so whoever looks at the images picks the
    left one about half the time whatever their tastes; whoever taps the same side without
    looking does not. A two-sided binomial test at ``alpha`` shared by the units tested.
    Returns a boolean mask."""
    if not 0 < alpha < 1:
        raise ValueError("alpha must be between 0 and 1")
    left, votes = np.asarray(left, dtype=np.int64), np.asarray(votes, dtype=np.int64)
    tested = votes >= min_votes
    # (P(X <= k) and P(X >= k) for X binomial(n, 1/2))
    low = bdtr(left, votes, 0.5)
    high = bdtrc(np.maximum(left - 1, 0), votes, 0.5)
    p = np.minimum(1.0, 2 * np.minimum(low, np.where(left > 0, high, 1.0)))
    return tested & (p < alpha / max(int(tested.sum()), 1))
