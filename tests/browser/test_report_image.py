"""Reporting an image on a phone: one tap from the task, the whole form on one screen
(which image, what is wrong, Send), Back to the same question, and the next question with
thanks once sent. Nothing about it is a vote."""

from __future__ import annotations

import os

import pytest
from sqlalchemy import func, select

from arena.extensions import db
from arena.models import ImageReport, Vote
from tests.browser.test_one_viewport import _too_small, _within
from tests.factories import make_campaign


@pytest.mark.parametrize("size", [(360, 640), (430, 932), (640, 360)])
def test_report_an_image_on_a_phone(browser, app, live_server, size):
    app.config.update(VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign(gold=False, n_prompts=3)
    width, height = size
    context = browser.new_context(viewport={"width": width, "height": height},
                                  has_touch=True, is_mobile=True, device_scale_factor=2)
    page = context.new_page()
    errors = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(f"{live_server}/?criterion=coherence")
    page.get_by_role("button", name="Start").tap()
    page.locator("form.task").get_by_text("Question 1 of 3").wait_for()
    page.get_by_role("link", name="Report an image").tap()
    form = page.locator("form.report")
    form.get_by_role("heading", name="Report an image").wait_for()
    problems = []
    for k in range(2):
        problems += _within(page, form.locator("label.choice").nth(k), f"image {k + 1}")
        problems += _too_small(form.locator("label.choice").nth(k), f"image {k + 1}")
    for reason in form.locator(".reasons label").all():
        problems += _within(page, reason, reason.inner_text())
    for name in ("Back", "Send report"):
        control = form.get_by_role("link" if name == "Back" else "button", name=name)
        problems += _within(page, control, name) + _too_small(control, name)
    assert problems == [], problems
    if os.environ.get("ARENA_SCREENSHOTS"):
        page.screenshot(path=f"{os.environ['ARENA_SCREENSHOTS']}/report-{width}x{height}.png")
    form.get_by_role("link", name="Back").tap()  # changed their mind: the same question
    page.locator("form.task").get_by_text("Question 1 of 3").wait_for()
    page.get_by_role("link", name="Report an image").tap()
    form.get_by_role("button", name="Send report").tap()  # nothing chosen: the browser asks
    assert form.evaluate("f => !f.checkValidity()")
    with app.app_context():
        assert db.session.scalar(select(ImageReport)) is None
    form.locator("label.choice").nth(1).tap()
    form.get_by_text("It is offensive or disturbing").tap()
    form.get_by_role("button", name="Send report").tap()
    card = page.locator("form.task")
    card.get_by_text("Question 2 of 3").wait_for()
    assert "the report was sent" in card.locator(".alert").inner_text()
    context.close()
    assert errors == []
    with app.app_context():
        report = db.session.scalar(select(ImageReport))
        assert (report.side, report.reason) == ("right", "offensive")
        assert db.session.scalar(select(func.count()).select_from(Vote)) == 0
