"""Bad input gets a 4xx, never a 500, on SQLite and PostgreSQL.

These got 500s before: on PostgreSQL a NUL byte in a path
or a query string (text columns cannot hold one, so the query itself failed) and ids at or
above 2**31 (out of range for an INTEGER column); on both databases a non-numeric seed,
JSON nested 100,000 deep, an integer model name, 30-digit ids. Each is sent here as an
attacker would, through every kind of route that takes it."""

from __future__ import annotations

import pytest

from tests.factories import make_campaign
from tests.web.helpers import bearer

NUL_GETS = [
    "/campaigns/a%00b", "/hype/a%00b", "/leaderboard?category=a%00b",
    "/api/v1/prompts?set=a%00b", "/api/v1/leaderboard?criterion=pref%00erence",
    "/s/a%00b", "/img/a%00b/384.webp", "/owner/models/a%00b",
]
BIG_IDS = [2**31, 2**63, 10**30]


@pytest.fixture
def served(any_app):
    with any_app.app_context():
        make_campaign(n_prompts=2, n_models=2, images_per_model=1, gold=False)
    return any_app


def test_nul_bytes_in_paths_and_queries(served):
    client = served.test_client()
    for url in NUL_GETS:
        response = client.get(url)
        assert response.status_code == 400, (url, response.status_code)


def test_nul_bytes_in_form_and_json_fields(served):
    client = served.test_client()
    token = client.post("/api/v1/sessions", json={}).json["voter_token"]
    response = client.post("/api/v1/sessions", json={"criterion": "pref\x00erence"},
                           headers=bearer(token))
    assert response.status_code == 400, response.status_code
    response = client.post("/api/v1/sessions", json={"demographics": {"country": "K\x00E"}},
                           headers=bearer(token))
    assert response.status_code == 400, response.status_code


def test_ids_beyond_an_integer_column(served):
    client = served.test_client()
    token = client.post("/api/v1/sessions", json={}).json["voter_token"]
    for big in BIG_IDS:
        for url in (f"/api/v1/tasks/{big}/vote", f"/api/v1/tasks/{big}/read"):
            response = client.post(url, json={"choice": "left"}, headers=bearer(token))
            assert response.status_code == 404, (url, response.status_code)


def test_malformed_json_and_parameters(served):
    client = served.test_client()
    deep = "[" * 100_000 + "]" * 100_000
    response = client.post("/api/v1/sessions", data=deep, content_type="application/json")
    assert response.status_code == 400
    for url in ("/leaderboard?seed=abc", "/api/v1/leaderboard?seed=abc&method=bt",
                "/api/v1/leaderboard?rounds=1e9"):
        assert client.get(url).status_code < 500, url


def test_a_post_stratified_ranking_of_an_empty_slice(served):
    """Found by the schema fuzzing (test_api_schema.py): a slice without votes, ranked with
    post-stratification, failed inside the weighting (numpy's max of nothing)."""
    from arena.accounts import tokens

    with served.app_context():
        token = tokens.create_token("bad-input-analyst")
    client = served.test_client()
    for query in ("age_group=65%2B&bootstrap=0&method=bt&poststratify=true",
                  "age_group=65%2B&method=bt&intervals=instant&poststratify=true",
                  "age_group=65%2B&method=bt&margin=gender:female=0.5,male=0.5"):
        response = client.get(f"/api/v1/leaderboard?{query}", headers=bearer(token))
        assert response.status_code == 200, (query, response.status_code)
        assert response.json["total_votes"] == 0


MALFORMED_VOTES = [{"choice": "both"}, {"choice": None}, {"choice": ["left"]},
                   {"choice": "left", "response_ms": "fast"},
                   {"choice": "left", "response_ms": -1}, {"choice": "left", "response_ms": True}]


def test_a_malformed_vote_on_an_answered_task_is_refused_not_a_duplicate(app, web_campaign):
    """A replay of an answered task with a malformed body got "200 duplicate", telling a
    script its garbage had been accepted once; the body is checked first, on every channel."""
    from tests.web.helpers import confirm_read_if_asked, csrf_token, start_session, task_id

    app.config["REVEAL_WORD_MS"] = 0
    client = app.test_client()
    body = client.post("/api/v1/sessions", json={"criterion": "preference"}).json
    url = f"/api/v1/tasks/{body['tasks'][0]['task_id']}/vote"
    token = bearer(body["voter_token"])
    assert client.post(url, json={"choice": "left"}, headers=token).status_code == 201
    for malformed in MALFORMED_VOTES:
        response = client.post(url, json=malformed, headers=token)
        assert response.status_code == 400, (malformed, response.status_code, response.json)
        assert "duplicate" not in response.json
    assert client.post(url, json={"choice": "left"}, headers=token).json["duplicate"] is True

    form = app.test_client()
    html = form.get(start_session(form).headers["Location"]).get_data(as_text=True)
    html = confirm_read_if_asked(form, html)
    tid, csrf = task_id(html), csrf_token(html)
    assert form.post(f"/t/{tid}", data={"csrf_token": csrf, "choice": "left"}).status_code == 303
    for headers in ({}, {"HX-Request": "true"}):
        for choice in ("both", "", "left\x01"):
            response = form.post(f"/t/{tid}", data={"csrf_token": csrf, "choice": choice},
                                 headers=headers)
            assert response.status_code == 400, (choice, headers, response.status_code)
        response = form.post(f"/t/{tid}", data={"csrf_token": csrf, "choice": "left",
                                                "response_ms": str(10**12)}, headers=headers)
        assert response.status_code == 400, (headers, response.status_code)
