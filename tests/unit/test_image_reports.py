"""Image reports: a report closes the task without a vote, enough voters pause the image
(issued to nobody, in no new comparison), and an operator restores or removes it."""

import pytest
from sqlalchemy import func, select

from arena.campaigns import comparisons
from arena.errors import NotFound
from arena.extensions import db
from arena.models import Comparison, Image, ImageReport, Task, Vote
from arena.voting import image_reports, matchmaking
from arena.voting.image_reports import InvalidReport
from tests.factories import new_voter, start


def _report_left(criterion="preference", reason="broken", image_id=None):
    """A new voter who reports the left image of the first task showing ``image_id`` (any
    task when None); returns (voter, task, result)."""
    voter, session = start(criterion=criterion, validation_rate=0.0)
    for _ in range(30):
        for task in session.tasks:
            if image_id is None or image_id in (task.left_image_id, task.right_image_id):
                side = "left" if image_id in (None, task.left_image_id) else "right"
                return voter, task, image_reports.report(voter, task.id, side, reason)
        _, session = start(voter, criterion=criterion)
    raise AssertionError(f"image {image_id} never shown")


def test_a_report_closes_the_task_without_a_vote(campaign):
    _, task, result = _report_left()
    assert result == image_reports.Reported(recorded=True, paused=False)
    task = db.session.get(Task, task.id)
    assert task.answered_at is not None and task.skipped_at is not None
    assert db.session.scalar(select(func.count()).select_from(Vote)) == 0
    report = db.session.scalar(select(ImageReport))
    assert (report.image_id, report.side, report.reason) == (task.left_image_id, "left",
                                                             "broken")


def test_bad_side_or_reason_is_refused_and_nothing_is_written(campaign):
    voter, session = start(validation_rate=0.0)
    task_id = session.tasks[0].id
    with pytest.raises(InvalidReport):
        image_reports.report(voter, task_id, "middle", "broken")
    with pytest.raises(InvalidReport):
        image_reports.report(voter, task_id, "left", "boring")
    assert db.session.get(Task, task_id).answered_at is None
    assert db.session.scalar(select(func.count()).select_from(ImageReport)) == 0


def test_three_voters_pause_an_image_and_its_comparisons(app, campaign):
    _, task, _ = _report_left()
    image_id = task.left_image_id
    results = [_report_left(image_id=image_id)[2] for _ in range(2)]
    assert [r.paused for r in results] == [False, True]
    assert db.session.get(Image, image_id).paused_at is not None
    with_image = (Comparison.image_a_id == image_id) | (Comparison.image_b_id == image_id)
    paused = db.session.scalars(select(Comparison.paused).where(with_image)).all()
    assert paused and all(paused)
    assert not any(db.session.scalars(select(Comparison.paused).where(~with_image)))
    # nobody gets a task with it any more, however many sessions they open
    fresh = new_voter()
    for seed in range(15):
        try:
            _, session = start(fresh, criterion="preference", seed=seed)
        except matchmaking.NoTasksAvailable:
            break
        for t in session.tasks:
            assert image_id not in (t.left_image_id, t.right_image_id)


def test_an_operator_restores_or_removes_a_reported_image(app, campaign):
    app.config["REPORTS_TO_PAUSE"] = 1
    _, task, result = _report_left()
    image_id = task.left_image_id
    assert result.paused
    assert image_reports.queue()[0].image_id == image_id
    assert image_reports.resolve(image_id, "restored") == 1
    assert db.session.get(Image, image_id).paused_at is None
    assert not any(db.session.scalars(select(Comparison.paused)))
    assert image_reports.queue() == []
    with pytest.raises(NotFound):  # nothing open about it any more
        image_reports.resolve(image_id, "removed")
    # reported again (by someone else), then removed: paused for good, and comparisons
    # built later (a panel's pool) leave it out
    _report_left(image_id=image_id)
    assert image_reports.resolve(image_id, "removed") == 1
    assert db.session.get(Image, image_id).paused_at is not None
    prompt_ids = list(db.session.scalars(select(Image.prompt_id).distinct()))
    assert comparisons.build_comparisons(prompt_ids, pool=7) > 0
    with_image = (Comparison.image_a_id == image_id) | (Comparison.image_b_id == image_id)
    assert all(db.session.scalars(select(Comparison.paused).where(with_image)))
    assert not db.session.scalars(select(Comparison).where(with_image,
                                                           Comparison.pool == 7)).all()
    with pytest.raises(InvalidReport):
        image_reports.resolve(image_id, "ignored")


def test_reports_are_listed_for_the_record(app, campaign):
    _report_left(reason="offensive")
    rows = image_reports.report_rows()
    assert [(r["reason"], r["resolution"]) for r in rows] == [("offensive", None)]
    assert set(rows[0]) >= {"image_id", "model_id", "voter", "created_at"}
