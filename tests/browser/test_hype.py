"""A HYPE evaluator on a phone: qualification, then the HYPE-infinity task, then the report."""

import numpy as np
from PIL import Image as PILImage
from playwright.sync_api import expect
from sqlalchemy import func, select

from arena.extensions import db
from arena.hype import runs
from arena.models import HypeTrial
from tests.browser.conftest import PHONE
from tests.factories import make_campaign


def test_qualify_then_judge_then_report(app, live_server, phone, tmp_path):
    # a pass mark of 0 lets a browser that cannot know the labels qualify
    app.config.update(HYPE_QUALIFICATION_TRIALS=4, HYPE_INFINITY_TRIALS=6,
                      HYPE_QUALIFICATION_PASS=0.0)
    reals = tmp_path / "reals"
    reals.mkdir()
    for k in range(8):
        PILImage.new("RGB", (32, 32), (30 * k, 90, 200 - 20 * k)).save(reals / f"{k}.png")
    with app.app_context():
        make_campaign(n_prompts=2, n_models=2, images_per_model=3, gold=False)
        runs.import_reals(reals)
        runs.create_run("Pilot", "infinity", ["model-0", "model-1"])

    phone.goto(live_server + "/hype/")
    phone.get_by_role("link", name="Pilot").tap()
    phone.get_by_role("button", name="Start the check").tap()
    for k in range(4):
        phone.get_by_text(f"Check {k + 1} of 4").wait_for()
        src = phone.locator("img.hype-image").get_attribute("src")
        assert "model" not in src and "real" not in src and "fake" not in src
        # padded inside its VP8 chunk to the run's one length, and Chromium decodes it
        # (expect polls from Playwright's own script: a string predicate would need
        # eval, which the page's CSP rightly refuses)
        expect(phone.locator("img.hype-image")).to_have_js_property("complete", True)
        width = phone.locator("img.hype-image").evaluate("i => i.naturalWidth")
        assert width == app.config["HYPE_PRESENT_SIZE"]
        phone.get_by_role("button", name="Real" if k % 2 else "Fake").tap()
    phone.get_by_role("heading", name="You passed the check").wait_for()
    phone.get_by_role("link", name="Continue").tap()
    phone.get_by_role("button", name="Start the task").tap()
    for k in range(6):
        phone.get_by_text(f"Image {k + 1} of 6").wait_for()
        phone.get_by_role("button", name="Fake").tap()
    phone.get_by_role("heading", name="Thank you!").wait_for()
    with app.app_context():
        answered = db.session.scalar(select(func.count()).select_from(HypeTrial).where(
            HypeTrial.answered_at.is_not(None)))
        assert answered == 10
    phone.goto(live_server + "/hype/Pilot/report")
    row = phone.locator("table.ranking tbody tr").first.inner_text()
    # always "Fake": every real image was wrong, every fake right -> 50%, reals error 100%
    assert "50.00%" in row and "100.00%" in row


def _timed_task(app, live_server, phone, tmp_path, trials: int) -> None:
    """A HYPE-time run of one block of ``trials``, its check passed on ``phone``, and the
    timed task started."""
    app.config.update(HYPE_QUALIFICATION_TRIALS=4, HYPE_QUALIFICATION_PASS=0.0,
                      HYPE_TIME_BLOCKS=1, HYPE_TIME_BLOCK_TRIALS=trials)
    reals = tmp_path / "reals"
    reals.mkdir()
    rng = np.random.default_rng(0)
    for k in range(8):  # textured images, so the masks are real noise
        pixels = rng.integers(0, 255, (48, 48, 3)).astype("uint8")
        PILImage.fromarray(pixels).save(reals / f"{k}.png")
    with app.app_context():
        make_campaign(n_prompts=2, n_models=2, images_per_model=3, gold=False)
        runs.import_reals(reals)
        runs.create_run("Timed", "time", ["model-0", "model-1"])
    phone.goto(live_server + "/hype/Timed")
    phone.get_by_role("button", name="Start the check").tap()
    for k in range(4):
        phone.get_by_text(f"Check {k + 1} of 4").wait_for()
        phone.get_by_role("button", name="Fake").tap()
    phone.get_by_role("link", name="Continue").tap()
    phone.get_by_role("button", name="Start the task").tap()


def test_hype_time_block_with_real_frame_timing(app, live_server, phone, tmp_path):
    _timed_task(app, live_server, phone, tmp_path, trials=4)
    for k in range(4):
        phone.get_by_text(f"image {k + 1} of 4").wait_for()
        phone.get_by_role("button", name="Show the next image").tap()
        phone.locator(".answers:not([hidden]) button[data-judged=real]").wait_for()
        # feedback on the previous answer is shown from the second image on
        assert phone.locator(".feedback").count() == (1 if k else 0)
        phone.get_by_role("button", name="Real").tap()
    phone.get_by_role("heading", name="Thank you!").wait_for()
    with app.app_context():
        trials = db.session.scalars(select(HypeTrial).where(HypeTrial.requested_ms.is_not(None))
                                    .order_by(HypeTrial.position)).all()
        assert len(trials) == 4
        # always "Real": the staircase moves 10 ms down after each real image, 30 up after
        # each fake, starting at 500 ms in the block; a voided trial (a busy machine's late
        # frame) moves it not
        expected, exposure = [], 500.0
        for t in trials:
            expected.append(exposure)
            exposure += 0 if t.voided else -10 if t.is_real else 30
        assert [t.requested_ms for t in trials] == expected
        # the page's reports add up on the server's clock: none is voided for timing, and
        # the recorded exposure is whole frames within a frame of the request
        assert [t.void_reason for t in trials if t.voided] in ([], ["page"])
        for t in trials:
            assert t.voided or abs(t.actual_ms - t.requested_ms) <= t.frame_ms, (
                t.actual_ms, t.requested_ms, t.frame_ms)
            assert t.voided or 4 <= t.frame_ms <= 34
    phone.goto(live_server + "/hype/Timed/report")
    assert "HYPE-time" in phone.locator("h1").inner_text()
    assert phone.locator("svg[aria-label='Psychometric curves'] polyline").count() == 1
    assert " ms" in phone.locator("table.ranking tbody tr").first.inner_text()


def test_hype_time_answer_offline_then_a_reload(app, live_server, browser, tmp_path):
    """Offline, the Real and Fake buttons used to stay disabled with no word, and
    the only way out, a reload, showed the same image again with its answer counted. Now
    the page says the answer was not sent and lets it be sent again; a reload once the
    image has shown voids that trial and serves the next, saying so."""
    context = browser.new_context(**PHONE)  # (the failed request is logged to the console)
    phone = context.new_page()
    crashes = []
    phone.on("pageerror", lambda exc: crashes.append(str(exc)))
    _timed_task(app, live_server, phone, tmp_path, trials=3)
    phone.get_by_text("image 1 of 3").wait_for()
    phone.get_by_role("button", name="Show the next image").tap()
    real = phone.locator(".answers:not([hidden]) button[data-judged=real]")
    real.wait_for()
    context.set_offline(True)
    real.tap()
    expect(phone.get_by_role("alert")).to_have_text(
        "Arena is unavailable right now: please try again soon")
    expect(real).to_be_enabled()
    context.set_offline(False)
    real.tap()
    phone.get_by_text("image 2 of 3").wait_for()
    phone.get_by_role("button", name="Show the next image").tap()
    real.wait_for()
    phone.reload()
    expect(phone.get_by_role("status")).to_contain_text("does not count")
    phone.get_by_text("image 3 of 3").wait_for()
    phone.get_by_role("button", name="Show the next image").tap()
    real.tap()
    phone.get_by_role("heading", name="Thank you!").wait_for()
    context.close()
    assert crashes == []
    with app.app_context():
        trials = db.session.scalars(select(HypeTrial).where(HypeTrial.requested_ms.is_not(None))
                                    .order_by(HypeTrial.position)).all()
        assert [t.judged_real for t in trials] == [True, None, True]
        assert trials[1].void_reason == "repeat"
        assert {t.void_reason for t in (trials[0], trials[2])} <= {None, "page"}


def test_hype_time_fits_a_small_phone_without_scrolling(app, live_server, browser, tmp_path):
    """At 360x640 the first timed trial's instructions used to push "Show the next
    image" below the fold. The button, and then the Real and Fake buttons, must be on the
    first screen: scrolling mid-trial would move the image under the evaluator's eyes."""
    import os

    small = {**PHONE, "viewport": {"width": 360, "height": 640}}
    context = browser.new_context(**small)
    phone = context.new_page()
    _timed_task(app, live_server, phone, tmp_path, trials=2)
    shots = os.environ.get("ARENA_SCREENSHOT_DIR")
    for k in range(2):
        phone.get_by_text(f"image {k + 1} of 2").wait_for()
        go = phone.get_by_role("button", name="Show the next image")
        if shots:
            phone.screenshot(path=f"{shots}/hype-time-360-{k + 1}.png")
        box = go.bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= 640, box
        go.tap()
        real = phone.locator(".answers:not([hidden]) button[data-judged=real]")
        real.wait_for()
        if shots:
            phone.screenshot(path=f"{shots}/hype-time-360-{k + 1}-answer.png")
        box = real.bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= 640, box
        assert phone.evaluate("window.scrollY") == 0
        real.tap()
    phone.get_by_role("heading", name="Thank you!").wait_for()
    context.close()
