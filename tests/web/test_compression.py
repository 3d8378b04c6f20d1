"""Text responses are compressed by the app itself (gunicorn serves directly by default);
images never are: their bytes are what the blinding makes alike, and a compressed length
would be one more channel to compare."""

from __future__ import annotations

import json

import brotli

from tests.factories import make_campaign

BROWSER = {"Accept-Encoding": "br"}


def test_pages_scripts_and_json_are_compressed_images_are_not(app, client):
    with app.app_context():
        make_campaign(n_prompts=2, n_models=2, images_per_model=1, gold=False)
    page = client.get("/", headers=BROWSER)
    assert page.headers.get("Content-Encoding") == "br"
    html = brotli.decompress(page.data).decode()
    htmx = next(part for part in html.split('"') if "/static/js/htmx" in part)
    with client.get(htmx, headers=BROWSER) as served, client.get(htmx) as plain:
        assert served.headers.get("Content-Encoding") == "br"
        assert len(served.get_data()) < len(plain.get_data()) / 2
        assert brotli.decompress(served.get_data()) == plain.get_data()

    session = client.post("/api/v1/sessions", json={}, headers=BROWSER)
    assert session.status_code == 201
    assert session.headers.get("Content-Encoding") == "br"
    body = json.loads(brotli.decompress(session.data))
    url = body["tasks"][0]["left"]["url"]
    with client.get(url[url.index("/img/"):], headers=BROWSER) as image:
        assert image.status_code == 200 and image.mimetype == "image/webp"
        assert "Content-Encoding" not in image.headers
