"""Two-way clustering (voters and prompts at once): Cameron, Gelbach and Miller's sandwich,
the pigeonhole bootstrap, and the coverage they buy where prompts vary."""

from dataclasses import replace

import numpy as np
import pytest

from arena.ranking import PairCounts, PairMoments, bootstrap, bradley_terry, instant_intervals
from arena.ranking.moments import cross_products
from arena.ranking.sandwich import _bread, _unit_meat, _vote_meat
from benchmarks.simulation import Design, coverage


def _votes(seed=0, n=5, votes=3000, voters=120, prompts=30, prompt_effect=0.6):
    rng = np.random.default_rng(seed)
    voter = rng.integers(0, voters, votes)
    prompt = rng.integers(0, prompts, votes)
    suits = prompt_effect * rng.normal(0, 1, (prompts, n))
    a = rng.integers(0, n, votes)
    b = (a + rng.integers(1, n, votes)) % n
    theta = np.linspace(0.8, -0.8, n)
    p = 1 / (1 + np.exp(-(theta[a] + suits[prompt, a] - theta[b] - suits[prompt, b])))
    won = rng.random(votes) < p
    return np.where(won, a, b), np.where(won, b, a), voter, prompt


def _crossed(winners, losers, voter, prompt, n=5):
    return PairCounts.crossed(n, voter, prompt, winners, losers, np.ones(winners.size))


def test_the_two_ways_hold_the_votes_of_each_voter_and_each_prompt():
    winners, losers, voter, prompt = _votes()
    data = _crossed(winners, losers, voter, prompt)
    assert data.two_way and data.total == winners.size
    for way, labels in ((0, voter), (1, prompt)):
        one = PairCounts.from_outcomes(winners, losers, 5, units=labels)
        got = data.way(way)
        assert got.n_units == one.n_units
        assert np.array_equal(got.unit_totals(), one.unit_totals())
        assert np.array_equal(got.matrix(), one.matrix())


def test_the_meat_is_the_two_ways_less_the_votes():
    winners, losers, voter, prompt = _votes(seed=1)
    data = _crossed(winners, losers, voter, prompt)
    fit = bradley_terry(data.matrix())
    theta = fit.log_strengths

    def parts(d):
        p = 1 / (1 + np.exp(theta[d.b] - theta[d.a]))
        return d, np.ones(d.a.size), p, None

    meat = (_unit_meat(*parts(data.way(0))) + _unit_meat(*parts(data.way(1)))
            - _vote_meat(*parts(data)))
    curvature = (data.ab + data.ba + data.tie) * parts(data)[2] * (1 - parts(data)[2])
    h = np.linalg.pinv(_bread(5, data, curvature, fit), hermitian=True)
    centre = np.eye(5) - 1 / 5
    values, vectors = np.linalg.eigh(centre @ h @ meat @ h @ centre)
    want = (vectors * np.clip(values, 0, None)) @ vectors.T
    got = instant_intervals(data, fit).covariance
    assert np.allclose(got, want, rtol=1e-9, atol=1e-14)
    assert np.linalg.eigvalsh(got).min() > -1e-12
    # prompts that suit models differently: wider than clustering by voter alone
    alone = instant_intervals(data.way(0), fit).covariance
    assert np.all(np.diag(got) > 1.5 * np.diag(alone))


def test_a_voter_meeting_a_prompt_once_gives_the_exact_intersection_term():
    # every (voter, prompt) intersection holds one vote: its clustered meat is the votes'
    winners, losers, _, _ = _votes(seed=2, votes=600)
    voter, prompt = np.divmod(np.arange(600), 30)  # 20 voters x 30 prompts, once each
    data = _crossed(winners, losers, voter, prompt)
    theta = bradley_terry(data.matrix()).log_strengths
    w = np.ones(data.a.size)
    p = 1 / (1 + np.exp(theta[data.b] - theta[data.a]))
    assert data.n_units == 600
    assert np.allclose(_unit_meat(data, w, p, None), _vote_meat(data, w, p, None), rtol=1e-9)


def test_one_prompt_is_clustering_by_voter_alone():
    winners, losers, voter, _ = _votes(seed=3)
    single = _crossed(winners, losers, voter, np.zeros(winners.size, dtype=int))
    assert not single.two_way
    fit = bradley_terry(single.matrix())
    alone = PairCounts.from_outcomes(winners, losers, 5, units=voter)
    assert np.allclose(instant_intervals(single, fit).covariance,
                       instant_intervals(alone, fit).covariance, rtol=1e-9, atol=1e-14)
    assert single.effective_units() == pytest.approx(alone.effective_units())


def test_moments_of_both_ways_give_the_same_sandwich():
    winners, losers, voter, prompt = _votes(seed=4)
    data = _crossed(winners, losers, voter, prompt)
    fit = bradley_terry(data.matrix())
    voters = PairMoments.from_rows(5, voter, winners, losers, np.ones(winners.size))
    cells = np.unique(winners * 5 + losers, return_inverse=True)[1].ravel()
    moments = replace(voters, prompt_cross=cross_products(prompt, cells, np.ones(winners.size),
                                                          voters.winners.size),
                      n_prompts=int(prompt.max()) + 1)
    assert moments.two_way
    assert moments.effective_units() == pytest.approx(data.effective_units())
    want = instant_intervals(data, fit, few_units=True)
    got = instant_intervals(moments, fit, few_units=True)
    assert np.allclose(got.covariance, want.covariance, rtol=1e-9, atol=1e-14)
    assert np.allclose(got.rating_high, want.rating_high)
    # restricted to three models, still the same
    items = [0, 2, 4]
    small = bradley_terry(data.restricted(items).matrix())
    assert np.allclose(instant_intervals(moments.restricted(items), small).covariance,
                       instant_intervals(data.restricted(items), small).covariance,
                       rtol=1e-9, atol=1e-14)


def test_two_way_takes_no_calibration_or_strata():
    winners, losers, voter, prompt = _votes(seed=5, votes=400)
    data = _crossed(winners, losers, voter, prompt)
    fit = bradley_terry(data.matrix())
    from arena.ranking.strata import Calibration

    calibration = Calibration(np.zeros((1, 1), dtype=int), (np.array([1.0]),))
    with pytest.raises(ValueError, match="two-way"):
        instant_intervals(data, fit, calibration=calibration)
    with pytest.raises(ValueError, match="two-way"):
        bootstrap(replace(data, stratum=np.zeros(data.n_units, dtype=int)), rounds=10)


@pytest.mark.parametrize("prompt_effect", [0.0, 0.6])
def test_the_pigeonhole_bootstrap_has_the_two_way_sandwichs_spread(prompt_effect):
    winners, losers, voter, prompt = _votes(seed=6, votes=2000, prompt_effect=prompt_effect)
    data = _crossed(winners, losers, voter, prompt)
    fit = bradley_terry(data.matrix())
    both = bootstrap(data, rounds=400, rng=np.random.default_rng(0), fit=fit)
    sandwich = instant_intervals(data, fit)
    assert np.allclose(both.rating_std, sandwich.rating_std, rtol=0.02)
    assert np.all(both.rating_low < fit.ratings) and np.all(fit.ratings < both.rating_high)
    if prompt_effect:  # prompts that suit models differently: wider than by voter alone
        voters = bootstrap(data.way(0), rounds=400, rng=np.random.default_rng(0), fit=fit)
        assert np.all(both.rating_std > 1.3 * voters.rating_std)


def test_clustering_both_ways_covers_where_prompts_suit_models_differently():
    # 60 prompts with model x prompt effects, 20k votes: clustering by voter alone covered
    # about half the time; both ways about 95% (benchmarks/coverage.py, 400 replicates)
    design = Design("prompt effects", votes=20_000, voters=2_000, prompts=60,
                    prompt_effect=0.6)
    both = coverage(design, replicates=30, methods=("instant",))
    voters = coverage(replace(design, cluster="voter"), replicates=30, methods=("instant",))
    assert both.covered["instant"] >= 0.88, both.covered
    assert voters.covered["instant"] <= 0.75, voters.covered


def test_crossed_units_are_the_distinct_voter_prompt_rows_in_their_order():
    """The voter x prompt units (keyed by each column's ranks) are exactly the distinct rows
    of the two columns, in their sorted order, with each way's codes: any integer labels."""
    rng = np.random.default_rng(4)
    for size in (1, 7, 5000):
        voter = rng.integers(-(2**40), 2**40, 60)[rng.integers(0, 60, size)]
        prompt = rng.integers(-5, 9, size) * 1_000_003
        a = rng.integers(0, 5, size)
        b = (a + rng.integers(1, 5, size)) % 5
        counts = PairCounts.crossed(5, voter, prompt, a, b, np.ones(size))
        rows, unit = np.unique(np.stack([voter, prompt], axis=1), axis=0, return_inverse=True)
        expected = PairCounts.from_rows(5, unit.ravel(), a, b, np.ones(size))
        assert np.array_equal(counts.unit, expected.unit)
        assert np.array_equal(counts.ab, expected.ab) and np.array_equal(counts.ba, expected.ba)
        for k in (0, 1):
            codes = np.unique(rows[:, k], return_inverse=True)[1].ravel()
            assert np.array_equal(counts.ways[k], codes)
