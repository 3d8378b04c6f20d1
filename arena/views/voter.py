"""Voter pages: landing with optional demographics, a session of tasks, the thank-you card.

Plain forms and redirects work without JavaScript; htmx swaps the task card in place
(``HX-Request``) and every URL renders as a full page.
"""

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

from .. import matchmaking, voters, voting
from ..config import CRITERIA
from ..extensions import db, limiter
from ..voters import AGE_GROUPS, CONTINENTS, GENDERS, countries
from .presenters import task_view

bp = Blueprint("voter", __name__)
VALIDATION_WARNING = (
    "That one was a check question with a clear answer. Please look carefully at both images."
)


def _is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


def _current_voter():
    return voters.voter_by_public_id(session.get("voter"))


def _form_demographics() -> dict:
    return {k: request.form.get(k) or None for k in ("age_group", "gender", "country")}


def _render_landing(error: str | None = None, status: int = 200):
    voter = _current_voter()
    answers = _form_demographics() if request.method == "POST" else {
        "age_group": voter.age_group if voter else None,
        "gender": voter.gender if voter else None,
        "country": voter.country if voter else None,
    }
    html = render_template(
        "voter/index.html",
        error=error,
        answers=answers,
        age_groups=AGE_GROUPS,
        genders=GENDERS,
        countries=sorted(countries().values(), key=lambda c: c.name),
        continents=CONTINENTS,
        returning=voter is not None,
        criterion=request.values.get("criterion") if request.values.get("criterion") in CRITERIA
        else None,
    )
    return html, status


@bp.get("/")
def index():
    return _render_landing()


@bp.post("/start")
@limiter.limit(lambda: current_app.config["RATE_LIMIT_SESSIONS"])
def start():
    """Create or update the voter from the (optional) form answers, then issue a session
    (of the criterion given by ``/?criterion=...`` links, else of a random one)."""
    voter = _current_voter()
    demographics = _form_demographics() if request.form.get("with_demographics") else None
    try:
        if voter is None:
            voter, _ = voters.create_voter(demographics)
        elif demographics is not None:
            voters.update_demographics(voter, demographics)
        db.session.commit()
    except voters.DemographicsError as exc:
        db.session.rollback()
        status = 403 if isinstance(exc, voters.MinorRefused) else 422
        return _render_landing(error=str(exc), status=status)
    session.permanent = True
    session["voter"] = voter.public_id
    criterion = request.form.get("criterion") or None
    try:
        voting_session = matchmaking.start_session(voter, np.random.default_rng(), criterion)
    except matchmaking.UnknownCriterion as exc:
        return _render_landing(error=str(exc), status=422)
    except matchmaking.NoTasksAvailable:
        return render_template("voter/all_done.html")
    return redirect(url_for("voter.show_session", public_id=voting_session.public_id), 303)


def _owned_session(public_id: str):
    voting_session = matchmaking.session_by_public_id(public_id)
    if voting_session is None:
        abort(404)
    if voting_session.voter.public_id != session.get("voter"):
        abort(403)
    return voting_session


def _render_card(voting_session, warning: str | None = None, error: str | None = None,
                 status: int = 200):
    task = matchmaking.open_task(voting_session)
    context = {
        "session_id": voting_session.public_id,
        "warning": warning,
        "error": error,
        "task": task_view(task) if task else None,
        "reveal_ms": current_app.config.get("REVEAL_WORD_MS", 220),
    }
    template = "voter/_card.html" if _is_htmx() else "voter/session.html"
    response = current_app.make_response((render_template(template, **context), status))
    response.headers["Vary"] = "HX-Request"
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/s/<public_id>")
def show_session(public_id: str):
    voting_session = _owned_session(public_id)
    return _render_card(voting_session, warning=_pop_warning())


def _pop_warning() -> str | None:
    return VALIDATION_WARNING if session.pop("validation_warning", False) else None


@bp.post("/t/<int:task_id>")
@limiter.limit(lambda: current_app.config["RATE_LIMIT_VOTES"])
def vote(task_id: int):
    voter = _current_voter()
    if voter is None:
        abort(403)
    task = db.session.get(voting.Task, task_id)
    if task is None:
        abort(404)
    if task.voter_id != voter.id:
        abort(403)
    voting_session = task.session
    if (
        voting_session.criterion == "alignment"
        and request.form.get("read_confirmed") != "1"
        and task.answered_at is None
    ):
        return _render_card(
            voting_session, error="Please read the caption and confirm before choosing.",
            status=422,
        )
    try:
        response_ms = int(request.form.get("response_ms") or 0) or None
    except ValueError:
        response_ms = None
    try:
        result = voting.cast_vote(voter, task_id, request.form.get("choice"), response_ms)
    except voting.InvalidVote:
        return _render_card(voting_session, error="Tap the image you choose, then Continue.",
                            status=422)
    if _is_htmx():
        warning = VALIDATION_WARNING if result.validation_failed else None
        return _render_card(voting_session, warning=warning)
    if result.validation_failed:
        session["validation_warning"] = True
    return redirect(url_for("voter.show_session", public_id=voting_session.public_id), 303)
