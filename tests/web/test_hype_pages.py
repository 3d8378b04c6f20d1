import re

import pytest
from PIL import Image as PILImage
from sqlalchemy import select

from arena.extensions import db
from arena.hype import runs
from tests.factories import make_campaign

from .helpers import csrf_token


@pytest.fixture
def pilot(app, tmp_path):
    app.config.update(HYPE_QUALIFICATION_TRIALS=4, HYPE_INFINITY_TRIALS=4)
    reals = tmp_path / "reals"
    reals.mkdir()
    for k in range(6):
        PILImage.new("RGB", (16, 16), (40 * k, 10, 10)).save(reals / f"{k}.png")
    with app.app_context():
        make_campaign(n_prompts=1, n_models=2, images_per_model=3, gold=False)
        runs.import_reals(reals)
        runs.create_run("Pilot", "infinity", ["model-0", "model-1"])


def start(client):
    html = client.get("/hype/Pilot").get_data(as_text=True)
    response = client.post("/hype/Pilot/start", data={"csrf_token": csrf_token(html),
                                                      "kind": "qualification"})
    assert response.status_code == 303
    return response.headers["Location"], client.get(response.headers["Location"]).get_data(
        as_text=True)


def test_no_javascript_flow_and_failed_check(client, pilot):
    location, html = start(client)
    for _ in range(4):
        trial = re.search(r'name="trial_id" value="(\d+)"', html).group(1)
        response = client.post(location + "/answer", data={
            "csrf_token": csrf_token(html), "trial_id": trial, "judged": "real"})
        assert response.status_code == 303
        html = client.get(location).get_data(as_text=True)
    assert "Not this time" in html  # calling everything real fails on the fakes
    page = client.get("/hype/Pilot").get_data(as_text=True)
    assert "try again later" in page
    assert "model-" not in html


def test_scored_task_refused_before_qualifying(client, pilot):
    html = client.get("/hype/Pilot").get_data(as_text=True)
    response = client.post("/hype/Pilot/start", data={"csrf_token": csrf_token(html),
                                                      "kind": "infinity"})
    assert response.status_code == 409 and "qualification first" in response.get_data(
        as_text=True)


def test_a_run_that_cannot_finish_says_so_before_the_check(client, pilot, app):
    """A 100-image qualification could be passed on a HYPE-time run that could never
    start (too few images) and was refused only then. Now the run page says so and no check
    is started."""
    from sqlalchemy import func

    from arena.models import HypeStage

    app.config["HYPE_INFINITY_TRIALS"] = 40  # 20 reals and 20 fakes of each model needed
    html = client.get("/hype/Pilot").get_data(as_text=True)
    assert "cannot start yet" in html and "Start the check" not in html
    response = client.post("/hype/Pilot/start", data={"csrf_token": csrf_token(html),
                                                      "kind": "qualification"})
    assert response.status_code == 409
    assert "not enough real images: 6 available, 20 needed" in response.get_data(
        as_text=True)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(HypeStage)) == 0
        app.config["HYPE_INFINITY_TRIALS"] = 10  # 5 reals (6 exist), 5 of each model (3)
        assert runs.readiness(runs.get_run("Pilot")) == \
            "not enough images of model-0: 3 available, 5 needed"
        app.config["HYPE_INFINITY_TRIALS"] = 6
        assert runs.readiness(runs.get_run("Pilot")) is None


def test_a_run_that_could_not_start_is_refused_when_created(app, pilot, runner):
    """The issue: refuse such a run when the operator creates it, saying what is missing."""
    from arena.errors import Conflict
    from arena.models import HypeRun

    app.config["HYPE_INFINITY_TRIALS"] = 40
    with app.app_context():
        with pytest.raises(Conflict, match="not enough real images: 6 available, 20 needed"):
            runs.create_run("Big", "infinity", ["model-0"])
        assert db.session.scalar(select(HypeRun).where(HypeRun.name == "Big")) is None
    result = runner.invoke(args=["hype", "create-run", "Big", "--models", "model-0"])
    assert result.exit_code != 0 and "could not start: not enough real images" in result.output


def test_stages_are_private_and_answers_validated(client, pilot, app):
    location, html = start(client)
    assert app.test_client().get(location).status_code == 403
    trial = re.search(r'name="trial_id" value="(\d+)"', html).group(1)
    bad = client.post(location + "/answer", data={"csrf_token": csrf_token(html),
                                                  "trial_id": trial, "judged": "maybe"})
    assert bad.status_code == 400
    assert client.get("/hype/Nope").status_code == 404
    assert "No finished task yet" in client.get("/hype/Pilot/report").get_data(as_text=True)
