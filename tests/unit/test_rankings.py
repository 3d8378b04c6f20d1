"""Rankings from the database: SQL aggregation, slices, and agreement with the pure core."""

from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import func, select, update

from arena import matchmaking, voters, voting
from arena.extensions import db
from arena.models import EloRating, GenModel, Vote, utcnow
from arena.ranking import bradley_terry
from arena.rankings import RankingError, Slice, rank_matrix, rank_models, win_matrix


def vote_as(demographics, prefer, sessions=6, criterion="preference", seed=0):
    """A voter who always picks the image of the model earliest in ``prefer``."""
    voter, _ = voters.create_voter(demographics)
    db.session.commit()
    rng = np.random.default_rng(seed)
    order = {name: k for k, name in enumerate(prefer)}
    for _ in range(sessions):
        try:
            session = matchmaking.start_session(voter, rng, criterion)
        except matchmaking.NoTasksAvailable:
            break
        for task in session.tasks:
            left = order.get(task.left_image.model.name if task.left_image.model else "", 99)
            right = order.get(task.right_image.model.name if task.right_image.model else "", 99)
            voting.cast_vote(voter, task.id, "left" if left <= right else "right")
    return voter


@pytest.fixture
def voted(ctx, campaign):
    ctx.config["VALIDATION_RATE"] = 0.0
    europe = [vote_as({"country": "FR", "age_group": "30-39"},
                      ["model-0", "model-1", "model-2"], seed=s) for s in range(3)]
    asia = [vote_as({"country": "JP", "gender": "female"},
                    ["model-2", "model-1", "model-0"], seed=10 + s) for s in range(2)]
    return europe, asia


def test_win_matrix_counts_every_counted_vote_once(voted):
    _, names, wins = win_matrix("preference")
    assert names == ["model-0", "model-1", "model-2"]
    counted = db.session.scalar(select(func.count()).select_from(Vote).where(
        Vote.criterion == "preference", Vote.is_validation.is_(False)))
    assert wins.sum() == counted > 0


def test_database_ranking_equals_the_core_on_the_same_matrix(voted):
    _, names, wins = win_matrix("preference")
    ranking = rank_models("preference", rounds=200, rng=np.random.default_rng(1))
    fit = bradley_terry(wins)
    by_name = {m.model: m for m in ranking.models}
    for i, name in enumerate(names):
        assert by_name[name].score == pytest.approx(fit.scores[i])
        assert by_name[name].ci_low <= by_name[name].rating <= by_name[name].ci_high
    assert [m.rank for m in ranking.models] == [1, 2, 3]
    assert [m.model for m in ranking.models] == [names[i] for i in np.argsort(-fit.scores)]
    assert ranking.total_votes == wins.sum()


def test_demographic_slices_change_the_ranking(voted):
    europe = rank_models("preference", rounds=0, slice_=Slice(continent="EU"))
    asia = rank_models("preference", rounds=0, slice_=Slice(continent="AS", gender="female"))
    assert europe.models[0].model == "model-0"
    assert asia.models[0].model == "model-2"
    assert europe.slice == {"continent": "EU"}
    both = rank_models("preference", rounds=0)
    assert europe.total_votes + asia.total_votes == both.total_votes
    nobody = rank_models("preference", rounds=0, slice_=Slice(age_group="65+"))
    assert nobody.total_votes == 0 and "no votes yet" in nobody.flags[0]


def test_trusted_only_keeps_voters_who_passed_validation(voted):
    europe, _ = voted
    db.session.execute(update(voters.Voter).where(voters.Voter.id == europe[0].id)
                       .values(validations_passed=1))
    db.session.commit()
    trusted = rank_models("preference", rounds=0, slice_=Slice(trusted_only=True))
    own = db.session.scalar(select(func.count()).select_from(Vote).where(
        Vote.voter_id == europe[0].id))
    assert trusted.total_votes == own


def test_time_window(voted):
    now = utcnow()
    assert rank_models("preference", rounds=0,
                       slice_=Slice(until=now - timedelta(days=1))).total_votes == 0
    assert rank_models("preference", rounds=0, slice_=Slice(since=now - timedelta(days=1))
                       ).total_votes == rank_models("preference", rounds=0).total_votes


def test_category_slice(voted):
    assert rank_models("preference", rounds=0, slice_=Slice(category="Test")).total_votes > 0
    assert rank_models("preference", rounds=0, slice_=Slice(category="Other")
                       ).total_votes == 0


def test_elo_method_uses_the_online_ratings(voted):
    ranking = rank_models("preference", method="elo")
    stored = dict(db.session.execute(
        select(GenModel.name, EloRating.rating).join(EloRating)
        .where(EloRating.criterion == "preference")).all())
    assert [m.model for m in ranking.models] == sorted(stored, key=lambda n: -stored[n])
    assert all(m.rating == stored[m.model] and m.ci_low is None for m in ranking.models)
    sliced = rank_models("preference", method="elo", slice_=Slice(continent="AS"))
    assert sliced.models[0].model == "model-2"


@pytest.mark.parametrize("kwargs", [{"continent": "XX"}, {"age_group": "0-17"},
                                    {"gender": "x"}, {"country": "QQ"}])
def test_bad_slices_are_refused(kwargs):
    with pytest.raises(RankingError):
        Slice(**kwargs)


def test_bad_criterion_or_method(ctx):
    with pytest.raises(RankingError):
        rank_models("beauty")
    with pytest.raises(RankingError):
        rank_models("preference", method="glicko")


def test_rank_matrix_names_flagged_items():
    ranking = rank_matrix(["a", "b", "c"], np.array([[0, 2, 1], [1, 0, 3], [0, 0, 0.0]]),
                          rounds=0)
    assert any("never won: c" in f for f in ranking.flags)


def test_fisher_intervals_for_live_pages(voted):
    fisher = rank_models("preference", intervals="fisher")
    boot = rank_models("preference", rounds=1000, rng=np.random.default_rng(2))
    assert fisher.intervals == "fisher" and fisher.bootstrap_rounds == 0
    for f, b in zip(fisher.models, boot.models, strict=True):
        assert f.model == b.model
        assert f.ci_low < f.rating < f.ci_high
        assert (f.ci_high - f.ci_low) == pytest.approx(b.ci_high - b.ci_low, rel=0.25)
    with pytest.raises(RankingError):
        rank_models("preference", intervals="guess")


def test_tied_tiers():
    from arena.rankings import tied_tiers

    prob = np.array([[0, 0.6, 0.99, 1.0], [0.4, 0, 0.9, 0.97], [0.01, 0.1, 0, 0.8],
                     [0, 0.03, 0.2, 0]])
    assert tied_tiers(prob, np.arange(4)) == {0: 1, 1: 1, 2: 2, 3: 2}


def test_poststratification_reweights_continents(voted):
    from arena.rankings import WORLD_POPULATION_SHARE, poststratified_matrix

    # three Europeans prefer model-0, two Asians model-2; Asia is 59% of the world
    ranking = rank_models("preference", rounds=0, poststratify=True)
    assert ranking.models[0].model == "model-2"
    assert ranking.slice["poststratified"]
    assert any("no votes from Africa" in f for f in ranking.flags)
    _, _, wins, _ = poststratified_matrix("preference")
    _, _, raw = win_matrix("preference")
    assert wins.sum() == pytest.approx(raw.sum())  # reweighting keeps the total
    # with the sample's own shares as target, nothing changes
    eu = win_matrix("preference", Slice(continent="EU"))[2].sum()
    own = {"EU": eu / raw.sum(), "AS": 1 - eu / raw.sum()}
    assert np.allclose(poststratified_matrix("preference", target=own)[2], raw)
    assert abs(sum(WORLD_POPULATION_SHARE.values()) - 1) < 0.01
    with pytest.raises(RankingError):
        rank_models("preference", method="elo", poststratify=True)
