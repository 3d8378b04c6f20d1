"""An owner uploads a batch in real Chromium: progress, per-file results, good files kept."""

from sqlalchemy import func, select

from arena.campaigns import campaigns
from arena.catalog import ingest
from arena.extensions import db
from arena.models import Comparison, GenModel, Image, Prompt
from tests.datasets import IMAGES
from tests.factories import make_model, make_owner, make_prompt_set


def test_owner_uploads_a_batch_with_progress(app, live_server, phone, tmp_path):
    with app.app_context():
        make_prompt_set("s", ["a red cube"])
        owner, token = make_owner("acme")
        pid = db.session.scalar(select(Prompt.id))
    batch = tmp_path / "batch"
    batch.mkdir()
    for name, target in (("ok.png", f"{pid}_1.png"), ("ok.jpg", "b.jpg"),
                         ("bomb.png", f"{pid}_3.png"), ("lying.png", f"{pid}_4.png")):
        (batch / target).write_bytes((IMAGES / name).read_bytes())
    (batch / "manifest.csv").write_text(f"prompt_id,path\n{pid},b.jpg\n")

    phone.goto(live_server + "/owner/")
    phone.get_by_label("Owner token").fill(token)
    phone.get_by_role("button", name="Sign in").tap()
    phone.get_by_label("Name").fill("Acme-1")
    phone.get_by_role("button", name="Register").tap()
    phone.get_by_role("heading", name="Acme-1").wait_for()
    with app.app_context():  # the operator lets the new model join a live campaign
        rival = make_model("Rival", owner)
        assert ingest.ingest_image(rival, pid, (IMAGES / "ok.webp").read_bytes(),
                                   "r.webp").ok
        campaign = campaigns.create_campaign("Live", "s", ["Rival"])
        campaigns.add_model(campaign, "Acme-1")
        campaigns.publish(campaign)
        assert db.session.scalar(select(GenModel).where(GenModel.name == "Acme-1"))
    # drop the files on the zone, as a desktop user would
    payload = [{"name": p.name, "data": list(p.read_bytes())} for p in sorted(batch.iterdir())]
    phone.evaluate("""files => {
        const dt = new DataTransfer();
        for (const f of files) dt.items.add(new File([new Uint8Array(f.data)], f.name));
        const zone = document.querySelector('.drop');
        zone.dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true,
                                                  cancelable: true}));
    }""", payload)
    phone.get_by_text("5 files ready.").wait_for()
    phone.get_by_role("button", name="Upload").tap()
    phone.get_by_text("Done: 2 accepted, 2 refused.").wait_for()
    assert phone.locator("#upload-progress").evaluate("el => el.value === el.max")
    results = phone.locator("#upload-results li")
    assert results.count() == 4
    text = results.all_inner_texts()
    assert any("pixel limit" in t for t in text)
    assert any("content is JPEG" in t for t in text)
    # the progress section reloads itself after the batch
    phone.locator("#stats").get_by_text("a red cube").wait_for()
    assert "2 × #" in phone.locator("#stats").inner_text()
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Image)) == 3
        # the two accepted images each face Rival's image, for three criteria
        assert db.session.scalar(select(func.count()).select_from(Comparison)) == 6
