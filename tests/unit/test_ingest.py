"""Every fixture in tests/data/images gets the right outcome through the one ingestion path."""

import io
import zipfile
from pathlib import Path

import pytest
from PIL import Image as PILImage
from sqlalchemy import func, select

from arena.catalog import ingest
from arena.errors import Conflict, NotFound, Rejected
from arena.extensions import db
from arena.infra.storage import get_storage
from arena.models import Comparison, Image, Prompt
from tests.datasets import IMAGES
from tests.factories import make_model, make_owner, make_prompt_set


@pytest.fixture
def setup(ctx):
    prompt_set = make_prompt_set("t", ["p1", "p2"])
    owner, _ = make_owner("acme")
    prompts = db.session.scalars(select(Prompt.id).where(Prompt.prompt_set_id == prompt_set.id)
                                 .order_by(Prompt.id)).all()
    return {"model": make_model("Acme-1", owner), "rival": make_model("Acme-2", owner),
            "prompts": list(prompts)}


def _png(k: int) -> bytes:
    buf = io.BytesIO()
    PILImage.new("RGB", (16, 16), (k * 40 % 256, 90, 200)).save(buf, "PNG")
    return buf.getvalue()


def stored_files(app) -> int:
    return sum(1 for p in Path(app.config["IMAGE_DIR"]).rglob("*") if p.is_file())


@pytest.mark.parametrize("name", ["ok.png", "ok.jpg", "ok.webp", "cmyk.jpg",
                                  "exif_rotated.jpg"])
def test_good_files_are_accepted(setup, name):
    result = ingest.ingest_image(setup["model"], setup["prompts"][0],
                                 (IMAGES / name).read_bytes(), name)
    assert result.ok and not result.duplicate, result.reason
    row = db.session.get(Image, result.image_id)
    assert row.model_id == setup["model"].id and row.prompt_id == setup["prompts"][0]


def test_exif_orientation_applied_and_metadata_stripped(setup):
    result = ingest.ingest_image(setup["model"], setup["prompts"][0],
                                 (IMAGES / "exif_rotated.jpg").read_bytes(), "exif_rotated.jpg")
    row = db.session.get(Image, result.image_id)
    assert (row.width, row.height) == (40, 60)  # 60x40 turned upright
    with get_storage().open(f"{row.sha256}.full.webp") as fh:
        stored = PILImage.open(fh)
        stored.load()
    assert stored.format == "WEBP" and len(stored.getexif()) == 0
    assert b"ArenaTestCam" in (IMAGES / "exif_rotated.jpg").read_bytes()
    with get_storage().open(f"{row.sha256}.full.webp") as fh:
        assert b"ArenaTestCam" not in fh.read()


@pytest.mark.parametrize("name,reason", [
    ("truncated.png", "not a readable image"),
    ("bomb.png", "pixel limit"),
    ("huge_dimensions.png", "a side exceeds"),
    ("text.png", "not a readable image"),
    ("animated.webp", "animated images are not accepted"),
    ("lying.png", "the name says PNG but the content is JPEG"),
])
def test_bad_files_are_refused_with_a_reason_and_leave_nothing(setup, app, name, reason):
    before = stored_files(app)
    result = ingest.ingest_image(setup["model"], setup["prompts"][0],
                                 (IMAGES / name).read_bytes(), name)
    assert not result.ok and reason in result.reason
    assert stored_files(app) == before
    assert db.session.scalar(select(func.count()).select_from(Image)) == 0


def test_byte_limit_unknown_prompt_and_extension(setup, app):
    app.config["IMAGE_MAX_BYTES"] = 100
    big = ingest.ingest_image(setup["model"], setup["prompts"][0],
                              (IMAGES / "ok.jpg").read_bytes(), "ok.jpg")
    assert "byte limit" in big.reason
    app.config["IMAGE_MAX_BYTES"] = 10**7
    assert "no prompt 999" in ingest.ingest_image(setup["model"], 999, b"x", "a.png").reason
    gif = ingest.ingest_image(setup["model"], setup["prompts"][0], b"GIF89a", "a.gif")
    assert "file type .gif not accepted" in gif.reason


def test_reupload_is_detected_not_stored_twice(setup, app):
    data = (IMAGES / "ok.png").read_bytes()
    first = ingest.ingest_image(setup["model"], setup["prompts"][0], data, "ok.png")
    files = stored_files(app)
    again = ingest.ingest_image(setup["model"], setup["prompts"][0], data, "copy.png")
    assert again.ok and again.duplicate and again.image_id == first.image_id
    assert stored_files(app) == files
    # another model's upload of the same bytes is held out of every comparison, and said
    # so: silence did not hide it (no new pairs on the owner's page) and let a rival who
    # uploaded first have the rightful owner's images dropped without a word
    copied = ingest.ingest_image(setup["rival"], setup["prompts"][0], data, "ok.png")
    fresh = ingest.ingest_image(setup["rival"], setup["prompts"][1],
                                (IMAGES / "ok.webp").read_bytes(), "ok.webp")
    assert (copied.ok, copied.held, copied.duplicate) == (True, True, False)
    assert "held for review" in copied.reason
    assert (fresh.ok, fresh.held, fresh.reason) == (True, False, None)
    assert db.session.get(Image, copied.image_id).quarantined
    assert stored_files(app) > files  # the fresh one only
    # operators see the collision, with both sides
    from arena.catalog.presentation import collisions

    [held] = collisions()
    assert held.held_id == copied.image_id and held.original_id == first.image_id
    assert held.held_model == setup["rival"].name and setup["model"].name in held.original


def test_images_per_prompt_limit(setup, app):
    app.config["IMAGES_PER_PROMPT"] = 1
    ingest.ingest_image(setup["model"], setup["prompts"][0], (IMAGES / "ok.png").read_bytes(),
                        "a.png")
    second = ingest.ingest_image(setup["model"], setup["prompts"][0],
                                 (IMAGES / "ok.jpg").read_bytes(), "b.jpg")
    assert not second.ok and "already has 1 images" in second.reason


def test_comparisons_appear_as_models_upload_to_a_live_campaign(setup):
    from arena.campaigns import campaigns

    p = setup["prompts"][0]
    campaign = campaigns.create_campaign("c", "t", ["Acme-1", "Acme-2"])
    campaigns.publish(campaign)
    ingest.ingest_image(setup["model"], p, (IMAGES / "ok.png").read_bytes(), "a.png")
    assert db.session.scalar(select(func.count()).select_from(Comparison)) == 0
    ingest.ingest_image(setup["rival"], p, (IMAGES / "ok.jpg").read_bytes(), "b.jpg")
    ingest.ingest_image(setup["rival"], p, (IMAGES / "ok.webp").read_bytes(), "c.webp")
    # 1 x 2 cross-model pairs, for three criteria
    assert db.session.scalar(select(func.count()).select_from(Comparison)) == 6


def test_batch_keeps_good_files(setup):
    items = [(n, setup["prompts"][1], (IMAGES / n).read_bytes())
             for n in ("ok.png", "text.png", "ok.webp")]
    results = ingest.ingest_batch(setup["model"], items)
    assert [r.ok for r in results] == [True, False, True]


def test_zip_with_manifest_is_read_in_memory(setup, tmp_path, app):
    archive = tmp_path / "batch.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("gen/manifest.csv", f"prompt_id,path\n{setup['prompts'][0]},a.png\n"
                        f"{setup['prompts'][1]},missing.png\n")
        bundle.write(IMAGES / "ok.png", "gen/a.png")
    items = list(ingest.items_from_zip(archive))
    assert [(n, r if isinstance(r, str) else "bytes") for n, _, r in items] == [
        ("a.png", "bytes"), ("missing.png", "file not found in the archive")]
    app.config["IMAGE_MAX_BYTES"] = 10
    big = next(iter(ingest.items_from_zip(archive)))[2]
    assert "byte limit" in big


def test_a_corrupt_zip_member_is_that_files_failure(setup, tmp_path):
    """An import with one damaged member used to end in a raw traceback.
    Now the damaged file is reported and the others are stored."""
    archive = tmp_path / "batch.zip"
    good = (IMAGES / "ok.png").read_bytes()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr(f"{setup['prompts'][0]}_1.png", good)
        bundle.writestr(f"{setup['prompts'][1]}_1.png", good + b"x" * 5000)
    raw = bytearray(archive.read_bytes())
    second = raw.find(f"{setup['prompts'][1]}_1.png".encode()) + 40  # in its deflate data
    raw[second:second + 64] = bytes(64)
    archive.write_bytes(bytes(raw))
    results = ingest.ingest_batch(setup["model"], ingest.items_from_zip(archive))
    assert [r.ok for r in results] == [True, False]
    assert "corrupt in the archive" in results[1].reason


def test_folder_by_file_name_and_bad_manifest(setup, tmp_path):
    folder = tmp_path / "gen"
    folder.mkdir()
    (folder / f"{setup['prompts'][0]}_1.png").write_bytes((IMAGES / "ok.png").read_bytes())
    (folder / "notes.txt").write_text("hello")
    items = {name: (prompt_id, data) for name, prompt_id, data in
             ingest.items_from_folder(folder)}
    assert items["notes.txt"][0] is None and "<prompt_id>_<n>" in items["notes.txt"][1]
    assert items[f"{setup['prompts'][0]}_1.png"][0] == setup["prompts"][0]
    (folder / "manifest.csv").write_text("prompt_id,path\n1,../../etc/passwd\n")
    with pytest.raises(ingest.ManifestError, match=r"line 2: .* outside the folder"):
        list(ingest.items_from_folder(folder))
    (folder / "manifest.csv").write_text("file\nx.png\n")
    with pytest.raises(ingest.ManifestError, match=r"line 1: missing column.* prompt_id, path"):
        list(ingest.items_from_folder(folder))


def test_manifest_matches_paths_then_unambiguous_names():
    manifest = ingest.Manifest.parse("prompt_id,path\n7,a/x.png\n8,b/x.png\n9,c/y.png\n")
    assert manifest.prompt_for("a/x.png") == "7" and manifest.prompt_for("b/x.png") == "8"
    assert manifest.prompt_for("x.png") is None  # two files are called x.png: say which
    assert manifest.prompt_for("y.png") == "9" and manifest.prompt_for("c\\y.png") == "9"
    with pytest.raises(ingest.ManifestError, match="line 3: empty path"):
        ingest.Manifest.parse("prompt_id,path\n1,a.png\n2,\n")


def test_results_carry_the_kind_of_refusal(setup):
    model, (first, _) = setup["model"], setup["prompts"]
    assert isinstance(ingest.ingest_image(model, 999, b"x", "a.png").error, NotFound)
    assert isinstance(ingest.ingest_image(model, first, b"junk", "a.png").error, Rejected)
    ok = (IMAGES / "ok.png").read_bytes()
    accepted = ingest.ingest_image(model, first, ok, "a.png")
    assert accepted.error is None and "error" not in accepted.as_dict()
    for k in range(ingest.current_app.config["IMAGES_PER_PROMPT"]):
        ingest.ingest_image(model, first, _png(k), f"{k}.png")
    full = ingest.ingest_image(model, first, _png(99), "99.png")
    assert isinstance(full.error, Conflict) and "already has" in full.reason
