"""Comparisons: the pairs a campaign needs, built as in the source benchmark."""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations

from sqlalchemy import select

from .config import CRITERIA
from .extensions import db
from .models import Comparison, Image


def build_comparisons(
    prompt_ids: list[int],
    criteria=CRITERIA,
    target_votes: int = 26,
    progress=None,
    *,
    model_ids: list[int] | None = None,
    images_per_model: int | None = None,
    campaign_id: int | None = None,
) -> int:
    """Add every pair of images from two different models on the same prompt, for each
    criterion (4 models x 4 images -> 96 pairs per prompt and criterion). Pairs that exist
    already are skipped, so adding a model or images later adds only the new pairs.

    ``model_ids`` restricts the models, ``images_per_model`` takes each model's first images
    per prompt (by upload order), ``campaign_id`` labels the new pairs.
    Returns the number added (not committed)."""
    query = select(Image.id, Image.prompt_id, Image.model_id).where(
        Image.prompt_id.in_(prompt_ids), Image.model_id.is_not(None)
    )
    if model_ids is not None:
        query = query.where(Image.model_id.in_(model_ids))
    images = db.session.execute(query.order_by(Image.id)).all()
    by_prompt: dict[int, list[tuple[int, int]]] = defaultdict(list)
    taken: dict[tuple[int, int], int] = defaultdict(int)
    for image_id, prompt_id, model_id in images:
        if images_per_model is not None and taken[(prompt_id, model_id)] >= images_per_model:
            continue
        taken[(prompt_id, model_id)] += 1
        by_prompt[prompt_id].append((image_id, model_id))
    existing = set(
        db.session.execute(
            select(Comparison.criterion, Comparison.image_a_id, Comparison.image_b_id).where(
                Comparison.prompt_id.in_(prompt_ids)
            )
        ).all()
    )
    added = 0
    for prompt_id, items in by_prompt.items():
        for (ia, ma), (ib, mb) in combinations(sorted(items), 2):
            if ma == mb:
                continue
            for criterion in criteria:
                if (criterion, ia, ib) in existing:
                    continue
                db.session.add(
                    Comparison(
                        criterion=criterion,
                        campaign_id=campaign_id,
                        prompt_id=prompt_id,
                        image_a_id=ia,
                        image_b_id=ib,
                        target_votes=target_votes,
                    )
                )
                added += 1
        if progress is not None:
            progress(1)
    return added


def add_validation_pair(
    criterion: str, correct: Image, wrong: Image, prompt_id: int | None = None,
    campaign_id: int | None = None,
) -> Comparison:
    """A gold pair with a known right answer (not committed)."""
    if criterion not in CRITERIA:
        raise ValueError(f"unknown criterion {criterion!r}")
    comparison = Comparison(
        criterion=criterion,
        prompt_id=prompt_id,
        image_a_id=min(correct.id, wrong.id),
        image_b_id=max(correct.id, wrong.id),
        is_validation=True,
        campaign_id=campaign_id,
        correct_image_id=correct.id,
        target_votes=1,
    )
    db.session.add(comparison)
    return comparison
