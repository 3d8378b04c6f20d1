import io
import re
from datetime import timedelta

import pytest
from PIL import Image
from sqlalchemy import func, select

from arena.analysis.leaderboard import rank_models
from arena.extensions import db
from arena.models import Task, Vote, Voter
from tests.factories import make_campaign, time_passes

from .helpers import RoundTrips, csrf_token, task_id
from .helpers import api_session as new_session
from .helpers import bearer as auth


def test_health(client):
    response = client.get("/api/v1/health")
    assert response.status_code == 200 and response.json == {"status": "ok"}


def test_session_shape(client, web_campaign):
    response = new_session(client, {"criterion": "alignment",
                                    "demographics": {"age_group": "18-29", "country": "IN"}})
    assert response.status_code == 201
    body = response.json
    assert set(body) == {"session_id", "voter_id", "voter_token", "criterion", "question",
                         "tasks"}
    assert body["criterion"] == "alignment"
    assert body["question"] == "Which image better reflects the caption above them?"
    assert 1 <= len(body["tasks"]) <= 3
    for task in body["tasks"]:
        assert set(task) == {"task_id", "prompt", "reveal_ms", "left", "right"}
        if task["prompt"] is None:  # a gold pair without a prompt
            continue
        assert task["prompt"].startswith("A red cube")
        assert task["reveal_ms"] == 220 * len(task["prompt"].split())
        for side in ("left", "right"):
            name = rf"t{task['task_id']}{side[0]}-[A-Za-z0-9_-]{{22}}"
            small, large = client.application.config["PRESENT_SIZES"]
            assert re.fullmatch(rf"http://localhost/img/{name}/{small}\.webp",
                                task[side]["url"])
            assert set(task[side]["urls"]) == {str(small), str(large)}
            for size, url in task[side]["urls"].items():  # each served at its size
                assert re.fullmatch(rf"http://localhost/img/{name}/{size}\.webp", url)
                served = client.get(url)
                assert served.status_code == 200
                assert Image.open(io.BytesIO(served.data)).size == (int(size), int(size))


def test_prompt_is_null_outside_alignment(client, web_campaign):
    body = new_session(client, {"criterion": "coherence"}).json
    assert all(t["prompt"] is None for t in body["tasks"])


def test_empty_body_picks_a_criterion(client, web_campaign):
    response = client.post("/api/v1/sessions")
    assert response.status_code == 201
    assert response.json["criterion"] in ("preference", "coherence", "alignment")


def test_vote_accept_duplicate_and_counts(client, web_campaign, app):
    body = new_session(client, {"criterion": "preference"}).json
    token, task_id = body["voter_token"], body["tasks"][0]["task_id"]
    url = f"/api/v1/tasks/{task_id}/vote"
    first = client.post(url, json={"choice": "left", "response_ms": 812}, headers=auth(token))
    assert first.status_code == 201 and first.json["accepted"] is True
    again = client.post(url, json={"choice": "left", "response_ms": 812}, headers=auth(token))
    assert again.status_code == 200
    assert again.json == {"accepted": False, "duplicate": True}
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Vote)) == 1


def test_token_is_stored_hashed(client, web_campaign, app):
    token = new_session(client).json["voter_token"]
    with app.app_context():
        voter = db.session.scalar(select(Voter))
        assert voter.token_hash != token and token not in voter.token_hash


def test_vote_on_someone_elses_task_is_403(client, web_campaign):
    mine = new_session(client).json
    theirs = new_session(client).json
    response = client.post(f"/api/v1/tasks/{theirs['tasks'][0]['task_id']}/vote",
                           json={"choice": "left"}, headers=auth(mine["voter_token"]))
    assert response.status_code == 403 and "error" in response.json


@pytest.mark.parametrize("payload", [None, [], {"choice": "middle"}, {"choice": "left",
                                     "response_ms": "fast"}, {"response_ms": 10}])
def test_malformed_vote_is_400_with_a_message(client, web_campaign, payload):
    body = new_session(client, {"criterion": "preference"}).json
    kwargs = {"data": "not json", "content_type": "application/json"} if payload is None \
        else {"json": payload}
    response = client.post(f"/api/v1/tasks/{body['tasks'][0]['task_id']}/vote",
                           headers=auth(body["voter_token"]), **kwargs)
    assert response.status_code == 400
    assert isinstance(response.json["error"], str) and response.json["error"]


def test_vote_without_or_with_bad_token_is_401(client, web_campaign):
    body = new_session(client).json
    url = f"/api/v1/tasks/{body['tasks'][0]['task_id']}/vote"
    assert client.post(url, json={"choice": "left"}).status_code == 401
    assert client.post(url, json={"choice": "left"}, headers=auth("nope")).status_code == 401


def test_unknown_task_is_404(client, web_campaign):
    token = new_session(client).json["voter_token"]
    for action in ("vote", "read", "skip"):
        response = client.post(f"/api/v1/tasks/424242/{action}", json={"choice": "left"},
                               headers=auth(token))
        assert response.status_code == 404, action
        # the voter comes first: a token nobody holds is refused whatever the task
        assert client.post(f"/api/v1/tasks/424242/{action}", json={"choice": "left"},
                           headers=auth("nope")).status_code == 401, action


def test_returning_voter_keeps_identity(client, web_campaign):
    first = new_session(client).json
    second = new_session(client, {}, token=first["voter_token"])
    assert second.status_code == 201
    assert second.json["voter_id"] == first["voter_id"] and "voter_token" not in second.json
    first_ids = {t["task_id"] for t in first["tasks"]}
    assert first_ids.isdisjoint({t["task_id"] for t in second.json["tasks"]})


@pytest.mark.parametrize("body,status", [
    ({"criterion": "beauty"}, 400),
    ({"demographics": {"age_group": "0-17"}}, 403),
    ({"demographics": {"country": "ZZ"}}, 400),
    ({"demographics": "old"}, 400),
])
def test_bad_session_requests(client, web_campaign, body, status, app):
    response = new_session(client, body)
    assert response.status_code == status and response.json["error"]
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Voter)) == 0


def test_leaderboard_reflects_votes(client, web_campaign, app):
    app.config["VALIDATION_RATE"] = 0.0
    body = new_session(client, {"criterion": "preference"}).json
    for task in body["tasks"]:
        client.post(f"/api/v1/tasks/{task['task_id']}/vote", json={"choice": "left"},
                    headers=auth(body["voter_token"]))
    now = client.get("/api/v1/leaderboard?criterion=preference&method=elo").json
    assert now["models"] == []  # the public table counts the votes of before the hour
    with app.app_context():
        time_passes()
    board = client.get("/api/v1/leaderboard?criterion=preference&method=elo").json
    assert board["criterion"] == "preference"
    models = board["models"]
    # a session's pairs may all leave out one of the three models, which is then not listed
    assert len(models) >= 2
    assert [m["rank"] for m in models] == list(range(1, len(models) + 1))
    # rated models by rating; a model without votes last, whatever its starting rating
    assert models == sorted(models, key=lambda m: (m["votes"] == 0, -m["rating"]))
    # every preference vote moves two models, and Elo conserves the total rating
    assert sum(m["votes"] for m in models) == 2 * len(body["tasks"])
    assert sum(m["rating"] for m in models) == pytest.approx(1000.0 * len(models), abs=1e-3)
    assert models[0]["rating"] > 1000.0
    assert client.get("/api/v1/leaderboard?criterion=x").status_code == 400


def test_the_public_api_shows_what_the_public_page_shows(client, web_campaign, app):
    app.config["VALIDATION_RATE"] = 0.0
    for country in ("DE", "US", "US"):
        body = new_session(client, {"criterion": "preference",
                                    "demographics": {"country": country}}).json
        for task in body["tasks"]:
            client.post(f"/api/v1/tasks/{task['task_id']}/vote", json={"choice": "left"},
                        headers=auth(body["voter_token"]))
    with app.app_context():
        time_passes()
        page = rank_models("preference", intervals="instant", include_idle=False,
                           public=True)
    board = client.get("/api/v1/leaderboard?criterion=preference").json
    assert board["method"] == "bt" and board["live"] is False
    assert board["as_of"] == page.as_of.isoformat()
    assert [(m["model"], m["rank"], m["rank_best"], m["rank_worst"]) for m in board["models"]] \
        == [(m.model, m.rank, m.rank_best, m.rank_worst) for m in page.models]
    assert [m["rating"] for m in board["models"]] == pytest.approx(
        [m.rating for m in page.models])
    # the page's own rule for a slice too thin to publish (one voter's), here as there
    thin = client.get("/api/v1/leaderboard?criterion=preference&continent=EU").json
    assert thin["models"] == [] and "fewer than" in thin["flags"][0]
    # what only an analyst may ask (every vote to the second; its own intervals or method)
    for query in ("live=true", "bootstrap=100", "format=csv", "method=openskill"):
        assert client.get(f"/api/v1/leaderboard?{query}").status_code == 401, query


def test_rate_limit_applies_to_session_creation(make_app):
    app = make_app(RATELIMIT_ENABLED=True, RATE_LIMIT_SESSIONS="2/minute")
    with app.app_context():
        make_campaign()
    client = app.test_client()
    codes = [new_session(client).status_code for _ in range(3)]
    assert codes == [201, 201, 429]
    assert "Too many requests" in new_session(client).json["error"]


def test_api_flow_on_each_database(any_app):
    with any_app.app_context():
        make_campaign()
    any_app.config["VALIDATION_RATE"] = 0.0
    client = any_app.test_client()
    body = new_session(client, {"criterion": "preference",
                                "demographics": {"gender": "other", "country": "AR"}}).json
    token = body["voter_token"]
    for task in body["tasks"]:
        url = f"/api/v1/tasks/{task['task_id']}/vote"
        assert client.post(url, json={"choice": "right", "response_ms": 700},
                           headers=auth(token)).status_code == 201
        assert client.post(url, json={"choice": "right"},
                           headers=auth(token)).json["duplicate"] is True
    with any_app.app_context():
        time_passes()
    board = client.get("/api/v1/leaderboard?criterion=preference").json["models"]
    assert sum(m["votes"] for m in board) == 2 * len(body["tasks"])
    with any_app.app_context():
        voter = db.session.scalar(select(Voter))
        assert (voter.country, voter.continent) == ("AR", "SA")


def _alignment_session(client, app):
    app.config["VALIDATION_RATE"] = 0.0
    body = new_session(client, {"criterion": "alignment"}).json
    return body["voter_token"], body["tasks"][0]


def test_api_vote_on_alignment_needs_the_read_confirmation(client, web_campaign, app):
    token, task = _alignment_session(client, app)
    url = f"/api/v1/tasks/{task['task_id']}"
    refused = client.post(url + "/vote", json={"choice": "left"}, headers=auth(token))
    assert refused.status_code == 409 and "read the caption" in refused.json["error"]
    early = client.post(url + "/read", headers=auth(token))
    assert early.status_code == 409 and 0 < early.json["retry_after_ms"] <= task["reveal_ms"]
    with app.app_context():  # the reveal has run its course on the server's clock
        row = db.session.get(Task, task["task_id"])
        row.shown_at -= timedelta(milliseconds=task["reveal_ms"])
        db.session.commit()
    confirmed = client.post(url + "/read", headers=auth(token))
    assert confirmed.status_code == 200 and confirmed.json == {"read_confirmed": True}
    assert client.post(url + "/vote", json={"choice": "left"},
                       headers=auth(token)).status_code == 201


def test_read_confirmation_errors(client, web_campaign, app):
    token, task = _alignment_session(client, app)
    url = f"/api/v1/tasks/{task['task_id']}/read"
    assert client.post(url).status_code == 401
    other = new_session(client, {"criterion": "alignment"}).json["voter_token"]
    assert client.post(url, headers=auth(other)).status_code == 403
    assert client.post("/api/v1/tasks/999999/read", headers=auth(token)).status_code == 404
    coherence = new_session(client, {"criterion": "coherence"}, token=token).json
    no_caption = client.post(f"/api/v1/tasks/{coherence['tasks'][0]['task_id']}/read",
                             headers=auth(token))
    assert no_caption.status_code == 409 and "no caption" in no_caption.json["error"]


def test_round_trips_per_vote_and_session_on_each_database(any_app):
    """A vote's statement budget: its reads (the voter, the task) in one transaction, its
    writes in one more (on PostgreSQL the voter's turn in one statement, the vote and its
    counters in another; no rating is locked or moved); a session in at most 5. (Four
    prompts: a session of three takes three of them; with fewer, one repeats after another
    pick.)"""
    with any_app.app_context():
        make_campaign(n_prompts=4)
        engine = db.engine
    any_app.config.update(VALIDATION_RATE=0.0, MIN_VOTE_MS={})
    client = any_app.test_client()
    token = new_session(client, {"criterion": "preference"}).json["voter_token"]
    body, chosen = {}, {}
    with RoundTrips(engine) as trips:
        session = trips.measure(lambda: body.update(new_session(
            client, {"criterion": "preference"}, token=token).json))
        votes = [trips.measure(lambda t=task: client.post(
            f"/api/v1/tasks/{t['task_id']}/vote", json={"choice": "left"},
            headers=auth(token))) for task in body["tasks"]]
        # the most a session reads: the criterion chosen for the voter, and a gold pair
        any_app.config.update(VALIDATION_RATE=1.0)
        fullest = trips.measure(
            lambda: chosen.update(new_session(client, {}, token=token).json))
    postgres = engine.dialect.name == "postgresql"
    # ceilings, not pins: a change that saves a statement passes, one that adds fails; two
    # transactions and no rollback a request
    for used in votes:
        # (BEGIN and BEGIN IMMEDIATE are statements on SQLite: the turn, then three writes)
        assert used["statements"] <= (4 if postgres else 8), used
        assert (used["commit"], used["rollback"]) == (2, 0), used
    assert chosen["tasks"]
    if postgres:  # the voter and the pick, then the writes in one statement that returns
        # the tasks as shown. At most: the criterion and a gold pair read besides.
        assert session["statements"] <= 3 and fullest["statements"] <= 5, (session, fullest)
        assert (session["commit"], fullest["commit"], session["rollback"]) == (2, 2, 0)


def test_round_trips_of_the_htmx_voter_flow_on_each_database(any_app):
    """The phone's own flow: the start form issues a session without loading it back, the
    session page and each vote's next card load the session once and mark the open task
    shown in one statement."""
    with any_app.app_context():
        make_campaign(n_prompts=4)  # (a session of three prompts, none repeated)
        engine = db.engine
    any_app.config.update(VALIDATION_RATE=0.0, MIN_VOTE_MS={})
    client = any_app.test_client()
    form = {"csrf_token": csrf_token(client.get("/").text), "criterion": "preference"}
    client.post("/start", data=form)  # (the voter is made)
    replies = {}
    with RoundTrips(engine) as trips:
        start = trips.measure(lambda: replies.update(start=client.post("/start", data=form)))
        page = trips.measure(lambda: replies.update(
            page=client.get(replies["start"].headers["Location"])))
        html, votes = replies["page"].text, []
        while (task := task_id(html)) is not None:
            votes.append(trips.measure(lambda t=task, h=html: replies.update(vote=client.post(
                f"/t/{t}", data={"csrf_token": csrf_token(h), "choice": "left"},
                headers={"HX-Request": "true"}))))
            assert replies["vote"].status_code == 200
            html = replies["vote"].text
        # "Next session" from the end card (htmx): the session issued and its first card,
        # no redirect and no page
        following = trips.measure(lambda h=html: replies.update(following=client.post(
            "/start", data={**form, "csrf_token": csrf_token(h)},
            headers={"HX-Request": "true"})))
    assert "Question 1 of 3" in replies["following"].text
    assert not following["rollback"], following
    assert len(votes) == 3 and "Thank you!" in html
    # each vote: its reads, its write, the card's reads and its open task marked shown
    # (after the last, the end card: nothing to mark)
    assert [used["commit"] for used in votes] == [4, 4, 2], votes
    # ceilings, not pins: a change that saves a statement passes, one that adds fails
    ceiling = ({"start": 3, "page": 3, "vote": 7, "following": 6}
               if engine.dialect.name == "postgresql"  # (BEGINs are statements on SQLite)
               else {"start": 7, "page": 5, "vote": 14, "following": 12})
    used = {"start": start["statements"], "page": page["statements"],
            "vote": max(v["statements"] for v in votes), "following": following["statements"]}
    assert all(used[k] <= ceiling[k] for k in ceiling), (used, ceiling)


def test_image_urls_are_the_routes_urls(app):
    """image_urls builds the route once per request and fills in names and sizes: the same
    URLs url_for gives, on any host, for any name."""
    from flask import url_for

    from arena.catalog.presentation import name_for
    from arena.web.images import image_urls

    for host in ("http://localhost/", "https://arena.example.org:8443/",
                 "http://arena-image-name.example.org/"):
        with app.test_request_context("/", base_url=host):
            for name in (name_for("t", 7, "l"), name_for("h", 10**17), name_for("m", 3, "x12")):
                for external in (False, True):
                    assert image_urls(name, external, sizes=(1024, 384)) == {
                        size: url_for("images.serve", name=name, size=size,
                                      _external=external) for size in (384, 1024)}


def test_the_api_task_is_the_pages_view_cut_to_its_fields(client, web_campaign, app):
    """api_task is built on its own (no translated question to throw away), but says
    nothing the page's view of the same task does not: API_TASK_FIELDS of task_view, and
    of each side its url and urls."""
    from arena.voting import shown
    from arena.web.presenters import API_TASK_FIELDS, api_task, task_view

    body = new_session(client, {"criterion": "alignment"}).json
    with app.test_request_context("/"):
        session = shown.session(body["session_id"])
        for task in session.tasks:
            view = task_view(task, external=True)
            expected = {k: view[k] for k in API_TASK_FIELDS}
            for side in ("left", "right"):
                expected[side] = {"url": view[side]["url"], "urls": view[side]["urls"]}
            assert api_task(task) == expected


def test_a_vote_that_does_not_count_says_why_and_a_held_voter_is_not_told(client, web_campaign,
                                                                           app):
    from arena.analysis import suspects

    app.config.update(VALIDATION_RATE=0.0, MIN_VOTE_MS={"preference": 60_000})
    body = new_session(client, {"criterion": "preference"}).json
    headers = auth(body["voter_token"])
    fast = client.post(f"/api/v1/tasks/{body['tasks'][0]['task_id']}/vote",
                       json={"choice": "left"}, headers=headers).json
    assert fast["counted"] is False and fast["uncounted"] == ["too_fast"]
    app.config["MIN_VOTE_MS"] = {"preference": 0}
    slow = client.post(f"/api/v1/tasks/{body['tasks'][1]['task_id']}/vote",
                       json={"choice": "left"}, headers=headers).json
    assert slow["counted"] is True and slow["uncounted"] == []
    with app.app_context():
        suspects.hold([db.session.scalar(select(Voter.public_id))])
    held = client.post(f"/api/v1/tasks/{body['tasks'][2]['task_id']}/vote",
                       json={"choice": "left"}, headers=headers).json
    assert held["counted"] is True and held["uncounted"] == []  # (the screen's, not told)
    with app.app_context():
        assert db.session.scalar(select(Vote.flags).where(Vote.task_id == body["tasks"][2][
            "task_id"])) != 0


@pytest.mark.parametrize("query, field", [
    ("continent=XX", "continent"), ("age_group=old", "age_group"), ("country=ZZ", "country"),
    ("since=yesterday", "since"), ("language=xx", "language"), ("campaign=nope", "campaign"),
    ("since=2026-02-01&until=2026-01-01", "since")])
def test_a_bad_leaderboard_filter_is_named_with_its_value(client, query, field):
    refused = client.get(f"/api/v1/leaderboard?{query}")
    assert refused.status_code == 400 and refused.json["field"] == field, refused.json
    value = query.split("=")[1].split("&")[0]
    assert value in refused.json["error"] or (field == "since" and "before" in refused.json[
        "error"])
