"""Consensus gold: a pair the crowd has settled beyond doubt turns gold with the majority's
image right; a pair the crowd splits on stays ordinary; the kind keeps to its share of the
criterion's gold."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sqlalchemy import select

from arena.analysis import rollups
from arena.campaigns import campaigns, demo, gold
from arena.extensions import db
from arena.models import Comparison, Image, RollupComparison

STRONG = "Aurora-XL"


@pytest.mark.parametrize("share", [50.0, 0.1])  # (room for all; a tenth)
def test_settled_pairs_turn_gold_and_split_pairs_do_not(app, share):
    app.config.update(CONSENSUS_MAX_SHARE=share, GOLD_MAX_DAMAGED=8, TARGET_VOTES=60)
    least = app.config["CONSENSUS_MIN_VOTES"]
    with app.app_context():
        demo.load_demo(n_prompts=2, images_per_model=1)
        campaign = campaigns.get_campaign(demo.DEMO_CAMPAIGN)
        names = [m for m, _, _ in demo.DEMO_MODELS]
        # one model far ahead, the others level: its pairs settle, theirs never do
        demo.simulate_votes(600, np.random.default_rng(0),
                            strengths={n: (6.0 if n == STRONG else 0.0) for n in names})
        rollups.reset()
        rollups.refresh()
        before = _gold(campaign.id)
        turned = gold.consensus(campaign)
        db.session.commit()
        made = [c for c in _gold(campaign.id) if c.id not in {b.id for b in before}]
        assert turned["preference"] > 0 and len(made) == sum(turned.values()), turned
        for pair in made:
            maker = {i: db.session.get(Image, i).model.name
                     for i in (pair.image_a_id, pair.image_b_id)}
            assert STRONG in maker.values(), maker  # (no pair of two level models)
            assert maker[pair.correct_image_id] == STRONG
            counted = db.session.get(RollupComparison, (pair.criterion, pair.id))
            assert counted.votes >= least
        for criterion in campaign.criteria_list:  # (within its share of the gold there was)
            had = sum(c.criterion == criterion for c in before)
            assert sum(c.criterion == criterion for c in made) <= math.ceil(share * had)
        level = db.session.scalars(
            select(RollupComparison).join(Comparison,
                                          Comparison.id == RollupComparison.comparison_id)
            .where(Comparison.campaign_id == campaign.id, Comparison.gold_kind.is_(None),
                   RollupComparison.votes >= least)).all()
        if share > 1:  # (room for every settled pair: what stayed ordinary was split)
            assert level, "no ordinary pair reached the votes consensus needs"
            assert sum(gold.consensus(campaign).values()) == 0


def _gold(campaign_id: int) -> list[Comparison]:
    return db.session.scalars(select(Comparison).where(
        Comparison.campaign_id == campaign_id, Comparison.is_validation)).all()
