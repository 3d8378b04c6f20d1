import io

from PIL import Image as PILImage


def test_image_served_immutable_as_webp(client, web_campaign):
    sha = web_campaign["image_shas"][0]
    with client.get(f"/img/{sha}/phone.webp") as response:
        assert response.status_code == 200
        assert response.mimetype == "image/webp"
        assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        assert PILImage.open(io.BytesIO(response.data)).format == "WEBP"


def test_unknown_or_malformed_image_names_are_404(client, web_campaign):
    assert client.get("/img/" + "0" * 64 + "/phone.webp").status_code == 404
    assert client.get("/img/../../etc/passwd/phone.webp").status_code == 404
    sha = web_campaign["image_shas"][0]
    assert client.get(f"/img/{sha}/huge.webp").status_code == 404


def test_static_files_are_versioned_by_content_and_cached(client):
    html = client.get("/").get_data(as_text=True)
    import re

    url = re.search(r'href="(/static/css/app\.css\?v=[0-9a-f]{12})"', html).group(1)
    with client.get(url) as response:
        assert response.status_code == 200
        assert "max-age=31536000" in response.headers["Cache-Control"]
