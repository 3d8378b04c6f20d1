"""Gold told by its pixels: a damaged gold pair used to be an image against its own damaged
copy, so the grey levels of its two sides correlated far beyond an ordinary pair's (AUC
0.875 on the demo). Now a damaged copy is of another model's image of the prompt, and the
pairs the crowd has settled turn gold as they are (consensus gold): the two sides'
correlation, read off the served files, tells gold from ordinary no better than 0.6 AUC
either way."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image as PILImage
from sqlalchemy import func, select

from arena.analysis import rollups
from arena.campaigns import campaigns, demo, gold
from arena.extensions import db
from arena.models import Comparison, Task


def _auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """P(a gold task's score > an ordinary one's), ties half."""
    gold_, plain = scores[labels], scores[~labels]
    greater = (gold_[:, None] > plain[None, :]).mean()
    return float(greater + 0.5 * (gold_[:, None] == plain[None, :]).mean())


def _grey(client, url: str) -> np.ndarray:
    body = client.get(url).data
    return np.asarray(PILImage.open(io.BytesIO(body)).convert("L"), dtype=float).ravel()


def test_gold_is_not_told_by_how_alike_its_two_sides_are(app, client):
    app.config.update(REVEAL_WORD_MS=0, GOLD_MAX_DAMAGED=40)
    rng = np.random.default_rng(3)
    with app.app_context():
        demo.load_demo(n_prompts=4, images_per_model=1)
        campaign = campaigns.get_campaign(demo.DEMO_CAMPAIGN)
        gold.fill(campaign)
        turned = {}
        for _ in range(4):  # (the crowd votes until it has settled a pair)
            demo.simulate_votes(600, rng)
            rollups.reset()  # (the simulated clock stamps each round before the same cut-off)
            rollups.refresh()
            turned = gold.consensus(campaign)
            db.session.commit()
            if turned["preference"]:
                break
        assert turned["preference"] > 0, turned
        kinds = dict(db.session.execute(
            select(Comparison.gold_kind, func.count()).where(
                Comparison.criterion == "preference", Comparison.is_validation)
            .group_by(Comparison.gold_kind)).all())
    app.config["VALIDATION_RATE"] = 1.0
    scores, labels, served = [], [], {}
    for k in range(240):  # (voters answer, so every pair goes on up the queue in its turn)
        body = client.post("/api/v1/sessions", json={"criterion": "preference"}).json
        for task in body["tasks"]:
            with app.app_context():
                row = db.session.get(Task, task["task_id"])
                kind = row.comparison.gold_kind if row.comparison.is_validation else None
            left, right = (_grey(client, task[side]["url"]) for side in ("left", "right"))
            scores.append(np.corrcoef(left, right)[0, 1])
            labels.append(kind is not None)
            served[kind] = served.get(kind, 0) + 1
            client.post(f"/api/v1/tasks/{task['task_id']}/vote",
                        json={"choice": "left" if k % 2 else "right"},
                        headers={"Authorization": f"Bearer {body['voter_token']}"})
    scores, labels = np.array(scores), np.array(labels)
    assert labels.sum() >= 120 and served.get("damaged") and served.get("consensus"), served
    auc = _auc(scores, labels)
    assert 0.4 <= auc <= 0.6, (auc, served, kinds)
