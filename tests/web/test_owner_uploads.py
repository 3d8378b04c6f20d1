"""Owners: token, model registration and uploads by API and CLI."""

import io
import zipfile

import pytest
from sqlalchemy import func, select

from arena.campaigns import campaigns
from arena.catalog.ingest import ingest_image
from arena.extensions import db
from arena.models import Comparison, Image, Prompt
from tests.datasets import IMAGES
from tests.factories import make_model, make_owner, make_prompt_set

from .helpers import bearer


@pytest.fixture
def owner(app):
    with app.app_context():
        make_prompt_set("DrawBench-mini", ["p1", "p2"])
        _, token = make_owner("acme")
        _, other = make_owner("globex")
        prompt_ids = db.session.scalars(select(Prompt.id).order_by(Prompt.id)).all()
    return {"auth": bearer(token), "other": bearer(other), "prompts": prompt_ids}


def upload(client, auth, model, name, prompt_id, data=None):
    data = (IMAGES / name).read_bytes() if data is None else data
    return client.post(f"/api/v1/models/{model}/images", headers=auth,
                       data={"prompt_id": str(prompt_id), "image": (io.BytesIO(data), name)},
                       content_type="multipart/form-data")


def test_register_and_upload(client, owner, app):
    assert client.post("/api/v1/models", json={"name": "Acme-1"}).status_code == 401
    created = client.post("/api/v1/models", headers=owner["auth"],
                          json={"name": "Acme-1", "link": "https://acme.example/model"})
    assert created.status_code == 201
    taken = client.post("/api/v1/models", headers=owner["auth"], json={"name": "Acme-1"})
    assert taken.status_code == 409 and "exists already" in taken.json["error"]
    for bad in ({"name": 12}, {"name": "x", "link": "ftp://a"}, {"name": "y", "link": 5}):
        refused = client.post("/api/v1/models", headers=owner["auth"], json=bad)
        assert refused.status_code == 400 and refused.json["field"] in ("name", "link")
    with app.app_context():
        globex = make_model("Globex-1", make_owner("globex-2")[0])
        live = campaigns.create_campaign("Live", "DrawBench-mini", ["Acme-1", "Globex-1"])
        campaigns.publish(live)
        assert ingest_image(globex, owner["prompts"][0], (IMAGES / "ok.jpg").read_bytes(),
                            "g.jpg").ok
    ok = upload(client, owner["auth"], "Acme-1", "ok.png", owner["prompts"][0])
    assert ok.status_code == 201 and ok.json["image_id"] and ok.json["ok"]
    with app.app_context():  # live in the campaign: one new pair per criterion
        assert db.session.scalar(select(func.count()).select_from(Comparison)) == 3
    again = upload(client, owner["auth"], "Acme-1", "ok.png", owner["prompts"][0])
    assert again.status_code == 200 and again.json["duplicate"] is True
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Image)) == 2


@pytest.mark.parametrize("name,status,reason", [
    ("text.png", 422, "not a readable image"),
    ("bomb.png", 422, "pixel limit"),
    ("lying.png", 422, "content is JPEG"),
    ("animated.webp", 422, "animated"),
])
def test_bad_uploads_get_a_json_reason(client, owner, name, status, reason):
    client.post("/api/v1/models", headers=owner["auth"], json={"name": "Acme-1"})
    response = upload(client, owner["auth"], "Acme-1", name, owner["prompts"][0])
    assert response.status_code == status and reason in response.json["error"]


def test_upload_permissions_and_malformed_requests(client, owner, app):
    client.post("/api/v1/models", headers=owner["auth"], json={"name": "Acme-1"})
    # another owner's model is answered like a model that does not exist: no name oracle
    theirs = upload(client, owner["other"], "Acme-1", "ok.png", owner["prompts"][0])
    nobody = upload(client, owner["other"], "Nope", "ok.png", owner["prompts"][0])
    assert theirs.status_code == nobody.status_code == 404
    assert theirs.json["error"].replace("Acme-1", "Nope") == nobody.json["error"]
    assert upload(client, owner["auth"], "Acme-1", "ok.png", 424242).status_code == 404
    missing = client.post("/api/v1/models/Acme-1/images", headers=owner["auth"],
                          data={"prompt_id": "1"}, content_type="multipart/form-data")
    assert missing.status_code == 400
    app.config["MAX_CONTENT_LENGTH"] = 1000
    big = upload(client, owner["auth"], "Acme-1", "ok.png", owner["prompts"][0],
                 data=b"\0" * 5000)
    assert big.status_code == 413 and "too large" in big.json["error"]


def test_prompts_listing(client, owner):
    body = client.get("/api/v1/prompts?set=DrawBench-mini").json
    assert [p["id"] for p in body["prompts"]] == owner["prompts"]
    assert client.get("/api/v1/prompts?set=missing").status_code == 404


def test_cli_owner_model_and_import_from_zip(runner, app, tmp_path):
    with app.app_context():
        make_prompt_set("s", ["a cat"])
        pid = db.session.scalar(select(Prompt.id))
    token = runner.invoke(args=["owner", "create", "initech"])
    assert token.exit_code == 0 and token.stdout.strip().startswith("owner_")
    for name in ("Initech-A", "Initech-B"):
        made = runner.invoke(args=["model", "create", name, "--owner", "initech"])
        assert made.exit_code == 0, made.output
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.write(IMAGES / "ok.png", f"{pid}_1.png")
        bundle.write(IMAGES / "ok.jpg", f"{pid}_2.jpg")
        bundle.write(IMAGES / "truncated.png", f"{pid}_3.png")
    result = runner.invoke(args=["import", "--model", "Initech-A", str(archive)])
    assert result.exit_code == 1
    assert "2 accepted, 0 already there, 1 refused" in result.stdout
    assert f"refused  {pid}_3.png: not a readable image" in result.stderr
    assert runner.invoke(args=["campaign", "create", "C1", "--prompt-set", "s", "--models",
                               "Initech-A,Initech-B"]).exit_code == 0
    published = runner.invoke(args=["campaign", "publish", "C1"])
    assert published.exit_code == 0, published.output
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / "x.webp").write_bytes((IMAGES / "ok.webp").read_bytes())
    (folder / "manifest.csv").write_text(f"prompt_id,path\n{pid},x.webp\n")
    result = runner.invoke(args=["import", "--model", "Initech-B", str(folder)])
    assert result.exit_code == 0, result.output
    assert "1 accepted" in result.stdout
    with app.app_context():
        # 2 images of A x 1 image of B, three criteria
        assert db.session.scalar(select(func.count()).select_from(Comparison)) == 6
    missing = runner.invoke(args=["import", "--model", "Nope", str(folder)])
    assert missing.exit_code == 3 and "no model named 'Nope'" in missing.output
    taken = runner.invoke(args=["owner", "create", "initech"])
    assert taken.exit_code == 5 and "exists already" in taken.output
    assert runner.invoke(args=["owner", "revoke", "initech"]).exit_code == 0
