"""HYPE evaluator pages (phone first): qualification and the untimed HYPE-infinity task,
and each run's report. One image at a time, "Real" or "Fake"; labels stay on the server."""

from __future__ import annotations

import numpy as np
from flask import (
    Blueprint,
    abort,
    current_app,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from sqlalchemy import select

from .. import hype, voters
from ..extensions import db, limiter
from ..models import HypeRun, HypeStage
from .charts import psychometric_chart
from .images import image_url

bp = Blueprint("hype", __name__, url_prefix="/hype")


def _voter():
    return voters.voter_by_public_id(session.get("voter"))


@bp.get("/")
def index():
    runs = db.session.scalars(select(HypeRun).order_by(HypeRun.created_at.desc())).all()
    return render_template("hype/index.html", runs=runs)


def _run_or_404(name: str) -> HypeRun:
    try:
        return hype.get_run(name)
    except hype.HypeError:
        abort(404)


def _render_run(run: HypeRun, voter, error: str | None = None, status: int = 200):
    state, _ = hype.qualification_status(run, voter) if voter else ("none", None)
    cfg = current_app.config
    return render_template("hype/run.html", run=run, status=state, error=error,
                           trials=cfg["HYPE_INFINITY_TRIALS"],
                           qualification=cfg["HYPE_QUALIFICATION_TRIALS"],
                           pass_rate=cfg["HYPE_QUALIFICATION_PASS"]), status


@bp.get("/<name>")
def run_page(name: str):
    return _render_run(_run_or_404(name), _voter())


@bp.post("/<name>/start")
@limiter.limit(lambda: current_app.config["RATE_LIMIT_SESSIONS"])
def start(name: str):
    run = _run_or_404(name)
    voter = _voter()
    if voter is None:
        voter, _ = voters.create_voter()
        db.session.commit()
        session.permanent = True
        session["voter"] = voter.public_id
    kind = request.form.get("kind", "qualification")
    try:
        stage = hype.start_stage(run, voter, kind, np.random.default_rng())
    except hype.HypeError as exc:
        return _render_run(run, voter, error=str(exc), status=409)
    return redirect(url_for("hype.stage_page", public_id=stage.public_id), 303)


def _owned_stage(public_id: str) -> HypeStage:
    stage = db.session.scalar(select(HypeStage).where(HypeStage.public_id == public_id))
    if stage is None:
        abort(404)
    voter = _voter()
    if voter is None or stage.voter_id != voter.id:
        abort(403)
    return stage


def _render_stage(stage: HypeStage, status: int = 200):
    trial = hype.next_trial(stage)
    done, total = hype.stage_progress(stage)
    context = {"stage": stage, "run": stage.run, "done": done, "total": total,
               "trial": trial, "url": image_url(trial.image.sha256, "phone") if trial else None}
    partial = "hype/_trial.html"
    if stage.kind == "time":
        partial = "hype/_timed.html"
        rng = np.random.default_rng()
        masks = list(stage.run.masks)
        chosen = [masks[int(i)] for i in rng.choice(len(masks), size=min(4, len(masks)),
                                                   replace=False)] if masks else []
        context.update(
            partial=partial, blocks=current_app.config["HYPE_TIME_BLOCKS"],
            requested=hype.requested_exposure(stage, trial) if trial else None,
            masks=[image_url(m.sha256, "phone") for m in chosen],
            feedback=hype.last_feedback(stage))
    context["partial"] = partial
    template = partial if request.headers.get("HX-Request") == "true" else "hype/stage.html"
    response = current_app.make_response((render_template(template, **context), status))
    response.headers["Vary"] = "HX-Request"
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/s/<public_id>")
def stage_page(public_id: str):
    return _render_stage(_owned_stage(public_id))


@bp.post("/s/<public_id>/answer")
@limiter.limit(lambda: current_app.config["RATE_LIMIT_VOTES"])
def answer(public_id: str):
    stage = _owned_stage(public_id)
    judged = request.form.get("judged")
    try:
        trial_id = int(request.form.get("trial_id", ""))
    except ValueError:
        abort(400)
    if judged not in ("real", "fake"):
        abort(400)
    actual_ms, voided = None, request.form.get("voided") == "1"
    if stage.kind == "time":
        try:
            actual_ms = float(request.form.get("actual_ms", ""))
        except ValueError:
            abort(400)
        if not 0 < actual_ms < 10_000:
            abort(400)
    try:
        hype.answer(stage, trial_id, judged == "real", actual_ms=actual_ms, voided=voided)
    except hype.HypeError:
        abort(400)
    if request.headers.get("HX-Request") == "true":
        return _render_stage(stage)
    return redirect(url_for("hype.stage_page", public_id=public_id), 303)


@bp.get("/<name>/report")
def report(name: str):
    run = _run_or_404(name)
    scores, tests, qualified = hype.report(run)
    chart = psychometric_chart(hype.psychometric(run)) if run.mode == "time" else None
    return render_template("hype/report.html", run=run, scores=scores, tests=tests,
                           qualified=qualified, chart=chart)
