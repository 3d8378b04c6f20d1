"""Every route, every method, random input: never a 500, on SQLite and PostgreSQL.

``test_bad_input.py`` replays known hostile inputs; this lets hypothesis look for
what nobody thought of. Each example picks a route of the app's URL map (so a new route is
fuzzed without anyone listing it), fills its path arguments with hostile values (NUL bytes,
numbers beyond any integer column, long or odd text), adds random query arguments (and the
names the app reads), and for writes a random JSON or form body, sent as nobody, a voter, an
analyst or an operator."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from arena.accounts import tokens
from tests.factories import make_campaign
from tests.web.helpers import csrf_token

PARAMS = ["criterion", "format", "method", "seed", "bootstrap", "intervals", "cluster",
          "continent", "country", "gender", "age_group", "language", "category", "since",
          "until", "margin", "set", "limit", "page", "next", "lang", "model", "prompt_id"]
SKIP = {"static"}

hostile_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["a\x00b", "%00", "..%2f..", "' OR 1=1 --", "<script>", "☃", " ",
                     "9" * 30, "-1", "1e999", "NaN", "preference", "left", "csv"]),
)
hostile_int = st.one_of(st.integers(0, 50), st.sampled_from([2**31, 2**63, 10**30]))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(),
              hostile_text),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.sampled_from(
                                   ["choice", "criterion", "demographics", "country",
                                    "response_ms", "side", "reason", "name", "prompt_id",
                                    "judged_real", "token", "tasks"]) | hostile_text,
                                   children, max_size=4)),
    max_leaves=12)


@pytest.fixture
def fuzzed(any_app):
    app = any_app
    with app.app_context():
        make_campaign(n_prompts=2, n_models=2, images_per_model=1)
        analyst = tokens.create_token("fuzz-analyst")
        operator = tokens.create_token("fuzz-operator", role="operator")
    voter = app.test_client().post("/api/v1/sessions", json={}).json["voter_token"]
    signed_in = app.test_client()  # an operator's browser, kept across examples
    page = signed_in.get("/admin/").get_data(as_text=True)
    assert signed_in.post("/admin/sign-in", data={"csrf_token": csrf_token(page),
                                                  "token": operator}).status_code == 303
    rules = [r for r in app.url_map.iter_rules() if r.endpoint not in SKIP]
    return app, rules, {"voter": voter, "analyst": analyst, "operator": signed_in}


def _url(rule, draw) -> str:
    parts = []
    for static, converter, argument in re.findall(r"([^<]*)(?:<(?:([^:>]+):)?([^>]+)>)?",
                                                  rule.rule):
        parts.append(static)
        if argument:
            raw = draw(hostile_int) if converter == "int" else draw(hostile_text) or "x"
            parts.append(quote(str(raw), safe=""))
    return "".join(parts)


@settings(max_examples=600, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_no_route_answers_500(fuzzed, data):
    app, rules, credentials = fuzzed
    rule = data.draw(st.sampled_from(rules))
    method = data.draw(st.sampled_from(sorted(rule.methods - {"HEAD", "OPTIONS"})))
    url = _url(rule, data.draw)
    query = data.draw(st.dictionaries(st.sampled_from(PARAMS) | hostile_text, hostile_text,
                                      max_size=3))
    who = data.draw(st.sampled_from([None, "voter", "analyst", "operator"]))
    headers = {"Authorization": f"Bearer {credentials[who]}"} if who in ("voter", "analyst") \
        else {}
    client = credentials["operator"] if who == "operator" else app.test_client()
    kwargs = {"query_string": query, "headers": headers}
    if method != "GET":
        body = data.draw(st.sampled_from(["json", "form", "raw"]))
        if body == "json":
            kwargs["data"] = json.dumps(data.draw(json_values))
            kwargs["content_type"] = "application/json"
        elif body == "form":
            kwargs["data"] = data.draw(st.dictionaries(
                st.sampled_from(["choice", "criterion", "name", "token", "country",
                                 "age_group", "side", "reason", "model", "prompt_set"])
                | hostile_text, hostile_text, max_size=4))
            if data.draw(st.booleans()):  # past the CSRF check, into the handler
                page = client.get("/admin/" if who == "operator" else "/")
                kwargs["data"]["csrf_token"] = csrf_token(page.get_data(as_text=True))
        else:
            kwargs["data"] = data.draw(st.binary(max_size=64))
            kwargs["content_type"] = data.draw(st.sampled_from(
                ["application/json", "multipart/form-data", "text/plain"]))
    response = client.open(url, method=method, **kwargs)
    event(f"{response.status_code}")
    assert response.status_code < 500, (method, url, query, who, response.status_code,
                                        response.get_data(as_text=True)[:300])
