"""The API's OpenAPI description (served at /api/v1/openapi.json) matches the API: every
route is described, and schemathesis sends requests generated from the description to the
app on SQLite and PostgreSQL, checking each answer against it (never a 500, a documented
status, content type and shape)."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from arena.accounts import tokens
from tests.factories import make_campaign, make_owner


def test_every_api_route_is_described(app):
    described = set(app.test_client().get("/api/v1/openapi.json").json["paths"])
    routes = {rule.rule.removeprefix("/api/v1").replace("<int:task_id>", "{task_id}")
              .replace("<name>", "{name}")
              for rule in app.url_map.iter_rules() if rule.rule.startswith("/api/v1/")}
    assert described == routes


def test_every_operation_is_described_beside_its_view(app):
    """The description is generated from the routes: a view whose docstring says nothing
    (no summary, no success response) or whose path parameter lost its type fails here."""
    paths = app.test_client().get("/api/v1/openapi.json").json["paths"]
    for path, item in paths.items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            assert operation["summary"], (method, path)
            assert any(status.startswith("2") for status in operation["responses"]), path
        for parameter in item.get("parameters", []):
            expected = "integer" if parameter["name"] == "task_id" else "string"
            assert parameter["schema"]["type"] == expected, (path, parameter)


@pytest.fixture
def api(any_app):
    with any_app.app_context():
        make_campaign(n_prompts=2, n_models=2, images_per_model=1)
        analyst = tokens.create_token("schema-analyst")
        _, owner = make_owner("schema-owner")
    voter = any_app.test_client().post("/api/v1/sessions", json={}).json["voter_token"]
    return any_app, {"voterToken": voter, "analystToken": analyst, "ownerToken": owner}


# schemathesis' in-process client leaves the multipart bodies it builds to the garbage
# collector (the app's own test client closes every upload: see test_owner_uploads.py)
@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <function SpooledTemporaryFile.__del__"
    ":pytest.PytestUnraisableExceptionWarning")
def test_the_api_answers_as_described(api):
    app, credentials = api
    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 17
    for operation in operations:
        security = operation.definition.raw.get("security") or [{}]
        names = [name for requirement in security for name in requirement]
        # uncompressed: the WSGI client reads the bytes as they are sent
        headers = {"Accept-Encoding": "identity"}
        if names:
            headers["Authorization"] = f"Bearer {credentials[names[0]]}"

        _check(operation, headers)


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


def _check(operation, headers: dict) -> None:
    @settings(max_examples=30, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy())
    def answers_as_described(case):
        # (not positive_data_acceptance: requests valid by the schema can still break a
        # rule across fields, since before until, or name a task of another voter)
        case.call_and_validate(headers=headers, checks=CHECKS)

    answers_as_described()
