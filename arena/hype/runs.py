"""HYPE runs: real images, qualification, untimed (HYPE-infinity) tasks, scores from the log.

Each stage draws its trials when it starts (half real, half fake, shuffled) and stores the
real/fake label server-side; the page only ever gets an opaque image URL. An evaluator judges
one model in a scored task (the model with the fewest evaluators so far), as in the paper.
"""

from __future__ import annotations

import io
import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import numpy as np
from flask import current_app
from PIL import Image as PILImage
from sqlalchemy import func, select, update

from arena.catalog import images, presentation
from arena.errors import Conflict, Forbidden, Invalid, NotFound
from arena.extensions import db
from arena.hype import timing
from arena.infra.database import one_or_not_found
from arena.infra.secrets import pseudonym
from arena.models import GenModel, HypeRun, HypeStage, HypeTrial, Image, Voter, utcnow
from arena.ranking.hype import (
    STAIRCASES,
    Trials,
    evaluator_models,
    psychometric_curve,
    score_infinity,
    score_time,
    separability,
)
from arena.ranking.masks import phase_scramble

KINDS = ("qualification", "infinity", "time")


class TrialNotOnScreen(Conflict):
    """An answer to a trial other than the one on the evaluator's screen."""


class QualificationOnHold(Conflict):
    """A failure on the same network holds this qualification for the retry delay."""


class NotQualified(Conflict):
    """A scored task before passing the qualification, or a retry before the delay."""


def import_reals(folder: Path, progress=None) -> tuple[int, list[tuple[str, str]]]:
    """Store every image file of ``folder`` as a real (training-set) image; commits.
    Returns (number stored, [(file, reason)] refused)."""
    stored, refused = 0, []
    for path in sorted(p for p in Path(folder).iterdir() if p.is_file()):
        try:
            decoded = images.decode(path.read_bytes(), filename=path.name)
        except images.ImageRejected as exc:
            refused.append((path.name, str(exc)))
        else:
            row, created = images.store_new(decoded, model_id=None, prompt_id=None,
                                            is_real=True)
            if created:
                stored += 1
            elif not row.is_real:
                db.session.rollback()
                refused.append((path.name, "this exact image is a generated one"))
                continue
            db.session.commit()
        if progress:
            progress(1)
    return stored, refused


def create_run(name: str, mode: str, model_names: list[str]) -> HypeRun:
    """Open a HYPE run of ``model_names`` and commit. Raises Invalid (mode), Conflict (the
    name is taken, or the run could not start: too few real images or images of a model)
    or NotFound (a model)."""
    if mode not in ("infinity", "time"):
        raise Invalid("mode must be infinity or time", field="mode")
    if db.session.scalar(select(HypeRun).where(HypeRun.name == name)) is not None:
        raise Conflict(f"HYPE run {name!r} exists already")
    models = list(db.session.scalars(select(GenModel).where(GenModel.name.in_(model_names))))
    missing = sorted(set(model_names) - {m.name for m in models})
    if missing or not models:
        raise NotFound(f"no model named {', '.join(missing) or '(none given)'}")
    run = HypeRun(name=name, mode=mode, models=models)
    db.session.add(run)
    problem = readiness(run)
    if problem is not None:  # refused now, not after an evaluator's qualification
        db.session.rollback()
        raise Conflict(f"HYPE run {name!r} could not start: {problem}. Import real images "
                       "(arena hype import-reals) or upload the models' images first")
    db.session.commit()
    return run


def get_run(name: str) -> HypeRun:
    """The HYPE run called ``name``. Raises NotFound."""
    return one_or_not_found(HypeRun, f"no HYPE run {name!r}", HypeRun.name == name)


def list_runs() -> list[HypeRun]:
    return list(db.session.scalars(select(HypeRun).order_by(HypeRun.created_at.desc())))


def owned_stage(public_id: str, voter: Voter | None) -> HypeStage:
    """Stage ``public_id``, which must be ``voter``'s. Raises NotFound or Forbidden."""
    stage = db.session.scalar(select(HypeStage).where(HypeStage.public_id == public_id))
    if stage is None:
        raise NotFound("no such task")
    if voter is None or stage.voter_id != voter.id:
        raise Forbidden("this task belongs to another evaluator")
    return stage


def qualification_status(run: HypeRun, voter: Voter, network: str | None = None
                         ) -> tuple[str, HypeStage | None]:
    """("passed" | "failed" | "waiting" | "open" | "none", the latest qualification stage).

    A new identity on a network whose evaluator failed within ``HYPE_RETRY_HOURS`` waits
    too: clearing cookies does not skip the delay."""
    stage = db.session.scalar(
        select(HypeStage).where(HypeStage.run_id == run.id, HypeStage.voter_id == voter.id,
                                HypeStage.kind == "qualification")
        .order_by(HypeStage.id.desc()).limit(1))
    if stage is None and network is not None:
        recent = utcnow() - timedelta(hours=current_app.config["HYPE_RETRY_HOURS"])
        failed = db.session.scalar(select(HypeStage).where(
            HypeStage.run_id == run.id, HypeStage.network == network,
            HypeStage.kind == "qualification", HypeStage.passed.is_(False),
            HypeStage.finished_at >= recent).order_by(HypeStage.id.desc()).limit(1))
        return ("waiting", failed) if failed is not None else ("none", None)
    if stage is None:
        return "none", None
    if stage.finished_at is None:
        return "open", stage
    if stage.passed:
        return "passed", stage
    retry = stage.finished_at + timedelta(hours=current_app.config["HYPE_RETRY_HOURS"])
    return ("failed" if utcnow() >= retry else "waiting"), stage


def _pool(query, count: int, rng: np.random.Generator, what: str) -> list[int]:
    ids = list(db.session.scalars(query))
    if len(ids) < count:
        raise Conflict(f"not enough {what}: {len(ids)} available, {count} needed")
    return [int(i) for i in rng.choice(ids, size=count, replace=False)]


def start_stage(run: HypeRun, voter: Voter, kind: str, rng: np.random.Generator,
                network: str | None = None, owner_id: int | None = None) -> HypeStage:
    """Draw a stage's trials (half real, half fake, shuffled) and commit it; an evaluator's
    open qualification or existing scored task is returned instead of a new one.
    ``owner_id``: the model owner signed in where the evaluator is, if any.

    Raises
    ------
    Forbidden
        The owner signed in owns a model of the run: they would know its fakes.
    NotQualified
        A scored task before passing qualification, or a retry before the delay.
    Conflict
        Too few real or fake images, or qualified already.
    Invalid
        An unsupported kind.
    """
    if kind not in KINDS:
        raise Invalid(f"unknown stage kind {kind!r}", field="kind")
    if owner_id is not None and any(m.owner_id == owner_id for m in run.models):
        raise Forbidden("model owners do not evaluate runs of their own models")
    if kind != "qualification" and kind != run.mode:
        raise Invalid(f"this run is HYPE-{run.mode}", field="kind")
    status, open_stage = qualification_status(run, voter, network)
    if kind == "qualification":
        if status == "passed":
            raise Conflict("already qualified")
        if status == "waiting":
            raise NotQualified("you can try the qualification again later")
        if status == "open":
            return open_stage
        problem = readiness(run)
        if problem is not None:
            raise Conflict(f"this run cannot start yet ({problem}): ask its operator")
        model, total = None, current_app.config["HYPE_QUALIFICATION_TRIALS"]
        fakes = _qualification_fakes(run, total, rng)
    else:
        if status != "passed":
            raise NotQualified("pass the qualification first")
        existing = db.session.scalar(select(HypeStage).where(
            HypeStage.run_id == run.id, HypeStage.voter_id == voter.id,
            HypeStage.kind == kind))
        if existing is not None:
            return existing
        model, total = _least_judged_model(run, kind), _scored_trials(kind)
        fakes = _pool(_fakes_of(model), total // 2, rng,
                      f"images of {model.name}")
    reals = _pool(select(Image.id).where(Image.is_real.is_(True)), total - len(fakes), rng,
                  "real images")
    stage = HypeStage(public_id=secrets.token_hex(12), run_id=run.id, voter_id=voter.id,
                      kind=kind, model_id=model.id if model else None, network=network)
    db.session.add(stage)
    db.session.flush()
    _add_trials(stage, fakes, reals, rng)
    if kind == "time":
        ensure_masks(run, rng)
    presentation.refresh_padding(run)
    db.session.commit()
    return stage


def readiness(run: HypeRun) -> str | None:
    """Why an evaluator could not complete ``run`` (too few real images, or too few images of
    a model for the scored task), or None when it can run. Checked before the qualification,
    so nobody passes a 100-image check only to be refused the task."""
    scored = _scored_trials(run.mode)
    fakes_needed, reals_needed = scored // 2, scored - scored // 2
    reals = db.session.scalar(select(func.count()).select_from(Image)
                              .where(Image.is_real.is_(True)))
    if reals < reals_needed:
        return f"not enough real images: {reals} available, {reals_needed} needed"
    for model in run.models:
        have = db.session.scalar(select(func.count()).select_from(_fakes_of(model).subquery()))
        if have < fakes_needed:
            return f"not enough images of {model.name}: {have} available, {fakes_needed} needed"
    return None


def _fakes_of(model: GenModel):
    return select(Image.id).where(Image.model_id == model.id, Image.quarantined.is_(False))


def _qualification_fakes(run: HypeRun, total: int, rng: np.random.Generator) -> list[int]:
    """Half of ``total`` fake images, drawn equally from the models under test."""
    per_model = -(-total // 2 // len(run.models))
    fakes = []
    for m in run.models:
        fakes += _pool(_fakes_of(m), per_model, rng,
                       f"images of {m.name}")
    return [int(i) for i in rng.permutation(fakes)[: total // 2]]


def _scored_trials(kind: str) -> int:
    cfg = current_app.config
    if kind == "time":
        return cfg["HYPE_TIME_BLOCKS"] * cfg["HYPE_TIME_BLOCK_TRIALS"]
    return cfg["HYPE_INFINITY_TRIALS"]


def _least_judged_model(run: HypeRun, kind: str) -> GenModel:
    """The run's model with the fewest evaluators of this kind so far (one per evaluator,
    as in the paper), by name among equals."""
    load = dict(db.session.execute(
        select(HypeStage.model_id, func.count()).where(
            HypeStage.run_id == run.id, HypeStage.kind == kind)
        .group_by(HypeStage.model_id)).all())
    return min(run.models, key=lambda m: (load.get(m.id, 0), m.name))


def _add_trials(stage: HypeStage, fakes: list[int], reals: list[int],
                rng: np.random.Generator) -> None:
    """The stage's trials in blocks, each half real and half fake in its own random order."""
    n_blocks = current_app.config["HYPE_TIME_BLOCKS"] if stage.kind == "time" else 1
    position = 0
    for block, (block_fakes, block_reals) in enumerate(zip(
            np.array_split(np.array(fakes), n_blocks), np.array_split(np.array(reals), n_blocks),
            strict=True), start=1):
        labelled = [(int(i), False) for i in block_fakes] + [(int(i), True)
                                                              for i in block_reals]
        for k in rng.permutation(len(labelled)):
            image_id, is_real = labelled[k]
            db.session.add(HypeTrial(stage_id=stage.id, position=position, block=block,
                                     image_id=image_id, is_real=is_real))
            position += 1


def staircase():
    """The configured staircase rule (``HYPE_STAIRCASE``: weighted or three-in-a-row)."""
    return STAIRCASES[current_app.config["HYPE_STAIRCASE"]]()


def requested_exposure(stage: HypeStage, trial: HypeTrial) -> float:
    """The exposure for ``trial``: the staircase replayed over the answered, non-voided
    trials of its block (every block starts afresh)."""
    rule = staircase()
    state = rule.start()
    for correct in db.session.scalars(
            select(HypeTrial.correct).where(
                HypeTrial.stage_id == stage.id, HypeTrial.block == trial.block,
                HypeTrial.answered_at.is_not(None), HypeTrial.voided.is_(False),
                HypeTrial.position < trial.position)
            .order_by(HypeTrial.position)):
        state = rule.update(state, bool(correct))
    return state.exposure_ms


def ensure_masks(run: HypeRun, rng: np.random.Generator, count: int = 12) -> list[Image]:
    """Phase-scrambled masks made from a mix of the run's real and fake images, as they are
    presented (not committed). Made once per run and served like any image of the run."""
    if len(run.masks) >= count:
        return run.masks
    pool = list(db.session.scalars(select(Image).where(
        Image.quarantined.is_(False),
        (Image.is_real.is_(True)) | (Image.model_id.in_([m.id for m in run.models])))))
    size = current_app.config["HYPE_PRESENT_SIZE"]
    for source in rng.choice(pool, size=min(count, len(pool)), replace=False):
        presented = images.presented_bytes(source, size)
        pixels = np.asarray(PILImage.open(io.BytesIO(presented)).convert("RGB"))
        mask = PILImage.fromarray(phase_scramble(pixels, rng))
        row, created = images.store_new(mask, model_id=None, prompt_id=None)
        if not created:  # a flat source scrambles to itself: never reuse a test image
            continue
        db.session.flush()
        run.masks.append(row)
    return run.masks


@dataclass
class StageView:
    """What an evaluator's page shows: the next trial (None when done), progress, and for
    HYPE-time the requested exposure, the noise masks and whether the last answer was right."""

    stage: HypeStage
    trial: HypeTrial | None
    done: int
    total: int
    requested_ms: float | None = None
    masks: list[int] = field(default_factory=list)  # indices into the run's masks
    feedback: bool | None = None
    repeat_voided: bool = False  # a timed trial served again was voided: this is the next


def stage_view(stage: HypeStage, rng: np.random.Generator) -> StageView:
    """What the page shows; the trial's first serving is recorded (the server's clock for
    HYPE-time bounds starts there). A timed trial served again once its image could have
    been on screen (``HYPE_COUNTDOWN_MS`` after its first serving: a reload after the
    countdown) is voided for "repeat" and the next one served: a second look at an image
    meant to be seen for a few hundred ms must not count (a reload after seeing it would
    otherwise count its answer). Commits."""
    trial = next_trial(stage)
    repeat_voided = False
    if stage.kind == "time" and trial is not None and _could_have_been_seen(trial):
        _void_repeat(stage, trial)
        repeat_voided = True
        trial = next_trial(stage)
    if trial is not None and trial.served_at is None:
        trial.served_at = utcnow()
        db.session.commit()
    done, total = stage_progress(stage)
    view = StageView(stage, trial, done, total, repeat_voided=repeat_voided)
    if stage.kind == "time":
        masks = list(stage.run.masks)
        picked = rng.choice(len(masks), size=min(4, len(masks)), replace=False) if masks else []
        view.masks = [int(i) for i in picked]
        view.requested_ms = requested_exposure(stage, trial) if trial else None
        view.feedback = last_feedback(stage)
    return view


def _could_have_been_seen(trial: HypeTrial) -> bool:
    if trial.served_at is None:
        return False
    countdown = timedelta(milliseconds=current_app.config["HYPE_COUNTDOWN_MS"])
    return utcnow() - trial.served_at >= countdown


def _void_repeat(stage: HypeStage, trial: HypeTrial) -> None:
    """Void ``trial`` as served twice (it counts towards the evaluator's void limit, as any
    void does), closing the stage when it was the last. Once, however many pages ask."""
    now = utcnow()
    changed = db.session.execute(
        update(HypeTrial).where(HypeTrial.id == trial.id, HypeTrial.answered_at.is_(None))
        .values(answered_at=now, voided=True, void_reason="repeat",
                requested_ms=requested_exposure(stage, trial))).rowcount
    if changed and next_trial(stage) is None and stage.finished_at is None:
        _finish(stage, now)
    db.session.commit()


def next_trial(stage: HypeStage) -> HypeTrial | None:
    return db.session.scalar(select(HypeTrial).where(
        HypeTrial.stage_id == stage.id, HypeTrial.answered_at.is_(None))
        .order_by(HypeTrial.position).limit(1))


def stage_progress(stage: HypeStage) -> tuple[int, int]:
    done, total = db.session.execute(select(
        func.count(HypeTrial.answered_at), func.count()).where(
        HypeTrial.stage_id == stage.id)).one()
    return done, total


def answer(stage: HypeStage, trial_id: int, judged_real: bool,
           report: timing.Report | None = None, now=None) -> bool | None:
    """Record an answer (a second answer to the same trial changes nothing); closes the stage
    after its last trial, deciding a qualification's pass and flagging an evaluator who
    voided too many trials. A timed trial's ``report`` is judged on the server's clock
    (:mod:`arena.hype.timing`). Commits. Returns whether the answer was correct, or None
    for a repeat.

    Raises NotFound for a trial outside this stage, TrialNotOnScreen for one that is not
    the image the evaluator was shown (a later one, or one never served), and
    QualificationOnHold while a failure on the same network holds the retry delay."""
    trial = db.session.get(HypeTrial, trial_id) if -2**31 <= trial_id < 2**31 else None
    if trial is None or trial.stage_id != stage.id:
        raise NotFound("no such trial in this task", field="trial_id")
    if trial.answered_at is not None:
        return None
    shown = next_trial(stage)
    if shown is None or shown.id != trial.id or trial.served_at is None:
        raise TrialNotOnScreen("answer the image on your screen: this one was not shown yet",
                               field="trial_id")
    now = now or utcnow()
    if stage.kind == "qualification":
        _hold_for_network_failure(stage, now)
    correct = trial.is_real == judged_real
    values = {"judged_real": judged_real, "correct": correct, "answered_at": now}
    if stage.kind == "time":
        requested = requested_exposure(stage, trial)
        rule = staircase()
        values.update(requested_ms=requested, **timing.judge(
            requested, trial.served_at, now, report or timing.Report(),
            display_ms=_display_ms(stage), exposure_range=(rule.min_ms, rule.max_ms)))
    changed = db.session.execute(
        update(HypeTrial).where(HypeTrial.id == trial_id, HypeTrial.answered_at.is_(None))
        .values(**values)).rowcount
    if not changed:
        db.session.rollback()
        return None
    if next_trial(stage) is None and stage.finished_at is None:
        _finish(stage, now)
    db.session.commit()
    return correct


def _display_ms(stage: HypeStage) -> float | None:
    """The refresh interval this evaluator's first counted timed trial reported."""
    return db.session.scalar(select(HypeTrial.frame_ms).where(
        HypeTrial.stage_id == stage.id, HypeTrial.answered_at.is_not(None),
        HypeTrial.voided.is_(False), HypeTrial.frame_ms.is_not(None))
        .order_by(HypeTrial.position).limit(1))


def _hold_for_network_failure(stage: HypeStage, now) -> None:
    """A qualification on a network where another one failed since it began waits out the
    retry delay too: opening several beforehand does not pre-empt it."""
    hours = current_app.config["HYPE_RETRY_HOURS"]
    failed = db.session.scalar(select(HypeStage.finished_at).where(
        HypeStage.run_id == stage.run_id, HypeStage.network == stage.network,
        HypeStage.kind == "qualification", HypeStage.passed.is_(False),
        HypeStage.id != stage.id, HypeStage.finished_at >= stage.created_at,
        HypeStage.finished_at >= now - timedelta(hours=hours))
        .order_by(HypeStage.finished_at.desc()).limit(1))
    if stage.network is not None and failed is not None:
        wait = failed + timedelta(hours=hours)
        raise QualificationOnHold(f"an evaluator on your network failed the check: try again "
                                  f"after {wait:%Y-%m-%d %H:%M} UTC",
                                  retry_after_ms=int((wait - now).total_seconds() * 1000))


def _finish(stage: HypeStage, now) -> None:
    stage.finished_at = now
    if stage.kind == "qualification":
        stage.passed = qualification_passed(stage)
    voided, answered, right = db.session.execute(select(
        func.count().filter(HypeTrial.voided.is_(True)), func.count(),
        func.count().filter(HypeTrial.voided.is_(False), HypeTrial.correct.is_(True)))
        .where(HypeTrial.stage_id == stage.id)).one()
    if timing.too_many_voids(voided, answered):
        stage.flag = "voided"
    elif stage.kind != "qualification" and timing.below_chance(right, answered - voided):
        stage.flag = "below chance"
    elif stage.kind == "time" and timing.steered(*_exposures(stage)):
        stage.flag = "steered"


def _exposures(stage: HypeStage) -> tuple[list[float], list[bool]]:
    """The exposures a stage's counted trials were shown for, and whether each was right."""
    rows = db.session.execute(select(HypeTrial.actual_ms, HypeTrial.correct).where(
        HypeTrial.stage_id == stage.id, HypeTrial.voided.is_(False),
        HypeTrial.actual_ms.is_not(None), HypeTrial.correct.is_not(None))).all()
    return [float(ms) for ms, _ in rows], [bool(ok) for _, ok in rows]


def qualification_passed(stage: HypeStage) -> bool:
    need = current_app.config["HYPE_QUALIFICATION_PASS"]
    rows = db.session.execute(select(HypeTrial.is_real, func.avg(
        func.cast(HypeTrial.correct, db.Float))).where(HypeTrial.stage_id == stage.id)
        .group_by(HypeTrial.is_real)).all()
    rates = {bool(real): float(rate) for real, rate in rows}
    return rates.get(True, 0) >= need and rates.get(False, 0) >= need


def run_trials(run: HypeRun, kind: str = "infinity") -> Trials:
    """The answered, non-voided trials of a run's finished scored stages, for the core."""
    rows = db.session.execute(
        select(HypeStage.public_id, GenModel.name, HypeTrial.is_real, HypeTrial.judged_real,
               HypeTrial.actual_ms, HypeTrial.block, HypeTrial.image_id)
        .join(HypeStage, HypeStage.id == HypeTrial.stage_id)
        .join(GenModel, GenModel.id == HypeStage.model_id)
        .where(HypeStage.run_id == run.id, HypeStage.kind == kind,
               HypeStage.finished_at.is_not(None), HypeStage.flag.is_(None),
               HypeTrial.voided.is_(False))
        .order_by(HypeTrial.id)).all()
    trials = Trials(np.array([r[0] for r in rows]),
                    np.array(["" if r[2] else r[1] for r in rows]),
                    np.array([r[2] for r in rows], bool), np.array([r[3] for r in rows], bool),
                    image=np.array([r[6] for r in rows]))
    if kind == "time":
        trials.exposure_ms = np.array([r[4] for r in rows], float)
        trials.block = np.array([r[5] for r in rows])
    return trials


def report(run: HypeRun, rounds: int = 10_000, seed: int = 0):
    """(scores, separability, evaluators qualified / tried) for a run of either mode."""
    trials = run_trials(run, run.mode)
    scorer = score_infinity if run.mode == "infinity" else score_time
    scores, per_evaluator = ([], {}) if not len(trials.evaluator) else scorer(
        trials, rounds=rounds, rng=np.random.default_rng(seed))
    qualified = db.session.execute(select(
        func.count(func.distinct(HypeStage.voter_id))).where(
        HypeStage.run_id == run.id, HypeStage.kind == "qualification",
        HypeStage.passed.is_(True))).scalar()
    tried = db.session.execute(select(func.count(func.distinct(HypeStage.voter_id))).where(
        HypeStage.run_id == run.id, HypeStage.kind == "qualification",
        HypeStage.finished_at.is_not(None))).scalar()
    flagged = db.session.execute(select(func.count()).select_from(HypeStage).where(
        HypeStage.run_id == run.id, HypeStage.kind == run.mode,
        HypeStage.flag.is_not(None))).scalar()
    return scores, separability(per_evaluator), {"qualified": qualified, "tried": tried,
                                                 "flagged": flagged}


def trials_csv(run: HypeRun) -> str:
    """Answered trials of finished scored stages as CSV (evaluator pseudonym, model, image
    id, is_real, judged_real, exposure_ms, block), readable by `arena hype score`."""
    import csv

    rows = db.session.execute(
        select(HypeStage.public_id, GenModel.name, Image.id, HypeTrial.is_real,
               HypeTrial.judged_real, HypeTrial.actual_ms, HypeTrial.block)
        .join(HypeStage, HypeStage.id == HypeTrial.stage_id)
        .join(GenModel, GenModel.id == HypeStage.model_id)
        .join(Image, Image.id == HypeTrial.image_id)
        .where(HypeStage.run_id == run.id, HypeStage.kind != "qualification",
               HypeStage.finished_at.is_not(None), HypeTrial.voided.is_(False))
        .order_by(HypeTrial.id)).all()
    key = current_app.config["PSEUDONYM_KEY"]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["evaluator", "model", "image", "is_real", "judged_real", "exposure_ms",
                     "block"])
    for stage, model, image_id, real, judged, exposure, block in rows:
        writer.writerow([pseudonym(key, stage), "" if real else model, image_id,
                         int(real), int(judged), "" if exposure is None else f"{exposure:.1f}",
                         block])
    return buf.getvalue()


def last_feedback(stage: HypeStage) -> bool | None:
    """Whether the latest answered, non-voided trial was right (HYPE-time gives feedback)."""
    return db.session.scalar(select(HypeTrial.correct).where(
        HypeTrial.stage_id == stage.id, HypeTrial.answered_at.is_not(None))
        .order_by(HypeTrial.position.desc()).limit(1))


def psychometric(run: HypeRun, bin_ms: float = 100.0) -> dict[str, list[tuple[float, float, int]]]:
    """Accuracy by actual exposure per model (HYPE-time), for the report's chart."""
    trials = run_trials(run, "time")
    if not len(trials.evaluator):
        return {}
    belongs = evaluator_models(trials)
    curves = {}
    for model in sorted(set(belongs.values())):
        mask = np.isin(trials.evaluator, [e for e, m in belongs.items() if m == model])
        curves[model] = psychometric_curve(trials.exposure_ms[mask], trials.correct[mask],
                                           bin_ms)
    return curves

