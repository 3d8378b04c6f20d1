"""Gold told by its pixels: a damaged gold pair used to be an image against its own damaged
copy, so the grey levels of its two sides correlated far beyond an ordinary pair's (AUC
0.875 on the demo). Now a damaged copy is of another model's image of the prompt: over the
campaign's distinct pairs, the two sides' correlation in the served files tells damaged gold
from ordinary no better than 0.6 AUC either way, while the old own-copy rule is told."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image as PILImage
from sqlalchemy import select

from arena.campaigns import campaigns, demo, gold
from arena.catalog import images
from arena.catalog.damage import damage
from arena.extensions import db
from arena.models import Comparison, Image


def _auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """P(a gold pair's score > an ordinary one's), ties half."""
    gold_, plain = scores[labels], scores[~labels]
    greater = (gold_[:, None] > plain[None, :]).mean()
    return float(greater + 0.5 * (gold_[:, None] == plain[None, :]).mean())


def _grey(data: bytes) -> np.ndarray:
    return np.asarray(PILImage.open(io.BytesIO(data)).convert("L"), dtype=float).ravel()


def _served(image: Image, size: int) -> np.ndarray:
    return _grey(images.presented_bytes(image, size))


def _alike(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a, b)[0, 1])


def test_damaged_gold_is_not_told_by_how_alike_its_two_sides_are(app):
    with app.app_context():
        demo.load_demo(n_prompts=12, images_per_model=1)
        campaign = campaigns.get_campaign(demo.DEMO_CAMPAIGN)
        made = np.random.default_rng(0)
        for _ in range(40):  # (as gold.fill makes them, more than a small campaign wants)
            gold.make_pair(campaign, "preference", made)
        db.session.commit()
        size = images.presentable_sizes()[0]
        pairs = db.session.execute(
            select(Comparison).where(Comparison.campaign_id == campaign.id,
                                     Comparison.criterion == "preference")).scalars().all()
        scores, labels, own = [], [], []
        rng = np.random.default_rng(1)
        for pair in pairs:
            if pair.is_validation and pair.gold_kind != "damaged":
                continue
            a, b = db.session.get(Image, pair.image_a_id), db.session.get(Image, pair.image_b_id)
            scores.append(_alike(_served(a, size), _served(b, size)))
            labels.append(pair.is_validation)
            if pair.is_validation:  # (the old rule: the intact image against its own copy)
                intact = a if a.source_id is None else b
                copy = images.present(damage(images.decode_stored(intact), rng), size,
                                      images.presentation_phase(intact.sha256))
                own.append(_alike(_served(intact, size), _grey(copy)))
    scores, labels = np.array(scores), np.array(labels)
    assert labels.sum() >= 30 and (~labels).sum() >= 60, (labels.sum(), len(labels))
    auc = _auc(scores, labels)
    assert 0.4 <= auc <= 0.6, auc
    # the attack can tell what it is built to tell: own copies against the same ordinary pairs
    old = _auc(np.concatenate([own, scores[~labels]]),
               np.concatenate([np.ones(len(own), bool), np.zeros((~labels).sum(), bool)]))
    assert old > 0.8, old
