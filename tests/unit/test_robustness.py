"""The fewest voters an order hinges on: named by influence, confirmed by refits, and
checked against every subset on small studies."""

from itertools import combinations, pairwise

import numpy as np
import pytest

from arena.ranking import PairCounts, bradley_terry
from arena.ranking.robustness import flips


def _counts(votes):
    """votes: (voter, winner, loser) triples."""
    voter, winners, losers = (np.array(column) for column in zip(*votes, strict=True))
    return PairCounts.from_outcomes(winners, losers, 3, units=voter)


def _ahead_after(data: PairCounts, dropped, ahead: int, behind: int) -> bool:
    keep = ~np.isin(data.unit, list(dropped))
    rest = PairCounts(data.n_items, data.unit[keep], data.a[keep], data.b[keep],
                      data.ab[keep], data.ba[keep], data.tie[keep], data.n_units)
    theta = bradley_terry(rest.matrix()).log_strengths
    return theta[ahead] > theta[behind] + 1e-9


def test_one_zealous_voter_is_all_a_lead_hinges_on():
    votes = []
    for voter in range(10):  # ten voters split evenly between 0 and 1, both beat 2
        votes += [(voter, 0, 1), (voter, 1, 0), (voter, 0, 2), (voter, 1, 2)]
    votes += [(10, 0, 1)] * 6  # one voter gives 0 its lead
    data = _counts(votes)
    fit = bradley_terry(data.matrix())
    assert fit.log_strengths[0] > fit.log_strengths[1]
    (lead,) = flips(data, fit, [(0, 1)])
    assert (lead.units, lead.total) == (1, 11) and lead.share == pytest.approx(1 / 11)
    assert not _ahead_after(data, {10}, 0, 1)


def test_a_lead_no_removal_of_its_supporters_undoes():
    # every voter prefers 0 to 1: the voters that favour 1 do not exist, nothing to remove
    votes = [(v, 0, 1) for v in range(6)] + [(v, 1, 2) for v in range(6)]
    data = _counts(votes)
    fit = bradley_terry(data.matrix())
    (lead,) = flips(data, fit, [(0, 1)])
    assert lead.units is None or lead.units == 6


@pytest.mark.parametrize("seed", range(12))
def test_the_count_is_confirmed_and_never_below_the_true_fewest(seed):
    rng = np.random.default_rng(seed)
    votes = []
    for voter in range(9):  # tastes of their own, a few votes each
        taste = rng.normal(0, 1, 3)
        for _ in range(int(rng.integers(3, 9))):
            a, b = rng.choice(3, 2, replace=False)
            p = 1 / (1 + np.exp(taste[b] - taste[a] - 0.4 * (b - a)))
            votes.append((voter, a, b) if rng.random() < p else (voter, b, a))
    data = _counts(votes)
    fit = bradley_terry(data.matrix())
    order = np.argsort(-fit.log_strengths)
    pairs = list(pairwise(order))
    for flip, (ahead, behind) in zip(flips(data, fit, pairs), pairs, strict=True):
        fewest = next((k for k in range(1, 10) for dropped in combinations(range(9), k)
                       if not _ahead_after(data, dropped, ahead, behind)), None)
        if flip.units is None:
            continue  # (no prefix of its supporters flips it; a mixed set may)
        assert fewest is not None and flip.units >= fewest
        assert flip.units <= fewest + 2, (flip, fewest)  # close to the true fewest


def test_the_ranking_names_what_each_lead_hinges_on_and_flags_the_fragile():
    from arena.analysis.leaderboard import rank_counts

    votes = []
    for voter in range(200):  # two hundred voters split evenly between 0 and 1
        votes += [(voter, 0, 1), (voter, 1, 0), (voter, 0, 2), (voter, 1, 2)]
    votes += [(200, 0, 1)] * 8  # one voter gives 0 its lead: 0.5% of the voters
    ranking = rank_counts(["zealot's pick", "other", "last"], _counts(votes),
                          intervals="instant", cluster="voter")
    first, second, last = ranking.models
    assert (first.model, first.lead_voters) == ("zealot's pick", 1)
    assert first.lead_share == pytest.approx(1 / 201)
    assert second.lead_voters > 20 and last.lead_voters is None
    assert any(f.startswith("fragile: zealot's pick is ahead of other unless 1 of 201 voters")
               for f in ranking.flags), ranking.flags
    assert not any("other is ahead" in f for f in ranking.flags)
    # votes as units: no voters to count
    by_vote = rank_counts(["a", "b", "c"], _counts(votes), intervals="instant", cluster="none")
    assert all(m.lead_voters is None for m in by_vote.models)
