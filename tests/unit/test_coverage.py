"""A quick run of the coverage harness (benchmarks/coverage.py runs the long one): the
intervals cover simulated truth about 95% of the time, and the harness does catch
intervals that do not (the old bootstrap, with 40% ties, covered 99%)."""

from dataclasses import replace

import numpy as np
import pytest

from benchmarks.simulation import OLD, Design, coverage, designs


def test_every_design_draws_valid_data_and_an_estimand():
    for design in designs():
        data = design.draw(np.random.default_rng(0))
        counts = data.counts(design.items, design.cluster, bool(design.cells))
        assert counts.total == (sum(design.cells) or design.votes)
        truth = design.estimand()
        assert truth.shape == (design.items,) and abs(truth.mean()) < 1e-9
        assert np.all(np.diff(truth) < 0)  # the models keep their order


def test_the_estimand_is_the_generating_strengths_without_random_effects():
    design = Design("plain", items=5)
    assert np.allclose(design.estimand(), design.strengths - design.strengths.mean(),
                       atol=1e-6)
    # careless voters flatten what infinitely many votes would show
    careless = replace(design, careless=0.3)
    assert np.ptp(careless.estimand()) < 0.8 * np.ptp(design.estimand())


def test_smoke_coverage_near_95_percent_and_the_old_bootstrap_caught():
    # (by voter: two ways, the bootstrap is the wider pigeonhole one, tests/unit/test_two_way.py)
    design = Design("ties", items=6, votes=1500, voters=150, tie_rate=0.4, cluster="voter")
    result = coverage(design, replicates=40, rounds=200, methods=("bootstrap", "instant", OLD))
    for method in ("bootstrap", "instant"):
        assert 0.85 <= result.covered[method] <= 1.0, result.covered
        assert result.rank_sets[method] >= 0.9
    # ties treated as decisive halves: wider than needed, by a clear margin
    assert result.width[OLD] > 1.15 * result.width["bootstrap"]


@pytest.mark.parametrize("kwargs", [{"careless": 0.2, "taste": 0.8}, {"prompt_effect": 0.8,
                                    "cluster": "prompt", "prompts": 30}])
def test_resampling_clusters_is_what_keeps_coverage(kwargs):
    design = Design("clustered", items=6, votes=3000, voters=60, **kwargs)
    result = coverage(design, replicates=40, rounds=200, methods=("bootstrap", OLD))
    assert result.width["bootstrap"] > 1.2 * result.width[OLD]
    assert result.covered["bootstrap"] > result.covered[OLD]


def test_smoke_elo_and_davidson_intervals():
    from benchmarks.simulation import DAVIDSON, ELO

    design = Design("ties", items=5, votes=1200, voters=120, tie_rate=0.4)
    result = coverage(design, replicates=10, rounds=100, methods=(ELO, DAVIDSON), elo_draws=200)
    for method in (ELO, DAVIDSON):
        assert 0.7 <= result.covered[method] <= 1.0, result.covered


def test_smoke_hype_designs():
    from benchmarks.simulation import HypeDesign, hype_coverage, hype_designs

    assert {d.mode for d in hype_designs()} == {"infinity", "time"}
    crossed = hype_coverage(HypeDesign("i", evaluators=12, images=60), replicates=15,
                            rounds=500)
    assert crossed.width["two-way"] > crossed.width["evaluators only"]
    assert crossed.covered["two-way"] >= 0.8
    timed = hype_coverage(HypeDesign("t", mode="time", evaluators=8, evaluator_sd=0.2,
                                     block_trials=80), replicates=4, rounds=300)
    assert abs(timed.bias["threshold"]) < 0.1


def test_a_few_heavy_voters_leave_the_leaderboard_without_intervals():
    from arena.ranking import bradley_terry, instant_intervals
    from benchmarks.simulation import NORMAL

    design = next(d for d in designs() if d.name.startswith("3 heavy voters") and "2k" in d.name)
    result = coverage(design, replicates=30, methods=("instant", NORMAL))
    # about eight effective voters among 200: what the leaderboard shows has no interval
    assert result.withheld == {"instant": 1.0, NORMAL: 0.0}
    assert np.isnan(result.covered["instant"]) and result.covered[NORMAL] < 0.92
    # (the sandwich itself: as wide as Student's t with seven degrees of freedom makes it)
    data = design.draw(np.random.default_rng(3)).counts(design.items, design.cluster, False)
    fit = bradley_terry(data.matrix())
    wide, narrow = (instant_intervals(data, fit, few_units=few) for few in (True, False))
    ratio = (wide.rating_high - wide.rating_low) / (narrow.rating_high - narrow.rating_low)
    assert np.all((ratio > 1.1) & (ratio < 1.35)), ratio


def test_the_active_design_sends_the_votes_where_the_allocation_wants_them():
    """Drawn round by round through arena.ranking.allocation.allocate: once the first
    (balanced) round has ordered the models, most votes go to adjacent pairs."""
    design = Design("active", items=6, votes=3000, voters=300, allocation="active")
    data = design.draw(np.random.default_rng(2)).counts(6, "voter+prompt", False)
    wins = data.matrix()
    votes = wins + wins.T
    adjacent = sum(votes[k, k + 1] for k in range(5))
    assert data.total == 3000
    assert adjacent / 3000 > 2 * 5 / 15  # twice their balanced share (5 pairs of 15)
    assert np.allclose(design.estimand(), replace(design, allocation="balanced").estimand())
