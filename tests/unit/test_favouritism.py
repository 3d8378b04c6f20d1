"""A farm's identities favour their model beyond what the crowd's strengths predict; an
honest crowd with tastes of its own does not (or hardly ever)."""

import re

import numpy as np
import pytest

from arena.ranking import PairCounts, bradley_terry
from arena.ranking.favouritism import favouritism
from benchmarks.simulation import farm_study as _study
from tests.timing import seconds


@pytest.mark.parametrize("seed", range(3))
def test_every_farm_identity_is_flagged_and_hardly_an_honest_voter(seed):
    data, farm, target = _study(seed)
    found = favouritism(data, bradley_terry(data.matrix()))
    flagged = set(found.flagged.tolist())
    assert set(farm.tolist()) <= flagged
    assert np.all(found.favoured[farm] == target)
    assert list(np.flatnonzero(found.targeted)) == [target]
    # the honest named with them like the target that much: about 1% of the voters
    honest = flagged - set(farm.tolist())
    assert len(honest) <= 0.015 * (data.n_units - farm.size), sorted(honest)


def test_an_honest_crowd_with_tastes_targets_no_model():
    # (alpha 0.01: one study in a hundred may; tastes make the crowd wider than the model)
    false = 0
    for seed in range(20):
        data, _, _ = _study(100 + seed, farm=0)
        found = favouritism(data, bradley_terry(data.matrix()))
        false += bool(found.targeted.any()) or found.flagged.size > 0
    assert false <= 1, false


def test_a_single_opinionated_voter_alone_targets_nothing():
    data, farm, _ = _study(7, farm=1, farm_votes=200)
    found = favouritism(data, bradley_terry(data.matrix()))
    assert found.z[farm[0]].max() > 5 and not found.targeted.any()


def test_ties_count_half_and_a_voter_without_a_pair_of_a_model_has_no_z():
    data = PairCounts.from_outcomes([0, 1, 0], [1, 0, 2], 3, ties=[True, False, False],
                                    units=[0, 0, 1])
    found = favouritism(data, bradley_terry(data.matrix(), prior=1.0))
    assert found.z.shape == (2, 3) and found.z[0, 2] == 0.0  # voter 0 never met model 2
    assert list(found.votes) == [2, 1] and not found.targeted.any()
    with pytest.raises(ValueError):
        favouritism(data, bradley_terry(data.matrix(), prior=1.0), alpha=0)


def test_the_benchmark_prints_its_table():
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run([sys.executable, "benchmarks/favouritism.py", "--studies", "1",
                           "--sizes", "30"], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=seconds(120))
    assert done.returncode == 0, done.stderr
    assert re.search(r"^ +30 x 60 votes +1/1 +30/30 +30/30 ", done.stdout, flags=re.M), done.stdout


def test_a_thin_farm_on_one_network_is_named_through_it_and_honest_networks_are_not():
    """Identities too short to stand out alone (20 votes each: a few games with their model)
    favour it together on their network; honest networks of 10 to 40 voters with tastes of
    their own do not, in any of 20 studies."""
    from arena.ranking.favouritism import groups
    from benchmarks.simulation import networks

    alone = through = 0
    for seed in range(5):
        data, farm, target = _study(300 + seed, farm=20, farm_votes=20)
        found = favouritism(data, bradley_terry(data.matrix()))
        screened = groups(found, networks(data.n_units, farm, 300 + seed))
        assert screened.flagged == [(10, target)]  # (the farm's network, after 10 shared)
        assert set(screened.members) <= set(farm.tolist())
        assert set(screened.members.values()) == {target}
        alone += len(set(found.flagged.tolist()) & set(farm.tolist()))
        through += len(screened.members)
    assert through >= 0.45 * 5 * 20 and through > alone, (through, alone)

    for seed in range(20):
        data, farm, _ = _study(400 + seed, farm=0)
        screened = groups(favouritism(data, bradley_terry(data.matrix())),
                          networks(data.n_units, farm, 400 + seed))
        assert screened.flagged == [], seed


def test_a_group_screen_needs_three_members_and_a_sane_alpha():
    from arena.ranking.favouritism import groups

    data, farm, _ = _study(9, farm=2, farm_votes=200)
    found = favouritism(data, bradley_terry(data.matrix()))
    group = np.full(data.n_units, -1)
    group[farm] = 0  # two identities alone on a network: not a group to test
    assert groups(found, group).flagged == []
    with pytest.raises(ValueError):
        groups(found, group, alpha=1.5)


def test_one_side_of_the_screen_beyond_chance_is_named_and_chance_is_not():
    from arena.ranking.favouritism import one_sided

    false = 0
    for seed in range(20):  # 600 voters who look at the images: sides at random
        rng = np.random.default_rng(500 + seed)
        votes = rng.integers(5, 300, 600)
        false += int(one_sided(rng.binomial(votes, 0.5), votes).sum())
    assert false <= 1, false
    # always left, always right, mostly left (90%), too few to tell, an honest 55%
    left = np.array([20, 0, 180, 12, 110])
    votes = np.array([20, 30, 200, 12, 200])
    assert one_sided(left, votes).tolist() == [True, True, True, False, False]
    with pytest.raises(ValueError):
        one_sided(left, votes, alpha=0)
