"""Online Elo (docs/design.md): base 10, scale 400, initial 1000, K configurable (default 4).

The online updater in the vote transaction and the replay over the vote log call the same
``elo_update``, in the same order, so a replay reproduces the stored ratings bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EloParams:
    k: float = 4.0
    base: float = 10.0
    scale: float = 400.0
    initial: float = 1000.0

    def __post_init__(self):
        if not (self.k > 0 and self.base > 1 and self.scale > 0):
            raise ValueError(f"invalid Elo parameters: {self}")


def expected_score(r_a: float, r_b: float, params: EloParams = EloParams()) -> float:
    """Probability that A beats B under the logistic Elo model."""
    return 1.0 / (1.0 + params.base ** ((r_b - r_a) / params.scale))


def elo_update(
    r_a: float, r_b: float, score_a: float, params: EloParams = EloParams()
) -> tuple[float, float]:
    """Ratings of A and B after one game; ``score_a`` is 1 (A won), 0 (B won) or 0.5 (tie).

    Raises
    ------
    ValueError
        If ``score_a`` is outside [0, 1].
    """
    if not 0.0 <= score_a <= 1.0:
        raise ValueError(f"score_a must be in [0, 1], got {score_a}")
    delta = params.k * (score_a - expected_score(r_a, r_b, params))
    return r_a + delta, r_b - delta


def replay_elo(
    games: Iterable[tuple[int, int, float]],
    n_items: int,
    params: EloParams = EloParams(),
) -> np.ndarray:
    """Sequential Elo over ``games`` = (a, b, score_a) in the given order.

    Parameters
    ----------
    games : iterable of (int, int, float)
        Item indices in ``range(n_items)`` and A's score (1 win, 0 loss, 0.5 tie).
    n_items : int
        Number of items; every item starts at ``params.initial``.

    Returns
    -------
    ratings : ndarray of shape (n_items,)

    Raises
    ------
    ValueError
        On an index out of range, a self-game or a score outside [0, 1].
    """
    ratings = [params.initial] * n_items
    for a, b, score_a in games:
        if not (0 <= a < n_items and 0 <= b < n_items) or a == b:
            raise ValueError(f"invalid game ({a}, {b}) for {n_items} items")
        ratings[a], ratings[b] = elo_update(ratings[a], ratings[b], score_a, params)
    return np.asarray(ratings, dtype=float)


def elo(winners, losers, n_items: int, ties=None, params: EloParams = EloParams()) -> np.ndarray:
    """Sequential Elo over games in the given order: ``winners[k]`` beat ``losers[k]``, or
    drew with them where ``ties[k]`` is true. Same numbers as the online updater."""
    w_all, l_all = np.asarray(winners, dtype=np.int64), np.asarray(losers, dtype=np.int64)
    if w_all.shape != l_all.shape:
        raise ValueError("winners and losers must have the same length")
    score = np.ones(w_all.size) if ties is None else np.where(np.asarray(ties, dtype=bool),
                                                              0.5, 1.0)
    if score.shape != w_all.shape:
        raise ValueError("ties must have the same length as winners")
    if w_all.size and (min(w_all.min(), l_all.min()) < 0
                       or max(w_all.max(), l_all.max()) >= n_items or (w_all == l_all).any()):
        raise ValueError(f"invalid game for {n_items} items")
    # elo_update's arithmetic inlined over plain lists: the same bits, in half the time
    ratings = [params.initial] * n_items
    k, base, scale = params.k, params.base, params.scale
    for w, lo, s in zip(w_all.tolist(), l_all.tolist(), score.tolist(), strict=True):
        r_w, r_l = ratings[w], ratings[lo]
        delta = k * (s - 1.0 / (1.0 + base ** ((r_l - r_w) / scale)))
        ratings[w], ratings[lo] = r_w + delta, r_l - delta
    return np.asarray(ratings, dtype=float)


def keyed_mean(ids, winners, losers, n_items: int, key: int, orders: int,
               params: EloParams = EloParams()) -> np.ndarray:
    """Elo averaged over ``orders`` orders of the games, each drawn by :func:`keyed_order`
    from ``ids`` (one per game) and a key derived from ``key``. One order's rating moves
    with where the games fell (a model's sd is ~15 points at K 4, whatever the number of
    votes); the mean over M orders has 1/sqrt(M) of that noise (Boubdir et al. 2023)."""
    winners, losers = np.asarray(winners, dtype=np.int64), np.asarray(losers, dtype=np.int64)
    total = np.zeros(n_items)
    for j in range(orders):
        order = keyed_order(ids, (key + j * 0x9E3779B97F4A7C15) % 2**64)
        total += elo(winners[order], losers[order], n_items, params=params)
    return total / max(orders, 1)


def keyed_order(ids, key: int) -> np.ndarray:
    """The indices that sort ``ids`` (distinct integers) into an order drawn from ``key``
    (64 bits): each id's place is splitmix64's finaliser of it with the key, so ids added
    later fall among the others at random and leave their order as it was, and without the
    key nothing says where an id falls."""
    z = np.asarray(ids, dtype=np.int64).astype(np.uint64) ^ np.uint64(key & (2**64 - 1))
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return np.argsort(z ^ (z >> np.uint64(31)), kind="stable")


@dataclass(frozen=True)
class EloIntervals:
    """Elo with a confidence interval for its order-free value.

    Online Elo depends on the order of the votes (recent ones weigh more), so a single
    order's rating (``ratings``, the online path's number) is noisy in a way no amount of
    votes removes. What the votes say about a model is its Elo averaged over orders:
    ``mean`` is that average over ``orders_used`` random orders of these votes. Its
    interval comes from a bootstrap over vote order, as FastChat's does, separated into its
    two parts: ``resamples`` draws of the votes (or of whole units -- voters -- with all
    their votes), each replayed in ``orders`` random orders and averaged; the spread of
    those averages, less the order noise left in them (known from the spread within each
    draw), is the sampling variance. ``low``/``high`` are ``mean`` ± z·``se``. Plain
    percentiles of one order per draw (FastChat's) mix in the order noise: they cover the
    order-free Elo 97-100% of the time (benchmarks/coverage.py)."""

    ratings: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    se: np.ndarray
    covariance: np.ndarray
    samples: np.ndarray  # resamples x items: each draw's Elo averaged over its orders
    rounds: int  # replays in all


def elo_bootstrap(winners, losers, n_items: int, ties=None, units=None, *,
                  rounds: int = 1000, orders: int = 10, params: EloParams = EloParams(),
                  rng: np.random.Generator | None = None, level: float = 0.95,
                  budget: int = 20_000_000) -> EloIntervals:
    """Elo with a 95% interval from about ``rounds`` replays: ``rounds // orders`` draws of
    the votes (by ``units`` when given), each in ``orders`` random orders, plus as many
    random orders of the votes as they are. All replays run at once, one vote step at a time
    over arrays of replays (``budget`` bounds replays x votes held in memory).

    ``units`` is one label per vote, or two (an array of n rows: voter, prompt): then the
    covariance is Cameron, Gelbach and Miller's two-way one, the voters' plus what the
    prompts' adds to the single votes' (clipped at none: without prompt effects the
    difference is noise), each from its own draws (three times the replays).

    Raises
    ------
    ValueError
        Mismatched lengths, too few rounds or a level outside (0, 1).
    """
    from scipy.special import ndtri

    winners = np.asarray(winners, dtype=np.int64)
    losers = np.asarray(losers, dtype=np.int64)
    n = winners.size
    score = np.where(np.asarray(ties, dtype=bool), 0.5, 1.0) if ties is not None \
        else np.ones(n)
    if losers.size != n or score.size != n:
        raise ValueError("winners, losers and ties must have the same length")
    if orders < 2 or rounds < 2 * orders or not 0 < level < 1:
        raise ValueError("rounds must be >= 2 x orders, orders >= 2, level in (0, 1)")
    rng = rng if rng is not None else np.random.default_rng()
    point = elo(winners, losers, n_items, ties=score < 1, params=params)
    labels = None if units is None else np.asarray(units)
    if labels is not None and labels.ndim == 2:  # (voters + prompts - single votes)
        ways = [labels[:, 0], labels[:, 1], None]
    else:
        ways = [labels]
    draws = rounds // orders
    plan = []  # orders of the draws of each way, then of the votes as they are
    for way in ways:
        groups = _unit_groups(way, n)
        for _ in range(draws):
            picked = _one_round(groups, n, rng)
            plan += [rng.permutation(picked) for _ in range(orders)]
    plan += [rng.permutation(n) for _ in range(draws)]
    replays = _replay_all(plan, winners, losers, score, n_items, params, budget)
    parts, averaged = [], None
    for k in range(len(ways)):
        by_draw = replays[k * draws * orders:(k + 1) * draws * orders].reshape(
            draws, orders, n_items)
        within = np.mean([np.cov(by_draw[d].T) for d in range(draws)], axis=0)
        means = by_draw.mean(axis=1)
        parts.append(np.cov(means.T) - within / orders)
        averaged = means if averaged is None else averaged
    covariance = parts[0]
    if len(parts) == 3:  # (what prompts add beyond single votes: none is negative)
        covariance = covariance + nearest_psd(parts[1] - parts[2])
    original = replays[len(ways) * draws * orders:]
    covariance = nearest_psd(covariance + np.cov(original.T) / draws)
    se = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    mean = original.mean(axis=0)
    z = float(ndtri(0.5 + level / 2))
    return EloIntervals(point, mean, mean - z * se, mean + z * se, se, covariance, averaged,
                        len(plan))


def nearest_psd(matrix: np.ndarray) -> np.ndarray:
    """The nearest positive semi-definite matrix (negative eigenvalues set to 0)."""
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2)
    return (vectors * np.clip(values, 0.0, None)) @ vectors.T


def _replay_all(plan, winners, losers, score, n_items, params, budget) -> np.ndarray:
    """Replay every order of ``plan`` (vote index arrays of any length), in batches."""
    longest = max(len(order) for order in plan)
    batch = max(1, budget // max(longest, 1))
    out = []
    for start in range(0, len(plan), batch):
        rows = plan[start:start + batch]
        steps = max(len(order) for order in rows)
        padded = np.stack([np.pad(o, (0, steps - len(o)), constant_values=-1) for o in rows])
        out.append(_replay_rounds(winners, losers, score, padded, n_items, params))
    return np.vstack(out)


def _unit_groups(units, n: int):
    if units is None:
        return None
    labels = np.unique(np.asarray(units), return_inverse=True)[1].ravel()
    order = np.argsort(labels, kind="stable")
    bounds = np.flatnonzero(np.diff(labels[order])) + 1
    return np.split(order, bounds)


def _one_round(groups, n: int, rng: np.random.Generator) -> np.ndarray:
    """One draw of the votes (indices; by whole unit when grouped, so its length varies)."""
    if groups is None:
        return rng.integers(0, n, n)
    drawn = rng.integers(0, len(groups), len(groups))
    return np.concatenate([groups[g] for g in drawn])


def _replay_rounds(winners, losers, score, order, n_items: int, params: EloParams):
    """Sequential Elo for every round (rows of ``order``) at once."""
    size, steps = order.shape
    ratings = np.full((size, n_items), params.initial)
    rows = np.arange(size)
    live = order >= 0
    safe = np.where(live, order, 0)
    w_all, l_all, s_all = winners[safe], losers[safe], np.where(live, score[safe], np.nan)
    for t in range(steps):
        w, lo, s = w_all[:, t], l_all[:, t], s_all[:, t]
        r_w, r_l = ratings[rows, w], ratings[rows, lo]
        expected = 1.0 / (1.0 + params.base ** ((r_l - r_w) / params.scale))
        delta = np.nan_to_num(params.k * (s - expected))
        ratings[rows, w] = r_w + delta
        ratings[rows, lo] = r_l - delta
    return ratings


@dataclass(frozen=True)
class EloRanking:
    """Elo of the items that have a vote (``active``, their indices; every array below is
    over them): ``ordered`` the sequential Elo in the votes' own order, ``ratings`` the point
    rating (averaged over random orders when there are intervals), ``scores`` its strengths
    summing to 100, ``played`` and ``won`` (a tie half) their votes. With intervals:
    ``intervals`` (:class:`EloIntervals`), the simultaneous rank sets, the scores' interval
    and ``prob_ahead`` (row ahead of column), from normal draws of the ratings."""

    active: np.ndarray
    ordered: np.ndarray
    ratings: np.ndarray
    scores: np.ndarray
    played: np.ndarray
    won: np.ndarray
    intervals: EloIntervals | None = None
    ranks: object = None
    score_low: np.ndarray | None = None
    score_high: np.ndarray | None = None
    prob_ahead: np.ndarray | None = None


def elo_ranking(winners, losers, n_items: int, ties=None, units=None, *, rounds: int = 1000,
                params: EloParams = EloParams(), rng: np.random.Generator | None = None,
                level: float = 0.95, draws: int = 4000) -> EloRanking:
    """Elo of ``n_items`` from the votes in their order, with ``level`` intervals from about
    ``rounds`` bootstrap replays resampling ``units`` when given (:func:`elo_bootstrap`;
    none with ``rounds`` 0 or fewer than two rated items). Items without a vote are left out:
    one would sit at the starting rating inside everyone's rank sets."""
    from arena.ranking import ranks

    rng = rng if rng is not None else np.random.default_rng()
    winners = np.asarray(winners, dtype=np.int64)
    losers = np.asarray(losers, dtype=np.int64)
    tie = np.zeros(winners.size, bool) if ties is None else np.asarray(ties, bool)
    every = np.bincount(winners, minlength=n_items) + np.bincount(losers, minlength=n_items)
    active = np.flatnonzero(every > 0)
    compact = np.full(n_items, -1)
    compact[active] = np.arange(active.size)
    winners, losers, n = compact[winners], compact[losers], active.size
    ordered = elo(winners, losers, n, ties=tie, params=params)
    won = np.bincount(winners, weights=np.where(tie, 0.5, 1.0), minlength=n) \
        + np.bincount(losers, weights=np.where(tie, 0.5, 0.0), minlength=n)
    base = {"active": active, "ordered": ordered, "played": every[active], "won": won}
    if rounds <= 0 or not winners.size or n < 2:
        return EloRanking(ratings=ordered, scores=_scores(ordered, params), **base)
    boot = elo_bootstrap(winners, losers, n, ties=tie, units=units, rounds=max(rounds, 20),
                         params=params, rng=rng, level=level)
    drawn = rng.multivariate_normal(boot.mean, boot.covariance, size=draws, method="eigh")
    score_low, score_high = np.percentile(_scores(drawn, params),
                                          [50 * (1 - level), 50 * (1 + level)], axis=0)
    return EloRanking(
        ratings=boot.mean, scores=_scores(boot.mean, params), intervals=boot,
        ranks=ranks.from_normal(boot.mean, boot.covariance, level), score_low=score_low,
        score_high=score_high,
        prob_ahead=(drawn[:, :, None] > drawn[:, None, :]).mean(axis=0), **base)


def _scores(ratings: np.ndarray, params: EloParams) -> np.ndarray:
    """Elo ratings as strengths summing to 100 (along the last axis)."""
    if ratings.shape[-1] == 0:
        return ratings
    strengths = 10 ** ((ratings - ratings.max(axis=-1, keepdims=True)) / params.scale)
    return 100 * strengths / strengths.sum(axis=-1, keepdims=True)
