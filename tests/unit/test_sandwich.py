"""The instant intervals: a (clustered) sandwich variance, checked by hand, against
statsmodels' cluster-robust logistic regression, and against the bootstrap."""

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.stats import norm

from arena.ranking import PairCounts, bootstrap, bradley_terry, instant_intervals, post_strata
from tests.datasets import clustered_votes, synthetic

SCALE = 400 / np.log(10)


def test_two_items_hand_computed():
    # 3-1 as four single votes: p = 0.75 at the estimate, d = theta_0 - theta_1.
    # bread = n p (1 - p) = 0.75; meat = n/(n-1) * sum of squared residuals
    #       = 4/3 * (3 * 0.25^2 + 0.75^2) = 1; var(d) = 1 / 0.75^2; each centred
    # log-strength carries a quarter of it.
    data = PairCounts.from_outcomes([0, 0, 0, 1], [1, 1, 1, 0], 2)
    fit = bradley_terry(data.matrix())
    result = instant_intervals(data, fit)
    var_d = 1 / 0.75**2
    assert result.resample == "unit" and data.n_units == 4
    assert np.allclose(result.rating_std, SCALE * np.sqrt(var_d / 4))
    assert result.prob_ahead[0, 1] == pytest.approx(norm.cdf(np.log(3) / np.sqrt(var_d)))


def _design(winners, losers, n):
    x = np.zeros((len(winners), n))
    x[np.arange(len(winners)), winners] = 1
    x[np.arange(len(winners)), losers] = -1
    return x[:, 1:]  # item 0 is the reference: theta_0 = 0


def _centred_covariance(cov_reduced, n, correction=1.0):
    full = np.zeros((n, n))
    full[1:, 1:] = cov_reduced
    centre = np.eye(n) - 1.0 / n
    return correction * centre @ full @ centre


@pytest.mark.parametrize("spread", [0.0, 0.8])
def test_clustered_sandwich_equals_statsmodels(spread):
    n, voters = 5, 50
    winners, losers, voter = clustered_votes(n, 2_500, voters, spread=spread, seed=1)
    data = PairCounts.from_outcomes(winners, losers, n, units=voter)
    fit = bradley_terry(data.matrix())
    ours = instant_intervals(data, fit)
    # Bradley-Terry is a logistic regression of "the first item won" on e_a - e_b
    model = sm.GLM(np.ones(len(winners)), _design(winners, losers, n),
                   family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": voter, "use_correction": False})
    reference = _centred_covariance(model.cov_params(), n, voters / (voters - 1))
    assert np.allclose(ours.covariance, reference, rtol=1e-6, atol=1e-12)


def test_vote_level_sandwich_equals_statsmodels_hc():
    n = 4
    wins, _ = synthetic(n, 1_500, 2)
    a, b = np.nonzero(wins)
    winners = np.repeat(a, wins[a, b].astype(int))
    losers = np.repeat(b, wins[a, b].astype(int))
    data = PairCounts.from_outcomes(winners, losers, n)
    ours = instant_intervals(data, bradley_terry(data.matrix()), resample="vote")
    model = sm.GLM(np.ones(len(winners)), _design(winners, losers, n),
                   family=sm.families.Binomial()).fit(cov_type="HC0")
    votes = len(winners)
    reference = _centred_covariance(model.cov_params(), n, votes / (votes - 1))
    assert np.allclose(ours.covariance, reference, rtol=1e-6, atol=1e-12)


def test_a_tie_is_not_a_decisive_result():
    # the same ten results with four ties, or with the ties called half each way
    tied = PairCounts.from_outcomes([0] * 10, [1] * 10, 2, ties=[False] * 6 + [True] * 4)
    decisive = PairCounts.from_outcomes([0] * 8 + [1] * 2, [1] * 8 + [0] * 2, 2)
    assert np.array_equal(tied.matrix(), decisive.matrix())  # the same point estimate
    fit_t, fit_d = bradley_terry(tied.matrix()), bradley_terry(decisive.matrix())
    assert np.allclose(fit_t.scores, fit_d.scores)
    narrow = instant_intervals(tied, fit_t)
    wide = instant_intervals(decisive, fit_d)
    assert narrow.rating_std[0] < 0.8 * wide.rating_std[0]


@pytest.mark.parametrize("resample", ["unit", "vote"])
def test_agrees_with_a_1000_round_bootstrap(resample):
    n = 6
    winners, losers, voter = clustered_votes(n, 8_000, 120, spread=0.7, seed=3)
    data = PairCounts.from_outcomes(winners, losers, n, units=voter)
    fit = bradley_terry(data.matrix())
    analytic = instant_intervals(data, fit, resample=resample)
    boot = bootstrap(data, rounds=1000, resample=resample, rng=np.random.default_rng(4),
                     fit=fit)
    ratio = (analytic.rating_high - analytic.rating_low) / (boot.rating_high - boot.rating_low)
    assert abs(np.median(ratio) - 1) < 0.08
    assert np.abs(analytic.prob_ahead - boot.prob_ahead).max() < 0.08
    score_ratio = (analytic.score_high - analytic.score_low) / (boot.score_high - boot.score_low)
    assert abs(np.median(score_ratio) - 1) < 0.12


def test_calibration_weights_enter_the_scores():
    rng = np.random.default_rng(5)
    strata = np.repeat([0, 1], [2_000, 100])
    a = rng.integers(0, 3, strata.size)
    b = (a + rng.integers(1, 3, strata.size)) % 3
    a_wins = rng.random(strata.size) < 0.6
    data = PairCounts.from_outcomes(np.where(a_wins, a, b), np.where(a_wins, b, a), 3,
                                    strata=strata, units=np.arange(strata.size))
    calibration = post_strata([0.5, 0.5])
    fit = bradley_terry(data.weighted_matrix(calibration))
    weighted = instant_intervals(data, fit, calibration=calibration)
    plain = instant_intervals(data, bradley_terry(data.matrix()))
    # half the weight on 100 votes: about as uncertain as 2 * 100 / (1 + ...) votes
    assert np.median(weighted.rating_std / plain.rating_std) > 2


def test_prior_keeps_intervals_finite_on_impossible_data():
    wins = np.array([[0, 3, 0], [0, 0, 2], [0, 0, 0.0]])
    fit = bradley_terry(wins)
    result = instant_intervals(wins, fit)
    assert fit.prior > 0 and np.all(np.isfinite(result.rating_low))


def test_bad_arguments():
    wins = np.array([[0, 3], [1, 0.0]])
    with pytest.raises(ValueError):
        instant_intervals(wins, bradley_terry(wins), level=2)
    with pytest.raises(ValueError):
        instant_intervals(wins, bradley_terry(np.ones((3, 3)) - np.eye(3)))
