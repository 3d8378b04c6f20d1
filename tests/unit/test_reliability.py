"""Voters' reliability (arena.ranking.reliability) from a known truth: blind voters found,
voters of a taste of their own kept, and the weighted ranking's intervals covering what the
attentive crowd prefers, where the unweighted ranking's are pulled towards the middle."""

from __future__ import annotations

import numpy as np
import pytest

from arena.ranking import PairCounts, bradley_terry
from arena.ranking.reliability import fit, reliability, taste_check, weighted
from benchmarks.simulation import attentive_crowd as crowd
from benchmarks.simulation import covered as _covered


@pytest.mark.parametrize("probit,gold", [(True, True), (False, False)])
def test_weighted_intervals_cover_the_attentive_crowd_where_blind_votes_pull_to_the_middle(
        probit, gold):
    """12 studies of 400 voters, 30% of them blind, 15% of a taste of their own: the
    weighted ranking's intervals cover the attentive crowd's population value (including
    the minority's taste) at about their level; the unweighted ones, pulled to the middle
    by the blind votes, miss most of it. On a curve other than the one fitted, and with no
    gold at all (the crowd's agreement alone)."""
    rng = np.random.default_rng(11 if gold else 12)
    plain, reweighted, errors = [], [], []
    for _ in range(12):
        data, right, wrong, _, _, truth = crowd(rng, probit=probit, gold=gold)
        found, _ = fit(data, right, wrong)
        before, error_before = _covered(data, truth)
        after, error_after = _covered(weighted(data, found.r), truth)
        plain.append(before.mean())
        reweighted.append(after.mean())
        errors.append((error_before, error_after))
    errors = np.array(errors)
    assert np.mean(reweighted) >= 0.9, reweighted
    assert np.mean(plain) <= 0.5, plain  # the harm is real
    assert errors[:, 1].mean() < 0.35 * errors[:, 0].mean(), errors.mean(axis=0)


def test_a_minority_of_its_own_order_is_taken_for_blind_and_reported():
    """The model's limit, stated: from choices alone a blind voter cannot be told from one
    who finds every model alike, and attention is measured against the crowd's taste. 30%
    of voters ordering the models the other way round are taken for blind (the weighted
    intervals then miss the attentive crowd's value); the taste check reports them in every
    study, and reports no taste where the voters taken for blind are blind (20 studies
    each)."""
    rng = np.random.default_rng(8)
    reported = {True: 0, False: 0}
    for reverse in (True, False):
        for _ in range(20):
            data, right, wrong, kind, *_ = crowd(rng, blind=0.0 if reverse else 0.3,
                                                 minority=0.3, reverse=reverse)
            found, strengths = fit(data, right, wrong)
            check = taste_check(data, found.r, strengths)
            reported[reverse] += check.taste
            if reverse:
                assert found.r[kind == 1].mean() < 0.2  # taken for blind
                assert check.order[0] == 0  # their favourite: the crowd's last
    assert reported == {True: 20, False: 0}, reported


def test_gold_answers_alone_keep_a_minority_and_still_discount_blind_voters():
    """Weights from gold answers alone take no taste for blindness: with 30% of voters of
    the reversed order their intervals cover the attentive crowd's value about as the plain
    ones do; with 30% blind voters (a tenth of their tasks gold) they cover more than the
    plain ones, though far less than weights that read the votes too (12 studies each)."""
    rng = np.random.default_rng(9)
    minority, blind = [], []
    for _ in range(12):
        data, right, wrong, kind, _, truth = crowd(rng, blind=0.0, minority=0.3, reverse=True)
        found, _ = fit(data, right, wrong, votes=False)
        assert found.r[kind == 1].mean() > 0.8
        minority.append(_covered(weighted(data, found.r), truth)[0].mean())
        data, right, wrong, kind, _, truth = crowd(rng, blind=0.3)
        gold_only, _ = fit(data, right, wrong, votes=False)
        blind.append((_covered(data, truth)[0].mean(),
                      _covered(weighted(data, gold_only.r), truth)[0].mean()))
    assert np.mean(minority) >= 0.9, minority
    plain, weighted_by_gold = np.mean(blind, axis=0)
    assert weighted_by_gold > plain + 0.1, blind


def test_blind_voters_fall_and_a_neighbouring_swap_is_kept():
    rng = np.random.default_rng(5)
    data, right, wrong, kind, n, _ = crowd(rng, voters=600, blind=0.2, minority=0.2)
    found, _ = fit(data, right, wrong)
    assert 0.7 < found.crowd < 0.9  # 80% attentive
    heavy = n >= 40
    assert np.mean(found.r[(kind == 2) & heavy] < 0.2) >= 0.9
    assert np.mean(found.r[(kind == 1) & heavy] > 0.8) >= 0.9  # not taken for blind
    assert found.r[kind == 1].mean() > found.r[kind == 0].mean() - 0.05
    assert np.all(found.answers == np.bincount(data.unit, weights=data.ab + data.ba)
                  + right + wrong)


def test_without_blind_voters_the_weights_change_little():
    rng = np.random.default_rng(6)
    data, right, wrong, *_ = crowd(rng, blind=0.0, minority=0.2)
    found, strengths = fit(data, right, wrong)
    assert np.mean(found.r > 0.9) > 0.95
    plain = bradley_terry(data.matrix()).log_strengths
    assert np.abs(strengths - plain).max() < 0.03


def test_wrong_gold_answers_alone_mark_a_voter():
    """Two voters of no ordinary votes: one right on 12 of 12 gold pairs, one on 6."""
    data = PairCounts.from_outcomes([0, 1], [1, 0], 2, units=[0, 1])
    data = PairCounts(2, data.unit, data.a, data.b, data.ab * 0, data.ba * 0, data.tie,
                      data.n_units)
    found = reliability(data, np.zeros(2), [12, 6], [0, 6])
    assert found.r[0] > 0.9 and found.r[1] < 0.1


def test_bad_arguments_are_refused():
    data = PairCounts.from_outcomes([0], [1], 2, units=[0])
    with pytest.raises(ValueError, match="slip"):
        reliability(data, np.zeros(2), slip=0.5)
    with pytest.raises(ValueError, match="per unit"):
        reliability(data, np.zeros(2), [1, 2], [0, 0])


def test_a_unanimous_crowd_and_a_minority_taken_for_blind_still_fit():
    """24 voters who always agree and 10 who always choose the other way: the minority's
    weights fell to 1e-256, and counts scaled by them tied the crowd's graph together with
    threads whose fit overflowed. Such weights are none now."""
    rng = np.random.default_rng(21)
    winners, losers, units = [], [], []
    for voter in range(34):
        for _ in range(12):
            i, j = sorted(rng.choice(4, 2, replace=False))
            winners.append(i if voter < 24 else j)
            losers.append(j if voter < 24 else i)
            units.append(voter)
    data = PairCounts.from_outcomes(winners, losers, 4, units=units)
    found, strengths = fit(data)
    assert np.all(found.r[24:] == 0) and np.all(found.r[:24] > 0.9)
    assert np.all(np.isfinite(strengths))
