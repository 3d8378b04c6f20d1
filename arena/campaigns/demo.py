"""The demo campaign: DrawBench prompts, four synthetic "models" whose images differ visibly
and consistently in quality, comparisons for all three criteria and a few gold pairs.

Images are drawn locally with Pillow and numpy (nothing is downloaded). Each prompt becomes a
small scene: the colours and the number of objects named in the prompt, on a sky/ground
background. The four demo models render it with decreasing care:

=========  ============================================================================
Aurora-XL  anti-aliased, soft shadows, right colours and count
Brisk-2    aliased edges, slight blur, right colours and count
Cobble-1   posterised, grainy, a stray fragment, count sometimes off by one
Dusk-0.3   heavy noise and blur, wrong colours, glitch bands, blocky compression
=========  ============================================================================
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import numpy as np
from flask import current_app
from PIL import Image as PILImage
from PIL import ImageDraw, ImageFilter, ImageOps
from sqlalchemy import select, update

from arena.analysis import published
from arena.campaigns import campaigns
from arena.catalog import images, prompts
from arena.extensions import db
from arena.models import KEYS, Comparison, GenModel, Prompt, PromptSet, Task
from arena.voting import matchmaking, tasks, voters, votes
from arena.voting.votes import ensure_ratings

DEMO_MODELS = (
    ("Aurora-XL", "Demo model: clean, anti-aliased renders.", 0),
    ("Brisk-2", "Demo model: decent renders with jagged edges.", 1),
    ("Cobble-1", "Demo model: grainy, posterised, sometimes miscounts.", 2),
    ("Dusk-0.3", "Demo model: noisy, blurry, wrong colours.", 3),
)
PROMPT_SET_NAME = "DrawBench"
DEMO_CAMPAIGN = "Demo: DrawBench"
SIZE = 1024  # pixels a side: a 3x phone gets its 1024 px presentation (DEMO_IMAGE_SIZE)

COLORS = {
    "red": (214, 40, 40),
    "blue": (40, 90, 210),
    "green": (46, 160, 67),
    "yellow": (240, 200, 30),
    "black": (25, 25, 28),
    "white": (245, 245, 240),
    "pink": (240, 120, 170),
    "orange": (245, 140, 30),
    "purple": (130, 60, 170),
    "brown": (120, 75, 40),
    "gray": (128, 128, 128),
    "grey": (128, 128, 128),
}
NUMBERS = {"one": 1, "a": 1, "an": 1, "two": 2, "three": 3, "four": 4, "five": 5}


def _seed(*parts) -> int:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little")


def scene_spec(text: str) -> dict:
    """What a faithful image of ``text`` contains: object colours and count."""
    words = re.findall(r"[a-z]+", text.lower())
    rng = np.random.default_rng(_seed("scene", text))
    named = [COLORS[w] for w in words if w in COLORS]
    count = next((NUMBERS[w] for w in words if w in NUMBERS and w not in ("a", "an")), None)
    count = count or int(rng.integers(1, 4))
    palette = named or [tuple(int(c) for c in rng.integers(40, 230, 3)) for _ in range(2)]
    shapes = [("ellipse", "rect", "triangle")[int(rng.integers(3))] for _ in range(count)]
    sky = tuple(int(c) for c in rng.integers(120, 220, 3))
    ground = tuple(int(c) for c in rng.integers(40, 140, 3))
    return {"count": count, "palette": palette, "shapes": shapes, "sky": sky, "ground": ground}


def render(text: str, quality: int, variant: int, size: int = SIZE) -> PILImage.Image:
    """Draw ``text``'s scene, ``size`` pixels a side, at quality level 0 (best) to 3
    (worst); ``variant`` jitters it. Artefacts scale with ``size``: every size looks alike
    at the same displayed width."""
    spec = scene_spec(text)
    rng = np.random.default_rng(_seed("render", text, quality, variant))
    n = size * (2 if quality == 0 else 1)  # the best model draws at 2x and downsamples
    count = spec["count"]
    palette = list(spec["palette"])
    if quality == 2 and rng.random() < 0.5:
        count = max(1, count + int(rng.choice([-1, 1])))
    if quality == 3:
        count = max(1, count + int(rng.choice([-1, 1, 2])))
        palette = [tuple(int(c) for c in rng.integers(0, 255, 3)) for _ in palette]
    horizon = int(n * (0.55 + 0.1 * rng.random()))
    img = _background(spec, n, horizon)
    draw = ImageDraw.Draw(img, "RGBA")
    for i in range(count):
        _draw_object(draw, spec["shapes"][i % len(spec["shapes"])], palette[i % len(palette)],
                     (n / (count + 1), i, n, horizon), quality, rng)
    if quality >= 2:  # a stray, impossible fragment floating in the sky
        fx, fy = rng.uniform(0.1, 0.9) * n, rng.uniform(0.05, 0.35) * n
        fr = n * 0.06
        draw.polygon([(fx, fy), (fx + fr * 2, fy + fr * 0.3), (fx + fr * 0.4, fy + fr * 1.4)],
                     fill=palette[0] + (200,))
    if n > size:
        img = img.resize((size, size), PILImage.Resampling.LANCZOS)
    return _degrade(img, quality, rng)


def _background(spec: dict, n: int, horizon: int) -> PILImage.Image:
    """Sky and ground as vertical gradients."""
    y = np.linspace(0, 1, n)[:, None, None]
    sky = np.array(spec["sky"], float)
    ground = np.array(spec["ground"], float)
    arr = np.where(np.arange(n)[:, None, None] < horizon, sky * (0.75 + 0.35 * y),
                   ground * (1.1 - 0.4 * y))
    return PILImage.fromarray(np.broadcast_to(arr, (n, n, 3)).clip(0, 255).astype(np.uint8),
                              "RGB")


def _draw_object(draw, shape: str, color, place, quality: int, rng) -> None:
    """One object standing on the horizon in slot ``i`` of ``place`` (slot width, i, canvas
    size, horizon); the better models add a contact shadow and a highlight."""
    slot, i, n, horizon = place
    cx = slot * (i + 1) + rng.normal(0, slot * 0.08)
    r = min(slot * 0.38, n * 0.2) * (0.9 + 0.2 * rng.random())
    cy = horizon - r * (0.6 + 0.2 * rng.random())
    if quality <= 1:  # a soft contact shadow on the ground
        draw.ellipse((cx - r, horizon - r * 0.05, cx + r, horizon + r * 0.25),
                     fill=(0, 0, 0, 70))
    box = (cx - r, cy - r, cx + r, cy + r)
    if shape == "ellipse":
        draw.ellipse(box, fill=(*color, 255))
    elif shape == "rect":
        draw.rounded_rectangle(box, radius=r * 0.2, fill=(*color, 255))
    else:
        draw.polygon([(cx, cy - r), (cx + r, cy + r), (cx - r, cy + r)], fill=(*color, 255))
    if quality == 0:  # a highlight gives volume
        draw.ellipse((cx - r * 0.5, cy - r * 0.6, cx - r * 0.1, cy - r * 0.2),
                     fill=(255, 255, 255, 60))


def _degrade(img: PILImage.Image, quality: int, rng) -> PILImage.Image:
    """The worse models' artefacts: blur, posterisation and grain, glitch bands, JPEG
    (lengths in pixels of a 512 px image, scaled to ``img``'s)."""
    size = img.width
    k = size / 512
    if quality == 1:
        img = img.filter(ImageFilter.GaussianBlur(0.8 * k))
    if quality == 3:  # smeared first, then grain on top
        img = img.filter(ImageFilter.GaussianBlur(2.5 * k))
    if quality >= 2:
        img = ImageOps.posterize(img, 3 if quality == 2 else 2)
        sigma = 16 if quality == 2 else 38
        cell = max(1, round(k))  # grains as large as a 512 px image's
        grain = rng.normal(0, sigma, (-(-size // cell), -(-size // cell), 3)).astype(np.float32)
        grain = grain.repeat(cell, 0).repeat(cell, 1)[:size, :size]
        noisy = np.asarray(img, np.float32) + grain
        img = PILImage.fromarray(noisy.clip(0, 255).astype(np.uint8), "RGB")
    if quality == 3:
        arr = np.asarray(img).copy()
        for _ in range(3):  # horizontal glitch bands shifted sideways
            top = int(rng.integers(0, size - 30 * k))
            height = int(rng.integers(6, 30) * k)
            band = arr[top : top + height]
            arr[top : top + height] = np.roll(band, int(rng.integers(-80, 80) * k), axis=1)
        buf = io.BytesIO()
        PILImage.fromarray(arr, "RGB").save(buf, "JPEG", quality=8)
        img = PILImage.open(io.BytesIO(buf.getvalue())).convert("RGB")
    return img


def pick_demo_prompts(prompt_set: PromptSet, count: int) -> list[Prompt]:
    """``count`` prompts spread round-robin over the set's categories, in file order."""
    by_category: dict[str, list[Prompt]] = defaultdict(list)
    for p in db.session.scalars(
        select(Prompt).where(Prompt.prompt_set_id == prompt_set.id).order_by(Prompt.position)
    ):
        by_category[p.category or ""].append(p)
    chosen: list[Prompt] = []
    queues = list(by_category.values())
    while len(chosen) < count and any(queues):
        for queue in queues:
            if queue and len(chosen) < count:
                chosen.append(queue.pop(0))
    return chosen


def demo_loaded() -> bool:
    return db.session.scalar(select(GenModel).where(GenModel.name == DEMO_MODELS[0][0])) is not None


def images_to_draw(n_prompts: int | None = None, images_per_model: int | None = None) -> int:
    """How many model images :func:`load_demo` draws (for a progress bar)."""
    cfg = current_app.config
    return ((n_prompts or cfg["DEMO_PROMPTS"]) * len(DEMO_MODELS)
            * (images_per_model or cfg["DEMO_IMAGES_PER_MODEL"]))


def load_demo(
    n_prompts: int | None = None, images_per_model: int | None = None, progress=None
) -> dict[str, int]:
    """Create the demo campaign and commit it. Safe to run twice: does nothing if loaded.

    ``progress(step_name, n)`` is called as images are drawn, for a progress bar.
    Returns counts of what was created.
    """
    cfg = current_app.config
    n_prompts = n_prompts or cfg["DEMO_PROMPTS"]
    images_per_model = images_per_model or cfg["DEMO_IMAGES_PER_MODEL"]
    if demo_loaded():
        return {}
    chosen = pick_demo_prompts(prompts.prompt_set(PROMPT_SET_NAME), n_prompts)
    models = []
    for name, description, quality in DEMO_MODELS:
        model = GenModel(name=name, description=description)
        db.session.add(model)
        models.append((model, quality))
    db.session.flush()
    ensure_ratings([m.id for m, _ in models])
    n_images = _draw_images(chosen, models, images_per_model, progress)
    campaign = campaigns.create_campaign(
        DEMO_CAMPAIGN, PROMPT_SET_NAME, [m.name for m, _ in models],
        images_per_model=images_per_model, target_votes=cfg["TARGET_VOTES"])
    n_comparisons = campaigns.publish(campaign)  # (with gold made of its own images)
    return {"prompts": len(chosen), "models": len(models), "images": n_images,
            "comparisons": n_comparisons}


def _draw_images(chosen: list[Prompt], models, images_per_model: int, progress) -> int:
    """Each model's images of each prompt, stored; commits. Returns how many. Drawn and
    encoded on every core (Pillow and numpy work outside the GIL); rows added here."""
    size, app = current_app.config["DEMO_IMAGE_SIZE"], current_app._get_current_object()
    jobs = [(prompt.id, prompt.text, model.id, quality, k) for prompt in chosen
            for model, quality in models for k in range(images_per_model)]

    def draw(job) -> images.Prepared:
        _, text, _, quality, k = job
        with app.app_context():
            return images.prepare(render(text, quality, k, size))

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        for (prompt_id, _, model_id, _, _), prepared in zip(jobs, pool.map(draw, jobs),
                                                            strict=True):
            images.add_prepared(prepared, model_id=model_id, prompt_id=prompt_id)
            if progress:
                progress("images", 1)
    db.session.commit()
    return len(jobs)


# Log-strengths of the demo models as a simulated crowd sees them (Aurora best).
SIMULATED_STRENGTH = {"Aurora-XL": 1.0, "Brisk-2": 0.6, "Cobble-1": -0.4, "Dusk-0.3": -1.2}
SIMULATED_COUNTRIES = ("US", "BR", "DE", "FR", "IN", "JP", "NG", "KE", "AU", "MX", "GB", "ID")
# The page language a simulated voter from a country answers in (English elsewhere), so the
# demo's votes can be sliced by language as real ones can.
SIMULATED_LANGUAGES = {"BR": "pt", "MX": "es", "IN": "hi", "ID": "id"}


def seed_shuffle_keys(seed: int = 0) -> None:
    """Every pair's shuffle key (matchmaking's tie-break, drawn by ``secrets`` in production)
    from ``seed``: a simulation's voters meet the same pairs in every run (not committed)."""
    ids = db.session.scalars(select(Comparison.id).order_by(Comparison.id)).all()
    keys = np.random.default_rng(seed).integers(0, KEYS, len(ids))
    db.session.execute(update(Comparison), [{"id": i, "shuffle_key": int(k)}
                                            for i, k in zip(ids, keys, strict=True)])


def simulate_votes(n_votes: int, rng: np.random.Generator, progress=None,
                   strengths: dict[str, float] | None = None) -> int:
    """Cast about ``n_votes`` votes from simulated voters through the real session and vote
    services, so a fresh demo has a leaderboard to look at. Voters pick the stronger demo
    model with Bradley-Terry probabilities, answer gold pairs right 90% of the time, and
    take the time people take (on a simulated clock that ends before the public pages'
    cut-off, :mod:`arena.analysis.published`): the caption's reveal
    before confirming it, a few seconds per choice. Returns the number of votes cast.
    Simulated voters carry random demographics. ``strengths``: the crowd's log-strength of
    each model by name (:data:`SIMULATED_STRENGTH` by default; a model not in it, 0)."""
    # (ending before the public pages' cut-off, so that they show the demo's votes at once)
    clock = [published.cutoff() - timedelta(seconds=6 * n_votes + 60)]
    cast = 0
    while cast < n_votes:
        answers = {
            "age_group": str(rng.choice((*voters.AGE_GROUPS, "undisclosed"))),
            "gender": str(rng.choice((*voters.GENDERS, "undisclosed"))),
            "country": str(rng.choice(SIMULATED_COUNTRIES)),
        }
        voter, _ = voters.create_voter(answers, trusted=True)  # (as a recruited panel)
        voter.created_at = voter.earned_at = clock[0]  # (first seen on the simulated clock)
        language = SIMULATED_LANGUAGES.get(answers["country"], "en")
        db.session.commit()
        for _ in range(int(rng.integers(1, 5))):
            try:
                session = matchmaking.start_session(voter, rng)
            except matchmaking.NoTasksAvailable:
                break
            for task_id in [t.id for t in session.tasks]:
                _simulated_vote(voter, db.session.get(Task, task_id), rng, clock, language,
                                strengths or SIMULATED_STRENGTH)
                cast += 1
                if progress:
                    progress(1)
    published.forget()  # (figures taken before the votes were there)
    return cast


def _simulated_vote(voter, task: Task, rng: np.random.Generator, clock: list,
                    language: str, strengths: dict[str, float] = SIMULATED_STRENGTH) -> None:
    tasks.present([task], now=clock[0])
    caption = tasks.caption_of(task)
    if caption is not None:
        clock[0] += timedelta(milliseconds=tasks.reveal_ms(caption) + 1500)
        tasks.confirm_read(voter, task.id, now=clock[0])
    left, right, comparison = task.left_image, task.right_image, task.comparison
    if comparison.is_validation:
        right_answer = "left" if comparison.correct_image_id == left.id else "right"
        wrong = "right" if right_answer == "left" else "left"
        choice = right_answer if rng.random() < 0.9 else wrong
    else:
        s_left = strengths.get(left.model.name, 0.0)
        s_right = strengths.get(right.model.name, 0.0)
        choice = "left" if rng.random() < 1.0 / (1.0 + np.exp(s_right - s_left)) else "right"
    thinking = int(rng.integers(900, 6000))
    clock[0] += timedelta(milliseconds=thinking)
    votes.cast_vote(voter, task.id, choice, thinking, now=clock[0], language=language)
