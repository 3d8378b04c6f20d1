"""The leaderboard on a phone: the ranking fits the screen, switching criterion keeps the
filters, form controls are large enough that iOS does not zoom into them, and a table wider
than the screen is a focusable region that scrolls sideways (axe's
scrollable-region-focusable)."""

from __future__ import annotations

import os

from flask import current_app

from tests.factories import make_campaign, time_passes, vote_as


def _two_regions():
    current_app.config["VALIDATION_RATE"] = 0.0
    make_campaign()
    vote_as({"country": "FR"}, ["model-0", "model-1", "model-2"])
    vote_as({"country": "JP"}, ["model-2", "model-1", "model-0"], seed=3)
    time_passes()  # (the public page counts the votes of before the hour)


def test_criterion_tabs_keep_the_filters(app, live_server, phone):
    with app.app_context():
        _two_regions()
    phone.goto(live_server + "/leaderboard?criterion=preference")
    # the ranking on the first screen, the filters folded under it (nine controls there,
    # the ranking from y=700 down, before they were folded)
    if os.environ.get("ARENA_SCREENSHOT_DIR"):  # to look at it
        phone.screenshot(path=os.path.join(os.environ["ARENA_SCREENSHOT_DIR"], "board.png"))
    first = phone.locator("table.ranking tbody tr").first.bounding_box()
    assert first["y"] + first["height"] <= 844, first  # (the first row on the first screen)
    # the ranking fits the phone: each model on two lines, no column off screen (the eight
    # columns were 698 px wide in a 372 px card, the rating among those scrolled away)
    ranking = phone.locator(".table-wrap").first
    assert ranking.evaluate("el => el.scrollWidth <= el.clientWidth")
    width = phone.viewport_size["width"]
    for cell in phone.locator("table.ranking tbody tr").first.locator("th, td").all():
        box = cell.bounding_box()
        assert box["width"] > 0 and box["x"] >= 0 and box["x"] + box["width"] <= width, box
    # each value shown after its column's name (the header is out of sight)
    votes = phone.locator("table.ranking tbody tr").first.locator("td[data-label=Votes]")
    assert votes.evaluate("el => getComputedStyle(el, '::before').content") != "none"
    assert phone.locator("table.ranking thead").bounding_box()["height"] <= 1
    phone.get_by_text("Filters", exact=True).tap()
    phone.get_by_label("Continent").select_option("EU")
    phone.wait_for_url("**continent=EU**")  # htmx swapped the board and pushed the URL
    phone.get_by_role("link", name="Coherence").tap()
    phone.wait_for_url("**criterion=coherence**")
    assert "continent=EU" in phone.url
    assert phone.get_by_label("Continent").input_value() == "EU"  # (unfolded: a filter is on)
    assert phone.get_by_text("Filters (1 active)").is_visible()
    size = phone.get_by_label("Continent").evaluate("el => getComputedStyle(el).fontSize")
    assert float(size.removesuffix("px")) >= 16  # iOS zooms into smaller controls
    # a table wider than the phone (the win-rate matrix) is a focusable region that scrolls
    # sideways inside itself; the page does not
    region = phone.locator(".table-wrap").last
    assert region.get_attribute("tabindex") == "0" and region.get_attribute("role") == "region"
    assert phone.evaluate("document.documentElement.scrollWidth") <= width
