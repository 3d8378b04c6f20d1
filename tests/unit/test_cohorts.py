"""New voters who vote as the crowd does pass the cohort test (its statistics about standard
normal, whatever the crowd's tastes, prompts, heavy voters or the pairs the newcomers were
served); a farm spread thin over many identities, each under every per-voter threshold, does
not, whether it votes its model up or its neighbour down."""

from itertools import pairwise

import numpy as np
import pytest
from scipy.special import ndtri

from arena.ranking import PairCounts, bradley_terry
from arena.ranking.cohorts import busier_half, cohort_test, count
from benchmarks.simulation import CohortStudy

# Bonferroni over eight cohorts' statistics at the default alpha, as the timer sets it; and
# one-sided over their gaps, for a gap a cohort reversed
LEVEL = float(ndtri(1 - 0.001 / (8 * count(8, 7))))
PIVOTAL = float(ndtri(1 - 0.001 / (8 * 7)))
HONEST = {
    "tastes and prompt effects": CohortStudy(),
    "heavy voters": CohortStudy(activity_sd=2.0),
    "Zipf voters": CohortStudy(zipf=True),
    "newcomers served four models' pairs": CohortStudy(cohort_models=(0, 1, 2, 3)),
    "newcomers served a quarter of the prompts": CohortStudy(cohort_prompts=0.25),
    "few prompts, strong effects": CohortStudy(prompts=6, prompt_sd=0.8),
    "a small study": CohortStudy(voters=150, votes=3000),
    "many light newcomers": CohortStudy(voters=2000, votes=8000, cohort=0.4, spread=2.3),
}
# a farm of busy identities among 800 newcomers of 4 votes each on average: its model 57 Elo
# behind its neighbour; 2 votes of 14 for it, 2 against the neighbour, the rest as the crowd
HIDDEN = CohortStudy(voters=2000, votes=8000, cohort=0.4, spread=2.3, farm=48, both=True,
                     elsewhere_crowd=True)


def _busy(data, member):
    cast = np.bincount(data.ways[0][data.unit], data.ab + data.ba + data.tie,
                       minlength=member.size)
    return busier_half(cast, member)


def _fitted_gaps(data) -> list[tuple[int, int]]:
    """The adjacent gaps of the order all the votes give, as the timer takes them."""
    order = np.argsort(-bradley_terry(data.matrix()).log_strengths, kind="stable")
    return [(int(i), int(j)) for i, j in pairwise(order)]


def test_an_honest_crowds_newcomers_are_like_it():
    zs, alarms = [], 0  # (benchmarks/cohorts.py runs 200 studies of each)
    for k, design in enumerate(HONEST.values()):
        for seed in range(12):
            data, new, _, _ = design.draw(100 * k + seed)
            busy = _busy(data, new)
            for cohort in (new, busy) if busy.any() else (new,):
                found = cohort_test(data, cohort, _fitted_gaps(data), LEVEL,
                                    pivotal_level=PIVOTAL)
                assert found.tested
                zs += [s.z for s in found.statistics]
                alarms += found.flagged
    zs = np.array(zs)
    assert 0.85 < zs.std() < 1.12, zs.std()
    assert np.mean(np.abs(zs) > 3) < 0.01
    assert alarms <= 1, alarms


@pytest.mark.parametrize("omnipresent", [False, True])
def test_a_wide_thin_farm_is_flagged_and_what_is_left_of_its_cohort_is_not(omnipresent):
    """120 identities of 14 votes, 4 of them on the target's pairs (or on its neighbour's,
    against it) and the rest with the crowd's majority: no identity has five games with a
    model, as the per-voter screen needs."""
    design = CohortStudy(farm=120, omnipresent=omnipresent)
    for seed in range(5):
        data, new, gaps, farm = design.draw(900 + seed)
        found = cohort_test(data, new | farm, gaps, LEVEL)
        assert found.flagged
        worst = found.worst
        assert worst.items[0] in ((6,) if omnipresent else (7,)) or worst.kind == "gap"
        assert all(abs(s.z) < 3.0 for s in found.after)
        removed_farm = np.isin(found.removed, np.flatnonzero(farm)).sum()
        assert removed_farm > 2 * (found.removed.size - removed_farm)


def test_a_farm_that_reverses_its_targets_gap_just_under_the_line_is_flagged():
    """The attacker's best response to the two-sided line: 40 identities among 180 honest
    newcomers in a crowd of 8,000 votes take the last model past its neighbour with the
    gap's z at 4.2, under the line (4.46); the reversal is the cohort's doing (the crowd
    without it orders the two the other way), so its one-sided line (4.13) holds it."""
    design = CohortStudy(farm=40, votes=8000, cohort=0.3)
    data, new, _, farm = design.draw(30011)
    gaps = _fitted_gaps(data)
    assert (7, 6) in gaps  # (the farm's model is ahead of its neighbour on all the votes)
    plain = cohort_test(data, new | farm, gaps, LEVEL)
    assert not plain.flagged and LEVEL > plain.worst.z > PIVOTAL
    found = cohort_test(data, new | farm, gaps, LEVEL, pivotal_level=PIVOTAL)
    assert found.flagged and all(abs(s.z) < 3.0 for s in found.after)
    removed_farm = np.isin(found.removed, np.flatnonzero(farm)).sum()
    assert removed_farm > 2 * (found.removed.size - removed_farm)
    # without those who wait, the crowd's order of the two holds again
    kept = ~np.isin(data.ways[0][data.unit], found.removed)
    wins = np.zeros((8, 8))
    np.add.at(wins, (data.a[kept], data.b[kept]), data.ab[kept])
    np.add.at(wins, (data.b[kept], data.a[kept]), data.ba[kept])
    theta = bradley_terry(wins).log_strengths
    assert theta[6] > theta[7]


def test_what_is_left_of_a_flagged_farm_reverses_no_gap():
    """A farm flagged that reverses its model's gap: those left once the statistics are
    under z 3 would still take the model past its neighbour, so more wait, until the order
    of all the votes but theirs is the crowd's."""
    design = CohortStudy(farm=60, votes=8000, cohort=0.3)
    reversals = 0
    for seed in range(40_000, 40_008):
        data, new, _, farm = design.draw(seed)
        gaps = _fitted_gaps(data)
        found = cohort_test(data, new | farm, gaps, LEVEL, pivotal_level=PIVOTAL)
        if (7, 6) not in gaps or not found.flagged:
            continue
        reversals += 1
        kept = ~np.isin(data.ways[0][data.unit], found.removed)
        wins = np.zeros((8, 8))
        np.add.at(wins, (data.a[kept], data.b[kept]), data.ab[kept])
        np.add.at(wins, (data.b[kept], data.a[kept]), data.ba[kept])
        theta = bradley_terry(wins).log_strengths
        assert theta[6] > theta[7], seed
    assert reversals >= 3


def test_a_busy_farm_hidden_among_many_light_newcomers_is_flagged_in_their_busier_half():
    """The newcomers' whole cohort holds the farm with 800 honest voters' noise (z about 4,
    under the line); the busier half of its votes is mostly the farm's, and past it. What is
    left of it after those who wait moves no gap past the cleaning line."""
    whole_flagged = 0
    for seed in range(31_000, 31_006):
        data, new, _, farm = HIDDEN.draw(seed)
        members = new | farm
        whole = cohort_test(data, members, _fitted_gaps(data), LEVEL, pivotal_level=PIVOTAL)
        whole_flagged += whole.flagged
        busy = _busy(data, members)
        assert busy.sum() >= 20 and farm[busy].sum() >= 0.3 * busy.sum()
        found = cohort_test(data, busy, _fitted_gaps(data), LEVEL, pivotal_level=PIVOTAL)
        assert found.flagged, seed
        assert all(abs(s.z) < 3.0 for s in found.after)
        assert np.isin(found.removed, np.flatnonzero(farm)).mean() > 0.6
    assert whole_flagged <= 2


def test_a_handful_of_busy_newcomers_is_no_cohort_of_its_own():
    cast = np.array([500.0, 400, 3, 2, 2, 1, 1, 1])
    member = np.ones(cast.size, dtype=bool)
    assert not busier_half(cast, member).any()
    assert busier_half(cast, member, least=1).tolist() == [True] + [False] * 7
    for busy_votes in (10.0, 9.0):  # half the 600 votes; 270 of the 720 and the ties below
        cast = np.repeat([busy_votes, 3.0 if busy_votes == 9 else 2.0], [30, 150])
        busy = busier_half(cast, np.ones(cast.size, dtype=bool))
        assert busy.sum() == 30 and busy[:30].all()


def test_a_cohort_without_a_crowd_to_hold_it_against_is_not_tested():
    data, new, gaps, _ = CohortStudy(voters=60, votes=400).draw(3)
    everyone = np.ones(new.size, dtype=bool)
    found = cohort_test(data, everyone, gaps, LEVEL)
    assert not found.tested and not found.flagged
    with pytest.raises(ValueError, match="two-way"):
        cohort_test(PairCounts.from_outcomes([0, 1], [1, 0], 2, units=[0, 1]), everyone,
                    gaps, LEVEL)


def test_a_model_the_crowd_barely_met_is_the_cohorts_to_say():
    """A model new with the newcomers (few games outside them) is left out, with the votes
    on it: its strength is theirs to set, not a deviation from the crowd's."""
    design = CohortStudy(cohort_models=(4, 5, 6, 7))
    data, new, gaps, _ = design.draw(11)
    found = cohort_test(data, new, gaps, LEVEL, min_reference_games=10 ** 6)
    assert not found.tested
