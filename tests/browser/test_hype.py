"""A HYPE evaluator on a phone: qualification, then the HYPE-infinity task, then the report."""

from PIL import Image as PILImage
from sqlalchemy import func, select

from arena import hype
from arena.extensions import db
from arena.models import HypeTrial
from tests.factories import make_campaign


def test_qualify_then_judge_then_report(app, live_server, phone, tmp_path):
    # a pass mark of 0 lets a browser that cannot know the labels qualify
    app.config.update(HYPE_QUALIFICATION_TRIALS=4, HYPE_INFINITY_TRIALS=6,
                      HYPE_QUALIFICATION_PASS=0.0)
    reals = tmp_path / "reals"
    reals.mkdir()
    for k in range(8):
        PILImage.new("RGB", (32, 32), (30 * k, 90, 200 - 20 * k)).save(reals / f"{k}.png")
    with app.app_context():
        make_campaign(n_prompts=2, n_models=2, images_per_model=3, gold=False)
        hype.import_reals(reals)
        hype.create_run("Pilot", "infinity", ["model-0", "model-1"])

    phone.goto(live_server + "/hype/")
    phone.get_by_role("link", name="Pilot").tap()
    phone.get_by_role("button", name="Start the check").tap()
    for k in range(4):
        phone.get_by_text(f"Check {k + 1} of 4").wait_for()
        src = phone.locator("img.hype-image").get_attribute("src")
        assert "model" not in src and "real" not in src and "fake" not in src
        phone.get_by_role("button", name="Real" if k % 2 else "Fake").tap()
    phone.get_by_role("heading", name="You passed the check").wait_for()
    phone.get_by_role("link", name="Continue").tap()
    phone.get_by_role("button", name="Start the task").tap()
    for k in range(6):
        phone.get_by_text(f"Image {k + 1} of 6").wait_for()
        phone.get_by_role("button", name="Fake").tap()
    phone.get_by_role("heading", name="Thank you!").wait_for()
    with app.app_context():
        answered = db.session.scalar(select(func.count()).select_from(HypeTrial).where(
            HypeTrial.answered_at.is_not(None)))
        assert answered == 10
    phone.goto(live_server + "/hype/Pilot/report")
    row = phone.locator("table.ranking tbody tr").first.inner_text()
    # always "Fake": every real image was wrong, every fake right -> 50%, reals error 100%
    assert "50.00%" in row and "100.00%" in row
