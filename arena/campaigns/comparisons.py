"""Comparisons: the pairs a campaign needs, built as in the source benchmark."""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations

from sqlalchemy import select

from arena import criteria as criteria_table
from arena.extensions import db
from arena.models import Comparison, Image


def build_comparisons(
    prompt_ids: list[int],
    criteria=None,
    target_votes: int = 26,
    progress=None,
    *,
    model_ids: list[int] | None = None,
    images_per_model: int | None = None,
    campaign_id: int | None = None,
    pool: int = 0,
) -> int:
    """Add every pair of images from two different models on the same prompt, for each
    criterion (4 models x 4 images -> 96 pairs per prompt and criterion). Pairs that exist
    already are skipped, so adding a model or images later adds only the new pairs.

    ``model_ids`` restricts the models, ``images_per_model`` takes each model's first images
    per prompt (by upload order), ``campaign_id`` labels the new pairs and ``pool`` says
    which voters get them (see Campaign.pool).
    Returns the number added (not committed)."""
    existing = set(db.session.execute(
        select(Comparison.criterion, Comparison.image_a_id, Comparison.image_b_id)
        .where(Comparison.prompt_id.in_(prompt_ids), Comparison.pool == pool)).all())
    criteria = criteria or criteria_table.names()
    added = 0
    for prompt_id, items in images_by_prompt(prompt_ids, model_ids, images_per_model).items():
        for (ia, ma), (ib, mb) in combinations(sorted(items), 2):
            if ma == mb:
                continue
            for criterion in criteria:
                if (criterion, ia, ib) in existing:
                    continue
                db.session.add(Comparison(criterion=criterion, campaign_id=campaign_id,
                                          prompt_id=prompt_id, image_a_id=ia, image_b_id=ib,
                                          target_votes=target_votes, pool=pool))
                added += 1
        if progress is not None:
            progress(1)
    return added


def images_by_prompt(prompt_ids, model_ids, images_per_model
                     ) -> dict[int, list[tuple[int, int]]]:
    """(image id, model id) per prompt: each model's first ``images_per_model`` images (the
    images a campaign's pairs are made of)."""
    query = select(Image.id, Image.prompt_id, Image.model_id).where(
        Image.prompt_id.in_(prompt_ids), Image.model_id.is_not(None),
        Image.quarantined.is_(False), Image.paused_at.is_(None))
    if model_ids is not None:
        query = query.where(Image.model_id.in_(model_ids))
    by_prompt: dict[int, list[tuple[int, int]]] = defaultdict(list)
    taken: dict[tuple[int, int], int] = defaultdict(int)
    for image_id, prompt_id, model_id in db.session.execute(query.order_by(Image.id)):
        if images_per_model is not None and taken[(prompt_id, model_id)] >= images_per_model:
            continue
        taken[(prompt_id, model_id)] += 1
        by_prompt[prompt_id].append((image_id, model_id))
    return by_prompt


def add_validation_pair(
    criterion: str, correct: Image, wrong: Image, prompt_id: int | None = None,
    campaign_id: int | None = None, target_votes: int = 26, pool: int = 0,
) -> Comparison:
    """A hand-made gold pair with a known right answer (not committed). It wants as many
    votes as an ordinary pair, so matchmaking serves it no more often."""
    criteria_table.check(criterion)
    comparison = Comparison(
        criterion=criterion,
        prompt_id=prompt_id,
        image_a_id=min(correct.id, wrong.id),
        image_b_id=max(correct.id, wrong.id),
        is_validation=True,
        campaign_id=campaign_id,
        correct_image_id=correct.id,
        target_votes=target_votes,
        gold_kind="operator",
        pool=pool,
    )
    db.session.add(comparison)
    return comparison
