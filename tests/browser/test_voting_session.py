"""A whole voting session per criterion on a phone, in real Chromium."""

import pytest
from playwright.sync_api import expect
from sqlalchemy import delete, select
from sqlalchemy.exc import OperationalError

from arena.criteria import BUILT_IN
from arena.extensions import db
from arena.models import Comparison, Task, Vote
from tests import timing
from tests.browser.conftest import PHONE
from tests.factories import make_campaign, time_passes, vote_as


@pytest.fixture
def only(app):
    """Build a campaign whose only comparisons are of one criterion."""

    def build(criterion):
        app.config["VALIDATION_RATE"] = 0.0
        with app.app_context():
            make_campaign(gold=False)
            db.session.execute(delete(Comparison).where(Comparison.criterion != criterion))
            db.session.commit()

    return build


def answer_task(page, position, side):
    card = page.locator("form.task")
    card.get_by_text(f"Question {position} of 3").wait_for()
    submit = card.get_by_role("button", name="Continue")
    assert submit.is_disabled()
    choice = card.locator("label.choice").nth(0 if side == "left" else 1)
    choice.tap()
    assert choice.locator("input").is_checked()
    # the chosen image is visibly highlighted (border in the accent colour)
    border = choice.evaluate("el => getComputedStyle(el).borderTopColor")
    other = card.locator("label.choice").nth(1 if side == "left" else 0)
    assert border != other.evaluate("el => getComputedStyle(el).borderTopColor")
    assert submit.is_enabled()
    submit.tap()


@pytest.mark.parametrize("criterion", ["preference", "coherence"])
def test_session_of_three_tasks(app, only, live_server, phone, criterion):
    only(criterion)
    phone.goto(live_server + "/")
    phone.get_by_role("button", name="Start").tap()
    phone.wait_for_url("**/s/*")
    question = next(c.question for c in BUILT_IN if c.name == criterion)
    assert phone.locator("h1.question").inner_text() == question
    first_url = phone.url
    for position, side in zip((1, 2, 3), ("left", "right", "left"), strict=True):
        answer_task(phone, position, side)
    phone.get_by_role("heading", name="Thank you!").wait_for()
    assert phone.url == first_url  # htmx swapped the card in place, no reload
    assert phone.get_by_role("button", name="Next session").is_visible()
    with app.app_context():
        votes = db.session.scalars(select(Vote).order_by(Vote.id)).all()
        assert [v.choice for v in votes] == ["left", "right", "left"]
        assert all(v.criterion == criterion and v.response_ms > 0 for v in votes)


def test_alignment_reveals_caption_word_by_word_and_gates_the_images(app, only, live_server,
                                                                     phone):
    only("alignment")
    # quicker than people read, still one word at a time, and slow enough that a busy
    # machine's browser looks while the caption is partly shown
    app.config["REVEAL_WORD_MS"] = round(timing.seconds(0.25) * 1000)
    phone.goto(live_server + "/")
    phone.get_by_role("button", name="Start").tap()
    for position in (1, 2, 3):
        card = phone.locator("form.task")
        card.get_by_text(f"Question {position} of 3").wait_for()
        words = card.locator(".caption .word")
        assert words.count() == 9  # "A red cube number N on a green table"
        confirm = card.get_by_role("button", name="I have read the caption")
        # at first the caption is only partly shown, confirming is impossible and the
        # images cannot be chosen
        assert card.locator(".caption .word.pending").count() > 0
        assert confirm.is_disabled()
        assert card.locator("input[name=choice]").nth(0).is_disabled()
        card.locator("label.choice").nth(0).tap(force=True)
        assert not card.locator("input[name=choice]").nth(0).is_checked()
        # then every word appears, one at a time, and the confirmation unlocks the images
        expect(card.locator(".caption .word.pending")).to_have_count(0)
        assert confirm.is_enabled()
        confirm.tap()  # the server accepts it (the reveal is over) and unlocks the card
        card.locator("fieldset.pair:not([disabled])").wait_for()
        assert confirm.count() == 0
        assert card.locator("input[name=choice]").nth(0).is_enabled()
        answer_task(phone, position, "right")
    phone.get_by_role("heading", name="Thank you!").wait_for()
    with app.app_context():
        assert len(db.session.scalars(select(Vote)).all()) == 3
        reads = db.session.execute(select(Task.shown_at, Task.read_confirmed_at)).all()
        words_ms = 9 * app.config["REVEAL_WORD_MS"]
        assert all((read - shown).total_seconds() * 1000 >= words_ms for shown, read in reads)


def test_wrong_gold_answer_warns_then_next_session(app, live_server, phone):
    app.config["VALIDATION_RATE"] = 1.0
    with app.app_context():
        make_campaign()
        db.session.execute(delete(Comparison).where(Comparison.criterion != "coherence"))
        db.session.commit()
    phone.goto(live_server + "/")
    phone.get_by_role("button", name="Start").tap()
    # answer every task with the darker image: the gold pair's right answer is the white one
    warnings = []
    for position in (1, 2, 3):
        card = phone.locator("form.task")
        card.get_by_text(f"Question {position} of 3").wait_for()
        side = card.evaluate("""async form => {
            const imgs = [...form.querySelectorAll('label.choice img')];
            await Promise.all(imgs.map(img => img.decode()));
            const light = imgs.map(img => { const c = document.createElement('canvas');
                c.width = c.height = 1; const g = c.getContext('2d'); g.drawImage(img, 0, 0, 1, 1);
                const d = g.getImageData(0, 0, 1, 1).data; return d[0] + d[1] + d[2]; });
            return light[0] <= light[1] ? 'left' : 'right'; }""")
        answer_task(phone, position, side)
        following = "Thank you!" if position == 3 else f"Question {position + 1} of 3"
        phone.get_by_text(following).wait_for()
        warnings.append(phone.get_by_text("check question").count())
    assert sum(warnings) == 1  # exactly once: after the one gold task
    phone.get_by_role("button", name="Next session").tap()
    phone.get_by_text("Question 1 of 3").wait_for()
    with app.app_context():
        assert db.session.scalar(select(Vote).where(Vote.is_validation)).correct is False


def test_landing_fits_a_360px_phone_and_refuses_minors(app, live_server, browser):
    with app.app_context():
        make_campaign()
    context = browser.new_context(viewport={"width": 360, "height": 740}, has_touch=True,
                                  is_mobile=True)
    page = context.new_page()
    page.goto(live_server + "/")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 360
    page.get_by_text("About you").tap()
    page.get_by_label("Age", exact=True).select_option("0-17")
    page.get_by_role("button", name="Start").tap()
    page.get_by_text("18 or older").wait_for()
    context.close()


def test_leaderboard_filters_swap_the_board(app, live_server, phone):
    app.config["VALIDATION_RATE"] = 0.0
    app.config["PUBLIC_SLICE_MIN_VOTERS"] = 1  # (two voters: slices of one to show)
    with app.app_context():
        make_campaign()
        vote_as({"country": "FR"}, ["model-0", "model-1", "model-2"])
        vote_as({"country": "JP"}, ["model-2", "model-1", "model-0"], seed=3)
        time_passes()  # (the public page counts the votes of before the hour)
    phone.goto(live_server + "/leaderboard?criterion=preference")
    phone.locator("table.ranking").wait_for()
    assert phone.evaluate("document.scrollingElement.scrollWidth") <= 390
    phone.get_by_text("Filters", exact=True).tap()
    phone.select_option("select[name=continent]", "AS")
    phone.get_by_text("slice: continent AS").wait_for()
    assert "continent=AS" in phone.url
    first = phone.locator("table.ranking tbody tr").first.locator("th").inner_text()
    assert first == "model-2"


def test_next_session_comes_in_place_with_its_own_address(app, only, live_server, phone):
    """"Next session" swaps the new session's first card in (no page load: the page's own
    state survives), puts its address in the location bar, and that address, reloaded,
    shows the same card; Back goes to the session before, finished."""
    only("preference")
    phone.goto(live_server + "/")
    phone.get_by_role("button", name="Start").tap()
    phone.wait_for_url("**/s/*")
    first_url = phone.url
    for position in (1, 2, 3):
        answer_task(phone, position, "left")
    phone.get_by_role("heading", name="Thank you!").wait_for()
    phone.evaluate("window.samePage = true")
    phone.get_by_role("button", name="Next session").tap()
    card = phone.locator("form.task")
    card.get_by_text("Question 1 of 3").wait_for()
    phone.wait_for_url(lambda url: url != first_url and "/s/" in url)
    assert phone.evaluate("window.samePage === true")  # swapped in place, not loaded
    task = card.get_attribute("hx-post")
    with app.app_context():
        newest = db.session.scalar(select(Task).order_by(Task.id.desc()).limit(1)).session
        assert phone.url.endswith(f"/s/{newest.public_id}")
    phone.reload()
    expect(phone.locator("form.task")).to_have_attribute("hx-post", task)
    assert not phone.evaluate("window.samePage === true")
    answer_task(phone, 1, "right")
    phone.go_back()
    phone.wait_for_url(first_url)
    phone.get_by_role("heading", name="Thank you!").wait_for()


def test_next_session_without_an_answer_says_so_and_can_be_tried_again(
        app, only, live_server, browser, monkeypatch):
    """A server error (htmx leaves a 5xx unswapped) or no network: the end card stays,
    says Arena is unavailable, and the same button works once the server answers again."""
    only("preference")
    app.config["PROPAGATE_EXCEPTIONS"] = False
    context = browser.new_context(**PHONE)  # (the failed requests are logged to the console)
    phone = context.new_page()
    crashes = []
    phone.on("pageerror", lambda exc: crashes.append(str(exc)))
    phone.goto(live_server + "/")
    phone.get_by_role("button", name="Start").tap()
    for position in (1, 2, 3):
        answer_task(phone, position, "left")
    phone.get_by_role("heading", name="Thank you!").wait_for()
    from arena.web import voter as voter_pages

    def database_gone(*args, **kwargs):
        raise OperationalError("SELECT", {}, Exception("server closed the connection"))

    monkeypatch.setattr(voter_pages.matchmaking, "issue_session", database_gone)
    next_session = phone.get_by_role("button", name="Next session")
    next_session.tap()
    alert = phone.locator("#card .alert.unavailable")
    expect(alert).to_have_text("Arena is unavailable right now: please try again soon")
    monkeypatch.undo()
    phone.route("**/start", lambda route: route.abort())  # no network
    alert.evaluate("note => note.remove()")
    next_session.tap()
    expect(alert).to_be_visible()
    phone.unroute("**/start")
    next_session.tap()
    phone.locator("form.task").get_by_text("Question 1 of 3").wait_for()
    with app.app_context():
        assert len(db.session.scalars(select(Task)).all()) == 6  # two sessions, no more
    context.close()
    assert crashes == []
