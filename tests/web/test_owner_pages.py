import io
import re

import pytest
from sqlalchemy import func, select

from arena.extensions import db
from arena.models import Image, Prompt
from tests.datasets import IMAGES
from tests.factories import make_model, make_owner, make_prompt_set, solid

from .helpers import csrf_token


@pytest.fixture
def signed_in(app, client):
    with app.app_context():
        make_prompt_set("s", ["a red cube"])
        _, token = make_owner("acme")
        make_owner("globex")
        pid = db.session.scalar(select(Prompt.id))
    html = client.get("/owner/").get_data(as_text=True)
    response = client.post("/owner/sign-in", data={"csrf_token": csrf_token(html),
                                                   "token": token})
    assert response.status_code == 303
    return pid


def test_sign_in_refuses_bad_tokens(client, app):
    html = client.get("/owner/").get_data(as_text=True)
    assert "Owner token" in html
    response = client.post("/owner/sign-in", data={"csrf_token": csrf_token(html),
                                                   "token": "owner_nope"})
    assert response.status_code == 401 and "not valid" in response.get_data(as_text=True)


def test_register_upload_without_javascript_and_see_progress(client, app, signed_in):
    html = client.get("/owner/").get_data(as_text=True)
    response = client.post("/owner/models", data={"csrf_token": csrf_token(html),
                                                  "name": "Acme-1"})
    assert response.status_code == 303
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    files = [(io.BytesIO((IMAGES / "ok.png").read_bytes()), f"{signed_in}_1.png"),
             (io.BytesIO((IMAGES / "text.png").read_bytes()), f"{signed_in}_2.png"),
             (io.BytesIO(b"prompt_id,path\n" + f"{signed_in},x.webp\n".encode()),
              "manifest.csv"),
             (io.BytesIO((IMAGES / "ok.webp").read_bytes()), "x.webp"),
             (io.BytesIO((IMAGES / "ok.jpg").read_bytes()), "nameless.jpg")]
    result = client.post("/owner/models/Acme-1/upload", data={
        "csrf_token": csrf_token(page), "images": files}, content_type="multipart/form-data")
    body = result.get_data(as_text=True)
    assert result.status_code == 200
    assert body.count('class="result ok"') == 2 and body.count('class="result bad"') == 2
    assert "not a readable image" in body and "&lt;prompt_id&gt;_&lt;n&gt;" in body
    assert re.search(r"<strong>2</strong> × #\d+ a red cube", body)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Image)) == 2


def png_bytes(picture) -> bytes:
    buffer = io.BytesIO()
    picture.save(buffer, "PNG")
    return buffer.getvalue()


def test_a_plain_upload_ends_in_time_with_a_result_for_every_file(client, app, signed_in):
    """400 files posted without JavaScript: the request outlived the worker,
    the owner got an empty 500 while 339 were stored. Now a request stores files for
    UPLOAD_REQUEST_SECONDS at most (here 0: one file), lists the rest as not processed,
    and sending them all again stores the next ones (the stored ones are recognised)."""
    app.config["UPLOAD_REQUEST_SECONDS"] = 0
    html = client.get("/owner/").get_data(as_text=True)
    page = client.get(client.post("/owner/models", data={
        "csrf_token": csrf_token(html), "name": "Acme-1"}).headers["Location"])
    token = csrf_token(page.get_data(as_text=True))
    sent = [png_bytes(solid(color)) for color in ("red", "green", "blue")]

    def send_all():
        files = [(io.BytesIO(data), f"{signed_in}_{n}.png") for n, data in enumerate(sent)]
        body = client.post("/owner/models/Acme-1/upload", data={
            "csrf_token": token, "images": files}, content_type="multipart/form-data")
        assert body.status_code == 200
        return body.get_data(as_text=True)

    first = send_all()
    assert first.count('class="result ok"') == 1 and first.count("not processed") == 2
    second = send_all()
    assert "already uploaded" in second and second.count("not processed") == 1
    assert second.count('class="result ok"') == 2
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Image)) == 2


def test_htmx_upload_returns_result_rows(client, app, signed_in):
    html = client.get("/owner/").get_data(as_text=True)
    client.post("/owner/models", data={"csrf_token": csrf_token(html), "name": "Acme-1"})
    response = client.post("/owner/models/Acme-1/upload", headers={"HX-Request": "true"},
                           data={"csrf_token": csrf_token(html), "prompt_id": str(signed_in),
                                 "images": [(io.BytesIO((IMAGES / "ok.png").read_bytes()),
                                             "any.png")]},
                           content_type="multipart/form-data")
    body = response.get_data(as_text=True).strip()
    assert body.startswith('<li class="result ok">') and "<html" not in body


def test_manifest_paths_match_the_files_sent_one_by_one(client, app, signed_in):
    """The page's script sends each file with the manifest; the server matches a file to
    the manifest line by its path or, when unambiguous, its name (one parser for all)."""
    html = client.get("/owner/").get_data(as_text=True)
    client.post("/owner/models", data={"csrf_token": csrf_token(html), "name": "Acme-1"})
    manifest = f"prompt_id,path\n{signed_in},renders/deep/x.webp\n".encode()
    response = client.post("/owner/models/Acme-1/upload", headers={"HX-Request": "true"},
                           data={"csrf_token": csrf_token(html), "images": [
                               (io.BytesIO((IMAGES / "ok.webp").read_bytes()), "x.webp"),
                               (io.BytesIO(manifest), "manifest.csv")]},
                           content_type="multipart/form-data")
    assert f"accepted for prompt {signed_in}" in response.get_data(as_text=True)
    bad = client.post("/owner/models/Acme-1/upload", headers={"HX-Request": "true"},
                      data={"csrf_token": csrf_token(html), "images": [
                          (io.BytesIO(b"file\nx.webp\n"), "manifest.csv")]},
                      content_type="multipart/form-data")
    body = bad.get_data(as_text=True)
    assert bad.status_code == 422 and "<html" not in body
    assert "manifest.csv: line 1: missing column" in body


def test_other_owners_models_are_off_limits(client, app, signed_in):
    with app.app_context():
        from arena.accounts.owners import get_owner

        make_model("Globex-X", get_owner("globex"))
    # someone else's model answers exactly like one that does not exist
    theirs, nobody = client.get("/owner/models/Globex-X"), client.get("/owner/models/Nobody")
    assert theirs.status_code == nobody.status_code == 404
    assert theirs.get_data(as_text=True).replace("Globex-X", "Nobody") == \
        nobody.get_data(as_text=True)
    assert client.get("/owner/models/None-such").status_code == 404
    assert "Globex-X" not in client.get("/owner/").get_data(as_text=True)


def test_signed_out_is_sent_to_sign_in(client):
    response = client.get("/owner/models/Acme-1")
    assert response.status_code == 302 and response.headers["Location"].endswith("/owner/")
