"""The reload attack: answer one task, reload every page that shows figures, and read off
whether the task was a gold pair (a gold vote moves no public figure, an ordinary one moves
several). Every public figure counts what was stamped before one cut-off per period
(arena.analysis.published); within a period, nothing a voter does changes any page."""

from __future__ import annotations

import re

from sqlalchemy import select

from arena.analysis import published
from arena.extensions import db
from arena.models import Comparison, Task
from tests.factories import make_owner, time_passes
from tests.security.test_gold import publish_live
from tests.web.helpers import api_session, bearer, csrf_token

PAGES = ("/campaigns/", "/campaigns/Live", "/leaderboard?criterion=preference",
         "/leaderboard?criterion=preference&trusted_only=1",
         "/leaderboard?criterion=preference&since=2000-01-01",
         "/api/v1/leaderboard?criterion=preference", "/owner/models/A")
# a form's token; when the figures were taken (which differs when the attack is run on live
# figures, and says nothing about the vote)
VOLATILE = re.compile(r'name="csrf_token" value="[^"]*"|\d{4}-\d\d-\d\d[ T][\d:.]+')


def setup(make_app):
    """A published campaign of three models (A, B, C) through the real upload path, whose
    owner is also a voter (votes count at once: no trust floor, no reading time); returns
    the app and the owner's token."""
    app = make_app(VALIDATION_RATE=1.0, TRUST_FLOOR=0.0, REVEAL_WORD_MS=0)
    with app.app_context():
        owner, token = make_owner("mallory")
        publish_live(owner)
    return app, token


def signed_in_owner(app, token: str):
    client = app.test_client()
    html = client.get("/owner/").get_data(as_text=True)
    assert client.post("/owner/sign-in", data={"csrf_token": csrf_token(html),
                                               "token": token}).status_code == 303
    return client


def snapshot(client) -> dict[str, str]:
    pages = {}
    for url in PAGES:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        pages[url] = VOLATILE.sub("", response.get_data(as_text=True))
    return pages


def attack(app, token: str, hour_later: bool) -> list[tuple[bool, set[str]]]:
    """Two sessions of three tasks, each answered and followed by a reload of every page;
    per task: (was it gold, the pages that changed). Each reload is the first request of a
    period (the figures taken afresh after the answer: the attacker's best case, and what
    made comparing two pages tell before every figure counted to one cut-off). With
    ``hour_later`` the period turns between the answer and the reload (the answer is then
    among what the pages count)."""
    client = signed_in_owner(app, token)
    seen = []
    before = snapshot(client)
    voter = None
    for _ in range(2):
        body = api_session(client, {"criterion": "preference"}, token=voter).json
        voter = voter or body["voter_token"]
        for task in body["tasks"]:
            vote = client.post(f"/api/v1/tasks/{task['task_id']}/vote", headers=bearer(voter),
                               json={"choice": "left"})
            assert vote.status_code == 201, vote.get_json()
            with app.app_context():
                if hour_later:
                    time_passes()
                else:
                    published.forget()
            after = snapshot(client)
            with app.app_context():
                gold = db.session.scalar(select(Comparison.is_validation).join(
                    Task, Task.comparison_id == Comparison.id).where(
                        Task.id == task["task_id"]))
            seen.append((gold, {url for url in PAGES if after[url] != before[url]}))
            before = after
    return seen


def test_reloading_the_public_pages_tells_no_gold_answer(make_app):
    """Every page that shows figures (the campaign list and page, the leaderboard with and
    without the trusted-voters slice or a date, the public API table, the owner's model
    page), reloaded after each of six answers, two of them gold, each reload taking every
    figure afresh: no page changes at all within the period."""
    app, token = setup(make_app)
    seen = attack(app, token, hour_later=False)
    assert [gold for gold, _ in seen].count(True) == 2  # a gold pair in each session
    assert all(changed == set() for _, changed in seen), seen


def test_what_one_answer_an_hour_still_tells(make_app):
    """The control, and the limit: when the period turns between an answer and the reload,
    every ordinary answer moves the campaign list, the API table and the leaderboard page,
    and no gold one does (the test above fails the same way on figures read live). On a
    campaign nobody else votes on, one answer per period is what a patient voter can still
    classify; with other voters, the period's votes of everybody move together."""
    app, token = setup(make_app)
    seen = attack(app, token, hour_later=True)
    assert [gold for gold, _ in seen].count(True) == 2
    told = ("/campaigns/", "/api/v1/leaderboard?criterion=preference",
            "/leaderboard?criterion=preference")
    for url in told:
        assert all((url in changed) != gold for gold, changed in seen), (url, seen)
