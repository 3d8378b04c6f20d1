"""Rank bounds and tiers come from one simultaneous procedure and never contradict."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from arena.ranking import ranks


def _check_consistent(point, sets):
    n = point.size
    order_rank = np.empty(n, dtype=int)
    order_rank[np.argsort(-point, kind="stable")] = np.arange(1, n + 1)
    ahead = sets.ahead
    assert not np.any(ahead & ahead.T)  # never both ways
    for i in range(n):
        assert 1 <= sets.best[i] <= order_rank[i] <= sets.worst[i] <= n
        # every item of the tiers above is surely ahead of it: it cannot rank above its tier
        assert sets.best[i] >= sets.tier[i]
        for j in range(n):
            if sets.tier[i] < sets.tier[j]:  # a better tier: surely ahead, and estimated so
                assert ahead[i, j] and point[i] >= point[j]
            if ahead[i, j]:
                assert sets.tier[j] >= sets.tier[i] and point[i] > point[j]
    # tiers follow the estimates, from 1 without gaps, and cut wherever they can
    order = np.argsort(-point, kind="stable")
    steps = np.diff(sets.tier[order])
    assert sets.tier[order[0]] == 1 and np.all((steps == 0) | (steps == 1))
    for p in range(1, n):
        clean = ahead[np.ix_(order[:p], order[p:])].all()
        assert clean == (sets.tier[order[p]] > sets.tier[order[p - 1]])


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 12).flatmap(lambda n: st.tuples(
    arrays(np.float64, n, elements=st.floats(-3, 3)),
    arrays(np.float64, (n, n), elements=st.floats(-1, 1)),
    st.floats(0.01, 2.0))))
def test_tiers_never_contradict_rank_bounds_normal(case):
    point, root, scale = case
    covariance = scale * (root @ root.T + 0.05 * np.eye(point.size)) / point.size
    _check_consistent(point, ranks.from_normal(point, covariance, draws=500))


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 10), st.integers(0, 2**32 - 1), st.floats(0.05, 1.5))
def test_tiers_never_contradict_rank_bounds_bootstrap(n, seed, noise):
    rng = np.random.default_rng(seed)
    point = np.sort(rng.normal(0, 1, n))[::-1] * rng.uniform(0, 2)
    samples = point + noise * rng.normal(0, 1, (200, n)) * rng.uniform(0.2, 2, n)
    _check_consistent(point, ranks.from_samples(point, samples))


def test_simultaneous_coverage_of_the_true_order():
    # 10 items, several nearly equal: how often does any "surely ahead" claim contradict the
    # true order? At most 5% of the time, for all pairs at once.
    rng = np.random.default_rng(0)
    truth = np.array([1.0, 0.9, 0.85, 0.5, 0.5, 0.45, 0.0, -0.1, -0.5, -0.6])
    root = rng.normal(0, 1, (10, 10))
    covariance = 0.02 * (root @ root.T / 10 + np.eye(10))
    wrong = 0
    for _ in range(400):
        estimate = rng.multivariate_normal(truth, covariance)
        sets = ranks.from_normal(estimate, covariance, draws=1000, rng=rng)
        claims = np.argwhere(sets.ahead)
        wrong += any(truth[i] <= truth[j] for i, j in claims)
    assert wrong / 400 <= 0.06


def test_clear_gaps_make_single_ranks_and_separate_tiers():
    point = np.array([3.0, 0.0, -3.0])
    sets = ranks.from_normal(point, 0.01 * np.eye(3))
    assert sets.best.tolist() == sets.worst.tolist() == [1, 2, 3]
    assert sets.tier.tolist() == [1, 2, 3]


def test_one_item():
    sets = ranks.from_samples(np.array([0.0]), np.zeros((10, 1)))
    assert sets.best.tolist() == sets.worst.tolist() == sets.tier.tolist() == [1]
