"""A voter's own ranking on a phone: found from the end of a session, and read there once
their answers count, within the screen's width with every link a finger's size."""

from __future__ import annotations

import os

from sqlalchemy import select

from arena.extensions import db
from arena.models import Vote
from tests.browser.test_every_page_fits import AUDIT
from tests.factories import make_campaign, time_passes


def _one_session(phone) -> None:
    card = phone.locator("form.task")
    for position in (1, 2, 3):
        card.get_by_text(f"Question {position} of 3").wait_for()
        read = card.get_by_role("button", name="I have read the caption")
        if read.count():
            read.tap()
            card.locator("fieldset.pair:not([disabled])").wait_for()
        card.locator("label.choice").nth(position % 2).tap()
        card.get_by_role("button", name="Continue").tap()
    phone.get_by_role("heading", name="Thank you!").wait_for()


def test_a_voter_reads_their_own_ranking_on_a_phone(app, live_server, phone):
    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0, OWN_RANKING_MIN_VOTES=3)
    with app.app_context():
        make_campaign(gold=False, n_prompts=3)
    phone.goto(live_server + "/?criterion=preference")
    phone.get_by_role("button", name="Start").tap()
    _one_session(phone)
    phone.get_by_role("link", name="See your own ranking").tap()
    phone.get_by_role("heading", name="Your ranking").wait_for()
    assert "0 do so far" in phone.locator("main").inner_text()  # (this period's answers)
    with app.app_context():
        time_passes()
        met = {model for pair in db.session.execute(
            select(Vote.winner_model_id, Vote.loser_model_id)) for model in pair}
    phone.reload()
    table = phone.locator("table.ranking.own")
    table.wait_for()
    # (the models the voter's three answers met: two or three, as the pairs were drawn)
    assert table.locator("tbody tr").count() == len(met) >= 2
    phone.wait_for_load_state("networkidle")
    assert phone.evaluate(AUDIT) == []
    if os.environ.get("ARENA_SCREENSHOTS"):
        phone.screenshot(path=os.path.join(os.environ["ARENA_SCREENSHOTS"], "own-ranking.png"),
                         full_page=True)
