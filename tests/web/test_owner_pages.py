import io
import re
from pathlib import Path

import pytest
from sqlalchemy import func, select

from arena import owners
from arena.extensions import db
from arena.models import Image, Prompt, PromptSet

from .helpers import csrf_token

IMAGES = Path(__file__).resolve().parent.parent / "data" / "images"


@pytest.fixture
def signed_in(app, client):
    with app.app_context():
        prompt_set = PromptSet(name="s")
        db.session.add(prompt_set)
        db.session.flush()
        db.session.add(Prompt(prompt_set_id=prompt_set.id, position=1, text="a red cube"))
        db.session.commit()
        token = owners.create_owner("acme")
        owners.create_owner("globex")
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


def test_other_owners_models_are_off_limits(client, app, signed_in):
    with app.app_context():
        from arena.models import Owner

        globex = db.session.scalar(select(Owner).where(Owner.name == "globex"))
        owners.register_model(globex, "Globex-X")
    assert client.get("/owner/models/Globex-X").status_code == 403
    assert client.get("/owner/models/None-such").status_code == 404
    assert "Globex-X" not in client.get("/owner/").get_data(as_text=True)


def test_signed_out_is_sent_to_sign_in(client):
    response = client.get("/owner/models/Acme-1")
    assert response.status_code == 302 and response.headers["Location"].endswith("/owner/")
