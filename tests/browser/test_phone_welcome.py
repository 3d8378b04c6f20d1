"""What a voter meets around the vote, in real Chromium: the images named as they are placed
(top and bottom when stacked; left and right side by side, mirrored in Arabic), the
thank-you card's count and its next session that starts by itself unless stopped, and a
landing page for voters with the other links at its foot."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from sqlalchemy import delete

from arena.extensions import db
from arena.models import Comparison
from tests.factories import make_campaign
from tests.timing import seconds

from .test_voting_session import answer_task


@pytest.fixture
def preference(app):
    app.config.update(VALIDATION_RATE=0.0, NEXT_SESSION_SECONDS=2)
    with app.app_context():
        make_campaign(gold=False, n_prompts=6)
        db.session.execute(delete(Comparison).where(Comparison.criterion != "preference"))
        db.session.commit()


BOXES = """els => els.map(el => { const box = el.getBoundingClientRect();
                                return [Math.round(box.left), Math.round(box.top),
                                        Math.round(box.width)]; })"""


def _names(page) -> list[tuple[str, str, str, float]]:
    """Each image's alt, its enlarge button's name, its viewer label and its left edge."""
    return page.locator("label.choice").evaluate_all("""els => els.map(el => [
        el.querySelector('img').alt, el.querySelector('a.zoom').getAttribute('aria-label'),
        el.querySelector('a.zoom').dataset.label, el.getBoundingClientRect().left])""")


@pytest.mark.parametrize(("language", "wide"), [
    ("en", ["Left image", "Right image"]),
    ("ar", ["الصورة اليمنى", "الصورة اليسرى"]),  # right to left: the first is drawn right
])
def test_images_are_named_as_placed(browser, live_server, preference, language, wide):
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True,
                                  is_mobile=True, locale=language)
    page = context.new_page()
    page.goto(live_server + "/")
    page.locator("form.start-form button[type=submit]").tap()
    page.wait_for_url("**/s/*")
    page.locator("form.task label.choice").first.wait_for()
    upright = _names(page)
    if language == "en":
        assert [tuple(n[:3]) for n in upright] == [
            ("Top image", "Enlarge the top image", "Top image"),
            ("Bottom image", "Enlarge the bottom image", "Bottom image")]
    page.set_viewport_size({"width": 844, "height": 390})  # turned sideways
    for _ in range(50):  # (renamed on the next frame after the resize)
        turned = _names(page)
        if turned[0][0] != upright[0][0]:
            break
        page.wait_for_timeout(100)
    assert [n[0] for n in turned] == wide and [n[2] for n in turned] == wide
    # the one named left is drawn left
    named_left = 0 if language == "en" else 1
    assert turned[named_left][3] < turned[1 - named_left][3]
    # and the two images take over half the card's width (a third of it, 167 px each, when
    # text and images had a half each)
    card = page.locator("form.task")
    images = sum(box[2] for box in card.locator("label.choice img").evaluate_all(BOXES))
    assert images >= 0.5 * card.bounding_box()["width"], images
    context.close()


def test_thank_you_counts_the_answers_and_goes_on_unless_stopped(live_server, preference,
                                                                   phone):
    phone.goto(live_server + "/")
    phone.get_by_role("button", name="Start").tap()
    for position, side in zip((1, 2, 3), ("left", "right", "left"), strict=True):
        answer_task(phone, position, side)
    phone.get_by_role("heading", name="Thank you!").wait_for()
    assert phone.get_by_text("3 answers given so far").is_visible()
    assert phone.get_by_text("The next session starts in").is_visible()
    # by itself: the next session's first card
    phone.locator("form.task").get_by_text("Question 1 of 3").wait_for(timeout=seconds(6000))
    for position, side in zip((1, 2, 3), ("right", "left", "right"), strict=True):
        answer_task(phone, position, side)
    phone.get_by_text("6 answers given so far").wait_for()
    phone.get_by_role("button", name="Stop here").tap()
    phone.wait_for_timeout(2500)  # (past the countdown)
    assert phone.get_by_role("heading", name="Thank you!").is_visible()
    assert not phone.get_by_text("The next session starts in").is_visible()


def test_the_landing_page_is_for_voters(live_server, preference, phone):
    phone.goto(live_server + "/")
    header = phone.locator("header")
    assert header.get_by_role("link").all_inner_texts() == ["Arena"]
    more = phone.get_by_role("navigation", name="More of Arena")
    assert more.get_by_role("link").all_inner_texts() == [
        "Leaderboard", "Campaigns", "Real or fake", "Owners"]
    for link in more.get_by_role("link").all():
        assert link.bounding_box()["height"] >= 44
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390





@pytest.mark.parametrize(("width", "height"), [(360, 640), (390, 844)])
def test_the_images_stay_put_when_the_caption_is_confirmed(app, browser, live_server, width,
                                                           height):
    """The voter reads, taps "I have read the caption" and reaches for an image: it must be
    where it was (the button used to vanish, and the images grew or went from side by side
    to stacked under the finger)."""
    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=20)
    with app.app_context():
        make_campaign(gold=False, n_prompts=4)
        db.session.execute(delete(Comparison).where(Comparison.criterion != "alignment"))
        db.session.commit()
    context = browser.new_context(viewport={"width": width, "height": height},
                                  has_touch=True, is_mobile=True)
    page = context.new_page()
    page.goto(live_server + "/")
    page.get_by_role("button", name="Start").tap()
    card = page.locator("form.task")
    confirm = card.get_by_role("button", name="I have read the caption")
    expect(confirm).to_be_enabled()  # (once the caption is revealed)
    before = card.locator("label.choice img").evaluate_all(BOXES)
    confirm.tap()
    card.locator("fieldset.pair:not([disabled])").wait_for()
    assert page.locator("form.task label.choice img").evaluate_all(BOXES) == before
    assert page.get_by_text("Caption read").is_visible()
    context.close()

