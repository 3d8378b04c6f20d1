"""A voter over a rate limit on a phone, in real Chromium: the card says so and offers the
way back, in place of the voting card, not a page inside the page."""

from playwright.sync_api import expect
from sqlalchemy import delete

from arena.extensions import db
from arena.models import Comparison
from tests.factories import make_campaign
from tests.timing import seconds

from .conftest import PHONE
from .test_voting_session import answer_task


def test_a_vote_over_the_limit_shows_a_card_in_place(app, live_server, browser, tmp_path):
    app.config.update(VALIDATION_RATE=0.0, MIN_VOTE_MS={}, RATELIMIT_ENABLED=True,
                      RATE_LIMIT_VOTES="1/hour")
    with app.app_context():
        make_campaign(gold=False)
        db.session.execute(delete(Comparison).where(Comparison.criterion != "preference"))
        db.session.commit()
    context = browser.new_context(**PHONE)
    phone = context.new_page()
    problems = []  # (the phone fixture's check, but the refused vote is expected here)
    phone.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
    phone.on("pageerror", lambda exc: problems.append(str(exc)))
    phone.goto(live_server + "/")
    phone.get_by_role("button", name="Start").tap()
    phone.wait_for_url("**/s/*")
    answer_task(phone, 1, "left")
    answer_task(phone, 2, "right")
    expect(phone.get_by_role("heading", name="Too many requests")).to_be_visible()
    phone.screenshot(path=str(tmp_path / "rate-limited.png"), full_page=True)
    # one page: one header, one main, the card where the voting card was
    assert phone.locator("header").count() == 1 and phone.locator("main").count() == 1
    assert phone.locator("form.task").count() == 0
    phone.get_by_role("link", name="Back to the start").tap()
    phone.wait_for_url(live_server + "/")
    context.close()
    assert len(problems) == 1 and "status of 429" in problems[0], problems


def test_a_newcomer_from_a_busy_network_goes_on_by_proving_work(app, live_server, browser,
                                                                 tmp_path):
    """The network's new-identity budget spent (one, here), the operator's proof of work on:
    the refusal page offers to go on without waiting; the phone answers the challenge in
    this page's JavaScript and the voter's first card follows, their answers kept."""
    app.config.update(VALIDATION_RATE=0.0, RATELIMIT_ENABLED=True, NEW_VOTER_PROOF=True,
                      RATE_LIMIT_NEW_VOTERS="1/hour")
    with app.app_context():
        make_campaign(gold=False)
    first = browser.new_context(**PHONE)
    page = first.new_page()
    page.goto(live_server + "/")
    page.get_by_role("button", name="Start").tap()
    page.wait_for_url("**/s/*")
    first.close()

    context = browser.new_context(**PHONE)
    phone = context.new_page()
    problems = []
    phone.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
    phone.on("pageerror", lambda exc: problems.append(str(exc)))
    phone.goto(live_server + "/")
    phone.get_by_role("button", name="Start").tap()
    expect(phone.get_by_role("heading", name="Too many requests")).to_be_visible()
    phone.screenshot(path=str(tmp_path / "busy-network.png"), full_page=True)
    phone.get_by_role("button", name="Go on without waiting").tap()
    phone.wait_for_url("**/s/*", timeout=seconds(60_000))
    expect(phone.locator("form.task")).to_be_visible()
    context.close()
    assert len(problems) == 1 and "status of 429" in problems[0], problems
