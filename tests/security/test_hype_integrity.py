"""Attacks on HYPE scores by the evaluator who produces them: claim longer exposures, void
the hard trials, or clear cookies to skip the qualification's retry delay."""

from __future__ import annotations

import re
from datetime import timedelta

import numpy as np
import pytest
from PIL import Image as PILImage
from sqlalchemy import func, select

from arena.extensions import db
from arena.hype import runs, timing
from arena.models import HypeStage, HypeTrial, Voter, utcnow
from tests.factories import answer_trial, make_campaign, new_voter
from tests.web.helpers import csrf_token

HZ60 = 1000 / 60


def honest(requested: float) -> timing.Report:
    frames = timing.frames_for(requested, HZ60)
    return timing.Report(frames=frames, frame_ms=HZ60, actual_ms=frames * HZ60)


def time_run(ctx, tmp_path, trials: int, prompts: int, images: int, reals: int):
    """A HYPE-time run of one block of ``trials`` trials over two models' images and
    ``reals`` real ones, with a four-trial qualification anyone passes."""
    ctx.config.update(HYPE_QUALIFICATION_TRIALS=4, HYPE_QUALIFICATION_PASS=0.0,
                      HYPE_TIME_BLOCKS=1, HYPE_TIME_BLOCK_TRIALS=trials)
    make_campaign(n_prompts=prompts, n_models=2, images_per_model=images, gold=False)
    folder = tmp_path / "reals"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for k in range(reals):
        PILImage.fromarray(rng.integers(0, 255, (40, 40, 3)).astype("uint8")).save(
            folder / f"{k}.png")
    runs.import_reals(folder)
    return runs.create_run("Timed", "time", ["model-0", "model-1"])


def qualified_stage(run):
    """A new evaluator's HYPE-time stage of ``run``, its qualification passed."""
    voter = new_voter()
    qualification = runs.start_stage(run, voter, "qualification", np.random.default_rng(0))
    while runs.next_trial(qualification) is not None:
        answer_trial(qualification, lambda t: t.is_real)
    return runs.start_stage(run, voter, "time", np.random.default_rng(1))


@pytest.fixture
def timed(ctx, tmp_path):
    """A qualified evaluator's HYPE-time stage of one block of 8 trials."""
    return qualified_stage(time_run(ctx, tmp_path, trials=8, prompts=2, images=3, reals=8))


@pytest.mark.parametrize("claim", [
    timing.Report(frames=600, frame_ms=HZ60, actual_ms=9999.5),  # the attack's 9999.5 ms
    timing.Report(frames=30, frame_ms=HZ60, actual_ms=9999.5),  # frames right, time not
    timing.Report(frames=3, frame_ms=166.7, actual_ms=500.0),  # a 6 Hz "display"
    timing.Report(frames=30, frame_ms=float("nan"), actual_ms=500.0),
    timing.Report(),  # nothing reported
], ids=["long", "mismatch", "slow-display", "nan", "missing"])
def test_a_page_cannot_claim_an_exposure_the_server_did_not_ask_for(timed, claim):
    trial = runs.next_trial(timed)
    answer_trial(timed, trial.is_real, claim)
    stored = db.session.get(HypeTrial, trial.id)
    assert stored.voided and stored.void_reason == "timing" and stored.actual_ms is None
    assert stored.requested_ms == 500
    # the staircase did not move on it, and the next honest report counts at face value
    nxt = runs.next_trial(timed)
    assert runs.requested_exposure(timed, nxt) == 500
    answer_trial(timed, nxt.is_real, honest(500))
    assert db.session.get(HypeTrial, nxt.id).actual_ms == pytest.approx(500, abs=0.01)


def test_an_answer_sooner_than_the_countdown_allows_is_not_believed(timed):
    view = runs.stage_view(timed, np.random.default_rng(0))  # the page gets the trial now
    served = db.session.get(HypeTrial, view.trial.id).served_at
    runs.answer(timed, view.trial.id, view.trial.is_real, honest(500),
                now=served + timedelta(milliseconds=900))  # the countdown alone is 1.5 s
    assert db.session.get(HypeTrial, view.trial.id).void_reason == "timing"
    view = runs.stage_view(timed, np.random.default_rng(0))
    served = db.session.get(HypeTrial, view.trial.id).served_at
    runs.answer(timed, view.trial.id, view.trial.is_real, honest(500),
                now=served + timedelta(milliseconds=2600))
    assert db.session.get(HypeTrial, view.trial.id).void_reason is None


def test_a_second_look_after_a_reload_does_not_count(timed, client, ctx):
    """A timed image is shown, the page reloaded (by hand, or because the
    answer could not be sent) and the same image came back with a fresh countdown, and the
    answer to that second look counted. A trial served again once its image could have
    been on screen is voided as "repeat", and the page serves the next one and says so."""
    rng = np.random.default_rng(0)
    first = runs.stage_view(timed, rng).trial
    again = runs.stage_view(timed, rng)  # reloaded within the countdown: nothing was shown
    assert again.trial.id == first.id and not again.repeat_voided
    countdown = ctx.config["HYPE_COUNTDOWN_MS"]
    first.served_at = utcnow() - timedelta(milliseconds=countdown + 600)  # the image showed
    db.session.commit()
    with client.session_transaction() as cookie:
        cookie["voter"] = db.session.get(Voter, timed.voter_id).public_id
    page = client.get(f"/hype/s/{timed.public_id}")
    assert page.status_code == 200
    assert "does not count: here is the next one" in page.get_data(as_text=True)
    stored = db.session.get(HypeTrial, first.id)
    assert stored.voided and stored.void_reason == "repeat" and stored.judged_real is None
    following = runs.next_trial(timed)
    assert following.id != first.id and following.served_at is not None  # the page's now
    assert f'data-trial="{following.id}"' in page.get_data(as_text=True)
    # the answer the page had for the first image is not taken, and moves nothing
    assert runs.answer(timed, first.id, first.is_real, honest(500)) is None
    assert runs.requested_exposure(timed, following) == 500
    assert runs.stage_progress(timed) == (1, 8)
    answer_trial(timed, following.is_real, honest(500))
    assert db.session.get(HypeTrial, following.id).void_reason is None


def test_a_reload_of_the_last_trial_closes_the_stage(timed, ctx):
    rng = np.random.default_rng(0)
    while runs.stage_progress(timed)[0] < 7:
        answer_trial(timed, lambda t: t.is_real,
                     honest(runs.requested_exposure(timed, runs.next_trial(timed))))
    last = runs.stage_view(timed, rng).trial
    last.served_at = utcnow() - timedelta(milliseconds=ctx.config["HYPE_COUNTDOWN_MS"] + 1)
    db.session.commit()
    view = runs.stage_view(timed, rng)
    assert view.trial is None and view.repeat_voided and timed.finished_at is not None
    assert db.session.get(HypeTrial, last.id).void_reason == "repeat"


def test_voiding_the_hard_trials_flags_the_evaluator(timed, ctx):
    """Voiding used to be the client's choice, silently: an evaluator could void every
    trial they got wrong. Voids are kept, counted, and past HYPE_VOID_LIMIT the evaluator is
    left out of the scores and the report says so."""
    while (trial := runs.next_trial(timed)) is not None:
        wrong = trial.position % 2 == 0
        if wrong:  # would have been wrong: void it
            answer_trial(timed, not trial.is_real, timing.Report(voided=True))
        else:
            answer_trial(timed, trial.is_real, honest(runs.requested_exposure(timed, trial)))
    voids = db.session.scalars(select(HypeTrial.void_reason).where(
        HypeTrial.stage_id == timed.id, HypeTrial.voided.is_(True))).all()
    assert voids == ["page"] * 4
    assert timed.flag == "voided"
    scores, _, evaluators = runs.report(timed.run, rounds=100)
    assert scores == [] and evaluators["flagged"] == 1


def test_clearing_cookies_does_not_skip_the_retry_delay(app, tmp_path):
    """A failed evaluator came back with a new cookie and qualified at once. The delay now
    holds for their network as well."""
    app.config.update(HYPE_QUALIFICATION_TRIALS=4, HYPE_INFINITY_TRIALS=4)
    reals = tmp_path / "reals"
    reals.mkdir()
    for k in range(6):
        PILImage.new("RGB", (20, 20), (k * 30, 90, 200)).save(reals / f"{k}.png")
    with app.app_context():
        make_campaign(n_prompts=2, n_models=2, images_per_model=3, gold=False)
        runs.import_reals(reals)
        runs.create_run("Pilot", "infinity", ["model-0", "model-1"])
    def start(client):
        page = client.get("/hype/Pilot").get_data(as_text=True)
        return client.post("/hype/Pilot/start", data={"csrf_token": csrf_token(page),
                                                      "kind": "qualification"})

    first = app.test_client()
    first.environ_base["REMOTE_ADDR"] = "203.0.113.5"
    location = start(first).headers["Location"]
    for _ in range(4):  # everything "real": 0% on the fakes, a fail
        html = first.get(location).get_data(as_text=True)
        trial_id = re.search(r'name="trial_id" value="(\d+)"', html)[1]
        first.post(location + "/answer", data={"csrf_token": csrf_token(html),
                                               "trial_id": trial_id, "judged": "real"})
    again = app.test_client()  # cookies cleared
    again.environ_base["REMOTE_ADDR"] = "203.0.113.77"  # same /24
    refused = start(again)
    assert refused.status_code == 409 and "later" in refused.get_data(as_text=True)
    elsewhere = app.test_client()
    elsewhere.environ_base["REMOTE_ADDR"] = "198.51.100.5"
    assert start(elsewhere).status_code == 303
    with app.app_context():  # after the delay the network may try again
        for stage in db.session.scalars(select(HypeStage)):
            if stage.finished_at:
                stage.finished_at = utcnow() - timedelta(hours=25)
        db.session.commit()
    assert start(again).status_code == 303


def test_trials_never_shown_cannot_be_answered(timed, app):
    """An evaluator answered ten later trials instantly (the countdown check was skipped for a
    trial never served); four counted. Only the trial on the screen can be answered now."""
    later = db.session.scalars(select(HypeTrial).where(HypeTrial.stage_id == timed.id)
                               .order_by(HypeTrial.position.desc())).first()
    with pytest.raises(runs.TrialNotOnScreen):
        runs.answer(timed, later.id, later.is_real, honest(500))
    current = runs.next_trial(timed)  # not served yet either: no page has shown it
    with pytest.raises(runs.TrialNotOnScreen):
        runs.answer(timed, current.id, current.is_real, honest(500))
    assert db.session.scalar(select(func.count()).select_from(HypeTrial).where(
        HypeTrial.stage_id == timed.id, HypeTrial.answered_at.is_not(None))) == 0


def test_a_display_cannot_change_its_refresh_rate_between_images(timed):
    """An evaluator's page claimed 34 ms frames with one extra on some trials: 544 ms recorded for a
    requested 500, 1020 ms above the staircase's cap. One display keeps one refresh interval
    and shows exactly the frames asked for; exposures stay within the staircase's range."""
    first = runs.next_trial(timed)
    answer_trial(timed, first.is_real, honest(500))  # a 60 Hz display: counted
    steer = runs.next_trial(timed)
    requested = runs.requested_exposure(timed, steer)
    frames = timing.frames_for(requested, 34.0) + 1
    answer_trial(timed, steer.is_real,
                 timing.Report(frames=frames, frame_ms=34.0, actual_ms=frames * 34.0))
    assert db.session.get(HypeTrial, steer.id).void_reason == "timing"
    extra = runs.next_trial(timed)  # the same display, one frame more than asked
    requested = runs.requested_exposure(timed, extra)
    frames = timing.frames_for(requested, HZ60) + 1
    answer_trial(timed, extra.is_real,
                 timing.Report(frames=frames, frame_ms=HZ60, actual_ms=frames * HZ60))
    assert db.session.get(HypeTrial, extra.id).void_reason == "timing"
    recorded = db.session.scalars(select(HypeTrial.actual_ms).where(
        HypeTrial.stage_id == timed.id, HypeTrial.voided.is_(False),
        HypeTrial.answered_at.is_not(None))).all()
    assert recorded and all(100 <= ms <= 1000 for ms in recorded)


def test_an_answer_long_after_the_image_is_not_believed(timed, ctx):
    ctx.config["HYPE_ANSWER_LIMIT_MS"] = 5_000
    trial = runs.next_trial(timed)
    answer_trial(timed, trial.is_real, honest(500), pause_ms=20_000)  # studied at leisure
    assert db.session.get(HypeTrial, trial.id).void_reason == "timing"


def test_answering_wrong_on_purpose_is_left_out(timed):
    """Answering every trial wrong drives the staircase to its cap and moved a model's score
    (677 ms against 300). A stage right less often than guessing is flagged and left out."""
    while (trial := runs.next_trial(timed)) is not None:
        answer_trial(timed, not trial.is_real, honest(runs.requested_exposure(timed, trial)))
    assert timed.flag == "below chance"
    scores, _, evaluators = runs.report(timed.run, rounds=100)
    assert scores == [] and evaluators["flagged"] == 1


def test_steering_the_staircase_while_right_overall_is_flagged(ctx, tmp_path):
    """An owner who recognises its model's images (and knows the rest are real) answers
    wrong until the exposure reaches 750 ms and right from there: the staircase climbs to
    that level and the evaluator is right more often than not, so the stage is not below
    chance. Wrong beyond guessing at its shorter exposures is no viewer's path: flagged
    "steered" and left out. An honest viewer of the same stage is not."""
    run = time_run(ctx, tmp_path, trials=40, prompts=6, images=4, reals=40)
    rng = np.random.default_rng(0)

    def stage_of(answer):
        stage = qualified_stage(run)
        while (trial := runs.next_trial(stage)) is not None:
            requested = runs.requested_exposure(stage, trial)
            right = answer(requested, rng)
            answer_trial(stage, trial.is_real if right else not trial.is_real, honest(requested))
        return stage

    steered = stage_of(lambda ms, _: ms >= 750)
    exposures, correct = runs._exposures(steered)
    assert max(exposures) >= 700 and np.mean(correct) > 0.5  # up there, right overall
    assert steered.flag == "steered"
    # a viewer at chance below 400 ms and sure above it
    viewer = stage_of(lambda ms, rng: ms >= 400 or rng.random() < 0.5)
    assert viewer.flag is None
    assert runs.report(run, rounds=100)[2]["flagged"] == 1


def test_qualifications_opened_early_do_not_pre_empt_the_retry_delay(app, tmp_path):
    """Evaluators B, C and D opened qualifications on A's network before A failed, then
    finished theirs. A failure on the network now holds every open qualification on it."""
    app.config.update(HYPE_QUALIFICATION_TRIALS=4, HYPE_INFINITY_TRIALS=4)
    with app.app_context():
        make_campaign(n_prompts=2, n_models=2, images_per_model=3, gold=False)
        reals = tmp_path / "reals"
        reals.mkdir()
        for k in range(6):
            PILImage.new("RGB", (20, 20), (k * 30, 90, 200)).save(reals / f"{k}.png")
        runs.import_reals(reals)
        run = runs.create_run("Pilot", "infinity", ["model-0", "model-1"])
        rng = np.random.default_rng(0)
        failing, early = (runs.start_stage(run, new_voter(), "qualification", rng,
                                           network="n:same") for _ in range(2))
        answer_trial(early, lambda t: t.is_real)  # one answer before the failure
        while runs.next_trial(failing) is not None:
            answer_trial(failing, True)  # everything "real": a fail
        assert failing.passed is False
        with pytest.raises(runs.QualificationOnHold) as held:
            answer_trial(early, lambda t: t.is_real)
        assert held.value.details["retry_after_ms"] > 0
        elsewhere = runs.start_stage(run, new_voter(), "qualification", rng, network="n:other")
        assert answer_trial(elsewhere, lambda t: t.is_real) is True
