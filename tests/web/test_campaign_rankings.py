"""Rankings scoped to one campaign: `arena rank --campaign`, the API's and the leaderboard
page's `campaign`: the votes on that campaign's pairs and its models alone."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import delete, func, select

from arena.analysis.leaderboard import rank_models
from arena.analysis.tallies import RankingError, Slice
from arena.campaigns import campaigns
from arena.extensions import db
from arena.models import Campaign, Comparison, Vote
from tests.factories import answer, make_campaign, start, time_passes


def _two_campaigns_voted() -> dict[str, int]:
    """Campaigns "First" (model-0, model-1) and "Second" (model-1, model-2) on one prompt
    set, published, and sessions voted through the services; the votes on each's pairs."""
    make_campaign(n_models=3)  # (its images and models; its pairs of no campaign go)
    db.session.execute(delete(Comparison))
    db.session.commit()
    for name, models in (("First", ["model-0", "model-1"]), ("Second", ["model-1", "model-2"])):
        campaign = campaigns.create_campaign(name, "set-2-3", models, ["preference"],
                                             images_per_model=2)
        campaigns.publish(campaign)
    for seed in range(12):
        voter, session = start(seed=seed)
        for task in session.tasks:
            answer(voter, task, "left" if seed % 3 else "right")
    return {name: db.session.scalar(
        select(func.count()).select_from(Vote)
        .join(Comparison, Comparison.id == Vote.comparison_id)
        .join(Campaign, Campaign.id == Comparison.campaign_id)
        .where(Campaign.name == name, Vote.is_validation.is_(False), Vote.flags == 0,
               Vote.criterion == "preference")) for name in ("First", "Second")}


def test_a_campaigns_ranking_counts_its_pairs_and_lists_its_models(app):
    app.config["VALIDATION_RATE"] = 0.0
    with app.app_context():
        cast = _two_campaigns_voted()
        assert cast["First"] > 0 and cast["Second"] > 0
        everything = rank_models("preference", intervals="instant")
        for name, models in (("First", {"model-0", "model-1"}),
                             ("Second", {"model-1", "model-2"})):
            ranking = rank_models("preference", intervals="instant",
                                  slice_=Slice(campaign=name), rng=np.random.default_rng(0))
            assert ranking.total_votes == cast[name]
            assert {m.model for m in ranking.models} == models
            assert ranking.slice["campaign"] == name
        assert everything.total_votes == sum(cast.values())
        with pytest.raises(RankingError, match="no campaign named 'Nope'"):
            rank_models("preference", slice_=Slice(campaign="Nope"))

    runner = app.test_cli_runner()
    done = runner.invoke(args=["rank", "--criterion", "preference", "--campaign", "First",
                               "--live"])
    assert done.exit_code == 0, done.output
    assert "model-0" in done.output and "model-2" not in done.output
    refused = runner.invoke(args=["rank", "--criterion", "preference", "--campaign", "Nope"])
    assert refused.exit_code == 1 and "no campaign named" in refused.output

    with app.app_context():
        time_passes()
    client = app.test_client()
    board = client.get("/api/v1/leaderboard?criterion=preference&campaign=Second").json
    assert {m["model"] for m in board["models"]} <= {"model-1", "model-2"}
    assert board["slice"]["campaign"] == "Second"
    assert client.get("/api/v1/leaderboard?campaign=Nope").status_code == 400
    page = client.get("/leaderboard?criterion=preference").get_data(as_text=True)
    assert '<select name="campaign">' in page and '<option value="First"' in page
