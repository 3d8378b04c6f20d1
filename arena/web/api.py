"""JSON API under /api/v1, for mobile apps and scripts.

Voter identity travels as a bearer token: ``POST /sessions`` without one creates a voter and
returns ``voter_token`` once (only its hash is stored); send it back as
``Authorization: Bearer <voter_token>`` on votes and later sessions. No cookies are read, so
the API needs no CSRF token. Errors are ``{"error": message, ...}`` with the status of their
kind (see :mod:`arena.web.errors`); every view parses, calls a service and serialises.
"""

from __future__ import annotations

import numpy as np
from flask import Blueprint, Response, jsonify, request, stream_with_context
from flask_babel import gettext

from arena.accounts import owners, tokens
from arena.analysis import exports
from arena.analysis.leaderboard import INTERVALS, METHODS, elo_table, rank_models
from arena.analysis.tallies import CLUSTERS, SLICE_ARGS, slice_from_args, win_matrix
from arena.catalog import ingest, prompts, registry
from arena.config import QUESTIONS, check_criterion
from arena.errors import Invalid
from arena.extensions import csrf
from arena.hype import reports, runs
from arena.infra import health
from arena.voting import image_reports, matchmaking, tasks, voters, votes
from arena.web import i18n, limits
from arena.web.errors import status_for
from arena.web.presenters import api_task
from arena.web.requests import (
    bearer_token,
    choice_arg,
    flag_arg,
    int_arg,
    json_body,
    request_voter,
)

bp = Blueprint("api", __name__)
csrf.exempt(bp)


def _download(download: exports.Download):
    body = download.body
    if not isinstance(body, bytes | str) and not hasattr(body, "read"):
        body = stream_with_context(body)
    response = Response(body, mimetype=download.mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{download.filename}"'
    return response


@bp.get("/openapi.json")
def openapi_description():
    """This API's OpenAPI 3.1 description (arena/web/openapi.py)."""
    from arena.web.openapi import spec

    return jsonify(spec())


@bp.get("/health")
def health_check():
    return jsonify(health.check())


@bp.get("/health/live")
def health_live():
    return jsonify(health.alive())


@bp.get("/health/ready")
def health_ready():
    return jsonify(health.ready())


# --- Voting -------------------------------------------------------------------------------


@bp.post("/sessions")
@limits.per_voter("RATE_LIMIT_SESSIONS")
@limits.per_network("RATE_LIMIT_NETWORK_SESSIONS")
@limits.new_identity()
def create_session():
    body = json_body(required=False)
    criterion = body.get("criterion")
    if criterion is not None:
        check_criterion(criterion)
    voter, new_token = voters.identify_by_token(bearer_token(), body.get("demographics"))
    voter_id = voter.public_id  # (read before the session's commit expires it)
    voting_session = matchmaking.issue_shown_session(voter, np.random.default_rng(), criterion)
    payload = {
        "session_id": voting_session.public_id,
        "voter_id": voter_id,
        "criterion": voting_session.criterion,
        "question": gettext(QUESTIONS[voting_session.criterion]),
        "tasks": [api_task(t) for t in voting_session.tasks],
    }
    if new_token:
        payload["voter_token"] = new_token
    return jsonify(payload), 201


@bp.post("/tasks/<int:task_id>/read")
@limits.per_voter("RATE_LIMIT_VOTES")
@limits.per_network("RATE_LIMIT_NETWORK_VOTES")
def confirm_read(task_id: int):
    """Confirm having read an alignment task's caption (after its ``reveal_ms``)."""
    tasks.confirm_read(voters.required(request_voter()), task_id)
    return jsonify(read_confirmed=True)


@bp.post("/tasks/<int:task_id>/skip")
@limits.per_voter("RATE_LIMIT_VOTES")
@limits.per_network("RATE_LIMIT_NETWORK_VOTES")
def skip(task_id: int):
    """The voter cannot decide: the task closes without a vote."""
    tasks.skip(voters.required(request_voter()), task_id)
    return jsonify(skipped=True)


@bp.post("/tasks/<int:task_id>/report")
@limits.per_voter("RATE_LIMIT_VOTES")
@limits.per_network("RATE_LIMIT_NETWORK_VOTES")
def report_image(task_id: int):
    """Report the image on ``side`` of this task (``reason``: broken, offensive or other);
    the task closes without a vote."""
    voter = voters.required(request_voter())
    body = json_body(required=True, what="a JSON object with 'side' and 'reason'")
    image_reports.report(voter, task_id, body.get("side"), body.get("reason"))
    return jsonify(reported=True, skipped=True), 201


@bp.post("/tasks/<int:task_id>/vote")
@limits.per_voter("RATE_LIMIT_VOTES")
@limits.per_network("RATE_LIMIT_NETWORK_VOTES")
def vote(task_id: int):
    voter = voters.required(request_voter())
    body = json_body(required=True, what="a JSON object with 'choice'")
    result = votes.cast_vote(voter, task_id, body.get("choice"), body.get("response_ms"),
                             language=i18n.current_language())
    if result.duplicate:
        return jsonify(accepted=False, duplicate=True), 200
    return jsonify(accepted=True, validation_failed=result.validation_failed), 201


# --- Analysts -----------------------------------------------------------------------------


@bp.get("/leaderboard")
def leaderboard():
    """Public: the online Elo table (``?criterion=``) over the votes before ``as_of``, the
    period's cut-off (:mod:`arena.analysis.published`). With an analyst token: any method
    (``bt`` with bootstrap or instant intervals, resampling ``cluster`` units), slice,
    margins (``margin=continent&margin=gender:female=0.5,male=0.5``) and format (json, csv,
    parquet)."""
    criterion = check_criterion(request.args.get("criterion", "preference"))
    fmt = choice_arg("format", "json", ("json", "csv", "parquet"))
    method = request.args.get("method", "elo")
    detailed = (method != "elo" or fmt != "json"
                or any(a in request.args for a in (*SLICE_ARGS, "poststratify", "margin")))
    if not detailed:
        table = elo_table(criterion)
        return jsonify(criterion=criterion, method="elo", as_of=table.as_of.isoformat(),
                       models=[{"rank": r.rank, "model": r.model, "rating": round(r.rating, 4),
                                "votes": r.votes, "wins": r.wins} for r in table.rows])
    tokens.require_analyst(bearer_token())
    ranking = rank_models(
        criterion, method=choice_arg("method", "elo", METHODS),
        rounds=int_arg("bootstrap", 1000, 0, 10_000),
        slice_=slice_from_args(request.args),
        rng=np.random.default_rng(int_arg("seed", 0, 0, 2**32 - 1)),
        intervals=choice_arg("intervals", "bootstrap", INTERVALS),
        cluster=choice_arg("cluster", "voter", CLUSTERS),
        margins=request.args.getlist("margin"), poststratify=flag_arg("poststratify"))
    if fmt != "json":
        return _download(exports.ranking_download(ranking, fmt))
    return jsonify(
        criterion=criterion, method=ranking.method, total_votes=ranking.total_votes,
        bootstrap_rounds=ranking.bootstrap_rounds, intervals=ranking.intervals,
        cluster=ranking.cluster, units=ranking.units, effective_votes=ranking.effective_votes,
        flags=ranking.flags, slice=ranking.slice,
        models=[{k: exports.clean(v) for k, v in r.items()} for r in ranking.records()])


@bp.get("/matrix")
def matrix():
    """Win counts between models: ``wins[i][j]`` = votes where model i beat model j."""
    tokens.require_analyst(bearer_token())
    criterion = check_criterion(request.args.get("criterion", "preference"))
    _, names, wins = win_matrix(criterion, slice_from_args(request.args))
    return jsonify(criterion=criterion, models=names, wins=wins.astype(int).tolist())


@bp.get("/votes")
def vote_log():
    """The vote log, one row per vote, streamed (csv, jsonl) or as Parquet row groups."""
    tokens.require_analyst(bearer_token())
    return _download(exports.vote_log(request.args.get("format", "csv")))


@bp.get("/skips")
def skip_log():
    """Tasks closed without a vote (skips and image reports), streamed (csv, jsonl)."""
    tokens.require_analyst(bearer_token())
    return _download(exports.skip_log(request.args.get("format", "csv")))


# --- Model owners -------------------------------------------------------------------------


@bp.get("/prompts", endpoint="prompts")
def prompt_list():
    """The prompts of a set (``?set=DrawBench``), with the ids uploads refer to."""
    return jsonify(prompts=prompts.list_prompts(request.args.get("set")))


@bp.post("/models")
def register_model():
    owner = owners.require_owner(bearer_token())
    body = json_body(required=True, what="a JSON object with 'name'")
    model = registry.register_model(owner, body.get("name"), body.get("description"),
                                    body.get("link"))
    return jsonify(id=model.id, name=model.name), 201


@bp.post("/models/<name>/images")
@limits.per_network("RATE_LIMIT_UPLOADS")
def upload_image(name: str):
    """One image per request (multipart: ``image``, ``prompt_id``)."""
    model = registry.owned_model(owners.require_owner(bearer_token()), name)
    upload = request.files.get("image")
    if upload is None or "prompt_id" not in request.form:
        raise Invalid("send multipart fields 'image' (the file) and 'prompt_id'")
    result = ingest.ingest_image(model, request.form["prompt_id"], upload.read(),
                                 ingest.upload_name(upload.filename))
    if result.ok:
        return jsonify(result.as_dict()), 200 if result.duplicate else 201
    return jsonify(error=result.reason, **result.as_dict()), status_for(result.error)


# --- HYPE exports --------------------------------------------------------------------------


@bp.get("/hype/<name>/scores")
def hype_scores(name: str):
    """A HYPE run's table (and separability) as json or csv; analyst token."""
    tokens.require_analyst(bearer_token())
    run = runs.get_run(name)
    fmt = choice_arg("format", "json", ("json", "csv"))
    scores, tests, qualified = runs.report(run, seed=int_arg("seed", 0, 0, 2**32 - 1))
    if fmt == "csv":
        return _download(exports.Download(reports.scores_csv(scores), "text/csv",
                                          f"hype-{run.id}-scores.csv"))
    return jsonify(run=run.name, **reports.scores_document(run.mode, scores, tests,
                                                           evaluators=qualified))


@bp.get("/hype/<name>/trials")
def hype_trials(name: str):
    """Every answered trial of a run as csv, in the format `arena hype score` reads."""
    tokens.require_analyst(bearer_token())
    run = runs.get_run(name)
    return _download(exports.Download(runs.trials_csv(run), "text/csv",
                                      f"hype-{run.id}-trials.csv"))
