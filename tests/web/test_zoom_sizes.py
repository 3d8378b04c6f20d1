"""The full-screen view's larger square: offered where both of a task's images are that
large at source, under the task's own names, padded alike; never an upscale."""

import io
import re

from PIL import Image as PILImage

from tests.factories import make_campaign
from tests.web.helpers import start_session

ZOOM = re.compile(r'<a class="zoom" href="([^"]+)"')


def _large(client) -> list[str]:
    """The enlarge links of a new session's first card (both sides)."""
    html = client.get(start_session(client).headers["Location"]).get_data(as_text=True)
    return ZOOM.findall(html)


def test_both_sources_that_large_get_the_zoom_square(client, app):
    app.config["VALIDATION_RATE"] = 0.0
    with app.app_context():
        make_campaign(n_prompts=1, n_models=2, images_per_model=1, gold=False,
                      image_size=2100)
    large = _large(client)
    assert len(large) == 2 and all(url.endswith("/2048.webp") for url in large), large
    bodies = [client.get(re.sub(r"^https?://[^/]+", "", url)).data for url in large]
    assert len(bodies[0]) == len(bodies[1])  # (the task's two padded alike)
    for body in bodies:
        assert PILImage.open(io.BytesIO(body)).size == (2048, 2048)


def test_smaller_sources_zoom_to_the_cards_largest_and_refuse_the_zoom_size(client, app):
    app.config["VALIDATION_RATE"] = 0.0
    with app.app_context():
        make_campaign(n_prompts=1, n_models=2, images_per_model=1, gold=False,
                      image_size=800)
    card = max(s for s in app.config["PRESENT_SIZES"] if s <= 800)
    large = _large(client)
    assert len(large) == 2 and all(url.endswith(f"/{card}.webp") for url in large), large
    path = re.sub(r"^https?://[^/]+", "", large[0]).replace(f"/{card}.webp", "/2048.webp")
    assert client.get(path).status_code == 404
