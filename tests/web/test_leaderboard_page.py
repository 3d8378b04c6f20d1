import math

import pytest
from flask import current_app

from tests.factories import make_campaign, time_passes, vote_as


def _two_regions():
    current_app.config["VALIDATION_RATE"] = 0.0
    make_campaign()
    vote_as({"country": "FR"}, ["model-0", "model-1", "model-2"])
    vote_as({"country": "JP"}, ["model-2", "model-1", "model-0"], seed=3)
    time_passes()  # (the public page counts the votes of before the hour)


@pytest.fixture
def board(seeded, app):
    seeded("board", _two_regions)
    app.config["PUBLIC_SLICE_MIN_VOTERS"] = 1  # (two voters: slices of one to show)


def test_leaderboard_shows_ranking_chart_and_heatmap(client, board):
    html = client.get("/leaderboard?criterion=preference").get_data(as_text=True)
    assert "Bradley-Terry on" in html and "Which image do you prefer?" in html
    for name in ("model-0", "model-1", "model-2"):
        assert name in html
    assert 'class="chart"' in html and 'class="heat"' in html
    assert html.count("<circle") == 3
    assert "style=" not in html  # the CSP forbids inline styles


def test_slices_filter_and_htmx_returns_the_board_only(client, board):
    full = client.get("/leaderboard?criterion=preference&continent=AS")
    assert "slice: continent AS" in full.get_data(as_text=True)
    partial = client.get("/leaderboard?criterion=preference&continent=EU",
                         headers={"HX-Request": "true"})
    body = partial.get_data(as_text=True)
    assert body.lstrip().startswith('<section class="card board" id="board"')
    assert "HX-Request" in partial.headers["Vary"]
    first_row = body.split("<tbody>")[1]
    assert first_row.index("model-0") < first_row.index("model-2")


def test_bad_filter_values_show_a_message(client, board):
    html = client.get("/leaderboard?since=soon").get_data(as_text=True)
    assert "use a date like" in html
    html = client.get("/leaderboard?continent=ZZ").get_data(as_text=True)
    assert "continent must be one of" in html


def test_empty_slice_is_explained(client, board):
    html = client.get("/leaderboard?criterion=preference&age_group=65%2B").get_data(
        as_text=True)
    assert "no votes yet in this selection" in html


def test_poststratified_board(client, board, app):
    # one French and one Japanese voter cannot speak for the world: refused, with the reason
    refused = client.get("/leaderboard?criterion=preference&poststratify=1")
    html = refused.get_data(as_text=True)
    assert refused.status_code == 422 and "model-0" not in html
    assert "cannot reweight to world population by continent" in html
    assert "Africa, 18% of the population: 0 voters, 0 votes" in html
    from arena.accounts import tokens
    from tests.web.helpers import bearer

    with app.app_context():
        token = tokens.create_token("reweighting-analyst")
    api = client.get("/api/v1/leaderboard?criterion=preference&method=bt&poststratify=1",
                     headers=bearer(token))
    assert api.status_code == 422 and "Africa, 18%" in api.json["error"], api.json
    assert api.json["field"] == "margin"
    app.config.update(POSTSTRAT_MAX_UNREPRESENTED=1.0, POSTSTRAT_MAX_SHIFT=math.inf,
                      POSTSTRAT_MIN_VOTERS=1, POSTSTRAT_MIN_VOTES=1)
    html = client.get("/leaderboard?criterion=preference&poststratify=1").get_data(as_text=True)
    assert "reweighted world population by continent" in html
    assert "effective sample size" in html
    assert "no votes from Africa" in html


def test_slices_of_few_voters_show_nothing_and_dates_are_whole_days(client, board, app):
    """A public slice of fewer than PUBLIC_SLICE_MIN_VOTERS voters could be one voter's own
    votes (their language, their country, the milliseconds around their answer): the page
    shows none of its figures, and dates count whole days."""
    app.config["PUBLIC_SLICE_MIN_VOTERS"] = 20
    html = client.get("/leaderboard?criterion=preference&continent=EU").get_data(as_text=True)
    assert "fewer than 20 voters in this selection" in html and "model-0" not in html
    assert "Bradley-Terry on" not in html  # (not "on 0 votes": it has some)
    html = client.get("/leaderboard?criterion=preference").get_data(as_text=True)
    assert "model-0" in html  # (the whole board is not a slice)
    app.config["PUBLIC_SLICE_MIN_VOTERS"] = 1
    html = client.get("/leaderboard?criterion=preference&since=2026-01-05T10:20:30.123"
                      "&until=2026-01-06T00:00:00").get_data(as_text=True)
    assert "since 2026-01-05T00:00:00, until 2026-01-06T00:00:00" in html


def test_one_tier_is_said_on_the_page_the_api_and_the_cli(client, board, runner):
    """Two voters of opposite tastes: no model is surely ahead of another, and every channel
    says so instead of showing one tier for all."""
    from arena.analysis.leaderboard import ONE_TIER

    html = client.get("/leaderboard?criterion=preference").get_data(as_text=True)
    assert "no two tiers can be told apart at this size" in html
    assert 'data-label="Tier">A<' not in html
    api = client.get("/api/v1/leaderboard?criterion=preference").json
    assert ONE_TIER in api["flags"] and all(m["tier"] is None for m in api["models"])
    table = runner.invoke(args=["rank", "--criterion", "preference"]).output
    assert f"! {ONE_TIER}" in table
