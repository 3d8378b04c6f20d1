"""The reload attack: answer one task, reload every page that shows figures, and read off
whether the task was a gold pair (a gold vote moves no public figure, an ordinary one moves
several). Every public figure counts what was stamped before one cut-off per period
(arena.analysis.published); within a period, nothing a voter does changes any page."""

from __future__ import annotations

import re

from sqlalchemy import select

from arena.accounts import tokens
from arena.analysis import published
from arena.extensions import db
from arena.models import Comparison, Task, utcnow
from tests.factories import make_owner, time_passes
from tests.security.test_gold import publish_live
from tests.web.helpers import api_session, bearer, csrf_token

PAGES = ("/campaigns/", "/campaigns/Live", "/leaderboard?criterion=preference",
         "/leaderboard?criterion=preference&trusted_only=1",
         "/leaderboard?criterion=preference&since=2000-01-01",
         "/api/v1/leaderboard?criterion=preference", "/owner/models/A")
# a form's token; when the figures were taken (which differs when the attack is run on live
# figures, and says nothing about the vote)
SKIPS = "the campaign page's skips"
SKIPPED = re.compile(r"Tasks closed without a vote [^:]*: \d+")
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
    # (one line of the campaign's page: its other figures, the vote rate, move every hour)
    pages[SKIPS] = SKIPPED.search(pages["/campaigns/Live"]).group(0)
    return pages


def attack(app, token: str, hour_later: bool) -> list[tuple[bool, str, set[str]]]:
    """Three sessions of three tasks: the first two answered, the third skipped ("Can't
    decide"), each followed by a reload of every page; per task: (was it gold, "vote" or
    "skip", the pages that changed). Each reload is the first request of a period (the
    figures taken afresh after the answer: the attacker's best case, and what made comparing
    two pages tell before every figure counted to one cut-off). With ``hour_later`` the
    period turns between the answer and the reload (the answer is then among what the
    pages count)."""
    client = signed_in_owner(app, token)
    seen = []
    before = snapshot(client)
    voter = None
    for action in ("vote", "vote", "skip"):
        body = api_session(client, {"criterion": "preference"}, token=voter).json
        voter = voter or body["voter_token"]
        for task in body["tasks"]:
            url = f"/api/v1/tasks/{task['task_id']}/{action}"
            done = client.post(url, headers=bearer(voter),
                               json={"choice": "left"} if action == "vote" else None)
            assert done.status_code in (200, 201), done.get_json()
            with app.app_context():
                if hour_later:
                    time_passes()
                else:
                    published.forget()
            after = snapshot(client)
            seen.append((is_gold(app, task["task_id"]), action,
                         {url for url in after if after[url] != before[url]}))
            before = after
    return seen


def is_gold(app, task_id: int) -> bool:
    with app.app_context():
        return db.session.scalar(select(Comparison.is_validation).join(
            Task, Task.comparison_id == Comparison.id).where(Task.id == task_id))


def test_reloading_the_public_pages_tells_no_gold_answer(make_app):
    """Every page that shows figures (the campaign list and page, the leaderboard with and
    without the trusted-voters slice or a date, the public API table, the owner's model
    page), reloaded after each of six answers and three skips, three of them gold, each
    reload taking every figure afresh: no page changes at all within the period."""
    app, token = setup(make_app)
    seen = attack(app, token, hour_later=False)
    assert [gold for gold, _, _ in seen].count(True) == 3  # a gold pair in each session
    assert all(changed == set() for _, _, changed in seen), seen


def test_what_one_answer_an_hour_still_tells(make_app):
    """The control, and the limit: when the period turns between an answer and the reload,
    every ordinary answer moves the campaign list, the API table and the leaderboard page,
    every ordinary skip the campaign's page, and no gold one any of those (the test above fails
    the same way on figures read live). On a campaign nobody else votes on, one answer per
    period is what a patient voter can still classify; with other voters, the period's
    votes of everybody move together."""
    app, token = setup(make_app)
    seen = attack(app, token, hour_later=True)
    assert [gold for gold, _, _ in seen].count(True) == 3
    told = {"vote": ("/campaigns/", "/api/v1/leaderboard?criterion=preference",
                     "/leaderboard?criterion=preference"),
            "skip": (SKIPS,)}
    for gold, action, changed in seen:
        assert all(url in changed for url in told[action]) != gold, seen


def test_a_window_around_ones_own_answer_shows_nothing(make_app):
    """The attack on a single period's figures: note the time just before and after each
    answer, wait for the hour to turn, and ask the leaderboard for the votes of that window
    (or of one's own page language): one vote meant an ordinary answer, none gold. Public
    slices now count whole days, and a slice of fewer than PUBLIC_SLICE_MIN_VOTERS voters
    shows nothing; an analyst (token) still gets the exact window, which is the control."""
    app, _ = setup(make_app)
    client = app.test_client()
    with app.app_context():
        analyst = tokens.create_token("analyst", "analyst")
    body = api_session(client, {"criterion": "preference"}).json
    windows = []
    for task in body["tasks"]:
        t0 = utcnow()
        assert client.post(f"/api/v1/tasks/{task['task_id']}/vote",
                           headers={**bearer(body["voter_token"]), "Accept-Language": "id"},
                           json={"choice": "left"}).status_code == 201
        windows.append((is_gold(app, task["task_id"]), t0, utcnow()))
    with app.app_context():
        shift = time_passes()
    public, exact = set(), []
    for gold, t0, t1 in windows:
        query = (f"criterion=preference&since={(t0 - shift).isoformat()}"
                 f"&until={(t1 - shift).isoformat()}")
        html = client.get(f"/leaderboard?{query}").get_data(as_text=True)
        public.add(VOLATILE.sub("", html))
        assert "fewer than 20 voters in this selection" in html
        counted = client.get(f"/api/v1/leaderboard?{query}&method=bt&bootstrap=0",
                             headers=bearer(analyst)).json["total_votes"]
        exact.append((gold, counted))
    assert len(public) == 1  # every window the same page
    assert [gold for gold, _ in exact].count(True) == 1
    assert all(counted == (0 if gold else 1) for gold, counted in exact), exact
    html = client.get("/leaderboard?criterion=preference&language=id").get_data(as_text=True)
    assert "fewer than 20 voters in this selection" in html
