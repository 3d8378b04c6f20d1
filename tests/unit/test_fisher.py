import numpy as np
import pytest
from scipy.stats import norm

from arena.ranking import bootstrap, bradley_terry, fisher_intervals
from tests.unit.test_bradley_terry import synthetic

SCALE = 400 / np.log(10)


def test_two_items_hand_computed():
    # 3-1: pi = 0.75, var(theta_0 - theta_1) = 1 / (4 * 0.75 * 0.25) = 4/3, each centred
    # log-strength carries a quarter of it.
    wins = np.array([[0, 3], [1, 0.0]])
    result = fisher_intervals(wins, bradley_terry(wins))
    assert np.allclose(result.rating_se, SCALE * np.sqrt(1 / 3))
    assert np.allclose(result.rating_high - result.rating_low, 2 * 1.959964 * SCALE
                       * np.sqrt(1 / 3), rtol=1e-6)
    # P(ahead) = Phi(ln 3 / sqrt(4/3))
    assert result.prob_ahead[0, 1] == pytest.approx(norm.cdf(np.log(3) / np.sqrt(4 / 3)))


@pytest.mark.parametrize("n,votes", [(5, 4_000), (15, 60_000)])
def test_agrees_with_a_1000_round_bootstrap(n, votes):
    wins, _ = synthetic(n, votes, 11)
    fit = bradley_terry(wins)
    analytic = fisher_intervals(wins, fit)
    boot = bootstrap(wins, rounds=1000, rng=np.random.default_rng(12))
    ratio = (analytic.rating_high - analytic.rating_low) / (boot.rating_high - boot.rating_low)
    assert abs(np.median(ratio) - 1) < 0.05
    assert np.abs(analytic.prob_ahead - boot.prob_ahead).max() < 0.06
    score_ratio = (analytic.score_high - analytic.score_low) / (boot.score_high - boot.score_low)
    assert abs(np.median(score_ratio) - 1) < 0.1


def test_prior_keeps_intervals_finite_on_impossible_data():
    wins = np.array([[0, 3, 0], [0, 0, 2], [0, 0, 0.0]])
    fit = bradley_terry(wins)
    result = fisher_intervals(wins, fit)
    assert fit.prior > 0 and np.all(np.isfinite(result.rating_low))


def test_bad_level():
    wins = np.array([[0, 3], [1, 0.0]])
    with pytest.raises(ValueError):
        fisher_intervals(wins, bradley_terry(wins), level=2)
