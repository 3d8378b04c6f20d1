"""Rankings from the database: SQL aggregation, slices, and agreement with the pure core."""

import math
from datetime import timedelta

import numpy as np
import pytest
from flask import current_app
from sqlalchemy import func, select, update

from arena.analysis.leaderboard import RankingError, rank_counts, rank_models
from arena.analysis.margins import CannotReweight, MarginError
from arena.analysis.tallies import Slice, tally, win_matrix
from arena.errors import Invalid
from arena.extensions import db
from arena.models import GenModel, Vote, Voter, utcnow
from arena.ranking import PairCounts, bradley_terry
from arena.voting import live_elo
from tests.factories import make_campaign, vote_as


def _votes_from_two_regions():
    """Europe prefers model-0, Asia model-2: returns the ids of each region's voters."""
    current_app.config["VALIDATION_RATE"] = 0.0
    make_campaign()
    europe = [vote_as({"country": "FR", "age_group": "30-39"},
                      ["model-0", "model-1", "model-2"], seed=s).id for s in range(3)]
    asia = [vote_as({"country": "JP", "gender": "female"},
                    ["model-2", "model-1", "model-0"], seed=10 + s).id for s in range(2)]
    return europe, asia


@pytest.fixture
def voted(seeded, ctx):
    return seeded("two-regions", _votes_from_two_regions)


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
    db.session.execute(update(Voter).where(Voter.id == europe[0])
                       .values(validations_passed=1))
    db.session.commit()
    trusted = rank_models("preference", rounds=0, slice_=Slice(trusted_only=True))
    own = db.session.scalar(select(func.count()).select_from(Vote).where(
        Vote.voter_id == europe[0]))
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
    names = dict(db.session.execute(select(GenModel.id, GenModel.name)).all())
    stored = {names[m]: rating for m, (rating, _, _) in live_elo.ratings("preference").items()}
    plain = rank_models("preference", method="elo", rounds=0)
    assert [m.model for m in plain.models] == sorted(stored, key=lambda n: -stored[n])
    assert all(m.rating == stored[m.model] == m.online_elo and m.ci_low is None
               for m in plain.models)
    # with intervals: the median of replays in random orders, inside its own interval; the
    # online (stored) Elo stays beside it
    ranking = rank_models("preference", method="elo", rounds=300, cluster="none",
                          rng=np.random.default_rng(0))
    assert ranking.bootstrap_rounds == 300 and ranking.intervals == "bootstrap"
    assert all(m.online_elo == stored[m.model] for m in ranking.models)
    assert all(m.ci_low <= m.rating <= m.ci_high and m.rank_best <= m.rank <= m.rank_worst
               for m in ranking.models)
    sliced = rank_models("preference", method="elo", slice_=Slice(continent="AS"))
    assert sliced.models[0].model == "model-2"


@pytest.mark.parametrize("kwargs", [{"continent": "XX"}, {"age_group": "0-17"},
                                    {"gender": "x"}, {"country": "QQ"}])
def test_bad_slices_are_refused(kwargs):
    with pytest.raises(RankingError):
        Slice(**kwargs)


def test_bad_criterion_or_method(ctx):
    with pytest.raises(Invalid, match="criterion"):
        rank_models("beauty")
    with pytest.raises(RankingError):
        rank_models("preference", method="glicko")


def test_rank_counts_names_flagged_items():
    wins = np.array([[0, 2, 1], [1, 0, 3], [0, 0, 0.0]])
    ranking = rank_counts(["a", "b", "c"], PairCounts.from_matrix(wins), rounds=0)
    assert any("never won: c" in f for f in ranking.flags)


def test_tally_groups_by_voter_prompt_or_vote(voted):
    by_voter = tally("preference", cluster="voter")
    by_prompt = tally("preference", cluster="prompt")
    by_vote = tally("preference", cluster="none")
    both = tally("preference")  # (the default)
    assert by_voter.counts.n_units == 5  # three Europeans, two Asians
    assert by_prompt.counts.n_units > 1 and by_vote.resample == "vote"
    assert both.counts.two_way and both.cluster == "voter+prompt"
    assert both.counts.way(0).n_units == 5 and both.counts.way(1).n_units == 2
    for other in (by_prompt, by_vote, both):
        assert np.array_equal(other.counts.matrix(), by_voter.counts.matrix())
    with pytest.raises(RankingError, match="cluster"):
        tally("preference", cluster="country")


def test_instant_intervals_for_live_pages_agree_with_the_bootstrap(voted):
    instant = rank_models("preference", intervals="instant", cluster="none")
    boot = rank_models("preference", rounds=1000, cluster="none", rng=np.random.default_rng(2))
    assert instant.intervals == "instant" and instant.bootstrap_rounds == 0
    assert instant.cluster == boot.cluster == "none"
    for f, b in zip(instant.models, boot.models, strict=True):
        assert f.model == b.model
        assert f.ci_low < f.rating < f.ci_high
        assert (f.ci_high - f.ci_low) == pytest.approx(b.ci_high - b.ci_low, rel=0.25)
        assert f.rank_best <= f.rank <= f.rank_worst
    with pytest.raises(RankingError):
        rank_models("preference", intervals="guess")


def test_voter_and_prompt_clusters_are_the_default_and_are_flagged_when_few(voted):
    ranking = rank_models("preference", rounds=200, rng=np.random.default_rng(3))
    assert ranking.cluster == "voter+prompt" and (ranking.units, ranking.prompts) == (5, 2)
    assert any("resample 5 voters and 2 prompts" in f for f in ranking.flags)
    voters = rank_models("preference", rounds=200, rng=np.random.default_rng(3),
                         cluster="voter")
    assert voters.cluster == "voter" and voters.units == 5 and voters.prompts is None
    assert any("resample 5 units" in f for f in voters.flags)
    by_vote = rank_models("preference", rounds=200, cluster="none",
                          rng=np.random.default_rng(3))
    assert by_vote.units is None and not any("units" in f for f in by_vote.flags)


def test_poststratification_reweights_continents(voted):
    # three Europeans prefer model-0, two Asians model-2; Asia is 59% of the world (and no
    # African: allowed here, see test_a_population_the_votes_cannot_speak_for_is_refused)
    current_app.config.update(POSTSTRAT_MIN_VOTERS=1, POSTSTRAT_MIN_VOTES=1,
                              POSTSTRAT_MAX_UNREPRESENTED=1.0, POSTSTRAT_MAX_SHIFT=math.inf)
    ranking = rank_models("preference", rounds=100, poststratify=True,
                          rng=np.random.default_rng(4))
    assert ranking.models[0].model == "model-2"
    assert ranking.slice["reweighted"] == "world population by continent"
    assert any("no votes from Africa" in f for f in ranking.flags)
    assert ranking.effective_votes < ranking.total_votes
    assert any("effective sample size" in f for f in ranking.flags)
    counted = tally("preference", margins=("continent",))
    raw = counted.counts.matrix()
    weighted = counted.counts.weighted_matrix(counted.calibration)
    assert weighted.sum() == pytest.approx(raw.sum())  # reweighting keeps the total
    # with the sample's own shares as target, nothing changes
    eu = win_matrix("preference", Slice(continent="EU"))[2].sum()
    own = f"continent:EU={eu / raw.sum()},AS={1 - eu / raw.sum()}"
    mine = tally("preference", margins=(own,))
    assert np.allclose(mine.counts.weighted_matrix(mine.calibration), raw)
    with pytest.raises(RankingError):
        rank_models("preference", method="elo", poststratify=True)


def test_small_margin_categories_are_not_reweighted(voted):
    # two Asian voters, fewer than the minimum: Asia keeps its sample share
    current_app.config.update(POSTSTRAT_MIN_VOTERS=3, POSTSTRAT_MIN_VOTES=1,
                              POSTSTRAT_MAX_UNREPRESENTED=1.0, POSTSTRAT_MAX_SHIFT=math.inf)
    ranking = rank_models("preference", rounds=0, margins=("continent",))
    # (Europe then keeps its sample share too: every weight is 1, the fit the unweighted one)
    plain = {m.model: m.score for m in rank_models("preference", rounds=0).models}
    assert {m.model: m.score for m in ranking.models} == pytest.approx(plain)
    assert any("Asia: 2 voters" in f and "not reweighted" in f for f in ranking.flags)
    # and so does a category with too few votes, however many voters
    current_app.config.update(POSTSTRAT_MIN_VOTERS=1, POSTSTRAT_MIN_VOTES=10_000)
    held = rank_models("preference", rounds=0, margins=("continent",))
    assert sum("not reweighted" in f for f in held.flags) == 2


def test_a_population_the_votes_cannot_speak_for_is_refused(voted):
    """Simulated (benchmarks/coverage.py, the post-stratified designs), a group holding 20%
    of the population, too small to reweight and so kept at its sample share, left the table
    the other groups' preferences: its intervals covered the population value 30-58% of the
    time. Past POSTSTRAT_MAX_UNREPRESENTED of the population kept at its sample share or
    without votes, the reweighting is refused, naming each group, its share and its voters."""
    current_app.config.update(POSTSTRAT_MIN_VOTERS=3, POSTSTRAT_MIN_VOTES=1)
    with pytest.raises(CannotReweight) as refused:  # Asia (2 voters), Africa (none), ...
        rank_models("preference", rounds=0, margins=("continent",))
    reason = str(refused.value)
    assert "cannot reweight to world population by continent" in reason
    assert "Asia, 59% of the population: 2 voters" in reason
    assert "Africa, 18% of the population: 0 voters, 0 votes" in reason
    assert "each needs 3 voters and 1 vote)" in reason
    # shares the votes carry (Europe 3 voters, and Asia at 2% left to its sample share)
    current_app.config.update(POSTSTRAT_MAX_UNREPRESENTED=0.05)
    kept = rank_models("preference", rounds=0, margins=("continent:EU=0.98,AS=0.02",))
    assert kept.slice["reweighted"] == "continent: EU 98%, AS 2%"
    assert any("Asia: 2 voters" in f and "not reweighted" in f for f in kept.flags)
    with pytest.raises(CannotReweight):  # ... but not at 6%
        rank_models("preference", rounds=0, margins=("continent:EU=0.94,AS=0.06",))


def test_a_group_one_voter_dominates_is_worth_what_its_votes_are(ctx):
    """Twenty African voters, one of them casting 40% of the group's votes: reweighted to
    half the population, that voter would speak for a fifth of it. The group counts as the
    six voters of equal votes it is worth: kept at its sample share and flagged, and past
    the allowance the reweighting is refused, naming it."""
    current_app.config.update(VALIDATION_RATE=0.0, POSTSTRAT_MIN_VOTERS=20,
                              POSTSTRAT_MIN_VOTES=1, POSTSTRAT_MAX_UNREPRESENTED=1.0,
                              POSTSTRAT_MAX_SHIFT=math.inf)
    make_campaign(n_prompts=4)
    for k in range(20):
        vote_as({"country": "FR"}, ["model-0", "model-1", "model-2"], sessions=2, seed=k)
    vote_as({"country": "NG"}, ["model-2", "model-1", "model-0"], sessions=12, seed=100)
    for k in range(19):
        vote_as({"country": "NG"}, ["model-2", "model-1", "model-0"], sessions=1, seed=200 + k)
    margin = ("continent:EU=0.5,AF=0.5",)
    ranking = rank_models("preference", rounds=0, margins=margin)
    assert any("Africa: 20 voters worth 6 of equal votes" in f and "not reweighted" in f
               for f in ranking.flags), ranking.flags
    plain = {m.model: m.score for m in rank_models("preference", rounds=0).models}
    assert {m.model: m.score for m in ranking.models} == pytest.approx(plain)
    current_app.config.update(POSTSTRAT_MAX_UNREPRESENTED=0.05)
    with pytest.raises(CannotReweight, match="Africa, 50% of the population: 20 voters "
                                             "worth 6 of equal votes"):
        rank_models("preference", rounds=0, margins=margin)
    # worth more than the minimum, it is reweighted
    current_app.config.update(POSTSTRAT_MIN_VOTERS=5)
    even = rank_models("preference", rounds=0, margins=margin)
    assert not any("not reweighted" in f for f in even.flags)


def test_intervals_a_held_group_could_move_past_a_fifth_of_their_width_are_refused(ctx):
    """A group held at its sample share, off its target: whatever it prefers, the table can
    be off by a bias no number of votes shrinks. Where that could pass a fifth of an
    interval's half-width (the intervals would cover less than 93%), the reweighting is
    refused, naming the group; without intervals the table says how far it could be off."""
    current_app.config.update(VALIDATION_RATE=0.0, POSTSTRAT_MIN_VOTERS=5,
                              POSTSTRAT_MIN_VOTES=1, POSTSTRAT_MAX_UNREPRESENTED=0.2)
    make_campaign(n_prompts=4)
    for k in range(30):
        vote_as({"country": "FR"}, ["model-0", "model-1", "model-2"], sessions=4, seed=k)
    for k in range(3):
        vote_as({"country": "NG"}, ["model-2", "model-1", "model-0"], sessions=2, seed=50 + k)
    margin = ("continent:EU=0.85,AF=0.15",)
    with pytest.raises(CannotReweight, match=r"off its target share \(Africa: too few to "
                                             r"reweight, or no votes\).*more than 20% of the "
                                             r"interval's half-width"):
        rank_models("preference", rounds=100, margins=margin, rng=np.random.default_rng(1))
    bare = rank_models("preference", rounds=0, margins=margin)
    said = next(f for f in bare.flags if "off its target share" in f)
    assert "could move a rating by up to" in said
    # a bound that fits within the intervals is said beside them
    current_app.config.update(POSTSTRAT_MAX_SHIFT=100.0)
    shown = rank_models("preference", rounds=100, margins=margin, rng=np.random.default_rng(1))
    assert any("Elo, within 10000% of the intervals' half-widths" in f for f in shown.flags)


def test_raking_on_two_margins_leaves_out_voters_without_them(voted):
    # the Europeans gave an age group but no gender, the Asians a gender but no age
    current_app.config.update(POSTSTRAT_MIN_VOTERS=1, POSTSTRAT_MIN_VOTES=1,
                              POSTSTRAT_MAX_UNREPRESENTED=1.0, POSTSTRAT_MAX_SHIFT=math.inf)
    ranking = rank_models("preference", rounds=0, margins=("continent", "gender"))
    assert ranking.total_votes < rank_models("preference", rounds=0).total_votes
    assert any("did not give their continent and gender" in f for f in ranking.flags)


@pytest.mark.parametrize("margin", ["planet", "gender:robot=1", "gender:female=-1",
                                    "continent:EU=0"])
def test_bad_margins_are_refused(ctx, margin):
    with pytest.raises(MarginError):
        rank_models("preference", margins=(margin,))


@pytest.mark.parametrize("method", ["bt", "elo"])
def test_a_model_without_votes_is_listed_unranked(voted, method):
    """A model with 0 votes was ranked 5th: it is listed, last, with no
    rank and no score, in every format."""
    from arena.analysis import exports
    from tests.factories import make_model

    make_model("newcomer")
    db.session.commit()
    ranking = rank_models("preference", method=method, rounds=0)
    last = ranking.models[-1]
    assert (last.model, last.rank, last.score, last.votes) == ("newcomer", None, None, 0)
    assert [m.rank for m in ranking.models[:-1]] == [1, 2, 3]
    if method == "bt":
        assert "no votes yet for: newcomer" in ranking.flags
    assert exports.to_csv(ranking).splitlines()[-1].startswith(",newcomer,,")
    row = next(line for line in exports.to_table(ranking).splitlines()
               if "newcomer" in line and not line.startswith("!"))
    assert row.split()[:3] == ["-", "newcomer", "-"]


def test_elo_leaves_a_model_without_votes_out_of_the_rank_sets_and_scores():
    """A model with no vote is listed last and unranked, and the others' ratings, intervals,
    rank sets and scores are exactly those without it (it used to sit at the starting rating
    inside everyone's rank sets, and take a share of the scores)."""
    from arena.analysis.leaderboard import rank_elo

    rng = np.random.default_rng(3)
    winners, losers = rng.integers(0, 3, 300), rng.integers(0, 3, 300)
    keep = winners != losers
    winners, losers = winners[keep], losers[keep]
    alone = rank_elo(["a", "b", "c"], winners, losers, rounds=200,
                     rng=np.random.default_rng(7))
    # the idle model sits between the others in the name list
    moved = np.array([0, 2, 3])
    with_idle = rank_elo(["a", "idle", "b", "c"], moved[winners], moved[losers], rounds=200,
                         rng=np.random.default_rng(7))
    assert [m.model for m in with_idle.models] == [m.model for m in alone.models] + ["idle"]
    idle = with_idle.models[-1]
    assert idle.rank is None and idle.rank_worst is None and idle.votes == 0
    for got, want in zip(with_idle.models, alone.models, strict=False):
        assert (got.rating, got.ci_low, got.ci_high, got.rank_best, got.rank_worst) == \
            pytest.approx((want.rating, want.ci_low, want.ci_high, want.rank_best,
                           want.rank_worst))
    assert max(m.rank_worst for m in with_idle.models[:3]) <= 3
    assert sum(m.score for m in with_idle.models[:3]) == pytest.approx(100)
    assert "no votes yet for: idle" in with_idle.flags
    assert with_idle.prob_ahead == alone.prob_ahead
    # a selection with no vote at all lists every model, unranked
    for rounds in (0, 100):
        empty = rank_elo(["a", "b"], [], [], rounds=rounds)
        assert [(m.model, m.rank) for m in empty.models] == [("a", None), ("b", None)]
        assert empty.total_votes == 0 and "no votes yet in this selection" in empty.flags
