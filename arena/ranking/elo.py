"""Online Elo (DESIGN.md §2): base 10, scale 400, initial 1000, K configurable (default 4).

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
    winners, losers = list(map(int, winners)), list(map(int, losers))
    if len(winners) != len(losers):
        raise ValueError("winners and losers must have the same length")
    tie_flags = [False] * len(winners) if ties is None else list(map(bool, ties))
    if len(tie_flags) != len(winners):
        raise ValueError("ties must have the same length as winners")
    games = ((w, lo, 0.5 if t else 1.0) for w, lo, t in zip(winners, losers, tie_flags,
                                                             strict=True))
    return replay_elo(games, n_items, params)
