import numpy as np
import pytest

from arena.ranking import PairCounts, bootstrap, bradley_terry, post_strata
from tests.datasets import clustered_votes, synthetic


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


def test_intervals_contain_the_point_estimate_and_shrink_with_data():
    small, _ = synthetic(5, 1_000, 2)
    large = small * 16
    rng = np.random.default_rng(3)
    few = bootstrap(small, rounds=300, rng=rng)
    many = bootstrap(large, rounds=300, rng=rng)
    point = bradley_terry(small).ratings
    assert np.all(few.rating_low <= point) and np.all(point <= few.rating_high)
    assert np.all(few.score_low <= few.point.scores) and np.all(few.point.scores <= few.score_high)
    width_few = few.rating_high - few.rating_low
    width_many = many.rating_high - many.rating_low
    # sixteen times the data: intervals about four times narrower
    assert np.allclose(width_many / width_few, 0.25, atol=0.1)


def test_resampling_voters_widens_intervals_when_voters_disagree():
    # each voter has an idiosyncratic taste: their votes move together
    winners, losers, voters = clustered_votes(6, 6_000, 60, spread=1.0, seed=4)
    data = PairCounts.from_outcomes(winners, losers, 6, units=voters)
    by_voter = bootstrap(data, rounds=400, rng=np.random.default_rng(5))
    by_vote = bootstrap(data, rounds=400, resample="vote", rng=np.random.default_rng(5))
    assert by_voter.resample == "unit" and by_vote.resample == "vote"
    assert np.array_equal(by_voter.point.scores, by_vote.point.scores)
    ratio = np.median((by_voter.rating_high - by_voter.rating_low)
                      / (by_vote.rating_high - by_vote.rating_low))
    assert ratio > 1.3
    # voters without any taste of their own: the two agree
    winners, losers, voters = clustered_votes(6, 6_000, 60, spread=0.0, seed=6)
    data = PairCounts.from_outcomes(winners, losers, 6, units=voters)
    same = [bootstrap(data, rounds=400, resample=r, rng=np.random.default_rng(7))
            for r in ("unit", "vote")]
    ratio = np.median((same[0].rating_high - same[0].rating_low)
                      / (same[1].rating_high - same[1].rating_low))
    assert 0.85 < ratio < 1.15


def test_ties_stay_ties_when_resampled():
    # half the votes tie: resampled as ties they vary less than as coin-flip wins
    rng = np.random.default_rng(8)
    n, votes = 4, 4_000
    a = rng.integers(0, n, votes)
    b = (a + rng.integers(1, n, votes)) % n
    tie = rng.random(votes) < 0.5
    a_wins = rng.random(votes) < 1 / (1 + np.exp(0.3 * (b - a)))
    winners, losers = np.where(a_wins, a, b), np.where(a_wins, b, a)
    tied = PairCounts.from_outcomes(winners, losers, n, ties=tie)
    assert tied.tie.sum() == tie.sum()
    flipped = tie & (rng.random(votes) < 0.5)
    as_wins = PairCounts.from_outcomes(np.where(flipped, losers, winners),
                                       np.where(flipped, winners, losers), n)
    kept = bootstrap(tied, rounds=400, rng=np.random.default_rng(9))
    decisive = bootstrap(as_wins, rounds=400, rng=np.random.default_rng(9))
    assert np.median(kept.rating_std / decisive.rating_std) < 0.85


def test_poststratified_rounds_reweight_each_replicate():
    # a small cell with a large weight: its votes vary the estimate far more than their
    # count suggests, which resampling the weighted matrix as plain votes would hide
    rng = np.random.default_rng(10)
    winners, losers, strata = [], [], []
    for stratum, (votes, shift) in enumerate([(3_000, 0.0), (600, 0.4), (60, -0.6)]):
        strength = np.array([0.4, 0.1, -0.1, -0.4]) * (1 + shift)
        a = rng.integers(0, 4, votes)
        b = (a + rng.integers(1, 4, votes)) % 4
        a_wins = rng.random(votes) < 1 / (1 + np.exp(strength[b] - strength[a]))
        winners += np.where(a_wins, a, b).tolist()
        losers += np.where(a_wins, b, a).tolist()
        strata += [stratum] * votes
    data = PairCounts.from_outcomes(winners, losers, 4, strata=strata,
                                    units=np.arange(len(strata)))
    calibration = post_strata([0.3, 0.3, 0.4])
    design = bootstrap(data, rounds=400, resample="vote", calibration=calibration,
                       rng=np.random.default_rng(11))
    naive = bootstrap(data.weighted_matrix(calibration), rounds=400,
                      rng=np.random.default_rng(11))
    assert np.allclose(design.point.scores, naive.point.scores)
    assert np.median(design.rating_std / naive.rating_std) > 1.5
    assert data.effective_size(calibration) < 0.5 * data.total


def test_prob_ahead_is_a_separability_matrix():
    wins, _ = synthetic(4, 4_000, 5)
    result = bootstrap(wins, rounds=300, rng=np.random.default_rng(6))
    p = result.prob_ahead
    assert np.allclose(np.diag(p), 0)
    assert np.allclose(p + p.T, 1 - np.eye(4))
    best, worst = np.argmax(result.point.scores), np.argmin(result.point.scores)
    assert p[best, worst] > 0.99
    assert result.ranks.best[best] == 1 and result.ranks.worst[worst] == 4


def test_sparse_data_counts_rounds_that_needed_the_prior():
    wins = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]], float)
    result = bootstrap(wins, rounds=200, rng=np.random.default_rng(8))
    assert result.point.prior == 0
    assert 0 < result.prior_rounds < 200
    assert np.all(np.isfinite(result.rating_low)) and np.all(np.isfinite(result.rating_high))


@pytest.mark.parametrize("kwargs", [{"resample": "jackknife"}, {"rounds": 0}, {"level": 1.5}])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        bootstrap(np.array([[0, 1], [1, 0]]), **kwargs)
