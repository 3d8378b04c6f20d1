"""The next task's images are on the phone before the voter finishes the current one: the
card asks for them at low priority, and the next card shows them from the browser's cache
without fetching anything.

Each new card's images used to be fetched only after the vote's response came
back: on a slow mobile link the voter looked at two empty frames after every answer (and the
server's clock for the next answer started while they were still loading)."""

from __future__ import annotations

from urllib.parse import urlparse

from tests.factories import make_campaign

# the resources fetched so far, once every preloaded image has come in (or a timeout)
FETCHED = """async card => {
    const wanted = [...card.querySelectorAll('link[rel=preload]')].map(link =>
        link.getAttribute('imagesrcset').split(',').map(part =>
            new URL(part.trim().split(' ')[0], location.href).href));
    const fetched = () => performance.getEntriesByType('resource').map(e => e.name);
    for (let i = 0; i < 100; i++) {
        const have = fetched();
        if (wanted.every(options => options.some(url => have.includes(url)))) break;
        await new Promise(done => setTimeout(done, 50));
    }
    return [wanted.length, fetched()];
}"""
SHOWN = """img => img.complete && img.naturalWidth ? img.currentSrc
    : new Promise(done => img.addEventListener('load', () => done(img.currentSrc),
                                                {once: true}))"""


def _path(url: str) -> str:
    return urlparse(url).path


def test_the_next_cards_images_come_from_the_cache(app, live_server, phone):
    app.config.update(VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign(gold=False, n_prompts=3)
    phone.goto(live_server + "/")
    phone.get_by_role("button", name="Start").tap()
    card = phone.locator("form.task")
    before: list[str] = []  # the images fetched before the card came
    for position in (1, 2, 3):
        card.get_by_text(f"Question {position} of 3").wait_for()
        shown = [_path(card.locator("label.choice img").nth(k).evaluate(SHOWN))
                 for k in range(2)]
        preloaded, fetched = card.evaluate(FETCHED)
        fetched = [_path(url) for url in fetched if "/img/" in url]
        if position > 1:  # each image on this card was fetched before it came, and once
            assert all(path in before and fetched.count(path) == 1 for path in shown), (
                shown, before, fetched)
        assert preloaded == (2 if position < 3 else 0)  # the last card has no next task
        before = fetched
        read = card.get_by_role("button", name="I have read the caption")
        if read.count():
            read.tap()
            card.locator("fieldset.pair:not([disabled])").wait_for()
        card.locator("label.choice").first.tap()
        card.get_by_role("button", name="Continue").tap()
    phone.get_by_role("heading", name="Thank you!").wait_for()

