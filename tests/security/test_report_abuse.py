"""Attacks on image reports: a competitor who wants another model's image out of the arena
(reports pause an image). One person cannot do it alone, whatever they send, and voters
whose trust is spent do not count."""

from __future__ import annotations

from sqlalchemy import select

from arena.extensions import db
from arena.models import Image, ImageReport, Task, Voter
from tests.factories import make_campaign
from tests.web.helpers import api_session, bearer


def _report(client, token, task_id, side="left", reason="offensive"):
    return client.post(f"/api/v1/tasks/{task_id}/report", headers=bearer(token),
                       json={"side": side, "reason": reason})


def _more_tasks(client, token, sessions=12) -> list[int]:
    """The task ids of up to ``sessions`` more sessions of this voter."""
    found = []
    for _ in range(sessions):
        response = api_session(client, {"criterion": "preference"}, token=token)
        if response.status_code != 201:
            break
        found += [task["task_id"] for task in response.json["tasks"]]
    return found


def test_one_voter_reporting_again_and_again_pauses_nothing(make_app):
    app = make_app(VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign(gold=False)
    client = app.test_client()
    body = api_session(client, {"criterion": "preference"}).json
    token = body["voter_token"]
    task_ids = [t["task_id"] for t in body["tasks"]]
    task_ids += _more_tasks(client, token)
    for task_id in task_ids:  # every task, both sides, twice
        for side in ("left", "right"):
            assert _report(client, token, task_id, side).status_code == 201
            assert _report(client, token, task_id, side).status_code == 201
    with app.app_context():
        reported = db.session.scalars(select(ImageReport.image_id)).all()
        assert len(reported) == len(set(reported)) > 10  # once per image, however often sent
        assert db.session.scalar(select(Image).where(Image.paused_at.is_not(None))) is None


def test_nobody_reports_a_task_that_is_not_theirs(make_app):
    app = make_app(VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign(gold=False)
    client = app.test_client()
    victim = api_session(client, {"criterion": "preference"}).json
    attacker = api_session(client, {"criterion": "preference"}).json["voter_token"]
    for task in victim["tasks"]:
        assert _report(client, attacker, task["task_id"]).status_code == 403
    assert _report(client, attacker, 10**9).status_code == 404
    assert _report(client, None, victim["tasks"][0]["task_id"]).status_code == 401
    bad = _report(client, victim["voter_token"], victim["tasks"][0]["task_id"], side="up")
    assert bad.status_code == 400 and bad.json["field"] == "side"
    with app.app_context():
        assert db.session.scalar(select(ImageReport)) is None


def test_voters_whose_trust_is_spent_do_not_pause_an_image(make_app):
    """Many throwaway identities that failed their gold pairs report the same image: it
    stays; three voters in good standing pause it."""
    app = make_app(VALIDATION_RATE=0.0, REPORTS_TO_PAUSE=3)
    with app.app_context():
        make_campaign(gold=False, n_prompts=1, n_models=2, images_per_model=1)
        target = db.session.scalar(select(Image.id).order_by(Image.id))
    client = app.test_client()

    def reporter(trust: float) -> None:
        body = api_session(client, {"criterion": "preference"}).json
        task_id = body["tasks"][0]["task_id"]  # (the campaign's one pair, either way round)
        with app.app_context():
            voter = db.session.scalar(select(Voter).where(
                Voter.public_id == body["voter_id"]))
            voter.trust = trust
            side = "left" if db.session.get(Task, task_id).left_image_id == target else "right"
            db.session.commit()
        assert _report(client, body["voter_token"], task_id, side=side).status_code == 201

    def paused() -> list:
        with app.app_context():
            return db.session.scalars(select(Image.id).where(
                Image.paused_at.is_not(None))).all()

    for _ in range(6):
        reporter(trust=0.5)
    assert paused() == []
    for _ in range(3):
        reporter(trust=1.0)
    assert paused() == [target]
