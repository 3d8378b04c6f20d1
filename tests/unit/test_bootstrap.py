import numpy as np
import pytest

from arena.ranking import bootstrap, bradley_terry, rank_upper_bounds
from tests.unit.test_bradley_terry import synthetic


def test_seeded_bootstrap_reproduces_exactly():
    wins, _ = synthetic(6, 3_000, 0)
    a = bootstrap(wins, rounds=200, rng=np.random.default_rng(42))
    b = bootstrap(wins, rounds=200, rng=np.random.default_rng(42))
    assert np.array_equal(a.rating_low, b.rating_low)
    assert np.array_equal(a.prob_ahead, b.prob_ahead)
    c = bootstrap(wins, rounds=200, rng=np.random.default_rng(43))
    assert not np.array_equal(a.rating_low, c.rating_low)


def test_batching_does_not_change_the_numbers():
    wins, _ = synthetic(5, 2_000, 1)
    a = bootstrap(wins, rounds=150, rng=np.random.default_rng(7), batch_size=150)
    b = bootstrap(wins, rounds=150, rng=np.random.default_rng(7), batch_size=40)
    assert np.allclose(a.rating_high, b.rating_high)


@pytest.mark.parametrize("method", ["multinomial", "poisson"])
def test_intervals_contain_the_point_estimate_and_shrink_with_data(method):
    small, _ = synthetic(5, 1_000, 2)
    large = small * 16
    rng = np.random.default_rng(3)
    few = bootstrap(small, rounds=300, method=method, rng=rng)
    many = bootstrap(large, rounds=300, method=method, rng=rng)
    point = bradley_terry(small).ratings
    assert np.all(few.rating_low <= point) and np.all(point <= few.rating_high)
    assert np.all(few.score_low <= few.point.scores) and np.all(few.point.scores <= few.score_high)
    width_few = few.rating_high - few.rating_low
    width_many = many.rating_high - many.rating_low
    # sixteen times the data: intervals about four times narrower
    assert np.allclose(width_many / width_few, 0.25, atol=0.1)


def test_percentile_coverage_is_close_to_95_percent():
    rng = np.random.default_rng(4)
    strength = np.array([0.6, 0.2, 0.0, -0.3])
    true_ratings = 400 * (strength - strength.mean()) / np.log(10) + 1000
    covered = total = 0
    for _ in range(60):
        n, votes = 4, 1_200
        a = rng.integers(0, n, votes)
        b = rng.integers(0, n - 1, votes)
        b = b + (b >= a)
        a_wins = rng.random(votes) < 1 / (1 + np.exp(strength[b] - strength[a]))
        from arena.ranking import aggregate

        wins = aggregate(np.where(a_wins, a, b), np.where(a_wins, b, a), n)
        result = bootstrap(wins, rounds=200, rng=rng)
        covered += int(np.sum((result.rating_low <= true_ratings)
                              & (true_ratings <= result.rating_high)))
        total += n
    assert 0.88 <= covered / total <= 0.99


def test_rank_upper_bound_counts_items_surely_ahead():
    low = np.array([1100.0, 1050.0, 990.0, 900.0])
    high = np.array([1150.0, 1120.0, 1060.0, 980.0])
    # item 2: only item 0's lower bound (1100) is above its upper bound (1060)
    assert rank_upper_bounds(low, high).tolist() == [1, 1, 2, 4]


def test_prob_ahead_is_a_separability_matrix():
    wins, _ = synthetic(4, 4_000, 5)
    result = bootstrap(wins, rounds=300, rng=np.random.default_rng(6))
    p = result.prob_ahead
    assert np.allclose(np.diag(p), 0)
    assert np.allclose(p + p.T, 1 - np.eye(4))
    best, worst = np.argmax(result.point.scores), np.argmin(result.point.scores)
    assert p[best, worst] > 0.99


def test_sparse_data_counts_rounds_that_needed_the_prior():
    wins = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]], float)
    result = bootstrap(wins, rounds=200, rng=np.random.default_rng(8))
    assert result.point.prior == 0
    assert 0 < result.prior_rounds < 200
    assert np.all(np.isfinite(result.rating_low)) and np.all(np.isfinite(result.rating_high))


@pytest.mark.parametrize("kwargs", [{"method": "jackknife"}, {"rounds": 0}, {"level": 1.5}])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        bootstrap(np.array([[0, 1], [1, 0]]), **kwargs)
