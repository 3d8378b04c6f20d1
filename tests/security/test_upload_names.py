"""An uploaded file's name is the uploader's text: a NUL, a terminal escape, a bidi override
or a path in it was accepted and echoed back in the result (page and JSON). Sent here through
the real upload routes, web and API, each name comes back as its cleaned last component."""

from __future__ import annotations

import io
import json
import unicodedata

import pytest
from sqlalchemy import select

from arena.catalog.ingest import upload_name
from arena.extensions import db
from arena.models import Prompt
from tests.datasets import IMAGES
from tests.factories import make_model, make_owner, make_prompt_set
from tests.web.helpers import bearer, csrf_token

HOSTILE = ["{pid}_1.png\x00.exe", "../../etc/{pid}_2.png", "..\\..\\{pid}_3.png",
           "\x1b[31m{pid}_4.png", "{pid}_5\u202egnp.png", "\t{pid}_6.png\x7f"]
WANTED = ["{pid}_1.png.exe", "{pid}_2.png", "{pid}_3.png", "[31m{pid}_4.png",
          "{pid}_5gnp.png", "{pid}_6.png"]


def _clean(text: str) -> bool:
    return not any(unicodedata.category(c) in ("Cc", "Cf") or c in "/\\" for c in text)


@pytest.fixture
def owner(app):
    with app.app_context():
        make_prompt_set("s", ["a red cube"])
        owner, token = make_owner("acme")
        make_model("Acme-1", owner)
        pid = db.session.scalar(select(Prompt.id))
    return pid, token


def test_names_are_cleaned_before_use_and_echo_through_the_api(app, owner):
    pid, token = owner
    client = app.test_client()
    for n, (hostile, wanted) in enumerate(zip(HOSTILE, WANTED, strict=True)):
        data = (IMAGES / "ok.png").read_bytes()
        response = client.post(
            "/api/v1/models/Acme-1/images", headers=bearer(token),
            data={"prompt_id": str(pid), "image": (io.BytesIO(data), hostile.format(pid=pid))},
            content_type="multipart/form-data")
        body = response.get_data(as_text=True)
        assert response.json.get("filename") == wanted.format(pid=pid), (n, body)
        assert _clean(json.loads(body)["filename"]) and "\\u0000" not in body
        # a NUL hiding a second extension no longer passes for a PNG
        assert response.status_code == (422 if n == 0 else 201 if n == 1 else 200), body


def test_names_are_cleaned_before_use_and_echo_on_the_upload_page(app, owner):
    pid, token = owner
    client = app.test_client()
    html = client.get("/owner/").get_data(as_text=True)
    assert client.post("/owner/sign-in", data={"csrf_token": csrf_token(html),
                                               "token": token}).status_code == 303
    page = client.get("/owner/models/Acme-1").get_data(as_text=True)
    for headers in ({}, {"HX-Request": "true"}):
        files = [(io.BytesIO(b"not an image"), name.format(pid=pid)) for name in HOSTILE]
        response = client.post("/owner/models/Acme-1/upload", headers=headers, data={
            "csrf_token": csrf_token(page), "images": files}, content_type="multipart/form-data")
        body = response.get_data(as_text=True)
        assert response.status_code == 200
        for hostile, wanted in zip(HOSTILE, WANTED, strict=True):
            assert wanted.format(pid=pid) in body
            assert hostile.format(pid=pid) not in body
        assert not any(c in body for c in "\x00\x1b\u202e") and "etc/" not in body


def test_the_rule_itself():
    assert upload_name(None) == upload_name("") == upload_name("\x00") == "upload"
    assert upload_name("C:\\Users\\me\\a:b*?.png") == "ab.png"
    assert upload_name("é" * 300 + ".png") == "é" * 200
    assert _clean(upload_name("".join(chr(c) for c in range(0x2070))))


def test_names_from_an_archive_reach_the_terminal_without_escapes(app, owner, tmp_path):
    """`arena import` lists refused files by name: a member named with a terminal escape
    (clear the screen) or a bidi override would have acted on the operator's terminal."""
    import zipfile

    pid, _ = owner
    archive = tmp_path / "batch.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr(f"\x1b[2J{pid}_1.png", b"not an image")
        bundle.writestr(f"dir/{pid}_2\u202egnp.png", b"not an image")
    result = app.test_cli_runner().invoke(args=["import", str(archive), "--model", "Acme-1"])
    assert result.exit_code == 1
    assert f"[2J{pid}_1.png" in result.output and f"dir/{pid}_2gnp.png" in result.output
    assert not any(c in result.output for c in "\x1b\u202e")
