"""A campaign run on a paid panel: only its participants vote on it, each participant is one
identity whatever the browser, and they leave with the completion code."""

from __future__ import annotations

import json
import re

import altcha
import numpy as np
import pytest
from sqlalchemy import func, select, update

from arena.campaigns import campaigns, panels
from arena.catalog import ingest
from arena.extensions import db
from arena.models import Comparison, Prompt, Task, Vote, Voter, VotingSession
from tests.factories import make_model, make_owner, make_prompt_set
from tests.web.helpers import api_session, confirm_read_if_asked, csrf_token, task_id


def png(rng) -> bytes:
    import io

    from PIL import Image as PILImage

    buf = io.BytesIO()
    PILImage.fromarray(rng.integers(0, 255, (24, 24, 3)).astype("uint8")).save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture
def two_campaigns(app):
    """An open campaign and one run on a panel, on different models and prompts."""
    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    rng = np.random.default_rng(0)
    with app.app_context():
        make_prompt_set("open-set", ["an open prompt", "another open prompt"])
        make_prompt_set("panel-set", ["a panel prompt", "another panel prompt"])
        owner, _ = make_owner()
        for set_name, models in (("open-set", ("O1", "O2")), ("panel-set", ("P1", "P2"))):
            prompts = db.session.scalars(select(Prompt.id).join(Prompt.prompt_set).where(
                Prompt.prompt_set.has(name=set_name))).all()
            for name in models:
                model = make_model(name, owner)
                for k in range(4):
                    assert ingest.ingest_image(model, prompts[k % 2], png(rng), f"{k}.png").ok
        campaigns.publish(campaigns.create_campaign("Open", "open-set", ["O1", "O2"]))
        study = campaigns.create_campaign("Study", "panel-set", ["P1", "P2"])
        campaigns.publish(study)
        key = panels.open_panel(study, "C0DE42", tasks=4,
                                return_url="https://app.prolific.com/submissions/complete"
                                           "?cc={code}")
        return key, study.id


def join(app, key, pid="5f00c0ffee", **extra):
    client = app.test_client()
    query = {"PROLIFIC_PID": pid, "STUDY_ID": "s1", "SESSION_ID": "x9", **extra}
    return client, client.get(f"/join/{key}", query_string=query)


def vote_through(client, n: int) -> str:
    """Answer ``n`` tasks as a participant on the voter pages; returns the last page."""
    html = client.get("/").get_data(as_text=True)
    location = client.post("/start", data={"csrf_token": csrf_token(html)}).headers["Location"]
    html = client.get(location).get_data(as_text=True)
    for _ in range(n):
        if task_id(html) is None:
            html = client.post("/start", data={"csrf_token": csrf_token(html)})
            if html.status_code == 303:
                html = client.get(html.headers["Location"])
            html = html.get_data(as_text=True)
            if task_id(html) is None:
                return html
        html = confirm_read_if_asked(client, html)
        response = client.post(f"/t/{task_id(html)}", data={"csrf_token": csrf_token(html),
                                                            "choice": "left"})
        html = client.get(response.headers["Location"]).get_data(as_text=True)
    return html


def test_participants_vote_on_their_study_alone_and_get_the_code(app, two_campaigns):
    key, study_id = two_campaigns
    client, landing = join(app, key)
    assert landing.status_code == 303
    html = vote_through(client, 4)
    assert "C0DE42" in html and "you are done" in html.lower()
    assert "https://app.prolific.com/submissions/complete?cc=C0DE42" in html
    with app.app_context():
        voter = db.session.scalar(select(Voter).where(Voter.pool == study_id))
        served = db.session.scalars(select(Comparison.campaign_id).join(
            Task, Task.comparison_id == Comparison.id).where(Task.voter_id == voter.id))
        assert set(served) == {study_id}
        # the participant id is kept only as a keyed hash
        assert voter.panel_key and "5f00c0ffee" not in voter.panel_key
        for table in db.metadata.sorted_tables:
            for row in db.session.execute(table.select()):
                assert "5f00c0ffee" not in " ".join(map(str, row))
    # starting again after the code shows the code, not more work
    html = client.get("/").get_data(as_text=True)
    again = client.post("/start", data={"csrf_token": csrf_token(html)})
    assert "C0DE42" in again.get_data(as_text=True)


def test_the_htmx_pages_give_the_code_and_put_no_more_work_on_screen(app, two_campaigns):
    """The phone's own flow (each vote and confirmation answered with the next card): the
    code comes with the vote that earns it, and the task after it is never stamped shown,
    so nothing counts as put in front of a participant who is done."""
    key, study_id = two_campaigns
    client, _ = join(app, key)
    htmx = {"HX-Request": "true"}
    html = client.get("/").get_data(as_text=True)
    location = client.post("/start", data={"csrf_token": csrf_token(html)}).headers["Location"]
    html = client.get(location).get_data(as_text=True)
    for _ in range(4):
        if task_id(html) is None:  # (the session is done: "Next session", as htmx posts it)
            html = client.post("/start", headers=htmx,
                               data={"csrf_token": csrf_token(html)}).get_data(as_text=True)
        html = confirm_read_if_asked(client, html, **htmx)
        html = client.post(f"/t/{task_id(html)}", headers=htmx, data={
            "csrf_token": csrf_token(html), "choice": "left"}).get_data(as_text=True)
    assert "C0DE42" in html and task_id(html) is None
    with app.app_context():
        voter = db.session.scalar(select(Voter).where(Voter.pool == study_id))
        waiting_on_screen = db.session.scalar(select(func.count()).select_from(Task).where(
            Task.voter_id == voter.id, Task.answered_at.is_(None), Task.shown_at.is_not(None)))
        assert db.session.scalar(select(func.count()).select_from(Task).where(
            Task.voter_id == voter.id, Task.answered_at.is_(None))) > 0  # (work was left)
        assert waiting_on_screen == 0
    # "Next session" after the code gives the code again, as a card, and no session
    token = csrf_token(client.get("/").get_data(as_text=True))
    again = client.post("/start", headers=htmx, data={"csrf_token": token})
    assert "C0DE42" in again.get_data(as_text=True) and "<html" not in again.get_data(as_text=True)
    assert "HX-Push-Url" not in again.headers


def test_the_open_crowd_never_gets_the_studys_pairs(app, two_campaigns):
    _, study_id = two_campaigns
    client = app.test_client()
    for _ in range(6):
        body = api_session(client).json
        with app.app_context():
            ids = [t["task_id"] for t in body["tasks"]]
            pools = db.session.scalars(select(Comparison.campaign_id).join(
                Task, Task.comparison_id == Comparison.id).where(Task.id.in_(ids)))
            assert study_id not in set(pools)


def test_one_participant_is_one_identity_whatever_the_browser(app, two_campaigns):
    """Clearing cookies or switching phones gives no second identity, no second code."""
    key, study_id = two_campaigns
    first, _ = join(app, key)
    vote_through(first, 2)
    second, _ = join(app, key)  # the same PROLIFIC_PID in a fresh browser
    vote_through(second, 2)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Voter).where(
            Voter.pool == study_id)) == 1
        assert db.session.scalar(select(func.count()).select_from(Task).where(
            Task.answered_at.is_not(None))) == 4
    join(app, key, pid="another-person")
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Voter).where(
            Voter.pool == study_id)) == 2


@pytest.mark.parametrize("query,status,message", [
    ({"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "h"}, 409, "Accept the task"),
    ({"STUDY_ID": "s1"}, 400, "participant id"),
    ({"PROLIFIC_PID": "<script>"}, 400, "not valid"),
])
def test_links_without_a_participant_admit_nobody(app, two_campaigns, query, status,
                                                  message):
    key, _ = two_campaigns
    response = app.test_client().get(f"/join/{key}", query_string=query)
    assert response.status_code == status and message in response.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Voter)) == 0


def test_a_wrong_or_closed_link_is_not_found(app, two_campaigns, runner):
    key, _ = two_campaigns
    assert app.test_client().get("/join/not-the-key?PROLIFIC_PID=a").status_code == 404
    assert runner.invoke(args=["campaign", "panel", "Study", "--close"]).exit_code == 0
    assert app.test_client().get(f"/join/{key}?PROLIFIC_PID=a").status_code == 404


def test_the_operator_opens_a_panel_from_the_command_line(app, two_campaigns, runner):
    result = runner.invoke(args=["campaign", "panel", "Open", "--platform", "mturk",
                                 "--code", "XYZ", "--tasks", "10",
                                 "--base-url", "https://arena.example"])
    assert result.exit_code == 0, result.output
    link = result.output.strip().splitlines()[-1]
    assert re.fullmatch(r"https://arena\.example/join/[A-Za-z0-9_-]+", link)
    prolific = runner.invoke(args=["campaign", "panel", "Open", "--code", "XYZ",
                                   "--base-url", "https://arena.example"])
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in prolific.output
    bad = runner.invoke(args=["campaign", "panel", "Open", "--code", ""])
    assert bad.exit_code == 1 and "completion code" in bad.output


def test_skipping_does_not_earn_the_completion_code(app, two_campaigns):
    """"Can't decide" closes a task without a vote. A participant who skipped everything
    would otherwise walk to the completion code (and the payment) without judging a pair."""
    key, _ = two_campaigns
    client, _ = join(app, key)
    html = client.get("/").get_data(as_text=True)
    location = client.post("/start", data={"csrf_token": csrf_token(html)}).headers["Location"]
    html = client.get(location).get_data(as_text=True)
    skipped = 0
    while task_id(html) is not None and skipped < 4:
        response = client.post(f"/t/{task_id(html)}/skip", data={"csrf_token": csrf_token(html)})
        assert response.status_code == 303
        html = client.get(response.headers["Location"]).get_data(as_text=True)
        skipped += 1
    assert skipped >= 2 and "C0DE42" not in html
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Vote)) == 0


def test_next_session_reads_a_participants_standing_after_issuing(app, two_campaigns,
                                                                   monkeypatch):
    """A participant whose last answer lands (another tab) while "Next session" issues
    theirs gets the code, not a task stamped shown: their card is read after the write, as
    the page's own load read it before "Next session" came in place."""
    from arena.web import voter as voter_pages

    key, study_id = two_campaigns
    client, _ = join(app, key)
    htmx = {"HX-Request": "true"}
    html = vote_through(client, 3)  # one answer short of the code
    client.post("/start", data={"csrf_token": csrf_token(html)})  # another tab's session
    real = voter_pages.matchmaking.issue_session

    def answered_meanwhile(voter, rng, criterion=None, **kwargs):
        public_id = real(voter, rng, criterion, **kwargs)
        issued = db.session.scalar(select(VotingSession.id).where(
            VotingSession.public_id == public_id))
        db.session.execute(update(Task).where(  # the other tab's answers come in
            Task.voter_id == voter.id, Task.session_id != issued,
            Task.answered_at.is_(None)).values(answered_at=func.now()))
        db.session.commit()
        return public_id

    monkeypatch.setattr(voter_pages.matchmaking, "issue_session", answered_meanwhile)
    body = client.post("/start", headers=htmx, data={"csrf_token": csrf_token(html)}).text
    assert "C0DE42" in body and task_id(body) is None
    with app.app_context():
        voter = db.session.scalar(select(Voter).where(Voter.pool == study_id))
        assert db.session.scalar(select(func.count()).select_from(Task).where(
            Task.voter_id == voter.id, Task.answered_at.is_(None),
            Task.shown_at.is_not(None))) == 0


def test_a_join_link_draws_on_the_networks_one_identity_budget(two_campaigns, app):
    """The join link had its own bucket: a /24 that had spent its new identities on the
    voter pages made as many again as panel participants with made-up ids. A new
    participant now costs the same budget; a participant coming back does not."""
    key, _ = two_campaigns
    app.config.update(RATELIMIT_ENABLED=True, RATE_LIMIT_NEW_VOTERS="3/hour")

    def client_from(k: int):
        client = app.test_client()
        client.environ_base["REMOTE_ADDR"] = f"203.0.113.{k}"
        return client

    first = client_from(1).get(f"/join/{key}", query_string={"PROLIFIC_PID": "returning"})
    assert first.status_code == 303
    codes = []
    for k in range(2, 4):  # the voter page's budget is the same one
        browser = client_from(k)
        token = csrf_token(browser.get("/").get_data(as_text=True))
        codes.append(browser.post("/start", data={"csrf_token": token}).status_code)
    for k in range(4, 7):  # made-up participant ids from the same /24, a browser each
        codes.append(client_from(k).get(f"/join/{key}", query_string={
            "PROLIFIC_PID": f"made-up-{k}"}).status_code)
    assert codes == [303, 303, 429, 429, 429]
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Voter)) == 3
    # the participant who joined before comes back, from the same busy network
    back = client_from(9).get(f"/join/{key}", query_string={"PROLIFIC_PID": "returning"})
    assert back.status_code == 303
    # a browser already holding a voter gets no free panel identities either
    holder = client_from(1)
    holder.get(f"/join/{key}", query_string={"PROLIFIC_PID": "returning"})
    assert holder.get(f"/join/{key}", query_string={
        "PROLIFIC_PID": "someone-new"}).status_code == 429


def test_a_panel_participant_from_a_busy_network_goes_on_by_proving_work(two_campaigns, app):
    """A study run from one lab's network: past the network's budget, the join link's
    refusal offers the proof of work with the participant's link kept; answered, they are
    admitted as the participant their id names."""
    key, _ = two_campaigns
    app.config.update(RATELIMIT_ENABLED=True, RATE_LIMIT_NEW_VOTERS="1/hour",
                      NEW_VOTER_PROOF=True)
    assert join(app, key, pid="first")[1].status_code == 303
    client, refused = join(app, key, pid="second")
    assert refused.status_code == 429
    page = refused.get_data(as_text=True)
    assert 'method="get"' in page and 'name="PROLIFIC_PID" value="second"' in page
    start = page.index('data-proof="') + len('data-proof="')
    made = altcha.Challenge.from_dict(json.loads(
        page[start:page.index('"', start)].replace("&#34;", '"')))
    answer = altcha.Payload(made, altcha.solve_challenge(made)).to_base64()
    admitted = client.get(f"/join/{key}", query_string={
        "PROLIFIC_PID": "second", "STUDY_ID": "s1", "SESSION_ID": "x9", "arena_proof": answer})
    assert admitted.status_code == 303
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Voter)
                                 .where(Voter.panel_key.is_not(None))) == 2
