"""Outcomes per resampling unit, and the calibration weights built on them."""

import numpy as np
import pytest

from arena.ranking import Calibration, PairCounts, aggregate, effective_size, post_strata


def _votes(seed=0, votes=500, n=5):
    rng = np.random.default_rng(seed)
    winners = rng.integers(0, n, votes)
    losers = (winners + rng.integers(1, n, votes)) % n
    return winners, losers, rng.random(votes) < 0.2, rng.integers(0, 30, votes)


def test_per_unit_rows_add_up_to_the_win_matrix():
    winners, losers, ties, voters = _votes()
    data = PairCounts.from_outcomes(winners, losers, 5, ties=ties, units=voters)
    assert np.allclose(data.matrix(), aggregate(winners, losers, 5, ties=ties))
    assert data.n_units == 30 and data.total == 500 and data.tie.sum() == ties.sum()
    assert data.unit_totals().sum() == 500
    assert np.allclose(np.ones(30) @ data.unit_cells(), data.matrix().ravel())
    assert np.allclose(data.collapsed().matrix(), data.matrix())
    # the same rows through a GROUP BY
    keys, counts = np.unique(np.stack([voters, winners, losers, ties]), axis=1,
                             return_counts=True)
    again = PairCounts.from_rows(5, keys[0], keys[1], keys[2], counts, ties=keys[3] == 1)
    assert np.allclose(again.matrix(), data.matrix())
    assert np.allclose(again.unit_totals(), data.unit_totals())


def test_restricted_renumbers_and_keeps_orientation():
    data = PairCounts.from_outcomes([2, 2, 2, 0, 1], [0, 0, 1, 2, 2], 3)
    sub = data.restricted([2, 0])  # item 2 becomes 0, item 0 becomes 1
    assert np.allclose(sub.matrix(), [[0, 2], [1, 0]])


def test_bad_outcomes_are_refused():
    with pytest.raises(ValueError):
        PairCounts.from_outcomes([0, 1], [0, 0], 2)
    with pytest.raises(ValueError):
        PairCounts.from_outcomes([0, 3], [1, 0], 3)
    with pytest.raises(ValueError):  # one voter in two strata
        PairCounts.from_outcomes([0, 1], [1, 0], 2, units=[7, 7], strata=["EU", "AS"])


def test_post_stratification_hits_its_targets():
    weights = post_strata([0.5, 0.3, 0.2]).weights([800, 150, 50])
    assert np.allclose(weights * [800, 150, 50], [500, 300, 200])


def test_raking_matches_every_margin():
    # cells: continent (0, 1) x gender (0, 1)
    cells = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    totals = np.array([400.0, 100, 300, 200])
    calibration = Calibration(cells, (np.array([0.3, 0.7]), np.array([0.5, 0.5])))
    weighted = calibration.weights(totals) * totals
    assert np.allclose(np.bincount(cells[:, 0], weighted) / 1000, [0.3, 0.7])
    assert np.allclose(np.bincount(cells[:, 1], weighted) / 1000, [0.5, 0.5])


def test_a_category_without_target_keeps_its_sample_share():
    cells = np.array([[0], [1], [2]])
    calibration = Calibration(cells, (np.array([0.2, 0.8, np.nan]),))
    weighted = calibration.weights([500, 300, 200]) * [500, 300, 200]
    assert np.allclose(weighted, [160, 640, 200])
    # a category with no votes: its target is spread over the others
    assert np.allclose(post_strata([0.5, 0.5]).weights([10, 0]), [1, 0])


def test_effective_size():
    assert effective_size([1, 1], [50, 50]) == pytest.approx(100)
    assert effective_size([2, 0.5], [10, 90]) == pytest.approx(65**2 / (40 + 22.5))


def test_a_group_held_off_its_target_is_off_by_half_the_shares_distance():
    from arena.ranking.strata import held_share

    # a group of 10% of the population held at its 2% of the votes; the others reweighted
    calibration = Calibration(np.array([[0], [1], [2]]), (np.array([0.6, 0.3, np.nan]),))
    votes = np.array([700.0, 280, 20])
    weights = calibration.weights(votes)
    assert held_share([0, 1, 2], votes, weights, [0.6, 0.3, 0.1]) == pytest.approx(0.08)
    assert held_share([0, 1, 2], votes, np.ones(3), [0.7, 0.28, 0.02]) == pytest.approx(0)
    # a group without a target is the analyst's to leave at its share: no distance
    assert held_share([0, 1, 2], votes, weights, [0.6, 0.3, np.nan]) == pytest.approx(0)


def test_the_held_groups_shift_is_the_most_any_of_their_preferences_moves_the_fit():
    """Every pair's win rate moved by up to ``share``: the refit moves each strength by at
    most the bound (to first order), and the worst sign pattern for a model reaches it."""
    from arena.ranking import bradley_terry
    from arena.ranking.strata import held_shift

    rng = np.random.default_rng(5)
    n = 5
    theta = np.linspace(0.8, -0.8, n)
    games = rng.integers(50, 200, (n, n)).astype(float)
    games = np.triu(games, 1) + np.triu(games, 1).T
    p = 1 / (1 + np.exp(theta[None, :] - theta[:, None]))
    wins = games * p
    fit = bradley_terry(wins).log_strengths
    share = 0.01
    bound = held_shift(wins, fit, share)
    a, b = np.triu_indices(n, 1)
    info = np.linalg.pinv(np.diag((games * p * p.T).sum(axis=1)) - games * p * p.T)
    for item in range(n):
        for signs in [np.sign(info[item, a] - info[item, b])] + [
                rng.choice([-1.0, 1.0], a.size) for _ in range(20)]:
            moved = wins.copy()
            moved[a, b] += games[a, b] * share * signs
            moved[b, a] -= games[a, b] * share * signs
            shift = abs(bradley_terry(moved).log_strengths[item] - fit[item])
            assert shift <= bound[item] * 1.05
        worst = np.sign(info[item, a] - info[item, b])
        moved = wins.copy()
        moved[a, b] += games[a, b] * share * worst
        moved[b, a] -= games[a, b] * share * worst
        assert abs(bradley_terry(moved).log_strengths[item] - fit[item]) \
            == pytest.approx(bound[item], rel=0.05)
