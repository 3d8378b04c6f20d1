"""The OpenAPI 3.1 description of ``/api/v1``, served at ``/api/v1/openapi.json``.

Written by hand beside the routes it describes (``arena/web/api.py``) and held to them by
``tests/security/test_api_schema.py``: every route of the blueprint is described, and
schemathesis sends generated requests from this description to the app on SQLite and
PostgreSQL and checks each answer against it (documented status, content type and shape;
never a 500)."""

from __future__ import annotations

from arena.analysis.exports import VOTE_FORMATS
from arena.analysis.leaderboard import INTERVALS, METHODS
from arena.analysis.tallies import CLUSTERS
from arena.config import CRITERIA, LANGUAGES
from arena.voting.voters import AGE_GROUPS, CONTINENTS, GENDERS, countries

VERSION = "1"

_ERROR = {"type": "object", "required": ["error"],
          "properties": {"error": {"type": "string"}}}
_TASK_ID = {"name": "task_id", "in": "path", "required": True,
            "schema": {"type": "integer", "minimum": 0}}
_NAME = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
_CRITERION = {"name": "criterion", "in": "query",
              "schema": {"type": "string", "enum": list(CRITERIA)}}
_SEED = {"name": "seed", "in": "query",
         "schema": {"type": "integer", "minimum": 0, "maximum": 2**32 - 1}}
_IMAGE = {"type": "object", "required": ["url", "urls"],
          "properties": {"url": {"type": "string"},
                         "urls": {"type": "object", "additionalProperties": {"type": "string"}}}}
_CSV = {"text/csv": {"schema": {"type": "string"}}}
_VOTER = [{"voterToken": []}]
_ANALYST = [{"analystToken": []}]


def _json(schema: dict) -> dict:
    return {"application/json": {"schema": schema}}


def _status(word: str) -> dict:
    return {"type": "object", "required": ["status"], "properties": {
        "status": {"const": word}}}


def _op(summary: str, ok: dict, *, parameters=(), body=None, security=None,
        extra=None) -> dict:
    """One operation: its success responses (status: content), any error as ``{"error"}``."""
    responses = {status: {"description": "success", "content": content}
                 for status, content in ok.items()}
    responses.update(extra or {})
    responses["default"] = {"description": "an error, with a message",
                            "content": _json(_ERROR)}
    op = {"summary": summary, "parameters": list(parameters), "responses": responses}
    if body is not None:
        op["requestBody"] = body
    if security is not None:
        op["security"] = security
    return op


def _json_body(schema: dict, required: bool = True) -> dict:
    return {"required": required, "content": _json(schema)}


def _slice_parameters() -> list[dict]:
    """Which votes count (arena.analysis.tallies.Slice), for analysts."""
    def enum(name, values):
        return {"name": name, "in": "query", "schema": {"enum": list(values)}}

    return [enum("age_group", AGE_GROUPS), enum("gender", GENDERS),
            enum("continent", CONTINENTS), enum("country", sorted(countries())),
            enum("language", LANGUAGES),
            {"name": "category", "in": "query", "schema": {"type": "string"}},
            {"name": "since", "in": "query", "schema": {"type": "string", "format": "date"}},
            {"name": "until", "in": "query", "schema": {"type": "string", "format": "date"}},
            enum("trusted_only", ("true", "false")), enum("include_flagged", ("true", "false")),
            enum("poststratify", ("true", "false")),
            {"name": "margin", "in": "query", "schema": {"type": "string"},
             "description": "an attribute to post-stratify on, with target shares "
                            "(margin=gender:female=0.5,male=0.5); repeatable"}]


def spec() -> dict:
    task = {"type": "object", "required": ["task_id", "prompt", "reveal_ms", "left", "right"],
            "properties": {"task_id": {"type": "integer"},
                           "prompt": {"type": ["string", "null"]},
                           "reveal_ms": {"type": "integer"},
                           "left": _IMAGE, "right": _IMAGE}}
    session = {"type": "object",
               "required": ["session_id", "voter_id", "criterion", "question", "tasks"],
               "properties": {"session_id": {"type": "string"}, "voter_id": {"type": "string"},
                              "criterion": {"enum": list(CRITERIA)},
                              "question": {"type": "string"},
                              "tasks": {"type": "array", "items": task},
                              "voter_token": {"type": "string"}}}
    demographics = {"type": "object", "properties": {
        "age_group": {"type": "string"}, "gender": {"type": "string"},
        "country": {"type": "string"}}}
    ranking_row = {"type": "object", "required": ["rank", "model"], "properties": {
        "rank": {"type": ["integer", "null"]}, "model": {"type": "string"}}}
    paths = {
        "/health": {"get": _op("The database answers a query", {"200": _json(_status("ok"))})},
        "/health/live": {"get": _op("The process answers (liveness)",
                                    {"200": _json(_status("alive"))})},
        "/health/ready": {"get": _op("A write commits (readiness); 503 says why not",
                                     {"200": _json(_status("ready"))})},
        "/sessions": {"post": _op(
            "Start a session of up to 3 tasks; without a token, a new voter and its token",
            {"201": _json(session)},
            body=_json_body({"type": "object", "properties": {
                "criterion": {"enum": list(CRITERIA)}, "demographics": demographics}},
                required=False),
            security=[{}, *_VOTER])},
        "/tasks/{task_id}/read": {"post": _op(
            "Confirm an alignment caption was read to the end",
            {"200": _json({"type": "object", "required": ["read_confirmed"]})},
            parameters=[_TASK_ID], security=_VOTER)},
        "/tasks/{task_id}/skip": {"post": _op(
            "Close a task without a vote (\"Can't decide\")",
            {"200": _json({"type": "object", "required": ["skipped"]})},
            parameters=[_TASK_ID], security=_VOTER)},
        "/tasks/{task_id}/report": {"post": _op(
            "Report one of the task's images; closes the task without a vote",
            {"201": _json({"type": "object", "required": ["reported", "skipped"]})},
            parameters=[_TASK_ID], security=_VOTER,
            body=_json_body({"type": "object", "required": ["side", "reason"], "properties": {
                "side": {"enum": ["left", "right"]},
                "reason": {"enum": ["broken", "offensive", "other"]}}}))},
        "/tasks/{task_id}/vote": {"post": _op(
            "Vote on a task; a repeat answers 200 with duplicate=true",
            {"201": _json({"type": "object", "required": ["accepted", "validation_failed"]}),
             "200": _json({"type": "object", "required": ["accepted", "duplicate"]})},
            parameters=[_TASK_ID], security=_VOTER,
            body=_json_body({"type": "object", "required": ["choice"], "properties": {
                "choice": {"enum": ["left", "right"]},
                "response_ms": {"type": "integer", "minimum": 0}}}))},
        "/leaderboard": {"get": _op(
            "Public: online Elo over the votes before as_of, the hour's cut-off. With an "
            "analyst token: live, any method, slice and format",
            {"200": {**_json({"type": "object", "required": ["criterion", "models"],
                              "properties": {"models": {"type": "array",
                                                        "items": ranking_row}}}),
                     **_CSV, "application/vnd.apache.parquet": {"schema": {}}}},
            parameters=[_CRITERION, _SEED,
                        {"name": "format", "in": "query",
                         "schema": {"enum": ["json", "csv", "parquet"]}},
                        {"name": "method", "in": "query",
                         "schema": {"enum": list(METHODS)}},
                        {"name": "bootstrap", "in": "query",
                         "schema": {"type": "integer", "minimum": 0, "maximum": 10_000}},
                        {"name": "intervals", "in": "query",
                         "schema": {"enum": list(INTERVALS)}},
                        {"name": "cluster", "in": "query",
                         "schema": {"enum": list(CLUSTERS)}},
                        *_slice_parameters()],
            security=[{}, *_ANALYST])},
        "/matrix": {"get": _op("Wins of each model over each other (analyst)", {"200": _json(
            {"type": "object", "required": ["criterion", "models", "wins"]})},
            parameters=[_CRITERION], security=_ANALYST)},
        "/votes": {"get": _op("The vote log (analyst)", {"200": {
            **_CSV, "application/x-ndjson": {"schema": {"type": "string"}},
            "application/vnd.apache.parquet": {"schema": {}}}},
            parameters=[{"name": "format", "in": "query",
                         "schema": {"enum": list(VOTE_FORMATS)}}],
            security=_ANALYST)},
        "/skips": {"get": _op("Tasks closed without a vote: skips and reports (analyst)",
                              {"200": {**_CSV,
                                       "application/x-ndjson": {"schema": {"type": "string"}}}},
                              parameters=[{"name": "format", "in": "query",
                                           "schema": {"enum": ["csv", "jsonl"]}}],
                              security=_ANALYST)},
        "/prompts": {"get": _op("Prompts, of one set when named", {"200": _json(
            {"type": "object", "required": ["prompts"]})},
            parameters=[{"name": "set", "in": "query", "schema": {"type": "string"}}])},
        "/models": {"post": _op("Register a model (owner token)", {"201": _json(
            {"type": "object", "required": ["id", "name"]})},
            body=_json_body({"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"}, "description": {"type": "string"},
                "link": {"type": "string"}}}),
            security=[{"ownerToken": []}])},
        "/models/{name}/images": {"post": _op(
            "Upload one image for a prompt (owner token); a repeat answers 200",
            {"201": _json({"type": "object"}), "200": _json({"type": "object"})},
            parameters=[_NAME], security=[{"ownerToken": []}],
            body={"required": True, "content": {"multipart/form-data": {"schema": {
                "type": "object", "required": ["image", "prompt_id"], "properties": {
                    "image": {"type": "string", "format": "binary"},
                    "prompt_id": {"type": "integer"}}}}}})},
        "/hype/{name}/scores": {"get": _op(
            "A HYPE run's scores (analyst)", {"200": {**_json({"type": "object"}), **_CSV}},
            parameters=[_NAME, _SEED, {"name": "format", "in": "query",
                                       "schema": {"enum": ["json", "csv"]}}],
            security=_ANALYST)},
        "/hype/{name}/trials": {"get": _op("A HYPE run's answered trials (analyst)",
                                           {"200": _CSV}, parameters=[_NAME],
                                           security=_ANALYST)},
        "/openapi.json": {"get": _op("This description", {"200": _json({"type": "object"})})},
    }
    bearer = {"type": "http", "scheme": "bearer"}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Arena", "version": VERSION,
                 "description": "Human evaluation of generative image models: voting, "
                                "uploads and exports. Errors are {\"error\": message} with "
                                "the status of their kind."},
        "servers": [{"url": "/api/v1"}],
        "paths": paths,
        "components": {"securitySchemes": {"voterToken": bearer, "analystToken": bearer,
                                           "ownerToken": bearer}},
    }
