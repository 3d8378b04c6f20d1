"""Test data builders (CTFd-style): small but real campaigns with real image files."""

from __future__ import annotations

from PIL import Image as PILImage

from arena import comparisons, images
from arena.extensions import db
from arena.models import GenModel, Prompt, PromptSet
from arena.voting import ensure_ratings

COLOURS = [(200, 40, 40), (40, 160, 60), (40, 80, 200), (230, 200, 40), (120, 60, 160)]


def solid(color, size=24) -> PILImage.Image:
    return PILImage.new("RGB", (size, size), color)


def make_campaign(n_prompts=2, n_models=3, images_per_model=2, gold=True, target_votes=26):
    """Prompts, models, one distinct solid-colour image per (prompt, model, k), all pairwise
    comparisons for the three criteria and, with ``gold``, one validation pair per criterion.
    Returns a dict of the created rows."""
    prompt_set = PromptSet(name=f"set-{n_prompts}-{n_models}", source="factory")
    db.session.add(prompt_set)
    db.session.flush()
    prompts = []
    for i in range(n_prompts):
        p = Prompt(prompt_set_id=prompt_set.id, position=i + 1,
                   text=f"A red cube number {i} on a green table", category="Test")
        db.session.add(p)
        prompts.append(p)
    models = [GenModel(name=f"model-{m}") for m in range(n_models)]
    db.session.add_all(models)
    db.session.flush()
    ensure_ratings([m.id for m in models])
    imgs = {}
    for p_i, p in enumerate(prompts):
        for m_i, m in enumerate(models):
            for k in range(images_per_model):
                color = (COLOURS[m_i % 5][0], (p_i * 37 + k * 11) % 256, COLOURS[m_i % 5][2])
                imgs[(p.id, m.id, k)] = images.store(solid(color), model_id=m.id,
                                                     prompt_id=p.id)
        db.session.flush()
    n = comparisons.build_comparisons([p.id for p in prompts], target_votes=target_votes)
    gold_pairs = {}
    if gold:
        good = images.store(solid((250, 250, 250)), model_id=None, prompt_id=prompts[0].id)
        bad = images.store(solid((5, 5, 5)), model_id=None, prompt_id=prompts[0].id)
        db.session.flush()
        for criterion in ("preference", "coherence", "alignment"):
            gold_pairs[criterion] = comparisons.add_validation_pair(
                criterion, good, bad, prompts[0].id
            )
    db.session.commit()
    return {"prompts": prompts, "models": models, "images": imgs, "n_comparisons": n,
            "gold": gold_pairs}
