"""The leaderboard on a phone: switching criterion keeps the filters, form controls are
large enough that iOS does not zoom into them, and a table wider than the screen is a
focusable region that scrolls sideways (axe's scrollable-region-focusable)."""

from __future__ import annotations

from flask import current_app

from tests.factories import make_campaign, vote_as


def _two_regions():
    current_app.config["VALIDATION_RATE"] = 0.0
    make_campaign()
    vote_as({"country": "FR"}, ["model-0", "model-1", "model-2"])
    vote_as({"country": "JP"}, ["model-2", "model-1", "model-0"], seed=3)


def test_criterion_tabs_keep_the_filters(app, live_server, phone):
    with app.app_context():
        _two_regions()
    phone.goto(live_server + "/leaderboard?criterion=preference")
    phone.get_by_label("Continent").select_option("EU")
    phone.wait_for_url("**continent=EU**")  # htmx swapped the board and pushed the URL
    phone.get_by_role("link", name="Coherence").tap()
    phone.wait_for_url("**criterion=coherence**")
    assert "continent=EU" in phone.url
    assert phone.get_by_label("Continent").input_value() == "EU"
    size = phone.get_by_label("Continent").evaluate("el => getComputedStyle(el).fontSize")
    assert float(size.removesuffix("px")) >= 16  # iOS zooms into smaller controls
    region = phone.locator(".table-wrap").first
    assert region.get_attribute("tabindex") == "0" and region.get_attribute("role") == "region"
    wide = region.evaluate("el => el.scrollWidth > el.clientWidth")
    if wide:  # the table scrolls sideways inside its region, the page does not
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
