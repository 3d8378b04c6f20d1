"""JSON API under /api/v1, for mobile apps and scripts.

Voter identity travels as a bearer token: ``POST /sessions`` without one creates a voter and
returns ``voter_token`` once (only its hash is stored); send it back as
``Authorization: Bearer <voter_token>`` on votes and later sessions. No cookies are read, so
the API needs no CSRF token.
"""

from __future__ import annotations

import tempfile

import numpy as np
from flask import Blueprint, Response, current_app, jsonify, request, stream_with_context

from .. import export, hype, ingest, matchmaking, owners, tokens, voters, voting
from ..config import CRITERIA, QUESTIONS
from ..extensions import csrf, db, limiter
from ..leaderboard import elo_leaderboard
from ..models import Prompt, PromptSet
from ..rankings import SLICE_ARGS, RankingError, rank_models, slice_from_args, win_matrix
from .presenters import task_view

bp = Blueprint("api", __name__)
csrf.exempt(bp)


def error_response(status: int, message: str, **extra):
    return jsonify(error=message, **extra), status


def _bearer_token() -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def _json_body(required: bool):
    """The request's JSON object, {} when optional and absent; None when malformed."""
    if not request.get_data():
        return None if required else {}
    body = request.get_json(silent=True)
    return body if isinstance(body, dict) else None


@bp.get("/health")
def health():
    db.session.execute(db.select(1))
    return jsonify(status="ok")


@bp.post("/sessions")
@limiter.limit(lambda: current_app.config["RATE_LIMIT_SESSIONS"])
def create_session():
    body = _json_body(required=False)
    if body is None:
        return error_response(400, "body must be a JSON object")
    criterion = body.get("criterion")
    if criterion is not None and criterion not in CRITERIA:
        return error_response(400, f"criterion must be one of {', '.join(CRITERIA)}")
    token = _bearer_token()
    new_token = None
    try:
        if token:
            voter = voters.voter_by_token(token)
            if voter is None:
                return error_response(401, "unknown voter token")
            if "demographics" in body:
                voters.update_demographics(voter, body["demographics"])
        else:
            voter, new_token = voters.create_voter(body.get("demographics"), with_token=True)
        db.session.commit()
    except voters.MinorRefused as exc:
        db.session.rollback()
        return error_response(403, str(exc), field=exc.field)
    except voters.DemographicsError as exc:
        db.session.rollback()
        return error_response(400, str(exc), field=exc.field)
    try:
        voting_session = matchmaking.start_session(voter, np.random.default_rng(), criterion)
    except matchmaking.NoTasksAvailable as exc:
        return error_response(409, str(exc))
    payload = {
        "session_id": voting_session.public_id,
        "voter_id": voter.public_id,
        "criterion": voting_session.criterion,
        "question": QUESTIONS[voting_session.criterion],
        "tasks": [
            {k: v for k, v in task_view(t, external=True).items()
             if k in ("task_id", "prompt", "left", "right")}
            for t in voting_session.tasks
        ],
    }
    if new_token:
        payload["voter_token"] = new_token
    return jsonify(payload), 201


@bp.post("/tasks/<int:task_id>/vote")
@limiter.limit(lambda: current_app.config["RATE_LIMIT_VOTES"])
def vote(task_id: int):
    voter = voters.voter_by_token(_bearer_token())
    if voter is None:
        return error_response(401, "send the voter token as 'Authorization: Bearer <token>'")
    body = _json_body(required=True)
    if body is None:
        return error_response(400, "body must be a JSON object with 'choice'")
    try:
        result = voting.cast_vote(voter, task_id, body.get("choice"), body.get("response_ms"))
    except voting.InvalidVote as exc:
        return error_response(400, str(exc))
    except voting.TaskNotFound as exc:
        return error_response(404, str(exc))
    except voting.NotYourTask as exc:
        return error_response(403, str(exc))
    if result.duplicate:
        return jsonify(accepted=False, duplicate=True), 200
    return jsonify(accepted=True, validation_failed=result.validation_failed), 201


def _analyst_required():
    """None if the request carries an active analyst token, else the 401 response."""
    if tokens.check_token(_bearer_token()) is None:
        return error_response(401, "an analyst token is required: 'Authorization: Bearer "
                              "<token>' (create one with `arena token create NAME`)")
    return None


def _download(body, mimetype: str, filename: str):
    response = Response(body, mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@bp.get("/leaderboard")
def leaderboard():
    """Public: the online Elo table (``?criterion=``). With an analyst token: any method
    (``bt`` with bootstrap intervals), slice and format (json, csv, parquet)."""
    criterion = request.args.get("criterion", "preference")
    method = request.args.get("method", "elo")
    fmt = request.args.get("format", "json")
    if criterion not in CRITERIA:
        return error_response(400, f"criterion must be one of {', '.join(CRITERIA)}")
    if fmt not in ("json", "csv", "parquet"):
        return error_response(400, "format must be json, csv or parquet")
    detailed = (method != "elo" or fmt != "json" or "poststratify" in request.args
                or any(a in request.args for a in SLICE_ARGS))
    if not detailed:
        rows = elo_leaderboard(criterion)
        return jsonify(
            criterion=criterion,
            method="elo",
            models=[
                {"rank": r.rank, "model": r.model, "rating": round(r.rating, 4),
                 "votes": r.votes, "wins": r.wins}
                for r in rows
            ],
        )
    denied = _analyst_required()
    if denied:
        return denied
    try:
        rounds = int(request.args.get("bootstrap", 1000))
        if not 0 <= rounds <= 10_000:
            raise ValueError
    except ValueError:
        return error_response(400, "bootstrap must be an integer from 0 to 10000")
    try:
        ranking = rank_models(criterion, method=method, rounds=rounds, slice_=slice_from_args(request.args),
                              rng=np.random.default_rng(int(request.args.get("seed", 0))),
                              intervals=request.args.get("intervals", "bootstrap"),
                              poststratify=request.args.get("poststratify") in ("1", "true"))
    except (RankingError, ValueError) as exc:
        return error_response(400, str(exc))
    name = f"leaderboard-{criterion}-{ranking.method}"
    if fmt == "csv":
        return _download(export.to_csv(ranking), "text/csv", f"{name}.csv")
    if fmt == "parquet":
        return _download(export.to_parquet(ranking), "application/vnd.apache.parquet",
                         f"{name}.parquet")
    return jsonify(
        criterion=criterion, method=ranking.method, total_votes=ranking.total_votes,
        bootstrap_rounds=ranking.bootstrap_rounds, flags=ranking.flags, slice=ranking.slice,
        models=[{k: export._clean(v) for k, v in r.items()} for r in ranking.records()],
    )


@bp.get("/matrix")
def matrix():
    """Win counts between models: ``wins[i][j]`` = votes where model i beat model j."""
    denied = _analyst_required()
    if denied:
        return denied
    criterion = request.args.get("criterion", "preference")
    if criterion not in CRITERIA:
        return error_response(400, f"criterion must be one of {', '.join(CRITERIA)}")
    try:
        _, names, wins = win_matrix(criterion, slice_from_args(request.args))
    except RankingError as exc:
        return error_response(400, str(exc))
    return jsonify(criterion=criterion, models=names, wins=wins.astype(int).tolist())


@bp.get("/votes")
def votes():
    """The vote log, one row per vote, streamed (csv, jsonl) or as Parquet row groups."""
    denied = _analyst_required()
    if denied:
        return denied
    fmt = request.args.get("format", "csv")
    if fmt not in export.VOTE_FORMATS:
        return error_response(400, f"format must be one of {', '.join(export.VOTE_FORMATS)}")
    batches = export.iter_votes(db.engine, current_app.config["SECRET_KEY"])
    if fmt == "parquet":
        sink = tempfile.SpooledTemporaryFile(max_size=64 * 2**20)  # noqa: SIM115 - closed by the response
        export.votes_parquet(batches, sink)
        sink.seek(0)
        return _download(sink, "application/vnd.apache.parquet", "votes.parquet")
    body = export.votes_csv(batches) if fmt == "csv" else export.votes_jsonl(batches)
    mimetype = "text/csv" if fmt == "csv" else "application/x-ndjson"
    return _download(stream_with_context(body), mimetype, f"votes.{fmt}")


# --- Model owners -------------------------------------------------------------------------


def _owner_or_401():
    owner = owners.owner_by_token(_bearer_token())
    if owner is None:
        return None, error_response(401, "an owner token is required: 'Authorization: Bearer "
                                    "<token>' (an operator creates it: `arena owner create`)")
    return owner, None


@bp.get("/prompts")
def prompts():
    """The prompts of a set (``?set=DrawBench``), with the ids uploads refer to."""
    name = request.args.get("set")
    query = db.select(Prompt.id, Prompt.text, Prompt.category, PromptSet.name).join(PromptSet)
    if name:
        query = query.where(PromptSet.name == name)
    rows = db.session.execute(query.order_by(Prompt.id)).all()
    if name and not rows:
        return error_response(404, f"no prompt set {name!r}")
    return jsonify(prompts=[{"id": r[0], "text": r[1], "category": r[2], "set": r[3]}
                            for r in rows])


@bp.post("/models")
def register_model():
    owner, denied = _owner_or_401()
    if denied:
        return denied
    body = _json_body(required=True)
    if body is None:
        return error_response(400, "body must be a JSON object with 'name'")
    try:
        model = owners.register_model(owner, body.get("name"), body.get("description"),
                                      body.get("link"))
    except owners.OwnerError as exc:
        return error_response(400, str(exc))
    return jsonify(id=model.id, name=model.name), 201


@bp.post("/models/<name>/images")
@limiter.limit(lambda: current_app.config["RATE_LIMIT_UPLOADS"])
def upload_image(name: str):
    """One image per request (multipart: ``image``, ``prompt_id``)."""
    owner, denied = _owner_or_401()
    if denied:
        return denied
    try:
        model = owners.owned_model(owner, name)
    except LookupError as exc:
        return error_response(404, str(exc))
    except PermissionError as exc:
        return error_response(403, str(exc))
    upload = request.files.get("image")
    if upload is None or "prompt_id" not in request.form:
        return error_response(400, "send multipart fields 'image' (the file) and 'prompt_id'")
    result = ingest.ingest_image(model, request.form["prompt_id"], upload.read(),
                                 upload.filename or "upload")
    if result.ok:
        return jsonify(result.as_dict()), 200 if result.duplicate else 201
    status = 404 if result.reason and result.reason.startswith("no prompt") else 422
    return jsonify(error=result.reason, **result.as_dict()), status


# --- HYPE exports --------------------------------------------------------------------------


def _hype_run_for_analyst(name: str):
    """(run, None), or (None, the 401/404 response)."""
    denied = _analyst_required()
    if denied:
        return None, denied
    try:
        return hype.get_run(name), None
    except hype.HypeError as exc:
        return None, error_response(404, str(exc))


@bp.get("/hype/<name>/scores")
def hype_scores(name: str):
    """A HYPE run's table (and separability) as json or csv; analyst token."""
    from dataclasses import asdict

    run, refused = _hype_run_for_analyst(name)
    if refused:
        return refused
    fmt = request.args.get("format", "json")
    if fmt not in ("json", "csv"):
        return error_response(400, "format must be json or csv")
    scores, tests, qualified = hype.report(run, seed=int(request.args.get("seed", 0)))
    rows = [asdict(s) for s in scores]
    if fmt == "csv":
        import csv as csv_module
        import io

        buf = io.StringIO()
        writer = csv_module.DictWriter(buf, fieldnames=list(hype.SCORE_COLUMNS),
                                       lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return _download(buf.getvalue(), "text/csv", f"hype-{run.id}-scores.csv")
    return jsonify(run=run.name, mode=run.mode, models=rows, separability=asdict(tests),
                   evaluators=qualified)


@bp.get("/hype/<name>/trials")
def hype_trials(name: str):
    """Every answered trial of a run as csv, in the format `arena hype score` reads."""
    run, refused = _hype_run_for_analyst(name)
    if refused:
        return refused
    return _download(hype.trials_csv(run, current_app.config["SECRET_KEY"]), "text/csv",
                     f"hype-{run.id}-trials.csv")
