"""The OpenAPI 3.1 description of ``/api/v1``, served at ``/api/v1/openapi.json``, generated
from the routes with apispec.

Every rule of the ``api`` blueprint becomes a path, with its methods and its typed path
parameters. Each view's docstring gives its summary (the first paragraph) and, after a
``---`` line, in OpenAPI's YAML, what only the view knows: query parameters, body, responses
and who may call it. Its names refer to the components below, built from the same constants
the services check. ``tests/security/test_api_schema.py`` has schemathesis send requests
generated from this description to the app on SQLite and PostgreSQL and check each answer
against it (documented status, content type and shape; never a 500)."""

from __future__ import annotations

import re

from apispec import APISpec
from apispec.yaml_utils import load_yaml_from_docstring
from flask import current_app

from arena import criteria
from arena.analysis import formats
from arena.analysis.leaderboard import INTERVALS, METHODS
from arena.analysis.methods import DEFAULT as DEFAULT_METHOD
from arena.analysis.reliability import WEIGHTS
from arena.analysis.tallies import CLUSTERS
from arena.config import LANGUAGES
from arena.voting.voters import AGE_GROUPS, CONTINENTS, GENDERS, countries
from arena.web.requests import DB_INT_MAX

VERSION = "1"
PREFIX = "/api/v1"
RULE_ARGUMENT = re.compile(r"<(?:(\w+)(?:\([^)]*\))?:)?(\w+)>")
CONVERTER_SCHEMAS = {"int": {"type": "integer", "minimum": 0, "maximum": DB_INT_MAX}}
ANSWERS = ["left", "right"]
# the slice of the votes an analyst ranks (arena.analysis.tallies.Slice)
SLICE_PARAMETERS = ("campaign", "age_group", "gender", "continent", "country", "language",
                    "category", "since", "until", "trusted_only", "include_flagged",
                    "poststratify", "margin")


def spec() -> dict:
    api = APISpec(
        title="Arena", version=VERSION, openapi_version="3.1.0",
        info={"description": "Human evaluation of generative image models: voting, uploads "
                             "and exports. Errors are {\"error\": message} with the status "
                             "of their kind."},
        servers=[{"url": PREFIX}])
    _components(api)
    for rule in sorted(current_app.url_map.iter_rules(), key=lambda r: r.rule):
        if rule.endpoint.split(".")[0] != "api":
            continue
        doc = current_app.view_functions[rule.endpoint].__doc__ or ""
        described = load_yaml_from_docstring(doc) or {}
        operation = {"summary": _summary(doc), **described,
                     "responses": {**described.get("responses", {}), "default": "Error"}}
        methods = sorted(rule.methods - {"HEAD", "OPTIONS"})
        api.path(path=RULE_ARGUMENT.sub(r"{\2}", rule.rule.removeprefix(PREFIX)),
                 operations={m.lower(): operation for m in methods},
                 parameters=[{"name": name, "in": "path", "required": True,
                              "schema": CONVERTER_SCHEMAS.get(kind, {"type": "string"})}
                             for kind, name in RULE_ARGUMENT.findall(rule.rule)])
    return api.to_dict()


def _summary(doc: str) -> str:
    """The first paragraph of a docstring, on one line."""
    return " ".join(doc.split("---")[0].strip().split("\n\n")[0].split())


def _components(api: APISpec) -> None:
    components = api.components
    for name, schema in _schemas().items():
        components.schema(name, schema)
    components.response("Error", {"description": "an error, with a message", "content": {
        "application/json": {"schema": "Error"}}})
    for name, schema in _query_parameters().items():
        components.parameter(name, "query", {"schema": schema})
    for name, table in (("vote_format", formats.VOTES), ("skip_format", formats.SKIPS),
                        ("ranking_format", formats.RANKING_DOWNLOADS)):
        components.parameter(name, "query", {"name": "format",
                                             "schema": {"enum": list(table)}})
    components.parameter("margin", "query", {
        "schema": {"type": "string"},
        "description": "an attribute to post-stratify on, with target shares "
                       "(margin=gender:female=0.5,male=0.5); repeatable"})
    for name in ("voterToken", "analystToken", "ownerToken"):
        components.security_scheme(name, {"type": "http", "scheme": "bearer"})


def _schemas() -> dict:
    image = {"type": "object", "required": ["url", "urls"], "properties": {
        "url": {"type": "string"},
        "urls": {"type": "object", "additionalProperties": {"type": "string"}}}}
    task = {"type": "object", "required": ["task_id", "prompt", "reveal_ms", "left", "right"],
            "properties": {"task_id": {"type": "integer"},
                           "prompt": {"type": ["string", "null"]},
                           "reveal_ms": {"type": "integer"},
                           "left": image, "right": image}}
    demographics = {"type": "object", "properties": {
        name: {"type": "string"} for name in ("age_group", "gender", "country")}}
    return {
        "Error": {"type": "object", "required": ["error"],
                  "properties": {"error": {"type": "string"}}},
        "Health": {"type": "object", "required": ["status"],
                   "properties": {"status": {"enum": ["ok", "alive", "ready"]}}},
        "SessionRequest": {"type": "object", "properties": {
            "criterion": {"enum": list(criteria.names())}, "demographics": demographics}},
        "Session": {"type": "object",
                    "required": ["session_id", "voter_id", "criterion", "question", "tasks"],
                    "properties": {"session_id": {"type": "string"},
                                   "voter_id": {"type": "string"},
                                   "criterion": {"enum": list(criteria.names())},
                                   "question": {"type": "string"},
                                   "tasks": {"type": "array", "items": task},
                                   "voter_token": {"type": "string"}}},
        "Ballot": {"type": "object", "required": ["choice"], "properties": {
            "choice": {"enum": ANSWERS}, "response_ms": {"type": "integer", "minimum": 0}}},
        "ImageReport": {"type": "object", "required": ["side", "reason"], "properties": {
            "side": {"enum": ANSWERS}, "reason": {"enum": ["broken", "offensive", "other"]}}},
        "Leaderboard": {"type": "object", "required": ["criterion", "models"], "properties": {
            # Krippendorff's alpha and the majority share with 95% intervals (null with too
            # few voters: ``note`` says why), pairs, votes and voters
            "agreement": {"type": ["object", "null"], "properties": {
                **{name: {"type": ["number", "null"]} for name in (
                    "alpha", "alpha_low", "alpha_high", "majority", "majority_low",
                    "majority_high", "pairs", "votes", "voters", "effective_voters")},
                "note": {"type": ["string", "null"]}}},
            "models": {"type": "array", "items": {
                "type": "object", "required": ["rank", "model"],
                "properties": {"rank": {"type": ["integer", "null"]},
                               "model": {"type": "string"}}}}}},
        "ModelRequest": {"type": "object", "required": ["name"], "properties": {
            name: {"type": "string"} for name in ("name", "description", "link")}},
        "Upload": {"type": "object", "required": ["image", "prompt_id"], "properties": {
            "image": {"type": "string", "format": "binary"},
            "prompt_id": {"type": "integer"}}},
    }


def _query_parameters() -> dict:
    def enum(values):
        return {"enum": list(values)}

    date = {"type": "string", "format": "date"}
    return {
        "criterion": enum(criteria.names()),
        "seed": {"type": "integer", "minimum": 0, "maximum": 2**32 - 1},
        "method": {**enum(METHODS), "default": DEFAULT_METHOD},
        "intervals": enum(INTERVALS), "cluster": enum(CLUSTERS),
        "bootstrap": {"type": "integer", "minimum": 0, "maximum": 10_000},
        "weights": enum(WEIGHTS),
        "age_group": enum(AGE_GROUPS), "gender": enum(GENDERS),
        "continent": enum(CONTINENTS), "country": enum(sorted(countries())),
        "language": enum(LANGUAGES), "category": {"type": "string"},
        "campaign": {"type": "string"},
        "since": date, "until": date,
        **{name: enum(("true", "false"))
           for name in ("trusted_only", "include_flagged", "poststratify", "live")},
    }
