import json

import numpy as np
import pytest
from PIL import Image as PILImage
from sqlalchemy import select

from arena.errors import Conflict, Invalid, NotFound
from arena.extensions import db
from arena.hype import runs, timing
from arena.models import HypeTrial, Image
from tests.factories import answer_trial, make_campaign, new_voter


@pytest.fixture
def run(ctx, tmp_path):
    ctx.config.update(HYPE_QUALIFICATION_TRIALS=8, HYPE_INFINITY_TRIALS=6)
    make_campaign(n_prompts=2, n_models=2, images_per_model=3, gold=False)
    reals = tmp_path / "reals"
    reals.mkdir()
    for k in range(10):
        PILImage.new("RGB", (20, 20), (k * 20, 200 - k * 10, 90)).save(reals / f"r{k}.png")
    (reals / "notes.txt").write_text("not an image")
    stored, refused = runs.import_reals(reals)
    reason = "file type .txt not accepted (.jpg, .png or .webp)"
    assert stored == 10 and refused == [("notes.txt", reason)]
    return runs.create_run("Pilot", "infinity", ["model-0", "model-1"])


def shown(requested: float, frame_ms: float = 1000 / 60) -> timing.Report:
    """What an honest 60 Hz page reports for an image it was asked to show for
    ``requested`` ms: whole frames, and the time they took."""
    frames = timing.frames_for(requested, frame_ms)
    return timing.Report(frames=frames, frame_ms=frame_ms, actual_ms=frames * frame_ms)


def evaluator():
    return new_voter()


def answer_all(stage, rule):
    while runs.next_trial(stage) is not None:
        answer_trial(stage, rule)


def test_scored_task_needs_qualification_and_labels_stay_server_side(run):
    voter = evaluator()
    with pytest.raises(runs.NotQualified):
        runs.start_stage(run, voter, "infinity", np.random.default_rng(0))
    stage = runs.start_stage(run, voter, "qualification", np.random.default_rng(0))
    trials = db.session.scalars(select(HypeTrial).where(HypeTrial.stage_id == stage.id)).all()
    assert len(trials) == 8 and sum(t.is_real for t in trials) == 4
    fakes = [db.session.get(Image, t.image_id) for t in trials if not t.is_real]
    assert {f.model.name for f in fakes} == {"model-0", "model-1"}  # drawn from both
    answer_all(stage, lambda t: t.is_real)  # a perfect evaluator
    assert stage.passed is True
    task = runs.start_stage(run, voter, "infinity", np.random.default_rng(1))
    assert runs.stage_progress(task) == (0, 6)


def test_failed_qualification_waits_before_a_retry(run, ctx):
    voter = evaluator()
    stage = runs.start_stage(run, voter, "qualification", np.random.default_rng(0))
    answer_all(stage, lambda t: True)  # calls everything real: 0% on fakes
    assert stage.passed is False
    with pytest.raises(runs.NotQualified, match="later"):
        runs.start_stage(run, voter, "qualification", np.random.default_rng(1))
    ctx.config["HYPE_RETRY_HOURS"] = 0
    assert runs.start_stage(run, voter, "qualification", np.random.default_rng(1)).id != stage.id


def test_repeat_answers_change_nothing(run):
    voter = evaluator()
    stage = runs.start_stage(run, voter, "qualification", np.random.default_rng(0))
    trial = runs.next_trial(stage)
    assert answer_trial(stage, True) in (True, False)
    assert runs.answer(stage, trial.id, False) is None
    other = runs.start_stage(run, evaluator(), "qualification", np.random.default_rng(0))
    with pytest.raises(NotFound):
        runs.answer(other, trial.id, True)


def test_evaluators_are_balanced_over_models_and_scores_come_out(run):
    for k in range(4):
        voter = evaluator()
        answer_all(runs.start_stage(run, voter, "qualification", np.random.default_rng(k)),
                   lambda t: t.is_real)
        task = runs.start_stage(run, voter, "infinity", np.random.default_rng(10 + k))
        # fooled by every fake of model-1, never by model-0's
        answer_all(task, lambda t: t.is_real or t.image.model.name == "model-1")
    scores, _tests, qualified = runs.report(run, rounds=500)
    by = {s.model: s for s in scores}
    assert by["model-1"].evaluators == by["model-0"].evaluators == 2
    assert by["model-1"].score == 50 and by["model-1"].fakes_error == 100
    assert by["model-0"].score == 0
    assert qualified == {"qualified": 4, "tried": 4, "flagged": 0}


def test_not_enough_images(run, ctx):
    ctx.config["HYPE_QUALIFICATION_TRIALS"] = 100
    with pytest.raises(Conflict, match="not enough"):
        runs.start_stage(run, evaluator(), "qualification", np.random.default_rng(0))


def test_exports_round_trip_through_the_cli_scorer(run, app, tmp_path):
    from arena.accounts import tokens

    for k in range(4):
        voter = evaluator()
        answer_all(runs.start_stage(run, voter, "qualification", np.random.default_rng(k)),
                   lambda t: t.is_real)
        answer_all(runs.start_stage(run, voter, "infinity", np.random.default_rng(9 + k)),
                   lambda t: t.is_real or t.image.model.name == "model-1")
    token = tokens.create_token("ana")
    client = app.test_client()
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get("/api/v1/hype/Pilot/scores").status_code == 401
    body = client.get("/api/v1/hype/Pilot/scores", headers=headers).json
    assert [m["model"] for m in body["models"]] == ["model-1", "model-0"]
    csv_scores = client.get("/api/v1/hype/Pilot/scores?format=csv", headers=headers)
    assert csv_scores.get_data(as_text=True).startswith("rank,model,score")
    trials = client.get("/api/v1/hype/Pilot/trials", headers=headers).get_data(as_text=True)
    assert len(trials.strip().splitlines()) == 1 + 4 * 6
    path = tmp_path / "trials.csv"
    path.write_text(trials)
    result = app.test_cli_runner().invoke(args=["hype", "score", "--trials", str(path),
                                                "--format", "json", "--rounds", "500"])
    scored = {m["model"]: m["score"] for m in json.loads(result.output)["models"]}
    assert scored == {m["model"]: m["score"] for m in body["models"]}
    assert client.get("/api/v1/hype/Nope/trials", headers=headers).status_code == 404


def test_time_stage_blocks_staircase_masks_and_scores(ctx, run):
    ctx.config.update(HYPE_TIME_BLOCKS=2, HYPE_TIME_BLOCK_TRIALS=4)
    time_run = runs.create_run("Timed", "time", ["model-0", "model-1"])
    voter = evaluator()
    with pytest.raises(Invalid, match="HYPE-time"):
        runs.start_stage(time_run, voter, "infinity", np.random.default_rng(0))
    answer_all(runs.start_stage(time_run, voter, "qualification", np.random.default_rng(0)),
               lambda t: t.is_real)
    stage = runs.start_stage(time_run, voter, "time", np.random.default_rng(1))
    trials = db.session.scalars(select(HypeTrial).where(HypeTrial.stage_id == stage.id)
                                .order_by(HypeTrial.position)).all()
    assert [t.block for t in trials] == [1] * 4 + [2] * 4
    assert all(sum(t.is_real for t in trials if t.block == b) == 2 for b in (1, 2))
    assert 0 < len(time_run.masks) <= 12
    assert all(m.model_id is None and not m.is_real for m in time_run.masks)
    ctx.config["HYPE_VOID_LIMIT"] = 0.2  # one void in eight trials is allowed here
    first = runs.next_trial(stage)
    assert runs.requested_exposure(stage, first) == 500
    answer_trial(stage, first.is_real, shown(500))  # right: 10 ms shorter
    assert db.session.get(HypeTrial, first.id).actual_ms == pytest.approx(500.0, abs=0.1)
    second = runs.next_trial(stage)
    assert runs.requested_exposure(stage, second) == 490
    answer_trial(stage, not second.is_real, shown(490))  # wrong: 30 ms longer
    third = runs.next_trial(stage)
    assert runs.requested_exposure(stage, third) == 520
    answer_trial(stage, True, timing.Report(voided=True))  # a hidden tab
    fourth = runs.next_trial(stage)
    assert runs.requested_exposure(stage, fourth) == 520  # a void does not move it
    answer_trial(stage, fourth.is_real, shown(520))
    fifth = runs.next_trial(stage)
    assert fifth.block == 2 and runs.requested_exposure(stage, fifth) == 500  # fresh block
    while (trial := runs.next_trial(stage)) is not None:
        answer_trial(stage, trial.is_real, shown(runs.requested_exposure(stage, trial)))
    assert stage.flag is None
    scores, _tests, _ = runs.report(time_run, rounds=200)
    assert len(scores) == 1 and 400 < scores[0].paper_score < 520
    assert 100 <= scores[0].score <= 1000  # a fit on seven trials: held within the range


def test_honest_viewers_are_seldom_taken_for_steering(ctx):
    """Viewers at chance where the image is too short to see and sure where it is long
    (thresholds 150-800 ms, steep and shallow curves, with and without lapses, both
    staircases, three blocks of 150 trials as configured): the "steered" flag, a one-sided
    test at 1%, names at most that share of them."""
    from itertools import product

    from scipy.special import expit

    from arena.ranking.hype import ThreeInARow, WeightedUpDown

    rng = np.random.default_rng(0)
    rates = []
    for rule, threshold, spread, lapse in product((WeightedUpDown(), ThreeInARow()),
                                                  (150, 500, 800), (20, 200), (0.0, 0.1)):
        flagged = 0
        for _ in range(50):
            exposures, correct = [], []
            for _ in range(3):
                state = rule.start()
                for _ in range(150):
                    ok = bool(rng.random() < 0.5 + (0.5 - lapse) * expit(
                        (state.exposure_ms - threshold) / spread))
                    exposures.append(state.exposure_ms)
                    correct.append(ok)
                    state = rule.update(state, ok)
            flagged += timing.steered(exposures, correct)
        rates.append(flagged / 50)
    assert np.mean(rates) <= 0.01 and max(rates) <= 0.04, rates
