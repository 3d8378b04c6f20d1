"""`arena rank --by prompt`: a prompt whose voters put another model first says so, the
prompts the crowd agrees on keep the overall order, and the files carry a row per prompt and
model."""

import csv
import io
import json

import numpy as np
from flask import current_app
from sqlalchemy import select

from arena.extensions import db
from arena.models import Prompt
from arena.voting import matchmaking
from tests.factories import answer, make_campaign, new_voter

ORDER = ["model-0", "model-1", "model-2"]


def _votes(app):
    """Sixty voters: on the first prompt they like model-2 best, on the others model-0."""
    with app.app_context():
        current_app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
        make_campaign(n_prompts=4, n_models=3)
        odd = db.session.scalar(select(Prompt.id).order_by(Prompt.id))
        rng = np.random.default_rng(3)
        for k in range(60):
            voter = new_voter()
            for _ in range(4):
                try:
                    session = matchmaking.start_session(voter, np.random.default_rng(k),
                                                        "preference")
                except matchmaking.NoTasksAvailable:
                    break
                for task in session.tasks:
                    order = ORDER[::-1] if task.comparison.prompt_id == odd else ORDER
                    left, right = (order.index(side.model.name)
                                   for side in (task.left_image, task.right_image))
                    pick = left < right if rng.random() < 0.85 else left > right
                    answer(voter, task, "left" if pick else "right")
        return odd


def test_a_prompt_the_voters_see_otherwise_ranks_otherwise(runner, app, tmp_path):
    odd = _votes(app)
    shown = runner.invoke(args=["rank", "--criterion", "preference", "--by", "prompt",
                                "--live"])
    assert shown.exit_code == 0, shown.output
    assert f"#{odd} " in shown.output and "shrunk toward the overall order" in shown.output
    done = runner.invoke(args=["rank", "--criterion", "preference", "--by", "prompt",
                               "--live", "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert len(rows) == 4 * 3
    first = {r["prompt_id"]: r["model"] for r in rows if r["rank"] == "1"}
    assert first.pop(str(odd)) == "model-2"
    assert set(first.values()) == {"model-0"}
    for row in rows:
        assert float(row["ci_low"]) < float(row["rating"]) < float(row["ci_high"])
    out = tmp_path / "by-prompt.json"
    assert runner.invoke(args=["rank", "--criterion", "preference", "--by", "prompt",
                               "--live", "--format", "json", "-o", str(out)]).exit_code == 0
    found = json.loads(out.read_text())
    assert found["effect_elo"] > 50 and len(found["rows"]) == 12
    refused = runner.invoke(args=["rank", "--criterion", "preference", "--by", "prompt",
                                  "--method", "elo"])
    assert refused.exit_code != 0 and "--by prompt ranks with Bradley-Terry" in refused.output


def test_the_analysts_api_ranks_each_prompt(app, client):
    from arena.accounts import tokens
    from tests.web.helpers import bearer

    odd = _votes(app)
    with app.app_context():
        token = tokens.create_token("prompt-analyst")
    assert client.get("/api/v1/leaderboard/prompts?live=true").status_code == 401
    got = client.get("/api/v1/leaderboard/prompts?criterion=preference&live=true",
                     headers=bearer(token))
    assert got.status_code == 200, got.json
    first = {r["prompt_id"]: r["model"] for r in got.json["rows"] if r["rank"] == 1}
    assert first[odd] == "model-2" and got.json["live"] is True
    assert client.get("/api/v1/leaderboard/prompts?criterion=nope",
                      headers=bearer(token)).status_code == 400
