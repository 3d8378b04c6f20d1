"""Analyst exports: tokens, leaderboard in every method and format, matrix, vote log."""

import io
import json
from datetime import timedelta

import duckdb
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from flask import current_app
from sqlalchemy import func, select

from arena.accounts import tokens
from arena.analysis import exports
from arena.extensions import db
from arena.models import ApiToken, Vote
from tests.factories import make_campaign, time_passes, vote_as


def _two_regions_and_a_token():
    current_app.config["VALIDATION_RATE"] = 0.34
    make_campaign()
    vote_as({"country": "FR", "age_group": "30-39"}, ["model-0", "model-1", "model-2"])
    vote_as({"country": "JP"}, ["model-2", "model-1", "model-0"], seed=5)
    time_passes()  # (the analysts' default counts the votes of the public pages' cut-off)
    token = tokens.create_token("alice")
    return token, db.session.scalar(select(func.count()).select_from(Vote))


@pytest.fixture
def analyst(seeded):
    """A campaign with votes from two regions, and an analyst token."""
    token, n_votes = seeded("exports", _two_regions_and_a_token)
    return {"Authorization": f"Bearer {token}"}, n_votes


def test_token_is_hashed_and_revocable(app, runner):
    result = runner.invoke(args=["token", "create", "bob"])
    token = result.stdout.strip()
    assert result.exit_code == 0 and token.startswith("arena_")
    with app.app_context():
        row = db.session.scalar(select(ApiToken))
        assert row.token_hash != token and token not in row.token_hash
        assert tokens.check_token(token) is not None
    assert runner.invoke(args=["token", "create", "bob"]).exit_code != 0
    assert "active" in runner.invoke(args=["token", "list"]).output
    assert runner.invoke(args=["token", "revoke", "bob"]).exit_code == 0
    with app.app_context():
        assert tokens.check_token(token) is None
    assert runner.invoke(args=["token", "create", "bob"]).exit_code == 0


@pytest.mark.parametrize("url", ["/api/v1/votes", "/api/v1/matrix?criterion=preference",
                                 "/api/v1/leaderboard?criterion=preference&bootstrap=200",
                                 "/api/v1/leaderboard?criterion=preference&format=csv",
                                 "/api/v1/leaderboard?criterion=preference&live=true"])
def test_exports_need_an_analyst_token(client, analyst, url):
    assert client.get(url).status_code == 401
    assert client.get(url, headers={"Authorization": "Bearer arena_wrong"}).status_code == 401
    with client.get(url, headers=analyst[0]) as response:
        assert response.status_code == 200


def test_public_leaderboards_need_no_token(client, analyst):
    for method in ("", "&method=bt", "&method=elo"):
        assert client.get(f"/api/v1/leaderboard?criterion=preference{method}"
                          ).status_code == 200


def test_bt_leaderboard_json_with_intervals_and_slices(client, analyst):
    headers, _ = analyst
    body = client.get("/api/v1/leaderboard?criterion=preference&method=bt&bootstrap=200",
                      headers=headers).json
    assert body["method"] == "bt" and body["bootstrap_rounds"] == 200
    # two voters (and the prompts): the default clusters say how little that is
    assert body["cluster"] == "voter+prompt" and body["units"] == 2 and body["prompts"] > 1
    assert any(f"resample 2 voters and {body['prompts']} prompts" in f for f in body["flags"])
    by_vote = client.get("/api/v1/leaderboard?criterion=preference&method=bt&bootstrap=200"
                         "&cluster=none&intervals=instant", headers=headers).json
    assert by_vote["cluster"] == "none" and by_vote["intervals"] == "instant"
    models = by_vote["models"]
    assert sum(m["score"] for m in models) == pytest.approx(100)
    assert all(m["ci_low"] <= m["rating"] <= m["ci_high"] for m in models)
    assert all(m["rank_best"] <= m["rank"] <= m["rank_worst"] for m in models)
    europe = client.get("/api/v1/leaderboard?criterion=preference&method=bt&continent=eu",
                        headers=headers).json
    assert europe["slice"] == {"continent": "EU"}
    assert europe["models"][0]["model"] == "model-0"
    bad = client.get("/api/v1/leaderboard?criterion=preference&method=bt&since=yesterday",
                     headers=headers)
    assert bad.status_code == 400 and "ISO" in bad.json["error"]


def test_leaderboard_csv_and_parquet(client, analyst):
    headers, _ = analyst
    url = "/api/v1/leaderboard?criterion=preference&method=bt&bootstrap=100"
    table = client.get(url, headers=headers).json["models"]
    csv_body = client.get(url + "&format=csv", headers=headers)
    assert csv_body.mimetype == "text/csv"
    assert 'filename="leaderboard-preference-bt.csv"' in csv_body.headers["Content-Disposition"]
    frame = pd.read_csv(io.StringIO(csv_body.get_data(as_text=True)))
    assert list(frame["rank"]) == [1, 2, 3] and frame["votes"].sum() > 0
    assert list(frame["model"]) == [m["model"] for m in table]
    assert np.allclose(frame["score"], [m["score"] for m in table], rtol=1e-5)
    parquet = client.get(url + "&format=parquet", headers=headers)
    from_parquet = pd.read_parquet(io.BytesIO(parquet.data))
    assert list(from_parquet["model"]) == list(frame["model"])
    assert np.allclose(from_parquet["ci_low"], [m["ci_low"] for m in table])
    assert from_parquet["votes"].dtype == np.int64


def test_matrix_counts_votes(client, analyst):
    headers, _ = analyst
    body = client.get("/api/v1/matrix?criterion=preference", headers=headers).json
    wins = np.array(body["wins"])
    assert body["models"] == ["model-0", "model-1", "model-2"]
    assert np.all(np.diag(wins) == 0) and wins.sum() > 0


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_vote_log_export_has_one_row_per_vote(client, analyst, app, fmt):
    headers, n_votes = analyst
    with client.get(f"/api/v1/votes?format={fmt}", headers=headers) as response:
        assert response.status_code == 200
        data = response.get_data()
    if fmt == "csv":
        frame = pd.read_csv(io.BytesIO(data))
    elif fmt == "jsonl":
        frame = pd.DataFrame([json.loads(line) for line in data.decode().splitlines()])
    else:
        frame = pd.read_parquet(io.BytesIO(data))
    assert len(frame) == n_votes
    assert {"criterion", "prompt_id", "prompt_category", "left_model", "right_model",
            "winner", "winner_model", "response_ms", "voter", "continent",
            "is_validation", "validation_correct"} <= set(frame.columns)
    assert frame["vote_id"].is_monotonic_increasing
    regular = frame[~frame["is_validation"].astype(bool)]
    assert (regular["winner_model"] == regular.apply(
        lambda r: r["left_model"] if r["winner"] == "left" else r["right_model"], axis=1)).all()
    assert set(frame["continent"]) == {"EU", "AS"}
    with app.app_context():
        from arena.models import Voter

        public_ids = set(db.session.scalars(select(Voter.public_id)))
    assert frame["voter"].nunique() == 2 and not set(frame["voter"]) & public_ids
    assert "127.0.0.1" not in data.decode("latin-1")


def test_vote_export_bad_format(client, analyst):
    assert client.get("/api/v1/votes?format=xml", headers=analyst[0]).status_code == 400


@pytest.mark.parametrize("query,field", [("bootstrap=abc", "bootstrap"),
                                         ("bootstrap=99999", "bootstrap"),
                                         ("seed=x", "seed"), ("intervals=guess", "intervals"),
                                         ("cluster=country", "cluster"),
                                         ("margin=planet", "margin"),
                                         ("format=xml", "format"), ("method=glicko", "method")])
def test_bad_export_parameters_are_400_naming_them(client, analyst, query, field):
    method = "" if query.startswith("method") else "method=bt&"
    response = client.get(f"/api/v1/leaderboard?criterion=preference&{method}{query}",
                          headers=analyst[0])
    assert response.status_code == 400 and response.json["field"] == field


def test_pseudonyms_are_keyed_by_their_own_key(make_app):
    """Rotating the cookie key leaves export pseudonyms alone; the pseudonym key moves them."""
    def voters_exported(**keys):
        app = make_app(**keys)
        with app.app_context():
            token = tokens.create_token(f"t-{len(keys)}-{sorted(keys.values())}")
        with app.test_client().get("/api/v1/votes?format=jsonl",
                                   headers={"Authorization": f"Bearer {token}"}) as response:
            return {json.loads(line)["voter"] for line in response.get_data(as_text=True)
                    .splitlines()}

    app = make_app()
    with app.app_context():
        make_campaign()
        vote_as({"country": "FR"}, ["model-0", "model-1", "model-2"], sessions=1)
    first = voters_exported(SECRET_KEY="a", PSEUDONYM_KEY="p")
    assert first and voters_exported(SECRET_KEY="b", PSEUDONYM_KEY="p") == first
    assert voters_exported(SECRET_KEY="a", PSEUDONYM_KEY="q").isdisjoint(first)


def test_rank_and_vote_export_on_each_database(any_app):
    any_app.config["VALIDATION_RATE"] = 0.0
    with any_app.app_context():
        make_campaign()
        vote_as({"country": "BR"}, ["model-1", "model-0", "model-2"])
        token = tokens.create_token("carol")
        n_votes = db.session.scalar(select(func.count()).select_from(Vote))
    client = any_app.test_client()
    headers = {"Authorization": f"Bearer {token}"}
    with client.get("/api/v1/votes?format=jsonl", headers=headers) as response:
        lines = response.get_data(as_text=True).splitlines()
    assert len(lines) == n_votes
    body = client.get("/api/v1/leaderboard?criterion=preference&method=bt&continent=SA"
                      "&bootstrap=100&live=1", headers=headers).json
    assert body["models"][0]["model"] == "model-1"
    assert body["total_votes"] == n_votes
    assert body["live"] and body["flags"][0].startswith("live: every vote to the second")
    # by default, as the public pages count: nothing of the period yet
    screened = client.get("/api/v1/leaderboard?criterion=preference&method=bt&continent=SA",
                          headers=headers).json
    assert screened["total_votes"] == 0 and not screened["live"] and screened["as_of"]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_skip_log_has_every_task_closed_without_a_vote(client, app, fmt):
    """A skip and an image report, each one row with the pair and the (pseudonymised)
    voter; votes are not in it; analysts only."""
    from arena.models import Task, Voter
    from arena.voting import image_reports
    from arena.voting import tasks as voting_tasks
    from tests.factories import answer, start

    with app.app_context():
        current_app.config["VALIDATION_RATE"] = 0.0
        make_campaign(gold=False)
        voter, session = start(criterion="preference")
        first, second, third = (t.id for t in session.tasks)
        voting_tasks.skip(voter, first)
        image_reports.report(voter, second, "right", "broken")
        answer(voter, db.session.get(Task, third), "left")
        public_id = db.session.scalar(select(Voter.public_id))
        token = tokens.create_token("carol")
    url = f"/api/v1/skips?format={fmt}"
    assert client.get(url).status_code == 401
    with client.get(url, headers={"Authorization": f"Bearer {token}"}) as response:
        assert response.status_code == 200
        data = response.get_data()
    if fmt == "csv":
        frame = pd.read_csv(io.BytesIO(data), keep_default_na=False)
    else:
        frame = pd.DataFrame([json.loads(line) for line in data.decode().splitlines()])
    assert list(frame["task_id"]) == [first, second]
    assert list(frame["report_reason"].fillna("")) == ["", "broken"]
    assert list(frame["reported_side"].fillna("")) == ["", "right"]
    assert set(frame["left_model"]) | set(frame["right_model"]) <= {"model-0", "model-1",
                                                                    "model-2"}
    assert frame["voter"].nunique() == 1 and public_id not in set(frame["voter"])
    bad = client.get("/api/v1/skips?format=parquet", headers={"Authorization": f"Bearer {token}"})
    assert bad.status_code == 400


def test_the_vote_log_as_a_partitioned_dataset_reads_back_in_duckdb(app, runner, analyst,
                                                                     tmp_path):
    """``arena votes export FOLDER``: one Parquet dataset, partitioned by campaign, criterion
    and month, that DuckDB reads as one table equal to the API's vote log."""
    headers, n_votes = analyst
    with app.app_context():  # half the votes a month and more earlier: two months
        for vote in db.session.scalars(select(Vote).where(Vote.id % 2 == 0)):
            vote.created_at -= timedelta(days=40)
        db.session.commit()
        months = {v.created_at.strftime("%Y-%m") for v in db.session.scalars(select(Vote))}
    assert len(months) == 2
    folder = tmp_path / "votes"
    result = runner.invoke(args=["votes", "export", str(folder)])
    assert result.exit_code == 0, result.output
    assert f"{n_votes:,d} votes written" in result.output

    frame = duckdb.sql(f"SELECT * FROM read_parquet('{folder}/**/*.parquet', "
                       "hive_partitioning = true) ORDER BY vote_id").df()
    with app.test_client().get("/api/v1/votes?format=parquet", headers=headers) as response:
        served = pd.read_parquet(io.BytesIO(response.get_data()))
    assert len(frame) == n_votes == len(served)
    assert set(frame["month"]) == months
    assert set(frame["criterion"]) == set(served["criterion"])
    for column in ("vote_id", "winner", "winner_model", "voter", "left_model", "response_ms"):
        pd.testing.assert_series_equal(frame[column], served[column], check_dtype=False)
    for path in folder.rglob("*.parquet"):
        parts = path.relative_to(folder).parts
        assert [p.split("=")[0] for p in parts[:-1]] == ["campaign_id", "criterion", "month"]

    # written batch by batch: several row groups, never the whole log at once
    with app.app_context():
        assert exports.votes_dataset(tmp_path / "small", batch=5) == n_votes
    groups = sum(pq.ParquetFile(p).num_row_groups for p in (tmp_path / "small").rglob("*.parquet"))
    assert groups >= n_votes / 5
    # a folder holding anything already is refused, and left as it was
    again = runner.invoke(args=["votes", "export", str(folder)])
    assert again.exit_code != 0 and "not an empty folder" in again.output
