"""The leaderboard's warning on clustered intervals counts what the voters are worth: a few
voters casting most of the votes are few clusters, however many others vote."""

from __future__ import annotations

import numpy as np

from arena.analysis.leaderboard import rank_counts
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


def test_a_few_heavy_voters_are_flagged_however_many_others_vote():
    heavy = _ranking([300] * 3 + [10] * 40)
    assert heavy.units == 43
    # 1300^2 / (3 * 300^2 + 40 * 10^2)
    assert abs(heavy.effective_units - 1300 ** 2 / 274_000) < 1e-9
    warned = [f for f in heavy.flags if "a few cast most votes" in f]
    assert warned == ["intervals resample 43 units, but a few cast most votes: they are worth "
                      "6 of equal size (fewer than 20), too few for clustered intervals to be "
                      "trusted"]
    assert any("a few cast most votes" in f for f in _ranking([300] * 3 + [10] * 40,
                                                              intervals="bootstrap").flags)


def test_as_many_even_voters_are_not():
    even = _ranking([30] * 43)
    assert abs(even.effective_units - 43) < 1e-9
    assert not [f for f in even.flags if "trusted" in f]
