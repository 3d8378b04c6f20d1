"""The whole task in one screen, on every phone: question, caption (alignment, up to 40
words), both images, Continue, and the validation warning when shown, with nothing off
screen and every tap target at least 44x44 CSS px.

Continue used to be below the fold (coherence at 390x844: page 902 px; at
360x740 it started at y=728; a 21-word caption at 360 put it at y=752) and operator links
23 px tall in a header that wrapped to two lines."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect
from sqlalchemy import delete, update

from arena.extensions import db
from arena.models import Comparison, HypeRun, Prompt
from tests.factories import make_campaign

VIEWPORTS = [(360, 640), (360, 740), (390, 844), (430, 932), (640, 360), (844, 390)]
# 40 words, the longest caption the layout is made for
LONG_CAPTION = ("A weathered lighthouse keeper in a yellow raincoat feeds three gulls on a "
                "rocky pier at dawn while fishing boats with red sails drift past a distant "
                "green island under low storm clouds and a faint rainbow over the sea")
MIN_TAP = 44


@pytest.fixture
def tasks_of(app):
    def build(criterion: str):
        app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
        with app.app_context():
            make_campaign(gold=False)
            db.session.execute(delete(Comparison).where(Comparison.criterion != criterion))
            db.session.execute(update(Prompt).values(text=LONG_CAPTION))
            db.session.commit()

    return build


def _within(page, locator, name: str) -> list[str]:
    """On screen and not hidden: inside the viewport, and what the screen shows at the top
    and bottom of it is the element itself (not clipped by a scrolling box, not covered)."""
    box = locator.bounding_box()
    view = page.viewport_size
    if box is None:
        return [f"{name}: not rendered"]
    if box["x"] < -0.5 or box["y"] < -0.5 or box["x"] + box["width"] > view["width"] + 0.5 \
            or box["y"] + box["height"] > view["height"] + 0.5:
        return [f"{name}: {box} outside {view['width']}x{view['height']}"]
    shown = locator.evaluate("""el => {
        const r = el.getBoundingClientRect(), x = r.left + r.width / 2;
        return [r.top + 2, r.bottom - 2].every(y => {
            const hit = document.elementFromPoint(x, y);
            return hit !== null && (el.contains(hit) || hit.contains(el)); }); }""")
    return [] if shown else [f"{name}: clipped or covered"]


def _too_small(locator, name: str) -> list[str]:
    box = locator.bounding_box()
    if box and (box["width"] < MIN_TAP or box["height"] < MIN_TAP):
        return [f"{name}: {box['width']:.0f}x{box['height']:.0f} px tap target"]
    return []


def _check_screen(page, with_caption: bool) -> list[str]:
    card = page.locator("form.task")
    problems = _within(page, card.locator("h1.question"), "question")
    if with_caption:
        problems += _within(page, card.locator(".caption-text"), "caption")
    for k in range(2):
        problems += _within(page, card.locator("label.choice").nth(k), f"image {k + 1}")
        box = card.locator("label.choice img").nth(k).bounding_box()
        if box and min(box["width"], box["height"]) < 100:
            problems.append(f"image {k + 1} only {box['width']:.0f} px")
    for label in ("Continue", "Can't decide"):
        button = card.get_by_role("button", name=label)
        problems += _within(page, button, label) + _too_small(button, label)
    report = card.get_by_role("link", name="Report an image")
    problems += _within(page, report, "Report") + _too_small(report, "Report")
    for k in range(2):
        problems += _too_small(card.locator("label.choice").nth(k), f"image {k + 1}")
    for link in page.locator("header a, header button").all():
        problems += _too_small(link, f"header {link.inner_text()!r}")
    if page.locator(".alert").count():
        problems += _within(page, page.locator(".alert").first, "warning")
    return problems


@pytest.mark.parametrize("criterion", ["preference", "coherence", "alignment"])
def test_every_part_of_the_task_is_on_screen(browser, app, live_server, tasks_of, criterion):
    tasks_of(criterion)
    problems = []
    for width, height in VIEWPORTS:
        context = browser.new_context(viewport={"width": width, "height": height},
                                      has_touch=True, is_mobile=True, device_scale_factor=2)
        page = context.new_page()
        page.goto(live_server + "/")
        page.get_by_role("button", name="Start").tap()
        page.wait_for_url("**/s/*")
        card = page.locator("form.task")
        card.get_by_text("Question 1 of 3").wait_for()
        if criterion == "alignment":
            card.get_by_role("button", name="I have read the caption").tap()
            card.locator("fieldset.pair:not([disabled])").wait_for()
        page.wait_for_load_state("networkidle")
        problems += [f"{width}x{height}: {p}" for p in _check_screen(
            page, criterion == "alignment")]
        # with the validation warning shown (what a voter sees after a wrong gold answer)
        page.evaluate("""() => { const p = document.createElement('p');
            p.className = 'alert warn'; p.textContent = 'That answer did not match a check '
            + 'question. Please look carefully at both images.';
            document.querySelector('form.task .step').after(p); }""")
        problems += [f"{width}x{height} + warning: {p}" for p in _check_screen(
            page, criterion == "alignment")]
        if os.environ.get("ARENA_SCREENSHOT_DIR"):  # to look at them
            page.screenshot(path=os.path.join(os.environ["ARENA_SCREENSHOT_DIR"],
                                              f"vote-{criterion}-{width}x{height}.png"))
        context.close()
    assert not problems, "\n".join(problems)


def test_the_links_around_the_task_are_tap_targets_too(app, live_server, phone, tasks_of):
    """On a phone, "Change my answers about me" measured on the end card at 220x16 px
    (and it opened the start page with "About you" folded), the "About you" toggle 32 px
    tall, and the HYPE index's links 19 and 16 px tall."""
    tasks_of("preference")
    phone.goto(live_server + "/")
    summary = phone.locator(".about-you summary")
    assert not _too_small(summary, "About you"), summary.bounding_box()
    phone.get_by_role("button", name="Start").tap()
    for position in (1, 2, 3):
        card = phone.locator("form.task")
        card.get_by_text(f"Question {position} of 3").wait_for()
        card.locator("label.choice").first.tap()
        card.get_by_role("button", name="Continue").tap()
    change = phone.get_by_role("link", name="Change my answers about me")
    assert not _too_small(change, "Change my answers"), change.bounding_box()
    shots = os.environ.get("ARENA_SCREENSHOT_DIR")
    if shots:  # to look at them
        phone.screenshot(path=os.path.join(shots, "end-card.png"))
    change.tap()
    expect(phone.locator(".about-you")).to_have_attribute("open", "")
    if shots:
        phone.screenshot(path=os.path.join(shots, "about-you-open.png"))
    with app.app_context():  # (a run on the index is all this needs)
        db.session.add(HypeRun(name="Pilot", mode="infinity"))
        db.session.commit()
    phone.goto(live_server + "/hype/")
    for name in ("Pilot", "report"):
        link = phone.get_by_role("link", name=name, exact=True)
        assert not _too_small(link, name), link.bounding_box()
    if shots:
        phone.screenshot(path=os.path.join(shots, "hype-index.png"))
