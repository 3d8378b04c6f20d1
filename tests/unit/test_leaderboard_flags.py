"""The leaderboard's warning on clustered intervals counts what the voters are worth: a few
voters casting most of the votes are few clusters, however many others vote."""

from __future__ import annotations

import numpy as np

from arena.analysis.leaderboard import ONE_TIER, rank_counts
from arena.ranking import PairCounts


def _ranking(votes_per_voter, seed=0, intervals="instant"):
    rng = np.random.default_rng(seed)
    voter = np.repeat(np.arange(len(votes_per_voter)), votes_per_voter)
    a = rng.integers(0, 4, voter.size)
    b = (a + rng.integers(1, 4, voter.size)) % 4
    a_wins = rng.random(voter.size) < 1 / (1 + np.exp(-(b - a) * 0.3))
    counts = PairCounts.from_outcomes(np.where(a_wins, a, b), np.where(a_wins, b, a), 4,
                                      units=voter)
    return rank_counts([f"m{k}" for k in range(4)], counts, intervals=intervals, rounds=50,
                       rng=np.random.default_rng(seed))


def test_a_few_heavy_voters_among_many_leave_no_interval_shown():
    """Three voters casting most of the votes made clustered intervals cover 85-90% where
    they said 95% (benchmarks/coverage.py): however many others vote, no interval is shown,
    and the table says why."""
    for intervals in ("instant", "bootstrap"):
        heavy = _ranking([300] * 3 + [10] * 40, intervals=intervals)
        assert heavy.units == 43
        # 1300^2 / (3 * 300^2 + 40 * 10^2)
        assert abs(heavy.effective_units - 1300 ** 2 / 274_000) < 1e-9
        assert heavy.intervals is None and heavy.bootstrap_rounds == 0
        assert all(m.ci_low is None and m.rank_best is None and m.tier is None
                   for m in heavy.models)
        assert [m.rank for m in heavy.models] == [1, 2, 3, 4]  # (the order stays)
        assert [f for f in heavy.flags if "effective" in f] == [
            "too few effective voters: a few cast most votes, so the 43 voters are worth 6 of "
            "equal size (fewer than 20); no intervals are shown, as they would cover less "
            "than they say"]


def test_as_many_even_voters_are_not():
    even = _ranking([30] * 43)
    assert abs(even.effective_units - 43) < 1e-9
    assert even.intervals == "instant" and all(m.ci_low is not None for m in even.models)
    assert not [f for f in even.flags if "trusted" in f or "effective" in f]


def test_few_voters_alone_keep_their_flagged_intervals():
    few = _ranking([60] * 5)
    assert few.intervals == "instant" and all(m.ci_low is not None for m in few.models)
    assert any("resample 5 units (fewer than 20)" in f for f in few.flags)


def _strengths(gap: float, votes: int, seed: int = 0):
    """Four models ``gap`` apart in log-strength, ``votes`` votes by 40 voters."""
    rng = np.random.default_rng(seed)
    voter = rng.integers(0, 40, votes)
    a = rng.integers(0, 4, votes)
    b = (a + rng.integers(1, 4, votes)) % 4
    a_wins = rng.random(votes) < 1 / (1 + np.exp(-(b - a) * gap))
    counts = PairCounts.from_outcomes(np.where(a_wins, a, b), np.where(a_wins, b, a), 4,
                                      units=voter)
    return rank_counts([f"m{k}" for k in range(4)], counts, intervals="instant")


def test_one_tier_is_said_and_no_tier_is_shown():
    """Tiers cut only where every model above is surely ahead of every one below: at a small
    size nothing is, and one tier for all was shown as if it were a finding. Now the table
    says no two tiers can be told apart, and shows none; separable models keep theirs."""
    close = _strengths(0.05, 300)
    assert all(m.tier is None for m in close.models)
    assert ONE_TIER in close.flags and close.models[0].rank_best is not None
    apart = _strengths(1.5, 4000)
    assert [m.tier for m in apart.models] == [1, 2, 3, 4]
    assert ONE_TIER not in apart.flags
