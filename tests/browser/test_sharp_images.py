"""Sharp images on every phone: the browser picks, from the ``srcset``, a variant with at
least as many pixels as the screen shows the image at (CSS width x device pixel ratio).

Every task image used to be shown from the 384 px variant at ~301 CSS px on a 3x
screen (2.35x upscaled) although a larger variant was stored."""

from __future__ import annotations

import pytest
from sqlalchemy import delete

from arena.config import Defaults
from arena.extensions import db
from arena.models import Comparison, Image
from tests.factories import make_campaign

# (width, height, device pixel ratio): small and large phones, portrait and landscape
SCREENS = [(360, 640, 3), (390, 844, 3), (430, 932, 3), (844, 390, 3), (390, 844, 2)]
# the variant the browser chose (its URL ends in /<size>.webp) and the CSS width shown
LOADED = """img => img.complete && img.naturalWidth ? [img.currentSrc, img.width]
    : new Promise(done => img.addEventListener('load',
        () => done([img.currentSrc, img.width]), {once: true}))"""


@pytest.fixture
def large_images(app):
    """A campaign whose images are 1024 px (what current models generate)."""
    app.config.update(VALIDATION_RATE=0.0, PRESENT_SIZES=Defaults.PRESENT_SIZES)
    with app.app_context():
        make_campaign(gold=False, n_prompts=1, images_per_model=1, image_size=1024)
        db.session.execute(delete(Comparison).where(Comparison.criterion != "coherence"))
        db.session.commit()
        assert db.session.query(Image).filter(Image.width == 1024).count() == 3

def test_each_screen_gets_the_pixels_it_shows(browser, live_server, large_images):
    problems = []
    for width, height, ratio in SCREENS:
        context = browser.new_context(viewport={"width": width, "height": height},
                                      has_touch=True, is_mobile=True,
                                      device_scale_factor=ratio)
        page = context.new_page()
        page.goto(live_server + "/")
        page.get_by_role("button", name="Start").tap()
        page.wait_for_url("**/s/*")
        for k in range(2):
            source, shown = page.locator("label.choice img").nth(k).evaluate(LOADED)
            natural = int(source.rsplit("/", 1)[1].split(".")[0])
            needed = shown * ratio
            if natural < needed * 0.9:  # (a tenth under: invisible, and no larger variant)
                problems.append(f"{width}x{height}@{ratio}x image {k + 1}: {natural} px "
                                f"for {shown} CSS px ({needed:.0f} device px)")
            smaller = [v for v in Defaults.PRESENT_SIZES if needed * 0.9 <= v < natural]
            if smaller:  # (the page's `sizes` overstated the width: bytes for nothing)
                problems.append(f"{width}x{height}@{ratio}x image {k + 1}: {natural} px "
                                f"where {smaller[0]} px covered {shown} CSS px")
        context.close()
    assert not problems, "\n".join(problems)
