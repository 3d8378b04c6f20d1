"""An analyst's ranking weighted by the voters' reliability (``--weights reliability``):
voters who tap one side whatever is shown count for little, through the real vote path,
on the command line and the analysts' API; the public board never takes weights."""

from __future__ import annotations

import json

import numpy as np
import pytest

from arena.accounts import tokens
from arena.analysis.leaderboard import rank_models
from arena.analysis.tallies import RankingError
from arena.voting import matchmaking
from tests.factories import answer, make_campaign, new_voter, time_passes, vote_as
from tests.web.helpers import bearer

ORDER = ["model-0", "model-1", "model-2", "model-3"]


def _tapper(seed: int) -> None:
    """A voter who always taps the left image (sides are drawn at random per task)."""
    voter = new_voter()
    rng = np.random.default_rng(seed)
    for _ in range(4):
        session = matchmaking.start_session(voter, rng, "preference")
        for task in session.tasks:
            answer(voter, task, "left")


def _spread(ranking) -> float:
    ratings = [m.rating for m in ranking.models if m.rating is not None]
    return max(ratings) - min(ratings)


def _vote(app):
    """24 voters of the crowd's order (a neighbouring pair swapped by a third of them) and
    12 who tap the left image."""
    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    rng = np.random.default_rng(0)
    with app.app_context():
        make_campaign(n_prompts=4, n_models=4)
        for k in range(24):
            order = list(ORDER)
            if k % 3 == 0:
                i = int(rng.integers(0, 3))
                order[i], order[i + 1] = order[i + 1], order[i]
            vote_as({}, order, sessions=4, seed=k)
        for k in range(12):
            _tapper(100 + k)
        time_passes()  # (the analysts' default: the votes before the public cut-off)
    return app


@pytest.fixture
def voted(app):
    return _vote(app)


def test_tappers_count_for_little_and_the_order_sharpens(any_app):
    voted = _vote(any_app)
    with voted.app_context():
        plain = rank_models("preference", intervals="instant", cluster="voter")
        weighted = rank_models("preference", intervals="instant", weights="reliability")
    assert [m.model for m in weighted.models] == ORDER
    assert _spread(weighted) > 1.3 * _spread(plain)  # the taps pulled it to the middle
    flag = next(f for f in weighted.flags if f.startswith("weighted by reliability"))
    blind = int(flag.split("; ")[1].split()[0])
    # (the tappers, but one whose 12 taps happened to follow the crowd; no more than a couple
    # of others)
    assert 10 <= blind <= 14, flag
    assert weighted.slice["weights"] == "reliability" and weighted.cluster == "voter"
    assert any("cluster by voter only" in f for f in weighted.flags)
    assert not any("taste of their own" in f for f in weighted.flags)  # taps favour nothing
    with voted.app_context():
        for wrong in ({"method": "elo"}, {"margins": ("continent",)}, {"cluster": "prompt"},
                      {"public": True}):
            with pytest.raises(RankingError):
                rank_models("preference", weights="reliability", **wrong)
        with pytest.raises(RankingError):
            rank_models("preference", weights="loudness")


def test_a_minority_of_its_own_order_is_reported_not_silenced_unawares(app):
    """The weights measure attention against the crowd's taste: 10 voters who order the
    models the other way round are taken for blind, and the flag says they agree with one
    another (where tappers favour nothing)."""
    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    with app.app_context():
        make_campaign(n_prompts=4, n_models=4)
        for k in range(24):
            vote_as({}, ORDER, sessions=4, seed=k)
        for k in range(10):
            vote_as({}, ORDER[::-1], sessions=4, seed=100 + k)
        weighted = rank_models("preference", intervals="instant", weights="reliability")
    flag = next(f for f in weighted.flags if "taste of their own" in f)
    assert flag.startswith("the 10 voters taken for blind") and "first model-3" in flag, flag


def test_the_command_line_and_the_api_take_the_weights(voted, runner, client):
    done = runner.invoke(args=["rank", "--criterion", "preference", "--weights",
                               "reliability", "--format", "json"])
    assert done.exit_code == 0, done.output
    assert [m["model"] for m in json.loads(done.stdout)] == ORDER
    assert "warning: weighted by reliability" in done.stderr
    table = runner.invoke(args=["rank", "--criterion", "preference", "--weights",
                                "reliability"])
    assert table.exit_code == 0 and "weights=reliability" in table.output, table.output
    assert runner.invoke(args=["rank", "--votes", __file__, "--weights",
                               "reliability"]).exit_code != 0
    with voted.app_context():
        token = tokens.create_token("reliability-analyst")
    got = client.get("/api/v1/leaderboard?method=bt&weights=reliability", headers=bearer(token))
    assert got.status_code == 200, got.get_data(as_text=True)
    assert got.json["slice"]["weights"] == "reliability"
    by_gold = client.get("/api/v1/leaderboard?method=bt&weights=gold", headers=bearer(token))
    assert by_gold.status_code == 200 and by_gold.json["slice"]["weights"] == "gold"
    assert any(f.startswith("weighted by gold answers") for f in by_gold.json["flags"])
    refused = client.get("/api/v1/leaderboard?method=elo&weights=reliability",
                         headers=bearer(token))
    assert refused.status_code == 400 and "weights" in refused.get_data(as_text=True)
    # (asking for weights is an analyst's request: the public gets no ranking at all)
    assert client.get("/api/v1/leaderboard?weights=reliability").status_code == 401
