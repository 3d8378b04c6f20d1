"""OpenSkill as a ranking method: its ratings are the openskill package's, run directly on
the same votes in the same order, and it ranks the database's votes and vote files alike."""

from __future__ import annotations

import math

import numpy as np
import pytest
from openskill.models import PlackettLuce

from arena.analysis.leaderboard import rank_models, rank_votes_file
from tests.factories import make_campaign, vote_as


def test_openskill_ratings_are_the_packages_on_the_same_votes(app, tmp_path):
    rng = np.random.default_rng(7)
    names = ["Ant", "Bee", "Cat"]
    rows = []
    for _ in range(150):
        a, b = rng.choice(3, 2, replace=False)
        rows.append((names[a], names[b], str(rng.choice(["left", "right", "tie"]))))
    path = tmp_path / "votes.csv"
    path.write_text("left,right,winner\n" + "".join(f"{a},{b},{w}\n" for a, b, w in rows))
    with app.app_context():
        ranking = rank_votes_file(path, method="openskill")
    model = PlackettLuce()
    direct = {name: model.rating() for name in names}
    for left, right, winner in rows:
        first, second = (left, right) if winner != "right" else (right, left)
        [[direct[first]], [direct[second]]] = model.rate(
            [[direct[first]], [direct[second]]], ranks=[0, 0] if winner == "tie" else [0, 1])
    centre = np.mean([r.mu for r in direct.values()])
    scale = 400 / (math.log(10) * math.sqrt(2) * model.beta)
    for row in ranking.models:
        assert row.rating == pytest.approx(1000 + scale * (direct[row.model].mu - centre),
                                           abs=1e-9)
    assert [m.model for m in ranking.models] == sorted(
        names, key=lambda n: -direct[n].mu)
    assert ranking.method == "openskill" and ranking.models[0].ci_low is None


def test_openskill_ranks_the_databases_votes(app):
    with app.app_context():
        make_campaign(n_prompts=3)
        for seed in range(3):
            vote_as({"country": "FR"}, prefer=["model-2", "model-1"], sessions=4, seed=seed)
        ranking = rank_models("preference", method="openskill")
    assert ranking.method == "openskill" and ranking.total_votes > 0
    assert [m.model for m in ranking.models] == ["model-2", "model-1", "model-0"]
