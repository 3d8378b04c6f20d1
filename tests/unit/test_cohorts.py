"""New voters who vote as the crowd does pass the cohort test (its statistics about standard
normal, whatever the crowd's tastes, prompts, heavy voters or the pairs the newcomers were
served); a farm spread thin over many identities, each under every per-voter threshold, does
not, whether it votes its model up or its neighbour down."""

from itertools import pairwise

import numpy as np
import pytest
from scipy.special import ndtri

from arena.ranking import PairCounts, bradley_terry
from arena.ranking.cohorts import cohort_test, count
from benchmarks.simulation import CohortStudy

# Bonferroni over four cohorts' statistics at the default alpha, as the timer sets it; and
# one-sided over their gaps, for a gap a cohort reversed
LEVEL = float(ndtri(1 - 0.001 / (4 * count(8, 7))))
PIVOTAL = float(ndtri(1 - 0.001 / (4 * 7)))
HONEST = {
    "tastes and prompt effects": CohortStudy(),
    "heavy voters": CohortStudy(activity_sd=2.0),
    "Zipf voters": CohortStudy(zipf=True),
    "newcomers served four models' pairs": CohortStudy(cohort_models=(0, 1, 2, 3)),
    "newcomers served a quarter of the prompts": CohortStudy(cohort_prompts=0.25),
    "few prompts, strong effects": CohortStudy(prompts=6, prompt_sd=0.8),
    "a small study": CohortStudy(voters=150, votes=3000),
}


def _fitted_gaps(data) -> list[tuple[int, int]]:
    """The adjacent gaps of the order all the votes give, as the timer takes them."""
    order = np.argsort(-bradley_terry(data.matrix()).log_strengths, kind="stable")
    return [(int(i), int(j)) for i, j in pairwise(order)]


def test_an_honest_crowds_newcomers_are_like_it():
    zs, alarms = [], 0  # (benchmarks/cohorts.py runs 200 studies of each)
    for k, design in enumerate(HONEST.values()):
        for seed in range(12):
            data, new, _, _ = design.draw(100 * k + seed)
            found = cohort_test(data, new, _fitted_gaps(data), LEVEL, pivotal_level=PIVOTAL)
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
    gap's z at 4.2, under the line (4.31); the reversal is the cohort's doing (the crowd
    without it orders the two the other way), so its one-sided line (3.97) holds it."""
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
