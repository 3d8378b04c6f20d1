"""Voter pages: landing with optional demographics, a session of tasks, the thank-you card.

Plain forms and redirects work without JavaScript; htmx swaps the task card in place
(``HX-Request``) and every URL renders as a full page. Every rule (whose task it is, the
caption's read gate, one vote per task) is the voting services'; a refused request comes
back as the card or the landing page with the reason.
"""

from __future__ import annotations

import numpy as np
from flask import Blueprint, current_app, redirect, render_template, request, session, url_for
from flask_babel import gettext, lazy_gettext

from arena import criteria
from arena.analysis.own import own_ranking
from arena.campaigns import panels
from arena.voting import image_reports, matchmaking, tasks, voters, votes
from arena.voting.voters import AGE_GROUPS, CONTINENTS, GENDERS, countries
from arena.web import i18n, limits
from arena.web.errors import error_response, renders_errors
from arena.web.presenters import preload_view, task_view
from arena.web.requests import is_htmx, request_network, request_voter

bp = Blueprint("voter", __name__)
VALIDATION_WARNING = lazy_gettext(
    "That one was a check question with a clear answer. Please look carefully at both images."
)
REPORT_THANKS = lazy_gettext("Thank you: the report was sent, and that question skipped.")
# refusals of the start form, in the page's language (others show the service's words)
LANDING_MESSAGES = {
    voters.MinorRefused: lazy_gettext("Sorry, you must be 18 or older to take part."),
}


def _current_voter():
    """The voter of this browser's cookie, if any."""
    return request_voter()


def _form_demographics() -> dict | None:
    if not request.form.get("with_demographics"):
        return None
    return {k: request.form.get(k) or None for k in ("age_group", "gender", "country")}


def _panel_done(voter=None):
    """The completion of a panel participant who gave every answer asked for, else None."""
    voter = voter or _current_voter()
    standing = panels.standing(voter) if voter is not None else None
    return standing if standing is not None and standing.done else None


def _render_landing(exc=None, status: int = 200):
    if isinstance(exc, matchmaking.NoTasksAvailable):
        done = _panel_done()
        if done is not None:
            return render_template("voter/complete_page.html", standing=done)
        return render_template("voter/all_done.html")
    voter = _current_voter()
    answers = _form_demographics() if request.method == "POST" else None
    if answers is None:
        answers = {k: getattr(voter, k) if voter else None
                   for k in ("age_group", "gender", "country")}
    wanted = request.values.get("criterion")
    message = LANDING_MESSAGES.get(type(exc), str(exc)) if exc else None
    html = render_template(
        "voter/index.html", error=message, answers=answers,
        age_groups=AGE_GROUPS, genders=GENDERS, continents=CONTINENTS,
        countries=i18n.country_names(countries().values()),
        returning=voter is not None, criterion=wanted if wanted in criteria.names() else None)
    return html, status


@bp.get("/")
def index():
    return _render_landing()


def _render_start_refusal(exc, status: int):
    """A refused start: the landing page with the reason, or for htmx (the card's "Next
    session") a card in the card's place: nothing left to answer, or the error."""
    if not is_htmx():
        return _render_landing(exc, status)
    if isinstance(exc, matchmaking.NoTasksAvailable):
        return render_template("voter/_all_done.html")
    return error_response(status, str(exc))


@bp.post("/start")
@limits.per_voter("RATE_LIMIT_SESSIONS")
@limits.per_network("RATE_LIMIT_NETWORK_SESSIONS")
@limits.new_identity()
@renders_errors(_render_start_refusal)
def start():
    """Create or update the voter from the (optional) form answers, then issue a session
    (of the criterion given by ``/?criterion=...`` links, else of a random one).

    The landing page's form gets the session's address (post/redirect/get); htmx, posting
    "Next session" from the end of a session, gets the new session's first card in place of
    that end, and its address pushed into the history (``HX-Push-Url``): one request instead
    of a redirect and a whole page."""
    voter = voters.identify_by_cookie(session.get("voter"), _form_demographics(),
                                        network=request_network())
    session.permanent = True
    session["voter"] = voter.public_id
    standing = panels.standing(voter)
    done = standing if standing is not None and standing.done else None
    rng, criterion = np.random.default_rng(), request.form.get("criterion") or None
    if is_htmx():
        if done is not None:
            return render_template("voter/complete.html", standing=done)
        public_id = matchmaking.issue_session(voter, rng, criterion)
        response = _render_card(public_id)
        response.headers["HX-Push-Url"] = url_for("voter.show_session", public_id=public_id)
        return response
    if done is not None:
        return render_template("voter/complete_page.html", standing=done)
    public_id = matchmaking.issue_session(voter, rng, criterion)
    return redirect(url_for("voter.show_session", public_id=public_id), 303)


def _render_card(voting_session: int | str, warning: str | None = None,
                 error: str | None = None, status: int = 200):
    """The current voter's session (its id or public id) as its card: the open task, shown
    from now, or the end of the session."""
    voter = _current_voter()
    standing = panels.standing(voter) if voter is not None else None
    # a panel participant who gave every answer asked for gets the code, not more work
    done = standing is not None and standing.done
    card = tasks.card(voter, voting_session, present=not done)
    task = None if done else card.task
    context = {"session_id": card.session.public_id, "warning": warning, "error": error,
               "task": task_view(task) if task else None, "standing": standing,
               "preload": preload_view(card.following) if task else [],
               "answered": voters.answer_count(voter) if voter and not task else None,
               "own_after": current_app.config["OWN_RANKING_MIN_VOTES"],
               "criterion": card.session.criterion,
               "next_in": current_app.config["NEXT_SESSION_SECONDS"]}
    template = "voter/_card.html" if is_htmx() else "voter/session.html"
    response = current_app.make_response((render_template(template, **context), status))
    response.headers["Vary"] = "HX-Request"
    response.headers["Cache-Control"] = "no-store"
    return response


CARD_MESSAGES = {
    votes.InvalidVote: lazy_gettext("Tap the image you choose, then Continue."),
    tasks.ReadNotConfirmed: lazy_gettext("Please read the caption and confirm before choosing."),
    tasks.StillRevealing: lazy_gettext("Please read the caption to the end, then confirm."),
}


def _render_task_error(exc, status: int, task_id: int):
    """A refused vote or confirmation: the card again with the reason, when the task is
    the voter's; the error page otherwise."""
    if isinstance(exc, tasks.TaskNotFound | tasks.NotYourTask):
        return error_response(status, str(exc))
    task = tasks.owned_task(_current_voter(), task_id)
    message = next((m for kind, m in CARD_MESSAGES.items() if isinstance(exc, kind)), str(exc))
    return _render_card(task.session_id, error=message, status=status)


def _require_voter():
    voter = _current_voter()
    if voter is None:
        raise tasks.NotYourTask("start a session from the home page first")
    return voter


@bp.get("/join/<join_key>")
# (a participant who has joined before is no new identity; their browser's cookie is not
# theirs to show: the link names them)
@limits.new_identity(returning=lambda: panels.returning(request.view_args["join_key"],
                                                        request.args))
@renders_errors(lambda exc, status, join_key: (render_template(
    "voter/panel_preview.html", message=str(exc)), status))
def join(join_key: str):
    """A panel participant arrives from the study platform with their id in the link: they
    vote as the same voter whatever the browser, on this campaign's pairs alone."""
    voter = panels.admit(join_key, request.args, network=request_network())
    session.clear()
    session.permanent = True
    session["voter"] = voter.public_id
    return redirect(url_for("voter.index"), 303)


def _session_not_here(exc, status: int, public_id: str):
    """A session this browser cannot open (another browser's, or its cookie is gone): a
    card saying so in the voter's language, and a way to start anew."""
    if not isinstance(exc, (matchmaking.SessionNotFound, matchmaking.NotYourSession)):
        return error_response(status, str(exc))
    template = "voter/_not_here.html" if is_htmx() else "voter/not_here.html"
    return render_template(template), status


@bp.get("/s/<public_id>")
@renders_errors(_session_not_here)
def show_session(public_id: str):
    warning = VALIDATION_WARNING if session.pop("validation_warning", False) else None
    if session.pop("report_sent", False):
        warning = REPORT_THANKS
    return _render_card(public_id, warning=warning)


def _render_report(task_id: int, error: str | None = None, status: int = 200):
    """The report card of a task: which image, and what is wrong with it."""
    voting_session, task = tasks.for_display(task_id)
    context = {"task": task_view(task), "session_id": voting_session.public_id,
               "reasons": image_reports.REASONS, "error": error,
               "card_template": "voter/_report.html"}
    template = "voter/_report.html" if is_htmx() else "voter/session.html"
    response = current_app.make_response((render_template(template, **context), status))
    response.headers["Vary"] = "HX-Request"
    response.headers["Cache-Control"] = "no-store"
    return response


def _report_refused(exc, status: int, task_id: int):
    if isinstance(exc, image_reports.InvalidReport):
        return _render_report(task_id, status=status, error=gettext(
            "Choose the image and what is wrong with it."))
    return error_response(status, str(exc))


@bp.get("/t/<int:task_id>/report")
@renders_errors(_report_refused)
def report_form(task_id: int):
    tasks.owned_task(_require_voter(), task_id)
    return _render_report(task_id)


@bp.post("/t/<int:task_id>/report")
@limits.per_voter("RATE_LIMIT_VOTES")
@limits.per_network("RATE_LIMIT_NETWORK_VOTES")
@renders_errors(_report_refused)
def report(task_id: int):
    """The voter reports an image of this task: no vote, the next task."""
    voter = _require_voter()
    image_reports.report(voter, task_id, request.form.get("side"), request.form.get("reason"))
    task = tasks.owned_task(voter, task_id)
    if is_htmx():
        return _render_card(task.session_id, warning=REPORT_THANKS)
    session["report_sent"] = True
    return redirect(url_for("voter.show_session", public_id=task.session_public_id), 303)


@bp.get("/t/<int:task_id>")
@bp.get("/t/<int:task_id>/read")
@bp.get("/t/<int:task_id>/skip")
def task_address(task_id: int):
    """A question's address opened as a page (a form sent without JavaScript leaves the
    browser there, and a reload or a shared link opens it): the question's session for the
    voter it was issued to, else the start page. Only a POST to it changes anything."""
    voter = _current_voter()
    try:
        task = tasks.owned_task(voter, task_id) if voter is not None else None
    except (tasks.TaskNotFound, tasks.NotYourTask):
        task = None
    if task is None:
        return redirect(url_for("voter.index"), 303)
    return redirect(url_for("voter.show_session", public_id=task.session_public_id), 303)


@bp.post("/t/<int:task_id>/read")
@limits.per_voter("RATE_LIMIT_VOTES")
@limits.per_network("RATE_LIMIT_NETWORK_VOTES")
@renders_errors(_render_task_error)
def confirm_read(task_id: int):
    """The voter confirms having read the caption; the images become selectable."""
    return _card_after(tasks.confirm_read(_require_voter(), task_id))


@bp.post("/t/<int:task_id>/skip")
@limits.per_voter("RATE_LIMIT_VOTES")
@limits.per_network("RATE_LIMIT_NETWORK_VOTES")
@renders_errors(_render_task_error)
def skip(task_id: int):
    """The voter cannot decide: no vote, the next task."""
    return _card_after(tasks.skip(_require_voter(), task_id))


def _card_after(task):
    """The session's card after ``task`` changed: swapped in by htmx, else post/redirect/get."""
    if is_htmx():
        return _render_card(task.session_id)
    return redirect(url_for("voter.show_session", public_id=task.session_public_id), 303)


@bp.post("/t/<int:task_id>")
@limits.per_voter("RATE_LIMIT_VOTES")
@limits.per_network("RATE_LIMIT_NETWORK_VOTES")
@renders_errors(_render_task_error)
def vote(task_id: int):
    try:
        response_ms = int(request.form.get("response_ms") or 0) or None
    except ValueError:
        response_ms = None  # a timing is a courtesy of the page, never a reason to refuse
    result = votes.cast_vote(_require_voter(), task_id, request.form.get("choice"),
                             response_ms, language=i18n.current_language())
    if is_htmx():
        warning = VALIDATION_WARNING if result.validation_failed else None
        return _render_card(result.session_id, warning=warning)
    if result.validation_failed:
        session["validation_warning"] = True
    return redirect(url_for("voter.show_session", public_id=result.session_id), 303)


@bp.get("/me/ranking")
def own_ranking_page():
    """The voter's own ranking of a criterion (``?criterion=``) beside the crowd's, from
    their answers before the period's cut-off (:mod:`arena.analysis.own`); the landing page
    for a browser that has not voted."""
    voter = _current_voter()
    if voter is None:
        return redirect(url_for("voter.index"), 303)
    chosen = request.args.get("criterion", "preference")
    if chosen not in criteria.names():
        return error_response(404, gettext("No such question."))
    ranking = own_ranking(voter.id, chosen)
    response = current_app.make_response(render_template(
        "voter/own_ranking.html", ranking=ranking, criteria=criteria.names(),
        questions={name: gettext(criteria.get(name).question) for name in criteria.names()}))
    response.headers["Cache-Control"] = "no-store"
    return response
