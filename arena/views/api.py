"""JSON API under /api/v1, for mobile apps and scripts.

Voter identity travels as a bearer token: ``POST /sessions`` without one creates a voter and
returns ``voter_token`` once (only its hash is stored); send it back as
``Authorization: Bearer <voter_token>`` on votes and later sessions. No cookies are read, so
the API needs no CSRF token.
"""

from __future__ import annotations

import numpy as np
from flask import Blueprint, current_app, jsonify, request

from .. import matchmaking, voters, voting
from ..config import CRITERIA, QUESTIONS
from ..extensions import csrf, db, limiter
from ..leaderboard import elo_leaderboard
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


@bp.get("/leaderboard")
def leaderboard():
    criterion = request.args.get("criterion", "preference")
    if criterion not in CRITERIA:
        return error_response(400, f"criterion must be one of {', '.join(CRITERIA)}")
    rows = elo_leaderboard(criterion)
    return jsonify(
        criterion=criterion,
        method="elo",
        models=[
            {"rank": r.rank, "model": r.model, "rating": round(r.rating, 4), "votes": r.votes,
             "wins": r.wins}
            for r in rows
        ],
    )
