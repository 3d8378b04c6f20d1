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
from sqlalchemy import func, select, update

from . import images
from .extensions import db
from .models import GenModel, HypeRun, HypeStage, HypeTrial, Image, Voter, utcnow
from .ranking.hype import Trials, score_infinity, separability

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
    if kind not in ("qualification", "infinity"):
        raise HypeError(f"{kind} stages are not available yet")
    status, open_stage = qualification_status(run, voter)
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
        total = cfg["HYPE_INFINITY_TRIALS"]
        load = dict(db.session.execute(
            select(HypeStage.model_id, func.count()).where(
                HypeStage.run_id == run.id, HypeStage.kind == kind)
            .group_by(HypeStage.model_id)).all())
        model = min(run.models, key=lambda m: (load.get(m.id, 0), m.name))
        fakes = _pool(select(Image.id).where(Image.model_id == model.id), total // 2, rng,
                      f"images of {model.name}")
    reals = _pool(select(Image.id).where(Image.is_real.is_(True)), total - len(fakes), rng,
                  "real images")
    labelled = [(i, False) for i in fakes] + [(i, True) for i in reals]
    order = rng.permutation(len(labelled))
    stage = HypeStage(public_id=secrets.token_hex(12), run_id=run.id, voter_id=voter.id,
                      kind=kind, model_id=model.id if model else None)
    db.session.add(stage)
    db.session.flush()
    for position, k in enumerate(order):
        image_id, is_real = labelled[k]
        db.session.add(HypeTrial(stage_id=stage.id, position=position, image_id=image_id,
                                 is_real=is_real))
    db.session.commit()
    return stage


def next_trial(stage: HypeStage) -> HypeTrial | None:
    return db.session.scalar(select(HypeTrial).where(
        HypeTrial.stage_id == stage.id, HypeTrial.answered_at.is_(None))
        .order_by(HypeTrial.position).limit(1))


def stage_progress(stage: HypeStage) -> tuple[int, int]:
    done, total = db.session.execute(select(
        func.count(HypeTrial.answered_at), func.count()).where(
        HypeTrial.stage_id == stage.id)).one()
    return done, total


def answer(stage: HypeStage, trial_id: int, judged_real: bool) -> bool | None:
    """Record an answer (a second answer to the same trial changes nothing); closes the stage
    after its last trial and, for a qualification, decides the pass. Commits. Returns
    whether the answer was correct, or None for a repeat.

    Raises HypeError for a trial outside this stage."""
    trial = db.session.get(HypeTrial, trial_id)
    if trial is None or trial.stage_id != stage.id:
        raise HypeError("no such trial in this task")
    correct = trial.is_real == judged_real
    changed = db.session.execute(
        update(HypeTrial).where(HypeTrial.id == trial_id, HypeTrial.answered_at.is_(None))
        .values(judged_real=judged_real, correct=correct, answered_at=utcnow())).rowcount
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
        select(HypeStage.public_id, GenModel.name, HypeTrial.is_real, HypeTrial.judged_real)
        .join(HypeStage, HypeStage.id == HypeTrial.stage_id)
        .join(GenModel, GenModel.id == HypeStage.model_id)
        .where(HypeStage.run_id == run.id, HypeStage.kind == kind,
               HypeStage.finished_at.is_not(None), HypeTrial.voided.is_(False))
        .order_by(HypeTrial.id)).all()
    return Trials(np.array([r[0] for r in rows]),
                  np.array(["" if r[2] else r[1] for r in rows]),
                  np.array([r[2] for r in rows], bool), np.array([r[3] for r in rows], bool))


def report(run: HypeRun, rounds: int = 10_000, seed: int = 0):
    """(scores, separability, evaluators qualified / tried) for a HYPE-infinity run."""
    trials = run_trials(run)
    scores, per_evaluator = ([], {}) if not len(trials.evaluator) else score_infinity(
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
