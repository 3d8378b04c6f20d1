"""HYPE runs: real images, qualification, untimed (HYPE-infinity) tasks, scores from the log.

Each stage draws its trials when it starts (half real, half fake, shuffled) and stores the
real/fake label server-side; the page only ever gets an opaque image URL. An evaluator judges
one model in a scored task (the model with the fewest evaluators so far), as in the paper.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from pathlib import Path

import numpy as np
from flask import current_app
from PIL import Image as PILImage
from sqlalchemy import func, select, update

from . import images
from .extensions import db
from .models import GenModel, HypeRun, HypeStage, HypeTrial, Image, Voter, utcnow
from .ranking.hype import (
    STAIRCASES,
    Trials,
    evaluator_models,
    psychometric_curve,
    score_infinity,
    score_time,
    separability,
)
from .ranking.masks import phase_scramble
from .storage import get_storage

KINDS = ("qualification", "infinity", "time")


class HypeError(ValueError):
    pass


class NotQualified(HypeError):
    pass


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
    if mode not in ("infinity", "time"):
        raise HypeError("mode must be infinity or time")
    if db.session.scalar(select(HypeRun).where(HypeRun.name == name)) is not None:
        raise HypeError(f"HYPE run {name!r} exists already")
    models = list(db.session.scalars(select(GenModel).where(GenModel.name.in_(model_names))))
    missing = sorted(set(model_names) - {m.name for m in models})
    if missing or not models:
        raise HypeError(f"no model named {', '.join(missing) or '(none given)'}")
    run = HypeRun(name=name, mode=mode, models=models)
    db.session.add(run)
    db.session.commit()
    return run


def get_run(name: str) -> HypeRun:
    run = db.session.scalar(select(HypeRun).where(HypeRun.name == name))
    if run is None:
        raise HypeError(f"no HYPE run {name!r}")
    return run


def qualification_status(run: HypeRun, voter: Voter) -> tuple[str, HypeStage | None]:
    """("passed" | "failed" | "waiting" | "none", the latest qualification stage)."""
    stage = db.session.scalar(
        select(HypeStage).where(HypeStage.run_id == run.id, HypeStage.voter_id == voter.id,
                                HypeStage.kind == "qualification")
        .order_by(HypeStage.id.desc()).limit(1))
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
        raise HypeError(f"not enough {what}: {len(ids)} available, {count} needed")
    return [int(i) for i in rng.choice(ids, size=count, replace=False)]


def start_stage(run: HypeRun, voter: Voter, kind: str, rng: np.random.Generator) -> HypeStage:
    """Draw a stage's trials (half real, half fake, shuffled) and commit it.

    Raises
    ------
    NotQualified
        A scored task before passing qualification, or a retry before the delay.
    HypeError
        Too few real or fake images, or an unsupported kind.
    """
    cfg = current_app.config
    if kind not in KINDS:
        raise HypeError(f"unknown stage kind {kind!r}")
    if kind != "qualification" and kind != run.mode:
        raise HypeError(f"this run is HYPE-{run.mode}")
    status, open_stage = qualification_status(run, voter)
    n_blocks = cfg["HYPE_TIME_BLOCKS"] if kind == "time" else 1
    if kind == "qualification":
        if status == "passed":
            raise HypeError("already qualified")
        if status == "waiting":
            raise NotQualified("you can try the qualification again later")
        if status == "open":
            return open_stage
        total = cfg["HYPE_QUALIFICATION_TRIALS"]
        model = None
        per_model = -(-total // 2 // len(run.models))
        fakes = []
        for m in run.models:  # fakes drawn equally from the models under test
            fakes += _pool(select(Image.id).where(Image.model_id == m.id), per_model, rng,
                           f"images of {m.name}")
        fakes = [int(i) for i in rng.permutation(fakes)[: total // 2]]
    else:
        if status != "passed":
            raise NotQualified("pass the qualification first")
        existing = db.session.scalar(select(HypeStage).where(
            HypeStage.run_id == run.id, HypeStage.voter_id == voter.id,
            HypeStage.kind == kind))
        if existing is not None:
            return existing
        per_block = cfg["HYPE_TIME_BLOCK_TRIALS"] if kind == "time" else cfg[
            "HYPE_INFINITY_TRIALS"]
        total = n_blocks * per_block
        load = dict(db.session.execute(
            select(HypeStage.model_id, func.count()).where(
                HypeStage.run_id == run.id, HypeStage.kind == kind)
            .group_by(HypeStage.model_id)).all())
        model = min(run.models, key=lambda m: (load.get(m.id, 0), m.name))
        fakes = _pool(select(Image.id).where(Image.model_id == model.id), total // 2, rng,
                      f"images of {model.name}")
    reals = _pool(select(Image.id).where(Image.is_real.is_(True)), total - len(fakes), rng,
                  "real images")
    stage = HypeStage(public_id=secrets.token_hex(12), run_id=run.id, voter_id=voter.id,
                      kind=kind, model_id=model.id if model else None)
    db.session.add(stage)
    db.session.flush()
    # each block is half real, half fake, in its own random order
    fake_parts = np.array_split(np.array(fakes), n_blocks)
    real_parts = np.array_split(np.array(reals), n_blocks)
    position = 0
    for block, (block_fakes, block_reals) in enumerate(zip(fake_parts, real_parts,
                                                           strict=True), start=1):
        labelled = [(int(i), False) for i in block_fakes] + [(int(i), True)
                                                              for i in block_reals]
        for k in rng.permutation(len(labelled)):
            image_id, is_real = labelled[k]
            db.session.add(HypeTrial(stage_id=stage.id, position=position, block=block,
                                     image_id=image_id, is_real=is_real))
            position += 1
    if kind == "time":
        ensure_masks(run, rng)
    db.session.commit()
    return stage


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
    """Phase-scrambled masks made from a mix of the run's real and fake images (not
    committed). Made once per run and served like any image, under opaque hashes."""
    if len(run.masks) >= count:
        return run.masks
    pool = list(db.session.scalars(select(Image).where(
        (Image.is_real.is_(True)) | (Image.model_id.in_([m.id for m in run.models])))))
    storage = get_storage()
    for source in rng.choice(pool, size=min(count, len(pool)), replace=False):
        with storage.open(images.storage_name(source.sha256, "phone")) as fh:
            pixels = np.asarray(PILImage.open(fh).convert("RGB"))
        mask = PILImage.fromarray(phase_scramble(pixels, rng))
        row, created = images.store_new(mask, model_id=None, prompt_id=None)
        if not created:  # a flat source scrambles to itself: never reuse a test image
            continue
        db.session.flush()
        run.masks.append(row)
    return run.masks


def next_trial(stage: HypeStage) -> HypeTrial | None:
    return db.session.scalar(select(HypeTrial).where(
        HypeTrial.stage_id == stage.id, HypeTrial.answered_at.is_(None))
        .order_by(HypeTrial.position).limit(1))


def stage_progress(stage: HypeStage) -> tuple[int, int]:
    done, total = db.session.execute(select(
        func.count(HypeTrial.answered_at), func.count()).where(
        HypeTrial.stage_id == stage.id)).one()
    return done, total


def answer(stage: HypeStage, trial_id: int, judged_real: bool, *,
           actual_ms: float | None = None, voided: bool = False) -> bool | None:
    """Record an answer (a second answer to the same trial changes nothing); closes the stage
    after its last trial and, for a qualification, decides the pass. Commits. Returns
    whether the answer was correct, or None for a repeat.

    Raises HypeError for a trial outside this stage."""
    trial = db.session.get(HypeTrial, trial_id)
    if trial is None or trial.stage_id != stage.id:
        raise HypeError("no such trial in this task")
    correct = trial.is_real == judged_real
    values = {"judged_real": judged_real, "correct": correct, "answered_at": utcnow()}
    if stage.kind == "time":
        if actual_ms is None and not voided:
            raise HypeError("a timed trial needs its actual exposure")
        values.update(requested_ms=requested_exposure(stage, trial), actual_ms=actual_ms,
                      voided=voided)
    changed = db.session.execute(
        update(HypeTrial).where(HypeTrial.id == trial_id, HypeTrial.answered_at.is_(None))
        .values(**values)).rowcount
    if not changed:
        db.session.rollback()
        return None
    if next_trial(stage) is None and stage.finished_at is None:
        stage.finished_at = utcnow()
        if stage.kind == "qualification":
            stage.passed = qualification_passed(stage)
    db.session.commit()
    return correct


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
               HypeTrial.actual_ms, HypeTrial.block)
        .join(HypeStage, HypeStage.id == HypeTrial.stage_id)
        .join(GenModel, GenModel.id == HypeStage.model_id)
        .where(HypeStage.run_id == run.id, HypeStage.kind == kind,
               HypeStage.finished_at.is_not(None), HypeTrial.voided.is_(False))
        .order_by(HypeTrial.id)).all()
    trials = Trials(np.array([r[0] for r in rows]),
                    np.array(["" if r[2] else r[1] for r in rows]),
                    np.array([r[2] for r in rows], bool), np.array([r[3] for r in rows], bool))
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
    return scores, separability(per_evaluator), {"qualified": qualified, "tried": tried}


SCORE_COLUMNS = ("rank", "model", "score", "fakes_error", "reals_error", "std", "ci_low",
                 "ci_high", "evaluators", "answers")


def trials_csv(run: HypeRun, secret: str) -> str:
    """Answered trials of finished scored stages as CSV (evaluator pseudonym, model, image
    hash, is_real, judged_real, exposure_ms, block), readable by `arena hype score`."""
    import csv
    import io

    from .export import pseudonym

    rows = db.session.execute(
        select(HypeStage.public_id, GenModel.name, Image.sha256, HypeTrial.is_real,
               HypeTrial.judged_real, HypeTrial.actual_ms, HypeTrial.block)
        .join(HypeStage, HypeStage.id == HypeTrial.stage_id)
        .join(GenModel, GenModel.id == HypeStage.model_id)
        .join(Image, Image.id == HypeTrial.image_id)
        .where(HypeStage.run_id == run.id, HypeStage.kind != "qualification",
               HypeStage.finished_at.is_not(None), HypeTrial.voided.is_(False))
        .order_by(HypeTrial.id)).all()
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["evaluator", "model", "image", "is_real", "judged_real", "exposure_ms",
                     "block"])
    for stage, model, sha, real, judged, exposure, block in rows:
        writer.writerow([pseudonym(secret, stage), "" if real else model, sha[:16],
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

