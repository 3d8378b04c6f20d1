"""Cohorts of voters who together move the crowd's ranking beyond what voters like the crowd
would, however few votes each casts.

A farm shaped to the per-voter screen (:mod:`arena.ranking.favouritism`) spreads its votes
thin: many identities, each too short for a score of its own, each agreeing with the crowd
but for a few votes. What it cannot spread thin is their sum. So the voters new together
(first seen in one period, one day, one week, or counted from one period; and those of each
who cast the busier half of its votes) are tested as one unit against the crowd
outside them (the **reference**).

At the reference's Bradley-Terry fit each of the cohort's votes on a pair (a, b) has an
expected outcome; its residual ``y - p`` times ``L_a - L_b`` is its part of a linear
statistic ``L`` of the cohort's score vector. Two families of ``L`` are tested, both ways:

* one per model (``L = e_m``): the cohort's excess wins of model m: favouring it, or
  disfavouring it (what pushes a target's neighbours down);
* one per adjacent gap of the public order (``L = H⁺(e_i - e_j)``, H the information of all
  the votes): how far the cohort moved the gap between two neighbours, the shift a farm buys,
  whether its votes are on the target's pairs or only on its neighbours' ("omnipresent"
  rigging, Min et al. 2025).

Under the null (the cohort's voters vote as the crowd's do) a statistic's sum has mean 0 and
a variance the reference tells: the binomial part of each vote, plus each voter's own taste
(variance ``kappa_v`` per unit of a voter's information squared) and each prompt's effect
(``kappa_p`` likewise), both estimated by the method of moments from the reference's voters and
prompts (so a farm cannot widen the yardstick it is measured by), plus the reference fit's own
uncertainty (a two-way sandwich). The cohort is **flagged** when a statistic passes ``level``
(the caller sets it, e.g. Bonferroni over every statistic of every cohort tested), or when a
gap it reversed (the reference's fit orders the two models the other way) passes the
one-sided ``pivotal_level``: what a farm buys is a reversal, and a cohort that is a large
share of the votes needs little z for one. Then the fewest members, most extreme first,
whose removal takes every statistic back under the level and leaves no gap reversed are
named: what is left of the cohort moves the ranking no more than voters like the crowd
could.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from arena.ranking.bradley_terry import bradley_terry, is_strongly_connected
from arena.ranking.pairs import PairCounts

ELO = 400.0 / np.log(10.0)  # natural log-strength to the Elo scale


@dataclass(frozen=True)
class Statistic:
    """``kind`` "model" (``items`` (m,): its excess wins) or "gap" (``items`` (i, j), i above
    j: the shift of their gap); ``sum`` the cohort's value (excess wins; the gap's shift in
    log-strength), ``z`` it over its null spread."""

    kind: str
    items: tuple[int, ...]
    sum: float
    z: float


@dataclass(frozen=True)
class CohortTest:
    """The cohort's ``statistics`` before any removal; ``level`` what flags one;
    ``removed``: the members (voter indices of the data) whose removal takes every statistic
    under the cleaning level (empty when none passed ``level``); ``after``: the statistics
    without them; ``tested``: False when the reference is too thin to say (then nothing is
    flagged); ``votes``: the cohort's."""

    statistics: list[Statistic]
    level: float
    removed: np.ndarray
    after: list[Statistic]
    tested: bool
    votes: float

    @property
    def flagged(self) -> bool:
        return self.removed.size > 0

    @property
    def worst(self) -> Statistic | None:
        return max(self.statistics, key=lambda s: abs(s.z), default=None)


def count(n_items: int, gaps: int) -> int:
    """How many statistics one cohort test computes (a Bonferroni count)."""
    return 2 * (n_items + gaps)


def busier_half(cast: np.ndarray, member: np.ndarray, least: int = 20) -> np.ndarray:
    """The members (a mask) who cast more votes (``cast``: per voter) than the one whose
    votes bring the busiest members' count to half the cohort's (or, where none does, as many
    as that one): a cohort of its own, as a farm's identities cast more than most newcomers do
    unless it buys more of them. None when fewer than ``least``: a few busy voters are each
    the per-voter screen's to score, and a handful's tastes are no normal sum."""
    ids = np.flatnonzero(member & (cast > 0))
    if ids.size < least:
        return np.zeros_like(member, dtype=bool)
    order = ids[np.argsort(-cast[ids], kind="stable")]
    total = np.cumsum(cast[order])
    last = cast[order[min(int(np.searchsorted(total, total[-1] / 2)), order.size - 1)]]
    busy = member & (cast > last)
    if not busy.any():
        busy = member & (cast >= last)
    return busy if busy.sum() >= least else np.zeros_like(member, dtype=bool)


def cohort_test(data: PairCounts, member: np.ndarray, gaps: list[tuple[int, int]],
                level: float, min_reference_games: float = 20.0, cap: float = 60.0,
                clean: float = 3.0, pivotal_level: float | None = None) -> CohortTest:
    """Test the cohort ``member`` (a mask over the voters of two-way ``data``: ``ways[0]``)
    against the rest. ``gaps``: pairs (i, j) of items adjacent in the public order, i above
    j. Models with fewer than ``min_reference_games`` games in the reference are left out
    (their strength is the cohort's own to say), with the votes on them. A member's votes
    weigh ``cap / votes`` each past ``cap`` (a heavy voter's own taste is their own screen's to
    judge). A cohort flagged is cleaned down to ``clean``: the members removed take every
    statistic under it, not only under ``level`` (what is left could still have been most of
    a farm). ``pivotal_level``: a gap the cohort reversed (the reference's fit orders its
    two models the other way) flags it already where the cohort's shift of that gap passes
    this one-sided line (a gap that is the cohort's doing is what a farm buys; the caller
    counts the gaps of every cohort tested for it). Raises ValueError for data that is not
    two-way."""
    if data.ways is None:
        raise ValueError("cohort_test needs two-way data (voter and prompt per unit)")
    voter = data.ways[0][data.unit]
    prompt = data.ways[1][data.unit]
    member = np.asarray(member, dtype=bool)
    inside = member[voter]
    games = data.ab + data.ba + data.tie
    n = data.n_items
    played = np.zeros(n)
    np.add.at(played, data.a[~inside], games[~inside])
    np.add.at(played, data.b[~inside], games[~inside])
    known = played >= min_reference_games
    rows = known[data.a] & known[data.b]
    votes = float(games[inside & rows].sum())
    gaps = [(i, j) for i, j in gaps if known[i] and known[j]]
    if known.sum() < 2 or not (inside & rows).any():
        return CohortTest([], level, np.zeros(0, dtype=np.int64), [], False, votes)
    parts = _Parts(data, rows, voter, prompt, inside, cap)
    directions, labels = _directions(parts, np.flatnonzero(known), gaps)
    dispersion = parts.dispersion(directions)
    before = parts.statistics(directions, labels, member, dispersion)
    flagged = any(abs(stat.z) >= level for stat in before) or (
        pivotal_level is not None and any(
            stat.z >= pivotal_level for stat in before if _reversed(parts, stat)))
    removed, after = (_remove(parts, directions, labels, member, min(clean, level), dispersion,
                              before) if flagged else (np.zeros(0, dtype=np.int64), before))
    return CohortTest(before, level, removed, after, True, votes)


def _reversed(parts: _Parts, stat: Statistic) -> bool:
    """A gap statistic whose two models the reference's fit orders the other way: a gap the
    cohort's votes reversed."""
    theta = parts.theta_ref
    return stat.kind == "gap" and theta[stat.items[1]] > theta[stat.items[0]]


class _Parts:
    """The votes' residuals at the reference's fit and what the null variance needs."""

    def __init__(self, data: PairCounts, rows, voter, prompt, inside, cap: float):
        self.n = data.n_items
        self.a, self.b = data.a[rows], data.b[rows]
        self.voter, self.prompt, self.cell = voter[rows], prompt[rows], data.unit[rows]
        self.inside = inside[rows]
        won = data.ab[rows] + 0.5 * data.tie[rows]
        games = data.ab[rows] + data.ba[rows] + data.tie[rows]
        ref = ~self.inside
        wins = np.zeros((self.n, self.n))
        np.add.at(wins, (self.a[ref], self.b[ref]), won[ref])
        np.add.at(wins, (self.b[ref], self.a[ref]), games[ref] - won[ref])
        theta = bradley_terry(wins, prior=None if is_strongly_connected(wins) else 1e-3
                              ).log_strengths
        self.theta_ref = theta
        p = expit(theta[self.a] - theta[self.b])
        self.residual = won - games * p  # toward a
        self.info = games * p * (1 - p)
        self.h_all = self._information(np.ones(self.a.size, dtype=bool))
        self.h_ref_inv = _pinv(self._information(ref))
        # a heavy reference voter pulls the fit toward their own taste and hides it in
        # their residuals: each reference voter's residuals are scaled by 1 / (1 - h), h
        # their share of the reference's information (as CR3's jackknife does)
        h = self.h_ref_inv
        spread = self.info * (h[self.a, self.a] + h[self.b, self.b] - 2 * h[self.a, self.b])
        share = np.zeros(int(self.voter.max(initial=-1)) + 1)
        np.add.at(share, self.voter[ref], spread[ref])
        share = np.minimum(share / max(self.n - 1, 1), 0.9)
        self.leveraged = np.where(ref, self.residual / (1 - share[self.voter]), self.residual)
        # a member's votes count up to ``cap`` of them in the cohort's sums: a heavy voter is
        # scored alone (arena.ranking.favouritism), and one would make the sum their taste
        cast = np.zeros(share.size)
        np.add.at(cast, self.voter, games)
        self.weight = np.minimum(1.0, cap / np.maximum(cast[self.voter], 1.0))
        self._effects = self._theta_cov = None
        # each two-way cell's prompt
        self._cell_prompt = np.zeros(int(data.unit.max(initial=-1)) + 1, dtype=np.int64)
        self._cell_prompt[data.unit] = prompt
        self.n_voters = int(self.voter.max(initial=-1)) + 1

    def _information(self, rows, weight=None) -> np.ndarray:
        h = np.zeros((self.n, self.n))
        info = self.info[rows] * (1.0 if weight is None else weight[rows])
        a, b = self.a[rows], self.b[rows]
        np.add.at(h, (a, a), info)
        np.add.at(h, (b, b), info)
        np.add.at(h, (a, b), -info)
        np.add.at(h, (b, a), -info)
        return h

    def statistics(self, directions: np.ndarray, labels: list, member: np.ndarray,
                   dispersion: tuple[np.ndarray, np.ndarray]) -> list[Statistic]:
        """Each direction's cohort sum and z for the cohort ``member``: the sum less each
        prompt's effect as the reference shows it (shrunk), its variance the votes', the
        voters' tastes', what is left unknown of the prompts' effects and the reference
        fit's."""
        inside = self.inside & member[self.voter]
        weight = self.weight[inside, None]
        diff = directions[self.a[inside]] - directions[self.b[inside]]  # rows x statistics
        w = weight * self.residual[inside, None] * diff
        g = weight * self.info[inside, None] * diff  # (weighted: what the sum expects)
        b = g * diff
        kappa_v, kappa_p = dispersion
        taste = _taste(self.voter[inside], self.a[inside], self.b[inside], g, self.n)
        prompts, per_prompt = _group_sum(self.prompt[inside], b, labels=True)
        effect, unknown = self.prompt_effects(directions, dispersion)
        total = w.sum(axis=0) - (per_prompt * effect[prompts]).sum(axis=0)
        left = np.where(np.isnan(unknown[prompts]), kappa_p, unknown[prompts])
        variance = (weight * b).sum(axis=0) + kappa_v * taste.sum(axis=0) \
            + (per_prompt ** 2 * left).sum(axis=0)
        moved = self._information(inside, self.weight) @ directions  # n x statistics
        taste = float(np.median([kappa_v[k] for k, (kind, _) in enumerate(labels)
                                 if kind == "model"]))
        variance += np.einsum("ks,kl,ls->s", moved, self.theta_cov(taste), moved)
        variance = np.maximum(variance, 0.0)
        z = np.divide(total, np.sqrt(variance), out=np.zeros_like(total),
                      where=variance > 0)
        return [Statistic(kind, items, float(total[k]), float(z[k]))
                for k, (kind, items) in enumerate(labels)]

    def theta_cov(self, kappa: float) -> np.ndarray:
        """The reference fit's covariance as the model of the null says it (the votes' and
        the voters' tastes, at the model directions' median taste): a sandwich of the
        reference's own scores is one cluster's guess where one voter casts a quarter."""
        if self._theta_cov is None:
            ref = ~self.inside
            labels, index = np.unique(self.voter[ref], return_inverse=True)
            meat = self._information(ref)
            for start in range(0, labels.size, 4096):
                chosen = (index >= start) & (index < start + 4096)
                block = np.zeros((min(4096, labels.size - start), self.n, self.n))
                at = index[chosen] - start
                a, b, info = self.a[ref][chosen], self.b[ref][chosen], self.info[ref][chosen]
                np.add.at(block, (at, a, a), info)
                np.add.at(block, (at, b, b), info)
                np.add.at(block, (at, a, b), -info)
                np.add.at(block, (at, b, a), -info)
                meat += kappa * np.einsum("uij,ujk->ik", block, block)
            self._theta_cov = self.h_ref_inv @ meat @ self.h_ref_inv
        return self._theta_cov

    def _reference(self, directions):
        """The reference's rows as (w, g, b) per statistic."""
        ref = ~self.inside
        diff = directions[self.a[ref]] - directions[self.b[ref]]
        g = self.info[ref, None] * diff
        return ref, self.leveraged[ref, None] * diff, g, g * diff

    def prompt_effects(self, directions, dispersion) -> tuple[np.ndarray, np.ndarray]:
        """Per prompt (numbered as the data's) and direction: the effect per unit of
        information the reference shows (its residual sum shrunk toward 0 by the prompts'
        spread ``kappa_p``), and the variance left (NaN where it has no votes)."""
        if self._effects is not None:
            return self._effects
        kappa_v, kappa_p = dispersion
        ref, w, g, b = self._reference(directions)
        size = int(self.prompt.max(initial=-1)) + 1
        sums_w, sums_b = np.zeros((size, w.shape[1])), np.zeros((size, w.shape[1]))
        np.add.at(sums_w, self.prompt[ref], w)
        np.add.at(sums_b, self.prompt[ref], b)
        cells = _taste(self.cell[ref], self.a[ref], self.b[ref], g, self.n, labels=True)
        tastes = np.zeros((size, w.shape[1]))
        np.add.at(tastes, self._cell_prompt[cells[0]], cells[1])
        noise = sums_b + kappa_v * tastes
        denominator = kappa_p * sums_b ** 2 + noise
        seen = denominator > 0
        effect = np.divide(kappa_p * sums_b * sums_w, denominator,
                           out=np.zeros_like(sums_w), where=seen)
        unknown = np.where(seen, np.divide(kappa_p * noise, denominator,
                                           out=np.zeros_like(noise), where=seen), np.nan)
        self._effects = (effect, unknown)
        return self._effects

    def dispersion(self, directions) -> tuple[np.ndarray, np.ndarray]:
        """Per direction, the voters' taste (``kappa_v``: each model's share of a voter's
        taste, iid) and the prompts' effect (``kappa_p``, per unit of information squared),
        by the method of moments over the reference's voters and prompts."""
        ref, w, g, b = self._reference(directions)
        excess = []
        for units in (self.voter[ref], self.prompt[ref]):
            excess.append((_group_sum(units, w) ** 2 - _group_sum(units, b)).sum(axis=0))
        t_voters = _taste(self.voter[ref], self.a[ref], self.b[ref], g, self.n).sum(axis=0)
        t_cells = _taste(self.cell[ref], self.a[ref], self.b[ref], g, self.n).sum(axis=0)
        b_cells = (_group_sum(self.cell[ref], b) ** 2).sum(axis=0)
        b_prompts = (_group_sum(self.prompt[ref], b) ** 2).sum(axis=0)
        kappa_v, kappa_p = np.zeros(w.shape[1]), np.zeros(w.shape[1])
        for k in range(w.shape[1]):
            kappa_v[k], kappa_p[k] = _nonnegative_solve(
                np.array([[t_voters[k], b_cells[k]], [t_cells[k], b_prompts[k]]]),
                np.array([excess[0][k], excess[1][k]]))
        return kappa_v, kappa_p


def _taste(units, a, b, g, n: int, labels: bool = False):
    """Per unit and statistic, how much a taste of unit variance per model moves the unit's
    sum: ``|M_u L|^2``, M_u the unit's information (``g`` = information x (L_a - L_b) per
    row); with ``labels``, (the unit labels, the values)."""
    found, index = np.unique(units, return_inverse=True)
    out = np.zeros((found.size, g.shape[1]))
    for k in range(g.shape[1]):
        moved = np.zeros((found.size, n))
        np.add.at(moved, (index, a), g[:, k])
        np.add.at(moved, (index, b), -g[:, k])
        out[:, k] = (moved ** 2).sum(axis=1)
    return (found, out) if labels else out


def _pinv(h: np.ndarray) -> np.ndarray:
    """The pseudo-inverse of an information matrix (a graph Laplacian: a common shift of the
    strengths is no information), its null directions dropped at a relative 1e-9."""
    values, vectors = np.linalg.eigh((h + h.T) / 2)
    keep = values > 1e-9 * max(float(values.max(initial=0.0)), 1e-300)
    return (vectors[:, keep] / values[keep]) @ vectors[:, keep].T


def _group_sum(units: np.ndarray, values: np.ndarray, labels: bool = False):
    """Rows of ``values`` summed per unit label (labels need not be contiguous); with
    ``labels``, (the labels, the sums)."""
    found, index = np.unique(units, return_inverse=True)
    out = np.zeros((found.size, values.shape[1]))
    np.add.at(out, index.ravel(), values)
    return (found, out) if labels else out


def _nonnegative_solve(matrix: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    """The least-squares (x, y) >= 0 of a 2 x 2 moment system."""
    best, value = (0.0, 0.0), float(target @ target)
    candidates = []
    with contextlib.suppress(np.linalg.LinAlgError):
        candidates.append(np.linalg.solve(matrix, target))
    for k in (0, 1):
        if matrix[k, k] > 0:
            x = np.zeros(2)
            x[k] = max(0.0, target[k] / matrix[k, k])
            candidates.append(x)
    for x in candidates:
        if np.all(x >= 0):
            loss = float(((matrix @ x - target) ** 2).sum())
            if loss < value:
                best, value = (float(x[0]), float(x[1])), loss
    return best


def _directions(parts: _Parts, items: np.ndarray, gaps) -> tuple[np.ndarray, list]:
    """The statistics' L vectors (n x statistics) and labels: each model, each gap."""
    n = parts.n
    columns, labels = [], []
    for m in items:
        e = np.zeros(n)
        e[m] = 1.0
        columns.append(e)
        labels.append(("model", (int(m),)))
    h_inv = _pinv(parts.h_all)
    for i, j in gaps:
        e = np.zeros(n)
        e[i], e[j] = 1.0, -1.0
        columns.append(h_inv @ e)
        labels.append(("gap", (int(i), int(j))))
    return np.stack(columns, axis=1), labels


def _remove(parts: _Parts, directions, labels, member, level, dispersion, stats
            ) -> tuple[np.ndarray, list[Statistic]]:
    """The fewest members, most extreme first (by their share of the worst statistic, in
    turn), whose removal takes every statistic under ``level`` and leaves no gap reversed
    (what is left of the cohort's shift of a gap whose two models the reference orders the
    other way leaves the reference at least half its lead); and the statistics without
    them."""
    member = member.copy()
    removed: list[int] = []
    theta = parts.theta_ref
    for _ in range(len(labels) * 4):
        worst = max(range(len(stats)), key=lambda k: abs(stats[k].z))
        spread = abs(stats[worst].sum / stats[worst].z) if stats[worst].z else 0.0
        excess = abs(stats[worst].sum) - level * spread
        if abs(stats[worst].z) < level:
            # (half the reference's lead left to it: the shift is a one-step estimate)
            reversed_by = {k: stat.sum - (theta[stat.items[1]] - theta[stat.items[0]]) / 2
                           for k, stat in enumerate(stats) if _reversed(parts, stat)}
            reversed_by = {k: v for k, v in reversed_by.items() if v > 0}
            if not reversed_by:
                break
            worst = max(reversed_by, key=reversed_by.get)
            excess = reversed_by[worst]
        sign = np.sign(stats[worst].sum)
        inside = parts.inside & member[parts.voter]
        diff = directions[parts.a[inside], worst] - directions[parts.b[inside], worst]
        contribution = np.zeros(parts.n_voters)
        np.add.at(contribution, parts.voter[inside],
                  sign * parts.weight[inside] * parts.residual[inside] * diff)
        order = np.argsort(-contribution, kind="stable")
        order = order[contribution[order] > 0]
        if not order.size:
            break
        # enough of them to take this statistic under the level at its spread now (or the
        # gap back short of its reversal)
        take = int(np.searchsorted(np.cumsum(contribution[order]), excess) + 1)
        chosen = order[:max(1, min(take, order.size))]
        member[chosen] = False
        removed.extend(int(u) for u in chosen)
        stats = parts.statistics(directions, labels, member, dispersion)
    return np.array(sorted(removed), dtype=np.int64), stats
