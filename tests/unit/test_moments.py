"""Voter-clustered sufficient statistics give the per-voter sandwich exactly, and add up."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.ranking import PairCounts, PairMoments, bradley_terry, instant_intervals
from arena.ranking.moments import cross_products
from tests.datasets import clustered_votes


def _both(winners, losers, voter, n):
    counts = PairCounts.from_outcomes(winners, losers, n, units=voter)
    moments = PairMoments.from_rows(n, voter, winners, losers, np.ones(len(winners)))
    return counts, moments


def test_two_voters_hand_computed():
    # voter 0: 0 beat 1 twice; voter 1: 1 beat 0 once, 0 beat 1 once.
    moments = PairMoments.from_rows(2, [0, 1, 1], [0, 1, 0], [1, 0, 1], [2, 1, 1])
    assert moments.n_units == 2 and moments.total == 4
    assert np.array_equal(moments.matrix(), [[0, 3], [1, 0]])
    # cells (0 beat 1), (1 beat 0): voter 0 has x = (2, 0), voter 1 has x = (1, 1)
    assert np.array_equal(moments.cross.toarray(), [[4 + 1, 0 + 1], [0 + 1, 0 + 1]])


@pytest.mark.parametrize("spread", [0.0, 1.0])
def test_clustered_sandwich_from_moments_equals_per_voter(spread):
    n, voters = 6, 40
    winners, losers, voter = clustered_votes(n, 3_000, voters, spread=spread, seed=3)
    counts, moments = _both(winners, losers, voter, n)
    fit = bradley_terry(counts.matrix())
    assert np.array_equal(moments.matrix(), counts.matrix())
    per_voter = instant_intervals(counts, fit)
    pooled = instant_intervals(moments, fit)
    assert pooled.resample == per_voter.resample == "unit"
    assert np.allclose(pooled.covariance, per_voter.covariance, rtol=1e-9, atol=1e-14)
    assert np.allclose(pooled.rating_low, per_voter.rating_low)
    votes = instant_intervals(moments, fit, resample="vote")
    assert np.allclose(votes.covariance,
                       instant_intervals(counts, fit, resample="vote").covariance)


def test_restricted_keeps_the_models_asked_for():
    winners, losers, voter = clustered_votes(5, 800, 12, spread=0.5, seed=4)
    counts, moments = _both(winners, losers, voter, 5)
    items = np.array([4, 0, 1, 3])
    sub = moments.restricted(items)
    reference = counts.restricted(items)
    fit = bradley_terry(reference.matrix())
    assert np.array_equal(sub.matrix(), reference.matrix())
    assert np.allclose(instant_intervals(sub, fit).covariance,
                       instant_intervals(reference, fit).covariance, rtol=1e-9, atol=1e-14)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(0, 3)),
                min_size=1, max_size=60), st.integers(1, 59))
def test_cross_products_update_by_difference(votes, split):
    """What a store of per-voter counts does when new votes come: the cross products of
    all votes = those of the old ones + (new - old) for the voters the new votes touch."""
    votes = [(u, w, lo) for u, w, lo in votes if w != lo]
    if not votes:
        return
    unit, w, lo = (np.array(c) for c in zip(*votes, strict=True))
    cell = w * 4 + lo
    old, new = slice(0, split), slice(0, len(votes))
    ones = np.ones(len(votes))
    everything = cross_products(unit[new], cell[new], ones[new], 16)
    before = cross_products(unit[old], cell[old], ones[old], 16)
    touched = np.isin(unit, unit[split:])
    after_t = cross_products(unit[touched], cell[touched], ones[touched], 16)
    mask_old = touched & (np.arange(len(votes)) < split)
    before_t = cross_products(unit[mask_old], cell[mask_old], ones[mask_old], 16)
    assert np.array_equal((before + after_t - before_t).toarray(), everything.toarray())


def test_effective_units_count_heavy_voters_as_few():
    # three voters with 60, 20 and 20 votes: 100^2 / (3600 + 400 + 400)
    heavy = PairCounts.from_outcomes([0] * 100, [1] * 100, 2, units=[0] * 60 + [1] * 20 + [2] * 20)
    assert heavy.effective_units() == pytest.approx(10_000 / 4_400)
    even = PairCounts.from_outcomes([0] * 90, [1] * 90, 2, units=np.repeat(np.arange(9), 10))
    assert even.effective_units() == pytest.approx(9)
    winners, losers, voter = clustered_votes(5, 2_000, 30, spread=0.5, seed=6)
    counts, moments = _both(winners, losers, voter, 5)
    assert moments.effective_units() == pytest.approx(counts.effective_units(), rel=1e-12)
    items = np.array([3, 1, 4])
    assert moments.restricted(items).effective_units() == pytest.approx(
        counts.restricted(items).effective_units(), rel=1e-12)
    assert counts.effective_units() <= counts.n_units
