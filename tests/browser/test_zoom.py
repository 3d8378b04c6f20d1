"""A closer look: each image's enlarge button opens it full screen at its largest variant;
a swipe (or "Other image") shows the other one, Close goes back to the task with nothing
chosen. The coherence question asks voters to find odd details, which a 300 px square
hides. Without JavaScript the button is a link to the same file."""

from __future__ import annotations

from tests.factories import make_campaign

# a one-finger swipe from right to left across the viewer, as touch events
SWIPE = """(viewer) => {
    const touch = x => new Touch({identifier: 1, target: viewer, clientX: x, clientY: 400});
    viewer.dispatchEvent(new TouchEvent('touchstart', {touches: [touch(300)],
        changedTouches: [touch(300)], bubbles: true}));
    viewer.dispatchEvent(new TouchEvent('touchend', {touches: [],
        changedTouches: [touch(120)], bubbles: true}));
}"""
# (the viewer shows the card's picture at once, then the larger one once it has come)
LARGE = """([img, url]) => img.complete && img.naturalWidth && img.currentSrc.endsWith(url)"""


def test_enlarge_swipe_and_close(app, live_server, phone):
    app.config.update(VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign(gold=False, n_prompts=2)
    phone.goto(f"{live_server}/?criterion=coherence")
    phone.get_by_role("button", name="Start").tap()
    card = phone.locator("form.task")
    card.get_by_text("Question 1 of 3").wait_for()
    large = [card.locator("a.zoom").nth(k).get_attribute("href") for k in range(2)]
    assert all(url.endswith(f"/{max(app.config['PRESENT_SIZES'])}.webp") for url in large)
    card.get_by_role("link", name="Enlarge the top image").tap()
    viewer = phone.locator("dialog.viewer")
    viewer.wait_for()
    image = viewer.locator("img")
    phone.wait_for_function(LARGE, arg=[image.element_handle(), large[0]])
    box, view = image.bounding_box(), phone.viewport_size
    assert box["width"] >= 0.95 * view["width"]  # the whole width of the phone
    assert viewer.locator(".viewer-label").inner_text() == "Top image"
    viewer.evaluate(SWIPE)
    assert viewer.locator(".viewer-label").inner_text() == "Bottom image"
    phone.wait_for_function(LARGE, arg=[image.element_handle(), large[1]])
    viewer.get_by_role("button", name="Other image").tap()
    assert viewer.locator(".viewer-label").inner_text() == "Top image"
    viewer.get_by_role("button", name="Close").tap()
    viewer.wait_for(state="hidden")
    # back on the task: nothing chosen by looking, and the task goes on as before
    assert card.locator("input[name=choice]:checked").count() == 0
    assert card.get_by_role("button", name="Continue").is_disabled()
    card.locator("label.choice").nth(1).tap()
    card.get_by_role("button", name="Continue").tap()
    card.get_by_text("Question 2 of 3").wait_for()


def test_no_enlarging_before_the_caption_is_read(app, live_server, phone):
    app.config.update(VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign(gold=False, n_prompts=2)
    phone.goto(f"{live_server}/?criterion=alignment")
    phone.get_by_role("button", name="Start").tap()
    card = phone.locator("form.task")
    card.get_by_text("Question 1 of 3").wait_for()
    assert card.locator("a.zoom").first.is_hidden()
    card.get_by_role("button", name="I have read the caption").tap()
    card.locator("fieldset.pair:not([disabled])").wait_for()
    assert card.locator("a.zoom").first.is_visible()


def test_without_javascript_the_button_is_a_link_to_the_image(app, browser, live_server):
    app.config.update(VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign(gold=False, n_prompts=2)
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{live_server}/?criterion=preference")
    page.get_by_role("button", name="Start").click()
    href = page.locator("a.zoom").first.get_attribute("href")
    response = page.request.get(live_server + href)
    assert response.status == 200 and response.headers["content-type"] == "image/webp"
    context.close()
