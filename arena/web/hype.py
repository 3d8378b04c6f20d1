"""HYPE evaluator pages (phone first): qualification, the untimed HYPE-infinity task and the
timed HYPE-time task, and each run's report. One image at a time, "Real" or "Fake"; labels
stay on the server."""

from __future__ import annotations

import numpy as np
from flask import Blueprint, current_app, redirect, render_template, request, session, url_for

from arena.catalog.presentation import mask_name, trial_image_name
from arena.hype import runs, timing
from arena.voting import voters
from arena.web import limits
from arena.web.charts import psychometric_chart
from arena.web.errors import renders_errors
from arena.web.images import image_url
from arena.web.owner import current_owner
from arena.web.requests import (
    choice_arg,
    float_arg,
    int_arg,
    is_htmx,
    request_network,
    request_voter,
)

bp = Blueprint("hype", __name__, url_prefix="/hype")


def _voter():
    return request_voter()


@bp.get("/")
def index():
    return render_template("hype/index.html", runs=runs.list_runs())


def _render_run(run, voter, error: str | None = None, status: int = 200):
    state, _ = runs.qualification_status(run, voter) if voter else ("none", None)
    cfg = current_app.config
    return render_template("hype/run.html", run=run, status=state, error=error,
                           blocked=runs.readiness(run) if state == "none" else None,
                           trials=cfg["HYPE_INFINITY_TRIALS"],
                           qualification=cfg["HYPE_QUALIFICATION_TRIALS"],
                           pass_rate=cfg["HYPE_QUALIFICATION_PASS"]), status


@bp.get("/<name>")
def run_page(name: str):
    return _render_run(runs.get_run(name), _voter())


@bp.post("/<name>/start")
@limits.per_voter("RATE_LIMIT_SESSIONS")
@limits.per_network("RATE_LIMIT_NETWORK_SESSIONS")
@limits.new_identity()
@renders_errors(lambda exc, status, name: _render_run(runs.get_run(name), _voter(),
                                                      str(exc), status))
def start(name: str):
    run = runs.get_run(name)
    voter = voters.identify_by_cookie(session.get("voter"), network=request_network())
    session.permanent = True
    session["voter"] = voter.public_id
    owner = current_owner()
    stage = runs.start_stage(run, voter, request.form.get("kind", "qualification"),
                             np.random.default_rng(), network=limits.network_key(),
                             owner_id=owner.id if owner is not None else None)
    return redirect(url_for("hype.stage_page", public_id=stage.public_id), 303)


def _render_stage(stage, status: int = 200):
    view = runs.stage_view(stage, np.random.default_rng())
    size = current_app.config["HYPE_PRESENT_SIZE"]
    partial = "hype/_timed.html" if stage.kind == "time" else "hype/_trial.html"
    context = {
        "stage": stage, "run": stage.run, "done": view.done, "total": view.total,
        "trial": view.trial, "partial": partial,
        "url": image_url(trial_image_name(view.trial), size) if view.trial else None,
        "blocks": current_app.config["HYPE_TIME_BLOCKS"], "requested": view.requested_ms,
        "masks": [image_url(mask_name(stage, k), size) for k in view.masks],
        "feedback": view.feedback, "repeat_voided": view.repeat_voided,
    }
    template = partial if is_htmx() else "hype/stage.html"
    response = current_app.make_response((render_template(template, **context), status))
    response.headers["Vary"] = "HX-Request"
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/s/<public_id>")
def stage_page(public_id: str):
    return _render_stage(runs.owned_stage(public_id, _voter()))


@bp.post("/s/<public_id>/answer")
@limits.per_voter("RATE_LIMIT_VOTES")
@limits.per_network("RATE_LIMIT_NETWORK_VOTES")
def answer(public_id: str):
    stage = runs.owned_stage(public_id, _voter())
    form = request.form
    judged = choice_arg("judged", "", ("real", "fake"), form)
    report = timing.Report(frames=int_arg("frames", 0, 0, 10_000, form) or None,
                           frame_ms=float_arg("frame_ms", form),
                           actual_ms=float_arg("actual_ms", form),
                           voided=form.get("voided") == "1")
    runs.answer(stage, int_arg("trial_id", None, 0, 2**63 - 1, form), judged == "real", report)
    if is_htmx():
        return _render_stage(stage)
    return redirect(url_for("hype.stage_page", public_id=public_id), 303)


@bp.get("/<name>/report")
def report(name: str):
    run = runs.get_run(name)
    scores, tests, qualified = runs.report(run)
    chart = psychometric_chart(runs.psychometric(run)) if run.mode == "time" else None
    return render_template("hype/report.html", run=run, scores=scores, tests=tests,
                           qualified=qualified, chart=chart)
