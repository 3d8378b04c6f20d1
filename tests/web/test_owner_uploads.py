"""Owners: token, model registration and uploads by API and CLI."""

import io
import zipfile
from pathlib import Path

import pytest
from sqlalchemy import func, select

from arena import owners
from arena.extensions import db
from arena.models import Comparison, Image, Prompt, PromptSet

IMAGES = Path(__file__).resolve().parent.parent / "data" / "images"


@pytest.fixture
def owner(app):
    with app.app_context():
        prompt_set = PromptSet(name="DrawBench-mini")
        db.session.add(prompt_set)
        db.session.flush()
        db.session.add_all([Prompt(prompt_set_id=prompt_set.id, position=i, text=f"p{i}")
                            for i in (1, 2)])
        db.session.commit()
        token = owners.create_owner("acme")
        other = owners.create_owner("globex")
        prompt_ids = db.session.scalars(select(Prompt.id).order_by(Prompt.id)).all()
    return {"auth": {"Authorization": f"Bearer {token}"},
            "other": {"Authorization": f"Bearer {other}"}, "prompts": prompt_ids}


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
    assert client.post("/api/v1/models", headers=owner["auth"],
                       json={"name": "Acme-1"}).status_code == 400
    with app.app_context():
        from arena import campaigns
        from arena.models import Owner

        other = db.session.scalar(select(Owner).where(Owner.name == "globex"))
        owners.register_model(other, "Globex-1")
        live = campaigns.create_campaign("Live", "DrawBench-mini", ["Acme-1", "Globex-1"])
        campaigns.publish(live)
        globex = db.session.scalar(select(owners.GenModel).where(
            owners.GenModel.name == "Globex-1"))
        from arena.ingest import ingest_image

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
    assert upload(client, owner["other"], "Acme-1", "ok.png",
                  owner["prompts"][0]).status_code == 403
    assert upload(client, owner["auth"], "Nope", "ok.png", owner["prompts"][0]).status_code == 404
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
        prompt_set = PromptSet(name="s")
        db.session.add(prompt_set)
        db.session.flush()
        db.session.add(Prompt(prompt_set_id=prompt_set.id, position=1, text="a cat"))
        db.session.commit()
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
    assert runner.invoke(args=["import", "--model", "Nope", str(folder)]).exit_code != 0
    assert runner.invoke(args=["owner", "revoke", "initech"]).exit_code == 0
