"""A voter's own leaderboard (GET /api/v1/me/leaderboard): their ranking once enough of
their votes count, beside the crowd's; only votes from before the period's cut-off, so the
last answer moves nothing; nobody else's token reads it."""

from __future__ import annotations

import re

from arena.extensions import db
from arena.models import Image, Task
from tests.factories import make_campaign, time_passes

from .helpers import api_session, bearer, confirm_read_if_asked, csrf_token, task_id

FAVOURITE = "model-0"


def _sides(app, task_id: int) -> tuple[str, str]:
    with app.app_context():
        task = db.session.get(Task, task_id)
        return (db.session.get(Image, task.left_image_id).model.name,
                db.session.get(Image, task.right_image_id).model.name)


def _vote_for_the_favourite(client, app, sessions: int, token=None) -> tuple[str, int]:
    """``sessions`` sessions, the favourite's image whenever it is shown (else the left
    one); the voter's token and how many votes they cast."""
    cast = 0
    for _ in range(sessions):
        body = api_session(client, {"criterion": "preference"}, token).get_json()
        token = token or body["voter_token"]
        for shown in body["tasks"]:
            _, right = _sides(app, shown["task_id"])
            choice = "right" if right == FAVOURITE else "left"
            assert client.post(f"/api/v1/tasks/{shown['task_id']}/vote",
                               json={"choice": choice}, headers=bearer(token)).status_code == 201
            cast += 1
    return token, cast


def test_a_voter_sees_their_own_ranking_once_enough_votes_count(client, app):
    app.config.update(VALIDATION_RATE=0.0, OWN_RANKING_MIN_VOTES=12)
    with app.app_context():
        make_campaign(n_prompts=3)
    token, cast = _vote_for_the_favourite(client, app, sessions=5)
    assert cast >= 12
    url = "/api/v1/me/leaderboard?criterion=preference"
    # (every vote of this period: none counts yet, so the last answer cannot be read off it)
    now = client.get(url, headers=bearer(token)).get_json()
    assert now["votes"] == 0 and now["needed"] == 12 and now["models"] == []
    with app.app_context():
        time_passes()
    own = client.get(url, headers=bearer(token)).get_json()
    assert own["votes"] == cast
    assert own["models"][0]["model"] == FAVOURITE and own["models"][0]["rank"] == 1
    assert {m["model"] for m in own["models"]} == {"model-0", "model-1", "model-2"}
    assert all(m["crowd_rank"] in (1, 2, 3) for m in own["models"])  # (the public board's)
    assert sum(m["votes"] for m in own["models"]) == 2 * cast
    # one more session now: the ranking stays as it was until the period turns
    _vote_for_the_favourite(client, app, sessions=1, token=token)
    assert client.get(url, headers=bearer(token)).get_json() == own

    # another voter's token reads their own (nothing yet), a missing one nothing at all
    other, _ = _vote_for_the_favourite(client, app, sessions=1)
    assert client.get(url, headers=bearer(other)).get_json()["votes"] == 0
    assert client.get(url).status_code == 401
    assert client.get(url.replace("preference", "beauty"),
                      headers=bearer(token)).status_code == 400


def _html_sessions(client, sessions: int) -> str:
    """``sessions`` sessions through the pages without JavaScript (the left image each
    time); the last page, the end of the last session."""
    for _ in range(sessions):
        start = csrf_token(client.get("/").get_data(as_text=True))
        started = client.post("/start", data={"csrf_token": start, "criterion": "preference"})
        html = client.get(started.headers["Location"]).get_data(as_text=True)
        while task_id(html):
            html = confirm_read_if_asked(client, html)
            data = {"csrf_token": csrf_token(html), "choice": "left", "response_ms": "900"}
            done = client.post(f"/t/{task_id(html)}", data=data)
            html = client.get(done.headers["Location"]).get_data(as_text=True)
    return html


def test_a_voter_finds_their_own_ranking_from_the_end_of_a_session(client, app):
    """The phone page: until enough answers count it says how many do; once they do, the
    end of a session links to it and it lists the models the voter answered on, by their
    answers, with everyone's place beside each; a browser that never voted lands home."""
    app.config.update(VALIDATION_RATE=0.0, OWN_RANKING_MIN_VOTES=6, REVEAL_WORD_MS=0)
    with app.app_context():
        make_campaign(n_prompts=3)
    assert client.get("/me/ranking").status_code == 303
    end = _html_sessions(client, 1)
    assert "See your own ranking" not in end
    page = client.get("/me/ranking").get_data(as_text=True)
    assert "Your ranking shows once 6 of your answers to this question count; 0 do so far." in page
    end = _html_sessions(client, 2)
    assert "See your own ranking" in end and 'href="/me/ranking?criterion=preference"' in end
    with app.app_context():
        time_passes()
    page = client.get("/me/ranking?criterion=preference")
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    html = page.get_data(as_text=True)
    assert "Your ranking shows once" not in html
    listed = re.findall(r'<th scope="row" class="model" dir="auto">([^<]+)</th>', html)
    assert sorted(listed) == ["model-0", "model-1", "model-2"]
    assert client.get("/me/ranking?criterion=beauty").status_code == 404
