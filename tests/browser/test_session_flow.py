"""Ten sessions in a row on a phone, as a keen voter answers them: no dead end, the next
session one tap away on the same screen, and a fixed number of taps per session.

The end of a session used to be a dead end: a "Thank you" card that needed
another tap to find the way on."""

from __future__ import annotations

from itertools import pairwise

from tests.browser.test_one_viewport import _within
from tests.factories import make_campaign

SESSIONS = 10
TAPS_PER_TASK = 2  # an image, then Continue
TAPS_BETWEEN_SESSIONS = 1  # "Next session"


def test_ten_sessions_in_a_row_one_tap_apart(app, live_server, phone):
    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    with app.app_context():
        make_campaign(gold=False, n_prompts=3)
    phone.goto(live_server + "/")
    phone.get_by_role("button", name="Start").tap()
    taps, criteria = [], []
    for session in range(SESSIONS):
        tapped = 0
        card = phone.locator("form.task")
        for position in (1, 2, 3):
            card.get_by_text(f"Question {position} of 3").wait_for()
            criteria.append(card.get_attribute("data-criterion"))
            read = card.get_by_role("button", name="I have read the caption")
            if read.count():  # (the alignment gate: a tap a voter must make too)
                read.tap()
                card.locator("fieldset.pair:not([disabled])").wait_for()
                tapped += 1
            card.locator("label.choice").nth(position % 2).tap()
            card.get_by_role("button", name="Continue").tap()
            tapped += TAPS_PER_TASK
        phone.get_by_role("heading", name="Thank you!").wait_for()
        next_session = phone.get_by_role("button", name="Next session")
        assert _within(phone, next_session, "Next session") == []  # no scrolling to find it
        if session < SESSIONS - 1:
            next_session.tap()
            tapped += TAPS_BETWEEN_SESSIONS
        taps.append(tapped)
    assert len(criteria) == 3 * SESSIONS
    # the criteria vary: each session's differs from the one before (matchmaking prefers a
    # change while another criterion has work left). That all three appear in ten sessions
    # is only likely: after the first two, each draw is between two, 1 run in 256 alternates
    # between the same two to the end.
    per_session = criteria[::3]
    assert all(a != b for a, b in pairwise(per_session)), per_session
    reading = criteria.count("alignment")
    assert sum(taps) == (SESSIONS * 3 * TAPS_PER_TASK + (SESSIONS - 1) * TAPS_BETWEEN_SESSIONS
                         + reading)
