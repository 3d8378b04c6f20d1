"""A criterion beyond the built-in three, configured with EXTRA_CRITERIA: every model gets
its rating row from `arena db upgrade`, voters answer it through the HTML, htmx and JSON
paths, and it is ranked and described like the others; a bad definition stops the app."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from arena import criteria
from arena.analysis.leaderboard import rank_models
from arena.campaigns import comparisons
from arena.extensions import db
from arena.models import EloRating, GenModel, Prompt, Vote, VotingSession
from tests.factories import make_campaign

from .helpers import api_session, bearer, csrf_token, start_session, task_id

REALISM = {"name": "realism", "question": "Which image looks more like a photograph?",
           "min_vote_ms": 0}


def _realism_rows() -> int:
    return db.session.scalar(select(func.count()).select_from(EloRating).where(
        EloRating.criterion == "realism"))


def test_a_fourth_criterion_is_voted_on_every_channel_and_ranked(make_app):
    first = make_app()
    with first.app_context():
        make_campaign()  # (its models rated on the built-in three)
    # (MIN_VOTE_MS None: each criterion's own floor, the fourth's none)
    app = make_app(EXTRA_CRITERIA=[REALISM], VALIDATION_RATE=0.0, MIN_VOTE_MS=None)
    with app.app_context():
        assert criteria.names() == ("preference", "coherence", "alignment", "realism")
        assert _realism_rows() == 0
    upgraded = app.test_cli_runner().invoke(args=["db", "upgrade"])
    assert upgraded.exit_code == 0, upgraded.output
    with app.app_context():
        assert _realism_rows() == db.session.scalar(select(func.count()).select_from(GenModel))
        prompt_ids = db.session.scalars(select(Prompt.id)).all()
        assert comparisons.build_comparisons(prompt_ids, criteria=["realism"]) > 0
        db.session.commit()
    client = app.test_client()

    # JSON: a phone app asks for it by name
    body = api_session(client, {"criterion": "realism"}).json
    assert body["criterion"] == "realism" and body["question"] == REALISM["question"]
    assert all(task["prompt"] is None for task in body["tasks"])  # (no caption to read)
    for task in body["tasks"]:
        assert client.post(f"/api/v1/tasks/{task['task_id']}/vote", json={"choice": "left"},
                           headers=bearer(body["voter_token"])).status_code == 201

    # HTML: the criterion's link, its question on the page, a vote without JavaScript
    home = client.get("/?criterion=realism").get_data(as_text=True)
    assert 'name="criterion" value="realism"' in home
    html_client = app.test_client()
    start = start_session(html_client, criterion="realism")
    assert start.status_code == 303
    html = html_client.get(start.headers["Location"]).get_data(as_text=True)
    assert REALISM["question"] in html and "data-caption" not in html
    voted = html_client.post(f"/t/{task_id(html)}", data={
        "csrf_token": csrf_token(html), "choice": "right", "response_ms": "900"})
    assert voted.status_code == 303
    # htmx: the next card in place
    html = html_client.get(voted.headers["Location"]).get_data(as_text=True)
    card = html_client.post(f"/t/{task_id(html)}", data={
        "csrf_token": csrf_token(html), "choice": "left", "response_ms": "900"},
        headers={"HX-Request": "true"})
    assert card.status_code == 200 and "<html" not in card.get_data(as_text=True)

    with app.app_context():
        assert set(db.session.scalars(select(VotingSession.criterion))) == {"realism"}
        cast = db.session.scalars(select(Vote).where(Vote.criterion == "realism")).all()
        assert len(cast) == len(body["tasks"]) + 2 and not any(v.flags for v in cast)
        live = rank_models("realism", intervals="instant", include_idle=False)
        assert live.criterion == "realism" and live.models
    board = client.get("/leaderboard?criterion=realism").get_data(as_text=True)
    assert REALISM["question"] in board
    spec = client.get("/api/v1/openapi.json").json
    assert "realism" in spec["components"]["schemas"]["SessionRequest"]["properties"][
        "criterion"]["enum"]
    assert client.get("/api/v1/leaderboard?criterion=realism&method=elo").status_code == 200
    assert client.get("/api/v1/leaderboard?criterion=beauty").status_code == 400


@pytest.mark.parametrize("entry, says", [
    ({"name": "Realism!", "question": "Which?"}, "lowercase"),
    ({"name": "preference", "question": "Which?"}, "defined twice"),
    ({"name": "realism", "question": "Which?", "gold": "swapped"}, "swapped"),
    ({"name": "realism"}, "a name, a question"),
    ({"name": "realism", "question": "Which?", "colour": "red"}, "a name, a question"),
    ({"name": "realism", "question": "Which?", "min_vote_ms": -1}, "min_vote_ms"),
])
def test_a_bad_criterion_stops_the_app_and_says_why(make_app, entry, says):
    with pytest.raises(ValueError, match=says):
        make_app(EXTRA_CRITERIA=[entry])
