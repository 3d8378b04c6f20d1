import io
import re
import time

import numpy as np
import pytest
from sqlalchemy import func, select

from arena.accounts import tokens
from arena.analysis import published
from arena.campaigns import campaigns, gold
from arena.catalog import images
from arena.extensions import db
from arena.models import Campaign, Comparison, GenModel, Prompt
from tests import timing
from tests.datasets import IMAGES
from tests.factories import (
    COLOURS,
    make_model,
    make_owner,
    make_prompt_set,
    solid,
    time_passes,
)

from .helpers import csrf_token


@pytest.fixture
def operator(app, client):
    with app.app_context():
        token = tokens.create_token("ops", role="operator")
        analyst = tokens.create_token("ana")
        owner, _ = make_owner("o")
        for name in ("A", "B", "C"):
            make_model(name, owner)
    return token, analyst


def sign_in(client, token):
    html = client.get("/admin/").get_data(as_text=True)
    return client.post("/admin/sign-in", data={"csrf_token": csrf_token(html), "token": token})


def test_only_operator_tokens_open_the_admin(client, operator):
    token, analyst = operator
    assert sign_in(client, analyst).status_code == 401
    assert client.post("/admin/campaigns", data={}).status_code in (302, 400)
    assert sign_in(client, token).status_code == 303
    assert "New campaign" in client.get("/admin/").get_data(as_text=True)


def _wait_for_gold(client, app, campaign_id: int, seconds: float = 120) -> str:
    """The operator page once the campaign's gold supply, made in the background after
    publishing, is complete."""
    deadline = time.monotonic() + timing.seconds(seconds)
    while _filling(app, campaign_id):
        assert time.monotonic() < deadline, "the gold supply is still being made"
        time.sleep(0.1)
    return client.get("/admin/").get_data(as_text=True)


def _filling(app, campaign_id: int) -> bool:
    with app.app_context():
        return gold.filling(campaign_id)


def test_publishing_makes_the_gold_supply_in_the_background_with_progress(
        client, operator, app, job_worker):
    """Publishing returns at once; the damaged copies are made by the job worker, not by
    voters' requests, and the operator page counts them until the supply is whole."""
    with app.app_context():  # two models' images of two prompts
        prompt_set = make_prompt_set("gilded", ("a red cube", "a blue ball"))
        for m, name in enumerate(("A", "B")):
            model_id = db.session.scalar(select(GenModel.id).where(GenModel.name == name))
            for prompt in db.session.scalars(select(Prompt).where(
                    Prompt.prompt_set_id == prompt_set.id)):
                for k in range(2):
                    images.store(solid((COLOURS[m][0], 40 * k, prompt.id % 256), 64),
                                 model_id=model_id, prompt_id=prompt.id)
        db.session.commit()
    sign_in(client, operator[0])
    token = csrf_token(client.get("/admin/").get_data(as_text=True))
    client.post("/admin/campaigns", data={
        "csrf_token": token, "name": "Gilded", "prompt_set": "gilded",
        "criteria": ["preference", "alignment"], "models": ["A", "B"],
        "images_per_model": "2", "target_votes": "10"})
    with app.app_context():
        cid = db.session.scalar(select(Campaign.id).where(Campaign.name == "Gilded"))
    app.config["GOLD_INITIAL_DAMAGED"] = 0  # (publishing itself renders none)
    published = client.post(f"/admin/campaigns/{cid}/publish", data={"csrf_token": token},
                            follow_redirects=True).get_data(as_text=True)
    assert "gold pairs are being made in the background" in published
    page = _wait_for_gold(client, app, cid)
    with app.app_context():
        supply = gold.supply(db.session.get(Campaign, cid))
    assert supply["preference"][1] > 0 and all(made == goal for made, goal in supply.values())
    preference, alignment = supply["preference"], supply["alignment"]
    assert (f"preference {preference[0]} of {preference[1]} · "
            f"alignment {alignment[0]} of {alignment[1]}") in page
    assert "being made" not in page


def test_define_publish_add_model_and_gold_pair_on_the_web(client, operator, app, job_worker):
    sign_in(client, operator[0])
    html = client.get("/admin/").get_data(as_text=True)
    token = csrf_token(html)
    created = client.post("/admin/campaigns", data={
        "csrf_token": token, "name": "Spring", "prompt_set": "DrawBench",
        "criteria": ["preference", "alignment"], "models": ["A", "B"],
        "images_per_model": "2", "target_votes": "10", "allocation": "active",
        "early_stop": "1"})
    # post, redirect, get: a reload shows the page, it does not send the form again
    assert created.status_code == 303 and created.headers["Location"].endswith("/admin/")
    assert "Created Spring" in client.get("/admin/").get_data(as_text=True)
    with app.app_context():
        spring = db.session.scalar(select(Campaign).where(Campaign.name == "Spring"))
        assert (spring.allocation, spring.early_stop) == ("active", True)
    greedy = client.post("/admin/campaigns", data={
        "csrf_token": token, "name": "Greedy", "prompt_set": "DrawBench", "models": ["A"],
        "allocation": "greedy"})
    assert greedy.status_code == 400
    assert "allocation must be one of balanced, active" in greedy.get_data(as_text=True)
    assert "Created Spring" not in client.get("/admin/").get_data(as_text=True)
    bad = client.post("/admin/campaigns", data={"csrf_token": token, "name": "Spring",
                                                "prompt_set": "DrawBench", "models": ["A"]})
    assert bad.status_code == 409 and "exists already" in bad.get_data(as_text=True)
    with app.app_context():
        campaign = db.session.scalar(select(Campaign))
        assert campaign.criteria_list == ["preference", "alignment"]
        cid = campaign.id
    assert "Published Spring" in client.post(f"/admin/campaigns/{cid}/publish",
                                             data={"csrf_token": token},
                                             follow_redirects=True).get_data(as_text=True)
    _wait_for_gold(client, app, cid)
    joined = client.post(f"/admin/campaigns/{cid}/models", data={"csrf_token": token,
                                                                  "model": "C"},
                         follow_redirects=True)
    assert "Model joined Spring" in joined.get_data(as_text=True)
    gold = client.post(f"/admin/campaigns/{cid}/gold", content_type="multipart/form-data",
                       data={"csrf_token": token, "criterion": "preference",
                             "correct": (io.BytesIO((IMAGES / "ok.png").read_bytes()), "g.png"),
                             "wrong": (io.BytesIO((IMAGES / "ok.jpg").read_bytes()), "w.jpg")},
                       follow_redirects=True)
    assert "Gold pair" in gold.get_data(as_text=True)
    junk = client.post(f"/admin/campaigns/{cid}/gold", content_type="multipart/form-data",
                       data={"csrf_token": token, "criterion": "preference",
                             "correct": (io.BytesIO(b"nope"), "g.png"),
                             "wrong": (io.BytesIO((IMAGES / "ok.jpg").read_bytes()), "w.jpg")})
    assert junk.status_code == 422 and "not a readable image" in junk.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Comparison).where(
            Comparison.is_validation)) == 1


def test_progress_pages(client, operator, app):
    """Drafts are the operators' (they used to show on the public list): the public
    list and pages show a campaign once it is published."""
    with app.app_context():
        draft = campaigns.create_campaign("Draft one", "DrawBench", ["A", "B"])
        campaigns.create_campaign("Live one", "DrawBench", ["A", "B"], ["preference"])
        campaigns.publish(campaigns.get_campaign("Live one"), np.random.default_rng(0))
        assert draft.published_at is None
    listing = client.get("/campaigns/").get_data(as_text=True)
    assert "Live one" in listing and "Draft one" not in listing
    assert client.get("/campaigns/Draft one").status_code == 404
    page = client.get("/campaigns/Live one").get_data(as_text=True)
    assert "of" in page and "votes" in page
    assert client.get("/campaigns/none").status_code == 404


def test_demo_campaign_page_shows_votes_rate_and_demographics(client, app, runner):
    result = runner.invoke(args=["demo", "--prompts", "2", "--images", "1", "--votes", "40"])
    assert result.exit_code == 0, result.output
    page = client.get("/campaigns/Demo: DrawBench").get_data(as_text=True)
    assert "votes per hour" in page and "hours to completion" in page
    assert 'aria-label="Voters by continent"' in page
    assert "Aurora-XL vs Brisk-2" in page
    assert "Tasks closed without a vote (\"Can't decide\" or an image report): 0." in page
    app.config["VALIDATION_RATE"] = 0.0  # gold pairs are not the campaign's comparisons
    body = client.post("/api/v1/sessions", json={"criterion": "coherence"}).json
    headers = {"Authorization": f"Bearer {body['voter_token']}"}
    for task in body["tasks"]:
        assert client.post(f"/api/v1/tasks/{task['task_id']}/skip", headers=headers).json
    page = client.get("/campaigns/Demo: DrawBench").get_data(as_text=True)
    assert "Tasks closed without a vote (\"Can't decide\" or an image report): 0." in page
    assert "Votes, skips and reports up to" in page  # (arena.analysis.published)
    with app.app_context():
        time_passes()  # the next hour
    page = client.get("/campaigns/Demo: DrawBench").get_data(as_text=True)
    skipped = len(body["tasks"])
    assert f"Tasks closed without a vote (\"Can't decide\" or an image report): {skipped}." in page
    status = runner.invoke(args=["campaign", "status", "Demo: DrawBench"])
    assert "votes/hour" in status.output and "gold pairs passed by" in status.output
    assert f"{skipped} skipped" in status.output


def test_campaign_list_costs_the_same_queries_however_many_campaigns(client, operator, app):
    """The list page used to run ~14 queries per campaign for two totals; now a fixed few."""
    from sqlalchemy import event

    def statements_for_listing() -> int:
        with app.app_context():
            engine = db.engine
        seen = []

        def count(*_args):
            seen.append(1)

        event.listen(engine, "before_cursor_execute", count)
        try:
            assert client.get("/campaigns/").status_code == 200
        finally:
            event.remove(engine, "before_cursor_execute", count)
        return len(seen)

    def taking_and_reading() -> tuple[int, int]:
        """Statements of the period's first listing (it takes the figures) and of the next."""
        with app.app_context():
            published.forget()
        return statements_for_listing(), statements_for_listing()

    with app.app_context():
        campaigns.publish(campaigns.create_campaign("One", "DrawBench", ["A", "B"]))
    few = taking_and_reading()
    with app.app_context():
        for name in ("Two", "Three", "Four", "Five"):
            campaigns.publish(campaigns.create_campaign(name, "DrawBench", ["A", "C"]))
    assert taking_and_reading() == few
    assert few[1] <= 4 and few[0] <= 10, few  # (the figures read: one statement more)


def test_reported_images_queue_restore_remove_and_csv(client, operator, app):
    """A paused image is listed first with its reasons and the image as the voter saw it;
    Restore sends its pairs back to voters, Remove keeps them out; the CSV keeps the
    record."""
    from arena.voting import image_reports
    from tests.factories import make_campaign, start

    app.config.update(REPORTS_TO_PAUSE=1, VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign(gold=False)
        voter, session = start()
        first, second = session.tasks[0], session.tasks[1]
        reported = first.left_image_id
        image_reports.report(voter, first.id, "left", "offensive")
        # (a second image: a voter reports an image once, and pairs share images)
        other = "right" if second.left_image_id == reported else "left"
        image_reports.report(voter, second.id, other, "broken")
    sign_in(client, operator[0])
    html = client.get("/admin/").get_data(as_text=True)
    assert "Reported images" in html and "It is offensive or disturbing: 1" in html
    assert html.count("<strong>paused</strong>") == 2
    image = re.search(r'<img src="(/img/[^"]+)" alt="Reported image', html).group(1)
    assert client.get(image).status_code == 200  # the operator sees the reported bytes
    restored = client.post(f"/admin/reports/{reported}", data={
        "csrf_token": csrf_token(html), "resolution": "restored"})
    assert restored.status_code == 303
    html = client.get("/admin/").get_data(as_text=True)
    assert f"Image {reported} restored" in html and html.count("<strong>paused</strong>") == 1
    again = client.post(f"/admin/reports/{reported}", data={
        "csrf_token": csrf_token(html), "resolution": "removed"})
    assert again.status_code == 404 and "no open report" in again.get_data(as_text=True)
    exported = client.get("/admin/reports.csv")
    lines = exported.get_data(as_text=True).splitlines()
    assert exported.mimetype == "text/csv" and len(lines) == 3
    assert lines[0].startswith("id,image_id,model_id,reason,side")
    client.post("/admin/sign-out", data={"csrf_token": csrf_token(html)})
    assert client.get("/admin/reports.csv").status_code == 302  # operators only
