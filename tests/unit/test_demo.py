import numpy as np
from sqlalchemy import func, select

from arena.campaigns import demo
from arena.extensions import db
from arena.models import Comparison, GenModel, Image, Prompt, Task, Vote

PROMPTS = ["A red colored car.", "Two cats and one dog sitting on the grass.",
           "A stop sign on a blue background.", "An umbrella on top of a spoon."]


def noise(img) -> float:
    """Mean absolute difference between neighbouring pixels: grain and glitches raise it."""
    a = np.asarray(img, float)
    return float(np.abs(np.diff(a, axis=1)).mean() + np.abs(np.diff(a, axis=0)).mean())


def test_quality_levels_differ_consistently():
    for text in PROMPTS:
        scores = [noise(demo.render(text, q, 0)) for q in range(4)]
        # the two careful models are clean; the two sloppy ones grainy or glitchy
        assert max(scores[:2]) * 5 < min(scores[2:]), (text, scores)


def test_rendering_is_deterministic_and_variants_differ():
    a = np.asarray(demo.render(PROMPTS[0], 1, 0))
    assert np.array_equal(a, np.asarray(demo.render(PROMPTS[0], 1, 0)))
    assert not np.array_equal(a, np.asarray(demo.render(PROMPTS[0], 1, 1)))


def test_named_colour_is_used_by_good_models_only():
    def blue_share(quality):
        img = np.asarray(demo.render("A blue colored car.", quality, 0), int)
        return (np.abs(img - np.array(demo.COLORS["blue"])).sum(axis=2) < 40).mean()

    assert blue_share(0) > 0.02 and blue_share(1) > 0.02
    assert blue_share(3) < 0.005


def test_load_demo_builds_a_campaign_once(ctx):
    counts = demo.load_demo(n_prompts=2, images_per_model=2)
    assert counts["images"] == 2 * 4 * 2
    size = ctx.config["DEMO_IMAGE_SIZE"]  # (1024 by default: sharp on a 3x phone)
    assert set(db.session.execute(select(Image.width, Image.height).where(
        Image.model_id.is_not(None)).distinct()).all()) == {(size, size)}
    # 4 models x 2 images: 6 model pairs x 4 image pairs = 24 per prompt and criterion
    assert counts["comparisons"] == 24 * 2 * 3
    assert db.session.scalar(select(func.count()).select_from(GenModel)) == 4
    gold = db.session.scalars(select(Comparison).where(Comparison.is_validation)).all()
    # (gold of the campaign's own images alone: a render against static noise was told by
    # its pixels at a glance)
    assert {c.gold_kind for c in gold} == {"swapped", "damaged"}
    assert all(c.correct_image_id in (c.image_a_id, c.image_b_id) for c in gold)
    assert db.session.scalar(select(func.count()).select_from(Image).where(
        Image.model_id.is_(None), Image.source_id.is_(None))) == 0
    assert demo.load_demo(n_prompts=2, images_per_model=2) == {}


def test_demo_prompts_span_categories(ctx):
    """DrawBench has 11 categories: 11 demo prompts, picked round-robin, cover every one."""
    demo.load_demo(n_prompts=11, images_per_model=1)
    drawn = select(Image.prompt_id).where(Image.model_id.is_not(None))
    categories = db.session.scalars(
        select(Prompt.category).where(Prompt.id.in_(drawn)).distinct()).all()
    every = db.session.scalars(select(Prompt.category).distinct()).all()
    assert len(every) == 11 and sorted(categories) == sorted(every)


def test_simulated_votes_pass_the_read_gate_and_count(ctx):
    demo.load_demo(n_prompts=2, images_per_model=1)
    cast = demo.simulate_votes(30, np.random.default_rng(0))
    assert db.session.scalar(select(func.count()).select_from(Vote)) == cast >= 30
    alignment = select(Vote.task_id).where(Vote.criterion == "alignment")
    confirmed = db.session.scalars(select(Task.read_confirmed_at).where(
        Task.id.in_(alignment))).all()
    assert confirmed and all(c is not None for c in confirmed)
    # each vote carries its page's language, so `arena rank --language en` finds the demo's
    languages = dict(db.session.execute(select(Vote.language, func.count())
                                        .group_by(Vote.language)).all())
    assert None not in languages and languages.get("en", 0) > 0
